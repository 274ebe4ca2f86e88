#!/usr/bin/env bash
# Builds the core, tool, plugin and tests with the given sanitizers
# (default address,undefined) in build/san-<name> and runs every ctest test
# there. Any report fails the run (-fno-sanitize-recover, halt_on_error).
set -euo pipefail
ROOT="${FERRY_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
BUILD="${FERRY_BUILD_DIR:-$ROOT/build}"
san="${1:-address,undefined}"
dir="$BUILD/san-${san//,/-}"
generator=(); command -v ninja >/dev/null && generator=(-G Ninja)
cmake -S "$ROOT" -B "$dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=Debug -DFERRY_SANITIZE="$san" >/dev/null
cmake --build "$dir" -j"$(nproc)" >"$dir.build.log" 2>&1 || { cat "$dir.build.log"; exit 1; }
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:halt_on_error=1:strict_string_checks=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
export TSAN_OPTIONS="halt_on_error=1"
ctest --test-dir "$dir" --output-on-failure -j2
