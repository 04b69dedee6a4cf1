#!/usr/bin/env bash
# configure.sh BUILD_DIR [cmake args...]: configures with CUDA when nvcc exists, else CPU-only.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=$1; shift
[ -x /usr/local/cuda/bin/nvcc ] && export PATH="/usr/local/cuda/bin:$PATH"
cuda_flag=ON
command -v nvcc >/dev/null 2>&1 || cuda_flag=OFF
cmake -S . -B "$build_dir" -G Ninja -DFK_CUDA=$cuda_flag "$@" >/dev/null
echo "configured $build_dir (CUDA $cuda_flag$(for a in "$@"; do printf ' %s' "$a"; done))"
