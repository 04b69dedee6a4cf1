#!/usr/bin/env bash
# First look at the engine on a GPU when something fails: a traced two-token generation
# (every op printed before it runs, launches synchronous), then the same without the
# profiling pass and without CUDA graphs, to tell which part fails.
#   scripts/gpu_engine_diagnose.sh BIN_DIR [MODEL]
set -u
BIN=${1:?BIN_DIR}
MODEL=${2:-llama-3.1-8b}
echo "=== traced"
FK_OP_TRACE=1 CUDA_LAUNCH_BLOCKING=1 timeout 60 "$BIN/fk" generate --model "$MODEL" --device cuda --max-tokens 2 2>&1 | tail -n 6 | cut -c1-1500
echo "=== fixed cache size (no profiling pass), eager"
timeout 60 "$BIN/fk" generate --model "$MODEL" --device cuda --max-tokens 2 --num-pages 4000 --enforce-eager 2>&1 | tail -n 3
echo "=== fixed cache size, CUDA graphs"
timeout 60 "$BIN/fk" generate --model "$MODEL" --device cuda --max-tokens 2 --num-pages 4000 2>&1 | tail -n 3
