#!/usr/bin/env bash
# Two builds of the engine side by side on one GPU: the end-to-end figures a change must
# keep, each run by both binaries in alternating order (A B B A ...) so that drift of the
# machine falls on both. Writes OUT_DIR/ab.json (every run, the medians per side and the
# ratio new / base) and the runs' JSON and logs beside it.
#
#   scripts/gpu_ab_bench.sh BASE_FK NEW_FK OUT_DIR
#
# The figures: Llama-3.1-8B batch-1 decode at 1k context (1024 + 128 tokens), Qwen3-30B-A3B
# batch-1 decode (128 + 128) and Llama-3.1-8B offline throughput (1,000 requests, 128-1024
# tokens in and out), dummy weights. FK_AB_REPEATS (default 2) sets the pairs per figure,
# FK_AB_FIGURES (names, space-separated; default all) which figures run, so a long session
# can be split over several calls into one OUT_DIR (the summary covers what is there);
# FK_AB_QUICK=1 runs tiny models on the CPU, to try the script without a GPU.
set -u
BASE=${1:?BASE_FK}
NEW=${2:?NEW_FK}
OUT=${3:?OUT_DIR}
REPEATS=${FK_AB_REPEATS:-2}
mkdir -p "$OUT/runs"
if [ "${FK_AB_QUICK:-0}" = 1 ]; then
  DEV=cpu LLAMA=tiny-llama MOE=tiny-qwen3-moe LAT_IN=16 LAT_OUT=8 THR_N=10 THR_RANGE=8:16
else
  DEV=cuda LLAMA=llama-3.1-8b MOE=qwen3-30b-a3b LAT_IN=1024 LAT_OUT=128 THR_N=1000 THR_RANGE=128:1024
fi
figures=(
  "llama_bs1_1k|bench latency --model $LLAMA --device $DEV --batch-size 1 --input-len $LAT_IN --output-len $LAT_OUT --warmup 1 --iters 3"
  "qwen3_moe_bs1|bench latency --model $MOE --device $DEV --batch-size 1 --input-len 128 --output-len $LAT_OUT --warmup 1 --iters 3"
  "llama_throughput|bench throughput --model $LLAMA --device $DEV --num-prompts $THR_N --input-range $THR_RANGE --output-range $THR_RANGE"
)
run() {  # run SIDE BIN FIGURE ARGS REPEAT
  local json="$OUT/runs/$3.$1.$5.json"
  # shellcheck disable=SC2086
  if timeout 600 "$2" $4 --json-out "$json" > "$OUT/runs/$3.$1.$5.log" 2>&1; then
    echo "$3 $1 #$5 ok"
  else
    echo "$3 $1 #$5 FAILED (rc $?)"; tail -n 5 "$OUT/runs/$3.$1.$5.log"
  fi
}
for fig in "${figures[@]}"; do
  name=${fig%%|*}
  args=${fig#*|}
  [ -z "${FK_AB_FIGURES:-}" ] || [[ " $FK_AB_FIGURES " == *" $name "* ]] || continue
  for ((r = 0; r < REPEATS; r++)); do
    if ((r % 2 == 0)); then run base "$BASE" "$name" "$args" "$r"; run new "$NEW" "$name" "$args" "$r"
    else run new "$NEW" "$name" "$args" "$r"; run base "$BASE" "$name" "$args" "$r"; fi
  done
done
python3 - "$OUT" "$BASE" "$NEW" <<'EOF'
import glob, json, os, statistics, sys
out, base, new = sys.argv[1:4]
metrics = {"llama_bs1_1k": "median_decode_step_ms", "qwen3_moe_bs1": "median_decode_step_ms",
           "llama_throughput": "output_tokens_per_s"}
result = {"base": base, "new": new, "figures": {}}
for name, key in metrics.items():
    fig = {"metric": key, "runs": {"base": [], "new": []}}
    for side in ("base", "new"):
        for f in sorted(glob.glob(os.path.join(out, "runs", f"{name}.{side}.*.json"))):
            d = json.load(open(f))
            fig["runs"][side].append(d.get(key))
            fig.setdefault("command", d.get("command"))
            result.setdefault("device", (d.get("device") or {}).get("name", d.get("backend")))
    b, n = [v for v in fig["runs"]["base"] if v], [v for v in fig["runs"]["new"] if v]
    if b and n:
        fig["median_base"], fig["median_new"] = statistics.median(b), statistics.median(n)
        fig["new_over_base"] = fig["median_new"] / fig["median_base"]
    result["figures"][name] = fig
json.dump(result, open(os.path.join(out, "ab.json"), "w"), indent=1)
print(f"{'figure':18} {'metric':24} {'base':>10} {'new':>10} {'new/base':>9}")
for name, f in result["figures"].items():
    if not f["runs"]["base"] and not f["runs"]["new"]:
        continue
    if "new_over_base" in f:
        print(f"{name:18} {f['metric']:24} {f['median_base']:10.4g} {f['median_new']:10.4g} {f['new_over_base']:9.4f}")
    else:
        print(f"{name:18} {f['metric']:24} missing runs: {f['runs']}")
EOF
