#!/usr/bin/env python3
"""PyTorch reference timings for the ops fastkernels benchmarks.

Times PyTorch eager and torch.compile on the same ops and shapes as the bench_workloads of
fastkernels (rms_norm, fused_add_rms_norm, silu_and_mul, neox rope on q/k, ColBERT's MaxSim
as colbert_score computes it over padded passages, an 8192^3 GEMM, causal flash-attention
prefill through scaled_dot_product_attention), with the method of
`fk ops bench`:

  * a dedicated CUDA stream, CUDA events around each call;
  * before each timed call the L2 is flushed by zeroing a tensor of twice the L2 size
    (PyTorch sets no persisting L2 lines, so there is nothing to reset);
  * copies of the inputs rotated between calls, enough to exceed twice the L2, capped by
    half the free memory;
  * warm-up calls first (they also trigger torch.compile), then at least --min-calls timed
    calls, continuing until --min-time-ms of timed device time or --max-calls;
  * median, p10 and p90 in microseconds; GB/s and TFLOP/s from the cost model below; the
    fraction of speed of light when `fk env --measure` stored ceilings for this GPU.

The shapes of the ops fastkernels has (rms_norm, fused_add_rms_norm, silu_and_mul,
rotary_embedding, maxsim) are those ops' bench_workloads, read from `fk ops list --json` (--fk, or
the fk of a build under the repository); the GEMM and the contiguous SDPA prefill, which
no op's bench workloads list as such, keep their shapes in OWN_WORKLOADS below.

Usage: python3 bench/torch_ops_bench.py [--ops rms_norm,gemm] [--modes eager,compile]
                                        [--json out.json] [--fk build/bin/fk]
"""
import argparse
import datetime
import json
import math
import os
import re
import subprocess
import sys

# --- shapes -----------------------------------------------------------------------------
# Ops timed on their fastkernels bench_workloads (16-bit ones: the timing below is bf16).
CATALOG_OPS = ["rms_norm", "fused_add_rms_norm", "silu_and_mul", "rotary_embedding", "maxsim"]
# Ops whose f16 bench workloads are timed too (in bf16: the tensor cores take both alike).
ANY_16BIT = {"maxsim"}
# Shapes of timings that are not one fastkernels op's bench workloads: a selection of the
# linear op's GEMMs at prefill sizes, and PyTorch's contiguous-KV causal prefill (fastkernels'
# prefill attention is paged).
OWN_WORKLOADS = {
    "gemm": [  # out [m, n] = a [m, k] @ b [n, k]^T (nn.Linear layout)
        {"m": 8192, "n": 8192, "k": 8192},
        {"m": 16384, "n": 4096, "k": 4096},
        {"m": 16384, "n": 28672, "k": 4096},
    ],
    "flash_attention_prefill": [  # causal, q [b, heads, seq, dim], k/v [b, kv_heads, seq, dim]
        {"batch": 1, "seq_len": 4096, "num_heads": 32, "num_kv_heads": 8, "head_dim": 128},
        {"batch": 4, "seq_len": 2048, "num_heads": 32, "num_kv_heads": 8, "head_dim": 128},
        {"batch": 1, "seq_len": 16384, "num_heads": 32, "num_kv_heads": 8, "head_dim": 128},
    ],
}
ALL_OPS = CATALOG_OPS + list(OWN_WORKLOADS)
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def default_fk():
    """The fk of a build under the repository (build, build-cuda, build-cpu), or None."""
    for build in ("build", "build-cuda", "build-cpu"):
        path = os.path.join(REPO, build, "bin", "fk")
        if os.access(path, os.X_OK):
            return path
    return None


def catalog_workloads(fk, ops):
    """{op: its bf16 bench workloads} from `fk ops list --json`."""
    listing = subprocess.run([fk, "ops", "list", "--json"], capture_output=True, text=True, check=True)
    by_name = {op["name"]: op for op in json.loads(listing.stdout)["ops"]}
    out = {}
    for op in ops:
        if op not in by_name:
            raise SystemExit(f"torch_ops_bench: {fk} has no op {op!r}")
        out[op] = [w for w in by_name[op]["bench_workloads"]
                   if w.get("dtype", "bf16") == "bf16" or (op in ANY_16BIT and w.get("dtype") == "f16")]
    return out


