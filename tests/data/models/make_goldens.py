#!/usr/bin/env python3
"""Golden logits and greedy tokens from HF transformers for small random-weight models of
every family the engine runs (dense and mixture-of-experts). The engine's tests
(tests/models/llm/golden_test.cpp, and the GPU variant) load each model folder written here and
compare.

For each family: a config (head_dim 64, so the CUDA attention kernels run it too), weights
drawn at random with a scale that gives well-separated logits, rounded to bf16 and saved
as bf16 safetensors; then, with the model in float32 (eager attention):
  - greedy generation of N tokens after each prompt (argmax of the last position, EOS
    not special: the engine runs these with ignore_eos),
  - the logits at every position of prompt + generated tokens (one forward pass).
Written to OUT/<family>/: config.json, model.safetensors, golden.json, golden.safetensors.

Mixture-of-experts families (mixtral, qwen3_moe, olmoe, qwen2_moe) run their experts
eagerly (one expert at a time, as written in the modeling file; qwen2_moe's shared expert
is an ordinary MLP). Their prompts are drawn until every routing decision of every layer
at every position is clear: the gap between the k-th and the (k+1)-th router logit is at
least ROUTING_MARGIN times that layer's router-logit standard deviation. bf16 rounding in
the engine moves router logits by a few thousandths of that; without the margin a near tie
picks another expert and the logits of that position differ wholesale, which no tolerance
can tell from a bug. Their first greedy choice must be clear too (FIRST_TOKEN_MARGIN), so
that every prompt has tokens to compare.

    python3 tests/data/models/make_goldens.py OUT_DIR             # every family
    python3 tests/data/models/make_goldens.py OUT_DIR mixtral olmoe   # only these
"""
import json
import os
import sys

import torch
import transformers
from safetensors.torch import save_file

COMMON = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=2,
              num_key_value_heads=1, head_dim=64, vocab_size=256, max_position_embeddings=512,
              rms_norm_eps=1e-6, bos_token_id=1, eos_token_id=2, torch_dtype="bfloat16")

FAMILIES = {
    "llama": ("LlamaConfig", "LlamaForCausalLM", dict(
        rope_theta=500000.0, rope_scaling=dict(rope_type="llama3", factor=8.0, low_freq_factor=1.0,
                                               high_freq_factor=4.0, original_max_position_embeddings=64))),
    "mistral": ("MistralConfig", "MistralForCausalLM", dict(rope_theta=10000.0, sliding_window=16)),
    "qwen2": ("Qwen2Config", "Qwen2ForCausalLM", dict(rope_theta=1000000.0, use_sliding_window=False)),
    "qwen3": ("Qwen3Config", "Qwen3ForCausalLM", dict(rope_theta=1000000.0, use_sliding_window=False,
                                                      attention_bias=False)),
    "gemma": ("GemmaConfig", "GemmaForCausalLM", dict(rope_theta=10000.0, hidden_activation="gelu_pytorch_tanh",
                                                      bos_token_id=2, eos_token_id=1, pad_token_id=0)),
    "gemma2": ("Gemma2Config", "Gemma2ForCausalLM", dict(
        rope_theta=10000.0, hidden_activation="gelu_pytorch_tanh", query_pre_attn_scalar=64, sliding_window=16,
        attn_logit_softcapping=20.0, final_logit_softcapping=15.0, bos_token_id=2, eos_token_id=1, pad_token_id=0)),
    "gemma3": ("Gemma3TextConfig", "Gemma3ForCausalLM", dict(
        rope_theta=1000000.0, rope_local_base_freq=10000.0, rope_scaling=dict(rope_type="linear", factor=8.0),
        hidden_activation="gelu_pytorch_tanh", query_pre_attn_scalar=64, sliding_window=16,
        sliding_window_pattern=2, bos_token_id=2, eos_token_id=1, pad_token_id=0)),
}

