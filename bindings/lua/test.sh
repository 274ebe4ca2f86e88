#!/usr/bin/env bash
# Tests of ferry's Lua binding (called by the top-level test command):
#   1. the busted specs on Lua 5.4 and on LuaJIT (the same files; the backend
#      contract, hostile producers, features, devices, streams ...)
#   2. the GPU specs again on the CUDA and ROCm driver emulations
#      (FERRY_CUDA_LIBRARY / FERRY_HIP_LIBRARY = build/test-emu), both interpreters
#   3. the rock: luarocks lint, luarocks pack (a source rock of the committed
#      tree, from git+file:// instead of the rockspec's GitHub URL: offline),
#      and that source rock installed for Lua 5.4 and for LuaJIT (5.1) into a
#      scratch tree against an installed core (cmake --install), then used
#   4. `ferry check --plugin` of the Lua plugin's exports (Lua -> C): a few cases,
#      then every case of tests/integration/cases.txt on device=cuda and device=rocm
#   5. the matrix host with the C and Lua plugins (C -> Lua and Lua -> C, arrays and
#      streams) on every case with device=cuda and device=rocm, on the emulations
#   6. async device streams: `ferry check --async` of the Lua plugin's export, the
#      plugin's async lock test (plugin/async_lock_test.c: a Lua -> Lua pair whose
#      checker waits first), and the matrix host on tests/integration/cases_async.txt
#      (C -> Lua, Lua -> C and Lua -> Lua through the plugins' async entry points)
# The module, the plugin and the test helpers are CMake targets
# (bindings/lua/CMakeLists.txt); their links and exports are checked by
# scripts/check_artefacts.sh, the generated files by generators/regen.sh
# --check. Assumes scripts/test.sh's build step. Ends with "N passed, N failed".
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$HERE/../../scripts/lib.sh"
step() { echo "== lua: $*"; }
need_file "$BUILD/lua/5.4/ferry_core.so" "the Lua module" || exit 1
need_file "$BUILD/lib/libferry_hostile.so" "the hostile producers (tests/hostile)" || exit 1
EMU_CUDA="$BUILD/test-emu/libcuda_emu.so"
EMU_HIP="$BUILD/test-emu/libhip_emu.so"
ROCKSPEC="ferry-arrow-0.1.0-1.rockspec"

export LUA_PATH="$HERE/?.lua;$HERE/?/init.lua;$HERE/plugin/?.lua;;"
export LUA_CPATH="$BUILD/lua/5.4/?.so;;"
cd "$HERE" || exit 1
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# busted INTERPRETER [FILES...]: the specs on one interpreter; every spec is counted.
busted() {
  local lua="$1" log="$work/busted.log" counts s f e
  shift
  "$lua" /usr/bin/busted --output=utfTerminal "${@:-spec}" >"$log" 2>&1
  local rc=$?
  cat "$log"
  counts="$(sed -n 's/^\([0-9]*\) successes* \/ \([0-9]*\) failures* \/ \([0-9]*\) errors*.*/\1 \2 \3/p' "$log" | tail -n 1)"
  if [ -z "$counts" ]; then fail "busted on $lua: no summary (exit code $rc)"; return; fi
  read -r s f e <<<"$counts"
  FERRY_PASSED=$((FERRY_PASSED + s)); FERRY_FAILED=$((FERRY_FAILED + f + e))
  [ "$rc" -eq 0 ] || [ $((f + e)) -gt 0 ] || fail "busted on $lua: exit code $rc"
}

# --- 1. the specs ------------------------------------------------------------------
step "busted specs on Lua 5.4"
busted lua5.4
step "busted specs on LuaJIT (the same files)"
busted luajit

# --- 2. GPU specs on the driver emulations -------------------------------------------
if need_file "$EMU_CUDA" "the CUDA driver emulation" && need_file "$EMU_HIP" "the HIP emulation"; then
  for lua in lua5.4 luajit; do
    step "GPU specs on the CUDA and ROCm emulations ($lua)"
    FERRY_CUDA_LIBRARY="$EMU_CUDA" FERRY_HIP_LIBRARY="$EMU_HIP" FERRY_LUA_REQUIRE_GPU=cuda,rocm \
      busted "$lua" spec/gpu_spec.lua spec/features_spec.lua
  done
