#!/usr/bin/env bash
# Tests of ferry's Lua binding (called by the top-level test command):
#   1. generated files are fresh (SWIG wrapper, LuaJIT cdef.lua)
#   2. build the Lua 5.4 module, the plugin and the C host (links libferry.so)
#   3. the same busted specs on Lua 5.4 and on LuaJIT
#   4. luarocks make into a scratch tree, then load the installed module
#   5. the plugin from a C host (Lua <-> Lua, Lua <-> C when the C plugin exists)
#      and through `ferry check --plugin` when the tool exists
# Assumes the core is built in $FERRY_BUILD_DIR (default $FERRY_ROOT/build).
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export FERRY_ROOT="${FERRY_ROOT:-$(cd "$HERE/../.." && pwd)}"
export FERRY_BUILD_DIR="${FERRY_BUILD_DIR:-$FERRY_ROOT/build}"
BUILD="$FERRY_BUILD_DIR"
status=0
step() { echo "== lua: $*"; }
fail() { echo "FAIL lua: $*"; status=1; }

step "generated files are fresh"
bash "$FERRY_ROOT/generators/lua/gen.sh" --check || fail "generated files are stale"

step "build the module, the plugin and the benchmark helper"
if ! bash "$HERE/build.sh" all; then
  echo "FAIL lua: build failed"
  exit 1
fi
# The module must link the shared core, never a static copy.
readelf -d "$BUILD/lua/5.4/ferry_core.so" | grep -q 'NEEDED.*libferry\.so' ||
  fail "ferry_core.so does not link libferry.so dynamically"
readelf -d "$BUILD/plugins/libferry_it_lua.so" | grep -q 'NEEDED.*libferry\.so' ||
  fail "libferry_it_lua.so does not link libferry.so dynamically"
exported="$(nm -D --defined-only "$BUILD/lua/5.4/ferry_core.so" | awk '{print $3}' | grep -v '^_' | sort | tr '\n' ' ')"
[ "$exported" = "luaopen_ferry_core " ] || fail "ferry_core.so exports more than luaopen_ferry_core: $exported"

export LUA_PATH="$HERE/?.lua;$HERE/?/init.lua;$HERE/plugin/?.lua;;"
export LUA_CPATH="$BUILD/lua/5.4/?.so;;"
cd "$HERE" || exit 1

step "busted specs on Lua 5.4"
lua5.4 /usr/bin/busted --output=utfTerminal spec || fail "busted on Lua 5.4"
step "busted specs on LuaJIT (the same files)"
luajit /usr/bin/busted --output=utfTerminal spec || fail "busted on LuaJIT"

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
    print("luarocks-installed module: OK")' || fail "the luarocks-installed module does not work"
else
  cat "$rocks/log"
  fail "luarocks make"
fi
rm -rf "$rocks"

step "the plugin from a C host"
gcc -std=c11 -D_GNU_SOURCE -O1 -g -Wall -Wextra -Werror -Wno-unused-parameter \
  -I"$FERRY_ROOT/core/include" -I"$FERRY_ROOT/tests/integration" "$HERE/plugin/test/it_host.c" \
  -o "$BUILD/lua/it_host" -ldl -lpthread -L"$BUILD/lib" -Wl,-rpath,"$BUILD/lib" -lferry ||
  fail "building the C host"
if [ ! -e "$BUILD/plugins/libferry_it_c.so" ]; then
  echo "SKIP lua: $BUILD/plugins/libferry_it_c.so is missing: Lua <-> C cells do not run"
fi
timeout 120 "$BUILD/lua/it_host" "$BUILD" || fail "C host against the Lua plugin"

step "ferry check --plugin"
if [ -x "$BUILD/bin/ferry" ]; then
  checks=0
  for case_spec in int32:nulls=3 utf8:offset=2:device=sim list_int32:nulls=2 \
      struct_int32_utf8:offset=1 dict_int32_utf8:nulls=3 int64:seed=4294967295; do
    for mode in "" "--stream"; do
      # shellcheck disable=SC2086
      if "$BUILD/bin/ferry" check --plugin "$BUILD/plugins/libferry_it_lua.so" --case "$case_spec" $mode >/dev/null; then
        checks=$((checks + 1))
      else
        "$BUILD/bin/ferry" check --plugin "$BUILD/plugins/libferry_it_lua.so" --case "$case_spec" $mode
        fail "ferry check --plugin ... --case $case_spec $mode"
      fi
    done
  done
  echo "ferry check --plugin: $checks passed"
else
  echo "SKIP lua: $BUILD/bin/ferry is missing: ferry check --plugin does not run"
fi

if [ "$status" -eq 0 ]; then echo "lua: all tests passed"; else echo "lua: FAILED"; fi
exit "$status"
