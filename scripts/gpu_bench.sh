#!/usr/bin/env bash
# On a GPU machine: measures the device's ceilings and every benchmark figure, writing
# JSON into RESULTS_DIR (default bench/results/<device>): the ceilings (fk env --measure),
# every op's CUDA baseline (fk ops bench), PyTorch eager and torch.compile on the same
# shapes (when PyTorch is installed), the baseline evaluated against itself on every task
# (the harness's noise floor), and the GPU adversarial candidates' verdicts.
# Usage: scripts/gpu_bench.sh [BUILD_DIR] [RESULTS_DIR]
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-gpu}
fk="$build/bin/fk"
device=$("$fk" env --json | python3 -c 'import json,sys; d=json.load(sys.stdin); g=d.get("gpus") or d.get("devices") or [{}]; print((g[0].get("name") or "unknown").replace(" ","-"))' 2>/dev/null || echo unknown)
results=${2:-bench/results/$device}
mkdir -p "$results"
export FK_HOME=${FK_HOME:-$PWD/$build/fk-home}
export FK_RESULTS_DB="$results/../results-$device.db"
status=0
run() {  # run NAME COMMAND...: logs the command with its output
  local name=$1; shift
  echo "== $name: $*"
  "$@" 2>&1 | tee "$results/$name.log" || status=1
}
run env "$fk" env --json
run ceilings "$fk" env --measure
cp "$FK_HOME"/ceilings/*.json "$results/" 2>/dev/null
run ops_bench "$fk" ops bench --json "$results/ops_bench.json"
if python3 -c 'import torch' 2>/dev/null; then
  run torch_bench python3 bench/torch_ops_bench.py --json "$results/torch_ops_bench.json"
fi
run noise_floor "$fk" kernels eval --backend cuda --candidate baseline --json "$results/noise_floor.json"
exit $status
