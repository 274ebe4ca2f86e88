#!/usr/bin/env bash
# Regenerates the Lua binding's generated files from core/abi/api.json (and
# the backend contract, bindings/lua/ferry/backend/contract.lua) with
# generators/lua/gen.lua; the declarations for LuaJIT's ffi.cdef come from
# the one C-declarations emitter, generators/cdecl.py --target luajit:
#   bindings/lua/ferry/abi.lua                    LuaJIT's cdef, the constants and the
#                                                 roles of every function (both backends)
#   bindings/lua/src/generated/lferry_raw.c       the Lua 5.4 raw layer
#   bindings/lua/src/generated/lferry_helpers.h   the Lua 5.4 C helpers' declarations
# Needs python3 and lua5.4.
# Usage: gen.sh            regenerate in place
#        gen.sh --check    regenerate into a temporary directory and diff;
#                          exits 1 with "stale: run ./dev.sh regen" when different.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
mode="${1:-write}"
# generated file -> its place in the tree
FILES=("abi.lua:bindings/lua/ferry/abi.lua"
       "lferry_raw.c:bindings/lua/src/generated/lferry_raw.c"
       "lferry_helpers.h:bindings/lua/src/generated/lferry_helpers.h")

generate() { # $1: output directory
  local out="$1" scratch
  scratch="$(mktemp -d)"
  python3 "$ROOT/generators/cdecl.py" --target luajit --api "$ROOT/core/abi/api.json" \
    --out "$scratch/cdef.h"
  lua5.4 "$HERE/gen.lua" "$ROOT/core/abi/api.json" "$scratch/cdef.h" \
    "$ROOT/bindings/lua/ferry/backend/contract.lua" "$out"
  rm -rf "$scratch"
}

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
generate "$tmp"
case "$mode" in
  write)
    mkdir -p "$ROOT/bindings/lua/src/generated"
    for f in "${FILES[@]}"; do cp "$tmp/${f%%:*}" "$ROOT/${f#*:}"; done
    ;;
  --check)
    stale=0
    for f in "${FILES[@]}"; do
      diff -q "$tmp/${f%%:*}" "$ROOT/${f#*:}" >/dev/null 2>&1 || { echo "stale: ${f#*:}"; stale=1; }
    done
    if [ "$stale" -ne 0 ]; then
      echo "stale: run ./dev.sh regen"
      exit 1
    fi
    echo "generated Lua files are fresh"
    ;;
  *) echo "usage: gen.sh [--check]" >&2; exit 2 ;;
esac