def workloads_for(ops, fk):
    """{op: workloads} for the requested ops: catalog ops through fk, the rest from OWN_WORKLOADS."""
    wanted = [o for o in ops if o in CATALOG_OPS]
    workloads = {}
    if wanted:
        if not fk:
            raise SystemExit("torch_ops_bench: no fk binary found; build fastkernels or pass --fk")
        workloads.update(catalog_workloads(fk, wanted))
    for o in ops:
        if o in OWN_WORKLOADS:
            workloads[o] = OWN_WORKLOADS[o]
    return workloads


EPS = 1e-6
BF16_BYTES = 2


# --- statistics and ceilings (no torch needed) -----------------------------------------
def percentile(samples, q):
    """Linear interpolation between closest ranks (numpy's default), q in [0, 100]."""
    s = sorted(samples)
    if not s:
        raise ValueError("percentile of an empty sample")
    rank = q / 100.0 * (len(s) - 1)
    lo = int(math.floor(rank))
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (rank - lo)


def sanitize_device_name(name):
    """Same rule as fastkernels' sanitize_device_name: 'NVIDIA H100 80GB HBM3' -> 'nvidia_h100_80gb_hbm3'."""
    out = ""
    for c in name:
        if c.isascii() and (c.isalnum() or c == "-"):
            out += c.lower()
        elif out and not out.endswith("_"):
            out += "_"
    out = out.rstrip("_")
    return out or "unknown_device"


def ceilings_path(device_name):
    home = os.environ.get("FK_HOME")
    base = os.path.join(home, "ceilings") if home else os.path.join(os.path.expanduser("~"), ".cache", "fastkernels", "ceilings")
    return os.path.join(base, sanitize_device_name(device_name) + ".json")


def load_ceilings(device_name, path=None):
    path = path or ceilings_path(device_name)
    try:
        with open(path) as f:
            doc = json.load(f)
        return {k: v["value"] for k, v in doc["ceilings"].items()}
    except FileNotFoundError:
        return None


def speed_of_light_s(cost, ceilings):
    """max(bytes / copy bandwidth, flops / rate of the math dtype), as in fastkernels."""
    rate_key = {"bf16": "bf16_gemm", "f16": "bf16_gemm", "f8": "fp8_gemm"}.get(cost["math"], "fp32_fma")
    mem = cost["bytes"] / ceilings["copy_bandwidth"] if ceilings.get("copy_bandwidth") else 0.0
    rate = ceilings.get(rate_key) or 0.0
    comp = cost["flops"] / rate if rate else 0.0
    return max(mem, comp), ("compute" if comp > mem else "memory")


# --- the ops: inputs, eager implementation, cost ---------------------------------------
def sdpa_supports_gqa(torch, device):
    """scaled_dot_product_attention takes fewer k/v heads (enable_gqa) from PyTorch 2.5 on."""
    x = torch.zeros(1, 2, 4, 8, device=device, dtype=torch.bfloat16)
    kv = torch.zeros(1, 1, 4, 8, device=device, dtype=torch.bfloat16)
    try:
        torch.nn.functional.scaled_dot_product_attention(x, kv, kv, is_causal=True, enable_gqa=True)
        return True
    except (TypeError, RuntimeError):
        return False


