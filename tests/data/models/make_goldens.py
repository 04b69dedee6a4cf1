#!/usr/bin/env python3
"""Golden logits and greedy tokens from HF transformers for small random-weight models of
every dense family the engine runs. The engine's tests (tests/engine/golden_test.cpp, and
the GPU variant) load each model folder written here and compare.

For each family: a config (head_dim 64, so the CUDA attention kernels run it too), weights
drawn at random with a scale that gives well-separated logits, rounded to bf16 and saved
as bf16 safetensors; then, with the model in float32 (eager attention):
  - greedy generation of N tokens after each prompt (argmax of the last position, EOS
    not special: the engine runs these with ignore_eos),
  - the logits at every position of prompt + generated tokens (one forward pass).
Written to OUT/<family>/: config.json, model.safetensors, golden.json, golden.safetensors.

    python3 tests/data/models/make_goldens.py OUT_DIR
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

PROMPT_LENGTHS = [7, 41]
NEW_TOKENS = 12


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
            else:  # biases
                p.copy_(0.1 * torch.randn(p.shape, generator=gen))
    # Exactly representable in bf16: the engine loads the same values.
    model.to(torch.bfloat16).to(torch.float32)


def main(out_dir):
    torch.manual_seed(0)
    for family, (config_cls, model_cls, extra) in FAMILIES.items():
        cfg_args = dict(COMMON)
        cfg_args.update(extra)
        config = getattr(transformers, config_cls)(**cfg_args)
        config._attn_implementation = "eager"
        gen = torch.Generator().manual_seed(1234)
        model = getattr(transformers, model_cls)(config).eval()
        randomize(model, gen)
        folder = os.path.join(out_dir, family)
        os.makedirs(folder, exist_ok=True)
        model.to(torch.bfloat16).save_pretrained(folder, safe_serialization=True)
        model.to(torch.float32)

        prompts, generated, tensors = [], [], {}
        for i, n in enumerate(PROMPT_LENGTHS):
            prompt = torch.randint(3, config.vocab_size, (n,), generator=gen).tolist()
            with torch.no_grad():
                # Greedy, EOS not special: argmax of the last position, NEW_TOKENS times.
                tokens = []
                for _ in range(NEW_TOKENS):
                    step = model(torch.tensor([prompt + tokens])).logits[0, -1]
                    tokens.append(int(step.argmax()))
                logits = model(torch.tensor([prompt + tokens])).logits[0].float()
            prompts.append(prompt)
            generated.append(tokens)
            tensors[f"logits.{i}"] = logits.contiguous()
        save_file(tensors, os.path.join(folder, "golden.safetensors"))
        with open(os.path.join(folder, "golden.json"), "w") as f:
            json.dump({"family": family, "transformers": transformers.__version__, "torch": torch.__version__,
                       "prompts": prompts, "generated": generated,
                       "logits": "golden.safetensors: logits.<i> is [prompt + generated, vocab] float32"}, f, indent=1)
        print(family, "ok", [len(p) for p in prompts])


if __name__ == "__main__":
    main(sys.argv[1])
