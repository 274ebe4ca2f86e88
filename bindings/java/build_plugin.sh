#!/usr/bin/env bash
# Builds only what the Java test plugin needs, without running the tests:
# the jar and libferry_jni.so (Maven, tests skipped) into $FERRY_BUILD_DIR/java,
# and $FERRY_BUILD_DIR/plugins/libferry_it_java.so with the .conf that tells
# its JVM where the binding is. bindings/java/test.sh builds the same and tests.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="${FERRY_ROOT:-$(cd "$HERE/../.." && pwd)}"
BUILD="${FERRY_BUILD_DIR:-$ROOT/build}"
if [ -z "${JAVA_HOME:-}" ]; then
  JAVA_HOME="$(dirname "$(dirname "$(readlink -f "$(command -v javac)")")")"
fi
export JAVA_HOME
mkdir -p "$BUILD/java" "$BUILD/plugins"
# --no-maven: the jar and JNI library are already built (test.sh builds them
# with the tests); only install them and build the plugin.
if [ "${1:-}" != --no-maven ]; then
  log="$BUILD/java/mvn-package.log"
  (cd "$HERE" && mvn -B -q package -DskipTests -Dferry.build.dir="$BUILD") >"$log" 2>&1 ||
    { tail -40 "$log"; echo "Maven failed (log: $log)" >&2; exit 1; }
fi
cp "$HERE/target/ferry-java-0.1.0.jar" "$BUILD/java/ferry-java.jar"
cp "$HERE/target/native/libferry_jni.so" "$BUILD/java/libferry_jni.so"
gcc -std=c11 -D_GNU_SOURCE -O2 -g -fPIC -shared -Wall -Wextra -Wno-unused-parameter -Werror \
  -I"$JAVA_HOME/include" -I"$JAVA_HOME/include/linux" -I"$ROOT/core/include" \
  -I"$ROOT/tests/integration" "$HERE/plugin/ferry_it_java.c" -ldl -lpthread \
  -o "$BUILD/plugins/libferry_it_java.so"
{
  echo "classpath=$BUILD/java/ferry-java.jar"
  echo "library_path=$BUILD/java"
  echo "java_home=$JAVA_HOME"
} >"$BUILD/plugins/libferry_it_java.conf"
