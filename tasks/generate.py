#!/usr/bin/env python3
"""Writes the shipped L1/L2 task files (tasks/dense-llm/*.json) from the serving shapes of
Llama-3.1-8B, Qwen3-8B and Mistral-7B.

Each workload's `calls` is how often one serving mix calls that shape: the op's calls per
forward step times the number of steps of each scenario below. Until `fk capture` records
real mixes, this mix stands in for "production": mostly decode steps at several batch
sizes, some long prefills. Re-run after changing shapes: python3 tasks/generate.py
"""
import json
import os

MODELS = {
    # name: hidden, layers, q heads, kv heads, head dim, intermediate, vocab
    "llama-3.1-8b": dict(hidden=4096, layers=32, q=32, kv=8, d=128, inter=14336, vocab=128256),
    "qwen3-8b": dict(hidden=4096, layers=36, q=32, kv=8, d=128, inter=12288, vocab=151936),
    "mistral-7b": dict(hidden=4096, layers=32, q=32, kv=8, d=128, inter=14336, vocab=32768),
}

# Gemma-2-9B: the models above use none of the Gemma ops (scale 1+w norms, tanh-GELU MLP,
# logit soft-capping), so their tasks take its shapes.
GEMMA = {"gemma-2-9b": dict(hidden=3584, layers=42, q=16, kv=8, d=256, inter=14336, vocab=256000)}

# (label, tokens per step, steps in the mix, context length per sequence)
SCENARIOS = [
    ("decode batch 1", 1, 1000, 4096),
    ("decode batch 64", 64, 1000, 4096),
    ("decode batch 256", 256, 250, 2048),
    ("prefill 4096", 4096, 16, 4096),
    ("prefill 16384", 16384, 4, 16384),
]

HERE = os.path.dirname(os.path.abspath(__file__))


def add(workloads, shape, calls, label):
    """Merges equal shapes (several models share them), summing their calls."""
    key = json.dumps(shape, sort_keys=True)
    for w in workloads:
        if json.dumps(w["shape"], sort_keys=True) == key:
            w["calls"] += calls
            if label not in w["label"]:
                w["label"] += "; " + label
            return
    workloads.append({"shape": shape, "calls": calls, "label": label})


def per_model(fn, models=None):
    workloads = []
    for name, m in (models or MODELS).items():
        for label, tokens, steps, ctx in SCENARIOS:
            for shape, per_step in fn(m, tokens, ctx, label):
                add(workloads, shape, steps * per_step, f"{name} {label}")
    return workloads


def decode(label):
    return label.startswith("decode")


def rms_norm(m, t, ctx, label):
    # One un-fused norm per step (the first layer's input); the rest fuse the residual add.
    yield {"tokens": t, "hidden": m["hidden"]}, 1


def fused_add_rms_norm(m, t, ctx, label):
    yield {"tokens": t, "hidden": m["hidden"]}, 2 * m["layers"]


def silu_and_mul(m, t, ctx, label):
    yield {"tokens": t, "d": m["inter"]}, m["layers"]


def gelu_and_mul(m, t, ctx, label):
    yield {"tokens": t, "d": m["inter"], "approximate": "tanh"}, m["layers"]


def gemma_norm(m, t, ctx, label):
    yield {"tokens": t, "hidden": m["hidden"]}, 1


def gemma_fused_norm(m, t, ctx, label):
    yield {"tokens": t, "hidden": m["hidden"]}, 4 * m["layers"]  # sandwich norms: 4 per layer


def logit_softcap(m, t, ctx, label):
    yield {"tokens": t if decode(label) else 1, "vocab": m["vocab"], "cap": 30.0}, 1


def embedding(m, t, ctx, label):
    yield {"tokens": t, "hidden": m["hidden"], "vocab": m["vocab"]}, 1


def qk_norm_rope(m, t, ctx, label):
    for shape, calls in rotary(m, t, ctx, label):
        yield shape, calls


def attention_decode(m, t, ctx, label):
    if decode(label):
        yield {"kv_lens": [ctx] * t, "num_qo_heads": m["q"], "num_kv_heads": m["kv"], "head_dim": m["d"]}, m["layers"]


def attention_prefill(m, t, ctx, label):
    if not decode(label):
        yield {"qo_lens": [t], "kv_lens": [t], "num_qo_heads": m["q"], "num_kv_heads": m["kv"],
               "head_dim": m["d"]}, m["layers"]


def rotary(m, t, ctx, label):
    shape = {"tokens": t, "q_heads": m["q"], "kv_heads": m["kv"], "head_size": m["d"], "max_pos": 32768}
    if not decode(label):
        shape["positions"] = "arange"
    yield shape, m["layers"]


def linear(m, t, ctx, label):
    h, q, kv, d, inter = m["hidden"], m["q"], m["kv"], m["d"], m["inter"]
    for n, k in [((q + 2 * kv) * d, h), (h, q * d), (2 * inter, h), (h, inter)]:
        yield {"m": t, "n": n, "k": k}, m["layers"]
    yield {"m": t if decode(label) else 1, "n": m["vocab"], "k": h}, 1  # logits of the last positions


