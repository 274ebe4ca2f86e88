#!/usr/bin/env bash
# The Lua binding's benchmarks (not tests; ./dev.sh bench runs them):
#   1. bench/handoff.lua on Lua 5.4 and LuaJIT, one after the other, pinned to
#      one core when taskset exists: wall time of every handoff shape next to
#      its raw floor, measured in the same run;
#   2. bench/instructions.lua under callgrind (when valgrind is installed), on
#      Lua 5.4: instructions per handoff of the consumer paths, exact where wall time
#      on a shared machine is not (each case runs with N and 2N handoffs; the
#      difference / N is printed).
# The cross-runtime pairs (C -> Lua through the plugin) are measured by
# scripts/bench_pairs.sh. The module and the benchmark's C helper are CMake
# targets (scripts/build.sh builds them).
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
if ! command -v valgrind >/dev/null; then
  echo "SKIPPED instruction counts: valgrind is not installed"
  exit 0
fi
count() { # LUA N CASE -> instructions
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "$1" "$HERE/bench/instructions.lua" "$2" "$3" 2>&1 |
    sed -n 's/.*Collected : *\([0-9]*\).*/\1/p; s/.*I *refs: *\([0-9,]*\).*/\1/p' | tr -d , | tail -n 1
}
# Lua 5.4 only: LuaJIT's counts move with where its traces get compiled.
n=5000
for lua in lua5.4; do
  echo "== instructions per handoff, $lua (callgrind, ($n * 2 - $n) handoffs)"
  declare -A per=()
  for c in array_raw array_lean array_everyday stream_raw stream_reuse stream_objects; do
    a="$(count "$lua" "$n" "$c")"; b="$(count "$lua" "$((2 * n))" "$c")"
    per[$c]=$(((b - a) / n))
    echo "INSTRUCTIONS $lua $c ${per[$c]}"
  done
  for pair in "array_lean array_raw" "array_everyday array_raw" "stream_reuse stream_raw" \
              "stream_objects stream_raw"; do
    read -r x y <<<"$pair"
    awk -v x="${per[$x]}" -v y="${per[$y]}" -v lua="$lua" -v name="$x/$y" \
      'BEGIN { printf "INSTRUCTION_RATIO %s %s %.2f\n", lua, name, x / y }'
  done
  unset per
done
