#!/usr/bin/env bash
# The cross-language tests: every runtime hands arrays and streams to every
# other runtime inside one process. Called by scripts/test.sh (step
# "cross-language"); exits non-zero on any failure and ends with the line
# "N passed, N failed" summed over the runs below.
#
#   1. self-test    the host's assertions fail on a plugin that misbehaves on purpose
#   2. C host       every pair of every plugin present, JVM created before Go
#   3. C host       the same with Go loaded BEFORE the JVM (the Java plugin's SA_ONSTACK fix-up)
#   4. C host ASan  ASan+UBSan (LeakSanitizer at exit) over the runtimes that run under it
#   5. JVM host     the matrix with `java` as the process (System.load of every plugin)
#   6. bench entry points  every plugin's ferry_it_bench.h entry points once, every pair
#                   (ferry_it_bench --check: release exactly once, counters back at baseline)
#
# Every run also checks, per handoff, that every runtime's live allocations,
# ferry_live_exports() and the sim devices' allocations return to their
# baseline: the leak check for the runtimes that cannot run under ASan.
#
# Which plugins must exist: FERRY_IT_REQUIRE (e.g. "c rust go java lua").
# By default: c, plus every runtime whose bindings/<lang>/ directory and
# plugin build script exist. A required plugin that is missing is built with
# that script; if it still is missing the run fails. Missing plugins that are
# not required are reported as SKIPPED and their pairs are not counted.
#   FERRY_IT_CASES=FILE   extra case list (added to tests/integration/cases.txt)
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="${FERRY_ROOT:-$(cd "$HERE/../.." && pwd)}"
BUILD="${FERRY_BUILD_DIR:-$ROOT/build}"
export FERRY_ROOT="$ROOT" FERRY_BUILD_DIR="$BUILD"
PLUGINS="$BUILD/plugins"
LOGS="$BUILD/it-logs"
mkdir -p "$LOGS"
total_passed=0; total_failed=0

note_failure() { echo "FAIL $*"; total_failed=$((total_failed + 1)); }

# --- build --------------------------------------------------------------------
if ! bash "$ROOT/scripts/build.sh"; then
  echo "the core does not build"; echo "0 passed, 1 failed"; exit 1
fi
if [ -n "${FERRY_IT_REQUIRE:-}" ]; then
  require="$FERRY_IT_REQUIRE"
else
  require="$(bash "$HERE/build_plugins.sh" --list)"
fi
echo "required runtimes: $require"
# shellcheck disable=SC2086
bash "$HERE/build_plugins.sh" $require
for lang in $require; do
  [ -f "$PLUGINS/libferry_it_$lang.so" ] ||
    note_failure "required runtime $lang: $PLUGINS/libferry_it_$lang.so not built"
done
for lang in c rust go java lua; do
  [ -f "$PLUGINS/libferry_it_$lang.so" ] ||
    echo "SKIPPED runtime $lang: $PLUGINS/libferry_it_$lang.so not built"
done
if ! bash "$HERE/build.sh" host selftest bench >"$LOGS/build-host.log" 2>&1; then
  cat "$LOGS/build-host.log"
  echo "the host does not build"; echo "0 passed, $((total_failed + 1)) failed"; exit 1
fi
require_list="$(echo "$require" | tr ' ' ',')"
extra_cases=()
if [ -n "${FERRY_IT_CASES:-}" ]; then
  extra_cases=(--cases "$HERE/cases.txt" --cases "$FERRY_IT_CASES")
fi

