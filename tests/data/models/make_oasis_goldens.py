#!/usr/bin/env python3
"""Golden data of a tiny random Oasis DiT (the spatio-temporal diffusion transformer of
Oasis-500m, open-oasis's dit.py) and of its diffusion-forcing DDIM rollout, for the engine's
golden tests (tests/models/world/oasis_golden_check.h).

No package ships the model, so the reference below is written here from its description:
DiT blocks in pairs of halves (spatial attention within each latent frame, temporal
attention across frames causal in time), each with adaLN-Zero modulation from the frame's
conditioning vector (timestep embedding + action projection), GELU-tanh MLPs, an axial
RoPE for the spatial attention (rotary-embedding-torch's "pixel" frequencies over positions
in [-1, 1], half the head per axis, interleaved pairs) and a 1-D RoPE of the frame index for
the temporal one, LayerNorms without affine parameters (eps 1e-6), and a final
adaLN-modulated linear layer. Parameters use the upstream state dict's names.

The config is the engine's tiny-oasis (src/models/world/registrations.cpp). Every parameter
is drawn at random and rounded to bfloat16 values, as are the inputs, so the engine (which
runs bf16) loads exactly the numbers this reference ran in float32. Each frame has its own
noise level (diffusion forcing); levels are integers, exact in bfloat16. The rollout follows
open-oasis's generate.py sampler (sigmoid beta schedule, v-prediction DDIM, context frames
at the stabilization level, a sliding window of max_frames) on given noise.

Written to OUT/oasis/:
  config.json         the DiT config (open-oasis's constructor arguments)
  model.safetensors   the weights (bf16), upstream names
  golden.safetensors  inputs and outputs (float32), see golden.json
  golden.json         sizes, versions, what each tensor is

    python3 tests/data/models/make_oasis_goldens.py OUT_DIR    # OUT_DIR = tests/data/models

Runs on the CPU in float32 (torch 2.11). The reference was checked against open-oasis's own
DiT module (dit.py at f59deef) with these weights and inputs: relative L2 3.5e-7.
"""
import json
import math
import os
import sys

import torch
import torch.nn.functional as F
from safetensors.torch import save_file

CONFIG = {
    "_class_name": "OasisDiT",
    "input_h": 6,
    "input_w": 8,
    "patch_size": 2,
    "in_channels": 4,
    "hidden_size": 128,
    "depth": 2,
    "num_heads": 2,
    "mlp_ratio": 4.0,
    "external_cond_dim": 5,
    "max_frames": 8,
}
SEED = 20261129
BATCH, FRAMES = 2, 5
ROLLOUT_FRAMES, ROLLOUT_PROMPT, ROLLOUT_STEPS = 10, 2, 3
EPS = 1e-6


def bf16(t):
    return t.to(torch.bfloat16).to(torch.float32)


def make_weights(c, gen):
    h, p, cin, e = c["hidden_size"], c["patch_size"], c["in_channels"], c["external_cond_dim"]
    m = int(h * c["mlp_ratio"])
    w = {}

    def lin(name, out, inp, bias=True):
        bound = math.sqrt(3.0 / inp)  # std 1/sqrt(fan_in)
        w[name + ".weight"] = bf16((torch.rand(out, inp, generator=gen) * 2 - 1) * bound)
        if bias:
            w[name + ".bias"] = bf16((torch.rand(out, generator=gen) * 2 - 1) * 0.1)

    bound = math.sqrt(3.0 / (cin * p * p))
    w["x_embedder.proj.weight"] = bf16((torch.rand(h, cin, p, p, generator=gen) * 2 - 1) * bound)
    w["x_embedder.proj.bias"] = bf16((torch.rand(h, generator=gen) * 2 - 1) * 0.1)
    lin("t_embedder.mlp.0", h, 256)
    lin("t_embedder.mlp.2", h, h)
    lin("external_cond", h, e)
    for i in range(c["depth"]):
        for s in ("s", "t"):
            b = f"blocks.{i}.{s}_"
            lin(b + "adaLN_modulation.1", 6 * h, h)
            lin(b + "attn.to_qkv", 3 * h, h, bias=False)
            lin(b + "attn.to_out", h, h)
            lin(b + "mlp.fc1", m, h)
            lin(b + "mlp.fc2", h, m)
    lin("final_layer.adaLN_modulation.1", 2 * h, h)
    lin("final_layer.linear", p * p * cin, h)
    return w


