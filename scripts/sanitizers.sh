#!/usr/bin/env bash
# Runs every ctest test of the sanitizer build (default address,undefined) in
# build/san-<name>: the core, tool, harness, C plugin and their tests built
# with -fsanitize (scripts/build.sh --sanitize, a no-op when scripts/test.sh's
# build step built it already). Any report fails the run
# (-fno-sanitize-recover, halt_on_error).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
san="${1:-address,undefined}"
bash "$ROOT/scripts/build.sh" --sanitize "$san"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:halt_on_error=1:strict_string_checks=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
export TSAN_OPTIONS="halt_on_error=1"
ctest --test-dir "$BUILD/san-${san//,/-}" --output-on-failure -j2
