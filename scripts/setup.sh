#!/usr/bin/env bash
# Sets up a fresh machine and runs the main job on the embedded default:
# installs dependencies, builds `fk` (CUDA when nvcc exists, else CPU-only), and checks
# every op on every available backend against the double-precision oracle.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
scripts/configure.sh build
cmake --build build --target fk_cli
build/bin/fk version
build/bin/fk ops check --backend all
