#!/usr/bin/env bash
# Regenerates every generated artefact from the core's public header:
#   core/abi/api.json + symbols.txt (extract_api.py), then each binding's
#   generator generators/<lang>/gen.sh (bindgen, cgo header copies and
#   constants, SWIG for Java, generators/lua/gen.lua for Lua 5.4 and LuaJIT).
# With --check nothing in the tree changes: each artefact is regenerated in
# a temporary place and compared; any difference is reported and the exit
# code is 1 ("stale: run ./dev.sh regen").
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
