#!/usr/bin/env bash
# Regenerates the Lua binding's generated files from core/include/ferry/ferry.h:
#   bindings/lua/src/generated/ferry_core_wrap.c  (SWIG 4.1, from ferry_lua.i)
#   bindings/lua/ferry/cdef.lua                   (LuaJIT ffi.cdef, via gcc -E of ferry.h
#                                                  and ferry/dlpack_abi.h)
# Usage: gen.sh            regenerate in place
#        gen.sh --check    regenerate into a temporary directory and diff;
#                          exits 1 with "stale: run ./dev.sh regen" when different.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
mode="${1:-write}"

generate() { # $1: output directory (gets ferry_core_wrap.c and cdef.lua)
  local out="$1" scratch
  scratch="$(mktemp -d)"
  # Relative paths keep absolute directories out of the generated text.
  (cd "$HERE" && swig -lua -I../../core/include -I../../bindings/lua/src \
    -o "$scratch/ferry_core_wrap.c" ferry_lua.i)
  # SWIG names the header it was run on; nothing else varies between runs.
  cp "$scratch/ferry_core_wrap.c" "$out/ferry_core_wrap.c"
  # ferry.h, plus the DLPack structures its DLPack functions exchange (the
  # FFI reads tensor fields directly).
  (cd "$ROOT" && printf '#include "ferry/ferry.h"\n#include "ferry/dlpack_abi.h"\n' >"$scratch/all.h" &&
    gcc -E -D'__attribute__(x)=' -Icore/include "$scratch/all.h" >"$scratch/ferry.i" &&
    gcc -dM -E -Icore/include "$scratch/all.h" >"$scratch/macros.txt")
  lua5.4 "$HERE/gen_cdef.lua" "$scratch/ferry.i" "$scratch/macros.txt" >"$out/cdef.lua"
  rm -rf "$scratch"
}

case "$mode" in
  write)
    tmp="$(mktemp -d)"
    trap 'rm -rf "$tmp"' EXIT
    generate "$tmp"
    mkdir -p "$ROOT/bindings/lua/src/generated"
    cp "$tmp/ferry_core_wrap.c" "$ROOT/bindings/lua/src/generated/ferry_core_wrap.c"
    cp "$tmp/cdef.lua" "$ROOT/bindings/lua/ferry/cdef.lua"
    ;;
  --check)
    tmp="$(mktemp -d)"
    trap 'rm -rf "$tmp"' EXIT
    generate "$tmp"
    stale=0
    diff -q "$tmp/ferry_core_wrap.c" "$ROOT/bindings/lua/src/generated/ferry_core_wrap.c" \
      >/dev/null 2>&1 || { echo "stale: bindings/lua/src/generated/ferry_core_wrap.c"; stale=1; }
    diff -q "$tmp/cdef.lua" "$ROOT/bindings/lua/ferry/cdef.lua" >/dev/null 2>&1 ||
      { echo "stale: bindings/lua/ferry/cdef.lua"; stale=1; }
    if [ "$stale" -ne 0 ]; then
      echo "stale: run ./dev.sh regen"
      exit 1
    fi
    echo "generated Lua files are fresh"
    ;;
  *) echo "usage: gen.sh [--check]" >&2; exit 2 ;;
esac
