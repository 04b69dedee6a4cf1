#!/usr/bin/env python3
"""Writes the shipped L1/L2 task files: tasks/dense-llm/*.json from the serving shapes of
Llama-3.1-8B, Qwen3-8B and Mistral-7B, and tasks/moe-llm/*.json from those of the MoE
models Qwen3-30B-A3B, Mixtral-8x7B and OLMoE-1B-7B (DeepSeek-V3 and Llama-4-Scout for the
routings the first three do not use).

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


# ---- mixture-of-experts models ------------------------------------------------------------
MOE_MODELS = {
    # name: hidden, MoE layers, experts, top-k, expert intermediate, renormalised top-k
    "qwen3-30b-a3b": dict(hidden=2048, layers=48, experts=128, topk=8, inter=768, renorm=True),
    "mixtral-8x7b": dict(hidden=4096, layers=32, experts=8, topk=2, inter=14336, renorm=True),
    "olmoe-1b-7b": dict(hidden=2048, layers=16, experts=64, topk=8, inter=1024, renorm=False),
}
# DeepSeek-V3 (grouped top-k with a correction bias, 58 MoE layers) and Llama-4-Scout
# (sigmoid top-1): the routings the models above do not use.
DEEPSEEK = {"deepseek-v3": dict(hidden=7168, layers=58, experts=256, topk=8, groups=8, topk_group=4, scale=2.5)}
LLAMA4 = {"llama-4-scout": dict(hidden=5120, layers=48, experts=16, topk=1)}
# The fused experts' 8-bit deployment: Qwen3-30B-A3B with block-scaled fp8 expert weights.
QWEN3_FP8 = {"qwen3-30b-a3b-fp8": dict(MOE_MODELS["qwen3-30b-a3b"], fp8=True)}


def topk_softmax(m, t, ctx, label):
    shape = {"tokens": t, "experts": m["experts"], "topk": m["topk"]}
    if not m["renorm"]:
        shape["renormalize"] = False
    yield shape, m["layers"]


def topk_sigmoid(m, t, ctx, label):
    yield {"tokens": t, "experts": m["experts"], "topk": m["topk"], "renormalize": False}, m["layers"]


def grouped_topk(m, t, ctx, label):
    yield {"tokens": t, "experts": m["experts"], "topk": m["topk"], "groups": m["groups"],
           "topk_group": m["topk_group"], "scale": m["scale"]}, m["layers"]


def block_rows(slots, experts):
    """The fused-experts baseline's rows per GEMM block (moe_gemm_layout.h)."""
    used = min(slots, experts)
    avg = -(-slots // used) if used else 0
    return 16 if avg <= 12 else 32 if avg <= 24 else 64 if avg <= 48 else 128


def align(m, t, ctx, label):
    yield {"tokens": t, "topk": m["topk"], "experts": m["experts"],
           "block_size": block_rows(t * m["topk"], m["experts"])}, m["layers"]


def unpermute_sum(m, t, ctx, label):
    yield {"tokens": t, "topk": m["topk"], "hidden": m["hidden"]}, m["layers"]


def fused_experts(m, t, ctx, label):
    shape = {"tokens": t, "topk": m["topk"], "experts": m["experts"], "hidden": m["hidden"], "inter": m["inter"]}
    if m.get("fp8"):
        shape["weight_dtype"] = "f8e4m3fn"
    yield shape, m["layers"]


MOE_TASKS = {
    "moe_topk_softmax": dict(op="moe_topk_softmax", level="L1", gen=topk_softmax, models=MOE_MODELS,
                             check=[{"tokens": 7, "experts": 60, "topk": 4}, {"tokens": 5, "experts": 8, "topk": 2,
                                                                             "ties": True}]),
    "moe_topk_sigmoid": dict(op="moe_topk_sigmoid", level="L1", gen=topk_sigmoid, models=LLAMA4,
                             check=[{"tokens": 9, "experts": 12, "topk": 2}]),
    "moe_grouped_topk": dict(op="moe_grouped_topk", level="L1", gen=grouped_topk, models=DEEPSEEK,
                             check=[{"tokens": 5, "experts": 48, "topk": 4, "groups": 6, "topk_group": 2,
                                     "scale": 2.0}]),
    "moe_align_block_size": dict(op="moe_align_block_size", level="L1", gen=align, models=MOE_MODELS,
                                 check=[{"tokens": 33, "topk": 3, "experts": 40, "block_size": 8,
                                         "routing": "skewed"}]),
    "moe_unpermute_sum": dict(op="moe_unpermute_sum", level="L1", gen=unpermute_sum, models=MOE_MODELS,
                              check=[{"tokens": 6, "topk": 3, "hidden": 200}]),
    "fused_experts": dict(op="fused_experts", level="L2", gen=fused_experts, models=MOE_MODELS,
                          check=[{"tokens": 5, "topk": 2, "experts": 6, "hidden": 128, "inter": 96},
                                 {"tokens": 9, "topk": 3, "experts": 4, "hidden": 72, "inter": 40,
                                  "routing": "dropped"}]),
    "fused_experts_fp8": dict(op="fused_experts", level="L2", gen=fused_experts, models=QWEN3_FP8,
                              check=[{"tokens": 5, "topk": 2, "experts": 6, "hidden": 256, "inter": 160,
                                      "weight_dtype": "f8e4m3fn"}]),
}


def write_tasks(tasks, category, default_models):
    out_dir = os.path.join(HERE, category)
    os.makedirs(out_dir, exist_ok=True)
    for task_id, spec in tasks.items():
        models = spec.get("models", default_models)
        task = {
            "id": task_id,
            "op": spec["op"],
            "level": spec["level"],
            "category": category,
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


def main():
    write_tasks(TASKS, "dense-llm", MODELS)
    write_tasks(MOE_TASKS, "moe-llm", MOE_MODELS)


if __name__ == "__main__":
    main()
