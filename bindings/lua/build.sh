#!/usr/bin/env bash
# Builds ferry's Lua pieces against the shared core in $FERRY_BUILD_DIR:
#   $FERRY_BUILD_DIR/lua/5.4/ferry_core.so          the Lua 5.4 C module
#   $FERRY_BUILD_DIR/plugins/libferry_it_lua.so     the cross-language test plugin
#   $FERRY_BUILD_DIR/lua/bench/*.so                  the benchmark's C helper
# Everything links libferry.so dynamically (never a static copy of the core).
# Usage: build.sh [module|plugin|bench|all]   (default all)
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="${FERRY_ROOT:-$(cd "$HERE/../.." && pwd)}"
BUILD="${FERRY_BUILD_DIR:-$ROOT/build}"
what="${1:-all}"

LIBDIR="$BUILD/lib"
if [ ! -e "$LIBDIR/libferry.so" ]; then
  echo "lua build: $LIBDIR/libferry.so is missing; build the core first (./dev.sh build)" >&2
  exit 1
fi
LUA_CFLAGS="$(pkg-config --cflags lua5.4 2>/dev/null || echo -I/usr/include/lua5.4)"
CFLAGS=(-std=c11 -D_GNU_SOURCE -O2 -g -fPIC -Wall -Wextra -Wno-unused-parameter
  -I"$ROOT/core/include" -I"$HERE/src" $LUA_CFLAGS)
# The SWIG output is generated code: compile it without -Wextra noise but
# still with -Werror on what -Wall reports.
GEN_CFLAGS=("${CFLAGS[@]}" -Wno-unused-function -Wno-sign-compare)
LINK=(-L"$LIBDIR" -Wl,-rpath,"$LIBDIR" -lferry -lpthread)

obj="$BUILD/lua/obj"
mkdir -p "$obj" "$BUILD/lua/5.4" "$BUILD/plugins" "$BUILD/lua/bench"

build_module() {
  gcc "${CFLAGS[@]}" -Werror -fvisibility=hidden -c "$HERE/src/lferry_support.c" -o "$obj/lferry_support.o"
  gcc "${GEN_CFLAGS[@]}" -Werror -fvisibility=hidden -DGCC_HASCLASSVISIBILITY \
    -c "$HERE/src/generated/ferry_core_wrap.c" -o "$obj/ferry_core_wrap.o"
  # A Lua module does not link liblua: the interpreter provides the symbols.
  gcc -shared -o "$BUILD/lua/5.4/ferry_core.so" "$obj/ferry_core_wrap.o" "$obj/lferry_support.o" \
    "${LINK[@]}"
}

build_plugin() {
  # The plugin embeds its own Lua 5.4 state, so it links liblua5.4, and it
  # compiles the module's C in (hidden) so no ferry_core.so is needed.
  gcc "${CFLAGS[@]}" -Werror -fvisibility=hidden -I"$ROOT/tests/integration" \
    -DFERRY_LUA_SOURCE_DIR="\"$HERE\"" -c "$HERE/plugin/ferry_it_lua.c" -o "$obj/ferry_it_lua.o"
  gcc -shared -o "$BUILD/plugins/libferry_it_lua.so" "$obj/ferry_it_lua.o" \
    "$obj/ferry_core_wrap.o" "$obj/lferry_support.o" -llua5.4 "${LINK[@]}" \
    -Wl,--exclude-libs,ALL
}

build_bench() {
  # Plain C for LuaJIT's FFI, and the same code as a Lua 5.4 module.
  gcc "${CFLAGS[@]}" -Werror -fvisibility=hidden -shared "$HERE/bench/lferry_bench.c" \
    -o "$BUILD/lua/bench/liblferry_bench.so" "${LINK[@]}"
  gcc "${CFLAGS[@]}" -Werror -fvisibility=hidden -DLFERRY_BENCH_LUA54 -shared \
    "$HERE/bench/lferry_bench.c" -o "$BUILD/lua/bench/lferry_bench54.so" "${LINK[@]}"
}

case "$what" in
  module) build_module ;;
  plugin) build_module && build_plugin ;;
  bench) build_bench ;;
  all) build_module && build_plugin && build_bench ;;
  *) echo "usage: build.sh [module|plugin|bench|all]" >&2; exit 2 ;;
esac
