#!/usr/bin/env bash
# The test command (README; CI runs it through .ci/run). Installs dependencies, builds and
# runs the test suite of both configurations: with nvcc, one CUDA build whose CPU-only twin
# (FK_NOCUDA_TWIN: the CPU-only library, `fk` and tests linked from the same objects) stands
# for the FK_CUDA=OFF configuration; without nvcc, the CPU-only configuration alone. Tests
# labelled `gpu` skip cleanly on a machine without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
jobs=${FK_JOBS:-$(nproc)}
# CI (CI=true: a clean clone on two cores, no GPU) compiles the C++ at -O1: a third less
# compile time than -O3, the build being most of the job; the tests run the same code paths.
# Without a GPU nothing runs the kernels: CI compiles one instance of each attention
# template and the bf16 grouped GEMM only (FK_KERNEL_SUBSET), to check that they compile.
opt=()
[ "${CI:-}" = true ] && opt=(-DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG" -DFK_KERNEL_SUBSET=ON)
run_ctest() { ctest --test-dir "$1" -j "$jobs" --output-on-failure --timeout 600 "${@:2}"; }
# Each phase's wall time, so a slow CI run says where its minutes went.
phase() { echo "test: $1 done after ${SECONDS} s"; }
phase "dependencies"

if command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then
  scripts/configure.sh build -DFK_NOCUDA_TWIN=ON "${opt[@]}"
  cmake --build build -j "$jobs"
  phase "build"
  # A test and its twin may share temporary files: the twins run after the rest.
  run_ctest build -LE nocuda
  phase "tests"
  run_ctest build -L nocuda
  phase "CPU-only twin's tests"
else
  echo "test: nvcc not found, CUDA configuration not built"
  scripts/configure.sh build-cpu -DFK_CUDA=OFF "${opt[@]}"
  cmake --build build-cpu -j "$jobs"
  phase "build"
  run_ctest build-cpu
  phase "tests"
fi
