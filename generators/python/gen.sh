#!/usr/bin/env bash
# Regenerates the Python binding's raw layer from core/abi/api.json with the
# one C-declarations emitter, generators/cdecl.py:
#   bindings/python/src/ferry/_cdef.py  (CDEF: the cffi declarations of
#                                        ferry.h and ferry/dlpack_abi.h; CONSTANTS:
#                                        the integer constants; FUNCTIONS: the
#                                        function names in header order)
# Usage: gen.sh            regenerate in place
#        gen.sh --check    regenerate into a temporary file and diff;
#                          exits 1 with "stale: run ./dev.sh regen" when different.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
TARGET="$ROOT/bindings/python/src/ferry/_cdef.py"
mode="${1:-write}"

generate() { # $1: output file
  python3 "$ROOT/generators/cdecl.py" --python-module --api "$ROOT/core/abi/api.json" --out "$1"
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
