#!/usr/bin/env bash
# scripts/gpu_engine_bench.sh's serving-target steps on the CPU with a tiny model: the
# batch-1 latency run and the rate-1 serving run take the same request shape, write their
# JSON, and FK_BENCH_STEPS leaves the other steps out. Usage: gpu_engine_bench_smoke.sh BIN_DIR
set -euo pipefail
BIN=${1:?directory holding fk}
root=$(cd "$(dirname "$0")/../.." && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
FK_BENCH_QUICK=1 FK_BENCH_MODEL=tiny-llama FK_BENCH_DEVICE=cpu FK_BENCH_PORT=$port \
  FK_BENCH_STEPS="latency_target serve_rate1" "$root/scripts/gpu_engine_bench.sh" "$BIN" "$out"
python3 - "$out" <<'PY'
import json, os, sys
out = sys.argv[1]
names = sorted(os.listdir(out))
assert names == ["latency_target.json", "logs.tgz", "serve_rate1.json"], names
lat = json.load(open(os.path.join(out, "latency_target.json")))
srv = json.load(open(os.path.join(out, "serve_rate1.json")))
assert lat["batch_size"] == 1 and lat["median_decode_step_ms"] > 0, lat
shape = [lat["input_len"], lat["input_len"]], [lat["output_len"], lat["output_len"]]
assert (srv["input_range"], srv["output_range"]) == shape, (srv["input_range"], srv["output_range"], shape)
assert srv["request_rate"] == 1 and srv["completed"] == srv["num_prompts"] > 0 and srv["failed"] == 0, srv
assert srv["median_tpot_ms"] > 0, srv
print("serving-target steps: decode step %.3f ms, median TPOT %.3f ms" % (lat["median_decode_step_ms"], srv["median_tpot_ms"]))
PY
