#!/usr/bin/env python3
"""Golden outputs of a tiny random OpenFold3 Pairformer stack for the engine's golden test
(tests/models/science/openfold3_golden_test.cpp).

The Pairformer stack is written here from the AlphaFold3 paper's supplementary
information (Abramson et al., 2024: Algorithms 11 to 17 and 24 without conditioning), with
torch.nn.functional only, and its parameters are named as OpenFold3's state dict names
them ("pairformer_stack.blocks.<i>." then PairFormerBlock's modules):

  z += TriangleMultiplicationOutgoing(z)   pair_stack.tri_mul_out   (Algorithm 12)
  z += TriangleMultiplicationIncoming(z)   pair_stack.tri_mul_in    (Algorithm 13)
  z += TriangleAttentionStartingNode(z)    pair_stack.tri_att_start (Algorithm 14)
  z += TriangleAttentionEndingNode(z)      pair_stack.tri_att_end   (Algorithm 15)
  z += Transition(z)                       pair_stack.pair_transition (Algorithm 11)
  s += AttentionPairBias(s, z)             attn_pair_bias           (Algorithm 24)
  s += Transition(s)                       single_transition

Masks: a padded token's pairs are zeroed in the triangle multiplication's a and b, and
padded keys get a logit bias of -1e9 in every attention. The transitions are not masked
(Algorithm 11); a padded token's own outputs are therefore not compared, only the real
tokens' (which padding must not change).

The config is the engine's tiny-openfold3 preset: 2 blocks, c_s 32, c_z 16, triangle
attention 2 heads of 8, single attention 4 heads of 8, triangle multiplication 16, SwiGLU
transitions x4. Weights are drawn from a seeded generator (LayerNorm weights in [0.5,
1.5), LayerNorm biases and linear_q's bias in [-0.2, 0.2), projections uniform with
standard deviation 1 / sqrt(fan_in)) and rounded to bfloat16, as are the inputs, so that
a bfloat16 run of the engine sees exactly these values; the reference runs in float32 on
the CPU. Two structures of N = 12 tokens: the first has 10 real tokens and 2 padded ones,
the second 12 real tokens.

Written to OUT/openfold3/: config.json, model.safetensors (the weights, bfloat16, under
the state-dict names), golden.safetensors (float32: s_in [2, 12, 32], z_in [2, 12, 12, 16],
single_mask [2, 12], pair_mask [2, 12, 12], s_out, z_out).

    python3 tests/data/models/make_openfold3_goldens.py OUT_DIR    # OUT_DIR = tests/data/models
"""
import json
import math
import os
import sys

CONFIG = {
    "model_type": "openfold3", "c_s": 32, "c_z": 16, "c_hidden_pair_bias": 8, "no_heads_pair_bias": 4,
    "c_hidden_mul": 16, "c_hidden_pair_att": 8, "no_heads_pair": 2, "no_blocks": 2, "transition_type": "swiglu",
    "transition_n": 4, "fuse_projection_weights": False, "max_tokens": 32,
}
SEED = 20241108
TOKENS = 12
LENGTHS = [10, 12]
INF = 1e9
LN_EPS = 1e-5


