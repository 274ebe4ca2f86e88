#!/usr/bin/env bash
# Tests of ferry's Python package (bindings/python), for the test command:
#   1. the generated raw layer (src/ferry/_cdef.py) is fresh
#   2. the virtual environment $FERRY_BUILD_DIR/python/venv with the test
#      dependencies from PyPI (quiet when present), ferry-arrow installed
#      from this directory, and the plugin build/plugins/libferry_it_python.so
#   3. pytest: every protocol both ways (pyarrow, nanoarrow, Polars, NumPy,
#      the CUDA emulation; GPU interop skips loudly without a GPU); the
#      Python-hosted matrix (tests/test_matrix.py, every runtime in this
#      process) runs in the cross-language step (tests/integration/run.sh)
#   4. `ferry check --plugin` over tests/integration/cases.txt (arrays and
#      streams): the embedded interpreter in a C host, and with --async over
#      tests/integration/cases_async.txt (async device streams)
#   5. the benchmark runs (figures printed, not judged)
# The Python plugin in the C matrix host, the conformance suite and the demo
# are their own steps; examples/python/test.sh is the new-user step's.
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
# Under scripts/test.sh the build step has just made them, and other steps are
# loading them now: reinstalling would pull the package from under them.
if [ -n "${FERRY_TEST_BUILT:-}" ] && [ -e "$BUILD/plugins/libferry_it_python.so" ]; then
  ok "package and plugin built (by the test command's build step)"
elif bash "$HERE/build_plugin.sh"; then ok "package and plugin built"; else fail "package or plugin build"; finish; fi
# The plugin links the shared core and libpython, never a static copy.
dynamic="$(readelf -d "$BUILD/plugins/libferry_it_python.so")"
if grep 'NEEDED.*libferry\.so' <<<"$dynamic" >/dev/null && grep 'NEEDED.*libpython' <<<"$dynamic" >/dev/null; then
  ok "plugin links libferry.so and libpython dynamically"
else
  fail "plugin linkage"
fi

echo "== python: pytest"
if (cd "$HERE/tests" && "$PY" -m pytest -q -p no:cacheprovider -rs --ignore=test_matrix.py .); then
  ok "pytest"
else
  fail "pytest"
fi

echo "== python: ferry check --plugin over tests/integration/cases.txt (embedded Python)"
checked=0; bad=0
while read -r line; do
  case "$line" in ''|'#'*) continue ;; esac
  line="${line#thread }" # the tool checks on its own thread; the hosts run these on new ones
  if [ "${line%% *}" = reject ]; then
    word="$(echo "$line" | cut -d' ' -f2)"; spec="$(echo "$line" | cut -d' ' -f3-)"
    out="$("$BUILD/bin/ferry" check --plugin "$BUILD/plugins/libferry_it_python.so" --case "$spec" 2>&1)"
    checked=$((checked + 1))
    grep "FAIL return_code.*$word" <<<"$out" >/dev/null || { bad=$((bad + 1)); echo "  not refused naming $word: $spec"; tail -2 <<<"$out"; }
    continue
  fi
  for mode in "" --stream; do
    checked=$((checked + 1))
    out="$(timeout 300 "$BUILD/bin/ferry" check --plugin "$BUILD/plugins/libferry_it_python.so" --case "$line" $mode 2>&1)" ||
      { bad=$((bad + 1)); echo "  FAIL $line $mode"; tail -3 <<<"$out"; }
  done
done <"$FERRY_ROOT/tests/integration/cases.txt"
[ "$bad" -eq 0 ] && ok "ferry check: $checked checks" || fail "ferry check: $bad of $checked failed"

echo "== python: ferry check --plugin --async over tests/integration/cases_async.txt"
# The async entry points come from the generic layer (core/harness/async)
# over the Python stream entry points; ferry check's strict consumer judges
# the export, and the plugin's check_async judges ferry check's producer.
# A `reject` line is refused by the tool's own case parser before any
# plugin runs, so only the accepted cases are run here.
if nm -D "$BUILD/plugins/libferry_it_python.so" | grep -q ' T ferry_it_export_async'; then
  checked=0; bad=0
  while read -r line; do
    case "$line" in ''|'#'*|reject*) continue ;; esac
    line="${line#thread }"
    checked=$((checked + 1))
    out="$(timeout 120 "$BUILD/bin/ferry" check --plugin "$BUILD/plugins/libferry_it_python.so" --case "$line" --async 2>&1)" ||
      { bad=$((bad + 1)); echo "  FAIL $line --async"; tail -3 <<<"$out"; }
  done <"$FERRY_ROOT/tests/integration/cases_async.txt"
  [ "$bad" -eq 0 ] && ok "ferry check --async: $checked checks" || fail "ferry check --async: $bad of $checked failed"
else
  fail "the plugin lacks ferry_it_export_async (was build/lib/libferry_it_async.a built?)"
fi

echo "== python: benchmark (quick; figures, not judged)"
if "$PY" "$HERE/bench/interchange.py" --quick; then ok "benchmark runs"; else fail "benchmark"; fi

finish
