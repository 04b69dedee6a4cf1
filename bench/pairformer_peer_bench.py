#!/usr/bin/env python3
"""PyTorch's timing of an AlphaFold3-design Pairformer stack (OpenFold3's trunk) and of
its parts, on the shapes of `fk fold` and of the pairformer ops' bench workloads, for a
side-by-side figure on the same GPU in the same run.

The stack is Algorithms 11-17 and 24 of the AlphaFold3 paper's supplementary information,
written with torch.nn.functional as a PyTorch implementation runs it: einsum for the
triangle multiplication's k sum, F.scaled_dot_product_attention with the pair bias and
the mask bias as its additive mask for the attentions (PyTorch picks its fused kernel),
random weights of the given sizes (the values do not change the time), one structure of
N tokens, all real (no padding: as `fk fold --tokens N`). Times: warm-up calls, then the
median of timed calls, each between CUDA events on the current stream with a synchronize
after; the stack, and each part once on the block's shapes. Eager, and torch.compile with
--compile. Prints one JSON object (also written with --json).

Usage: python3 bench/pairformer_peer_bench.py --tokens 384 [--blocks 48] [--dtype bf16]
           [--compile] [--json out.json]
"""
import argparse
import datetime
import json
import math
import statistics

import torch
import torch.nn.functional as F


class Sizes:
    def __init__(self, a):
        self.cs, self.cz = a.c_s, a.c_z
        self.tri_heads, self.tri_dim = a.tri_heads, a.tri_head_dim
        self.single_heads, self.single_dim = a.single_heads, a.single_head_dim
        self.mul, self.n = a.c_mul, a.transition_n


def make_block(sz, dtype, gen):
    """One block's weights: {name: tensor} on the GPU."""
    def w(out, inp):
        return (torch.randn(out, inp, generator=gen) / math.sqrt(inp)).to("cuda", dtype)

    def ln(width):
        return (torch.ones(width, device="cuda", dtype=dtype), torch.zeros(width, device="cuda", dtype=dtype))

    b = {}
    for m in ("mul_out", "mul_in"):
        b[m] = dict(ln_in=ln(sz.cz), ab=w(4 * sz.mul, sz.cz), g=w(sz.cz, sz.cz), ln_out=ln(sz.mul), z=w(sz.cz, sz.mul))
    hd = sz.tri_heads * sz.tri_dim
    for m in ("att_start", "att_end"):
        b[m] = dict(ln=ln(sz.cz), qkvg=w(4 * hd, sz.cz), bias=w(sz.tri_heads, sz.cz), o=w(sz.cz, hd))
    for m, c in (("pair_transition", sz.cz), ("single_transition", sz.cs)):
        b[m] = dict(ln=ln(c), ab=w(2 * sz.n * c, c), out=w(c, sz.n * c))
    shd = sz.single_heads * sz.single_dim
    b["single_att"] = dict(ln_s=ln(sz.cs), ln_z=ln(sz.cz), q=w(shd, sz.cs),
                           q_bias=torch.zeros(shd, device="cuda", dtype=dtype), kvg=w(3 * shd, sz.cs),
                           bias=w(sz.single_heads, sz.cz), o=w(sz.cs, shd))
    return b


def layer_norm(x, p):
    return F.layer_norm(x, (x.shape[-1],), p[0], p[1])


def triangle_multiplication(z, mask, p, outgoing):
    x = layer_norm(z, p["ln_in"])
    ag, ap, bg, bp = F.linear(x, p["ab"]).chunk(4, dim=-1)
    m = mask.unsqueeze(-1)
    a, b = torch.sigmoid(ag) * ap * m, torch.sigmoid(bg) * bp * m
    t = torch.einsum("bikc,bjkc->bijc", a, b) if outgoing else torch.einsum("bkic,bkjc->bijc", a, b)
    return torch.sigmoid(F.linear(x, p["g"])) * F.linear(layer_norm(t, p["ln_out"]), p["z"])


def triangle_attention(z, mask, p, heads, dim, starting):
    if not starting:
        z, mask = z.transpose(1, 2), mask.transpose(1, 2)
    B, N = z.shape[0], z.shape[1]
    x = layer_norm(z, p["ln"])
    q, k, v, g = F.linear(x, p["qkvg"]).chunk(4, dim=-1)
    heads_first = lambda t: t.reshape(B * N, N, heads, dim).transpose(1, 2)  # [B N, H, N, D]
    bias = F.linear(x, p["bias"]).permute(0, 3, 1, 2).unsqueeze(1)  # [B, 1, H, N, N]
    key_mask = ((mask - 1) * 1e9).to(z.dtype)[:, :, None, None, :]  # [B, N, 1, 1, N]
    attn_mask = (bias + key_mask).reshape(B * N, heads, N, N)
    o = F.scaled_dot_product_attention(heads_first(q), heads_first(k), heads_first(v), attn_mask=attn_mask)
    o = o.transpose(1, 2).reshape(B, N, N, heads * dim)
    out = F.linear(torch.sigmoid(g) * o, p["o"])
    return out if starting else out.transpose(1, 2)


def transition(x, p):
    a, b = F.linear(layer_norm(x, p["ln"]), p["ab"]).chunk(2, dim=-1)
    return F.linear(F.silu(a) * b, p["out"])


