#!/usr/bin/env bash
# The engine on a GPU: HF-golden checks, then the benchmark figures of the engine issue
# (Llama-3.1-8B shapes, bf16, dummy weights), each as a JSON file in OUT_DIR.
#
#   scripts/gpu_engine_bench.sh BIN_DIR OUT_DIR
#
# BIN_DIR holds `fk` and, optionally, engine_golden_gpu_test (a build's bin/ and tests/).
# Every step has a time limit and the script goes on after a failure, so one broken step
# still leaves the others' results.
set -u
BIN=${1:?BIN_DIR}
OUT=${2:?OUT_DIR}
MODEL=${FK_BENCH_MODEL:-llama-3.1-8b}
mkdir -p "$OUT"
step() {  # step NAME SECONDS CMD...
  local name=$1 secs=$2
  shift 2
  echo "=== $name"
  local t0=$SECONDS
  timeout "$secs" "$@" > "$OUT/$name.log" 2>&1
  local rc=$?
  echo "rc=$rc in $((SECONDS - t0)) s"
  tail -n 25 "$OUT/$name.log"
}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
if [ -x "$BIN/engine_golden_gpu_test" ]; then step golden_gpu 120 "$BIN/engine_golden_gpu_test"; fi
step latency_bs1 150 "$BIN/fk" bench latency --model "$MODEL" --device cuda --batch-size 1 --input-len 128 \
  --output-len 128 --warmup 1 --iters 3 --json-out "$OUT/latency_bs1.json"
step prefill_8k 120 "$BIN/fk" bench latency --model "$MODEL" --device cuda --batch-size 1 --input-len 8192 \
  --output-len 1 --warmup 1 --iters 3 --json-out "$OUT/prefill_8k.json"
step throughput 240 "$BIN/fk" bench throughput --model "$MODEL" --device cuda --num-prompts 1000 \
  --input-range 128:1024 --output-range 128:1024 --json-out "$OUT/throughput.json"