# Mixture-of-experts families: shapes of their own on top of COMMON (head_dim 64 still).
MOE_FAMILIES = {
    "mixtral": ("MixtralConfig", "MixtralForCausalLM", dict(
        rope_theta=1000000.0, sliding_window=None, num_local_experts=8, num_experts_per_tok=2)),
    "qwen3_moe": ("Qwen3MoeConfig", "Qwen3MoeForCausalLM", dict(
        rope_theta=1000000.0, use_sliding_window=False, attention_bias=False, num_experts=8,
        num_experts_per_tok=2, moe_intermediate_size=96, norm_topk_prob=True, decoder_sparse_step=1,
        mlp_only_layers=[])),
    # OLMoE's q/k norms span the whole projection (hidden_size wide), so head_dim must be
    # hidden_size / num_attention_heads: 128 / 2 = 64. Top-3 of 6, no renormalisation.
    "olmoe": ("OlmoeConfig", "OlmoeForCausalLM", dict(
        hidden_size=128, num_attention_heads=2, num_key_value_heads=1, head_dim=None, rope_theta=10000.0,
        num_experts=6, num_experts_per_tok=3, norm_topk_prob=False, clip_qkv=None, pad_token_id=0)),
    # Qwen2-MoE: biased q/k/v, and beside the routed experts a shared expert (a SwiGLU MLP
    # every token runs) scaled by sigmoid(shared_expert_gate(x)). Qwen2MoeConfig has no
    # head_dim field, so it is hidden_size / num_attention_heads: 128 / 2 = 64. Top-2 of 8
    # without renormalisation (Qwen1.5-MoE's norm_topk_prob). Its router is the module
    # `mlp.gate` ([num_experts, hidden]), which RouterProbe hooks; `mlp.shared_expert_gate`
    # ([1, hidden]) is no router and does not match.
    "qwen2_moe": ("Qwen2MoeConfig", "Qwen2MoeForCausalLM", dict(
        hidden_size=128, num_attention_heads=2, num_key_value_heads=1, head_dim=None, rope_theta=1000000.0,
        use_sliding_window=False, qkv_bias=True, num_experts=8, num_experts_per_tok=2, moe_intermediate_size=64,
        shared_expert_intermediate_size=192, norm_topk_prob=False, decoder_sparse_step=1, mlp_only_layers=[])),
}

PROMPT_LENGTHS = [7, 41]
MOE_PROMPT_LENGTHS = [7, 29]
NEW_TOKENS = 12
ROUTING_MARGIN = 0.03
# The engine's golden check compares greedy tokens with HF's up to the first choice whose
# top-2 logit gap is below 4% of the row's largest |logit|: MoE prompts are also drawn
# until their first greedy choice is clearer than that, so every prompt compares tokens.
FIRST_TOKEN_MARGIN = 0.05
MAX_PROMPT_DRAWS = 20000


def randomize(model, gen):
    """Weights with a spread that makes greedy choices clear: projections N(0, 1/fan_in),
    embeddings N(0, 1), norm weights around their identity."""
    gemma = "gemma" in model.config.model_type
    for name, p in model.named_parameters():
        with torch.no_grad():
            if "norm" in name:
                base = 0.0 if gemma else 1.0
                p.copy_(base + 0.1 * torch.randn(p.shape, generator=gen))
            elif "embed_tokens" in name:
                p.copy_(torch.randn(p.shape, generator=gen))
            elif p.dim() == 2:
                p.copy_(torch.randn(p.shape, generator=gen) / p.shape[1] ** 0.5)
            elif p.dim() == 3:  # stacked experts [E, out, in] (gate_up_proj, down_proj)
                p.copy_(torch.randn(p.shape, generator=gen) / p.shape[2] ** 0.5)
            else:  # biases
                p.copy_(0.1 * torch.randn(p.shape, generator=gen))
    # Exactly representable in bf16: the engine loads the same values.
    model.to(torch.bfloat16).to(torch.float32)


class RouterProbe:
    """Records the input of every layer's router (the module `<layer>.mlp.gate` or
    `<layer>.block_sparse_moe.gate`, whose weight is [num_experts, hidden]) and recomputes its
    logits in float64, whatever the router module returns."""

    def __init__(self, model, num_experts, top_k):
        self.top_k = top_k
        self.inputs = []
        self.gates = []
        for name, module in model.named_modules():
            w = getattr(module, "weight", None)
            if name.endswith(".gate") and isinstance(w, torch.Tensor) and w.dim() == 2 and w.shape[0] == num_experts:
                self.gates.append(module)
                module.register_forward_pre_hook(self._hook, with_kwargs=True)
        if len(self.gates) != model.config.num_hidden_layers:
            raise RuntimeError(f"found {len(self.gates)} routers, expected {model.config.num_hidden_layers}")

    def _hook(self, module, args, kwargs):
        x = args[0] if args else kwargs["hidden_states"]
        self.inputs.append((module, x.detach()))

    def min_margin(self):
        """Smallest (k-th minus (k+1)-th logit) / std(logits of that layer) over layers and
        positions of the last forward pass."""
        worst = float("inf")
        for module, x in self.inputs[-len(self.gates):]:
            logits = x.reshape(-1, x.shape[-1]).double() @ module.weight.double().t()
            top = logits.sort(dim=-1, descending=True).values
            gap = (top[:, self.top_k - 1] - top[:, self.top_k]) / logits.std()
            worst = min(worst, float(gap.min()))
        self.inputs.clear()
        return worst


