#!/usr/bin/env bash
# Runs every C unit and plugin test binary of the normal build under
# valgrind memcheck: any leak ("definitely" or "indirectly" lost) or memory
# error fails. (ASan's LeakSanitizer covers the sanitizer build too.)
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
for t in "$BUILD"/tests/*_test; do
  [ -x "$t" ] || continue
  log="$(mktemp)"
  if FERRY_BUILD_DIR="$BUILD" FERRY_SOURCE_DIR="$ROOT" FERRY_UNDER_VALGRIND=1 valgrind --quiet --error-exitcode=99 \
      --leak-check=full --errors-for-leak-kinds=definite,indirect \
      --show-leak-kinds=definite,indirect "$t" >"$log" 2>&1; then
    pass "$(basename "$t")"
  else
    fail "$(basename "$t") (valgrind)"; tail -n 40 "$log"
  fi
  rm -f "$log"
done
finish
