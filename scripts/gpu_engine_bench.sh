#!/usr/bin/env bash
# The engine on a GPU: HF-golden checks, then the benchmark figures of the engine and serve
# issues (Llama-3.1-8B shapes, bf16, dummy weights), each as a JSON file in OUT_DIR.
#
#   scripts/gpu_engine_bench.sh BIN_DIR OUT_DIR
#
# BIN_DIR holds `fk` and, optionally, models_llm_golden_gpu_test (a build's bin/ and tests/).
# Every step has a time limit and the script goes on after a failure, so one broken step
# still leaves the others' results. Logs go to OUT_DIR/logs.tgz at the end, so that OUT_DIR
# holds few files (the JSON results and one archive). FK_BENCH_MODEL, FK_BENCH_DEVICE and
# FK_BENCH_QUICK=1 (small counts) let the same script be tried on a CPU with a tiny model;
# FK_BENCH_PORT (default 18431) moves the server; FK_BENCH_STEPS (space-separated step
# names, default all) runs only those steps, e.g. "latency_target serve_rate1
# serve_rate1_mixed" for the serving TPOT target.
#
# The serving TPOT target compares the median TPOT at 1 request/s with the batch-1 decode
# step of `fk bench latency`, so both take the same requests: 1024 prompt tokens and 128
# output tokens (latency_target, serve_rate1; also the default random dataset of vLLM's
# serving benchmark). serve_rate1_mixed replays the offline throughput set (128-1024 tokens
# in and out) at the same rate: its long outputs keep about four requests running, so it
# measures decode at batches of 2-8 rather than serving overhead.
set -u
BIN=${1:?BIN_DIR}
OUT=${2:?OUT_DIR}
MODEL=${FK_BENCH_MODEL:-llama-3.1-8b}
DEVICE=${FK_BENCH_DEVICE:-cuda}
QUICK=${FK_BENCH_QUICK:-0}
STEPS=${FK_BENCH_STEPS:-all}
if [ "$QUICK" = 1 ]; then
  LAT_IN=16 LAT_OUT=8 PREFILL=64 THR_N=20 THR_RANGE=8:32 SERVE_N=10 SERVE_SAT=20 VOCAB=256
  TARGET_IN=16 TARGET_OUT=8 TARGET_N=10
else
  LAT_IN=128 LAT_OUT=128 PREFILL=8192 THR_N=1000 THR_RANGE=128:1024 SERVE_N=60 SERVE_SAT=1000 VOCAB=128256
  TARGET_IN=1024 TARGET_OUT=128 TARGET_N=100
fi
mkdir -p "$OUT/logs"
wanted() { [ "$STEPS" = all ] || [[ " $STEPS " == *" $1 "* ]]; }
step() {  # step NAME SECONDS CMD...
  local name=$1 secs=$2
  shift 2
  wanted "$name" || return 0
  echo "=== $name"
  local t0=$SECONDS
  timeout "$secs" "$@" > "$OUT/logs/$name.log" 2>&1
  local rc=$?
  echo "rc=$rc in $((SECONDS - t0)) s"
  tail -n 25 "$OUT/logs/$name.log"
}
[ "$DEVICE" = cuda ] && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
if [ -x "$BIN/models_llm_golden_gpu_test" ]; then step golden_gpu 120 "$BIN/models_llm_golden_gpu_test"; fi
step latency_bs1 150 "$BIN/fk" bench latency --model "$MODEL" --device "$DEVICE" --batch-size 1 --input-len "$LAT_IN" \
  --output-len "$LAT_OUT" --warmup 1 --iters 3 --json-out "$OUT/latency_bs1.json"
step latency_target 150 "$BIN/fk" bench latency --model "$MODEL" --device "$DEVICE" --batch-size 1 \
  --input-len "$TARGET_IN" --output-len "$TARGET_OUT" --warmup 1 --iters 3 --json-out "$OUT/latency_target.json"
step prefill_8k 120 "$BIN/fk" bench latency --model "$MODEL" --device "$DEVICE" --batch-size 1 --input-len "$PREFILL" \
  --output-len 1 --warmup 1 --iters 3 --json-out "$OUT/prefill_8k.json"
step throughput 240 "$BIN/fk" bench throughput --model "$MODEL" --device "$DEVICE" --num-prompts "$THR_N" \
  --input-range "$THR_RANGE" --output-range "$THR_RANGE" --json-out "$OUT/throughput.json"

# Serving: fk serve in the background, then fk bench serve at 1 request/s (median TPOT vs
# the batch-1 decode step of latency_target) and at saturation: the offline benchmark's
# request count and lengths, all sent at once (output tokens/s vs the offline figure).
if wanted serve_rate1 || wanted serve_rate1_mixed || wanted serve_saturation; then
  PORT=${FK_BENCH_PORT:-18431}
  "$BIN/fk" serve "$MODEL" --device "$DEVICE" --port "$PORT" > "$OUT/logs/serve_server.log" 2>&1 &
  SERVER=$!
  for _ in $(seq 1 300); do
    curl -sf "http://127.0.0.1:$PORT/health" > /dev/null 2>&1 && break
    sleep 1
  done
  step serve_rate1 200 "$BIN/fk" bench serve --port "$PORT" --num-prompts "$TARGET_N" --request-rate 1 \
    --input-range "$TARGET_IN:$TARGET_IN" --output-range "$TARGET_OUT:$TARGET_OUT" --vocab "$VOCAB" \
    --json-out "$OUT/serve_rate1.json"
  step serve_rate1_mixed 200 "$BIN/fk" bench serve --port "$PORT" --num-prompts "$SERVE_N" --request-rate 1 \
    --input-range "$THR_RANGE" --output-range "$THR_RANGE" --vocab "$VOCAB" --json-out "$OUT/serve_rate1_mixed.json"
  step serve_saturation 240 "$BIN/fk" bench serve --port "$PORT" --num-prompts "$SERVE_SAT" \
    --input-range "$THR_RANGE" --output-range "$THR_RANGE" --vocab "$VOCAB" --json-out "$OUT/serve_saturation.json"
  kill "$SERVER" 2>/dev/null
  wait "$SERVER" 2>/dev/null
  tail -n 5 "$OUT/logs/serve_server.log"
fi
tar czf "$OUT/logs.tgz" -C "$OUT" logs && rm -rf "$OUT/logs"