def greedy(model, prompt):
    """Greedy, EOS not special: argmax of the last position, NEW_TOKENS times; then the logits
    at every position of prompt + generated tokens in one forward pass."""
    with torch.no_grad():
        tokens = []
        for _ in range(NEW_TOKENS):
            step = model(torch.tensor([prompt + tokens])).logits[0, -1]
            tokens.append(int(step.argmax()))
        logits = model(torch.tensor([prompt + tokens])).logits[0].float()
    return tokens, logits


def clear_routing_prompt(model, probe, n, vocab, gen):
    """Draws prompts of n tokens until every routing decision over prompt + generated tokens
    has a clear margin and the first greedy choice is clear. Returns prompt, generated
    tokens, logits, margin and draws."""
    for draw in range(1, MAX_PROMPT_DRAWS + 1):
        prompt = torch.randint(3, vocab, (n,), generator=gen).tolist()
        with torch.no_grad():
            model(torch.tensor([prompt]))
        if probe.min_margin() < ROUTING_MARGIN:  # cheap rejection on the prompt alone
            continue
        tokens, logits = greedy(model, prompt)  # its last forward is over prompt + generated
        margin = probe.min_margin()
        first = logits[n - 1]
        top2 = first.topk(2).values
        first_clear = float(top2[0] - top2[1]) >= FIRST_TOKEN_MARGIN * float(first.abs().max())
        if margin >= ROUTING_MARGIN and first_clear:
            return prompt, tokens, logits, margin, draw
    raise RuntimeError(f"no prompt of {n} tokens with clear routing in {MAX_PROMPT_DRAWS} draws")


def save(model, folder, moe):
    """save_pretrained in HF's original layout (MoE experts as per-expert tensors). Should
    this transformers fail to convert the fused experts back, the fused layout
    (experts.gate_up_proj / experts.down_proj) is written instead: the engine loads both."""
    if not moe:
        model.save_pretrained(folder, safe_serialization=True)
        return
    try:
        model.save_pretrained(folder, safe_serialization=True)
    except Exception as e:  # noqa: BLE001 - any conversion failure: fall back to the fused layout
        print("per-expert layout failed (", e, "): writing the fused layout")
        model.save_pretrained(folder, safe_serialization=True, save_original_format=False)


def main(out_dir, only):
    torch.manual_seed(0)
    families = {**{k: v + (False,) for k, v in FAMILIES.items()}, **{k: v + (True,) for k, v in MOE_FAMILIES.items()}}
    unknown = [f for f in only if f not in families]
    if unknown:
        raise SystemExit(f"unknown families {unknown}; known: {list(families)}")
    for family, (config_cls, model_cls, extra, moe) in families.items():
        if only and family not in only:
            continue
        cfg_args = dict(COMMON)
        cfg_args.update(extra)
        cfg_args = {k: v for k, v in cfg_args.items() if v is not None or k in ("sliding_window", "clip_qkv")}
        config = getattr(transformers, config_cls)(**cfg_args)
        config._attn_implementation = "eager"
        if moe:
            config._experts_implementation = "eager"
        gen = torch.Generator().manual_seed(1234)
        model = getattr(transformers, model_cls)(config).eval()
        randomize(model, gen)
        folder = os.path.join(out_dir, family)
        os.makedirs(folder, exist_ok=True)
        save(model.to(torch.bfloat16), folder, moe)
        model.to(torch.float32)

        prompts, generated, tensors, extra_info = [], [], {}, {}
        if moe:
            probe = RouterProbe(model, extra.get("num_experts", extra.get("num_local_experts")),
                                extra["num_experts_per_tok"])
            margins, draws = [], []
            for i, n in enumerate(MOE_PROMPT_LENGTHS):
                prompt, tokens, logits, margin, draw = clear_routing_prompt(model, probe, n, config.vocab_size, gen)
                prompts.append(prompt)
                generated.append(tokens)
                tensors[f"logits.{i}"] = logits.contiguous()
                margins.append(round(margin, 4))
                draws.append(draw)
            extra_info = {"routing_margin": ROUTING_MARGIN, "min_routing_margin": margins, "prompt_draws": draws}
        else:
            for i, n in enumerate(PROMPT_LENGTHS):
                prompt = torch.randint(3, config.vocab_size, (n,), generator=gen).tolist()
                tokens, logits = greedy(model, prompt)
                prompts.append(prompt)
                generated.append(tokens)
                tensors[f"logits.{i}"] = logits.contiguous()
        save_file(tensors, os.path.join(folder, "golden.safetensors"))
        with open(os.path.join(folder, "golden.json"), "w") as f:
            json.dump({"family": family, "transformers": transformers.__version__, "torch": torch.__version__,
                       "prompts": prompts, "generated": generated, **extra_info,
                       "logits": "golden.safetensors: logits.<i> is [prompt + generated, vocab] float32"}, f, indent=1)
        print(family, "ok", [len(p) for p in prompts], extra_info)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    main(sys.argv[1], sys.argv[2:])
