#!/usr/bin/env bash
# Runs every test of the project, one step after another, and ends with the
# line "steps: N passed, N failed". The first step builds everything the
# others use (so no step can load an artefact another step left behind); the
# others only run. Each step's full output goes to build/test-logs/<step>.log;
# its last lines (the runner's own summary) are printed, the whole log when
# it fails.
#   scripts/test.sh            all steps
#   scripts/test.sh STEP...    the build step, then only those steps (names as printed)
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
LOGS="$BUILD/test-logs"
mkdir -p "$LOGS"
passed=0; failed=0; failed_steps=()
SELECTION=("$@")

# step NAME SCRIPT [ARGS...]: runs `bash SCRIPT ARGS` (or, when SCRIPT is not
# a .sh file, the command itself) with its output in the step's log. A
# missing script is a failed step, never a silently dropped one.
step() {
  local name="$1"; shift
  selected "$name" || [ "$name" = build ] || return 0
  local log="$LOGS/$name.log" start=$SECONDS rc
  printf '== %s\n' "$name"
  if [[ "$1" == *.sh ]]; then
    if [ ! -f "$1" ]; then
      echo "the step's script $1 does not exist" >"$log"
      rc=127
    else
      bash "$@" >"$log" 2>&1
      rc=$?
    fi
  else
    "$@" >"$log" 2>&1
    rc=$?
  fi
  if [ "$rc" -eq 0 ]; then
    tail -n 3 "$log" | sed 's/^/   /'
    printf '   ok: %s (%ss)\n' "$name" "$((SECONDS - start))"
    passed=$((passed + 1))
  else
    sed 's/^/   /' "$log" | tail -n 200
    printf '   FAILED: %s (%ss, log %s)\n' "$name" "$((SECONDS - start))" "$log"
    failed=$((failed + 1)); failed_steps+=("$name")
  fi
  return "$rc"
}

# --- build everything first -----------------------------------------------------
# The normal tree, the sanitizer tree (ASan+UBSan: its ctest and the ASan runs
# of the conformance and cross-language steps) and every runtime's plugin.
build_all() {
  bash "$ROOT/scripts/build.sh" &&
    bash "$ROOT/scripts/build.sh" --sanitize address,undefined &&
    bash "$ROOT/scripts/build_plugins.sh"
}
if ! step build build_all; then
  echo
  echo "the build failed: no test step ran (they would use missing or stale artefacts)"
  echo "steps: $passed passed, $failed failed"
  exit 1
fi

# --- the C core --------------------------------------------------------------
step generated-code-fresh "$ROOT/generators/regen.sh" --check
step core-unit-abi-tool ctest --test-dir "$BUILD" --output-on-failure -j2
step core-asan-ubsan "$ROOT/scripts/sanitizers.sh" address,undefined
step core-leak-check "$ROOT/scripts/leak_check.sh"
step core-fuzz-short "$ROOT/scripts/fuzz.sh" short
step bazel "$ROOT/scripts/bazel_test.sh"
# --- devices (CUDA/ROCm unavailable paths and driver emulations) --------------
step gpu-backends-no-gpu "$ROOT/scripts/backends_test.sh"
# --- what the build produced: links, exported symbols, no test code shipped ----
step artefacts "$ROOT/scripts/check_artefacts.sh"
# --- bindings (every runtime of core/harness/runtimes.def but C) ---------------
for lang in $(ferry_runtimes); do
  [ "$lang" = c ] && continue
  step "binding-$lang" "$ROOT/bindings/$lang/test.sh"
done
# --- what users see ----------------------------------------------------------------
# docs/features.md against each binding's features test file.
step features "$ROOT/scripts/check_features.sh"
# Each language's example project, built outside the tree as its README says.
step new-user "$ROOT/scripts/new_user_test.sh"
# --- cross-language -------------------------------------------------------------
# cases.md conformance of every runtime's plugin, one plugin per process.
step conformance "$ROOT/tests/conformance/run.sh"
# Every ordered pair of runtimes in one process (C host, Go-first C host,
# C host under ASan, JVM host, Python host).
step cross-language "$ROOT/tests/integration/run.sh"
# The same on cuda and rocm through the driver emulations (device memory the
# host cannot read), the conformance suite there and the demo on cuda; then
# the GPU bundle, unpacked elsewhere, its run.sh on the CPU/sim and emulations.
step gpu-emulated "$ROOT/tests/integration/run_gpu.sh" --emulated
step gpu-bundle "$ROOT/scripts/gpu_bundle.sh" --test

echo
[ "$failed" -gt 0 ] && echo "failed steps: ${failed_steps[*]}"
echo "steps: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
