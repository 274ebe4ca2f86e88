#!/usr/bin/env bash
# Consumer-side validation against its peers (issue 14), in one process:
# ferry DEFAULT against nanoarrow 0.9.0's ArrowArrayViewInitFromSchema +
# ArrowArrayViewSetArray, ferry FULL against pyarrow's import +
# validate(full=True), the prepared-schema path against a reused
# ArrowArrayView, with GB/s of the FULL scans next to memcpy, then callgrind
# instruction counts per operation beside the wall time. Writes the printed
# table to docs/bench/validate.txt.
#
#   scripts/bench_validate.sh [--rounds N] [--no-callgrind]
#
# Needs network the first time (PyPI): nanoarrow's C sources come from its
# 0.9.0 sdist (under subprojects/arrow-nanoarrow), downloaded with pip into
# build/bench-validate/ and compiled with the flags of ferry's own build;
# pyarrow 26.0.1 is installed into a venv there. Nothing is committed.
set -euo pipefail
ROOT="${FERRY_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
BUILD="${FERRY_BUILD_DIR:-$ROOT/build}"
OUT="$BUILD/bench-validate"
NANOARROW_VERSION=0.9.0
PYARROW_VERSION=26.0.1
rounds=41
callgrind=1
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) rounds="$2"; shift 2 ;;
    --no-callgrind) callgrind=0; shift ;;
    -h|--help) sed -n '2,16p' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) echo "usage: bench_validate.sh [--rounds N] [--no-callgrind]" >&2; exit 2 ;;
  esac
done
mkdir -p "$OUT"
PYTHON="${PYTHON:-python3}"
# pip and venv (Debian ships them as separate packages).
if ! "$PYTHON" -m pip --version >/dev/null 2>&1 || ! "$PYTHON" -c "import ensurepip" 2>/dev/null; then
  echo "== installing python3-pip and python3-venv"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO=sudo
  export DEBIAN_FRONTEND=noninteractive
  { $SUDO apt-get install -y -qq python3-pip python3-venv ||
    { $SUDO apt-get update -qq && $SUDO apt-get install -y -qq python3-pip python3-venv; }; } \
    >"$OUT/apt.log" 2>&1 || { cat "$OUT/apt.log"; exit 1; }
fi

# --- peers ----------------------------------------------------------------------
sdist="$OUT/nanoarrow-$NANOARROW_VERSION.tar.gz"
if [ ! -f "$sdist" ]; then
  echo "== downloading nanoarrow $NANOARROW_VERSION (sdist) from PyPI"
  "$PYTHON" -m pip download --quiet --no-deps --no-binary :all: \
    "nanoarrow==$NANOARROW_VERSION" -d "$OUT" >"$OUT/pip-nanoarrow.log" 2>&1 ||
    { cat "$OUT/pip-nanoarrow.log"; exit 1; }
fi
NA="$OUT/nanoarrow-$NANOARROW_VERSION/subprojects/arrow-nanoarrow"
[ -d "$NA/src/nanoarrow" ] || tar -xzf "$sdist" -C "$OUT"
venv="$OUT/venv"
if ! "$venv/bin/python" -c "import pyarrow" 2>/dev/null; then
  echo "== installing pyarrow $PYARROW_VERSION into $venv"
  "$PYTHON" -m venv "$venv"
  "$venv/bin/pip" install --quiet "pyarrow==$PYARROW_VERSION" >"$OUT/pip-pyarrow.log" 2>&1 ||
    { cat "$OUT/pip-pyarrow.log"; exit 1; }
fi

