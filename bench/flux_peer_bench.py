#!/usr/bin/env python3
"""diffusers' timing of FLUX.1's transformer over a Denoise loop, on the shapes of
`fk denoise`, for a side-by-side figure on the same GPU in the same run.

Builds FluxTransformer2DModel from the preset's config (`fk models config PRESET`) with its
own random initialisation (the values do not change the time) in bf16, and times --steps
forward passes over B images of H x W pixels (packed latents of (H/16)(W/16) tokens of 64
channels, 512 prompt tokens, embedded guidance), the scheduler's update between them: the
transformer's share of a FluxPipeline call, without the text encoders and the VAE (which
`fk denoise` leaves out too). CUDA events around the loop after --warmup loops; median of
--iters. torch.compile with --compile. Prints one JSON object (also written with --json).

Usage: python3 bench/flux_peer_bench.py --fk build/bin/fk --model flux.1-dev --steps 28 \\
           [--height 1024 --width 1024] [--compile] [--json out.json]
"""
import argparse
import datetime
import json
import statistics
import subprocess

import diffusers
import torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fk", default="build/bin/fk")
    ap.add_argument("--model", default="flux.1-dev")
    ap.add_argument("--steps", type=int, default=28)
    ap.add_argument("--height", type=int, default=1024)
    ap.add_argument("--width", type=int, default=1024)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--text-len", type=int, default=512)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--iters", type=int, default=3)
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--json")
    a = ap.parse_args()

    config = json.loads(subprocess.run([a.fk, "models", "config", a.model], check=True, capture_output=True,
                                       text=True).stdout)
    config = {k: v for k, v in config.items() if not k.startswith("_")}
    model = diffusers.FluxTransformer2DModel(**config).to("cuda", torch.bfloat16).eval()
    if a.compile:
        model = torch.compile(model)
    rows, cols = a.height // 16, a.width // 16
    n = rows * cols
    dev, dt = "cuda", torch.bfloat16
    latents = torch.randn(a.batch, n, config["in_channels"], device=dev, dtype=dt)
    prompt = torch.randn(a.batch, a.text_len, config["joint_attention_dim"], device=dev, dtype=dt)
    pooled = torch.randn(a.batch, config["pooled_projection_dim"], device=dev, dtype=dt)
    txt_ids = torch.zeros(a.text_len, 3, device=dev, dtype=dt)
    img_ids = torch.zeros(rows, cols, 3, device=dev)
    img_ids[..., 1] = torch.arange(rows, device=dev)[:, None]
    img_ids[..., 2] = torch.arange(cols, device=dev)[None, :]
    img_ids = img_ids.reshape(n, 3).to(dt)
    guidance = torch.full((a.batch,), 3.5, device=dev, dtype=torch.float32)
    sigmas = torch.linspace(1.0, 1.0 / a.steps, a.steps + 1, device=dev).tolist()

    def loop(x):
        for i in range(a.steps):
            t = torch.full((a.batch,), sigmas[i], device=dev, dtype=dt)
            v = model(hidden_states=x, encoder_hidden_states=prompt, pooled_projections=pooled, timestep=t,
                      img_ids=img_ids, txt_ids=txt_ids, guidance=guidance, return_dict=False)[0]
            x = (x.float() + (sigmas[i + 1] - sigmas[i]) * v.float()).to(dt)
        return x

    times = []
    with torch.inference_mode():
        for it in range(a.warmup + a.iters):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            loop(latents)
            end.record()
            torch.cuda.synchronize()
            if it >= a.warmup:
                times.append(start.elapsed_time(end) / 1e3)
    med = statistics.median(times)
    out = {"bench": "denoise peer", "library": f"diffusers {diffusers.__version__}, torch {torch.__version__}",
           "compile": a.compile, "model": a.model, "height": a.height, "width": a.width, "batch": a.batch,
           "steps": a.steps, "iters": a.iters, "median_loop_s": med, "median_step_s": med / a.steps,
           "loop_s": times, "device": torch.cuda.get_device_name(),
           "timestamp": datetime.datetime.now(datetime.timezone.utc).isoformat()}
    print(json.dumps(out))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
