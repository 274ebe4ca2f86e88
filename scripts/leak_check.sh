#!/usr/bin/env bash
# Runs every C unit and plugin test binary of the normal build under
# valgrind memcheck: any leak ("definitely" or "indirectly" lost) or memory
# error fails. (ASan's LeakSanitizer covers the sanitizer build too.)
set -uo pipefail
ROOT="${FERRY_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
BUILD="${FERRY_BUILD_DIR:-$ROOT/build}"
passed=0; failed=0
for t in "$BUILD"/tests/*_test; do
  [ -x "$t" ] || continue
  log="$(mktemp)"
  if FERRY_BUILD_DIR="$BUILD" FERRY_SOURCE_DIR="$ROOT" valgrind --quiet --error-exitcode=99 \
      --leak-check=full --errors-for-leak-kinds=definite,indirect \
      --show-leak-kinds=definite,indirect "$t" >"$log" 2>&1; then
    passed=$((passed + 1))
  else
    echo "FAIL (valgrind): $(basename "$t")"; tail -n 40 "$log"
    failed=$((failed + 1))
  fi
  rm -f "$log"
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
