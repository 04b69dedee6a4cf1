#!/usr/bin/env bash
# Installs the CUTLASS/CuTe and FlashInfer headers from their pinned wheels into
# .deps/include (no Python dependencies; the wheels are zip files). Skips what is there.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.env
PREFIX=${FK_DEPS_PREFIX:-$PWD/.deps}
mkdir -p "$PREFIX/include" "$PREFIX/wheels"
stamp="$PREFIX/include/.gpu-headers-$(echo "$FK_CUTLASS_WHEEL $FK_FLASHINFER_WHEEL" | md5sum | cut -c1-12)"
[ -f "$stamp" ] && exit 0
echo "setup: fetching $FK_CUTLASS_WHEEL and $FK_FLASHINFER_WHEEL (headers only)"
python3 -m pip download -q --no-deps --only-binary=:all: -d "$PREFIX/wheels" "$FK_CUTLASS_WHEEL" "$FK_FLASHINFER_WHEEL"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
unzip -q -o "$PREFIX"/wheels/nvidia_cutlass-*.whl 'cutlass_library/source/include/*' -d "$tmp"
unzip -q -o "$PREFIX"/wheels/flashinfer_python-*.whl 'flashinfer/data/include/*' -d "$tmp"
rm -rf "$PREFIX/include/cutlass" "$PREFIX/include/cute" "$PREFIX/include/flashinfer"
cp -r "$tmp"/cutlass_library/source/include/* "$PREFIX/include/"
cp -r "$tmp"/flashinfer/data/include/* "$PREFIX/include/"
rm -f "$PREFIX"/include/.gpu-headers-*
touch "$stamp"
echo "setup: GPU headers in $PREFIX/include"
