#!/usr/bin/env python3
"""Golden outputs of a tiny random Qwen3-VL generating text from an image
(transformers' Qwen3VLForConditionalGeneration, CPU float32, eager attention), for
tests/models/vlm/qwen3_vl_generate_golden_test.cpp.

The config is the engine's tiny-qwen3-vl preset (the one of make_qwen3_vl_vision_goldens.py,
imported from beside this script): the 3-block vision tower of 32 and a 2-layer text model
of 24 (2 heads of 16, one KV head, interleaved M-RoPE 4/2/2). Weights are drawn with a
spread that keeps every layer's contribution visible (projections N(0, 1/fan_in), norms
around one, biases 0.1 N(0, 1), embeddings N(0, 1), the vision position grid N(0, 1/4)) and
rounded to bf16, the dtype the engine loads them in; so are the pixel values, which are
made directly in the processor's layout (patches in merge-window order, C x Tp x P x P
values each) for one image of 4 x 6 patches (2 x 3 = 6 image tokens).

Written to OUT/qwen3_vl_generate/:
  config.json         the tiny config (whole Qwen3-VL config)
  model.safetensors   the whole model in bf16 under the checkpoint's names (model.visual.*,
                      model.language_model.*, lm_head.weight)
  golden.safetensors  pixel_values [24, 96] (f32), logits [T, 64]: the teacher-forced logits
                      of every prompt position (f32)
  golden.json         input_ids (the prompt), image_grid (t, h, w), greedy_tokens (8 tokens
                      of generate(do_sample=False)), rope_delta, versions

    python3 tests/data/models/make_qwen3_vl_goldens.py OUT_DIR    # OUT_DIR = tests/data/models
"""
import inspect
import json
import os
import sys

import torch
import transformers
from safetensors.torch import save_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_qwen3_vl_vision_goldens as vision  # noqa: E402  the shared tiny config and helpers

IMAGE_GRID = [1, 4, 6]
NEW_TOKENS = 8


def randomize_text(model, gen):
    """The language model and the head: the same spread rules as the vision tower's."""
    for name, p in list(model.model.language_model.named_parameters()) + list(model.lm_head.named_parameters()):
        with torch.no_grad():
            if "norm" in name and name.endswith("weight"):
                p.copy_(1.0 + 0.1 * torch.randn(p.shape, generator=gen))
            elif "embed_tokens" in name:
                p.copy_(torch.randn(p.shape, generator=gen))
            elif p.dim() >= 2:
                p.copy_(torch.randn(p.shape, generator=gen) / p.shape[1] ** 0.5)
            else:
                p.copy_(0.1 * torch.randn(p.shape, generator=gen))
            p.copy_(vision.bf16(p))


def main(out_dir):
    torch.manual_seed(0)
    cfg = vision.config_json()
    config = transformers.Qwen3VLConfig(
        vision_config=dict(vision.VISION), text_config=dict(vision.TEXT), image_token_id=vision.IMAGE_TOKEN,
        video_token_id=vision.VIDEO_TOKEN, vision_start_token_id=vision.VISION_START,
        vision_end_token_id=vision.VISION_END, tie_word_embeddings=False)
    for c in (config, config.vision_config, config.text_config):
        c._attn_implementation = "eager"
    model = transformers.Qwen3VLForConditionalGeneration(config).eval()
    gen = torch.Generator().manual_seed(4321)
    vision.randomize(model.model.visual, gen)
    randomize_text(model, gen)

    t, h, w = IMAGE_GRID
    merge = vision.VISION["spatial_merge_size"]
    patch_dim = vision.VISION["in_channels"] * vision.VISION["temporal_patch_size"] * vision.VISION["patch_size"] ** 2
    pixel_values = vision.bf16(torch.randn(t * h * w, patch_dim, generator=gen))
    grid = torch.tensor([IMAGE_GRID], dtype=torch.long)
    ids = [1, 2, 3, vision.VISION_START] + [vision.IMAGE_TOKEN] * (t * (h // merge) * (w // merge)) + \
          [vision.VISION_END, 4, 5, 6, 7]
    input_ids = torch.tensor([ids], dtype=torch.long)
    inputs = dict(input_ids=input_ids, attention_mask=torch.ones_like(input_ids), pixel_values=pixel_values,
                  image_grid_thw=grid)
    # Newer transformers compute the M-RoPE positions only with the processor's token types
    # (1 at image tokens); pass them as the processor would.
    if "mm_token_type_ids" in inspect.signature(model.forward).parameters:
        inputs["mm_token_type_ids"] = (input_ids == vision.IMAGE_TOKEN).to(torch.int32)
    with torch.no_grad():
        logits = model(**inputs, use_cache=False).logits[0].float()
        generated = model.generate(**inputs, max_new_tokens=NEW_TOKENS, min_new_tokens=NEW_TOKENS, do_sample=False,
                                   eos_token_id=None, pad_token_id=0)
    greedy = generated[0, len(ids):].tolist()
    assert len(greedy) == NEW_TOKENS, greedy
    assert int(logits[-1].argmax()) == greedy[0], (int(logits[-1].argmax()), greedy[0])
    _, delta = vision.rope_index(model.model, input_ids, grid)

    d = os.path.join(out_dir, "qwen3_vl_generate")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    # The checkpoint's names: Qwen3VLForConditionalGeneration's state dict as saved.
    state = {k: v.detach().to(torch.bfloat16).contiguous() for k, v in model.state_dict().items()}
    assert any(k.startswith("model.language_model.") for k in state) and "lm_head.weight" in state, list(state)[:8]
    save_file(state, os.path.join(d, "model.safetensors"))
    save_file({"pixel_values": pixel_values.contiguous(), "logits": logits.contiguous()},
              os.path.join(d, "golden.safetensors"))
    with open(os.path.join(d, "golden.json"), "w") as f:
        json.dump(dict(input_ids=ids, image_grid=IMAGE_GRID, greedy_tokens=greedy, rope_delta=delta,
                       transformers=transformers.__version__, torch=torch.__version__), f, indent=2)
    print(f"wrote {d}: prompt of {len(ids)} tokens, greedy {greedy}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    main(sys.argv[1])
