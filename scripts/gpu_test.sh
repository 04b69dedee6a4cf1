#!/usr/bin/env bash
# On a GPU machine: builds the CUDA configuration (Release, sm_90a) and runs the whole
# test suite, GPU-labelled tests included, then `fk ops check --backend cuda`.
# Without registry access, unpack an offline pack first (scripts/pack_offline.sh) or
# pass FK_OFFLINE_DEPS=path/to/deps.tar.gz (made with --deps-only) to unpack its .deps/.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${FK_BUILD_DIR:-build-gpu}
if [ -n "${FK_OFFLINE_DEPS:-}" ] && [ ! -d .deps/include/cutlass ]; then
  tar xzf "$FK_OFFLINE_DEPS" --strip-components=1 fastkernels/.deps
fi
scripts/configure.sh "$build" -DFK_DEPS_PREFIX="$PWD/.deps" -DCMAKE_BUILD_TYPE=Release
cmake --build "$build" -j "$(nproc)"
ctest --test-dir "$build" -j "${FK_TEST_JOBS:-4}" --output-on-failure --timeout 900 ${FK_CTEST_ARGS:-}
"$build/bin/fk" ops check --backend cuda
