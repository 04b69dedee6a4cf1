#!/usr/bin/env python3
"""Golden outputs of a tiny random Qwen3-VL vision tower (transformers' Qwen3VLVisionModel,
the `visual` of Qwen3VLModel) and the M-RoPE position ids of a prompt with images
(Qwen3VLModel.get_rope_index), for tests/models/vlm/qwen3_vl_golden_test.cpp.

The config is the engine's tiny-qwen3-vl preset (src/models/vlm/qwen3_vl/presets.cpp):
3 vision blocks of 32 (2 heads of 16), a 4 x 4 learned position grid, 4 x 4 patches of 2
frames, 2 x 2 merge, deepstack after blocks 0 and 2, out width 24. Weights are drawn with a
spread that keeps every block's contribution visible (projections N(0, 1/fan_in), norms
around one, biases 0.1 N(0, 1), the position grid N(0, 1/4)) and rounded to bf16, the
dtype the engine loads them in; so are the pixel values. The tower runs in float32 with
eager attention on the CPU: the reference.

Written to OUT/qwen3_vl/:
  config.json         the tiny config (whole Qwen3-VL config: vision_config + text_config)
  model.safetensors   the vision tower's weights, bf16, named model.visual.* as in
                      Qwen3VLForConditionalGeneration's checkpoints
  golden.safetensors  pixel_values [patches, 96] (f32), merged [patches / 4, 24],
                      deepstack.0, deepstack.1 (f32), position_ids [3, T] (i64);
                      mrope.q [T, 2*16], mrope.k [T, 16] and mrope.q_out / mrope.k_out: the text
                      model's interleaved M-RoPE (Qwen3VLTextRotaryEmbedding at position_ids,
                      apply_rotary_pos_emb) of random q and k (f32)
  golden.json         vision_grids (t, h, w per image of pixel_values), the prompt's
                      input_ids, image_grids, image_token_id, spatial_merge_size, rope_delta

    python3 tests/data/models/make_qwen3_vl_vision_goldens.py OUT_DIR    # OUT_DIR = tests/data/models
"""
import inspect
import json
import os
import sys

import torch
import transformers
from safetensors.torch import save_file

VISION = dict(
    depth=3, hidden_size=32, hidden_act="gelu_pytorch_tanh", intermediate_size=48, num_heads=2, in_channels=3,
    patch_size=4, spatial_merge_size=2, temporal_patch_size=2, out_hidden_size=24, num_position_embeddings=16,
    deepstack_visual_indexes=[0, 2])
TEXT = dict(
    attention_bias=False, head_dim=16, hidden_act="silu", hidden_size=24, intermediate_size=48,
    max_position_embeddings=512, num_attention_heads=2, num_hidden_layers=2, num_key_value_heads=1,
    rms_norm_eps=1e-6, vocab_size=64,
    rope_parameters=dict(rope_type="default", rope_theta=10000.0, mrope_section=[4, 2, 2], mrope_interleaved=True))
IMAGE_TOKEN, VIDEO_TOKEN, VISION_START, VISION_END = 60, 61, 58, 59
# The tower's inputs: a 4 x 6 patch image and a 2-frame 2 x 4 patch clip (frames attend apart).
VISION_GRIDS = [[1, 4, 6], [2, 2, 4]]
# The prompt's images: 4 x 6 patches (2 x 3 tokens) and a tall 8 x 2 (4 x 1 tokens).
IMAGE_GRIDS = [[1, 4, 6], [1, 8, 2]]


def config_json():
    text = dict(TEXT, model_type="qwen3_vl_text")
    # The published configs spell the text rope as rope_scaling + rope_theta; give both.
    text["rope_theta"] = TEXT["rope_parameters"]["rope_theta"]
    text["rope_scaling"] = dict(rope_type="default", mrope_section=[4, 2, 2], mrope_interleaved=True)
    return dict(architectures=["Qwen3VLForConditionalGeneration"], model_type="qwen3_vl",
                image_token_id=IMAGE_TOKEN, video_token_id=VIDEO_TOKEN, vision_start_token_id=VISION_START,
                vision_end_token_id=VISION_END, tie_word_embeddings=False,
                vision_config=dict(VISION, model_type="qwen3_vl"), text_config=text)


def bf16(t):
    return t.to(torch.bfloat16).to(torch.float32)


def randomize(visual, gen):
    for name, p in visual.named_parameters():
        with torch.no_grad():
            if "pos_embed" in name:
                p.copy_(0.5 * torch.randn(p.shape, generator=gen))
            elif "norm" in name and name.endswith("weight"):
                p.copy_(1.0 + 0.1 * torch.randn(p.shape, generator=gen))
            elif p.dim() >= 2:  # linear [out, in] or the Conv3d [out, C, Tp, P, P]
                fan_in = p[0].numel()
                p.copy_(torch.randn(p.shape, generator=gen) / fan_in ** 0.5)
            else:
                p.copy_(0.1 * torch.randn(p.shape, generator=gen))
            p.copy_(bf16(p))


