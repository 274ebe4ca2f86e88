#!/usr/bin/env bash
# Java <-> C handoff benchmark (not a test): builds the binding (tests skipped),
# compiles src/bench and runs it in a fresh JVM. Prints "RESULT java CASE NS"
# lines and a table of min/median ns/op against floors measured in the same run.
# Options via JAVA_OPTS, e.g. JAVA_OPTS="-Dferry.bench.n=500000 -Dferry.bench.reps=9".
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export FERRY_ROOT="${FERRY_ROOT:-$(cd "$HERE/../.." && pwd)}"
export FERRY_BUILD_DIR="${FERRY_BUILD_DIR:-$FERRY_ROOT/build}"
(cd "$HERE" && mvn -B -q package -DskipTests -Dferry.build.dir="$FERRY_BUILD_DIR")
out="$HERE/target/bench-classes"
mkdir -p "$out"
javac -d "$out" -cp "$HERE/target/classes" $(find "$HERE/src/bench/java" -name '*.java')
# One JVM, fixed heap and GC, so runs compare; one benchmark at a time on a shared machine.
exec java -Xms256m -Xmx256m -XX:+UseSerialGC ${JAVA_OPTS:-} \
  -Djava.library.path="$HERE/target/native" \
  -cp "$out:$HERE/target/classes" org.ferry.bench.HandoffBench
