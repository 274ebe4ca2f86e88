#!/usr/bin/env bash
# The new-user test of the Lua binding (issue 16): what a user does with
# nothing but bindings/lua/README.md.
#   1. the C core is installed into a prefix (cmake --install), as the README's
#      "Install" says, outside the source tree;
#   2. the rock is built from a checkout (a copy of bindings/lua, as a clone
#      has it) into the example project's own tree, for Lua 5.4 and for
#      LuaJIT: `luarocks --lua-version=5.4|5.1 --tree lua_modules make
#      bindings/lua/ferry-arrow-0.1.0-1.rockspec FERRY_DIR=PREFIX`;
#   3. examples/lua, copied to a temporary directory, runs on both
#      interpreters with only what `luarocks path` prints (no FERRY_*, no
#      LD_LIBRARY_PATH, no path into the build tree), and prints the expected
#      lines; device.lua once more on the CUDA driver emulation
#      (FERRY_CUDA_LIBRARY, the core's documented variable).
# Needs the core built in $FERRY_BUILD_DIR (scripts/build.sh), luarocks,
# lua5.4, luajit. Prints "N passed, N failed"; exits non-zero on a failure.
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
EXAMPLE=lua
USER_UNSET=(FERRY_LIBRARY FERRY_LUA_DIR LUA_PATH LUA_CPATH LUA_PATH_5_4 LUA_CPATH_5_4)
. "$HERE/../new_user.sh"
ROCKSPEC="bindings/lua/ferry-arrow-0.1.0-1.rockspec"


need_core

# --- 1. the core, installed ---------------------------------------------------
prefix="$tmp/prefix"
if cmake --install "$BUILD" --prefix "$prefix" >"$log" 2>&1 && [ -f "$prefix/include/ferry/ferry.h" ]; then
  pass "the core installed into $prefix"
else
  fail "cmake --install"
fi

# --- 2. the rock, from a checkout, into the project's tree ------------------------
checkout="$tmp/ferry"
mkdir -p "$checkout"
(cd "$ROOT" && git ls-files -co --exclude-standard bindings/lua | tar cf - -T -) | (cd "$checkout" && tar xf -)
app="$tmp/app"
mkdir -p "$app"
(cd "$HERE" && tar cf - --exclude=./test.sh --exclude=./lua_modules .) | (cd "$app" && tar xf -)
for v in 5.4 5.1; do
  if (cd "$checkout" && user luarocks --lua-version="$v" --tree "$app/lua_modules" make "$ROCKSPEC" \
        FERRY_DIR="$prefix") >"$log" 2>&1; then
    pass "luarocks --lua-version=$v --tree lua_modules make $ROCKSPEC FERRY_DIR=<prefix>"
  else
    fail "luarocks --lua-version=$v make"
  fi
done

# --- 3. the examples ---------------------------------------------------------------
# run VERSION INTERPRETER EXAMPLE [ENV...]: the example in the project, with
# the paths `luarocks path` gives for its tree.
run() {
  local v="$1" lua="$2" example="$3"
  shift 3
  (cd "$app" && user "$@" bash -c "eval \"\$(luarocks --lua-version=$v --tree lua_modules path)\" && $lua $example")
}
# expect LINE...: every line is in the output (fixed strings).
expect() {
  local missing=0 line
  for line in "$@"; do
    grep -qxF -- "$line" "$tmp/out" || { echo "    missing: $line" >>"$log"; missing=1; }
  done
  return "$missing"
}
for pair in "5.4 lua5.4" "5.1 luajit"; do
  read -r v lua <<<"$pair"
  backend="$lua"
  if run "$v" "$lua" quickstart.lua >"$tmp/out" 2>"$log" &&
     expect "ferry 0.1.0 on $backend" "values: [1, null, 3, 4]" "sum of non-null values: 8" "value(4): ERANGE"; then
    pass "quickstart.lua on $lua"
  else
    cat "$tmp/out" >>"$log"; fail "quickstart.lua on $lua"
  fi
  if run "$v" "$lua" producer.lua >"$tmp/out" 2>"$log" &&
     expect "row 0: ada 9.50" "row 2: linus 7.00" "sevens: 7 7 7" "stream batches: 101 202 303" \
            "still owned by Lua exports: 0"; then
    pass "producer.lua on $lua"
  else
    cat "$tmp/out" >>"$log"; fail "producer.lua on $lua"
  fi
  if run "$v" "$lua" consumer.lua >"$tmp/out" 2>"$log" &&
     expect "list 0: {1, 2} (child positions 0..2)" "list 1: {} (child positions 2..2)" \
            "dictionary: red green green null red" \
            "out of range: ERANGE (index 1 is out of range for a length of 1)" "stream sum: 25.0"; then
    pass "consumer.lua on $lua"
  else
    cat "$tmp/out" >>"$log"; fail "consumer.lua on $lua"
  fi
  if run "$v" "$lua" async.lua >"$tmp/out" 2>"$log" &&
     expect "batch: 1 squared is 1" "batch: 4 squared is 16" "producer: ended cleanly" \
            "still owned by Lua exports: 0"; then
    pass "async.lua on $lua"
  else
    cat "$tmp/out" >>"$log"; fail "async.lua on $lua"
  fi
  for gpu in none cuda; do
    env=()
    device_line="device: ext_dev:0 (no GPU: the simulated device)"
    dlpack_line="dlpack: float32[3] on ext_dev"
    if [ "$gpu" = cuda ]; then
      env=(FERRY_CUDA_LIBRARY="$BUILD/test-emu/libcuda_emu.so")
      device_line="device: cuda:0 (a GPU)"
      dlpack_line="dlpack: float32[3] on cuda"
    fi
    if run "$v" "$lua" device.lua "${env[@]}" >"$tmp/out" 2>"$log" &&
       expect "$device_line" "sync event: yes" "to_host: [1, null, 3, 4]" "$dlpack_line" \
              "dlpack back: 0.5 1.5 2.5" "device allocations left: 0"; then
      pass "device.lua on $lua (${gpu/none/no GPU: sim})"
    else
      cat "$tmp/out" >>"$log"; fail "device.lua on $lua ($gpu)"
    fi
  done
done

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
