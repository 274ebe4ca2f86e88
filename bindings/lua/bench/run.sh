#!/usr/bin/env bash
# Runs the Lua handoff benchmark on Lua 5.4 and LuaJIT, one after the other
# (never in parallel), pinned to one core when taskset exists.
# Usage: bindings/lua/bench/run.sh      (FERRY_BENCH_N=iterations, default 200000)
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export FERRY_ROOT="${FERRY_ROOT:-$(cd "$HERE/../.." && pwd)}"
export FERRY_BUILD_DIR="${FERRY_BUILD_DIR:-$FERRY_ROOT/build}"
bash "$HERE/build.sh" module >/dev/null
bash "$HERE/build.sh" bench >/dev/null
export LUA_PATH="$HERE/?.lua;$HERE/?/init.lua;;"
export LUA_CPATH="$FERRY_BUILD_DIR/lua/5.4/?.so;;"
pin=()
command -v taskset >/dev/null && pin=(taskset -c 1)
for lua in lua5.4 luajit; do
  echo "== $lua (load $(cut -d' ' -f1 /proc/loadavg))"
  "${pin[@]}" "$lua" "$HERE/bench/handoff.lua"
done
