#!/usr/bin/env bash
# Java <-> C handoff benchmark (not a test): builds the jar (tests compiled, not run),
# compiles src/bench and runs every case in a fresh JVM (a JIT shared between
# cases skews them), one after the other. Each case is measured interleaved with
# its own floor (same crossings, same C handoff, nothing else; see
# HandoffBench.java). Prints "RESULT java CASE NS" lines, the load average, and a
# table: min/median ns of the case and of its floor, median ratio, PASS (<= 1.5x)
# or MISS.
# Then the peer benchmark (case "peers", PeerBench.java): ferry against Arrow
# Java's own C Data Interface in one JVM, interleaved rounds, median ratio
# ferry / peer with its spread; its "PEER" lines are also written to
# docs/bench/java-peers.txt (with the date and the load average: the machine may
# be shared).
# Options: JAVA_OPTS="-Dferry.bench.n=500000 -Dferry.bench.reps=9"
# (PeerBench: -Dferry.peer.rounds=21 -Dferry.peer.arrays=5000
# -Dferry.peer.streams=2); case names as arguments run only those.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$HERE/../../scripts/lib.sh"
need_file "$BUILD/java/libferry_jni_testing.so" "the test helpers' JNI library"
(cd "$HERE" && mvn -B -q package -DskipTests -Dferry.build.dir="$FERRY_BUILD_DIR")
out="$HERE/target/bench-classes"
mkdir -p "$out"
# The floors are the test source set's io.github.ferryarrow.ferry.jni.Testing (not in the jar).
classes="$HERE/target/classes:$HERE/target/test-classes"
# Arrow Java and its dependencies (test scope: arrow-memory-unsafe), for PeerBench.
(cd "$HERE" && mvn -B -q dependency:build-classpath -Dmdep.includeScope=test \
  -Dmdep.outputFile="$HERE/target/bench-classpath.txt" >/dev/null)
classes="$classes:$(cat "$HERE/target/bench-classpath.txt")"
javac -d "$out" -cp "$classes" $(find "$HERE/src/bench/java" -name '*.java')
cases=("$@")
if [ "${#cases[@]}" -eq 0 ]; then
  cases=(primitives c_to_java_stream_cursor c_to_java_stream_deviceArray
    c_to_java_array_deviceArray c_to_java_array_trusted java_to_c_array java_to_c_stream peers)
fi
table=()
peers=()
for c in "${cases[@]}"; do
  if [ "$c" = peers ]; then
    # Arrow Java's memory module needs java.nio opened.
    mapfile -t peers < <(java -Xms512m -Xmx512m -XX:+UseSerialGC ${JAVA_OPTS:-} \
      --add-opens=java.base/java.nio=ALL-UNNAMED -Djava.library.path="$BUILD/java" \
      -cp "$out:$classes" io.github.ferryarrow.ferry.bench.PeerBench | grep '^PEER')
    continue
  fi
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
if [ "${#peers[@]}" -gt 0 ]; then
  record="$ROOT/docs/bench/java-peers.txt"
  {
    echo "# java peers $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, $(uname -m), JDK $(java -version 2>&1 | head -1 | cut -d'"' -f2), Arrow Java $(sed -n "s|.*<arrow.version>\(.*\)</arrow.version>.*|\1|p" "$HERE/pom.xml")"
    echo "# uptime: $(uptime)"
    echo "# ferry against Arrow Java's C Data Interface, one JVM, interleaved rounds; ratio = ferry / peer (median of per-round ratios), below 1 = ferry faster"
    printf '%s\n' "${peers[@]#PEER }"
  } >"$record.tmp"
  mv "$record.tmp" "$record"
  echo
  cat "$record"
fi
