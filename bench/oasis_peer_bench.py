#!/usr/bin/env python3
"""The PyTorch peer of `fk rollout` for Oasis-500m: the same diffusion-forcing DDIM rollout
(a prompt frame, an action per frame, N DDIM steps per new frame over the sliding window of
32 frames) with the PyTorch reference of tests/data/models/make_oasis_goldens.py (checked
there against open-oasis's DiT), on the GPU in bf16 under autocast as open-oasis's
generate.py runs it (float32 latents), eager or with --compile (the DiT under
torch.compile(dynamic=True): the window grows frame by frame). Dummy weights of the
oasis-500m shape.

    python3 bench/oasis_peer_bench.py --frames 32 --steps 10 [--compile] --json-out peer.json

Prints and writes frames per second (generated frames over the timed rollout's wall clock,
after a warm-up rollout: 3 frames eager, the whole rollout compiled, so that every window
length has been compiled before the timing).
"""
import argparse
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "models"))
import make_oasis_goldens as ref  # noqa: E402

# The engine's oasis-500m preset (src/models/world/registrations.cpp): open-oasis's DiT_S_2.
OASIS_500M = {"_class_name": "OasisDiT", "input_h": 18, "input_w": 32, "patch_size": 2, "in_channels": 16,
              "hidden_size": 1024, "depth": 16, "num_heads": 16, "mlp_ratio": 4.0, "external_cond_dim": 25,
              "max_frames": 32}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--frames", type=int, default=32)
    ap.add_argument("--prompt-frames", type=int, default=1)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--json-out")
    a = ap.parse_args()
    model = torch.compile(ref.dit, dynamic=True) if a.compile else ref.dit
    c = OASIS_500M
    gen = torch.Generator().manual_seed(0)
    w = {k: v.to("cuda", torch.bfloat16) for k, v in ref.make_weights(c, gen).items()}
    shape = (c["in_channels"], c["input_h"], c["input_w"])
    prompt = torch.randn(1, a.prompt_frames, *shape, generator=gen).cuda()
    actions = torch.rand(1, a.frames, c["external_cond_dim"], generator=gen).round().cuda()
    noise = torch.randn(1, a.frames - a.prompt_frames, *shape, generator=gen).cuda()

    def run(frames):
        with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
            return ref.rollout(w, c, prompt, actions[:, :frames], noise[:, :frames - a.prompt_frames], a.steps,
                               model=model)

    run(a.frames if a.compile else a.prompt_frames + 3)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    run(a.frames)
    torch.cuda.synchronize()
    seconds = time.perf_counter() - t0
    generated = a.frames - a.prompt_frames
    mode = "torch.compile(dynamic=True)" if a.compile else "eager"
    out = {"peer": f"PyTorch reference (tests/data/models/make_oasis_goldens.py), {mode}, bf16 autocast",
           "torch": torch.__version__, "device": torch.cuda.get_device_name(0), "frames": a.frames,
           "prompt_frames": a.prompt_frames, "ddim_steps": a.steps, "generated_frames": generated,
           "seconds": seconds, "frames_per_second": generated / seconds,
           "command": "python3 bench/oasis_peer_bench.py " + " ".join(sys.argv[1:])}
    print(json.dumps(out))
    if a.json_out:
        with open(a.json_out, "w") as f:
            json.dump(out, f, indent=2)


if __name__ == "__main__":
    main()
