#!/usr/bin/env bash
# Installs the CUDA driver API header (cuda.h) into a build-local directory,
# for the compile-time check of ferry's own CUDA declarations
# (core/gpu_check/cuda_signatures_check.c). Nothing here is linked: ferry
# loads libcuda at run time. The header comes from PyPI's
# nvidia-cuda-runtime-cu12 wheel (pinned), which ships
# nvidia/cuda_runtime/include/cuda.h. Idempotent and quiet when present.
#   destination: $FERRY_DEPS_DIR/cuda/include (default $FERRY_BUILD_DIR/deps)
# A failed download only warns (exit 0), so that the other components still
# install and test; scripts/backends_test.sh then retries and, in CI, fails.
set -euo pipefail
ROOT="${FERRY_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
DEPS="${FERRY_DEPS_DIR:-${FERRY_BUILD_DIR:-$ROOT/build}/deps}"
DEST="$DEPS/cuda/include"
WHEEL_SPEC="nvidia-cuda-runtime-cu12==12.9.79"
[ -f "$DEST/cuda.h" ] && exit 0

if ! python3 -m pip --version >/dev/null 2>&1; then
  echo "deps: installing python3-pip (to fetch cuda.h from PyPI)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq python3-pip >/tmp/ferry-apt.log 2>&1 ||
    { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq python3-pip >/tmp/ferry-apt.log 2>&1; } ||
    { cat /tmp/ferry-apt.log; echo "deps: WARNING: cannot install pip; cuda.h not installed" >&2; exit 0; }
fi
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
if ! python3 -m pip download --no-deps --quiet --disable-pip-version-check \
    --only-binary=:all: -d "$tmp" "$WHEEL_SPEC" >"$tmp/pip.log" 2>&1; then
  cat "$tmp/pip.log" >&2
  echo "deps: WARNING: could not download $WHEEL_SPEC from PyPI; cuda.h not installed" >&2
  exit 0
fi
mkdir -p "$DEST"
# Extract the one header with Python's zipfile (unzip may be absent).
python3 - "$tmp" "$DEST" <<'PY'
import glob, os, sys, zipfile
tmp, dest = sys.argv[1], sys.argv[2]
wheel = glob.glob(os.path.join(tmp, "*.whl"))[0]
with zipfile.ZipFile(wheel) as z:
    data = z.read("nvidia/cuda_runtime/include/cuda.h")
part = os.path.join(dest, "cuda.h.part")
with open(part, "wb") as f:
    f.write(data)
os.replace(part, os.path.join(dest, "cuda.h"))
PY
echo "deps: installed cuda.h ($WHEEL_SPEC) into $DEST"
