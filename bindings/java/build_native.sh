#!/usr/bin/env bash
# Builds libferry_jni.so: the committed SWIG wrapper (src/main/c/generated) plus
# the hand-written support and test helpers, linked against the shared
# libferry.so of $FERRY_BUILD_DIR (never a static copy).
# Usage: build_native.sh OUT_DIR [RESOURCE_DIR]
#   OUT_DIR       receives libferry_jni.so (java.library.path for tests)
#   RESOURCE_DIR  optional; receives a copy for the jar (/native/linux-x86_64/)
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="${FERRY_ROOT:-$(cd "$HERE/../.." && pwd)}"
BUILD="${FERRY_BUILD_DIR:-$ROOT/build}"
out_dir="${1:?usage: build_native.sh OUT_DIR [RESOURCE_DIR]}"
resource_dir="${2:-}"

if [ -z "${JAVA_HOME:-}" ]; then
  JAVA_HOME="$(dirname "$(dirname "$(readlink -f "$(command -v javac)")")")"
fi
[ -f "$JAVA_HOME/include/jni.h" ] || { echo "build_native.sh: no jni.h under JAVA_HOME=$JAVA_HOME" >&2; exit 1; }
[ -f "$BUILD/lib/libferry.so" ] || { echo "build_native.sh: $BUILD/lib/libferry.so missing; run scripts/build.sh" >&2; exit 1; }

src="$HERE/src/main/c"
mkdir -p "$out_dir"
# -fno-strict-aliasing: SWIG's wrappers cast through *(T **)&jarg.
# RUNPATH: the build's lib dir, so tests need no LD_LIBRARY_PATH.
gcc -std=c11 -D_GNU_SOURCE -O2 -g -fPIC -shared -fno-strict-aliasing \
  -Wall -Wextra -Wno-unused-parameter -Werror \
  -I"$JAVA_HOME/include" -I"$JAVA_HOME/include/linux" -I"$ROOT/core/include" -I"$src" \
  "$src/generated/ferry_java_wrap.c" "$src/ferry_jni_support.c" "$src/ferry_jni_handoff.c" "$src/ferry_jni_slab.c" \
  "$src/ferry_jni_dlpack.c" "$src/ferry_jni_testing.c" \
  -L"$BUILD/lib" -lferry -lpthread -Wl,-rpath,"$BUILD/lib" -Wl,--no-undefined \
  -o "$out_dir/libferry_jni.so.tmp"
mv "$out_dir/libferry_jni.so.tmp" "$out_dir/libferry_jni.so"
if [ -n "$resource_dir" ]; then
  mkdir -p "$resource_dir"
  cp "$out_dir/libferry_jni.so" "$resource_dir/libferry_jni.so"
fi
