#!/usr/bin/env bash
# The new-user test of the Java binding (issue 16): what a user does with
# nothing but bindings/java/README.md.
#   1. ferry-arrow is installed into the local Maven repository the way the
#      README says (`mvn install` in bindings/java, after the native build);
#   2. examples/java is copied to a temporary directory outside the tree and
#      built with its pom, which depends on io.github.ferryarrow:ferry-arrow
#      exactly as the README's snippet does; no ferry, loader or Java variable
#      is set (the jar loads its own native libraries);
#   3. `mvn exec:exec` runs it and it prints the expected lines; once more on
#      the CUDA driver emulation (FERRY_CUDA_LIBRARY, the core's documented
#      variable), where its device array goes to "cuda:0".
# Needs the core built in $FERRY_BUILD_DIR (scripts/build.sh), a JDK 17, Maven
# and Maven Central. Prints "N passed, N failed"; exits non-zero on a failure.
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
EXAMPLE=java
USER_UNSET=(FERRY_JAVA_OPTIONS JAVA_TOOL_OPTIONS CLASSPATH)
. "$HERE/../new_user.sh"

if [ ! -f "$BUILD/java/libferry_jni.so" ]; then
  echo "java example: $BUILD/java/libferry_jni.so is missing: build ferry first (scripts/build.sh)"
  echo "0 passed, 1 failed"
  exit 1
fi

# --- 1. install ferry-arrow as the README says ------------------------------
if (cd "$ROOT/bindings/java" && mvn -B -q install -DskipTests -Dferry.build.dir="$BUILD") \
     >"$log" 2>&1; then
  pass "mvn install in bindings/java (io.github.ferryarrow:ferry-arrow:0.1.0)"
else
  fail "mvn install in bindings/java"
fi

# --- 2. the example, copied out of the tree ---------------------------------
copy_example target
case "$app" in
  "$ROOT"/*) fail "the copy $app is inside the checkout" ;;
  *) pass "copied to $app" ;;
esac
if grep -q "<artifactId>ferry-arrow</artifactId>" "$app/pom.xml" &&
   grep -q "<groupId>io.github.ferryarrow</groupId>" "$app/pom.xml"; then
  pass "the pom depends on io.github.ferryarrow:ferry-arrow"
else
  fail "the example's pom does not depend on io.github.ferryarrow:ferry-arrow"
fi
if (cd "$app" && user mvn -B -q package) >"$log" 2>&1; then
  pass "mvn package"
else
  fail "mvn package"
fi

# --- 3. run it ---------------------------------------------------------------
expect_output() { # expect_output FILE DEVICE_LINE_PATTERN
  expect_lines "$1" "^ferry 0\.1\.0$" "^consumer: \[1, null, 3, 4\], sum 8$" \
                   "^stream: 3 batches, 6 rows: a,b,c,d,e,f$" "^arrow: \[1, null, 3, 4\]$" \
                   "^arrow -> ferry: \[1, null, 3, 4\]$" "$2"
}
if (cd "$app" && user mvn -B -q exec:exec) >"$log" 2>&1 && sed "s/\x1b\[[0-9;]*m//g" "$log" >"$tmp/out" &&
   expect_output "$tmp/out" \
     '^device: (ext_dev:0 \(no GPU: the simulated device\)|cuda:0|rocm:0) -> host \[1, null, 3, 4\]$'; then
  pass "mvn exec:exec prints every line"
else
  fail "running the example"
fi
emu="$BUILD/test-emu/libcuda_emu.so"
if [ ! -f "$emu" ]; then
  fail "the CUDA driver emulation $emu is not built"
elif (cd "$app" && user FERRY_CUDA_LIBRARY="$emu" mvn -B -q exec:exec) >"$log" 2>&1 &&
     sed "s/\x1b\[[0-9;]*m//g" "$log" >"$tmp/out" && expect_output "$tmp/out" '^device: cuda:0 -> host \[1, null, 3, 4\]$'; then
  pass "on a GPU (the CUDA driver emulation) the device array goes to cuda:0 and back"
else
  fail "the example on the CUDA driver emulation"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
