#!/usr/bin/env python3
"""Writes the shipped task files, tasks/dense-llm/*.json, tasks/moe-llm/*.json and tasks/ssm/*.json.

The pipeline: `fk capture` runs the engine on a workload and records every op call as a
task workload with its call count and time; the captures are stored as
tasks/captures/<model>/<workload>.json.gz (tasks/captures/README.md); this script picks,
for each task, the shapes that carry its op's time and writes the task files; `fk kernels`
reads them.

Each task lists the models it takes shapes from. From every capture of those models that
calls the task's op, it keeps the shapes holding most of the op's time there: most time
first, until they cover COVERAGE of it, at most PER_CAPTURE (fewer when the task would
exceed MAX_TIMED workloads), and none past the first under MIN_SHARE, which stands for
the crowd of small ones (heaviest()). Equal shapes from several captures become one
workload: their calls add up and their labels join. `calls` stays what the captures
counted (the harness weights each workload's speedup by it); each label gives the shape's
share of the op's time in its capture. The one change to a captured shape: the KV write's
cache is cut to KV_WRITE_PAGES pages (task_shape()).

A task whose op no listed model's captures call yet (the Gemma ops, until gemma-2-9b is
captured; the MoE ops) takes table shapes instead: the serving shapes of its models under
the SCENARIOS mix below. It switches to captures by itself once
tasks/captures/<model>/ holds captures that call the op.

Each task's level is its op's, from the op catalog of a built fk (`fk ops list --json`:
--fk, or the fk of a build under the repository), which must also define every task's op.

Re-run after adding captures or changing a table: python3 tasks/generate.py [--fk build/bin/fk]
"""
import argparse
import glob
import gzip
import json
import os
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
CAPTURES = os.path.join(HERE, "captures")

COVERAGE = 0.9     # share of an op's time in one capture that its kept shapes should cover
PER_CAPTURE = 4    # at most this many shapes from one capture
MIN_SHARE = 0.05   # a shape under this share of the op's time is one of a crowd (heaviest())
MAX_TIMED = 24     # timed workloads per task: each costs seconds to minutes of evaluation
# The engine sizes its KV cache to the device's free memory (28k pages, 1.8 GB for an 8B
# model on an H100). The KV write touches only its tokens' slots, so the cache's size is not
# part of the kernel's work, but the harness would build the whole cache for every check
# (four times over as the oracle's f64 copy). Captured caches are cut to this many pages,
# more than any captured step needs.
KV_WRITE_PAGES = 2048


# ---- captured shapes ----------------------------------------------------------------------
def load_captures():
    """{model: {workload: {op: the op's entry of capture.json}}} of tasks/captures/."""
    captures = {}
    for path in sorted(glob.glob(os.path.join(CAPTURES, "*", "*.json.gz"))):
        model = os.path.basename(os.path.dirname(path))
        workload = os.path.basename(path)[: -len(".json.gz")]
        with gzip.open(path, "rt") as f:
            ops = {entry["op"]: entry for entry in json.load(f)["ops"]}
        captures.setdefault(model, {})[workload] = ops
    return captures


def heaviest(entry, limit, min_share=MIN_SHARE):
    """(shape entry, share of the op's time) of the fewest shapes covering COVERAGE of the
    op's time in one capture, most time first, at most `limit`. The first shape under
    MIN_SHARE is the last kept: past it the op's time is spread over many near-equal
    shapes (decode attention over every batch's context lengths, norms over every decode
    batch size), and it stands for them."""
    total = sum(w["seconds"] for w in entry["workloads"]) or 1.0
    kept, covered = [], 0.0
    for w in sorted(entry["workloads"], key=lambda w: -w["seconds"]):
        if covered >= COVERAGE or len(kept) == limit:
            break
        share = w["seconds"] / total
        kept.append((w, share))
        covered += share
        if share < min_share:
            break
    return kept


