#!/usr/bin/env python3
"""`fk models list --json` and `fk run` end to end on the CPU.

    models_run_smoke.py path/to/fk

The listing holds every field the progress board and users read, with the benchmark's
Llama-3.1-8B and Mixtral-8x7B; `fk run` of the tiny Llama writes its JSON summary and gives
the same checksum twice (and another for another seed); unknown models are refused with a
pointer to `fk models list`, by `fk run` and by `fk bench`. `fk models config` prints a
preset's config.json text; `fk bench embed` times a text encoder and writes its JSON; `fk bench
latency | throughput` print a summary, their JSON going to --json-out (or stdout with --json).
"""
import json, os, re, struct, subprocess, sys, tempfile, zlib

fk = sys.argv[1]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


def run(*args):
    return subprocess.run([fk, *args], capture_output=True, text=True, timeout=300)


listing = run("models", "list", "--json")
check(listing.returncode == 0, f"models list --json exited {listing.returncode}: {listing.stderr}")
models = json.loads(listing.stdout)
check(isinstance(models, list) and models, "models list --json is not a non-empty list")
names = set()
for m in models:
    for key in ("architecture", "names", "category", "pattern", "presets", "backends", "golden_test"):
        check(key in m, f"{m.get('architecture')}: no '{key}'")
    check(m["pattern"] in ("generate", "denoise", "batch"), f"{m['architecture']}: pattern {m['pattern']}")
    kinds = {p["kind"] for p in m["presets"]}
    check(kinds >= {"production", "tiny"}, f"{m['architecture']}: preset kinds {kinds}")
    check(all(p["name"] for p in m["presets"]), f"{m['architecture']}: a preset without a name")
    names.update(m["names"])
check({"Llama-3.1-8B", "Mixtral-8x7B"} <= names, f"benchmark names missing from {sorted(names)}")

text = run("models", "list")
check(text.returncode == 0 and "tiny-llama" in text.stdout and "Dense & MoE LLMs" in text.stdout,
      f"models list (text): {text.stdout}{text.stderr}")

with tempfile.TemporaryDirectory() as tmp:
    outs = []
    for i, seed in enumerate((0, 0, 1)):
        path = os.path.join(tmp, f"run{i}.json")
        r = run("run", "--model", "tiny-llama", "--device", "cpu", "--seed", str(seed), "--json-out", path)
        check(r.returncode == 0, f"run exited {r.returncode}: {r.stderr}")
        check("checksum" in r.stdout and "architecture llama" in r.stdout, f"run summary: {r.stdout}")
        outs.append(json.load(open(path)))
    a, b, c = outs
    for key in ("model", "architecture", "pattern", "device", "tokens_in", "tokens_out", "seconds", "checksum"):
        check(key in a, f"run JSON has no '{key}'")
    check(a["model"] == "tiny-llama" and a["architecture"] == "llama" and a["pattern"] == "generate"
          and a["device"] == "cpu", f"run JSON: {a}")
    check(a["tokens_out"] == len(a["output"]) == 16 and a["tokens_in"] == len(a["prompt"]) == 16, f"run JSON: {a}")
    check(re.fullmatch(r"[0-9a-f]{16}", a["checksum"]) is not None, f"checksum {a['checksum']}")
    check(a["checksum"] == b["checksum"] and a["output"] == b["output"], "two runs of one seed differ")
    check(c["output"] == a["output"] or c["checksum"] != a["checksum"], "another output, the same checksum")
    check(c["prompt"] != a["prompt"], "another seed, the same prompt")

for args in (("run", "--model", "no-such-model", "--device", "cpu"),
             ("bench", "latency", "--model", "no-such-model", "--device", "cpu")):
    r = run(*args)
    check(r.returncode != 0 and "unknown model 'no-such-model'" in r.stderr and "fk models list" in r.stderr
          and "tiny-llama" in r.stderr, f"{' '.join(args)}: exit {r.returncode}, stderr {r.stderr}")

# A preset's config is the upstream config.json text; a name that is no preset is refused.
cfg = run("models", "config", "tiny-bge-m3")
check(cfg.returncode == 0, f"models config exited {cfg.returncode}: {cfg.stderr}")
if cfg.returncode == 0:
    c = json.loads(cfg.stdout)
    check(c.get("model_type") == "xlm-roberta" and c.get("num_hidden_layers") == 2, f"models config: {c}")
r = run("models", "config", "no-such-model")
check(r.returncode != 0 and "unknown model 'no-such-model'" in r.stderr, f"models config of no preset: {r.stderr}")

