#!/usr/bin/env bash
# Builds the cross-language harness against the core in $FERRY_BUILD_DIR
# (default build/, made by scripts/build.sh):
#   host      BUILD/bin/ferry_it_host              the C host of the matrix
#   selftest  BUILD/it/libferry_it_misbehaving.so  the host's self-test plugin
#   asan      BUILD/it/asan/ferry_it_host          the host under ASan+UBSan, linked to
#             the sanitizer build of the core (BUILD/san-address-undefined)
#   jvm       BUILD/it/jvm_host/                   the JVM host (classes + JNI helper)
#   demo      BUILD/bin/ferry_it_demo              the polyglot demo driver
#   bench     BUILD/bin/ferry_it_bench             the handoff benchmark
# Usage: build.sh [TARGET...]   (default: host selftest)
# Quiet when all is well; prints the compiler's output on failure.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="${FERRY_ROOT:-$(cd "$HERE/../.." && pwd)}"
BUILD="${FERRY_BUILD_DIR:-$ROOT/build}"
[ -f "$BUILD/lib/libferry.so" ] || bash "$ROOT/scripts/build.sh"

CFLAGS=(-std=c11 -D_GNU_SOURCE -O2 -g -Wall -Wextra -Werror -Wno-unused-parameter
        -I"$ROOT/core/include" -I"$ROOT/tests/integration")
HOST_SOURCES=("$HERE"/host/ledger.c "$HERE"/host/stream_watch.c "$HERE"/host/plugins.c
              "$HERE"/host/case_list.c "$HERE"/host/handoff.c)
DEFAULT_CASES=(-DFERRY_IT_DEFAULT_CASES="\"$HERE/cases.txt\"")

# cc OUTPUT ARGS...: compiles into a temporary file and renames it, so that a
# failed build never leaves a stale binary that looks fresh.
cc() {
  local out="$1"; shift
  mkdir -p "$(dirname "$out")"
  gcc "$@" -o "$out.tmp"
  mv "$out.tmp" "$out"
}

java_home() {
  if [ -n "${JAVA_HOME:-}" ] && [ -f "$JAVA_HOME/include/jni.h" ]; then echo "$JAVA_HOME"; return; fi
  dirname "$(dirname "$(readlink -f "$(command -v javac)")")"
}

build_host() {
  cc "$BUILD/bin/ferry_it_host" "${CFLAGS[@]}" "${DEFAULT_CASES[@]}" "${HOST_SOURCES[@]}" \
    "$HERE/host/host.c" -L"$BUILD/lib" -lferry -ldl -lpthread -Wl,-rpath,"$BUILD/lib"
}

build_selftest() {
  cc "$BUILD/it/libferry_it_misbehaving.so" "${CFLAGS[@]}" -shared -fPIC \
    "$HERE/host/selftest/misbehaving_plugin.c" -L"$BUILD/lib" -lferry -ldl \
    -Wl,-rpath,"$BUILD/lib"
}

build_asan() {
  local san="$BUILD/san-address-undefined"
  local generator=(); command -v ninja >/dev/null && generator=(-G Ninja)
  if [ ! -f "$san/CMakeCache.txt" ]; then
    cmake -S "$ROOT" -B "$san" "${generator[@]}" -DCMAKE_BUILD_TYPE=Debug \
      -DFERRY_SANITIZE=address,undefined >/dev/null
  fi
  cmake --build "$san" --target ferry ferry_it_c -j2 >"$BUILD/it-asan-build.log" 2>&1 ||
    { cat "$BUILD/it-asan-build.log"; exit 1; }
  cc "$BUILD/it/asan/ferry_it_host" "${CFLAGS[@]}" "${DEFAULT_CASES[@]}" \
    -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all \
    "${HOST_SOURCES[@]}" "$HERE/host/host.c" -L"$san/lib" -lferry -ldl -lpthread \
    -Wl,-rpath,"$san/lib"
}

build_jvm() {
  local jh; jh="$(java_home)"
  local out="$BUILD/it/jvm_host"
  cc "$out/libferry_it_jvm_host.so" "${CFLAGS[@]}" -shared -fPIC \
    -I"$jh/include" -I"$jh/include/linux" -I"$HERE/host" \
    "${HOST_SOURCES[@]}" "$HERE"/jvm_host/native/*.c \
    -L"$BUILD/lib" -lferry -ldl -lpthread -Wl,-rpath,"$BUILD/lib"
  mkdir -p "$out/classes"
  javac -Xlint:all -Werror -d "$out/classes" "$HERE"/jvm_host/src/org/ferry/it/*.java
}

build_demo() {
  cc "$BUILD/bin/ferry_it_demo" "${CFLAGS[@]}" -I"$HERE/host" "${HOST_SOURCES[@]}" \
    "$HERE/demo/demo.c" -L"$BUILD/lib" -lferry -ldl -lpthread -lm -Wl,-rpath,"$BUILD/lib"
}

build_bench() {
  cc "$BUILD/bin/ferry_it_bench" "${CFLAGS[@]}" -I"$HERE/host" "${HOST_SOURCES[@]}" \
    "$HERE/bench/bench.c" -L"$BUILD/lib" -lferry -ldl -lpthread -lm -Wl,-rpath,"$BUILD/lib"
}

targets=("$@")
[ "${#targets[@]}" -eq 0 ] && targets=(host selftest)
for t in "${targets[@]}"; do
  case "$t" in
    host) build_host ;;
    selftest) build_selftest ;;
    asan) build_asan ;;
    jvm) build_jvm ;;
    demo) build_demo ;;
    bench) build_bench ;;
    *) echo "build.sh: unknown target $t" >&2; exit 2 ;;
  esac
done