else
  fail "the GPU driver emulations are not built"
fi

# --- 3. the rock ---------------------------------------------------------------------
step "the rock: luarocks lint, pack, install (Lua 5.4 and LuaJIT)"
check "luarocks lint $ROCKSPEC" luarocks lint "$HERE/$ROCKSPEC"
prefix="$work/prefix"
if cmake --install "$BUILD" --prefix "$prefix" >"$work/install.log" 2>&1; then
  # The rockspec's source is GitHub; packing offline takes the committed tree of
  # this checkout instead (git+file://), which is what a tag of it would hold.
  sed -e "s|url = \"git+https://github.com/ferryarrow/ferry\"|url = \"git+file://$FERRY_ROOT\"|" \
      -e '/tag = "v0.1.0"/d' "$HERE/$ROCKSPEC" >"$work/$ROCKSPEC"
  if (cd "$work" && luarocks pack "$ROCKSPEC" >"$work/pack.log" 2>&1) && [ -f "$work/${ROCKSPEC%.rockspec}.src.rock" ]; then
    pass "luarocks pack: ${ROCKSPEC%.rockspec}.src.rock (the committed tree)"
    for v in 5.4 5.1; do
      lua=lua5.4; [ "$v" = 5.1 ] && lua=luajit
      tree="$work/tree$v"
      if (cd "$work" && env -u LUA_PATH -u LUA_CPATH luarocks --lua-version="$v" --tree="$tree" install \
            "./${ROCKSPEC%.rockspec}.src.rock" FERRY_DIR="$prefix" >"$work/rock$v.log" 2>&1) &&
         (cd "$work" && env -u LUA_PATH -u LUA_CPATH -u FERRY_BUILD_DIR bash -c "
            eval \"\$(luarocks --lua-version=$v --tree='$tree' path)\"
            $lua -e '
              local ferry = require(\"ferry\")
              local arr = ferry.array{ type = \"int32\", values = { 4, 5 } }
              assert(arr:value(1) == 5)
              assert(ferry.version() == \"0.1.0\")
              local loaded = ferry._backend.library_path or package.searchpath(\"ferry_core\", package.cpath)
              assert(loaded:find(\"$work\", 1, true), loaded)
              print(ferry.backend .. \": the installed rock works\")'" >>"$work/rock$v.log" 2>&1); then
        pass "the source rock installed for $lua (luarocks --lua-version=$v) and used"
      else
        cat "$work/rock$v.log"; fail "the source rock for $lua"
      fi
    done
  else
    cat "$work/pack.log"; fail "luarocks pack"
  fi
else
  cat "$work/install.log"; fail "cmake --install of the core (for the rock to build against)"
fi

# --- 4./5. the plugin on the CPU, sim, and the CUDA/ROCm emulations ------------------
step "ferry check --plugin (Lua -> C)"
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
  # the Lua producer's async export (eager) against the tool's strict checking consumer
  for case_spec in int32:window=2:batches=4 utf8:device=sim:window=1 int32:fail=get_next@2:window=3 \
      int32:batches=6:cancel=2 int32:fail=get_schema; do
    check "ferry check --plugin libferry_it_lua.so --case $case_spec --async" \
      "$BUILD/bin/ferry" check --plugin "$plugin" --case "$case_spec" --async
  done
else
  fail "ferry check: the tool or the plugin is not built"
fi

# cases.txt with every case moved to DEVICE (thread cases kept, reject lines dropped).
cases_on() {
  awk -v dev="$1" '
    /^[[:space:]]*(#|$)/ || /^reject / { next }
    { prefix = ""; c = $0
      if (c ~ /^thread /) { prefix = "thread "; c = substr(c, 8) }
      if (c ~ /device=[a-z]+/) sub(/device=[a-z]+/, "device=" dev, c); else c = c ":device=" dev
      print prefix c }' "$FERRY_ROOT/tests/integration/cases.txt"
}
for dev in cuda rocm; do
  step "every case on device=$dev (the $dev driver emulation): ferry check --plugin, Lua -> C"
  cases_on "$dev" >"$work/cases_$dev.txt"
  n=0; bad=0; skipped=0
  while read -r line; do
    case_spec="${line#thread }"
    # `ferry check` wants an injected get_next failure to arrive, also when the
    # stream ends first (N > batches + 1), which cases.md allows: its verdict
    # on those is about the tool, for every plugin (the C plugin's too); the
    # matrix host below runs them.
    if [[ "$case_spec" =~ fail=get_next@([0-9]+) ]]; then
      at="${BASH_REMATCH[1]}"; batches=3
      [[ "$case_spec" =~ batches=([0-9]+) ]] && batches="${BASH_REMATCH[1]}"
      if [ "$at" -gt $((batches + 1)) ]; then skipped=$((skipped + 1)); continue; fi
    fi
    for mode in "" "--stream"; do
      n=$((n + 1))
      # shellcheck disable=SC2086
      if ! FERRY_CUDA_LIBRARY="$EMU_CUDA" FERRY_HIP_LIBRARY="$EMU_HIP" \
           "$BUILD/bin/ferry" check --plugin "$plugin" --case "$case_spec" $mode >"$work/check.log" 2>&1; then
        bad=$((bad + 1)); echo "FAILED: ferry check --case $case_spec $mode"; tail -n 5 "$work/check.log"
      fi
    done
  done <"$work/cases_$dev.txt"
  [ "$skipped" -gt 0 ] && echo "SKIPPED by ferry check (run by the matrix host): $skipped case(s) whose injected failure comes after the end of the stream"
  [ "$bad" -eq 0 ] && pass "ferry check --plugin: $n checks on $dev" || fail "ferry check --plugin on $dev: $bad of $n failed"
done

# matrix_host WHAT LOG SUMMARY OK ARGS...: the matrix host with the C and
# Lua plugins over the driver emulations, with ARGS; shows its failures, its
# table and its summary (the last line matching SUMMARY), and passes WHAT when
# it exits 0 and a line matches OK.
matrix_host() {
  local what="$1" log="$2" summary="$3" ok_line="$4"; shift 4
  if ! need_file "$BUILD/bin/ferry_it_host" "the matrix host"; then
    fail "the matrix host is not built"; return
  fi
  FERRY_CUDA_LIBRARY="$EMU_CUDA" FERRY_HIP_LIBRARY="$EMU_HIP" \
    "$BUILD/bin/ferry_it_host" --plugin-dir "$BUILD/plugins" --plugins c,lua --require c,lua \
    "$@" >"$log" 2>&1
  local rc=$?
  grep -E '^FAIL' "$log" | head -n 40
  grep -A 4 '^producer \\ consumer' "$log"
  local line; line="$(grep -E "$summary" "$log" | tail -n 1)"
  echo "$line"
  if [ "$rc" -eq 0 ] && grep -qE "$ok_line" "$log"; then
    pass "$what: $line"
  else
    fail "$what (exit code $rc)"
  fi
}

step "matrix host: C -> Lua and Lua -> C on every case with device=cuda and device=rocm"
matrix_host "matrix host on cuda and rocm" "$work/matrix.log" '.' '^[0-9]+ passed, 0 failed' \
  --cases "$work/cases_cuda.txt" --cases "$work/cases_rocm.txt"

step "the Lua plugin's async checker lets go of the Lua lock while it waits (Lua -> Lua, checker first)"
if need_file "$BUILD/lua/test/lferry_plugin_async_test" "the async lock test"; then
  for case_spec in int32:window=2:batches=5 utf8:window=1:batches=3:fail=get_next@2; do
    check "lferry_plugin_async_test $case_spec" \
      "$BUILD/lua/test/lferry_plugin_async_test" "$BUILD/plugins/libferry_it_lua.so" "$case_spec"
  done
else
  fail "the async lock test is not built"
fi

step "matrix host: async device streams, C -> Lua, Lua -> C and Lua -> Lua (tests/integration/cases_async.txt)"
matrix_host "matrix host, async" "$work/matrix_async.log" '^async:' \
  '^async: [0-9]+ cases; [0-9]+ passed, 0 failed' \
  --case int32 --async-cases "$FERRY_ROOT/tests/integration/cases_async.txt" --async-timeout-ms 20000

finish
