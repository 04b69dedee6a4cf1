#!/usr/bin/env python3
"""transformers' time to first token and decode step of Qwen3-VL with one image, on the
shapes of `fk bench latency --image-size S --input-len L --output-len N`, for a
side-by-side figure on the same GPU in the same run.

Builds Qwen3VLForConditionalGeneration from the preset's config (`fk models config PRESET`)
with its own random initialisation (the values do not change the time), in bf16 with
PyTorch's SDPA attention. The prompt is what fk's bench builds: <|vision_start|>, one image
token per merged patch of an S x S image (S a multiple of 32: no resize), <|vision_end|>, then
L random text tokens; pixel_values are random in the processor's layout ([S/16 * S/16,
3 * 2 * 16 * 16]). Times, each between CUDA events with a synchronize after, median of the
timed runs after warm-up:
  prefill_s   one forward over the whole prompt with the image (the vision tower included)
              and its first token: the time to first token;
  decode_step_ms  (generate of N tokens - prefill) / (N - 1): greedy, dynamic KV cache.
Eager; with --compile, the text model's forward is torch.compile'd (the first calls compile).

Usage: python3 bench/vlm_peer_bench.py --fk build/bin/fk --model qwen3-vl-8b \\
           --image-size 1024 --input-len 128 --output-len 32 [--compile] [--json out.json]
"""
import argparse
import datetime
import inspect
import json
import statistics
import subprocess

import torch
import transformers


def timed(fn):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / 1e3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fk", default="build/bin/fk")
    ap.add_argument("--model", default="qwen3-vl-8b")
    ap.add_argument("--image-size", type=int, default=1024)
    ap.add_argument("--input-len", type=int, default=128)
    ap.add_argument("--output-len", type=int, default=32)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--json")
    a = ap.parse_args()
    if a.image_size % 32 or a.output_len < 2:
        raise SystemExit("--image-size must be a multiple of 32 and --output-len at least 2")

    config_text = subprocess.run([a.fk, "models", "config", a.model], check=True, capture_output=True,
                                 text=True).stdout
    raw = json.loads(config_text)
    config = transformers.AutoConfig.for_model(**raw)
    config._attn_implementation = "sdpa"
    with torch.device("cuda"):
        model = transformers.Qwen3VLForConditionalGeneration._from_config(config, torch_dtype=torch.bfloat16).eval()
    if a.compile:
        model.model.language_model.forward = torch.compile(model.model.language_model.forward)
    vc = config.vision_config
    grid = a.image_size // vc.patch_size
    image_tokens = grid * grid // (vc.spatial_merge_size ** 2)
    gen = torch.Generator(device="cpu").manual_seed(1)
    text = torch.randint(0, 150000, (a.input_len,), generator=gen).tolist()
    ids = [raw["vision_start_token_id"]] + [raw["image_token_id"]] * image_tokens + [raw["vision_end_token_id"]] + text
    input_ids = torch.tensor([ids], device="cuda")
    patch_dim = vc.in_channels * vc.temporal_patch_size * vc.patch_size ** 2
    pixel_values = torch.randn(grid * grid, patch_dim, generator=gen).to("cuda", torch.bfloat16)
    grid_thw = torch.tensor([[1, grid, grid]], device="cuda")
    mm = torch.zeros_like(input_ids)
    mm[input_ids == raw["image_token_id"]] = 1
    inputs = dict(input_ids=input_ids, attention_mask=torch.ones_like(input_ids), pixel_values=pixel_values,
                  image_grid_thw=grid_thw)
    params = inspect.signature(model.forward).parameters
    if "mm_token_type_ids" in params:  # newer transformers compute M-RoPE positions from it
        inputs["mm_token_type_ids"] = mm
    first = {"logits_to_keep": 1} if "logits_to_keep" in params else {}

    prefill, total = [], []
    with torch.inference_mode():
        for it in range(a.warmup + a.iters):
            p = timed(lambda: model(**inputs, use_cache=True, **first))
            t = timed(lambda: model.generate(**inputs, max_new_tokens=a.output_len, min_new_tokens=a.output_len,
                                             do_sample=False))
            if it >= a.warmup:
                prefill.append(p)
                total.append(t)
    p, t = statistics.median(prefill), statistics.median(total)
    out = {"bench": "vlm latency peer", "library": f"transformers {transformers.__version__}, torch {torch.__version__}",
           "attention": "sdpa", "compile": a.compile, "model": a.model, "dtype": "bf16", "batch_size": 1,
           "image_size": a.image_size, "image_tokens": image_tokens, "input_len": a.input_len,
           "output_len": a.output_len, "iters": a.iters, "median_prefill_s": p, "median_generate_s": t,
           "median_decode_step_ms": 1e3 * (t - p) / (a.output_len - 1), "prefill_s": prefill, "generate_s": total,
           "device": torch.cuda.get_device_name(), "timestamp": datetime.datetime.now(datetime.timezone.utc).isoformat()}
    print(json.dumps(out))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