def kv_write(m, t, ctx, label):
    pages = max(2048, (t + 15) // 16 + 64)
    yield {"tokens": t, "kv_heads": m["kv"], "head_dim": m["d"], "page_size": 16, "num_pages": pages}, m["layers"]


def sample(m, t, ctx, label):
    if decode(label):
        yield {"batch": t, "vocab": m["vocab"], "temperature": 0.7, "top_p": 0.9}, 1


TASKS = {
    # `check`: shapes that are checked but never timed, unlike any timed shape, so a
    # candidate specialised to the timed shapes fails.
    "rms_norm": dict(op="rms_norm", level="L1", gen=rms_norm,
                     check=[{"tokens": 3, "hidden": 5120}, {"tokens": 17, "hidden": 1000, "dtype": "f16"}]),
    "rotary_embedding": dict(op="rotary_embedding", level="L1", gen=rotary,
                             check=[{"tokens": 5, "q_heads": 4, "kv_heads": 2, "head_size": 64, "max_pos": 64},
                                    {"tokens": 3, "q_heads": 8, "kv_heads": 1, "head_size": 128, "max_pos": 4096,
                                     "dtype": "f16"}]),
    "linear": dict(op="linear", level="L1", gen=linear,
                   # The baseline is cuBLASLt: calling it is not a new kernel.
                   forbid=["cublas", "cublasLt"],
                   check=[{"m": 3, "n": 40, "k": 72}, {"m": 17, "n": 256, "k": 128, "bias": True}]),
    "reshape_and_cache": dict(op="reshape_and_cache", level="L1", gen=kv_write,
                              check=[{"tokens": 7, "kv_heads": 2, "head_dim": 64, "page_size": 4, "num_pages": 8}]),
    "sample": dict(op="sample", level="L1", gen=sample,
                   check=[{"batch": 3, "vocab": 1000, "temperature": 1.0, "top_k": 20}]),
    "fused_add_rms_norm": dict(op="fused_add_rms_norm", level="L2", gen=fused_add_rms_norm,
                               check=[{"tokens": 3, "hidden": 5120}, {"tokens": 5, "hidden": 1000, "dtype": "f16"}]),
    "silu_and_mul": dict(op="silu_and_mul", level="L1", gen=silu_and_mul,
                         check=[{"tokens": 3, "d": 1000}, {"tokens": 2, "d": 13, "dtype": "f16"}]),
    "embedding": dict(op="embedding", level="L1", gen=embedding,
                      check=[{"tokens": 5, "hidden": 100, "vocab": 1000}]),
    "qk_norm_rope": dict(op="qk_norm_rope", level="L2", gen=qk_norm_rope, models={"qwen3-8b": MODELS["qwen3-8b"]},
                         check=[{"tokens": 5, "q_heads": 4, "kv_heads": 2, "head_size": 64, "max_pos": 64}]),
    "batch_decode_paged_attention": dict(op="batch_decode_paged_attention", level="L1", gen=attention_decode,
                                         check=[{"kv_lens": [5, 17, 33], "num_qo_heads": 8, "num_kv_heads": 2,
                                                 "head_dim": 64, "page_size": 4}]),
    "batch_prefill_paged_attention": dict(op="batch_prefill_paged_attention", level="L1", gen=attention_prefill,
                                          check=[{"qo_lens": [7, 3], "kv_lens": [7, 20], "num_qo_heads": 8,
                                                  "num_kv_heads": 2, "head_dim": 64, "page_size": 4}]),
    "gemma_rms_norm": dict(op="gemma_rms_norm", level="L1", gen=gemma_norm, models=GEMMA,
                           check=[{"tokens": 3, "hidden": 1000}]),
    "gemma_fused_add_rms_norm": dict(op="gemma_fused_add_rms_norm", level="L2", gen=gemma_fused_norm, models=GEMMA,
                                     check=[{"tokens": 3, "hidden": 1000}]),
    "gelu_and_mul": dict(op="gelu_and_mul", level="L1", gen=gelu_and_mul, models=GEMMA,
                         check=[{"tokens": 3, "d": 1000, "approximate": "tanh"}]),
    "logit_softcap": dict(op="logit_softcap", level="L1", gen=logit_softcap, models=GEMMA,
                          check=[{"tokens": 2, "vocab": 1000, "cap": 30.0}]),
}


def main():
    out_dir = os.path.join(HERE, "dense-llm")
    os.makedirs(out_dir, exist_ok=True)
    for task_id, spec in TASKS.items():
        models = spec.get("models", MODELS)
        task = {
            "id": task_id,
            "op": spec["op"],
            "level": spec["level"],
            "category": "dense-llm",
            "architectures": list(models),
            "description": "Generated by tasks/generate.py from the serving shapes of "
                           + ", ".join(models) + ".",
            "workloads": per_model(spec["gen"], models),
        }
        if "check" in spec:
            task["check_workloads"] = spec["check"]
        if "forbid" in spec:
            task["forbid"] = spec["forbid"]
        with open(os.path.join(out_dir, task_id + ".json"), "w") as f:
            json.dump(task, f, indent=1)
            f.write("\n")
        print(f"{task_id}: {len(task['workloads'])} workloads")


if __name__ == "__main__":
    main()
