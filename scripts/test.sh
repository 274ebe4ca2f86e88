#!/usr/bin/env bash
# Runs every test of the project, one step after another, and ends with the
# line "N passed, N failed" counting steps. Each step's full output goes to
# build/test-logs/<step>.log; its last lines (the runner's own summary) are
# printed, the whole log when it fails.
#   scripts/test.sh            all steps
#   scripts/test.sh STEP...    only those steps (names as printed)
set -uo pipefail
ROOT="${FERRY_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
BUILD="${FERRY_BUILD_DIR:-$ROOT/build}"
export FERRY_ROOT="$ROOT" FERRY_BUILD_DIR="$BUILD"
LOGS="$BUILD/test-logs"
mkdir -p "$LOGS"
passed=0; failed=0; failed_steps=()
only=("$@")

want() {
  [ "${#only[@]}" -eq 0 ] && return 0
  local s; for s in "${only[@]}"; do [ "$s" = "$1" ] && return 0; done
  return 1
}

# step NAME COMMAND...: runs COMMAND with output to the step's log.
step() {
  local name="$1"; shift
  want "$name" || return 0
  local log="$LOGS/$name.log" start=$SECONDS
  printf '== %s\n' "$name"
  if "$@" >"$log" 2>&1; then
    tail -n 3 "$log" | sed 's/^/   /'
    printf '   ok: %s (%ss)\n' "$name" "$((SECONDS - start))"
    passed=$((passed + 1))
  else
    sed 's/^/   /' "$log" | tail -n 200
    printf '   FAILED: %s (%ss, log %s)\n' "$name" "$((SECONDS - start))" "$log"
    failed=$((failed + 1)); failed_steps+=("$name")
  fi
}

# --- the C core --------------------------------------------------------------
step generated-code-fresh bash "$ROOT/generators/regen.sh" --check
step core-unit-abi-tool ctest --test-dir "$BUILD" --output-on-failure -j2
step core-asan-ubsan bash "$ROOT/scripts/sanitizers.sh" address,undefined
step core-leak-check bash "$ROOT/scripts/leak_check.sh"
step core-fuzz-short bash "$ROOT/scripts/fuzz.sh" short
step bazel bash "$ROOT/scripts/bazel_test.sh"
# --- devices (CUDA/ROCm unavailable paths and driver emulations) --------------
[ -e "$ROOT/scripts/backends_test.sh" ] && step gpu-backends-no-gpu bash "$ROOT/scripts/backends_test.sh"
# --- bindings ------------------------------------------------------------------
for lang in rust go java lua; do
  [ -e "$ROOT/bindings/$lang/test.sh" ] && step "binding-$lang" bash "$ROOT/bindings/$lang/test.sh"
done
# --- cross-language -------------------------------------------------------------
# cases.md conformance of every runtime's plugin, one plugin per process.
[ -e "$ROOT/tests/conformance/run.sh" ] && step conformance bash "$ROOT/tests/conformance/run.sh"
# Every ordered pair of runtimes in one process (C host, Go-first C host,
# C host under ASan, JVM host).
[ -e "$ROOT/tests/integration/run.sh" ] && step cross-language bash "$ROOT/tests/integration/run.sh"

echo
[ "$failed" -gt 0 ] && echo "failed steps: ${failed_steps[*]}"
echo "steps: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
