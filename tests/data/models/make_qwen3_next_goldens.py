#!/usr/bin/env python3
"""Golden logits and greedy tokens of a tiny random Qwen3-Next (transformers'
Qwen3NextForCausalLM) for the engine's golden test (tests/models/llm/qwen3_next_golden_test.cpp).

The sibling of make_goldens.py for the hybrid family, which needs its own weight draws:
Qwen3NextRMSNorm weights (input/post-attention layer norms, the final norm, the attention's
q/k norms) are offsets from one, while the gated DeltaNet's Qwen3NextRMSNormGated weight is
a plain scale; A_log and dt_bias are drawn around transformers' initialisation (A in
(0, 16], dt_bias 1). The model has 4 layers (linear_attention x 3, full_attention: the
default full_attention_interval 4), head dims 64 (the CUDA kernels' sizes), 4 experts top-2
with norm_topk_prob and a shared expert in every layer (make_goldens.RouterProbe wants a
router per layer; tiny-qwen3-next's engine tests cover a dense layer).

transformers runs the gated delta rule and the short convolution in its PyTorch fallback
(torch_chunk_gated_delta_rule, F.conv1d) when flash-linear-attention and causal-conv1d are
not installed: in float32 that is the reference. Run it in an environment without them
(with flash-linear-attention, transformers builds the gated norm on the current CUDA device
and runs fla's Triton kernels instead of the PyTorch code). Prompts are drawn until every routing
decision is clear and the first greedy choice is clear (make_goldens.py's margins).
Written to OUT/qwen3_next/: config.json, model.safetensors, golden.json, golden.safetensors.

    python3 tests/data/models/make_qwen3_next_goldens.py OUT_DIR    # OUT_DIR = tests/data/models
"""
import json
import os
import sys

import torch
import transformers
from safetensors.torch import save_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_goldens  # noqa: E402  (the shared greedy / routing-margin helpers)

CONFIG = dict(
    hidden_size=64, intermediate_size=128, num_hidden_layers=4, num_attention_heads=2, num_key_value_heads=1,
    head_dim=64, vocab_size=256, max_position_embeddings=512, rms_norm_eps=1e-6, bos_token_id=1, eos_token_id=2,
    torch_dtype="bfloat16", rope_theta=10000000.0, partial_rotary_factor=0.25, attention_bias=False,
    linear_num_key_heads=2, linear_num_value_heads=4, linear_key_head_dim=64, linear_value_head_dim=64,
    linear_conv_kernel_dim=4, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
    shared_expert_intermediate_size=48, norm_topk_prob=True, decoder_sparse_step=1, mlp_only_layers=[])
# The MoE families' lengths (make_goldens.MOE_PROMPT_LENGTHS): every routing decision of
# 4 layers over prompt and generated tokens must be clear, which a 41-token prompt never
# was in 20000 draws.
PROMPT_LENGTHS = make_goldens.MOE_PROMPT_LENGTHS


def randomize(model, gen):
    """Weights with a spread that gives clear greedy choices, rounded to bf16 (the engine
    loads the same values)."""
    for name, p in model.named_parameters():
        with torch.no_grad():
            if name.endswith("linear_attn.norm.weight"):  # Qwen3NextRMSNormGated: a plain scale
                p.copy_(1.0 + 0.1 * torch.randn(p.shape, generator=gen))
            elif "norm" in name:  # Qwen3NextRMSNorm: x * (1 + w)
                p.copy_(0.1 * torch.randn(p.shape, generator=gen))
            elif name.endswith("A_log"):
                p.copy_(torch.empty(p.shape).uniform_(0.5, 16, generator=gen).log())
            elif name.endswith("dt_bias"):
                p.copy_(1.0 + 0.1 * torch.randn(p.shape, generator=gen))
            elif "embed_tokens" in name:
                p.copy_(torch.randn(p.shape, generator=gen))
            elif name.endswith("conv1d.weight"):  # [conv_dim, 1, kernel]
                p.copy_(torch.randn(p.shape, generator=gen) / p.shape[2] ** 0.5)
            elif p.dim() == 2:
                p.copy_(torch.randn(p.shape, generator=gen) / p.shape[1] ** 0.5)
            elif p.dim() == 3:  # stacked experts [E, out, in]
                p.copy_(torch.randn(p.shape, generator=gen) / p.shape[2] ** 0.5)
            else:
                p.copy_(0.1 * torch.randn(p.shape, generator=gen))
    model.to(torch.bfloat16).to(torch.float32)


def main(out_dir):
    torch.manual_seed(0)
    config = transformers.Qwen3NextConfig(**CONFIG)
    config._attn_implementation = "eager"
    config._experts_implementation = "eager"
    assert config.layer_types == ["linear_attention"] * 3 + ["full_attention"], config.layer_types
    gen = torch.Generator().manual_seed(1234)
    model = transformers.Qwen3NextForCausalLM(config).eval()
    randomize(model, gen)
    folder = os.path.join(out_dir, "qwen3_next")
    os.makedirs(folder, exist_ok=True)
    make_goldens.save(model.to(torch.bfloat16), folder, moe=True)
    model.to(torch.float32)

    probe = make_goldens.RouterProbe(model, CONFIG["num_experts"], CONFIG["num_experts_per_tok"])
    prompts, generated, tensors, margins, draws = [], [], {}, [], []
    for i, n in enumerate(PROMPT_LENGTHS):
        prompt, tokens, logits, margin, draw = make_goldens.clear_routing_prompt(
            model, probe, n, config.vocab_size, gen)
        prompts.append(prompt)
        generated.append(tokens)
        tensors[f"logits.{i}"] = logits.contiguous()
        margins.append(round(margin, 4))
        draws.append(draw)
    save_file(tensors, os.path.join(folder, "golden.safetensors"))
    with open(os.path.join(folder, "golden.json"), "w") as f:
        json.dump({"family": "qwen3_next", "transformers": transformers.__version__, "torch": torch.__version__,
                   "prompts": prompts, "generated": generated, "routing_margin": make_goldens.ROUTING_MARGIN,
                   "min_routing_margin": margins, "prompt_draws": draws,
                   "logits": "golden.safetensors: logits.<i> is [prompt + generated, vocab] float32"}, f, indent=1)
    print("qwen3_next ok", [len(p) for p in prompts], margins, draws)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    main(sys.argv[1])
