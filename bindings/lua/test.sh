#!/usr/bin/env bash
# Tests of ferry's Lua binding (called by the top-level test command):
#   1. the same busted specs on Lua 5.4 and on LuaJIT
#   2. luarocks make into a scratch tree, then load the installed module
#   3. the plugin through `ferry check --plugin`
# The module, the plugin and the benchmark helper are CMake targets
# (bindings/lua/CMakeLists.txt); their links and exports are checked by
# scripts/check_artefacts.sh, the generated files by generators/regen.sh
# --check, and the plugin's handoffs with every other runtime by the matrix
# host. Assumes scripts/test.sh's build step. Ends with "N passed, N failed".
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$HERE/../../scripts/lib.sh"
step() { echo "== lua: $*"; }
need_file "$BUILD/lua/5.4/ferry_core.so" "the Lua module" || exit 1

export LUA_PATH="$HERE/?.lua;$HERE/?/init.lua;$HERE/plugin/?.lua;;"
export LUA_CPATH="$BUILD/lua/5.4/?.so;;"
cd "$HERE" || exit 1

# busted INTERPRETER: the specs on one interpreter; every spec is counted.
busted() {
  local log counts s f e
  log="$(mktemp)"
  "$1" /usr/bin/busted --output=utfTerminal spec >"$log" 2>&1
  local rc=$?
  cat "$log"
  counts="$(sed -n 's/^\([0-9]*\) successes* \/ \([0-9]*\) failures* \/ \([0-9]*\) errors*.*/\1 \2 \3/p' "$log" | tail -n 1)"
  rm -f "$log"
  if [ -z "$counts" ]; then fail "busted on $1: no summary (exit code $rc)"; return; fi
  read -r s f e <<<"$counts"
  FERRY_PASSED=$((FERRY_PASSED + s)); FERRY_FAILED=$((FERRY_FAILED + f + e))
  [ "$rc" -eq 0 ] || [ $((f + e)) -gt 0 ] || fail "busted on $1: exit code $rc"
}
step "busted specs on Lua 5.4"
busted lua5.4
step "busted specs on LuaJIT (the same files)"
busted luajit

step "luarocks make"
rocks="$(mktemp -d)"
# luarocks builds in the current directory: work on a copy of the sources.
mkdir -p "$rocks/src" && cp -r "$HERE/ferry" "$HERE/src" "$HERE/ferry-scm-1.rockspec" "$rocks/src/"
if (cd "$rocks/src" && luarocks --lua-version=5.4 make --tree="$rocks/tree" ferry-scm-1.rockspec \
      FERRY_INCDIR="$FERRY_ROOT/core/include" FERRY_LIBDIR="$BUILD/lib" \
      "LIBFLAG=-shared -Wl,-rpath,$BUILD/lib" >"$rocks/log" 2>&1); then
  LUA_PATH="$rocks/tree/share/lua/5.4/?.lua;$rocks/tree/share/lua/5.4/?/init.lua" \
  LUA_CPATH="$rocks/tree/lib/lua/5.4/?.so" lua5.4 -e '
    local ferry = require("ferry")
    local arr = ferry.array{ type = "int32", values = { 4, 5 } }
    assert(arr:value(1) == 5 and ferry.backend == "lua5.4")
    assert(package.searchpath("ferry_core", package.cpath):find("tree", 1, true))
    print("luarocks-installed module: OK")' && pass "luarocks make: the installed module works" ||
    fail "the luarocks-installed module does not work"
else
  cat "$rocks/log"
  fail "luarocks make"
fi
rm -rf "$rocks"

step "ferry check --plugin"
plugin="$BUILD/plugins/libferry_it_lua.so"
if need_file "$BUILD/bin/ferry" "the ferry tool" && need_file "$plugin" "the Lua plugin"; then
  for case_spec in int32:nulls=3 utf8:offset=2:device=sim list_int32:nulls=2 \
      struct_int32_utf8:offset=1 dict_int32_utf8:nulls=3 int64:seed=4294967295; do
    for mode in "" "--stream"; do
      # shellcheck disable=SC2086
      check "ferry check --plugin libferry_it_lua.so --case $case_spec $mode" \
        "$BUILD/bin/ferry" check --plugin "$plugin" --case "$case_spec" $mode
    done
  done
else
  fail "ferry check: the tool or the plugin is not built"
fi
finish
