#!/usr/bin/env bash
# Packs everything a GPU host without registry access needs to configure and build
# fastkernels into one archive: the project's sources (tracked and new, not ignored
# files of the working tree) and every third-party build dependency:
#   .deps/include: CUTLASS/CuTe, FlashInfer, nlohmann-json, CLI11, cpp-httplib, sqlite3.h,
#                  stb_image.h and stb_image_write.h (image decoding; the tests write images)
#   .deps/lib:     libsqlite3, libcpp-httplib (Debian's build of cpp-httplib is a library)
#                  and what it links (OpenSSL, zlib, Brotli; their headers in .deps/include)
#   .deps/src:     GoogleTest sources
# Usage: scripts/pack_offline.sh [OUT.tar.gz] [--deps-only]
# On the GPU host (needs only cmake >= 3.25, ninja or make, a C++20 compiler, CUDA 13):
#   tar xzf fastkernels-offline.tar.gz && cd fastkernels
#   scripts/configure.sh build -DFK_DEPS_PREFIX=$PWD/.deps && cmake --build build
#   ctest --test-dir build -L gpu
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-dist/fastkernels-offline.tar.gz}
deps_only=0
[ "${2:-}" = "--deps-only" ] && deps_only=1
scripts/install_deps.sh

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
root="$stage/fastkernels"
mkdir -p "$root/.deps/include" "$root/.deps/lib" "$root/.deps/src"
if [ $deps_only = 0 ]; then
  git ls-files -co --exclude-standard -z | xargs -0 -I{} cp --parents {} "$root/"
fi
cp -r .deps/include/cutlass .deps/include/cute .deps/include/flashinfer "$root/.deps/include/"
cp -r /usr/include/nlohmann /usr/include/CLI /usr/include/httplib.h /usr/include/sqlite3.h "$root/.deps/include/"
[ -f /usr/include/sqlite3ext.h ] && cp /usr/include/sqlite3ext.h "$root/.deps/include/"
mkdir -p "$root/.deps/include/stb" && cp /usr/include/stb/stb_image.h /usr/include/stb/stb_image_write.h "$root/.deps/include/stb/"
lib=$(ldconfig -p | awk '/libsqlite3\.so\.0 .*x86-64/ {print $NF; exit}')
[ -n "$lib" ] || { echo "pack: libsqlite3.so.0 not found" >&2; exit 1; }
cp -L "$lib" "$root/.deps/lib/libsqlite3.so.0"
ln -s libsqlite3.so.0 "$root/.deps/lib/libsqlite3.so"
httplib=$(ldconfig -p | awk '/libcpp-httplib\.so\.0\.11 .*x86-64/ {print $NF; exit}')
if [ -n "$httplib" ]; then
  cp -L "$httplib" "$root/.deps/lib/libcpp-httplib.so.0.11"
  ln -s libcpp-httplib.so.0.11 "$root/.deps/lib/libcpp-httplib.so"
  # Debian builds it with OpenSSL, zlib and Brotli, and its header includes theirs under
  # those switches: a host without their -dev packages needs the headers and libraries.
  cp -r /usr/include/openssl "$root/.deps/include/"
  cp -r /usr/include/x86_64-linux-gnu/openssl/. "$root/.deps/include/openssl/" 2>/dev/null || true
  cp /usr/include/zlib.h /usr/include/zconf.h "$root/.deps/include/"
  cp -r /usr/include/brotli "$root/.deps/include/"
  for l in libssl.so.3 libcrypto.so.3 libz.so.1 libbrotlidec.so.1 libbrotlienc.so.1 libbrotlicommon.so.1; do
    cp -L "/lib/x86_64-linux-gnu/$l" "$root/.deps/lib/"
  done
fi
cp -r /usr/src/googletest "$root/.deps/src/googletest"
mkdir -p "$(dirname "$out")"
tar -C "$stage" -czf "$out" fastkernels
echo "pack: wrote $out ($(du -h "$out" | cut -f1))"
