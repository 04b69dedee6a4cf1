#!/usr/bin/env python3
"""`fk ops list --json`: the op catalog that scripts read op facts and shapes from.

    ops_list_json_smoke.py path/to/fk

Every op carries its definition's fields; the fused ops name what they cover and their
"unfused" variant; the bench workloads are those the count says; and bench/torch_ops_bench.py
takes its ops' shapes from this listing.
"""
import importlib.util
import json
import os
import subprocess
import sys

fk = sys.argv[1]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


listing = subprocess.run([fk, "ops", "list", "--json"], capture_output=True, text=True, timeout=120)
check(listing.returncode == 0, f"ops list --json exited {listing.returncode}: {listing.stderr}")
ops = {op["name"]: op for op in json.loads(listing.stdout)["ops"]}
fields = {"name", "level", "family", "summary", "architectures", "covers", "variants", "backends", "capturable",
          "test_workload_count", "bench_workload_count", "bench_workloads"}
for name, op in ops.items():
    check(fields <= set(op), f"{name}: missing {sorted(fields - set(op))}")
    check(op["level"] in ("L1", "L2", "L3"), f"{name}: level {op['level']!r}")
    check("cpu" in op["backends"], f"{name}: no cpu backend in {op['backends']}")
    check(len(op["bench_workloads"]) == op["bench_workload_count"], f"{name}: bench workloads and their count differ")
    check(all(c in ops for c in op["covers"]), f"{name}: covers an unknown op: {op['covers']}")

fused = {"rms_norm_linear": {"rms_norm", "fused_add_rms_norm", "linear"},
         "fused_moe": {"moe_topk_softmax", "fused_experts"},
         "rope_and_cache": {"rotary_embedding", "qk_norm_rope", "reshape_and_cache"}}
for name, parts in fused.items():
    check(set(ops[name]["covers"]) == parts, f"{name} covers {ops[name]['covers']}")
    check("unfused" in ops[name]["variants"], f"{name}: variants {ops[name]['variants']}")
    check(ops[name]["level"] == "L2", f"{name}: level {ops[name]['level']}")
check("llama" in ops["linear"]["architectures"] and "olmoe" in ops["linear"]["architectures"],
      f"linear architectures {ops['linear']['architectures']}")
check(ops["logit_softcap"]["architectures"] == ["gemma2"], f"logit_softcap {ops['logit_softcap']['architectures']}")
check("gemma2" not in ops["rms_norm_linear"]["architectures"], "rms_norm_linear claims gemma2 (sandwich norms)")
check(ops["linear"]["capturable"] and ops["fused_moe"]["capturable"], "linear / fused_moe not capturable")

# The PyTorch comparison script reads its ops' shapes from the listing.
here = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location(
    "torch_ops_bench", os.path.join(here, "..", "..", "bench", "torch_ops_bench.py"))
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)
got = bench.workloads_for(["rms_norm", "silu_and_mul", "gemm"], fk)
check(got["rms_norm"] == ops["rms_norm"]["bench_workloads"], "torch_ops_bench's rms_norm shapes are not the op's")
check(got["silu_and_mul"] == ops["silu_and_mul"]["bench_workloads"], "torch_ops_bench's silu_and_mul shapes")
check(got["gemm"] == bench.OWN_WORKLOADS["gemm"], "torch_ops_bench's gemm shapes")

for f in failures:
    print("FAIL:", f)
print(f"{len(ops)} ops listed, {len(failures)} failures")
sys.exit(1 if failures else 0)
