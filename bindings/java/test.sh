#!/usr/bin/env bash
# Tests of ferry's Java binding; called by the top-level test command.
#   1. `mvn install`: the jar with its sources and javadoc jars (javadoc's
#      doclint fails the build on malformed HTML), the JUnit 5 tests
#      (GpuApiTest on the sim device and the CUDA/ROCm driver emulations,
#      HostileTest, FeaturesTest, ...), installed into the local repository
#      (~/.m2) as io.github.ferryarrow:ferry-arrow:0.1.0, where
#      examples/java/test.sh finds it.
#   2. `ferry check --plugin` on the test plugin build/plugins/libferry_it_java.so
#      (arrays, streams, and async streams through the strict checking consumer)
#   3. a 10-million-element int32 (40 MB) produced and checked by Java on the sim
#      device and on emulated CUDA, in JVMs with -XX:MaxDirectMemorySize=4m:
#      staging and copies use ferry-allocated memory, not direct buffers
#   4. no JVM of this run left anything in its java.io.tmpdir (the jar's native
#      libraries are extracted to a folder that is removed at once)
# The plugin is built by scripts/build_plugins.sh (build_plugin.sh), its links
# and the jar's contents checked by scripts/check_artefacts.sh, the generated
# layer by generators/regen.sh --check, and its handoffs with every other
# runtime by the matrix hosts. Assumes scripts/test.sh's build step.
# Prints each runner's summary, then "N passed, N failed".
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$HERE/../../scripts/lib.sh"
if [ -z "${JAVA_HOME:-}" ]; then
  JAVA_HOME="$(dirname "$(dirname "$(readlink -f "$(command -v javac)")")")"
fi
export JAVA_HOME
need_file "$BUILD/java/libferry_jni.so" "the JNI library" || exit 1

# Every JVM of this script gets its own java.io.tmpdir, checked at the end.
jvm_tmp="$BUILD/java/jvm-tmp"
rm -rf "$jvm_tmp"
mkdir -p "$jvm_tmp"

echo "== Maven install (jar, sources, javadoc; JUnit 5)"
log="$BUILD/java/mvn-install.log"
(cd "$HERE" && mvn -B install -Dferry.build.dir="$BUILD" -Dferry.test.tmpdir="$jvm_tmp") >"$log" 2>&1
mvn_rc=$?
grep -E '^\[(INFO|ERROR|WARNING)\] Tests run:|FAIL|<<< ' "$log" | grep -v ' -- in ' || true
summary="$(grep -E '^\[(INFO|ERROR|WARNING)\] Tests run: [0-9]+, Failures' "$log" | grep -v ' -- in ' | tail -1 || true)"
if [ "$mvn_rc" -ne 0 ] || [ -z "$summary" ]; then
  tail -60 "$log"
  fail "Maven install (log: $log)"
else
  read -r total failures errors skipped <<<"$(echo "$summary" |
    sed -E 's/.*Tests run: ([0-9]+), Failures: ([0-9]+), Errors: ([0-9]+), Skipped: ([0-9]+).*/\1 \2 \3 \4/')"
  FERRY_PASSED=$((FERRY_PASSED + total - failures - errors - skipped))
  FERRY_FAILED=$((FERRY_FAILED + failures + errors))
  [ "$skipped" -gt 0 ] && skip "$skipped JUnit tests (their reasons are in $log)"
  for jar in ferry-arrow-0.1.0.jar ferry-arrow-0.1.0-sources.jar ferry-arrow-0.1.0-javadoc.jar; do
    check "installed $jar" grep -q "Installing .*/$jar to " "$log"
  done
fi

echo "== ferry check"
plugin="$BUILD/plugins/libferry_it_java.so"
export FERRY_JAVA_OPTIONS="-Djava.io.tmpdir=$jvm_tmp"
if need_file "$BUILD/bin/ferry" "the ferry tool" && need_file "$plugin" "the Java plugin"; then
  for c in "int32:nulls=3" "utf8:length=40:offset=3:device=sim" "list_int32:nulls=2" \
    "dict_int32_utf8:batches=4 --stream" "int64:fail=get_next@2 --stream" \
    "int32:window=4:batches=5:seed=7 --async" "utf8:device=sim:batches=5:cancel=3:window=2 --async" \
    "int32:batches=3:fail=get_next@3:window=4 --async"; do
    read -r spec flag <<<"$c"
    # shellcheck disable=SC2086
    check "ferry check --plugin libferry_it_java.so --case $c" \
      "$BUILD/bin/ferry" check --plugin "$plugin" --case "$spec" $flag
  done
else
  fail "ferry check: the tool or the plugin is not built"
fi

echo "== a 40 MB array under -XX:MaxDirectMemorySize=4m (sim, emulated CUDA)"
emu="$BUILD/test-emu"
if need_file "$emu/libcuda_emu.so" "the CUDA driver emulation"; then
  check "Java produces and checks int32:length=10000000 on sim and cuda, 4 MiB of direct memory" \
    env FERRY_CUDA_LIBRARY="$emu/libcuda_emu.so" \
    FERRY_IT_JVM_FLAGS="-XX:MaxDirectMemorySize=4m -Xmx256m -Djava.io.tmpdir=$jvm_tmp" \
    bash "$ROOT/tests/integration/jvm_host/run.sh" --plugins c,java --no-tamper \
    --case int32:length=10000000:device=sim --case int32:length=10000000:device=cuda
else
  fail "the large-array check needs the CUDA driver emulation"
fi

echo "== no JVM left files behind"
left="$(find "$jvm_tmp" -mindepth 1 -maxdepth 1 2>/dev/null | head -5)"
check "every JVM of this run removed what it extracted (${left:-nothing left})" test -z "$left"
finish
