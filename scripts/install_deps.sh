#!/usr/bin/env bash
# Installs every build dependency: Debian packages (skipped when present), the Python
# packages the tests use as clients, and the pinned CUTLASS/CuTe + FlashInfer headers into
# .deps/. FK_SKIP_APT=1 skips the Debian step
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
for pkg in $FK_PIP_TEST_PACKAGES; do
  name=${pkg%%==*}
  want=${pkg#*==}
  have=$(python3 -c "import importlib.metadata as m; print(m.version('$name'))" 2>/dev/null || true)
  if [ "$have" != "$want" ]; then
    echo "deps: installing $pkg (test client)"
    python3 -m pip install --quiet --disable-pip-version-check "$pkg"
  fi
done
scripts/install_gpu_headers.sh
