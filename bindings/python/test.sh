#!/usr/bin/env bash
# Tests of ferry's Python package (bindings/python), for the test command:
#   1. the generated raw layer (src/ferry/_cdef.py) is fresh
#   2. the virtual environment $FERRY_BUILD_DIR/python/venv with the test
#      dependencies from PyPI (quiet when present), ferry-arrow installed
#      from this directory, and the plugin build/plugins/libferry_it_python.so
#   3. pytest: every protocol both ways (pyarrow, nanoarrow, Polars, NumPy,
#      the CUDA emulation; GPU interop skips loudly without a GPU) and the
#      Python-hosted matrix (Python, the C plugin and the Python plugin)
#   4. `ferry check --plugin` over tests/integration/cases.txt (arrays and
#      streams): the embedded interpreter in a C host
#   5. the C matrix host with the Python plugin (when the host is built)
#   6. the benchmark runs (figures printed, not judged)
#   7. examples/python/test.sh: a new user's pip install and the examples
# Needs: the core built (scripts/build.sh: build/lib/libferry.so, build/bin/ferry,
# build/plugins/libferry_it_c.so, build/test-emu/libcuda_emu.so), python3 with
# venv, gcc, and PyPI (cffi numpy pyarrow nanoarrow polars pytest setuptools wheel).
# Prints "N passed, N failed" (steps) and exits non-zero on any failure.
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=env.sh
source "$HERE/env.sh"
BUILD="$FERRY_BUILD_DIR"
passed=0; failed=0
ok() { passed=$((passed + 1)); echo "ok: python: $*"; }
fail() { failed=$((failed + 1)); echo "FAILED: python: $*"; }
finish() { echo "python steps: $passed passed, $failed failed"; [ "$failed" -eq 0 ]; exit $?; }

echo "== python: generated raw layer is fresh"
if bash "$FERRY_ROOT/generators/python/gen.sh" --check; then ok "generated code fresh"; else fail "generated code stale"; fi

if [ ! -e "$BUILD/lib/libferry.so" ] || [ ! -e "$BUILD/plugins/libferry_it_c.so" ]; then
  echo "== python: building the core first"
  bash "$FERRY_ROOT/scripts/build.sh" || { fail "core build"; finish; }
fi

echo "== python: venv, package and plugin"
if bash "$HERE/build_plugin.sh"; then ok "package and plugin built"; else fail "package or plugin build"; finish; fi
# The plugin links the shared core and libpython, never a static copy.
readelf -d "$BUILD/plugins/libferry_it_python.so" | grep -q 'NEEDED.*libferry\.so' &&
  readelf -d "$BUILD/plugins/libferry_it_python.so" | grep -q 'NEEDED.*libpython' &&
  ok "plugin links libferry.so and libpython dynamically" || fail "plugin linkage"

echo "== python: pytest"
if (cd "$HERE/tests" && FERRY_PY_MATRIX_PLUGINS="${FERRY_PY_MATRIX_PLUGINS:-c python}" \
      "$PY" -m pytest -q -p no:cacheprovider -rs .); then
  ok "pytest"
else
  fail "pytest"
fi

echo "== python: ferry check --plugin over tests/integration/cases.txt (embedded Python)"
checked=0; bad=0
while read -r line; do
  case "$line" in ''|'#'*) continue ;; esac
  if [ "${line%% *}" = reject ]; then
    word="$(echo "$line" | cut -d' ' -f2)"; spec="$(echo "$line" | cut -d' ' -f3-)"
    out="$("$BUILD/bin/ferry" check --plugin "$BUILD/plugins/libferry_it_python.so" --case "$spec" 2>&1)"
    checked=$((checked + 1))
    echo "$out" | grep -q "FAIL return_code.*$word" || { bad=$((bad + 1)); echo "  not refused naming $word: $spec"; echo "$out" | tail -2; }
    continue
  fi
  for mode in "" --stream; do
    # The tool expects a get_next@N failure even past the end of the stream;
    # the shared producers (the C plugin's too) end first, as cases.md says.
    if [ -n "$mode" ] && [[ "$line" =~ fail=get_next@([0-9]+) ]]; then
      n="${BASH_REMATCH[1]}"; b=3; [[ "$line" =~ batches=([0-9]+) ]] && b="${BASH_REMATCH[1]}"
      [ "$n" -gt $((b + 1)) ] && continue
    fi
    checked=$((checked + 1))
    out="$(timeout 300 "$BUILD/bin/ferry" check --plugin "$BUILD/plugins/libferry_it_python.so" --case "$line" $mode 2>&1)" ||
      { bad=$((bad + 1)); echo "  FAIL $line $mode"; echo "$out" | tail -3; }
  done
done <"$FERRY_ROOT/tests/integration/cases.txt"
[ "$bad" -eq 0 ] && ok "ferry check: $checked checks" || fail "ferry check: $bad of $checked failed"

if [ -x "$BUILD/bin/ferry_it_host" ]; then
  echo "== python: the C matrix host with the Python plugin (in the lua slot until the host knows python)"
  if timeout 900 "$BUILD/bin/ferry_it_host" --plugins c,lua --plugin "c=$BUILD/plugins/libferry_it_c.so" \
      --plugin "lua=$BUILD/plugins/libferry_it_python.so" --cases "$FERRY_ROOT/tests/integration/cases.txt" \
      >"$BUILD/python/host.log" 2>&1; then
    ok "C host: $(tail -n 1 "$BUILD/python/host.log")"
  else
    tail -n 30 "$BUILD/python/host.log"; fail "C host with the Python plugin"
  fi
else
  echo "SKIPPED: python: $BUILD/bin/ferry_it_host is not built (tests/integration/build.sh host)"
fi

echo "== python: benchmark (quick; figures, not judged)"
if "$PY" "$HERE/bench/interchange.py" --quick; then ok "benchmark runs"; else fail "benchmark"; fi

if [ -e "$FERRY_ROOT/examples/python/test.sh" ]; then
  echo "== python: new-user test (examples/python/test.sh)"
  if bash "$FERRY_ROOT/examples/python/test.sh"; then ok "new-user install and examples"; else fail "new-user test"; fi
fi
finish