def task_shape(op, shape):
    """A captured shape as a task workload (KV_WRITE_PAGES says why the cache shrinks)."""
    shape = dict(shape)
    if op == "reshape_and_cache":
        shape["num_pages"] = min(shape["num_pages"], max(KV_WRITE_PAGES, -(-shape["tokens"] // shape["page_size"])))
    return shape


def captured_workloads(op, captures, per_capture=PER_CAPTURE, min_share=MIN_SHARE):
    """The task's timed workloads from `captures` ({model: {workload: ops}}, those calling
    `op`), keeping fewer shapes per capture until the task has at most MAX_TIMED."""
    for limit in range(per_capture, 0, -1):
        workloads = []
        for model, runs in captures.items():
            for workload, ops in runs.items():
                for w, share in heaviest(ops[op], limit, min_share):
                    add(workloads, task_shape(op, w["shape"]), w["calls"],
                        f"{model} {workload}: {100 * share:.3g}% of op time")
        if len(workloads) <= MAX_TIMED:
            break
    return workloads


def add(workloads, shape, calls, label):
    """Merges equal shapes (several models or workloads share them), summing their calls."""
    key = json.dumps(shape, sort_keys=True)
    for w in workloads:
        if json.dumps(w["shape"], sort_keys=True) == key:
            w["calls"] += calls
            if label not in w["label"].split("; "):
                w["label"] += "; " + label
            return
    workloads.append({"shape": shape, "calls": calls, "label": label})


# ---- table shapes (ops no model's captures call yet) --------------------------------------
# (label, tokens per step, steps in the mix, context length per sequence): mostly decode
# steps at several batch sizes, some long prefills. `calls` of a table shape is the op's
# calls per forward step times the steps of each scenario.
SCENARIOS = [
    ("decode batch 1", 1, 1000, 4096),
    ("decode batch 64", 64, 1000, 4096),
    ("decode batch 256", 256, 250, 2048),
    ("prefill 4096", 4096, 16, 4096),
    ("prefill 16384", 16384, 4, 16384),
]

TABLE_MODELS = {
    # Gemma-2-9B: the other dense models use none of the Gemma ops (scale 1+w norms,
    # tanh-GELU MLP, logit soft-capping).
    "gemma-2-9b": dict(hidden=3584, layers=42, q=16, kv=8, d=256, inter=14336, vocab=256000),
    # MoE models: hidden, MoE layers, experts, top-k, expert intermediate, renormalised top-k,
    # and for the whole layer (moe_layer) its query / KV heads of d, and Qwen3's q/k norms.
    "qwen3-30b-a3b": dict(hidden=2048, layers=48, experts=128, topk=8, inter=768, renorm=True, q=32, kv=4, d=128,
                          qk_norm=True),
    "mixtral-8x7b": dict(hidden=4096, layers=32, experts=8, topk=2, inter=14336, renorm=True, q=32, kv=8, d=128),
    "olmoe-1b-7b": dict(hidden=2048, layers=16, experts=64, topk=8, inter=1024, renorm=False),
    # DeepSeek-V3 (grouped top-k with a correction bias, 58 MoE layers) and Llama-4-Scout
    # (sigmoid top-1): the routings the models above do not use.
    "deepseek-v3": dict(hidden=7168, layers=58, experts=256, topk=8, groups=8, topk_group=4, scale=2.5),
    "llama-4-scout": dict(hidden=5120, layers=48, experts=16, topk=1),
    # Qwen1.5-MoE-A2.7B: the sigmoid-gated shared expert beside the routed ones (one per layer).
    "qwen1.5-moe-a2.7b": dict(hidden=2048, layers=24, experts=60, topk=4, inter=1408, renorm=False),
}
# Dense models, for the ops their captures predate (rms_norm_linear): hidden, layers, the
# fused qkv projection's rows and the MLP's intermediate size.
TABLE_MODELS.update({
    "llama-3.1-8b": dict(hidden=4096, layers=32, qkv=6144, inter=14336),
    "qwen3-8b": dict(hidden=4096, layers=36, qkv=6144, inter=12288, qk_norm=True),
    "mistral-7b-v0.3": dict(hidden=4096, layers=32, qkv=6144, inter=14336),
})
# gpt-oss-120b's one-GPU preset (8 of its 36 layers at full width): 64 query / 8 KV heads of
# 64, layers alternating a 128-token window and full attention, 128 experts top-4, YaRN x32.
TABLE_MODELS["gpt-oss-120b-8l"] = dict(hidden=2880, layers=8, q=64, kv=8, d=64, experts=128, topk=4, inter=2880,
                                       window=127)
# The fused experts' 8-bit deployment: Qwen3-30B-A3B with block-scaled fp8 expert weights.
TABLE_MODELS["qwen3-30b-a3b-fp8"] = dict(TABLE_MODELS["qwen3-30b-a3b"], fp8=True)


def table_workloads(gen, models):
    """The task's workloads from `gen`(model config, tokens, context, scenario label), which
    yields (shape, calls per step) pairs, or (shape, calls per step, what sets it apart) where
    one scenario makes several."""
    workloads = []
    for name in models:
        for label, tokens, steps, ctx in SCENARIOS:
            for shape, per_step, *kind in gen(TABLE_MODELS[name], tokens, ctx, label):
                add(workloads, shape, steps * per_step, " ".join([name, label, *kind]))
    return workloads


def decode(label):
    return label.startswith("decode")


def gelu_and_mul(m, t, ctx, label):
    yield {"tokens": t, "d": m["inter"], "approximate": "tanh"}, m["layers"]


def gemma_norm(m, t, ctx, label):
    # One un-fused norm per step (the first layer's input); the rest fuse the residual add.
    yield {"tokens": t, "hidden": m["hidden"]}, 1


def gemma_fused_norm(m, t, ctx, label):
    yield {"tokens": t, "hidden": m["hidden"]}, 4 * m["layers"]  # sandwich norms: 4 per layer


def norm_linear(m, t, ctx, label):
    # The two norm sites of a layer: the input norm into the qkv projection (the first
    # layer's without a residual add) and the post-attention norm into gate_up.
    yield {"m": t, "n": m["qkv"], "k": m["hidden"]}, m["layers"] - 1
    yield {"m": t, "n": m["qkv"], "k": m["hidden"], "residual": False}, 1
    yield {"m": t, "n": 2 * m["inter"], "k": m["hidden"]}, m["layers"]


def rope_cache(m, t, ctx, label):
    # Every layer's rope and KV-cache write: 32 query / 8 KV heads of 128 in all three
    # dense models; Qwen3 normalises q and k per head first.
    yield {"tokens": t, "q_heads": 32, "kv_heads": 8, "head_size": 128, "max_pos": 32768,
           "norm": bool(m.get("qk_norm"))}, m["layers"]


def logit_softcap(m, t, ctx, label):
    yield {"tokens": t if decode(label) else 1, "vocab": m["vocab"], "cap": 30.0}, 1


# ---- dense-LLM tasks ----------------------------------------------------------------------
DENSE = ["llama-3.1-8b", "qwen3-8b", "mistral-7b-v0.3"]
GEMMA = ["gemma-2-9b"]
MOE = ["qwen3-30b-a3b", "mixtral-8x7b", "olmoe-1b-7b"]

# Each task: its op, the models it takes shapes from, `gen` for table shapes
# (ops no model's captures call yet), `check`: shapes that are checked but never timed,
# unlike any timed shape, so a candidate specialised to the timed shapes fails,
# `forbid`: libraries a candidate may not call, and `about`: a sentence that opens its
# description.
TASKS = {
    "rms_norm": dict(op="rms_norm", models=DENSE,
                     check=[{"tokens": 3, "hidden": 5120}, {"tokens": 17, "hidden": 1000, "dtype": "f16"}]),
    "rotary_embedding": dict(op="rotary_embedding", models=DENSE,
                             check=[{"tokens": 5, "q_heads": 4, "kv_heads": 2, "head_size": 64, "max_pos": 64},
                                    {"tokens": 3, "q_heads": 8, "kv_heads": 1, "head_size": 128, "max_pos": 4096,
                                     "dtype": "f16"}]),
    "linear": dict(op="linear", models=DENSE,
                   # The baseline is cuBLASLt: calling it is not a new kernel.
                   forbid=["cublas", "cublasLt"],
                   check=[{"m": 3, "n": 40, "k": 72}, {"m": 17, "n": 256, "k": 128, "bias": True}]),
    "rms_norm_linear": dict(op="rms_norm_linear", models=DENSE, gen=norm_linear,
                            forbid=["cublas", "cublasLt"],
                            check=[{"m": 1, "n": 40, "k": 72}, {"m": 3, "n": 100, "k": 136, "bias": True},
                                   {"m": 1, "n": 24, "k": 256, "residual": False}]),
    "reshape_and_cache": dict(op="reshape_and_cache", models=DENSE,
                              check=[{"tokens": 7, "kv_heads": 2, "head_dim": 64, "page_size": 4, "num_pages": 8}]),
    "sample": dict(op="sample", models=DENSE,
                   check=[{"batch": 3, "vocab": 1000, "temperature": 1.0, "top_k": 20}]),
    "fused_add_rms_norm": dict(op="fused_add_rms_norm", models=DENSE,
                               check=[{"tokens": 3, "hidden": 5120}, {"tokens": 5, "hidden": 1000, "dtype": "f16"}]),
    "silu_and_mul": dict(op="silu_and_mul", models=DENSE,
                         check=[{"tokens": 3, "d": 1000}, {"tokens": 2, "d": 13, "dtype": "f16"}]),
    "embedding": dict(op="embedding", models=DENSE,
                      check=[{"tokens": 5, "hidden": 100, "vocab": 1000}]),
    "qk_norm_rope": dict(op="qk_norm_rope", models=DENSE,
                         check=[{"tokens": 5, "q_heads": 4, "kv_heads": 2, "head_size": 64, "max_pos": 64}]),
    "rope_and_cache": dict(op="rope_and_cache", models=DENSE, gen=rope_cache,
                           check=[{"tokens": 5, "q_heads": 4, "kv_heads": 2, "head_size": 64, "max_pos": 64,
                                   "norm": True, "page_size": 4},
                                  {"tokens": 3, "q_heads": 8, "kv_heads": 1, "head_size": 128, "max_pos": 4096,
                                   "dtype": "f16", "padding": 1}]),
    "batch_decode_paged_attention": dict(op="batch_decode_paged_attention", models=DENSE,
                                         check=[{"kv_lens": [5, 17, 33], "num_qo_heads": 8, "num_kv_heads": 2,
                                                 "head_dim": 64, "page_size": 4}]),
    "batch_prefill_paged_attention": dict(op="batch_prefill_paged_attention", models=DENSE,
                                          check=[{"qo_lens": [7, 3], "kv_lens": [7, 20], "num_qo_heads": 8,
                                                  "num_kv_heads": 2, "head_dim": 64, "page_size": 4}]),
    "gemma_rms_norm": dict(op="gemma_rms_norm", models=GEMMA, gen=gemma_norm,
                           check=[{"tokens": 3, "hidden": 1000}]),
    "gemma_fused_add_rms_norm": dict(op="gemma_fused_add_rms_norm", models=GEMMA, gen=gemma_fused_norm,
                                     check=[{"tokens": 3, "hidden": 1000}]),
    "gelu_and_mul": dict(op="gelu_and_mul", models=GEMMA, gen=gelu_and_mul,
                         check=[{"tokens": 3, "d": 1000, "approximate": "tanh"}]),
    "logit_softcap": dict(op="logit_softcap", models=GEMMA, gen=logit_softcap,
                          check=[{"tokens": 2, "vocab": 1000, "cap": 30.0}]),
}


# ---- mixture-of-experts tasks (table shapes until the MoE models are captured) -----------
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


def fused_moe(m, t, ctx, label):
    shape = {"tokens": t, "topk": m["topk"], "experts": m["experts"], "hidden": m["hidden"], "inter": m["inter"]}
    if not m["renorm"]:
        shape["renormalize"] = False
    yield shape, m["layers"]


def gated_add(m, t, ctx, label):
    yield {"tokens": t, "hidden": m["hidden"]}, m["layers"]


def gpt_oss_layer(m, t, ctx, label):
    # Half the layers slide over the last 128 tokens, half attend to the whole context.
    shape = {"hidden": m["hidden"], "heads": m["q"], "kv_heads": m["kv"], "head_dim": m["d"],
             "experts": m["experts"], "topk": m["topk"], "inter": m["inter"], "yarn_factor": 32.0}
    qo, kv = ([1] * t, [ctx] * t) if decode(label) else ([t], [ctx])
    yield dict(shape, qo_lens=qo, kv_lens=kv, window_left=m["window"]), m["layers"] // 2, "(sliding layers)"
    yield dict(shape, qo_lens=qo, kv_lens=kv), m["layers"] // 2, "(full layers)"


def moe_layer(m, t, ctx, label):
    shape = {"hidden": m["hidden"], "heads": m["q"], "kv_heads": m["kv"], "head_dim": m["d"],
             "experts": m["experts"], "topk": m["topk"], "inter": m["inter"]}
    if m.get("qk_norm"):
        shape["qk_norm"] = True
    qo, kv = ([1] * t, [ctx] * t) if decode(label) else ([t], [ctx])
    yield dict(shape, qo_lens=qo, kv_lens=kv), m["layers"]


MOE_TASKS = {
    "moe_topk_softmax": dict(op="moe_topk_softmax", models=MOE, gen=topk_softmax,
                             check=[{"tokens": 7, "experts": 60, "topk": 4}, {"tokens": 5, "experts": 8, "topk": 2,
                                                                             "ties": True}]),
    "moe_topk_sigmoid": dict(op="moe_topk_sigmoid", models=["llama-4-scout"], gen=topk_sigmoid,
                             check=[{"tokens": 9, "experts": 12, "topk": 2}]),
    "moe_grouped_topk": dict(op="moe_grouped_topk", models=["deepseek-v3"], gen=grouped_topk,
                             check=[{"tokens": 5, "experts": 48, "topk": 4, "groups": 6, "topk_group": 2,
                                     "scale": 2.0}]),
    "moe_align_block_size": dict(op="moe_align_block_size", models=MOE, gen=align,
                                 check=[{"tokens": 33, "topk": 3, "experts": 40, "block_size": 8,
                                         "routing": "skewed"}]),
    "moe_unpermute_sum": dict(op="moe_unpermute_sum", models=MOE, gen=unpermute_sum,
                              check=[{"tokens": 6, "topk": 3, "hidden": 200}]),
    "fused_experts": dict(op="fused_experts", models=MOE, gen=fused_experts,
                          check=[{"tokens": 5, "topk": 2, "experts": 6, "hidden": 128, "inter": 96},
                                 {"tokens": 9, "topk": 3, "experts": 4, "hidden": 72, "inter": 40,
                                  "routing": "dropped"}]),
    "fused_moe": dict(op="fused_moe", models=MOE, gen=fused_moe,
                      check=[{"tokens": 3, "topk": 2, "experts": 6, "hidden": 128, "inter": 96},
                             {"tokens": 7, "topk": 4, "experts": 60, "hidden": 64, "inter": 32,
                              "renormalize": False}]),
    "sigmoid_gated_add": dict(op="sigmoid_gated_add", models=["qwen1.5-moe-a2.7b"], gen=gated_add,
                              check=[{"tokens": 5, "hidden": 1000}, {"tokens": 3, "hidden": 13, "dtype": "f16"}]),
    # gpt-oss: the attention sinks after the attention ops, and its experts (biases, clamped SwiGLU).
    "attention_sink_rescale": dict(op="attention_sink_rescale", models=["gpt-oss-120b-8l"],
                                   check=[{"tokens": 5, "heads": 4, "head_dim": 64}]),
    "fused_experts_swigluoai": dict(op="fused_experts_swigluoai", models=["gpt-oss-120b-8l"],
                                    check=[{"tokens": 3, "topk": 2, "experts": 6, "hidden": 256, "inter": 160}]),
    # The whole gpt-oss layer (L3): attention with sinks (sliding or full), router, experts.
    "gpt_oss_layer": dict(op="gpt_oss_layer", models=["gpt-oss-120b-8l"], gen=gpt_oss_layer, table_over_captures=True,
                          check=[{"hidden": 64, "heads": 4, "kv_heads": 2, "experts": 8, "topk": 2, "inter": 32,
                                  "qo_lens": [1, 6, 1], "kv_lens": [9, 6, 30], "window_left": 7},
                                 {"hidden": 96, "heads": 3, "kv_heads": 1, "experts": 5, "topk": 4, "inter": 40,
                                  "qo_lens": [1, 1], "kv_lens": [20, 3], "dtype": "f16", "first_layer": True}]),
    # The whole Mixtral / Qwen3-MoE layer (L3): attention (Qwen3's q/k norms), router, experts.
    "moe_layer": dict(op="moe_layer", models=["qwen3-30b-a3b", "mixtral-8x7b"], gen=moe_layer,
                      table_over_captures=True,
                      check=[{"hidden": 64, "heads": 4, "kv_heads": 2, "head_dim": 64, "experts": 8, "topk": 2,
                              "inter": 32, "qo_lens": [1, 6, 1], "kv_lens": [9, 6, 30], "qk_norm": True},
                             {"hidden": 96, "heads": 3, "kv_heads": 1, "head_dim": 64, "experts": 5, "topk": 3,
                              "inter": 40, "qo_lens": [1, 1], "kv_lens": [20, 3], "dtype": "f16",
                              "first_layer": True}]),
    "fused_experts_fp8": dict(op="fused_experts", models=["qwen3-30b-a3b-fp8"], gen=fused_experts,
                              check=[{"tokens": 5, "topk": 2, "experts": 6, "hidden": 256, "inter": 160,
                                      "weight_dtype": "f8e4m3fn"}]),
}


# ---- linear attention & state space ----------------------------------------------------------
# Qwen3-Next-80B-A3B's gated-DeltaNet layers (36 of its 48): the short conv over the q, k and
# v channels (16 + 16 key heads and 32 value heads of 128: 8192 channels, 4 taps, SiLU), the
# gated RMSNorm of the 32 value heads, the L2 norm of q and of k (16 heads each; the shapes
# of the standalone op, which the delta-rule kernels may also do inside). Decode batches take
# their slots from a pool of 64 more.
TABLE_MODELS["qwen3-next-80b-a3b"] = dict(layers=36, conv_dim=8192, conv_width=4, k_heads=16, v_heads=32, head_dim=128,
                                          attn_layers=12, attn_width=16 * 256, hidden=2048)


def conv_prefill(m, t, ctx, label):
    if not decode(label):
        yield {"seq_lens": [t], "dim": m["conv_dim"], "width": m["conv_width"], "initial": "none"}, m["layers"]


def conv_update(m, t, ctx, label):
    if decode(label):
        yield {"batch": t, "dim": m["conv_dim"], "width": m["conv_width"], "extra_slots": 64}, m["layers"]


def norm_gated(m, t, ctx, label):
    yield {"tokens": t * m["v_heads"], "hidden": m["head_dim"]}, m["layers"]


def qk_l2_norm(m, t, ctx, label):
    yield {"tokens": t * m["k_heads"], "hidden": m["head_dim"]}, 2 * m["layers"]


def gdn_prefill(m, t, ctx, label):
    # A fresh prompt: no initial state (has_initial_state all 0).
    if not decode(label):
        yield {"seq_lens": [t], "hk": m["k_heads"], "hv": m["v_heads"], "dk": m["head_dim"], "dv": m["head_dim"],
               "initial": "zeros"}, m["layers"]


def gdn_gates(m, t, ctx, label):
    yield {"tokens": t, "heads": m["v_heads"]}, m["layers"]


def attn_output_gate(m, t, ctx, label):
    # The gated attention layers: the output multiplied by sigmoid(gate), q heads x head dim wide.
    yield {"tokens": t, "hidden": m["attn_width"]}, m["attn_layers"]


def gdn_decode(m, t, ctx, label):
    if decode(label):
        yield {"batch": t, "seq_len": 1, "hk": m["k_heads"], "hv": m["v_heads"], "dk": m["head_dim"],
               "dv": m["head_dim"], "spare_slots": 64}, m["layers"]


def gdn_layer(m, t, ctx, label):
    # The whole gated-DeltaNet sub-layer (L3): a fresh prompt, or a decode step of t sequences.
    shape = {"hidden": m["hidden"], "hk": m["k_heads"], "hv": m["v_heads"], "dk": m["head_dim"], "dv": m["head_dim"],
             "width": m["conv_width"]}
    if decode(label):
        yield dict(shape, decode=True, batch=t, spare_slots=64), m["layers"]
    else:
        yield dict(shape, seq_lens=[t], initial="zeros"), m["layers"]


# Its one-GPU preset (12 of the 48 layers at full width) is what `fk capture` runs: the
# shapes are the full model's, the calls per step a quarter of them.
TABLE_MODELS["qwen3-next-80b-a3b-12l"] = dict(TABLE_MODELS["qwen3-next-80b-a3b"], layers=9, attn_layers=3)
SSM = ["qwen3-next-80b-a3b-12l"]

SSM_TASKS = {
    "causal_conv1d": dict(op="causal_conv1d", models=SSM, gen=conv_prefill,
                          check=[{"seq_lens": [1, 2, 3, 7, 0, 12], "dim": 24},
                                 {"seq_lens": [9, 2], "dim": 20, "dtype": "f32", "bias": True, "initial": "all"}]),
    "causal_conv1d_update": dict(op="causal_conv1d_update", models=SSM, gen=conv_update,
                                 check=[{"batch": 4, "tokens": 3, "dim": 16}, {"batch": 6, "dim": 13, "bias": True}]),
    "rms_norm_gated": dict(op="rms_norm_gated", models=SSM, gen=norm_gated,
                           check=[{"tokens": 5, "hidden": 1000}, {"tokens": 3, "hidden": 13, "dtype": "f16"}]),
    "l2_norm": dict(op="l2_norm", models=SSM, gen=qk_l2_norm,
                    check=[{"tokens": 5, "hidden": 1000}, {"tokens": 3, "hidden": 13, "dtype": "f16"}]),
    "chunk_gated_delta_rule": dict(op="chunk_gated_delta_rule", models=SSM, gen=gdn_prefill,
                                   check=[{"seq_lens": [1, 63, 64, 65, 200]},
                                          {"seq_lens": [130, 1], "hk": 1, "hv": 2, "dk": 128, "dv": 128}]),
    "fused_recurrent_gated_delta_rule": dict(op="fused_recurrent_gated_delta_rule", models=SSM, gen=gdn_decode,
                                             check=[{"batch": 7, "seq_len": 1},
                                                    {"batch": 3, "seq_len": 4, "initial": "mixed"}]),
    # The gates of the delta rule and the gated attention's output gate.
    "gdn_gating": dict(op="gdn_gating", models=SSM, gen=gdn_gates, check=[{"tokens": 5, "heads": 3}, {"tokens": 1, "heads": 64}]),
    "sigmoid_mul": dict(op="sigmoid_mul", models=SSM, gen=attn_output_gate,
                        check=[{"tokens": 3, "hidden": 1000}, {"tokens": 2, "hidden": 13, "dtype": "f16"}]),
    # The gated-DeltaNet sub-layer (L3): every part above but the attention's gate, as one op.
    "gdn_layer": dict(op="gdn_layer", models=SSM, gen=gdn_layer,
                      check=[{"seq_lens": [1, 63, 64, 65, 7], "hidden": 64, "hk": 2, "hv": 4, "dk": 16, "dv": 16},
                             {"decode": True, "batch": 5, "hidden": 48, "hk": 1, "hv": 3, "dk": 8, "dv": 12,
                              "dtype": "f16"}]),
}


# ---- text encoders (the Batch pattern) ----------------------------------------------------
# BGE-M3 (XLM-RoBERTa large: 24 post-norm layers of 1024, 16 heads of 64, GELU MLP of 4096)
# captured by `fk capture --workload 32x512 | mixed` (a batch of packed sequences), and
# ColBERTv2 (BERT-base: 12 layers of 768, 12 heads of 64) indexing 32 passages of its
# 180-token doc_maxlen (`--workload 32x180`). Tasks
# whose op a dense LLM task also benchmarks take an encoder_ prefix (task ids are unique).
ENCODERS = ["bge-m3", "colbertv2"]
COLBERT = ["colbertv2"]  # late-interaction retrieval
ENCODER_TASKS = {
    "encoder_layer": dict(op="encoder_layer", models=ENCODERS,
                          check=[{"hidden": 64, "heads": 2, "intermediate": 96, "seq_lens": [3, 9, 1]},
                                 {"hidden": 128, "heads": 2, "intermediate": 256, "seq_lens": [40],
                                  "dtype": "bf16", "approximate": "tanh"}]),
    "varlen_attention": dict(op="varlen_attention", models=ENCODERS,
                             check=[{"seq_lens": [1, 17, 64, 3], "heads": 4, "kv_heads": 4, "head_dim": 64},
                                    {"seq_lens": [130], "heads": 2, "kv_heads": 1, "head_dim": 128,
                                     "dtype": "f16"}]),
    "add_layer_norm": dict(op="add_layer_norm", models=ENCODERS,
                           check=[{"tokens": 5, "hidden": 1000}, {"tokens": 3, "hidden": 13, "dtype": "f16"}]),
    "add": dict(op="add", models=ENCODERS, check=[{"tokens": 5, "hidden": 1000}, {"tokens": 3, "hidden": 13}]),
    "gelu": dict(op="gelu", models=ENCODERS,
                 check=[{"tokens": 5, "hidden": 1000}, {"tokens": 3, "hidden": 13, "approximate": "tanh"}]),
    "encoder_linear": dict(op="linear", models=ENCODERS, forbid=["cublas", "cublasLt"],
                           check=[{"m": 3, "n": 40, "k": 72, "bias": True}, {"m": 17, "n": 256, "k": 128}]),
    # ColBERTv2 scores passages by late interaction: no capture of it yet, so the task takes
    # the maxsim definition's bench workloads (32-token queries, passages of up to 180 tokens).
    "maxsim": dict(op="maxsim", models=COLBERT,
                   about="ColBERTv2's late-interaction (MaxSim) scoring of packed queries against packed passages.",
                   check=[{"query_lens": [32, 7], "doc_lens": [1, 0, 45, 180], "dim": 128, "dtype": "f16"},
                          {"query_lens": [0, 40], "doc_lens": [9, 70, 3], "dim": 64}]),
}


# ---- multimodal (Qwen3-VL) -------------------------------------------------------------------
# Qwen3-VL-8B's text model (36 layers, 32 query and 8 KV heads of 128) rotates q and k by
# its interleaved M-RoPE at every layer; its vision tower adds the bilinear taps of the
# learned position grid (48 x 48 positions of 1152) to every patch of an image once.
TABLE_MODELS["qwen3-vl-8b"] = dict(layers=36, q=32, kv=8, d=128, vision_hidden=1152, grid=2304)


def mrope(m, t, ctx, label):
    yield {"tokens": t, "q_heads": m["q"], "kv_heads": m["kv"], "head_size": m["d"], "max_pos": 32768,
           "section": [24, 20, 20]}, m["layers"]


def vision_positions(m, t, ctx, label):
    # One image per prefill: 1024 x 1024 pixels are 4096 patches of 16 (no decode-time work).
    if not decode(label):
        yield {"tokens": 4096, "hidden": m["vision_hidden"], "vocab": m["grid"]}, 1


VLM = ["qwen3-vl-8b"]
VLM_TASKS = {
    "mrope_rotary_embedding": dict(op="mrope_rotary_embedding", models=VLM, gen=mrope,
                                   check=[{"tokens": 5, "q_heads": 4, "kv_heads": 2, "head_size": 64, "max_pos": 64,
                                           "section": [16, 8, 8]}]),
    "weighted_embedding_add": dict(op="weighted_embedding_add", models=VLM, gen=vision_positions,
                                   check=[{"tokens": 7, "hidden": 40, "vocab": 16}]),
    # The vision tower's block (L3): its op definition's bench workloads (one 1024^2 image,
    # four 448^2 ones) until a capture records the tower.
    "qwen3_vl_vision_block": dict(op="qwen3_vl_vision_block", models=VLM,
                                  check=[{"hidden": 144, "heads": 2, "intermediate": 160, "seq_lens": [16, 24, 4]},
                                         {"hidden": 144, "heads": 2, "intermediate": 160, "seq_lens": [36, 8],
                                          "dtype": "f16"}]),
}


# ---- science (OpenFold3's Pairformer, the Batch pattern) -------------------------------------
# OpenFold3's trunk (48 Pairformer blocks of c_s 384, c_z 128; triangle attention 4 heads of
# 32, single attention 16 of 24, triangle multiplication 128) on one structure: no capture
# yet, so each task takes its op definition's bench workloads (384- and 768-token crops).
SCIENCE = ["openfold3"]
SCIENCE_TASKS = {
    "pairformer_block": dict(op="pairformer_block", models=SCIENCE,
                             check=[{"tokens": 7, "batch": 2, "lengths": [7, 4], "c_s": 32, "c_z": 16, "c_mul": 16,
                                     "tri_heads": 2, "tri_head_dim": 8, "single_heads": 4, "single_head_dim": 8,
                                     "dtype": "bf16"}]),
    "triangle_multiplication": dict(op="triangle_multiplication", models=SCIENCE,
                                    check=[{"n": 7, "pair_channels": 32, "hidden": 16, "batch": 2},
                                           {"n": 9, "pair_channels": 24, "hidden": 16, "batch": 2, "padded": 3,
                                            "incoming": 1, "dtype": "f16"}]),
    "triangle_attention": dict(op="triangle_attention", models=SCIENCE,
                               check=[{"tokens": 8, "c_z": 16, "heads": 2, "head_dim": 16},
                                      {"batch": 2, "tokens": 6, "c_z": 16, "heads": 1, "head_dim": 24,
                                       "lengths": [4, 6], "ending": 1}]),
    "pair_bias_attention": dict(op="pair_bias_attention", models=SCIENCE,
                                check=[{"rows": 6, "seq": 13, "heads": 4, "head_dim": 32, "groups": 2,
                                        "mask": "random"},
                                       {"rows": 3, "seq": 70, "heads": 2, "head_dim": 24, "groups": 3, "dtype": "f16"}]),
    "single_attention_pair_bias": dict(op="single_attention_pair_bias", models=SCIENCE,
                                       check=[{"batch": 2, "tokens": 7, "c_s": 32, "c_z": 16, "heads": 2,
                                               "head_dim": 24, "lengths": [7, 3]}]),
    "pairformer_transition": dict(op="pairformer_transition", models=SCIENCE,
                                  check=[{"rows": 37, "channels": 32, "hidden": 128},
                                         {"rows": 50, "channels": 24, "hidden": 96, "dtype": "f16"}]),
}


# ---- diffusion (FLUX.1's transformer, the Denoise pattern) -----------------------------------
# FLUX.1-dev (19 double-stream and 38 single-stream blocks of 3072, 24 heads of 128) at 1024^2
# (4096 image + 512 text tokens) and 512^2, captured by `fk capture --workload 1024px | 512px`
# (one denoising step on the GPU): the blocks are the L3 tasks.
DIFFUSION = ["flux.1-dev"]
WORLD = ["oasis-500m"]  # world models: a DiT over video frames
DIFFUSION_TASKS = {
    "flux_double_block": dict(op="flux_double_block", models=DIFFUSION,
                              check=[{"hidden": 128, "heads": 2, "mlp": 256, "text": 5, "image": 8},
                                     {"hidden": 64, "heads": 1, "mlp": 128, "text": 1, "image": 30, "dtype": "f16"}]),
    "flux_single_block": dict(op="flux_single_block", models=DIFFUSION,
                              check=[{"hidden": 128, "heads": 2, "mlp": 256, "seq": 13},
                                     {"hidden": 128, "heads": 2, "mlp": 512, "seq": 7, "batch": 2}]),
    "adaln_modulate": dict(op="adaln_modulate", models=DIFFUSION,
                           check=[{"tokens": 6, "hidden": 64, "batch": 2}, {"tokens": 3, "hidden": 256, "eps": 1e-5}]),
    "gated_residual_add": dict(op="gated_residual_add", models=DIFFUSION,
                               check=[{"tokens": 6, "hidden": 64, "batch": 2},
                                      {"tokens": 9, "hidden": 40, "batch": 3, "dtype": "f32"}]),
    "flow_match_euler_step": dict(op="flow_match_euler_step", models=DIFFUSION,
                                  check=[{"tokens": 16, "hidden": 64, "dt": -1.0},
                                         {"tokens": 5, "hidden": 64, "dt": 0.0, "dtype": "f32"}]),
    "silu": dict(op="silu", models=DIFFUSION,
                 check=[{"tokens": 6, "hidden": 64, "batch": 2}, {"tokens": 3, "hidden": 13}]),
    # The blocks' parts, which a dense LLM or encoder task also benchmarks (prefixed: task ids
    # are unique): FLUX's joint attention over 4608 tokens, its GEMMs, tanh GELU and the
    # per-head q/k RMSNorm with the interleaved (GPT-J) rotation of its 3-axis rope.
    "flux_varlen_attention": dict(op="varlen_attention", models=DIFFUSION,
                                  check=[{"seq_lens": [1, 17, 64, 3], "heads": 4, "kv_heads": 4, "head_dim": 64},
                                         {"seq_lens": [130], "heads": 2, "kv_heads": 2, "head_dim": 128}]),
    "flux_linear": dict(op="linear", models=DIFFUSION, forbid=["cublas", "cublasLt"],
                        check=[{"m": 3, "n": 40, "k": 72, "bias": True}, {"m": 17, "n": 256, "k": 128}]),
    "flux_gelu": dict(op="gelu", models=DIFFUSION,
                      check=[{"tokens": 5, "hidden": 1000, "approximate": "tanh"}, {"tokens": 3, "hidden": 13}]),
    "flux_qk_norm_rope": dict(op="qk_norm_rope", models=DIFFUSION,
                              check=[{"tokens": 5, "q_heads": 4, "kv_heads": 4, "head_size": 64, "max_pos": 64,
                                      "style": "gptj"}]),
}

# World models: Oasis-500m's spatio-temporal DiT. No capture yet: the ops' bench workloads
# (its 32-frame window of 144 patches, earlier windows, one frame). The block is the L3 task;
# transpose_tokens moves its tokens between frame-major (spatial attention, per-frame adaLN)
# and position-major order (temporal attention); ddim_step is its sampler's update.
WORLD_TASKS = {
    "oasis_block": dict(op="oasis_block", models=WORLD,
                        check=[{"hidden": 128, "heads": 2, "mlp": 256, "frames": 3, "seq": 6},
                               {"hidden": 128, "heads": 2, "mlp": 256, "frames": 2, "seq": 5, "clips": 2}]),
    "transpose_tokens": dict(op="transpose_tokens", models=WORLD,
                             check=[{"batch": 2, "x": 3, "y": 5, "channels": 16},
                                    {"batch": 1, "x": 5, "y": 3, "channels": 13, "dtype": "f32"}]),
    "ddim_step": dict(op="ddim_step", models=WORLD,
                      check=[{"tokens": 16, "hidden": 64, "c_sample": 0.0447, "c_output": -0.999},
                             {"tokens": 5, "hidden": 64, "c_sample": 1.0, "c_output": 0.0, "dtype": "f32"}]),
}


# ---- recommendation (DLRMv2) ---------------------------------------------------------------------
# DLRM at MLPerf's shapes: 26 tables of 128-wide rows, 13 dense features; shapes from its
# capture at 2048 one-hot samples.
RECSYS = ["dlrmv2"]
RECSYS_TASKS = {
    "embedding_bag": dict(op="embedding_bag", models=RECSYS,
                          about="DLRM's per-table lookup: each sample's bag of categorical ids pooled by sum "
                                "(PyTorch's nn.EmbeddingBag).",
                          check=[{"bag_sizes": [3, 0, 1, 7, 2], "rows": 1000, "dim": 128},
                                 {"batch": 33, "bag_size": 20, "bag_size_min": 0, "rows": 500, "dim": 120,
                                  "index_dtype": "i64"}]),
    "dlrm_interaction": dict(op="dlrm_interaction", models=RECSYS,
                             about="DLRM's dot interaction: the pairwise dot products of each sample's bottom-MLP "
                                   "output and pooled embeddings, after the dense row.",
                             check=[{"batch": 5, "features": 26, "dim": 128},
                                    {"batch": 3, "features": 9, "dim": 40}]),
    # The interaction and the top MLP (L3): what DLRM runs after its lookups.
    "dlrm_top": dict(op="dlrm_top", models=RECSYS,
                     about="DLRM's dot interaction and top MLP (linear, relu, ..., linear) as one op.",
                     check=[{"batch": 5, "features": 26, "dim": 128, "top": [64, 16, 1]},
                            {"batch": 3, "features": 4, "dim": 24, "top": [40, 1], "dtype": "f16"}]),
}


# ---- detection (YOLOv10n) ----------------------------------------------------------------------
# The C2f block is the L3 task; the head's box decode, the convolutions and the neck's
# pooling, upsampling and concatenations the L1 ones. A forward calls conv2d on dozens of
# layer shapes, few of them over MIN_SHARE of its time: its task keeps up to 12 per
# capture, whatever their share, toward COVERAGE. MobileNetV4's captures add its convolutions
# (stem, 1x1 expand / project, depthwise) to the conv2d task.
DETECTION = ["yolov10n"]
MOBILENET = ["mobilenetv4-conv-small"]
CONVNEXT = ["convnextv2-base"]
DETECTION_TASKS = {
    "conv2d": dict(op="conv2d", models=DETECTION + MOBILENET, per_capture=12, min_share=0.0,
                   check=[{"batch": 2, "height": 9, "width": 7, "in_channels": 12, "out_channels": 20, "kernel": 3,
                           "stride": 2},
                          {"batch": 1, "height": 8, "width": 8, "in_channels": 24, "out_channels": 24, "kernel": 7,
                           "groups": 24, "dtype": "bf16"},
                          {"batch": 1, "height": 5, "width": 6, "in_channels": 40, "out_channels": 9, "kernel": 1,
                           "activation": "none", "bias": False}]),
    "max_pool2d": dict(op="max_pool2d", models=DETECTION,
                       check=[{"batch": 2, "height": 7, "width": 6, "channels": 10, "kernel": 5, "stride": 1,
                               "padding": 2}]),
    "upsample_nearest2d": dict(op="upsample_nearest2d", models=DETECTION,
                               check=[{"batch": 2, "height": 3, "width": 5, "channels": 12, "scale": 2}]),
    "concat_channels": dict(op="concat_channels", models=DETECTION,
                            check=[{"batch": 2, "height": 3, "width": 4, "channels": [5, 8, 3]}]),
    "yolov10_c2f": dict(op="yolov10_c2f", models=DETECTION,
                        check=[{"batch": 2, "height": 5, "width": 4, "in_channels": 8, "out_channels": 8,
                                "shortcut": True},
                               {"batch": 1, "height": 6, "in_channels": 12, "out_channels": 16, "bottlenecks": 2,
                                "dtype": "bf16"}]),
    "dfl_box_decode": dict(op="dfl_box_decode", models=DETECTION,
                           check=[{"batch": 2, "grids": [8, 4, 2], "classes": 8},
                                  {"batch": 1, "grids": [5, 3], "strides": [4, 16], "classes": 3, "reg_max": 7,
                                   "dtype": "bf16"}]),
    # MobileNetV4's main block (L3): its Universal Inverted Residual, four convolutions.
    "uir_block": dict(op="uir_block", models=MOBILENET,
                      about="MobileNetV4's Universal Inverted Residual block (depthwise start, 1x1 expand, depthwise "
                            "mid, 1x1 project, residual) as one op, NHWC.",
                      check=[{"batch": 2, "size": 9, "channels": 16, "mid": 40, "out_channels": 16, "start": 3,
                              "mid_kernel": 5, "stride": 1, "residual": True},
                             {"batch": 1, "size": 11, "channels": 8, "mid": 24, "out_channels": 16, "start": 0,
                              "mid_kernel": 3, "stride": 2, "dtype": "bf16"}]),
    # ConvNeXt V2's block (L3) and its new part, the GRN (L1). No capture of it yet: the ops'
    # bench workloads (ConvNeXtV2-B's four stages at 384 x 384, batch 1 and 32).
    "convnextv2_block": dict(op="convnextv2_block", models=CONVNEXT,
                             about="ConvNeXt V2's block (7x7 depthwise conv, LayerNorm, linear to 4C, GELU, GRN, "
                                   "linear back, residual) as one op, NHWC.",
                             check=[{"batch": 2, "size": 9, "channels": 16, "mlp": 64},
                                    {"batch": 1, "size": 6, "width": 11, "channels": 8, "mlp": 24, "dtype": "bf16"}]),
    "grn": dict(op="grn", models=CONVNEXT,
                about="ConvNeXt V2's Global Response Normalization: each channel scaled by its image-wide L2 norm "
                      "over the mean norm, gamma, beta and the input added, NHWC.",
                check=[{"batch": 2, "height": 7, "width": 5, "channels": 37},
                       {"batch": 1, "height": 3, "width": 4, "channels": 520, "dtype": "bf16"}]),
    "global_avg_pool": dict(op="global_avg_pool", models=MOBILENET,
                            about="MobileNetV4's head: the mean of each channel over the last block's 7 x 7 pixels "
                                  "(timm's SelectAdaptivePool2d('avg')), NHWC.",
                            check=[{"batch": 2, "height": 5, "width": 3, "channels": 37},
                                   {"batch": 3, "height": 1, "width": 1, "channels": 40, "dtype": "bf16"}]),
}


def task_workloads(task_id, spec, captures, catalog=None):
    """(workloads, models they came from, how): from the captures of the task's models
    that call its op, else from its table, else (a task with neither) from the op
    definition's own bench workloads."""
    op = spec["op"]
    taken = {}  # model -> {workload: ops}, the captures calling op
    for model in spec["models"]:
        runs = {w: ops for w, ops in captures.get(model, {}).items() if op in ops}
        if runs:
            taken[model] = runs
    if taken and spec.get("table_over_captures"):
        how = ("the serving shapes of " + ", ".join(spec["models"]) + " (its captures split the decode steps into "
               "one shape per context length)")
        return table_workloads(spec["gen"], spec["models"]), spec["models"], how
    if taken:
        runs = {", ".join(r) for r in taken.values()}
        if len(runs) == 1:  # every model ran the same workloads
            runs = f"{', '.join(taken)} on {runs.pop()}"
        else:
            runs = "; ".join(f"{m} on {', '.join(r)}" for m, r in taken.items())
        how = (f"the fk capture runs in tasks/captures/ ({runs}): from each run, the shapes holding most of "
               "the op's time, with the calls it counted; each label gives the shape's share of the op's "
               "time in its run")
        workloads = captured_workloads(op, taken, spec.get("per_capture", PER_CAPTURE), spec.get("min_share", MIN_SHARE))
        return workloads, list(taken), how
    if "gen" not in spec:
        bench = (catalog or {}).get(op, {}).get("bench_workloads") or []
        if not bench:
            raise SystemExit(f"{task_id}: no capture of {', '.join(spec['models'])} calls {op}, and it has no table")
        how = f"the bench workloads of the {op} definition (no captures of {', '.join(spec['models'])} yet)"
        return [{"shape": w, "calls": 1, "label": "bench workload"} for w in bench[:8]], spec["models"], how
    how = "the serving shapes of " + ", ".join(spec["models"]) + " (no captures of them call the op yet)"
    return table_workloads(spec["gen"], spec["models"]), spec["models"], how


# ---- the op catalog ----------------------------------------------------------------------
def default_fk():
    """The fk of a build under the repository (build, build-cuda, build-cpu), or None."""
    for build in ("build", "build-cuda", "build-cpu"):
        path = os.path.join(os.path.dirname(HERE), build, "bin", "fk")
        if os.access(path, os.X_OK):
            return path
    return None


def load_catalog(fk):
    """{op name: its entry of `fk ops list --json`}."""
    if not fk:
        raise SystemExit("tasks/generate.py: no fk binary found; build fastkernels or pass --fk")
    listing = subprocess.run([fk, "ops", "list", "--json"], capture_output=True, text=True, check=True)
    return {op["name"]: op for op in json.loads(listing.stdout)["ops"]}


def write_tasks(tasks, category, captures, catalog, folder=None):
    """folder: tasks/<folder>/, when it is not the category's name."""
    out_dir = os.path.join(HERE, folder or category)
    os.makedirs(out_dir, exist_ok=True)
    for task_id, spec in tasks.items():
        if spec["op"] not in catalog:
            raise SystemExit(f"{task_id}: the op catalog has no op {spec['op']!r}")
        workloads, models, how = task_workloads(task_id, spec, captures, catalog)
        description = f"Generated by tasks/generate.py from {how}."
        if "about" in spec:
            description = spec["about"] + " " + description
        task = {
            "id": task_id,
            "op": spec["op"],
            "level": catalog[spec["op"]]["level"],
            "category": category,
            "architectures": models,
            "description": description,
            "workloads": workloads,
        }
        if "check" in spec:
            task["check_workloads"] = spec["check"]
        if "forbid" in spec:
            task["forbid"] = spec["forbid"]
        with open(os.path.join(out_dir, task_id + ".json"), "w") as f:
            json.dump(task, f, indent=1)
            f.write("\n")
        print(f"{task_id}: {len(workloads)} workloads")


def main():
    parser = argparse.ArgumentParser(description="Writes the shipped task files from captures and tables.")
    parser.add_argument("--fk", default=default_fk(), help="the fk binary whose op catalog gives each task's level")
    args = parser.parse_args()
    catalog = load_catalog(args.fk)
    captures = load_captures()
    write_tasks(TASKS, "dense-llm", captures, catalog)
    write_tasks(MOE_TASKS, "moe-llm", captures, catalog)
    write_tasks(SSM_TASKS, "ssm", captures, catalog)
    write_tasks(ENCODER_TASKS, "encoders", captures, catalog)
    write_tasks(VLM_TASKS, "multimodal", captures, catalog)
    write_tasks(SCIENCE_TASKS, "science", captures, catalog)
    write_tasks(DIFFUSION_TASKS, "vision-video-audio", captures, catalog, folder="diffusion")
    write_tasks(WORLD_TASKS, "world-models", captures, catalog, folder="world")
    write_tasks(DETECTION_TASKS, "edge-detection", captures, catalog, folder="vision")
    write_tasks(RECSYS_TASKS, "recommendation-specialised", captures, catalog, folder="recsys")


if __name__ == "__main__":
    main()
