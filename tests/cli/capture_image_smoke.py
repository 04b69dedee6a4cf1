#!/usr/bin/env python3
"""`fk capture` of FLUX.1 (the Denoise pattern) and of a detector (YOLOv10) on the CPU.

    capture_image_smoke.py path/to/fk path/to/tasks/generate.py

tiny-flux (one step of its loop) and tiny-yolov10 (one forward of two images) each write
capture.json, whose ops tasks/generate.py's capture reader takes as they are (it picks
their heaviest shapes), with their L3 blocks (flux_double_block, flux_single_block,
yolov10_c2f) and the calls of one step / forward; and one task file per op. Workloads of the
wrong form, or a size the model does not take, are refused by name.
"""
import gzip, importlib.util, json, os, shutil, subprocess, sys, tempfile

fk, generate_py = sys.argv[1], sys.argv[2]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


def run(*args):
    return subprocess.run([fk, *args], capture_output=True, text=True, timeout=300)


spec = importlib.util.spec_from_file_location("generate", generate_py)
generate = importlib.util.module_from_spec(spec)
spec.loader.exec_module(generate)

cases = [("tiny-flux", "bf16", "tiny", {"flux_double_block": 2, "flux_single_block": 2, "flow_match_euler_step": 1}),
         ("tiny-yolov10", "f16", "2x64", {"upsample_nearest2d": 2, "max_pool2d": 3, "dfl_box_decode": 1})]
with tempfile.TemporaryDirectory() as tmp:
    for model, dtype, workload, calls in cases:
        out = os.path.join(tmp, model)
        r = run("capture", "--model", model, "--device", "cpu", "--dtype", dtype, "--workload", workload, "--out", out)
        check(r.returncode == 0, f"capture {model} exited {r.returncode}: {r.stderr}")
        if r.returncode != 0:
            continue
        summary = json.load(open(os.path.join(out, "capture.json")))
        check(summary["workload"]["name"] == workload, f"{model}: workload {summary['workload']}")
        ops = {entry["op"]: entry for entry in summary["ops"]}
        for op, n in calls.items():
            check(op in ops and ops[op]["calls"] == n, f"{model}: {op} calls {ops.get(op, {}).get('calls')}, not {n}")
        for op, entry in ops.items():
            check(os.path.exists(os.path.join(out, op + ".json")), f"{model}: no task file for {op}")
            task = json.load(open(os.path.join(out, op + ".json")))
            check(task["op"] == op and task["workloads"], f"{model}: task file of {op}: {task}")
        level3 = [op for op in ops if json.load(open(os.path.join(out, op + ".json")))["level"] == "L3"]
        check(level3, f"{model}: no L3 op captured")
        # As tasks/captures/<model>/<workload>.json.gz, through the task generator's reader.
        store = os.path.join(tmp, "captures", model)
        os.makedirs(store)
        with gzip.open(os.path.join(store, workload + ".json.gz"), "wt") as f:
            json.dump(summary, f)
        generate.CAPTURES = os.path.join(tmp, "captures")
        read = generate.load_captures()[model][workload]
        for op in ops:
            kept = generate.captured_workloads(op, {model: {workload: read}})
            check(kept and all("shape" in w and w["calls"] > 0 for w in kept), f"{model}: generate.py kept {kept} of {op}")
        shutil.rmtree(os.path.join(tmp, "captures"))

    for model, workload, says in [("tiny-flux", "1000px", "not a multiple of 16"), ("tiny-flux", "32x512", "is not tiny"),
                                  ("tiny-yolov10", "1x640", "the model takes 64 x 64"),
                                  ("tiny-yolov10", "1024px", "is not tiny or BxS")]:
        r = run("capture", "--model", model, "--device", "cpu", "--workload", workload, "--out", os.path.join(tmp, "x"))
        check(r.returncode != 0 and says in r.stderr, f"capture {model} --workload {workload}: {r.stderr}")

print(f"{len(failures)} failures")
for f in failures:
    print("FAIL:", f)
sys.exit(1 if failures else 0)
