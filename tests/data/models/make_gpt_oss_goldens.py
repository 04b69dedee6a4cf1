#!/usr/bin/env python3
"""Golden logits and greedy tokens of a tiny random gpt-oss (transformers' GptOssForCausalLM)
for the engine's golden test (tests/models/llm/gpt_oss_golden_test.cpp).

The sibling of make_goldens.py for gpt-oss, which needs its own weight draws and router
probe: the attention sinks (self_attn.sinks, one logit per query head) are drawn large
enough to matter, every projection has a bias (q/k/v/o, the router, the experts), the
experts are stored input-major as transformers keeps them (gate_up_proj [E, H, 2I] with gate
and up in alternating columns, down_proj [E, I, H]) and their gate/up weights are drawn wide
enough that the clamped SwiGLU's limit (7) clips some values; the router ("mlp.router", with
a bias) is probed here, the bias included. The model has 2 layers (sliding window 8, then
full attention), head dim 64 (the CUDA kernels' sizes), YaRN x4 over a 64-token context with
truncate false, 4 experts top-2. Eager attention (the sink path of transformers' own code),
float32 on the CPU. Prompts are drawn until every routing decision is clear and the first
greedy choice is clear (make_goldens.py's margins).
Written to OUT/gpt_oss/: config.json, model.safetensors, golden.json, golden.safetensors.

    python3 tests/data/models/make_gpt_oss_goldens.py OUT_DIR    # OUT_DIR = tests/data/models
"""
import json
import os
import sys

import torch
import transformers
from safetensors.torch import save_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_goldens  # noqa: E402  (the shared greedy / prompt-drawing helpers)

CONFIG = dict(
    hidden_size=64, intermediate_size=32, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
    head_dim=64, vocab_size=256, max_position_embeddings=256, rms_norm_eps=1e-5, sliding_window=8,
    layer_types=["sliding_attention", "full_attention"], num_local_experts=4, num_experts_per_tok=2,
    swiglu_limit=7.0, attention_bias=True, tie_word_embeddings=False, eos_token_id=2, pad_token_id=None,
    torch_dtype="bfloat16")
# YaRN as the engine's tiny-gpt-oss: max_position_embeddings = factor x original, so that
# transformers' factor (max / original when original is given) is the configured one.
ROPE = dict(rope_type="yarn", factor=4.0, beta_fast=32.0, beta_slow=1.0, truncate=False,
            original_max_position_embeddings=64)
ROPE_THETA = 150000.0
PROMPT_LENGTHS = make_goldens.MOE_PROMPT_LENGTHS


def make_config():
    """transformers 5 takes rope_parameters (theta inside); older versions rope_theta + rope_scaling."""
    try:
        config = transformers.GptOssConfig(**CONFIG, rope_parameters=dict(ROPE, rope_theta=ROPE_THETA))
    except TypeError:
        config = transformers.GptOssConfig(**CONFIG, rope_theta=ROPE_THETA, rope_scaling=dict(ROPE))
    config._attn_implementation = "eager"
    config._experts_implementation = "eager"
    assert config.layer_types == CONFIG["layer_types"], config.layer_types
    rope = getattr(config, "rope_parameters", None) or getattr(config, "rope_scaling", None)
    assert rope and rope.get("factor") == ROPE["factor"] and rope.get("truncate") is False, rope
    assert rope.get("original_max_position_embeddings") == ROPE["original_max_position_embeddings"], rope
    return config


def randomize(model, gen):
    """Weights with a spread that gives clear greedy choices, rounded to bf16 (the engine
    loads the same values)."""
    H, I, E = CONFIG["hidden_size"], CONFIG["intermediate_size"], CONFIG["num_local_experts"]
    for name, p in model.named_parameters():
        with torch.no_grad():
            if name.endswith("experts.gate_up_proj"):  # [E, H, 2I]: gate / up columns alternate
                assert tuple(p.shape) == (E, H, 2 * I), (name, tuple(p.shape))
                p.copy_(3.0 * torch.randn(p.shape, generator=gen) / H ** 0.5)  # some beyond the limit
            elif name.endswith("experts.down_proj"):  # [E, I, H]
                assert tuple(p.shape) == (E, I, H), (name, tuple(p.shape))
                p.copy_(torch.randn(p.shape, generator=gen) / I ** 0.5)
            elif name.endswith("sinks"):
                p.copy_(1.5 * torch.randn(p.shape, generator=gen))
            elif "norm" in name:
                p.copy_(1.0 + 0.1 * torch.randn(p.shape, generator=gen))
            elif "embed_tokens" in name:
                p.copy_(torch.randn(p.shape, generator=gen))
            elif p.dim() == 2:
                p.copy_(torch.randn(p.shape, generator=gen) / p.shape[1] ** 0.5)
            else:  # biases (attention, router, experts)
                p.copy_(0.1 * torch.randn(p.shape, generator=gen))
    model.to(torch.bfloat16).to(torch.float32)


class RouterProbe:
    """make_goldens.RouterProbe for gpt-oss's routers (`<layer>.mlp.router`, a linear layer
    with a bias): records their inputs and recomputes the logits in float64."""

    def __init__(self, model, top_k):
        self.top_k = top_k
        self.inputs = []
        self.routers = [m for name, m in model.named_modules() if name.endswith("mlp.router")]
        if len(self.routers) != model.config.num_hidden_layers:
            raise RuntimeError(f"found {len(self.routers)} routers, expected {model.config.num_hidden_layers}")
        for m in self.routers:
            m.register_forward_pre_hook(self._hook, with_kwargs=True)

    def _hook(self, module, args, kwargs):
        x = args[0] if args else kwargs["hidden_states"]
        self.inputs.append((module, x.detach()))

    def min_margin(self):
        worst = float("inf")
        for module, x in self.inputs[-len(self.routers):]:
            logits = x.reshape(-1, x.shape[-1]).double() @ module.weight.double().t() + module.bias.double()
            top = logits.sort(dim=-1, descending=True).values
            gap = (top[:, self.top_k - 1] - top[:, self.top_k]) / logits.std()
            worst = min(worst, float(gap.min()))
        self.inputs.clear()
        return worst


def save(model, config, folder):
    """config.json and the state dict as transformers holds it (the published gpt-oss layout
    for bf16 experts), in bf16."""
    config.save_pretrained(folder)
    tensors = {k: v.detach().to(torch.bfloat16).contiguous() for k, v in model.state_dict().items()}
    save_file(tensors, os.path.join(folder, "model.safetensors"), metadata={"format": "pt"})


def main(out_dir):
    torch.manual_seed(0)
    config = make_config()
    gen = torch.Generator().manual_seed(1234)
    model = transformers.GptOssForCausalLM(config).eval()
    randomize(model, gen)
    folder = os.path.join(out_dir, "gpt_oss")
    os.makedirs(folder, exist_ok=True)
    save(model, config, folder)
    model.to(torch.float32)

    probe = RouterProbe(model, CONFIG["num_experts_per_tok"])
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
        json.dump({"family": "gpt_oss", "transformers": transformers.__version__, "torch": torch.__version__,
                   "prompts": prompts, "generated": generated, "routing_margin": make_goldens.ROUTING_MARGIN,
                   "min_routing_margin": margins, "prompt_draws": draws,
                   "logits": "golden.safetensors: logits.<i> is [prompt + generated, vocab] float32"}, f, indent=1)
    print("gpt_oss ok", [len(p) for p in prompts], margins, draws)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    main(sys.argv[1])
