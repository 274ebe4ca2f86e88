#!/usr/bin/env bash
# Tests of ferry's Java binding; called by the top-level test command.
#   1. the committed SWIG output is fresh (generators/java/gen.sh --check)
#   2. Maven builds libferry_jni.so and the jar and runs the JUnit 5 tests
#   3. the test plugin build/plugins/libferry_it_java.so is built and run by a
#      C host (against the C plugin too, when it is built) and by `ferry check`
# Assumes the core is built in $FERRY_BUILD_DIR (default build/).
# Prints each runner's summary, then "java: N passed, N failed".
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export FERRY_ROOT="${FERRY_ROOT:-$(cd "$HERE/../.." && pwd)}"
export FERRY_BUILD_DIR="${FERRY_BUILD_DIR:-$FERRY_ROOT/build}"
BUILD="$FERRY_BUILD_DIR"
if [ -z "${JAVA_HOME:-}" ]; then
  JAVA_HOME="$(dirname "$(dirname "$(readlink -f "$(command -v javac)")")")"
fi
export JAVA_HOME

passed=0
failed=0

echo "== SWIG output"
if bash "$FERRY_ROOT/generators/java/check.sh"; then passed=$((passed + 1)); else failed=$((failed + 1)); fi

echo "== Maven (JUnit 5)"
log="$BUILD/java/mvn-test.log"
mkdir -p "$BUILD/java"
set +e
(cd "$HERE" && mvn -B package -Dferry.build.dir="$BUILD") >"$log" 2>&1
mvn_rc=$?
set -e
grep -E '^\[(INFO|ERROR|WARNING)\] Tests run:|FAIL|<<< ' "$log" | grep -v ' -- in ' || true
summary="$(grep -E '^\[(INFO|ERROR|WARNING)\] Tests run: [0-9]+, Failures' "$log" | grep -v ' -- in ' | tail -1 || true)"
if [ "$mvn_rc" -ne 0 ] || [ -z "$summary" ]; then
  tail -60 "$log"
  echo "Maven failed (log: $log)"
  failed=$((failed + 1))
else
  run="$(echo "$summary" | sed -E 's/.*Tests run: ([0-9]+), Failures: ([0-9]+), Errors: ([0-9]+).*/\1 \2 \3/')"
  read -r total failures errors <<<"$run"
  passed=$((passed + total - failures - errors))
  failed=$((failed + failures + errors))
fi

if [ "$mvn_rc" -eq 0 ]; then
  echo "== test plugin"
  # Installs the jar and JNI library and builds the plugin (one recipe, shared
  # with harnesses that need the plugin without the tests).
  bash "$HERE/build_plugin.sh" --no-maven
  # The JNI library must use the shared core, never carry a copy of it.
  jni="$BUILD/java/libferry_jni.so"
  if readelf -d "$jni" | grep -q 'NEEDED.*\[libferry\.so' &&
     [ -z "$(nm -D --defined-only "$jni" | awk '{print $3}' | grep '^ferry_' | grep -v '^ferry_jni_')" ]; then
    echo "libferry_jni.so links libferry.so dynamically"
    passed=$((passed + 1))
  else
    echo "FAIL libferry_jni.so does not link libferry.so dynamically (or defines ferry_ symbols)"
    failed=$((failed + 1))
  fi
  gcc -std=c11 -D_GNU_SOURCE -O2 -g -Wall -Wextra -Werror -I"$FERRY_ROOT/core/include" \
    -I"$FERRY_ROOT/tests/integration" "$HERE/plugin/test/host.c" -ldl -lpthread \
    -L"$BUILD/lib" -lferry -Wl,-rpath,"$BUILD/lib" -o "$BUILD/java/host"
  # Every other runtime's plugin that is built (the host loads them after the JVM).
  other=()
  for runtime in c rust go lua; do
    if [ -f "$BUILD/plugins/libferry_it_$runtime.so" ]; then
      other+=("$BUILD/plugins/libferry_it_$runtime.so")
    else
      echo "SKIPPED: Java <-> $runtime matrix: $BUILD/plugins/libferry_it_$runtime.so is not built"
    fi
  done
  set +e
  host_out="$("$BUILD/java/host" "$BUILD/plugins/libferry_it_java.so" "${other[@]}" 2>&1)"
  host_rc=$?
  set -e
  echo "$host_out" | grep -v '^$' | tail -30
  line="$(echo "$host_out" | grep -E '^[0-9]+ passed, [0-9]+ failed$' | tail -1 || true)"
  if [ -n "$line" ]; then
    passed=$((passed + $(echo "$line" | cut -d' ' -f1)))
    failed=$((failed + $(echo "$line" | cut -d' ' -f3)))
  fi
  if [ "$host_rc" -ne 0 ] && [ -z "$line" ]; then failed=$((failed + 1)); fi

  if [ -x "$BUILD/bin/ferry" ]; then
    echo "== ferry check"
    for check in "int32:nulls=3" "utf8:length=40:offset=3:device=sim" "list_int32:nulls=2" \
      "dict_int32_utf8:batches=4 --stream" "int64:fail=get_next@2 --stream"; do
      read -r spec flag <<<"$check"
      if out="$("$BUILD/bin/ferry" check --plugin "$BUILD/plugins/libferry_it_java.so" --case "$spec" $flag 2>&1)"; then
        passed=$((passed + 1))
      else
        failed=$((failed + 1))
        echo "FAIL ferry check $check: $out"
      fi
    done
  else
    echo "SKIPPED: ferry check: $BUILD/bin/ferry is not built"
  fi
fi

echo "java: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