# --- builds: ferry as usual, nanoarrow and the benchmark with the same flags ----------
bash "$ROOT/scripts/build.sh"
flags="$(sed -n 's/^CMAKE_C_FLAGS_RELWITHDEBINFO:STRING=//p' "$BUILD/CMakeCache.txt")"
[ -n "$flags" ] || flags="-O2 -g -DNDEBUG"
read -r -a cflags <<<"$flags"
cflags+=(-std=c11 -D_GNU_SOURCE -fPIC)
mkdir -p "$OUT/include/nanoarrow" "$OUT/obj"
sed -e "s/@NANOARROW_VERSION_MAJOR@/${NANOARROW_VERSION%%.*}/" \
    -e "s/@NANOARROW_VERSION_MINOR@/$(echo $NANOARROW_VERSION | cut -d. -f2)/" \
    -e "s/@NANOARROW_VERSION_PATCH@/${NANOARROW_VERSION##*.}/" \
    -e "s/@NANOARROW_VERSION@/$NANOARROW_VERSION/" \
    -e "s|@NANOARROW_NAMESPACE_DEFINE@|// no namespace|" \
    "$NA/src/nanoarrow/nanoarrow_config.h.in" >"$OUT/include/nanoarrow/nanoarrow_config.h"
includes=(-I"$ROOT/core/include" -I"$OUT/include" -I"$NA/src")
objects=()
for source in array schema utils; do
  cc "${cflags[@]}" "${includes[@]}" -c "$NA/src/nanoarrow/common/$source.c" \
    -o "$OUT/obj/nanoarrow_$source.o"
  objects+=("$OUT/obj/nanoarrow_$source.o")
done
link=(-L"$BUILD/lib" -lferry -Wl,-rpath,"$BUILD/lib")
cc "${cflags[@]}" "${includes[@]}" -DFERRY_BENCH_NANOARROW \
  "$ROOT/core/bench/validate_bench.c" "${objects[@]}" "${link[@]}" -o "$OUT/validate_bench"
cc "${cflags[@]}" "${includes[@]}" -DFERRY_BENCH_NANOARROW -DFERRY_BENCH_LIBRARY -shared \
  "$ROOT/core/bench/validate_bench.c" "${objects[@]}" "${link[@]}" \
  -o "$OUT/libvalidate_bench.so"
"$OUT/validate_bench" --check

# --- the run ------------------------------------------------------------------------
table="$OUT/validate.txt"
pin=()
command -v taskset >/dev/null && [ "$(nproc)" -gt 1 ] && pin=(taskset -c 1)
{
  echo "# scripts/bench_validate.sh, $(date -u +%Y-%m-%d), $(uname -m), $(nproc) CPUs:" \
    "$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
  "${pin[@]}" "$venv/bin/python" "$ROOT/core/bench/validate_bench.py" \
    --library "$OUT/libvalidate_bench.so" --rounds "$rounds"
} | tee "$table"

# Instruction counts: each path alone under callgrind at two iteration counts;
# the difference over the difference of operations cancels set-up and teardown.
if [ "$callgrind" = 1 ]; then
  if ! command -v valgrind >/dev/null; then
    echo "bench_validate.sh: SKIP callgrind: valgrind is not installed" | tee -a "$table"
  else
    ir() { # case mode iterations -> total Ir
      valgrind --tool=callgrind --callgrind-out-file=/dev/null "$OUT/validate_bench" \
        --case "$1" --mode "$2" --iterations "$3" 2>&1 |
        sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
    }
    {
      echo
      echo "Instructions per operation (callgrind, Ir): DEFAULT and the prepared path"
      printf '%-26s %14s %14s %8s %16s %16s %8s\n' workload ferry_default nanoarrow ratio \
        prepared_default nanoarrow_reused ratio
      for w in "int32 1k" "int32 1k, nulls" "utf8 100k" "struct<int32, utf8> 10k" \
               "list<int32> 10k" "dict<int32, utf8> 10k" "100 int32 columns x 1k"; do
        row=()
        for mode in ferry_default nanoarrow prepared_default nanoarrow_reused; do
          a="$(ir "$w" "$mode" 200)"; b="$(ir "$w" "$mode" 1200)"
          row+=("$(( (b - a) / 1000 ))")
        done
        awk -v w="$w" -v a="${row[0]}" -v b="${row[1]}" -v c="${row[2]}" -v d="${row[3]}" \
          'BEGIN { printf "%-26s %14d %14d %7.2fx %16d %16d %7.2fx\n", w, a, b, a / b, c, d, c / d }'
      done
    } | tee -a "$table"
  fi
fi
cp "$table" "$ROOT/docs/bench/validate.txt"
echo "bench_validate.sh: table written to docs/bench/validate.txt"
