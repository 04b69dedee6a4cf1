#!/usr/bin/env bash
# The test command (README; CI runs it through .ci/run). Installs dependencies, builds
# both configurations — CPU-only (FK_CUDA=OFF) and, when nvcc exists, CUDA — and runs
# the test suite of each. Tests labelled `gpu` skip cleanly on a machine without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
jobs=${FK_JOBS:-$(nproc)}

scripts/configure.sh build-cpu -DFK_CUDA=OFF
cmake --build build-cpu -j "$jobs"
ctest --test-dir build-cpu -j "$jobs" --output-on-failure --timeout 600

if command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then
  scripts/configure.sh build
  cmake --build build -j "$jobs"
  ctest --test-dir build -j "$jobs" --output-on-failure --timeout 600
else
  echo "test: nvcc not found, CUDA configuration not built"
fi
