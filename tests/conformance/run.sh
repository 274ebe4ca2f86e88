#!/usr/bin/env bash
# The conformance suite (the conformance mode of BUILD/bin/ferry_it_host)
# against every test plugin, each in its own process (one non-C runtime per
# process: a Go runtime and a JVM have process-level rules), with the C plugin
# as the reference; then the C plugin's exports read through ferry's deep copy,
# the C plugin under ASan+UBSan+LeakSanitizer (the sanitizer build), and the
# suite's self-test (selftest.sh). Builds nothing: scripts/test.sh's build step
# did. Prints every FAIL line and each plugin's summary, ends with the summed
# "N passed, N failed" and exits non-zero on any failure.
#
#   run.sh [conformance options...]     e.g. run.sh --verbose, run.sh --area errors
#   FERRY_CONFORMANCE_RUNTIMES   which runtimes to try (default: every runtime of
#                                core/harness/runtimes.def)
#   FERRY_CONFORMANCE_REQUIRE    runtimes whose missing plugin is a failure, not a
#                                skip (default: every runtime tried)
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$HERE/../../scripts/lib.sh"
LOGS="$BUILD/conformance-logs"
HOST="$BUILD/bin/ferry_it_host"
RUNTIMES="${FERRY_CONFORMANCE_RUNTIMES:-$(ferry_runtimes)}"
REQUIRE=" ${FERRY_CONFORMANCE_REQUIRE:-$RUNTIMES} "
AREAS="${FERRY_CONFORMANCE_AREAS:-export stream errors inject check tamper thread async}"
# With --case or --area on the command line: one process per plugin, as asked.
for arg in "$@"; do
  if [ "$arg" = --case ] || [ "$arg" = --area ]; then AREAS=given; fi
done
mkdir -p "$LOGS"
need_file "$HOST" "the host" || { fail "the host is not built"; finish; exit 1; }
need_file "$PLUGINS/libferry_it_c.so" "the C reference plugin" || { fail "no C reference"; finish; exit 1; }

# one LABEL LOG COMMAND...: one process of the suite; its FAIL lines (FAIL
# <runtime> ... renamed FAIL <label> ...) and its counts.
one() {
  local label="$1" log="$2"; shift 2
  timeout 600 "$@" >"$log" 2>&1
  local rc=$?
  grep -E '^(FAIL|SKIPPED|WARNING)' "$log" | sed -E "s/^FAIL [a-z0-9_]+ /FAIL $label /"
  local before=$FERRY_FAILED
  if ! add_counts "$log"; then
    tail -n 30 "$log"
    echo "FAIL $label crash: no summary (exit code $rc, log $log)"
    return
  fi
  if [ "$rc" -ne 0 ] && [ "$FERRY_FAILED" -eq "$before" ]; then
    grep -E 'ERROR: (Address|Leak)Sanitizer|runtime error' "$log" | head -n 5
    fail "$label exit: exit code $rc with no failed test (log $log)"
  fi
}

for rt in $RUNTIMES; do
  plugin="$PLUGINS/libferry_it_$rt.so"
  if [ ! -f "$plugin" ]; then
    if [[ "$REQUIRE" == *" $rt "* ]]; then
      fail "$rt load: $plugin is not built (required)"
    else
      skip "runtime $rt: $plugin is not built, NOT TESTED"
    fi
    continue
  fi
  # One process per area: a crash in one area does not hide the others.
  start=$SECONDS; p0=$FERRY_PASSED; f0=$FERRY_FAILED
  for area in $AREAS; do
    if [ "$area" = given ]; then
      one "$rt" "$LOGS/$rt-given.log" "$HOST" conformance "$plugin" "$@"
    else
      one "$rt" "$LOGS/$rt-$area.log" "$HOST" conformance "$plugin" --area "$area" "$@"
    fi
  done
  echo "== $rt: $((FERRY_PASSED - p0)) passed, $((FERRY_FAILED - f0)) failed ($((SECONDS - start)) s, logs $LOGS/$rt-*.log)"
done

if [ "$AREAS" != given ] && [[ " $RUNTIMES " == *" c "* ]]; then
  # Every C export once more read through ferry's deep copy to the CPU (the
  # path a GPU needs), exercising ferry_device_array_copy on every layout.
  p0=$FERRY_PASSED; f0=$FERRY_FAILED
  FERRY_CONFORMANCE_FORCE_COPY=1 one c-copy "$LOGS/c-copy.log" "$HOST" conformance \
    "$PLUGINS/libferry_it_c.so" --area export --area stream --area inject "$@"
  echo "== c read through ferry_device_array_copy: $((FERRY_PASSED - p0)) passed, $((FERRY_FAILED - f0)) failed (log $LOGS/c-copy.log)"

  # The C reference under ASan+UBSan+LeakSanitizer (not the other runtimes: a
  # JVM or a Go runtime does not run under ASan).
  if need_file "$SAN/bin/ferry_it_host" "the sanitizer build's host"; then
    p0=$FERRY_PASSED; f0=$FERRY_FAILED
    ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
      one c-asan "$LOGS/c-asan.log" "$SAN/bin/ferry_it_host" conformance \
      "$SAN/plugins/libferry_it_c.so" "$@"
    echo "== c under ASan+UBSan: $((FERRY_PASSED - p0)) passed, $((FERRY_FAILED - f0)) failed (log $LOGS/c-asan.log)"
  else
    fail "c-asan: the sanitizer build is missing"
  fi

  # The suite must fail, with the right finding, on a plugin that breaks a rule.
  p0=$FERRY_PASSED; f0=$FERRY_FAILED
  one self-test "$LOGS/selftest.log" bash "$HERE/selftest.sh"
  echo "== self-test: $((FERRY_PASSED - p0)) passed, $((FERRY_FAILED - f0)) failed (log $LOGS/selftest.log)"
fi

finish
