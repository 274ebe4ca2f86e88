#!/usr/bin/env bash
# Installs what ferry needs on a Debian 12 machine, idempotently and quietly:
# only missing packages are installed, and nothing is printed when all are
# present. Usage: deps.sh core|all
set -euo pipefail
what="${1:-all}"

core_pkgs=(cmake ninja-build gcc g++ make pkg-config clang-14 libclang-rt-14-dev llvm-14)
all_pkgs=("${core_pkgs[@]}" lua5.4 liblua5.4-dev luajit libluajit-5.1-dev lua-busted luarocks
  swig bazel-bootstrap libamdhip64-dev pocl-opencl-icd ocl-icd-opencl-dev bindgen clang-format
  valgrind)

pkgs=("${core_pkgs[@]}")
[ "$what" = all ] && pkgs=("${all_pkgs[@]}")

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "deps: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO=sudo
  export DEBIAN_FRONTEND=noninteractive
  if ! $SUDO apt-get install -y -qq "${missing[@]}" >/tmp/ferry-apt.log 2>&1; then
    $SUDO apt-get update -qq >/dev/null 2>&1
    $SUDO apt-get install -y -qq "${missing[@]}" >/tmp/ferry-apt.log 2>&1 ||
      { cat /tmp/ferry-apt.log; exit 1; }
  fi
fi

# Extra steps contributed by components (CUDA headers from PyPI, ...).
ROOT="${FERRY_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
if [ "$what" = all ]; then
  for extra in "$ROOT"/scripts/deps.d/*.sh; do
    [ -e "$extra" ] && bash "$extra"
  done
fi
exit 0