def make_op(torch, name, w, device):
    """Returns (make_inputs() -> tuple, fn(*inputs), cost dict)."""
    F = torch.nn.functional
    bf16 = torch.bfloat16

    def randn(*shape, scale=1.0):
        return (torch.rand(*shape, device=device, dtype=torch.float32) * 2 - 1).mul_(scale).to(bf16)

    if name == "rms_norm":
        t, h = w["tokens"], w["hidden"]

        def fn(x, weight):
            xf = x.float()
            var = xf.pow(2).mean(dim=-1, keepdim=True)
            return (xf * torch.rsqrt(var + EPS)).to(x.dtype) * weight

        return (lambda: (randn(t, h, scale=2.0), randn(h) * 0.5 + 1.0), fn,
                {"bytes": (2 * t * h + h) * BF16_BYTES, "flops": 4.0 * t * h, "math": "f32"})

    if name == "fused_add_rms_norm":
        t, h = w["tokens"], w["hidden"]

        def fn(x, residual, weight):
            xf = x.float() + residual.float()
            new_residual = xf.to(x.dtype)
            var = xf.pow(2).mean(dim=-1, keepdim=True)
            return (xf * torch.rsqrt(var + EPS)).to(x.dtype) * weight, new_residual

        return (lambda: (randn(t, h, scale=2.0), randn(t, h, scale=2.0), randn(h) * 0.5 + 1.0), fn,
                {"bytes": (4 * t * h + h) * BF16_BYTES, "flops": 5.0 * t * h, "math": "f32"})

    if name == "silu_and_mul":  # input [tokens, 2d]
        t, d = w["tokens"], w["d"]

        def fn(x):
            return F.silu(x[..., :d]) * x[..., d:]

        return (lambda: (randn(t, 2 * d, scale=4.0),), fn,
                {"bytes": 3 * t * d * BF16_BYTES, "flops": 6.0 * t * d, "math": "f32"})

    if name == "rotary_embedding":  # neox style on q [tokens, heads*dim] and k [tokens, kv_heads*dim]
        t, nh, nkv, hd = w["tokens"], w["q_heads"], w["kv_heads"], w["head_size"]
        max_pos = w.get("max_pos", 4096)

        def rotate(x, cos, sin, heads):
            x = x.view(t, heads, hd)
            x1, x2 = x[..., : hd // 2], x[..., hd // 2:]
            c, s = cos.unsqueeze(1), sin.unsqueeze(1)
            return torch.cat((x1 * c - x2 * s, x2 * c + x1 * s), dim=-1).reshape(t, heads * hd)

        def fn(positions, q, k, cos_sin_cache):
            cos_sin = cos_sin_cache.index_select(0, positions)
            cos, sin = cos_sin.chunk(2, dim=-1)
            return rotate(q, cos, sin, nh), rotate(k, cos, sin, nkv)

        def inputs():
            pos = torch.randint(0, max_pos, (t,), device=device, dtype=torch.int64)
            inv = 1.0 / (500000.0 ** (torch.arange(0, hd, 2, device=device, dtype=torch.float32) / hd))
            ang = torch.outer(torch.arange(max_pos, device=device, dtype=torch.float32), inv)
            cache = torch.cat((ang.cos(), ang.sin()), dim=-1).to(bf16)
            return pos, randn(t, nh * hd), randn(t, nkv * hd), cache

        elems = t * (nh + nkv) * hd
        return (inputs, fn,
                {"bytes": 2 * elems * BF16_BYTES + t * 8 + t * hd * BF16_BYTES, "flops": 3.0 * elems, "math": "f32"})

    if name == "gemm":
        m, n, k = w["m"], w["n"], w["k"]

        def fn(a, b):
            return torch.mm(a, b.t())

        return (lambda: (randn(m, k), randn(n, k)), fn,
                {"bytes": (m * k + n * k + m * n) * BF16_BYTES, "flops": 2.0 * m * n * k, "math": "bf16"})

    if name == "flash_attention_prefill":
        b, s, nh, nkv, hd = w["batch"], w["seq_len"], w["num_heads"], w["num_kv_heads"], w["head_dim"]
        gqa_native = sdpa_supports_gqa(torch, device)

        def fn(q, k, v):
            if gqa_native:
                return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)

        def inputs():
            kv_heads = nkv if gqa_native else nh  # older torch: heads repeated before timing
            return randn(b, nh, s, hd), randn(b, kv_heads, s, hd), randn(b, kv_heads, s, hd)

        # Causal: half of the S x S score matrix; QK^T and PV are 2 flops per MAC each.
        flops = 4.0 * b * nh * s * s * hd / 2
        return (inputs, fn,
                {"bytes": (2 * b * nh * s * hd + 2 * b * nkv * s * hd) * BF16_BYTES, "flops": flops, "math": "bf16"})

    if name == "maxsim":  # ColBERT's colbert_score over padded passages, all queries at once
        lq, ld = maxsim_lengths(w, "query_lens", "queries", "query_len", "query_len_min", 1), \
            maxsim_lengths(w, "doc_lens", "docs", "doc_len", "doc_len_min", 2)
        dim, bq, bd = w["dim"], len(lq), len(ld)
        lq_max, ld_max = max(lq + [1]), max(ld + [1])

        def inputs():
            q = randn(bq, lq_max, dim)
            d = randn(bd, ld_max, dim)
            q_keep = torch.arange(lq_max, device=device)[None, :] < torch.tensor(lq, device=device)[:, None]
            d_keep = torch.arange(ld_max, device=device)[None, :] < torch.tensor(ld, device=device)[:, None]
            return q * q_keep[:, :, None], d, d_keep

        def fn(q, d, d_keep):
            sim = torch.einsum("bjd,qid->qbji", d, q)  # [queries, docs, doc rows, query rows]
            sim = sim.masked_fill(~d_keep[None, :, :, None], -9999)
            return sim.amax(dim=2).float().sum(dim=-1)

        macs = sum(lq) * sum(ld) * dim
        return (inputs, fn, {"bytes": (sum(lq) + sum(ld)) * dim * BF16_BYTES + bq * bd * 4, "flops": 2.0 * macs,
                             "math": "bf16"})

    raise KeyError(f"unknown op {name!r}; known: {', '.join(ALL_OPS)}")


