#!/usr/bin/env bash
# Regenerates every generated artefact from the core's public header, which
# exactly one tool reads:
#   1. generators/extract_api.py (clang's AST and a compiled layout probe)
#      writes core/abi/api.json, the one description of the API (functions,
#      constants, types with their layouts), and core/abi/symbols.txt;
#   2. each binding's generator generators/<lang>/gen.sh reads api.json:
#      Python's cffi cdef and LuaJIT's ffi.cdef come from the one
#      C-declarations emitter generators/cdecl.py, the Lua 5.4 C layer from
#      generators/lua/gen.lua, Java's JNI layer from SWIG over the header
#      cdecl.py writes, Go's constants and layouts from generators/go; Rust:
#      generators/rust (see its gen.sh).
# With --check nothing in the tree changes: each artefact is regenerated in
# a temporary place and compared; any difference is reported and the exit
# code is 1 ("stale: run ./dev.sh regen"). --check also compiles cdecl.py's
# declarations with _Static_asserts of api.json's layouts (and has LuaJIT and
# cffi, where installed, lay them out).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mode="${1:-}"
status=0

if [ "$mode" = "--check" ]; then
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  python3 "$ROOT/generators/extract_api.py" --out-dir "$tmp"
  for f in api.json symbols.txt; do
    if ! diff -u "$ROOT/core/abi/$f" "$tmp/$f" >"$tmp/$f.diff"; then
      head -40 "$tmp/$f.diff"
      echo "stale: core/abi/$f differs from what ferry.h gives: run ./dev.sh regen" >&2
      status=1
    fi
  done
  python3 "$ROOT/generators/cdecl.py" --check || status=1
else
  python3 "$ROOT/generators/extract_api.py"
fi

for gen in "$ROOT"/generators/*/gen.sh; do
  [ -e "$gen" ] || continue
  lang="$(basename "$(dirname "$gen")")"
  if [ "$mode" = "--check" ]; then
    check="$(dirname "$gen")/check.sh"
    if [ -e "$check" ]; then
      bash "$check" || { echo "stale: generated $lang code: run ./dev.sh regen" >&2; status=1; }
    else
      bash "$gen" --check || { echo "stale: generated $lang code: run ./dev.sh regen" >&2; status=1; }
    fi
  else
    bash "$gen"
  fi
done
if [ "$mode" = "--check" ] && [ "$status" -eq 0 ]; then
  echo "generated code is fresh"
fi
exit "$status"
