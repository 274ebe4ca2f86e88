#!/usr/bin/env bash
# Installs what ferry needs on a Debian 12 machine, idempotently and quietly:
# only missing packages are installed, and nothing is printed when all are
# present. Usage: deps.sh core|fuzz|all
#   core  what building the core needs (a C compiler, CMake): no clang, no LLVM
#   fuzz  clang-14 with libFuzzer and llvm-symbolizer (scripts/fuzz.sh asks for it)
#   all   everything the test command needs, then scripts/deps.d/*.sh
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
what="${1:-all}"

core_pkgs=(cmake ninja-build gcc g++ make pkg-config)
fuzz_pkgs=(clang-14 libclang-rt-14-dev llvm-14)
all_pkgs=("${core_pkgs[@]}" "${fuzz_pkgs[@]}" lua5.4 liblua5.4-dev luajit libluajit-5.1-dev
  lua-busted luarocks swig bazel-bootstrap libamdhip64-dev pocl-opencl-icd ocl-icd-opencl-dev
  clang-format valgrind)

case "$what" in
  core) pkgs=("${core_pkgs[@]}") ;;
  fuzz) pkgs=("${fuzz_pkgs[@]}") ;;
  all) pkgs=("${all_pkgs[@]}") ;;
  *) echo "usage: deps.sh core|fuzz|all" >&2; exit 2 ;;
esac

apt_install "$what" "${pkgs[@]}"

# Extra steps contributed by components (CUDA headers from PyPI, ...).
if [ "$what" = all ]; then
  for extra in "$ROOT"/scripts/deps.d/*.sh; do
    [ -e "$extra" ] && bash "$extra"
  done
fi
exit 0
