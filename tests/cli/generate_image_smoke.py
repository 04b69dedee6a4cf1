#!/usr/bin/env python3
"""`fk generate --image` end to end on the CPU (tiny-qwen3-vl, dummy weights).

    generate_image_smoke.py path/to/fk

A PNG written here (40 x 56 pixels) is decoded, resized by smart_resize to 56 x 80 (the
tiny model's 8-pixel merge factor, at least 256 patches of 4 x 4), and placed before the
prompt as <|vision_start|> (58), 70 image tokens (60), <|vision_end|> (59); the run is
greedy, so it repeats. A file that does not decode and an image for a text-only model are
refused by name; a text prompt still runs on the VLM. `fk bench latency --image-size` puts a
random image before each prompt (and refuses a model that reads none).
"""
import json, os, struct, subprocess, sys, tempfile, zlib

fk = sys.argv[1]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


def png(path, w, h, shade):
    raw = b"".join(b"\x00" + bytes(((x * shade) % 256, (y * 6) % 256, 90)[c] for x in range(w) for c in range(3))
                   for y in range(h))
    chunk = lambda t, d: struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xFFFFFFFF)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)) +
                chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def generate(*args):
    return subprocess.run([fk, "generate", "--max-tokens", "6", "--json", *args], capture_output=True, text=True,
                          timeout=300)


with tempfile.TemporaryDirectory() as d:
    a, bad = os.path.join(d, "a.png"), os.path.join(d, "bad.png")
    png(a, 56, 40, 4)
    with open(bad, "wb") as f:
        f.write(b"not an image")
    r1 = generate("--model", "tiny-qwen3-vl", "--image", a, "--prompt", "1 2 3")
    check(r1.returncode == 0, f"--image exited {r1.returncode}: {r1.stderr}")
    if r1.returncode == 0:
        out = json.loads(r1.stdout)[0]
        check(out["prompt"] == [58] + [60] * 70 + [59, 1, 2, 3], f"prompt layout {out['prompt']}")
        check(len(out["tokens"]) == 6, f"tokens {out['tokens']}")
        r2 = generate("--model", "tiny-qwen3-vl", "--image", a, "--prompt", "1 2 3")
        check(r2.returncode == 0 and json.loads(r2.stdout)[0]["tokens"] == out["tokens"], "greedy run did not repeat")
    r3 = generate("--model", "tiny-qwen3-vl", "--image", bad, "--prompt", "1 2 3")
    check(r3.returncode != 0 and "does not decode as PNG or JPEG" in r3.stderr, f"bad image: {r3.stderr}")
    r4 = generate("--model", "tiny-qwen3", "--image", a, "--prompt", "1 2 3")
    check(r4.returncode != 0 and "reads no images" in r4.stderr, f"text-only model: {r4.stderr}")
    r5 = generate("--model", "tiny-qwen3-vl", "--prompt", "1 2 3")
    check(r5.returncode == 0, f"text-only prompt on tiny-qwen3-vl: {r5.stderr}")

# `fk bench latency --image-size`: a random 64 x 64 image (256 patches of 4, 64 image
# tokens) before each prompt's 8 text tokens; a model that reads no images is refused.
bench = lambda model: subprocess.run([fk, "bench", "latency", "--model", model, "--device", "cpu", "--image-size", "64",
                                      "--input-len", "8", "--output-len", "3", "--iters", "1", "--warmup", "0",
                                      "--json"], capture_output=True, text=True, timeout=300)
r6 = bench("tiny-qwen3-vl")
check(r6.returncode == 0, f"bench latency --image-size exited {r6.returncode}: {r6.stderr}")
if r6.returncode == 0:
    j = json.loads(r6.stdout)
    check((j["image_size"], j["image_patches"], j["image_tokens"]) == (64, 256, 64), f"bench image fields {j}")
    check(abs(j["prefill_tokens_per_s"] * j["median_prefill_s"] - (64 + 2 + 8)) < 1e-6, "prefill tokens per prompt")
r7 = bench("tiny-qwen3")
check(r7.returncode != 0 and "--image-size needs a model that reads images" in r7.stderr, f"text model: {r7.stderr}")

for f in failures:
    print("FAIL:", f)
sys.exit(1 if failures else 0)
