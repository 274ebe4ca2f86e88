#!/usr/bin/env bash
# Runs the Lua handoff benchmark (bench/handoff.lua) on Lua 5.4 and LuaJIT,
# one after the other (never in parallel), pinned to one core when taskset
# exists. The module and the benchmark's C helper are CMake targets
# (scripts/build.sh builds them).
# Usage: bindings/lua/bench.sh      (FERRY_BENCH_N=iterations, default 200000)
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$HERE/../../scripts/lib.sh"
need_file "$BUILD/lua/5.4/ferry_core.so" "the Lua module"
need_file "$BUILD/lua/bench/liblferry_bench.so" "the benchmark's C helper"
export LUA_PATH="$HERE/?.lua;$HERE/?/init.lua;;"
export LUA_CPATH="$FERRY_BUILD_DIR/lua/5.4/?.so;;"
pin=()
command -v taskset >/dev/null && pin=(taskset -c 1)
for lua in lua5.4 luajit; do
  echo "== $lua (load $(cut -d' ' -f1 /proc/loadavg))"
  "${pin[@]}" "$lua" "$HERE/bench/handoff.lua"
done