def linear(w, name, x):
    y = x @ w[name + ".weight"].T
    return y + w[name + ".bias"] if name + ".bias" in w else y


def timestep_embedding(t, dim=256, max_period=10000):
    half = dim // 2
    freqs = torch.exp(-math.log(max_period) * torch.arange(half, dtype=torch.float32) / half).to(t.device)
    args = t.float()[:, None] * freqs[None]
    return torch.cat([torch.cos(args), torch.sin(args)], dim=-1)


def rotate_pairs(x, angles):
    """Turns each interleaved pair (x[2k], x[2k+1]) of the last dim by angles[..., k]."""
    x1, x2 = x[..., 0::2], x[..., 1::2]
    cos, sin = torch.cos(angles), torch.sin(angles)
    out = torch.stack((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)
    return out.flatten(-2)


def spatial_angles(gh, gw, d):
    """[gh, gw, d/2]: pairs 0..d/4 by the row, d/4..d/2 by the column ("pixel" freqs, max 256)."""
    freqs = torch.linspace(1.0, 256 / 2, d // 4) * math.pi
    rows = torch.linspace(-1, 1, steps=gh)[:, None] * freqs  # [gh, d/4]
    cols = torch.linspace(-1, 1, steps=gw)[:, None] * freqs  # [gw, d/4]
    return torch.cat([rows[:, None, :].expand(gh, gw, -1), cols[None, :, :].expand(gh, gw, -1)], dim=-1)


def temporal_angles(t, d):
    """[t, d/2]: frame index times 10000^(-2k/d) ("lang" freqs over the whole head)."""
    freqs = 1.0 / (10000 ** (torch.arange(0, d, 2).float() / d))
    return torch.arange(t).float()[:, None] * freqs


def layer_norm(x):
    return F.layer_norm(x, (x.shape[-1],), eps=EPS)


def modulate(x, shift, scale):
    # x [B, T, h, w, H]; shift, scale [B, T, H]: per frame.
    return x * (1 + scale[:, :, None, None, :]) + shift[:, :, None, None, :]


def attention(w, name, x, heads, temporal):
    B, T, gh, gw, H = x.shape
    d = H // heads
    q, k, v = linear(w, name + ".to_qkv", x).chunk(3, dim=-1)
    split = lambda z: z.reshape(B, T, gh, gw, heads, d)
    q, k, v = split(q), split(k), split(v)
    if temporal:
        ang = temporal_angles(T, d).to(x.device)[None, :, None, None, None, :]
        q, k = rotate_pairs(q, ang), rotate_pairs(k, ang)
        # sequences: (B, row, col, head) over T frames
        perm = lambda z: z.permute(0, 2, 3, 4, 1, 5)
        o = F.scaled_dot_product_attention(perm(q), perm(k), perm(v), is_causal=True)
        o = o.permute(0, 4, 1, 2, 3, 5)
    else:
        ang = spatial_angles(gh, gw, d).to(x.device)[None, None, :, :, None, :]
        q, k = rotate_pairs(q, ang), rotate_pairs(k, ang)
        # sequences: (B, T, head) over gh*gw tokens
        flat = lambda z: z.reshape(B, T, gh * gw, heads, d).permute(0, 1, 3, 2, 4)
        o = F.scaled_dot_product_attention(flat(q), flat(k), flat(v))
        o = o.permute(0, 1, 3, 2, 4).reshape(B, T, gh, gw, heads, d)
    return linear(w, name + ".to_out", o.reshape(B, T, gh, gw, H))


def half_block(w, prefix, x, c, heads, temporal):
    s = "t" if temporal else "s"
    mod = linear(w, f"{prefix}.{s}_adaLN_modulation.1", F.silu(c)).chunk(6, dim=-1)
    x = x + mod[2][:, :, None, None, :] * attention(w, f"{prefix}.{s}_attn", modulate(layer_norm(x), mod[0], mod[1]),
                                                    heads, temporal)
    hmid = F.gelu(linear(w, f"{prefix}.{s}_mlp.fc1", modulate(layer_norm(x), mod[3], mod[4])), approximate="tanh")
    return x + mod[5][:, :, None, None, :] * linear(w, f"{prefix}.{s}_mlp.fc2", hmid)


def dit(w, c, x, t, action):
    """x [B, T, C, H, W] latents, t [B, T] noise levels, action [B, T, E] -> [B, T, h, w, p*p*C]."""
    B, T, C, Hh, Ww = x.shape
    p, heads = c["patch_size"], c["num_heads"]
    z = F.conv2d(x.reshape(B * T, C, Hh, Ww), w["x_embedder.proj.weight"], w["x_embedder.proj.bias"], stride=p)
    z = z.permute(0, 2, 3, 1).reshape(B, T, Hh // p, Ww // p, -1)
    temb = linear(w, "t_embedder.mlp.2", F.silu(linear(w, "t_embedder.mlp.0", timestep_embedding(t.reshape(-1)))))
    cond = temb.reshape(B, T, -1) + linear(w, "external_cond", action)
    for i in range(c["depth"]):
        z = half_block(w, f"blocks.{i}", z, cond, heads, temporal=False)
        z = half_block(w, f"blocks.{i}", z, cond, heads, temporal=True)
    shift, scale = linear(w, "final_layer.adaLN_modulation.1", F.silu(cond)).chunk(2, dim=-1)
    return linear(w, "final_layer.linear", modulate(layer_norm(z), shift, scale))


def sigmoid_alphas_cumprod(levels=1000, start=-3, end=3, tau=1):
    """The sigmoid beta schedule's alphas_cumprod: betas in float64, the product in float32."""
    t = torch.linspace(0, levels, levels + 1, dtype=torch.float64) / levels
    v_start, v_end = torch.tensor(start / tau).sigmoid(), torch.tensor(end / tau).sigmoid()
    ac = (-((t * (end - start) + start) / tau).sigmoid() + v_end) / (v_end - v_start)
    ac = ac / ac[0]
    betas = torch.clip(1 - (ac[1:] / ac[:-1]), 0, 0.999)
    return torch.cumprod(1.0 - betas.float(), dim=0)


def unpatchify(out, c):
    """[B, T, h, w, p*p*C] (row, column, channel) -> [B, T, C, H, W]."""
    B, T, gh, gw, _ = out.shape
    p, cin = c["patch_size"], c["in_channels"]
    return out.reshape(B, T, gh, gw, p, p, cin).permute(0, 1, 6, 2, 4, 3, 5).reshape(B, T, cin, gh * p, gw * p)


def patchify(x, c):
    """[B, T, C, H, W] -> [B T S, C p p] frame-major rows, (channel, row, column) values."""
    B, T, cin, H, W = x.shape
    p = c["patch_size"]
    return x.reshape(B, T, cin, H // p, p, W // p, p).permute(0, 1, 3, 5, 2, 4, 6).reshape(-1, cin * p * p)


def rollout(w, c, prompt, actions, noise, steps, stabilization_level=15, model=None):
    """Diffusion-forcing DDIM rollout: each new frame starts as `noise` and is denoised in
    `steps` v-prediction steps over the window of the last max_frames frames, the earlier
    frames at noise level stabilization_level - 1. `model`: dit or a compiled dit."""
    model = model or dit
    ac = sigmoid_alphas_cumprod().to(prompt.device)
    levels = torch.linspace(-1, 999, steps + 1)
    x = prompt.clone()
    n_prompt, n_frames = prompt.shape[1], actions.shape[1]
    for i in range(n_prompt, n_frames):
        x = torch.cat([x, noise[:, i - n_prompt:i - n_prompt + 1]], dim=1)
        start = max(0, i + 1 - c["max_frames"])
        for idx in reversed(range(1, steps + 1)):
            t = torch.full((1, i + 1), stabilization_level - 1, dtype=torch.long, device=prompt.device)
            t[:, -1] = int(levels[idx])
            t_next = t.clone()
            t_next[:, -1] = int(levels[idx - 1]) if int(levels[idx - 1]) >= 0 else int(levels[idx])
            x_curr, t, t_next = x[:, start:], t[:, start:], t_next[:, start:]
            v = unpatchify(model(w, c, x_curr, t.float(), actions[:, start:i + 1]), c).float()
            a = ac[t][:, :, None, None, None]
            x_start = a.sqrt() * x_curr - (1 - a).sqrt() * v
            x_noise = ((1 / a).sqrt() * x_curr - x_start) / (1 / a - 1).sqrt()
            a_next = ac[t_next][:, :, None, None, None].clone()
            a_next[:, :-1] = 1
            if idx == 1:
                a_next[:, -1:] = 1
            x_pred = a_next.sqrt() * x_start + x_noise * (1 - a_next).sqrt()
            x[:, -1:] = x_pred[:, -1:]
    return x


def main():
    out_dir = os.path.join(sys.argv[1] if len(sys.argv) > 1 else "tests/data/models", "oasis")
    os.makedirs(out_dir, exist_ok=True)
    torch.manual_seed(SEED)
    gen = torch.Generator().manual_seed(SEED)
    c = CONFIG
    w = make_weights(c, gen)
    p, cin = c["patch_size"], c["in_channels"]
    x = bf16(torch.randn(BATCH, FRAMES, cin, c["input_h"], c["input_w"], generator=gen))
    t = torch.tensor([[15.0, 15.0, 15.0, 15.0, 700.0], [0.0, 250.0, 500.0, 750.0, 999.0]])
    action = bf16(torch.rand(BATCH, FRAMES, c["external_cond_dim"], generator=gen).round())
    with torch.no_grad():
        sample = dit(w, c, x, t, action)
    # A rollout of one clip past the context window: 2 prompt frames, 10 frames in all, 3
    # DDIM steps per frame.
    r_prompt = bf16(torch.randn(1, ROLLOUT_PROMPT, cin, c["input_h"], c["input_w"], generator=gen))
    r_actions = bf16(torch.rand(1, ROLLOUT_FRAMES, c["external_cond_dim"], generator=gen).round())
    r_noise = bf16(torch.randn(1, ROLLOUT_FRAMES - ROLLOUT_PROMPT, cin, c["input_h"], c["input_w"], generator=gen))
    with torch.no_grad():
        r_latents = rollout(w, c, r_prompt, r_actions, r_noise, ROLLOUT_STEPS)
    gh, gw = c["input_h"] // p, c["input_w"] // p
    # The engine's token layout: frame-major rows (clip, frame, row, column), each patch (input
    # and prediction alike) as its (channel, row, column) values. Upstream's final linear gives
    # (row, column, channel): reordered here as the engine reorders that layer's rows.
    patches = x.reshape(BATCH, FRAMES, cin, gh, p, gw, p).permute(0, 1, 3, 5, 2, 4, 6)
    sample = sample.reshape(BATCH, FRAMES, gh, gw, p, p, cin).permute(0, 1, 2, 3, 6, 4, 5)
    tensors = {
        "x_patches": patches.reshape(-1, cin * p * p).contiguous(),
        "timestep": t.contiguous(),
        "external_cond": action.reshape(-1, c["external_cond_dim"]).contiguous(),
        "sample": sample.reshape(-1, cin * p * p).contiguous(),
        "rollout_prompt": patchify(r_prompt, c).contiguous(),
        "rollout_actions": r_actions.reshape(-1, c["external_cond_dim"]).contiguous(),
        "rollout_noise": patchify(r_noise, c).contiguous(),
        "rollout_latents": patchify(r_latents, c).contiguous(),
    }
    save_file({k: v.to(torch.bfloat16).contiguous() for k, v in w.items()}, os.path.join(out_dir, "model.safetensors"))
    save_file(tensors, os.path.join(out_dir, "golden.safetensors"))
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(c, f, indent=2)
        f.write("\n")
    meta = {
        "batch": BATCH, "frames": FRAMES, "seed": SEED,
        "rollout": {"frames": ROLLOUT_FRAMES, "prompt_frames": ROLLOUT_PROMPT, "ddim_steps": ROLLOUT_STEPS,
                    "stabilization_level": 15},
        "tensors": {
            "x_patches": "[B T S, C p p] the noisy latents' patches, frame-major, (channel, row, column) values",
            "timestep": "[B, T] each frame's noise level",
            "external_cond": "[B T, E] each frame's action (0/1)",
            "sample": "[B T S, C p p] the reference's prediction per patch, (channel, row, column) values",
            "rollout_prompt": "[P S, C p p] the rollout's prompt frames (patches, as x_patches)",
            "rollout_actions": "[N, E] an action per frame of the rollout",
            "rollout_noise": "[(N - P) S, C p p] each generated frame's starting noise",
            "rollout_latents": "[N S, C p p] every frame after the rollout (float32 latents throughout)",
        },
        "versions": {"torch": torch.__version__},
    }
    with open(os.path.join(out_dir, "golden.json"), "w") as f:
        json.dump(meta, f, indent=2)
        f.write("\n")
    print("wrote", out_dir, "sample rms", float(sample.pow(2).mean().sqrt()))


if __name__ == "__main__":
    main()
