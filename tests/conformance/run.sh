#!/usr/bin/env bash
# The conformance suite against every test plugin present: builds
# BUILD/bin/ferry_conformance (build.sh), then runs it once per plugin, each in
# its own process (one non-C runtime per process: a Go runtime and a JVM have
# process-level rules), with the C plugin as the reference. Prints every FAIL
# line and each plugin's summary, ends with the summed "N passed, N failed"
# and exits non-zero on any failure.
#
#   run.sh [ferry_conformance options...]     e.g. run.sh --verbose, run.sh --area errors
#   FERRY_BUILD_DIR   build dir (default /work/main/build)
#   FERRY_CONFORMANCE_RUNTIMES   which runtimes to try (default "c rust go java lua")
#   FERRY_CONFORMANCE_REQUIRE    runtimes whose missing plugin is a failure, not a skip
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="${FERRY_ROOT:-$(cd "$HERE/../.." && pwd)}"
BUILD="${FERRY_BUILD_DIR:-$ROOT/build}"
PLUGINS="$BUILD/plugins"
LOGS="$BUILD/conformance-logs"
BIN="${FERRY_CONFORMANCE_OUT:-$BUILD/bin/ferry_conformance}"
RUNTIMES="${FERRY_CONFORMANCE_RUNTIMES:-c rust go java lua}"
REQUIRE=" ${FERRY_CONFORMANCE_REQUIRE:-c} "
AREAS="${FERRY_CONFORMANCE_AREAS:-export stream errors inject check tamper thread}"
# With --case or --area on the command line: one process per plugin, as asked.
for arg in "$@"; do
  if [ "$arg" = --case ] || [ "$arg" = --area ]; then AREAS=given; fi
done
mkdir -p "$LOGS"
passed=0; failed=0

if ! FERRY_CONFORMANCE_OUT="$BIN" bash "$HERE/build.sh" "$BUILD" >"$LOGS/build.log" 2>&1; then
  cat "$LOGS/build.log"
  echo "FAIL conformance: the suite does not build"
  echo "0 passed, 1 failed"; exit 1
fi
if [ ! -f "$PLUGINS/libferry_it_c.so" ]; then
  echo "FAIL conformance: the C reference $PLUGINS/libferry_it_c.so is not built"
  echo "0 passed, 1 failed"; exit 1
fi

for rt in $RUNTIMES; do
  plugin="$PLUGINS/libferry_it_$rt.so"
  if [ ! -f "$plugin" ]; then
    if [[ "$REQUIRE" == *" $rt "* ]]; then
      echo "FAIL $rt load: $plugin is not built (required)"; failed=$((failed + 1))
    else
      echo "SKIPPED runtime $rt: $plugin is not built, NOT TESTED"
    fi
    continue
  fi
  # One process per area: a crash in one area does not hide the others.
  start=$SECONDS; rt_passed=0; rt_failed=0
  for area in $AREAS; do
    log="$LOGS/$rt-$area.log"
    if [ "$area" = given ]; then
      timeout 600 "$BIN" "$plugin" "$@" >"$log" 2>&1
    else
      timeout 600 "$BIN" "$plugin" --area "$area" "$@" >"$log" 2>&1
    fi
    rc=$?
    grep -E '^(FAIL|SKIPPED|WARNING)' "$log"
    summary="$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$log" | tail -n 1)"
    if [ -z "$summary" ]; then
      tail -n 30 "$log"
      echo "FAIL $rt crash: area $area ended without a summary (exit code $rc, log $log)"
      rt_failed=$((rt_failed + 1))
      continue
    fi
    read -r p _ f _ <<<"$summary"
    rt_passed=$((rt_passed + p)); rt_failed=$((rt_failed + f))
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
      echo "FAIL $rt exit: area $area exit code $rc with no failed test (log $log)"
      rt_failed=$((rt_failed + 1))
    fi
  done
  passed=$((passed + rt_passed)); failed=$((failed + rt_failed))
  echo "== $rt: $rt_passed passed, $rt_failed failed ($((SECONDS - start)) s, logs $LOGS/$rt-*.log)"
done

# Every C export once more read through ferry's deep copy to the CPU (the
# path a GPU needs), exercising ferry_device_array_copy on every layout.
if [ "$AREAS" != given ] && [[ " $RUNTIMES " == *" c "* ]]; then
  log="$LOGS/c-copy.log"
  FERRY_CONFORMANCE_FORCE_COPY=1 timeout 600 "$BIN" "$PLUGINS/libferry_it_c.so" \
    --area export --area stream --area inject "$@" >"$log" 2>&1
  rc=$?
  grep -E '^FAIL' "$log" | sed 's/^FAIL c /FAIL c-copy /'
  summary="$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$log" | tail -n 1)"
  if [ -z "$summary" ]; then
    tail -n 30 "$log"
    echo "FAIL c-copy crash: no summary (exit code $rc, log $log)"; failed=$((failed + 1))
  else
    read -r p _ f _ <<<"$summary"
    passed=$((passed + p)); failed=$((failed + f))
    echo "== c read through ferry_device_array_copy: $summary (log $log)"
  fi
fi

# The C reference once more under ASan+UBSan+LeakSanitizer, when the
# sanitizer build of the core and C plugin exists (not for the other
# runtimes: a JVM or Go runtime does not run under ASan).
SAN="$BUILD/san-address-undefined"
if [ -f "$SAN/lib/libferry.so" ] && [ -f "$SAN/plugins/libferry_it_c.so" ]; then
  log="$LOGS/c-asan.log"
  if FERRY_CONFORMANCE_OUT="$BIN-asan" FERRY_CONFORMANCE_LIBDIR="$SAN/lib" \
     FERRY_CONFORMANCE_CFLAGS="-fsanitize=address,undefined -fno-omit-frame-pointer" \
     bash "$HERE/build.sh" "$BUILD" >"$LOGS/build-asan.log" 2>&1; then
    ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
      timeout 600 "$BIN-asan" "$SAN/plugins/libferry_it_c.so" "$@" >"$log" 2>&1
    rc=$?
    grep -E '^(FAIL|SKIPPED)' "$log" | sed 's/^FAIL c /FAIL c-asan /'
    summary="$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$log" | tail -n 1)"
    if [ -z "$summary" ]; then
      tail -n 30 "$log"
      echo "FAIL c-asan crash: no summary (exit code $rc, log $log)"; failed=$((failed + 1))
    else
      read -r p _ f _ <<<"$summary"
      passed=$((passed + p)); failed=$((failed + f))
      if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
        grep -E 'ERROR: (Address|Leak)Sanitizer|runtime error' "$log" | head -n 5
        echo "FAIL c-asan sanitizer: exit code $rc with no failed test (log $log)"
        failed=$((failed + 1))
      fi
      echo "== c under ASan+UBSan: $summary (log $log)"
    fi
  else
    echo "SKIPPED c-asan: the sanitizer build of the suite failed (log $LOGS/build-asan.log)"
  fi
else
  echo "SKIPPED c-asan: no sanitizer build at $SAN (configure it with -DFERRY_SANITIZE=address,undefined)"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