def maxsim_lengths(w, lst, count, length, length_min, salt):
    """maxsim's workload lengths as its definition spreads them (splitmix64 of the index)."""
    if lst in w:
        return list(w[lst])
    n, hi = w[count], w[length]
    lo = w.get(length_min, hi)
    mask = (1 << 64) - 1

    def mix(x):
        x = (x + 0x9E3779B97F4A7C15) & mask
        x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & mask
        x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & mask
        return x ^ (x >> 31)

    return [lo + mix(salt ^ i) % (hi - lo + 1) for i in range(n)]


# --- the timer --------------------------------------------------------------------------
class Timer:
    def __init__(self, torch, device, args):
        self.torch = torch
        self.device = device
        self.args = args
        props = torch.cuda.get_device_properties(device)
        self.l2_bytes = getattr(props, "L2_cache_size", 50 << 20)
        self.stream = torch.cuda.Stream(device=device)
        self.flush = None
        if not args.no_flush:
            self.flush = torch.empty(max(2 * self.l2_bytes, 8 << 20), dtype=torch.uint8, device=device)

    def num_sets(self, set_bytes):
        if set_bytes <= 0:
            return 1
        free, _ = self.torch.cuda.mem_get_info(self.device)
        wanted = math.ceil(2 * self.l2_bytes / set_bytes)
        fits = math.floor(0.5 * free / set_bytes)
        return max(1, min(wanted, fits, self.args.max_sets))

    def time(self, call, num_sets):
        """call(set_index) runs once on the current stream; returns microseconds per timed call."""
        torch, a = self.torch, self.args
        with torch.cuda.stream(self.stream):
            for i in range(a.warmup):
                if self.flush is not None:
                    self.flush.zero_()
                call(i % num_sets)
            self.stream.synchronize()
            samples, total_ms, calls, batch = [], 0.0, 0, min(10, a.max_calls)
            while True:
                if calls >= a.max_calls or (calls >= a.min_calls and total_ms >= a.min_time_ms):
                    break
                if calls >= min(a.min_calls, 5) and total_ms >= a.max_time_ms:
                    break
                starts = [torch.cuda.Event(enable_timing=True) for _ in range(batch)]
                ends = [torch.cuda.Event(enable_timing=True) for _ in range(batch)]
                for r in range(batch):
                    if self.flush is not None:
                        self.flush.zero_()
                    starts[r].record(self.stream)
                    call((calls + r) % num_sets)
                    ends[r].record(self.stream)
                self.stream.synchronize()
                for s, e in zip(starts, ends):
                    ms = s.elapsed_time(e)
                    samples.append(ms * 1e3)
                    total_ms += ms
                calls += batch
                per_call = total_ms / calls
                want = max(a.min_calls - calls, 1)
                if per_call > 0 and total_ms < a.min_time_ms:
                    want = max(want, math.ceil((a.min_time_ms - total_ms) / per_call))
                batch = max(1, min(want, 100, a.max_calls - calls))
        return samples


def bench_one(torch, timer, name, workload, mode, ceilings):
    make_inputs, fn, cost = make_op(torch, name, workload, timer.device)
    first = make_inputs()
    set_bytes = sum(t.numel() * t.element_size() for t in first)
    n = timer.num_sets(set_bytes)
    sets = [first] + [tuple(t.clone() for t in first) for _ in range(n - 1)]
    if mode == "compile":
        fn = torch.compile(fn, dynamic=False)
    samples = timer.time(lambda i: fn(*sets[i]), n)
    med = percentile(samples, 50)
    r = {"op": name, "workload": workload, "mode": mode, "num_sets": n, "set_bytes": set_bytes,
         "cost": cost, "us": {"n": len(samples), "median": med, "p10": percentile(samples, 10),
                              "p90": percentile(samples, 90), "min": min(samples), "max": max(samples)},
         "gbps": cost["bytes"] / (med * 1e-6) / 1e9, "tflops": cost["flops"] / (med * 1e-6) / 1e12}
    if ceilings:
        sol, bound = speed_of_light_s(cost, ceilings)
        r["sol_fraction"], r["sol_bound"] = sol / (med * 1e-6), bound
    return r


