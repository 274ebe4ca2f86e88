#!/usr/bin/env bash
# Tests of ferry's Java binding; called by the top-level test command.
#   1. Maven builds the jar and runs the JUnit 5 tests (libferry_jni.so and the
#      tests' libferry_jni_testing.so are CMake targets in BUILD/java)
#   2. `ferry check --plugin` on the test plugin build/plugins/libferry_it_java.so
# The plugin is built by scripts/build_plugins.sh (build_plugin.sh), its links
# and the jar's contents checked by scripts/check_artefacts.sh, the SWIG output
# by generators/regen.sh --check, and its handoffs with every other runtime by
# the matrix host. Assumes scripts/test.sh's build step.
# Prints each runner's summary, then "N passed, N failed".
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$HERE/../../scripts/lib.sh"
if [ -z "${JAVA_HOME:-}" ]; then
  JAVA_HOME="$(dirname "$(dirname "$(readlink -f "$(command -v javac)")")")"
fi
export JAVA_HOME
need_file "$BUILD/java/libferry_jni.so" "the JNI library" || exit 1

echo "== Maven (JUnit 5)"
log="$BUILD/java/mvn-test.log"
mkdir -p "$BUILD/java"
(cd "$HERE" && mvn -B package -Dferry.build.dir="$BUILD") >"$log" 2>&1
mvn_rc=$?
grep -E '^\[(INFO|ERROR|WARNING)\] Tests run:|FAIL|<<< ' "$log" | grep -v ' -- in ' || true
summary="$(grep -E '^\[(INFO|ERROR|WARNING)\] Tests run: [0-9]+, Failures' "$log" | grep -v ' -- in ' | tail -1 || true)"
if [ "$mvn_rc" -ne 0 ] || [ -z "$summary" ]; then
  tail -60 "$log"
  fail "Maven (log: $log)"
else
  read -r total failures errors <<<"$(echo "$summary" |
    sed -E 's/.*Tests run: ([0-9]+), Failures: ([0-9]+), Errors: ([0-9]+).*/\1 \2 \3/')"
  FERRY_PASSED=$((FERRY_PASSED + total - failures - errors))
  FERRY_FAILED=$((FERRY_FAILED + failures + errors))
fi

echo "== ferry check"
plugin="$BUILD/plugins/libferry_it_java.so"
if need_file "$BUILD/bin/ferry" "the ferry tool" && need_file "$plugin" "the Java plugin"; then
  for c in "int32:nulls=3" "utf8:length=40:offset=3:device=sim" "list_int32:nulls=2" \
    "dict_int32_utf8:batches=4 --stream" "int64:fail=get_next@2 --stream"; do
    read -r spec flag <<<"$c"
    # shellcheck disable=SC2086
    check "ferry check --plugin libferry_it_java.so --case $c" \
      "$BUILD/bin/ferry" check --plugin "$plugin" --case "$spec" $flag
  done
else
  fail "ferry check: the tool or the plugin is not built"
fi
finish
