#!/usr/bin/env python3
"""The PyTorch peer of `fk recommend` for DLRM: the reference of
tests/data/models/recsys/make_dlrm_goldens.py (nn.EmbeddingBag per table, the MLPs, the dot
interaction) built from a preset's config (`fk models config PRESET`), on the GPU in bf16 with
its own random initialisation (the values do not change the time), over the same kind of
batch as `fk recommend` (dense features in [0, 4), --bag-size ids per table and sample,
uniform in the table), eager or with --compile. Times the forward pass (the inputs already on
the GPU, the logits' sigmoid included) between CUDA events: warm-up passes, then the median of
the timed ones.

    python3 bench/dlrm_peer_bench.py --fk build/bin/fk --model dlrmv2 --batch 2048 [--bag-size 1]
                                     [--compile] [--json-out peer.json]
"""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "models", "recsys"))
import make_dlrm_goldens as ref  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fk", default="build/bin/fk")
    ap.add_argument("--model", default="dlrmv2")
    ap.add_argument("--batch", type=int, default=2048)
    ap.add_argument("--bag-size", type=int, default=1)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--json-out")
    a = ap.parse_args()
    config = json.loads(subprocess.run([a.fk, "models", "config", a.model], check=True, capture_output=True,
                                       text=True).stdout)
    torch.set_default_device("cuda")
    # Built in bf16 from the start: MLPerf's tables are 104 GB in float32.
    torch.set_default_dtype(torch.bfloat16)
    model = ref.Dlrm(config).eval()
    forward = torch.compile(model) if a.compile else model
    gen = torch.Generator(device="cuda").manual_seed(1)
    b, n = a.batch, a.bag_size
    dense = (torch.rand((b, config["dense_features"]), generator=gen) * 4).to(torch.bfloat16)
    ids = [torch.randint(0, rows, (b * n,), generator=gen) for rows in config["table_sizes"]]
    offsets = [torch.arange(0, b * n + 1, n) for _ in config["table_sizes"]]
    times = []
    with torch.inference_mode():
        for it in range(a.warmup + a.iters):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            forward(dense, ids, offsets)
            end.record()
            torch.cuda.synchronize()
            if it >= a.warmup:
                times.append(start.elapsed_time(end) / 1e3)
    med = statistics.median(times)
    out = {"peer": "PyTorch DLRM reference (tests/data/models/recsys/make_dlrm_goldens.py), bf16, "
                   + ("torch.compile" if a.compile else "eager"),
           "torch": torch.__version__, "device": torch.cuda.get_device_name(), "model": a.model, "samples": b,
           "bag_size": n, "median_forward_s": med, "samples_per_s": b / med, "forward_s": times,
           "command": "python3 bench/dlrm_peer_bench.py " + " ".join(sys.argv[1:]),
           "timestamp": datetime.datetime.now(datetime.timezone.utc).isoformat()}
    print(json.dumps(out))
    if a.json_out:
        with open(a.json_out, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