def single_attention(s, z, mask, p, heads, dim):
    B, N = s.shape[0], s.shape[1]
    a = layer_norm(s, p["ln_s"])
    q = F.linear(a, p["q"], p["q_bias"])
    k, v, g = F.linear(a, p["kvg"]).chunk(3, dim=-1)
    heads_first = lambda t: t.reshape(B, N, heads, dim).transpose(1, 2)
    bias = F.linear(layer_norm(z, p["ln_z"]), p["bias"]).permute(0, 3, 1, 2)  # [B, H, N, N]
    attn_mask = bias + ((mask - 1) * 1e9).to(s.dtype)[:, None, None, :]
    o = F.scaled_dot_product_attention(heads_first(q), heads_first(k), heads_first(v), attn_mask=attn_mask)
    return F.linear(torch.sigmoid(g) * o.transpose(1, 2).reshape(B, N, heads * dim), p["o"])


def parts(sz):
    """The block's parts as (name, fn(s, z, mask1, mask2, block) -> tensor)."""
    return [
        ("triangle_multiplication_outgoing", lambda s, z, m1, m2, b: triangle_multiplication(z, m2, b["mul_out"], True)),
        ("triangle_multiplication_incoming", lambda s, z, m1, m2, b: triangle_multiplication(z, m2, b["mul_in"], False)),
        ("triangle_attention_starting", lambda s, z, m1, m2, b: triangle_attention(z, m2, b["att_start"], sz.tri_heads,
                                                                                     sz.tri_dim, True)),
        ("triangle_attention_ending", lambda s, z, m1, m2, b: triangle_attention(z, m2, b["att_end"], sz.tri_heads,
                                                                                   sz.tri_dim, False)),
        ("pair_transition", lambda s, z, m1, m2, b: transition(z, b["pair_transition"])),
        ("single_attention_pair_bias", lambda s, z, m1, m2, b: single_attention(s, z, m1, b["single_att"],
                                                                                  sz.single_heads, sz.single_dim)),
        ("single_transition", lambda s, z, m1, m2, b: transition(s, b["single_transition"])),
    ]


def stack(sz, blocks):
    steps = parts(sz)

    def run(s, z, m1, m2):
        for b in blocks:
            for name, fn in steps[:5]:
                z = z + fn(s, z, m1, m2, b)
            for name, fn in steps[5:]:
                s = s + fn(s, z, m1, m2, b)
        return s, z
    return run


def median_ms(fn, warmup, iters):
    times = []
    with torch.inference_mode():
        for it in range(warmup + iters):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            torch.cuda.synchronize()
            if it >= warmup:
                times.append(start.elapsed_time(end))
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", type=int, default=384)
    ap.add_argument("--blocks", type=int, default=48)
    ap.add_argument("--c-s", type=int, default=384)
    ap.add_argument("--c-z", type=int, default=128)
    ap.add_argument("--tri-heads", type=int, default=4)
    ap.add_argument("--tri-head-dim", type=int, default=32)
    ap.add_argument("--single-heads", type=int, default=16)
    ap.add_argument("--single-head-dim", type=int, default=24)
    ap.add_argument("--c-mul", type=int, default=128)
    ap.add_argument("--transition-n", type=int, default=4)
    ap.add_argument("--dtype", default="bf16", choices=["bf16", "f16", "f32"])
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--json")
    a = ap.parse_args()

    dtype = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}[a.dtype]
    sz = Sizes(a)
    gen = torch.Generator(device="cpu").manual_seed(1)
    blocks = [make_block(sz, dtype, gen) for _ in range(a.blocks)]
    N = a.tokens
    s = torch.randn(1, N, sz.cs, generator=gen).to("cuda", dtype)
    z = torch.randn(1, N, N, sz.cz, generator=gen).to("cuda", dtype)
    m1 = torch.ones(1, N, device="cuda", dtype=dtype)
    m2 = torch.ones(1, N, N, device="cuda", dtype=dtype)

    wrap = torch.compile if a.compile else (lambda f: f)
    run = wrap(stack(sz, blocks))
    result = {
        "what": "Pairformer stack (AlphaFold3 Algorithm 17), PyTorch " + ("torch.compile" if a.compile else "eager"),
        "torch": torch.__version__, "device": torch.cuda.get_device_name(), "dtype": a.dtype,
        "date": datetime.date.today().isoformat(), "tokens": N, "blocks": a.blocks,
        "sizes": {"c_s": sz.cs, "c_z": sz.cz, "tri_heads": sz.tri_heads, "tri_head_dim": sz.tri_dim,
                  "single_heads": sz.single_heads, "single_head_dim": sz.single_dim, "c_mul": sz.mul,
                  "transition_n": sz.n},
        "stack_ms": median_ms(lambda: run(s, z, m1, m2), a.warmup, a.iters),
        "parts_ms": {},
    }
    for name, fn in parts(sz):
        f = wrap(fn)
        result["parts_ms"][name] = median_ms(lambda: f(s, z, m1, m2, blocks[0]), a.warmup, a.iters)
    text = json.dumps(result, indent=1)
    print(text)
    if a.json:
        with open(a.json, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
