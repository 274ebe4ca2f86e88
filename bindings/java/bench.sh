#!/usr/bin/env bash
# Java <-> C handoff benchmark (not a test): builds the jar (tests compiled, not run),
# compiles src/bench and runs every case in a fresh JVM (a JIT shared between
# cases skews them), one after the other. Each case is measured interleaved with
# its own floor (same crossings, same C handoff, nothing else; see
# HandoffBench.java). Prints "RESULT java CASE NS" lines, the load average, and a
# table: min/median ns of the case and of its floor, median ratio, PASS (<= 1.5x)
# or MISS.
# Options: JAVA_OPTS="-Dferry.bench.n=500000 -Dferry.bench.reps=9"; case names as
# arguments run only those.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$HERE/../../scripts/lib.sh"
need_file "$BUILD/java/libferry_jni_testing.so" "the test helpers' JNI library"
(cd "$HERE" && mvn -B -q package -DskipTests -Dferry.build.dir="$FERRY_BUILD_DIR")
out="$HERE/target/bench-classes"
mkdir -p "$out"
# The floors are the test source set's io.github.ferryarrow.ferry.jni.Testing (not in the jar).
classes="$HERE/target/classes:$HERE/target/test-classes"
javac -d "$out" -cp "$classes" $(find "$HERE/src/bench/java" -name '*.java')
cases=("$@")
if [ "${#cases[@]}" -eq 0 ]; then
  cases=(primitives c_to_java_stream_cursor c_to_java_stream_deviceArray
    c_to_java_array_deviceArray c_to_java_array_trusted java_to_c_array java_to_c_stream)
fi
table=()
for c in "${cases[@]}"; do
  # Fixed heap and GC, so runs compare.
  run="$(java -Xms256m -Xmx256m -XX:+UseSerialGC ${JAVA_OPTS:-} \
    -Djava.library.path="$BUILD/java" \
    -cp "$out:$classes" io.github.ferryarrow.ferry.bench.HandoffBench "$c")"
  echo "$run" | grep -E '^(RESULT|LOAD)'
  while IFS= read -r line; do table+=("${line#TABLE }"); done < <(echo "$run" | grep '^TABLE')
done
echo
printf '%-30s %8s %8s   %-19s %-11s %s\n' "case (ns/op)" "min" "median" "floor min/median" "ratio" "vs 1.5x"
printf '%s\n' "${table[@]}"
echo "load average now: $(cut -d' ' -f1-3 /proc/loadavg)"
