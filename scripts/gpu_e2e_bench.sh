#!/usr/bin/env bash
# On a GPU machine: the end-to-end evaluation of Llama-3.1-8B shapes with the CUDA
# candidates of tests/harness/e2e/candidates_cuda: the honest faster fused_add_rms_norm and its
# control (the same kernel without the weight prefetch) on latency-1, latency-32 and mixed
# (each evaluation: 3 alternating pairs of engine runs), and the degrading one on
# latency-1 and mixed. One report JSON per evaluation in OUT.
#   scripts/gpu_e2e_bench.sh BIN_DIR OUT
set -u
BIN=${1:?BIN_DIR}
OUT=${2:?OUT}
C="$(dirname "$0")/../tests/harness/e2e/candidates_cuda"
mkdir -p "$OUT"
status=0
ev() {  # ev NAME CANDIDATES WORKLOAD
  echo "== $1"
  "$BIN/fk" e2e eval --model llama-3.1-8b --device cuda --no-db --candidates "$2" --workload "$3" \
    --json "$OUT/$1.json" > "$OUT/$1.log" 2>&1 || status=1
  grep -E '"verdict"|"elapsed":|"exact_match_rate"' "$OUT/$1.json" | head -4
}
for w in latency-1 latency-32 mixed; do
  ev "control_$w" "$C/control" $w
  ev "honest_$w" "$C/honest_faster" $w
done
ev degrading_latency-1 "$C/degrading" latency-1
ev degrading_mixed "$C/degrading" mixed
exit $status
