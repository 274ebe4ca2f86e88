#!/usr/bin/env bash
# Regenerates the Python binding's raw layer from core/include/ferry/ferry.h:
#   bindings/python/src/ferry/_cdef.py  (cffi declarations of ferry.h and
#                                        ferry/dlpack_abi.h via gcc -E, the
#                                        integer constants, the function names)
# Usage: gen.sh            regenerate in place
#        gen.sh --check    regenerate into a temporary file and diff;
#                          exits 1 with "stale: run ./dev.sh regen" when different.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
TARGET="$ROOT/bindings/python/src/ferry/_cdef.py"
mode="${1:-write}"

generate() { # $1: output file
  local scratch
  scratch="$(mktemp -d)"
  # Relative paths keep absolute directories out of the generated text.
  (cd "$ROOT" && printf '#include "ferry/ferry.h"\n#include "ferry/dlpack_abi.h"\n' >"$scratch/all.h" &&
    gcc -E -D'__attribute__(x)=' -Icore/include "$scratch/all.h" >"$scratch/ferry.i" &&
    gcc -dM -E -Icore/include "$scratch/all.h" >"$scratch/macros.txt")
  python3 "$HERE/gen_cdef.py" "$scratch/ferry.i" "$scratch/macros.txt" >"$1"
  rm -rf "$scratch"
}

case "$mode" in
  write)
    tmp="$(mktemp)"
    trap 'rm -f "$tmp"' EXIT
    generate "$tmp"
    mkdir -p "$(dirname "$TARGET")"
    cp "$tmp" "$TARGET"
    ;;
  --check)
    tmp="$(mktemp)"
    trap 'rm -f "$tmp"' EXIT
    generate "$tmp"
    if ! diff -q "$tmp" "$TARGET" >/dev/null 2>&1; then
      diff -u "$TARGET" "$tmp" | head -20 || true
      echo "stale: bindings/python/src/ferry/_cdef.py: run ./dev.sh regen"
      exit 1
    fi
    echo "generated Python files are fresh"
    ;;
  *) echo "usage: gen.sh [--check]" >&2; exit 2 ;;
esac
