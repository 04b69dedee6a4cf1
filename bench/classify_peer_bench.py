#!/usr/bin/env python3
"""The PyTorch peer of `fk classify`: timm's model of the given name (MobileNetV4:
mobilenetv4_conv_medium, mobilenetv4_conv_small) or, for a ConvNeXt V2 preset of fk
(convnextv2-base), transformers' ConvNextV2ForImageClassification of the same config, built
with its own random initialisation (the values do not change the time), in eval mode on the
GPU in the given dtype (channels-last memory format, as `fk classify` runs NHWC), eager or
with --compile, over B random normalised images of S x S. Times the forward pass (inputs
already on the GPU) between CUDA events: warm-up passes, then the median of the timed ones.

    python3 bench/classify_peer_bench.py --model mobilenetv4_conv_medium --batch 256 --size 256
                                         [--dtype f16] [--compile] [--json-out peer.json]
    python3 bench/classify_peer_bench.py --model convnextv2-base --batch 32 --size 384
"""
import argparse
import datetime
import json
import statistics
import sys

import torch

# fk's ConvNeXt V2 presets as transformers configs (src/models/vision/registrations.cpp).
CONVNEXTV2 = {"convnextv2-base": dict(depths=[3, 3, 27, 3], hidden_sizes=[128, 256, 512, 1024], num_labels=1000)}


def build(name):
    """(model, its description) for a timm model name or one of CONVNEXTV2."""
    if name in CONVNEXTV2:
        import transformers
        config = transformers.ConvNextV2Config(**CONVNEXTV2[name])
        return transformers.ConvNextV2ForImageClassification(config), f"transformers {transformers.__version__} " \
                                                                         f"ConvNextV2ForImageClassification ({name})"
    import timm
    return timm.create_model(name, pretrained=False), f"timm {timm.__version__} {name}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="mobilenetv4_conv_small")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--dtype", default="f16", choices=["f16", "bf16"])
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--json-out")
    a = ap.parse_args()
    dtype = torch.float16 if a.dtype == "f16" else torch.bfloat16
    model, what = build(a.model)
    model = model.eval().to("cuda", dtype)
    model = model.to(memory_format=torch.channels_last)
    forward = torch.compile(model) if a.compile else model
    gen = torch.Generator(device="cuda").manual_seed(1)
    images = torch.randn((a.batch, 3, a.size, a.size), generator=gen, device="cuda").to(dtype)
    images = images.to(memory_format=torch.channels_last)
    times = []
    with torch.inference_mode():
        for it in range(a.warmup + a.iters):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            forward(images)
            end.record()
            torch.cuda.synchronize()
            if it >= a.warmup:
                times.append(start.elapsed_time(end) / 1e3)
    med = statistics.median(times)
    out = {"peer": what + ", " + ("torch.compile" if a.compile else "eager"),
           "torch": torch.__version__, "device": torch.cuda.get_device_name(), "batch": a.batch, "size": a.size,
           "dtype": a.dtype, "median_forward_s": med, "images_per_s": a.batch / med, "forward_s": times,
           "command": "python3 bench/classify_peer_bench.py " + " ".join(sys.argv[1:]),
           "timestamp": datetime.datetime.now(datetime.timezone.utc).isoformat()}
    print(json.dumps(out))
    if a.json_out:
        with open(a.json_out, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
