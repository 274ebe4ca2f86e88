#!/usr/bin/env bash
# The cross-language tests: every runtime hands arrays and streams to every
# other runtime inside one process. Called by scripts/test.sh (step
# "cross-language") after the build step built everything (scripts/build.sh,
# its sanitizer build, scripts/build_plugins.sh); builds nothing itself.
# Exits non-zero on any failure and ends with the line "N passed, N failed"
# summed over the runs below.
#
#   1. self-test    the host's assertions fail on a plugin that misbehaves on purpose
#   2. C host       every pair of every plugin, the VM (JVM) before Go
#   3. C host       the same with Go loaded BEFORE the JVM (the Java plugin's SA_ONSTACK fix-up)
#   4. C host ASan  ASan+UBSan (LeakSanitizer at exit) over the runtimes that run under it
#   5. JVM host     the matrix with `java` as the process (System.load of every plugin)
#   6. Python host  the matrix with CPython as the process (pytest; the harness's
#                   loader and handoff from build/it/libferry_it_matrix.so)
#   7. bench entry points  every plugin's ferry_it_bench.h entry points once, every pair
#                   (ferry_it_bench --check: release exactly once, counters back at baseline)
#
# Every run also checks, per handoff, that every runtime's live allocations,
# ferry_live_exports() and the sim devices' allocations return to their
# baseline: the leak check for the runtimes that cannot run under ASan.
#
# Which plugins must exist: FERRY_IT_REQUIRE (e.g. "c rust python"); by
# default every runtime of core/harness/runtimes.def. A missing required
# plugin is a failure; a missing plugin that is not required is SKIPPED and
# its pairs are not counted.
#   FERRY_IT_CASES=FILE   extra case list (added to tests/integration/cases.txt)
# The C hosts also run the async cases (tests/integration/cases_async.txt) for
# every pair whose plugins export the async entry points; a runtime lacking
# them is reported as "SKIPPED async: NAME lacks SYMBOL", a hung async pair is
# one FAIL line after the host's --async-timeout-ms.
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$HERE/../../scripts/lib.sh"
LOGS="$BUILD/it-logs"
mkdir -p "$LOGS"

require="${FERRY_IT_REQUIRE:-$(ferry_runtimes)}"
echo "required runtimes: $require"
for name in $(ferry_runtimes); do
  [ -f "$PLUGINS/libferry_it_$name.so" ] || echo "SKIPPED runtime $name: $PLUGINS/libferry_it_$name.so not built"
done
need_file "$BUILD/bin/ferry_it_host" "the matrix host" || { fail "the host is not built"; finish; exit 1; }
require_list="$(echo "$require" | tr ' ' ',')"
extra_cases=()
if [ -n "${FERRY_IT_CASES:-}" ]; then
  extra_cases=(--cases "$HERE/cases.txt" --cases "$FERRY_IT_CASES" --async-cases "$HERE/cases_async.txt")
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
  local before_failed=$FERRY_FAILED
  if ! add_counts "$log"; then
    tail -n 40 "$log"
    echo "FAIL $name: no summary (exit code $rc, log $log)"
    return
  fi
  grep -A 8 '^producer \\ consumer' "$log" | sed 's/^/   /'
  if [ "$rc" -ne 0 ] && [ "$FERRY_FAILED" -eq "$before_failed" ]; then
    # LeakSanitizer reports after the summary, at exit: show its findings.
    grep -E -A 6 -m 4 '^(Direct|Indirect) leak' "$log" | sed 's/^/   /'
    grep -E '^SUMMARY: ' "$log" | sed 's/^/   /'
    fail "$name: exit code $rc after \"$(grep -E '^[0-9]+ passed' "$log" | tail -n 1)\" (log $log)"
  fi
  echo "   $name: $(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1) ($((SECONDS - start)) s, log $log)"
}

# --- 1. the host's self-test --------------------------------------------------------
run host-selftest bash "$HERE/host/selftest.sh"

# --- 2./3. the C host, both load orders ----------------------------------------------
run c-host "$BUILD/bin/ferry_it_host" --plugin-dir "$PLUGINS" --require "$require_list" "${extra_cases[@]}"
# The runs below exist for a process shape (load order, host runtime), not for
# the cases: they take the short list, every type, device, failure and thread
# kind once (the full list ran above and runs again under ASan).
shape_cases=(--cases "$HERE/cases_load_order.txt")
[ "${#extra_cases[@]}" -gt 0 ] && shape_cases=("${extra_cases[@]}")
run c-host-go-first "$BUILD/bin/ferry_it_host" --plugin-dir "$PLUGINS" --go-first \
  --require "$require_list" "${shape_cases[@]}"

# --- 4. ASan + UBSan -----------------------------------------------------------------
# The host, the core and the C plugin come from the sanitizer build; the other
# runtimes that run under ASan (runtimes.def) are the normal build's plugins,
# uninstrumented under the ASan allocator (their heap misuse and leaks are
# still caught); the others are skipped (docs/embedding.md).
asan_require=""
for name in $require; do ferry_runtime_asan "$name" && asan_require="$asan_require${asan_require:+,}$name"; done
if need_file "$SAN/bin/ferry_it_host" "the sanitizer build's host"; then
  ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:abort_on_error=0" \
  LSAN_OPTIONS="suppressions=$HERE/host/lsan.supp:print_suppressions=0" \
  UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1" \
    run c-host-asan "$SAN/bin/ferry_it_host" --asan --require "$asan_require" \
      --plugin-dir "$PLUGINS" --plugin "c=$SAN/plugins/libferry_it_c.so" "${extra_cases[@]}"
else
  fail "the ASan host is not built"
fi

# --- 5. the JVM as the host process ----------------------------------------------------
run jvm-host bash "$HERE/jvm_host/run.sh" --require "$require_list" "${shape_cases[@]}"

# --- 6. Python as the host process --------------------------------------------------------
FERRY_IT_CASES_FILE="$HERE/cases_load_order.txt" run python-host bash "$HERE/python_host/run.sh" --require "$require_list"

# --- 7. the benchmark entry points (ferry_it_bench.h) ----------------------------------
# Cheap: one handoff of each kind per ordered pair, so that the entry points the
# benchmark (scripts/bench_pairs.sh) times cannot rot.
run bench-entry-points "$BUILD/bin/ferry_it_bench" --check --plugin-dir "$PLUGINS" --require "$require_list"

echo
echo "cross-language logs: $LOGS"
finish
