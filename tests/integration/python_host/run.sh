#!/usr/bin/env bash
# Runs the Python host: bindings/python/tests/test_matrix.py under pytest, in
# the virtual environment bindings/python/build_plugin.sh made. That pytest
# process loads every runtime's plugin through the matrix host's harness
# (build/it/libferry_it_matrix.so) and runs every ordered pair. The build
# tree's libferry is the process's one (FERRY_LIBRARY), as in the other
# hosts. Ends with pytest's counts as "N passed, N failed".
#   python_host/run.sh [--require LIST]   (default: every runtime of runtimes.def)
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$HERE/../../../scripts/lib.sh"
PY="$BUILD/python/venv/bin/python"
require="$(ferry_runtimes)"
[ "${1:-}" = --require ] && require="${2//,/ }"
need_file "$PY" "the Python host's virtual environment" || { echo "0 passed, 1 failed"; exit 1; }
need_file "$BUILD/it/libferry_it_matrix.so" "the harness library" || { echo "0 passed, 1 failed"; exit 1; }
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
(cd "$ROOT/bindings/python/tests" &&
  FERRY_LIBRARY="$BUILD/lib/libferry.so" FERRY_PY_MATRIX_REQUIRE="$require" \
    "$PY" -m pytest -q -p no:cacheprovider -rfE test_matrix.py) 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
summary="$(tail -n 1 "$log")"
passed="$(sed -n 's/.*\b\([0-9][0-9]*\) passed.*/\1/p' <<<"$summary")"
failed="$(sed -En 's/.*\b([0-9]+) (failed|error).*/\1/p' <<<"$summary")"
echo "${passed:-0} passed, ${failed:-$([ "$rc" -eq 0 ] && echo 0 || echo 1)} failed"
exit "$rc"