def parameter_shapes(c):
    """Every parameter of the stack in module order: (name, shape)."""
    cz, cs, cm = c["c_z"], c["c_s"], c["c_hidden_mul"]
    th, thd = c["no_heads_pair"], c["no_heads_pair"] * c["c_hidden_pair_att"]
    sh, shd = c["no_heads_pair_bias"], c["no_heads_pair_bias"] * c["c_hidden_pair_bias"]
    n = c["transition_n"]
    out = []

    def ln(p, width):
        out.append((p + ".weight", (width,)))
        out.append((p + ".bias", (width,)))

    for i in range(c["no_blocks"]):
        b = f"pairformer_stack.blocks.{i}."
        for m in ("tri_mul_out", "tri_mul_in"):
            p = b + "pair_stack." + m
            out.append((p + ".linear_g.weight", (cz, cz)))
            out.append((p + ".linear_z.weight", (cz, cm)))
            ln(p + ".layer_norm_in", cz)
            ln(p + ".layer_norm_out", cm)
            for lin in ("linear_a_p", "linear_a_g", "linear_b_p", "linear_b_g"):
                out.append((f"{p}.{lin}.weight", (cm, cz)))
        for m in ("tri_att_start", "tri_att_end"):
            p = b + "pair_stack." + m
            ln(p + ".layer_norm", cz)
            out.append((p + ".linear_z.weight", (th, cz)))
            for lin in ("linear_q", "linear_k", "linear_v"):
                out.append((f"{p}.mha.{lin}.weight", (thd, cz)))
            out.append((p + ".mha.linear_o.weight", (cz, thd)))
            out.append((p + ".mha.linear_g.weight", (thd, cz)))
        for p, width in ((b + "pair_stack.pair_transition", cz), (b + "single_transition", cs)):
            ln(p + ".layer_norm", width)
            out.append((p + ".swiglu.linear_a.weight", (n * width, width)))
            out.append((p + ".swiglu.linear_b.weight", (n * width, width)))
            out.append((p + ".linear_out.weight", (width, n * width)))
        p = b + "attn_pair_bias"
        ln(p + ".layer_norm_a", cs)
        ln(p + ".layer_norm_z", cz)
        out.append((p + ".linear_z.weight", (sh, cz)))
        out.append((p + ".mha.linear_q.weight", (shd, cs)))
        out.append((p + ".mha.linear_q.bias", (shd,)))
        for lin in ("linear_k", "linear_v"):
            out.append((f"{p}.mha.{lin}.weight", (shd, cs)))
        out.append((p + ".mha.linear_o.weight", (cs, shd)))
        out.append((p + ".mha.linear_g.weight", (shd, cs)))
    return out