# run NAME COMMAND...: runs one matrix, shows its FAIL lines and summary, and
# adds its "N passed, N failed" to the totals (a missing summary is a failure).
run() {
  local name="$1"; shift
  local log="$LOGS/$name.log" start=$SECONDS
  echo "== $name"
  timeout 900 "$@" >"$log" 2>&1
  local rc=$?
  grep -E '^(FAIL|SKIPPED|signal fix-up)' "$log" | head -n 60
  local summary; summary="$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$log" | tail -n 1)"
  if [ -z "$summary" ]; then
    tail -n 40 "$log"
    note_failure "$name: no summary (exit code $rc, log $log)"
    return
  fi
  grep -A 8 '^producer \\ consumer' "$log" | sed 's/^/   /'
  local p f; read -r p _ f _ <<<"$summary"
  total_passed=$((total_passed + p)); total_failed=$((total_failed + f))
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
    # LeakSanitizer reports after the summary, at exit: show its findings.
    grep -E -A 6 -m 4 '^(Direct|Indirect) leak' "$log" | sed 's/^/   /'
    grep -E '^SUMMARY: ' "$log" | sed 's/^/   /'
    note_failure "$name: exit code $rc after \"$summary\" (log $log)"
  fi
  echo "   $name: $summary ($((SECONDS - start)) s, log $log)"
}

# --- 1. the host's self-test ------------------------------------------------------
run host-selftest bash "$HERE/host/selftest.sh"

# --- 2./3. the C host, both load orders ----------------------------------------------
run c-host "$BUILD/bin/ferry_it_host" --plugin-dir "$PLUGINS" --require "$require_list" "${extra_cases[@]}"
if [ -f "$PLUGINS/libferry_it_go.so" ] && [ -f "$PLUGINS/libferry_it_java.so" ]; then
  run c-host-go-first "$BUILD/bin/ferry_it_host" --plugin-dir "$PLUGINS" --go-first --require "$require_list" \
    "${extra_cases[@]}"
fi

# --- 4. ASan + UBSan -----------------------------------------------------------------
# The C plugin and the core come from the sanitizer build; Rust and Lua run
# uninstrumented under the ASan allocator (their heap misuse and leaks are
# still caught); the JVM and Go are skipped (see docs/embedding.md).
if bash "$HERE/build.sh" asan >"$LOGS/build-asan.log" 2>&1; then
  asan_require="$(echo "$require" | tr ' ' '\n' | grep -vx -e java -e go | paste -sd, -)"
  ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:abort_on_error=0:suppressions=$HERE/host/lsan.supp" \
  LSAN_OPTIONS="suppressions=$HERE/host/lsan.supp:print_suppressions=0" \
  UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1" \
    run c-host-asan "$BUILD/it/asan/ferry_it_host" --asan --require "$asan_require" \
      --plugin-dir "$PLUGINS" \
      --plugin "c=$BUILD/san-address-undefined/plugins/libferry_it_c.so" "${extra_cases[@]}"
else
  cat "$LOGS/build-asan.log"
  note_failure "the ASan host does not build (log $LOGS/build-asan.log)"
fi

# --- 5. the JVM as the host process ----------------------------------------------------
if [ -f "$PLUGINS/libferry_it_java.so" ] || [[ " $require " == *" java "* ]]; then
  if bash "$HERE/build.sh" jvm >"$LOGS/build-jvm.log" 2>&1; then
    run jvm-host bash "$HERE/jvm_host/run.sh" --require "$require_list" "${extra_cases[@]}"
  else
    cat "$LOGS/build-jvm.log"
    note_failure "the JVM host does not build (log $LOGS/build-jvm.log)"
  fi
else
  echo "SKIPPED jvm-host: the Java plugin is neither built nor required"
fi

# --- 6. the benchmark entry points (ferry_it_bench.h) ----------------------------------
# Cheap: one handoff of each kind per ordered pair, so that the entry points the
# benchmark (scripts/bench_pairs.sh) times cannot rot.
run bench-entry-points "$BUILD/bin/ferry_it_bench" --check --plugin-dir "$PLUGINS" --require "$require_list"

echo
echo "cross-language logs: $LOGS"
echo "$total_passed passed, $total_failed failed"
[ "$total_failed" -eq 0 ] && [ "$total_passed" -gt 0 ]