# The text encoders' benchmark: its JSON, and a Generate model refused by name.
with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "embed.json")
    r = run("bench", "embed", "--model", "tiny-bge-m3", "--device", "cpu", "--batch-size", "3", "--seq-len", "20",
            "--warmup", "1", "--iters", "2", "--json-out", path)
    check(r.returncode == 0 and "forward" in r.stdout, f"bench embed exited {r.returncode}: {r.stdout}{r.stderr}")
    if r.returncode == 0:
        e = json.load(open(path))
        check(e["batch_size"] == 3 and e["seq_len"] == 20 and len(e["forward_s"]) == 2 and e["median_forward_s"] > 0
              and e["forward_tokens_per_s"] > 0 and e["backend"] == "cpu", f"bench embed JSON: {e}")
r = run("bench", "embed", "--model", "tiny-llama", "--device", "cpu")
check(r.returncode != 0 and "generate pattern" in r.stderr, f"bench embed of a Generate model: {r.stderr}")
r = run("bench", "embed", "--model", "tiny-bge-m3", "--device", "cpu", "--seq-len", "100000")
check(r.returncode != 0 and "--seq-len" in r.stderr, f"bench embed past the positions: {r.stderr}")

# fk bench: a human summary on stdout, the JSON in --json-out (vLLM's names too) or with --json.
with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "lat.json")
    r = run("bench", "latency", "--model", "tiny-llama", "--device", "cpu", "--input-len", "8", "--output-len", "3",
            "--num-iters", "2", "--num-iters-warmup", "0", "--output-json", path)
    check(r.returncode == 0 and "decode step" in r.stdout and "tokens/s" in r.stdout and not r.stdout.startswith("{"),
          f"bench latency summary: {r.stdout}{r.stderr}")
    if r.returncode == 0:
        lat = json.load(open(path))
        check(lat["iters"] == 2 and lat["input_len"] == 8 and lat["median_decode_step_ms"] > 0, f"latency JSON: {lat}")
    r = run("bench", "latency", "--json", "--model", "tiny-llama", "--device", "cpu", "--input-len", "8",
            "--output-len", "2", "--iters", "1", "--warmup", "0")
    check(r.returncode == 0 and json.loads(r.stdout)["bench"] == "latency", f"bench latency --json: {r.stdout}")
    r = run("bench", "throughput", "--model", "tiny-llama", "--device", "cpu", "--num-prompts", "4", "--input-len", "8",
            "--output-len", "2")
    check(r.returncode == 0 and "requests/s" in r.stdout and "output tokens/s" in r.stdout,
          f"bench throughput summary: {r.stdout}{r.stderr}")

# fk detect: the detector's JSON for a batch of random images, timed over --iters runs.
with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "det.json")
    r = run("detect", "--model", "tiny-yolov10", "--device", "cpu", "--batch", "2", "--iters", "2", "--json-out", path)
    check(r.returncode == 0, f"detect exited {r.returncode}: {r.stderr}")
    if r.returncode == 0:
        d = json.load(open(path))
        check(len(d["data"]) == 2 and d["iters"] == 2 and d["seconds"] > 0 and d["architecture"] == "yolov10",
              f"detect JSON: {str(d)[:300]}")
r = run("detect", "--model", "tiny-yolov10", "--device", "cpu", "--iters", "0")
check(r.returncode != 0 and "--iters" in r.stderr, f"detect --iters 0: {r.stderr}")

# Errors are words: the failed check's condition and the source line only with --verbose.
check(r.stderr.strip() == "fk: error: detect: --iters must be positive, got 0", f"detect error words: {r.stderr}")
r = subprocess.run([fk, "--verbose", "detect", "--model", "tiny-yolov10", "--device", "cpu", "--iters", "0"],
                   capture_output=True, text=True, timeout=300)
check(r.returncode != 0 and "check failed: o.iters >= 1: detect: --iters must be positive" in r.stderr
      and "[src/cli/cmd_detect.cpp:" in r.stderr, f"detect --verbose error: {r.stderr}")

# fk recommend: DLRM's click probabilities for random samples, timed over --iters forward passes;
# the same seed gives the same logits; a wrong model is a named error.
with tempfile.TemporaryDirectory() as tmp:
    outs = []
    for i in range(2):
        path = os.path.join(tmp, f"rec{i}.json")
        r = run("recommend", "--model", "tiny-dlrmv2", "--device", "cpu", "--batch", "5", "--bag-size", "3",
                "--iters", "2", "--json-out", path)
        check(r.returncode == 0, f"recommend exited {r.returncode}: {r.stderr}")
        if r.returncode == 0:
            outs.append(json.load(open(path)))
    if len(outs) == 2:
        d = outs[0]
        check(d["samples"] == 5 and d["architecture"] == "dlrm" and d["seconds"] > 0
              and len(d["first_probabilities"]) == 5 and all(0 < p < 1 for p in d["first_probabilities"]),
              f"recommend JSON: {str(d)[:300]}")
        check(outs[0]["logits_checksum"] == outs[1]["logits_checksum"], "recommend: one seed, two checksums")