def main():
    import torch
    import torch.nn.functional as F
    from safetensors.torch import save_file

    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out_dir = os.path.join(sys.argv[1], "openfold3")
    os.makedirs(out_dir, exist_ok=True)
    c = CONFIG
    gen = torch.Generator().manual_seed(SEED)

    def uniform(shape, lo, hi):
        x = torch.rand(shape, generator=gen, dtype=torch.float32) * (hi - lo) + lo
        return x.to(torch.bfloat16).to(torch.float32)  # bfloat16-representable

    W = {}
    for name, shape in parameter_shapes(c):
        if "layer_norm" in name and name.endswith(".weight"):
            W[name] = uniform(shape, 0.5, 1.5)
        elif len(shape) == 1:
            W[name] = uniform(shape, -0.2, 0.2)
        else:
            a = math.sqrt(3.0 / shape[1])
            W[name] = uniform(shape, -a, a)

    def ln(x, p):
        return F.layer_norm(x, (x.shape[-1],), W[p + ".weight"], W[p + ".bias"], eps=LN_EPS)

    def lin(x, p, bias=False):
        return F.linear(x, W[p + ".weight"], W[p + ".bias"] if bias else None)

    def triangle_multiplication(z, pair_mask, p, outgoing):
        x = ln(z, p + ".layer_norm_in")
        m = pair_mask.unsqueeze(-1)
        a = torch.sigmoid(lin(x, p + ".linear_a_g")) * lin(x, p + ".linear_a_p") * m
        b = torch.sigmoid(lin(x, p + ".linear_b_g")) * lin(x, p + ".linear_b_p") * m
        if outgoing:  # t[i, j] = sum_k a[i, k] b[j, k]
            t = torch.einsum("bikc,bjkc->bijc", a, b)
        else:  # t[i, j] = sum_k a[k, i] b[k, j]
            t = torch.einsum("bkic,bkjc->bijc", a, b)
        g = torch.sigmoid(lin(x, p + ".linear_g"))
        return g * lin(ln(t, p + ".layer_norm_out"), p + ".linear_z")

    def triangle_attention(z, pair_mask, p, starting):
        if not starting:  # the ending node: the starting node's computation on the transposed pair
            z, pair_mask = z.transpose(1, 2), pair_mask.transpose(1, 2)
        B, N, _, _ = z.shape
        H, D = c["no_heads_pair"], c["c_hidden_pair_att"]
        x = ln(z, p + ".layer_norm")
        q = lin(x, p + ".mha.linear_q").reshape(B, N, N, H, D)
        k = lin(x, p + ".mha.linear_k").reshape(B, N, N, H, D)
        v = lin(x, p + ".mha.linear_v").reshape(B, N, N, H, D)
        bias = lin(x, p + ".linear_z").permute(0, 3, 1, 2)  # [B, H, N (query j), N (key k)]
        # row i: query (i, j) attends to keys (i, k)
        logits = torch.einsum("bijhd,bikhd->bihjk", q, k) / math.sqrt(D)
        logits = logits + bias.unsqueeze(1) + (INF * (pair_mask - 1))[:, :, None, None, :]
        o = torch.einsum("bihjk,bikhd->bijhd", torch.softmax(logits, dim=-1), v)
        g = torch.sigmoid(lin(x, p + ".mha.linear_g")).reshape(B, N, N, H, D)
        out = lin((g * o).reshape(B, N, N, H * D), p + ".mha.linear_o")
        return out.transpose(1, 2) if not starting else out

    def transition(x, p):
        a = ln(x, p + ".layer_norm")
        return lin(F.silu(lin(a, p + ".swiglu.linear_a")) * lin(a, p + ".swiglu.linear_b"), p + ".linear_out")

    def attention_pair_bias(s, z, single_mask, p):
        B, N, _ = s.shape
        H, D = c["no_heads_pair_bias"], c["c_hidden_pair_bias"]
        a = ln(s, p + ".layer_norm_a")
        q = lin(a, p + ".mha.linear_q", bias=True).reshape(B, N, H, D)
        k = lin(a, p + ".mha.linear_k").reshape(B, N, H, D)
        v = lin(a, p + ".mha.linear_v").reshape(B, N, H, D)
        bias = lin(ln(z, p + ".layer_norm_z"), p + ".linear_z").permute(0, 3, 1, 2)  # [B, H, i, j]
        logits = torch.einsum("bihd,bjhd->bhij", q, k) / math.sqrt(D)
        logits = logits + bias + (INF * (single_mask - 1))[:, None, None, :]
        o = torch.einsum("bhij,bjhd->bihd", torch.softmax(logits, dim=-1), v)
        g = torch.sigmoid(lin(a, p + ".mha.linear_g")).reshape(B, N, H, D)
        return lin((g * o).reshape(B, N, H * D), p + ".mha.linear_o")

    def pairformer(s, z, single_mask, pair_mask):
        for i in range(c["no_blocks"]):
            b = f"pairformer_stack.blocks.{i}."
            z = z + triangle_multiplication(z, pair_mask, b + "pair_stack.tri_mul_out", True)
            z = z + triangle_multiplication(z, pair_mask, b + "pair_stack.tri_mul_in", False)
            z = z + triangle_attention(z, pair_mask, b + "pair_stack.tri_att_start", True)
            z = z + triangle_attention(z, pair_mask, b + "pair_stack.tri_att_end", False)
            z = z + transition(z, b + "pair_stack.pair_transition")
            s = s + attention_pair_bias(s, z, single_mask, b + "attn_pair_bias")
            s = s + transition(s, b + "single_transition")
        return s, z

    B, N = len(LENGTHS), TOKENS
    s_in = uniform((B, N, c["c_s"]), -1.0, 1.0)
    z_in = uniform((B, N, N, c["c_z"]), -1.0, 1.0)
    single_mask = torch.zeros(B, N)
    for b, length in enumerate(LENGTHS):
        single_mask[b, :length] = 1
    pair_mask = single_mask[:, :, None] * single_mask[:, None, :]
    with torch.no_grad():
        s_out, z_out = pairformer(s_in, z_in, single_mask, pair_mask)
    assert torch.isfinite(s_out).all() and torch.isfinite(z_out).all()

    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(c, f, indent=1)
        f.write("\n")
    save_file({k: v.to(torch.bfloat16).contiguous() for k, v in W.items()}, os.path.join(out_dir, "model.safetensors"))
    save_file({"s_in": s_in, "z_in": z_in, "single_mask": single_mask, "pair_mask": pair_mask,
               "s_out": s_out.contiguous(), "z_out": z_out.contiguous()},
              os.path.join(out_dir, "golden.safetensors"))
    print(f"wrote {out_dir}: |s_out| {s_out.norm():.4f}, |z_out| {z_out.norm():.4f}")


if __name__ == "__main__":
    main()
