#!/usr/bin/env bash
# Regenerates bindings/rust/ferry-arrow-sys/src/bindings.rs from the one API
# description, core/abi/api.json (extract_api.py's output), with
# generators/rust/gen.py: extern "C" functions, #[repr(C)] structs with
# compile-time layout assertions, constants, type aliases. No tool other than
# python3 takes part, so the text depends on api.json and gen.py alone.
#
#   generators/rust/gen.sh            write the file
#   generators/rust/gen.sh --check    regenerate into a temp file and fail
#                                     (exit 1) when the committed file differs
#   generators/rust/gen.sh --stdout   print the generated text
set -euo pipefail
ROOT="${FERRY_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
OUT="$ROOT/bindings/rust/ferry-arrow-sys/src/bindings.rs"
GEN=(python3 "$ROOT/generators/rust/gen.py" --api "$ROOT/core/abi/api.json")
mode="${1:-write}"

case "$mode" in
  write|"") "${GEN[@]}" --out "$OUT" ;;
  --stdout) "${GEN[@]}" ;;
  --check)
    tmp="$(mktemp)"
    trap 'rm -f "$tmp" "$tmp.diff"' EXIT
    "${GEN[@]}" --out "$tmp"
    if ! diff -u "$OUT" "$tmp" >"$tmp.diff" 2>&1; then
      head -40 "$tmp.diff" >&2
      echo "bindings.rs is stale: run ./dev.sh regen" >&2
      exit 1
    fi
    ;;
  *) echo "usage: gen.sh [--check|--stdout]" >&2; exit 2 ;;
esac