def format_row(r):
    w = json.dumps(r["workload"], separators=(",", ":"), sort_keys=True)
    w = w if len(w) <= 44 else w[:41] + "..."
    head = f"{r['op']:<24} {r['mode']:<8} {w:<44}"
    if "error" in r:
        return f"{head} FAILED: {r['error']}"
    sol = f"{100 * r['sol_fraction']:.1f}% ({r['sol_bound']})" if "sol_fraction" in r else "-"
    u = r["us"]
    return (f"{head} {u['median']:10.2f} {u['p10']:10.2f} {u['p90']:10.2f} {r['num_sets']:5d} "
            f"{r['gbps']:9.1f} {r['tflops']:8.2f} {sol}")


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ops", default=",".join(ALL_OPS), help="comma-separated ops (default: all)")
    p.add_argument("--fk", default=default_fk(),
                   help="the fk binary whose `fk ops list --json` gives the ops' shapes (default: a build's bin/fk)")
    p.add_argument("--modes", default="eager,compile", help="eager, compile or both (default)")
    p.add_argument("--json", help="also write the results as JSON to this file")
    p.add_argument("--device", type=int, default=0)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--min-calls", type=int, default=50)
    p.add_argument("--max-calls", type=int, default=1000)
    p.add_argument("--min-time-ms", type=float, default=100.0)
    p.add_argument("--max-time-ms", type=float, default=20000.0)
    p.add_argument("--max-sets", type=int, default=64)
    p.add_argument("--no-flush", action="store_true", help="do not flush L2 before each call")
    p.add_argument("--ceilings", help="ceilings JSON (default: the one fk env --measure stored for this GPU)")
    a = p.parse_args(argv)
    a.ops = [o for o in a.ops.split(",") if o]
    a.modes = [m for m in a.modes.split(",") if m]
    for o in a.ops:
        if o not in ALL_OPS:
            p.error(f"unknown op {o!r}; known: {', '.join(ALL_OPS)}")
    for m in a.modes:
        if m not in ("eager", "compile"):
            p.error(f"unknown mode {m!r}: eager or compile")
    if a.min_calls < 1 or a.max_calls < a.min_calls:
        p.error("need 1 <= --min-calls <= --max-calls")
    return a


def main(argv):
    args = parse_args(argv)
    workloads = workloads_for(args.ops, args.fk)
    import torch  # imported here: --help and the helpers work without PyTorch

    if not torch.cuda.is_available():
        print("torch_ops_bench: no CUDA device", file=sys.stderr)
        return 1
    torch.backends.cuda.matmul.allow_tf32 = False
    import torch._dynamo
    torch._dynamo.config.cache_size_limit = max(torch._dynamo.config.cache_size_limit, 64)
    device = torch.device("cuda", args.device)
    torch.cuda.set_device(device)
    name = torch.cuda.get_device_name(device)
    ceilings = load_ceilings(name, args.ceilings)
    timer = Timer(torch, device, args)
    print(f"device {name}, torch {torch.__version__}, CUDA {torch.version.cuda}")
    if not ceilings:
        print("no ceilings stored: run fk env --measure")
    print(f"{'op':<24} {'mode':<8} {'workload':<44} {'median us':>10} {'p10 us':>10} {'p90 us':>10} "
          f"{'sets':>5} {'GB/s':>9} {'TFLOP/s':>8} SOL")
    results, failed = [], 0
    for op in args.ops:
        for w in workloads[op]:
            for mode in args.modes:
                try:
                    r = bench_one(torch, timer, op, w, mode, ceilings)
                except Exception as e:  # one failing shape or compile must not stop the rest
                    r = {"op": op, "workload": w, "mode": mode, "error": f"{type(e).__name__}: {e}"}
                    failed += 1
                results.append(r)
                print(format_row(r), flush=True)
                torch.cuda.empty_cache()
    if args.json:
        doc = {"device": name, "torch_version": torch.__version__, "cuda_version": torch.version.cuda,
               "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
               "command_line": " ".join([sys.executable] + sys.argv),
               "timer": {"warmup_calls": args.warmup, "min_calls": args.min_calls, "max_calls": args.max_calls,
                         "min_time_ms": args.min_time_ms, "max_time_ms": args.max_time_ms,
                         "flush_l2": not args.no_flush},
               "ceilings": ceilings, "results": results}
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=2)
        print(f"wrote {args.json}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
