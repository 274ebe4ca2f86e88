#!/usr/bin/env bash
# Runs every test of the project and ends with the line "steps: N passed,
# N failed". The first step builds everything the others use (so no step can
# load an artefact another step left behind); the others only run, up to
# FERRY_TEST_JOBS of them at once (default: the number of cores). Steps that
# write into the same tree (a binding's build folder, the example projects)
# take a lock of that tree, so they never overlap. Each step's full output goes
# to build/test-logs/<step>.log; when every step has ended, the steps are
# reported in their order with their last lines (the runner's own summary),
# the whole log of a failed one, the time of each and the total.
#   scripts/test.sh            all steps
#   scripts/test.sh STEP...    the build step, then only those steps (names as printed)
#   FERRY_TEST_JOBS=1 scripts/test.sh   one step after another
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
LOGS="$BUILD/test-logs"
LOCKS="$BUILD/test-locks"
mkdir -p "$LOGS" "$LOCKS"
rm -f "$LOGS"/*.rc "$LOGS"/*.time
passed=0; failed=0; failed_steps=()
SELECTION=("$@")
JOBS="${FERRY_TEST_JOBS:-$(nproc)}"
ORDER=()
TOTAL_START=$SECONDS

# run_step NAME LOCKS CMD...: runs CMD (a .sh script through bash, a missing
# script being a failure, never a silently dropped step) with its output in
# the step's log, holding the named tree locks (comma-separated, may be
# empty); writes the exit code and the seconds taken next to the log.
run_step() {
  local name="$1" locks="$2"; shift 2
  local log="$LOGS/$name.log" start=$SECONDS rc lock fd=20
  for lock in ${locks//,/ }; do
    eval "exec $fd>\"$LOCKS/$lock.lock\""
    flock "$fd"
    fd=$((fd + 1))
  done
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
  echo "$((SECONDS - start))" >"$LOGS/$name.time"
  echo "$rc" >"$LOGS/$name.rc"
  return "$rc"
}

# report NAME: prints a finished step's result and counts it.
report() {
  local name="$1" log="$LOGS/$1.log" rc secs
  rc="$(cat "$LOGS/$name.rc" 2>/dev/null || echo 1)"
  secs="$(cat "$LOGS/$name.time" 2>/dev/null || echo '?')"
  printf '== %s\n' "$name"
  if [ "$rc" -eq 0 ]; then
    tail -n 3 "$log" | sed 's/^/   /'
    printf '   ok: %s (%ss)\n' "$name" "$secs"
    passed=$((passed + 1))
  else
    sed 's/^/   /' "$log" | tail -n 200
    printf '   FAILED: %s (%ss, log %s)\n' "$name" "$secs" "$log"
    failed=$((failed + 1)); failed_steps+=("$name")
  fi
}

# step NAME [--locks L1,L2] CMD...: queues a step; it starts at once when
# fewer than JOBS steps are running, else when one ends.
step() {
  local name="$1"; shift
  local locks=""
  if [ "$1" = --locks ]; then locks="$2"; shift 2; fi
  selected "$name" || return 0
  ORDER+=("$name")
  if [ "$JOBS" -le 1 ]; then
    run_step "$name" "$locks" "$@"
    return 0
  fi
  while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n; done
  run_step "$name" "$locks" "$@" &
  printf '   started %s (%ss)\n' "$name" "$((SECONDS - TOTAL_START))"
}

# --- build everything first -----------------------------------------------------
# The normal tree, the sanitizer tree (ASan+UBSan: its ctest and the ASan runs
# of the conformance and cross-language steps) and every runtime's plugin.
build_all() {
  bash "$ROOT/scripts/build.sh" &&
    bash "$ROOT/scripts/build.sh" --sanitize address,undefined &&
    bash "$ROOT/scripts/build_plugins.sh"
}
ORDER+=(build)
run_step build "" build_all
report build
if [ "$(cat "$LOGS/build.rc")" -ne 0 ]; then
  echo
  echo "the build failed: no test step ran (they would use missing or stale artefacts)"
  echo "steps: $passed passed, $failed failed"
  exit 1
fi
ORDER=()

# The longest steps first, so that the short ones fill the gaps at the end.
# Locks: bindings/java/target and the Python package's in-tree build are
# written by the binding's own step and by new-user (which builds the jar and
# the wheel as a user would); nothing else writes into a source tree. The
# plugins and the Python venv the other steps load were made by the build step
# (FERRY_TEST_BUILT tells the binding steps not to make them again).
export FERRY_TEST_BUILT=1
# --- cross-language -------------------------------------------------------------
# Every ordered pair of runtimes in one process (C host, Go-first C host,
# C host under ASan, JVM host, Python host), sync and async.
step cross-language "$ROOT/tests/integration/run.sh"
# The same on cuda and rocm through the driver emulations (device memory the
# host cannot read), the conformance suite there and the demo on cuda; then
# the GPU bundle, unpacked elsewhere, its run.sh on the CPU/sim and emulations.
step gpu-emulated "$ROOT/tests/integration/run_gpu.sh" --emulated
# --- bindings (every runtime of core/harness/runtimes.def but C) ---------------
for lang in $(ferry_runtimes); do
  [ "$lang" = c ] && continue
  step "binding-$lang" --locks "tree-$lang" "$ROOT/bindings/$lang/test.sh"
done
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
# --- what users see ----------------------------------------------------------------
# No tracked file names a path of some machine.
step machine-paths "$ROOT/scripts/check_paths.sh"
# docs/bindings.md's table against each binding's source, READMEs link it.
step bindings-contract "$ROOT/scripts/check_bindings.sh"
# docs/features.md against each binding's features test file.
step features "$ROOT/scripts/check_features.sh"
# Each language's example project, built outside the tree as its README says.
step new-user --locks tree-java,tree-python "$ROOT/scripts/new_user_test.sh"
# Every package a release uploads, checked as its registry would and installed
# from an empty folder (./dev.sh release; --check: one CPython's wheel). It
# writes the Python package's sdist metadata into bindings/python, and its
# cargo package shares the unpacked -sys crate in CARGO_HOME with the Rust
# step's (each removes a stale one).
step release --locks tree-python,tree-rust "$ROOT/scripts/release.sh" --check
# docs/cases.md conformance of every runtime's plugin, one plugin per process.
step conformance "$ROOT/tests/conformance/run.sh"
step gpu-bundle "$ROOT/scripts/gpu_bundle.sh" --test
wait

# --- the report, in the order the steps were queued ----------------------------
echo
for name in "${ORDER[@]}"; do report "$name"; done
echo
echo "step times (s):"
for name in build "${ORDER[@]}"; do
  printf '  %-24s %s\n' "$name" "$(cat "$LOGS/$name.time" 2>/dev/null || echo '?')"
done
printf '  %-24s %s (%s jobs at once)\n' total "$((SECONDS - TOTAL_START))" "$JOBS"
[ "$failed" -gt 0 ] && echo "failed steps: ${failed_steps[*]}"
echo "steps: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
