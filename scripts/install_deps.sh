#!/usr/bin/env bash
# Installs every build dependency: Debian packages (skipped when present) and the pinned
# CUTLASS/CuTe + FlashInfer headers into .deps/. FK_SKIP_APT=1 skips the Debian step
# (for machines where the packages are known to be there, or no apt exists).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.env
if [ "${FK_SKIP_APT:-0}" != 1 ] && command -v apt-get >/dev/null 2>&1; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  missing=$(for p in $FK_APT_PACKAGES; do dpkg -s "$p" >/dev/null 2>&1 || echo "$p"; done)
  if [ -n "$missing" ]; then
    echo "deps: installing Debian packages:" $missing
    $SUDO apt-get update -qq
    # shellcheck disable=SC2086
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
  fi
fi
scripts/install_gpu_headers.sh