def vision_outputs(out):
    """(merged, deepstack list) from either return form of Qwen3VLVisionModel.forward."""
    if hasattr(out, "pooler_output") and getattr(out, "deepstack_features", None) is not None:
        return out.pooler_output, list(out.deepstack_features)
    if isinstance(out, (tuple, list)) and len(out) == 2:
        return out[0], list(out[1])
    raise SystemExit(f"unexpected Qwen3VLVisionModel output {type(out)}")


def rope_index(model, input_ids, grids):
    fn = getattr(model, "get_rope_index", None)
    if fn is None:
        raise SystemExit("this transformers has no Qwen3VLModel.get_rope_index")
    params = inspect.signature(fn).parameters
    kwargs = dict(image_grid_thw=grids)
    if "attention_mask" in params:
        kwargs["attention_mask"] = torch.ones_like(input_ids)
    if "mm_token_type_ids" in params:
        kwargs["mm_token_type_ids"] = (input_ids == IMAGE_TOKEN).to(torch.int32)
    positions, deltas = fn(input_ids, **kwargs)
    return positions[:, 0, :], int(deltas.reshape(-1)[0])


def text_mrope(model, positions, gen):
    """Random q (2 heads) and k (1 head) of the text model's head dim, rotated by its M-RoPE."""
    from transformers.models.qwen3_vl import modeling_qwen3_vl

    rot = model.language_model.rotary_emb
    assert list(rot.mrope_section) == TEXT["rope_parameters"]["mrope_section"], rot.mrope_section
    T, D = positions.shape[1], TEXT["head_dim"]
    q = bf16(torch.randn(1, TEXT["num_attention_heads"], T, D, generator=gen))
    k = bf16(torch.randn(1, TEXT["num_key_value_heads"], T, D, generator=gen))
    with torch.no_grad():
        cos, sin = rot(q, positions[:, None, :])
        q_out, k_out = modeling_qwen3_vl.apply_rotary_pos_emb(q, k, cos, sin)
    token_major = lambda t: t[0].transpose(0, 1).reshape(T, -1).contiguous()  # [T, heads * D]
    return {"mrope.q": token_major(q), "mrope.k": token_major(k), "mrope.q_out": token_major(q_out),
            "mrope.k_out": token_major(k_out)}


def main(out_dir):
    torch.manual_seed(0)
    cfg = config_json()
    config = transformers.Qwen3VLConfig(
        vision_config=dict(VISION), text_config=dict(TEXT), image_token_id=IMAGE_TOKEN, video_token_id=VIDEO_TOKEN,
        vision_start_token_id=VISION_START, vision_end_token_id=VISION_END, tie_word_embeddings=False)
    assert list(config.vision_config.deepstack_visual_indexes) == VISION["deepstack_visual_indexes"]
    for c in (config, config.vision_config, config.text_config):
        c._attn_implementation = "eager"
    model = transformers.Qwen3VLModel(config).eval()
    gen = torch.Generator().manual_seed(1234)
    randomize(model.visual, gen)

    grids = torch.tensor(VISION_GRIDS, dtype=torch.long)
    patches = int(grids.prod(-1).sum())
    patch_dim = VISION["in_channels"] * VISION["temporal_patch_size"] * VISION["patch_size"] ** 2
    pixel_values = bf16(torch.randn(patches, patch_dim, generator=gen))
    with torch.no_grad():
        merged, deepstack = vision_outputs(model.visual(pixel_values, grid_thw=grids))
    assert merged.shape == (patches // 4, VISION["out_hidden_size"]), merged.shape
    assert len(deepstack) == len(VISION["deepstack_visual_indexes"])

    merge = VISION["spatial_merge_size"]
    ids = [1, 2, 3]
    for k, (t, h, w) in enumerate(IMAGE_GRIDS):
        ids += [VISION_START] + [IMAGE_TOKEN] * (t * (h // merge) * (w // merge)) + [VISION_END] + [4 + k]
    ids += [7, 8]
    input_ids = torch.tensor([ids], dtype=torch.long)
    positions, delta = rope_index(model, input_ids, torch.tensor(IMAGE_GRIDS, dtype=torch.long))

    d = os.path.join(out_dir, "qwen3_vl")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    state = {"model.visual." + k: v.detach().to(torch.bfloat16).contiguous() for k, v in model.visual.state_dict().items()}
    save_file(state, os.path.join(d, "model.safetensors"))
    golden = {"pixel_values": pixel_values.contiguous(), "merged": merged.float().contiguous(),
              "position_ids": positions.to(torch.int64).contiguous()}
    for k, t in enumerate(deepstack):
        golden[f"deepstack.{k}"] = t.float().contiguous()
    golden.update(text_mrope(model, positions, gen))
    save_file(golden, os.path.join(d, "golden.safetensors"))
    with open(os.path.join(d, "golden.json"), "w") as f:
        json.dump(dict(vision_grids=VISION_GRIDS, input_ids=ids, image_grids=IMAGE_GRIDS, image_token_id=IMAGE_TOKEN,
                       spatial_merge_size=merge, rope_delta=delta,
                       transformers=transformers.__version__, torch=torch.__version__), f, indent=2)
    print(f"wrote {d}: {patches} patches, merged {tuple(merged.shape)}, prompt of {len(ids)} tokens")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    main(sys.argv[1])
