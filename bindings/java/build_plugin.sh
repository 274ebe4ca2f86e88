#!/usr/bin/env bash
# Builds the Java half of the test plugin, without running the tests: Maven
# packages the binding (tests compiled, not run) into BUILD/java/ferry-arrow.jar,
# and the plugin's classes (io.github.ferryarrow.ferry.it, in the test source set: they are not
# in the binding's jar) into BUILD/java/ferry-it.jar. The C half,
# BUILD/plugins/libferry_it_java.so, its .conf and libferry_jni.so are CMake
# targets (scripts/build.sh). bindings/java/test.sh runs the tests.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$HERE/../../scripts/lib.sh"
need_file "$BUILD/java/libferry_jni.so" "the JNI library"
mkdir -p "$BUILD/java"
log="$BUILD/java/mvn-package.log"
(cd "$HERE" && mvn -B -q package -DskipTests -Dmaven.javadoc.skip=true -Dmaven.source.skip=true \
  -Dferry.build.dir="$BUILD") >"$log" 2>&1 ||
  { tail -40 "$log"; echo "Maven failed (log: $log)" >&2; exit 1; }
cp "$HERE/target/ferry-arrow-0.1.0.jar" "$BUILD/java/ferry-arrow.jar.tmp"
mv "$BUILD/java/ferry-arrow.jar.tmp" "$BUILD/java/ferry-arrow.jar"
# The plugin's classes only (not the JUnit tests next to them).
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
tar -C "$HERE/target/test-classes" --exclude='*Test.class' --exclude='*Test$*.class' -cf - io/github/ferryarrow/ferry/it |
  tar -C "$stage" -xf -
jar cf "$BUILD/java/ferry-it.jar.tmp" -C "$stage" io
mv "$BUILD/java/ferry-it.jar.tmp" "$BUILD/java/ferry-it.jar"