r = run("recommend", "--model", "tiny-yolov10", "--device", "cpu")
check(r.returncode != 0 and "is not a recommendation model" in r.stderr, f"recommend on a detector: {r.stderr}")

# fk classify: each image's top-5 classes and logits, timed over --iters runs.
with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "cls.json")
    r = run("classify", "--model", "tiny-mobilenetv4", "--device", "cpu", "--batch", "2", "--iters", "2",
            "--json-out", path)
    check(r.returncode == 0, f"classify exited {r.returncode}: {r.stderr}")
    if r.returncode == 0:
        d = json.load(open(path))
        check(len(d["data"]) == 2 and len(d["data"][0]["classes"]) == 5 and d["architecture"] == "mobilenetv4",
              f"classify JSON: {str(d)[:300]}")
r = run("classify", "--model", "tiny-mobilenetv4", "--device", "cpu", "--dtype", "f32")
check(r.returncode != 0 and "classify: --dtype must be f16 or bf16, got f32" in r.stderr, f"classify f32: {r.stderr}")

# fk classify / detect --image: PNG files decoded and preprocessed (timm's eval transform, YOLO's
# letterbox); a detector's boxes come back in the file's pixels.
def write_png(path, width, height):
    """An RGB gradient as a PNG (zlib and struct only)."""
    rows = b"".join(b"\x00" + bytes((x * 255 // width, y * 255 // height, 128) [c] for x in range(width) for c in range(3))
                    for y in range(height))
    chunk = lambda kind, data: struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))

with tempfile.TemporaryDirectory() as tmp:
    wide, tall = os.path.join(tmp, "wide.png"), os.path.join(tmp, "tall.png")
    write_png(wide, 90, 40)
    write_png(tall, 30, 70)
    r = run("classify", "--model", "tiny-mobilenetv4", "--device", "cpu", "--image", wide, "--image", tall)
    check(r.returncode == 0, f"classify --image exited {r.returncode}: {r.stderr}")
    if r.returncode == 0:
        d = json.loads(r.stdout)
        check(d["images"] == 2 and [x["image"] for x in d["data"]] == [wide, tall] and len(d["data"][1]["classes"]) == 5,
              f"classify --image JSON: {str(d)[:300]}")
    r = run("classify", "--model", "tiny-convnextv2", "--device", "cpu", "--image", tall)
    check(r.returncode == 0 and json.loads(r.stdout)["architecture"] == "convnextv2"
          and len(json.loads(r.stdout)["data"][0]["classes"]) == 5, f"classify tiny-convnextv2: {r.stderr}")
    r = run("detect", "--model", "tiny-yolov10", "--device", "cpu", "--image", wide)
    check(r.returncode == 0, f"detect --image exited {r.returncode}: {r.stderr}")
    if r.returncode == 0:
        d = json.loads(r.stdout)["data"][0]
        boxes = d["boxes"]
        check(d["width"] == 90 and d["height"] == 40 and boxes
              and all(0 <= b[0] <= b[2] <= 90 and 0 <= b[1] <= b[3] <= 40 for b in boxes),
              f"detect --image boxes outside the 90 x 40 image: {str(d)[:300]}")
    bad = os.path.join(tmp, "bad.png")
    with open(bad, "wb") as f:
        f.write(b"not an image")
    r = run("classify", "--model", "tiny-mobilenetv4", "--device", "cpu", "--image", bad)
    check(r.returncode != 0 and "does not decode as PNG or JPEG" in r.stderr, f"classify a bad file: {r.stderr}")
    r = run("detect", "--model", "tiny-yolov10", "--device", "cpu", "--image", wide, "--batch", "3")
    check(r.returncode != 0 and "--batch 3 disagrees with the 1 --image files" in r.stderr, f"detect --batch: {r.stderr}")

r = run("run", "--help")
check("fk models list" in r.stdout, f"run --help does not point to fk models list: {r.stdout}")

for f in failures:
    print("FAIL:", f)
print(f"{len(models)} architectures listed; " + ("all checks passed" if not failures else f"{len(failures)} failed"))
sys.exit(1 if failures else 0)
