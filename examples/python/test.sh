#!/usr/bin/env bash
# The new-user test of the Python package: in a fresh virtual environment
# outside the source tree, `pip install` the package as the README says (its
# wheel built first and its metadata checked; pip's build isolation, so the
# build needs nothing from this checkout's venv), then run every example from a copy outside the tree and
# check what it prints. The package must find its bundled libferry: no
# FERRY_LIBRARY, no LD_LIBRARY_PATH into the build tree.
# Needs python3 (with venv), gcc and PyPI. Prints "N passed, N failed".
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
unset FERRY_LIBRARY LD_LIBRARY_PATH PYTHONPATH
passed=0; failed=0

echo "== new user: python3 -m venv + pip install $ROOT/bindings/python numpy pyarrow polars"
python3 -m venv "$work/venv" || { echo "FAILED: cannot create a venv"; echo "0 passed, 1 failed"; exit 1; }
# What `pip install ./bindings/python` does, in two visible steps: build the
# wheel a registry would get (its metadata checked), then install it.
if ! "$work/venv/bin/pip" wheel -q --disable-pip-version-check --no-deps -w "$work/dist" "$ROOT/bindings/python" \
    >"$work/wheel.log" 2>&1; then
  cat "$work/wheel.log"; echo "FAILED: pip wheel"; echo "0 passed, 1 failed"; exit 1
fi
wheel=("$work"/dist/ferry_arrow-*.whl)
metadata="$(python3 -c 'import sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
print(z.read(next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))).decode())' "${wheel[0]}" 2>&1)"
missing=""
for field in "Name: ferry-arrow" "Version: " "Summary: " "License-Expression: Apache-2.0" "License-File: LICENSE" "Project-URL: "; do
  grep -F -- "$field" <<<"$metadata" >/dev/null || missing="$missing [$field]"
done
if [ "${#wheel[@]}" -eq 1 ] && [ -f "${wheel[0]}" ] && [ -z "$missing" ]; then
  echo "ok: the wheel $(basename "${wheel[0]}") with complete metadata"; passed=$((passed + 1))
else
  echo "FAILED: the wheel (${wheel[*]}): metadata lacks$missing"; failed=$((failed + 1))
fi
if ! "$work/venv/bin/pip" install -q --disable-pip-version-check "${wheel[0]}" numpy pyarrow polars \
    >"$work/pip.log" 2>&1; then
  cat "$work/pip.log"; echo "FAILED: pip install"; echo "0 passed, 1 failed"; exit 1
fi
cp "$HERE"/*.py "$work/"
cd "$work" || exit 1

# expect EXAMPLE LINE...: runs EXAMPLE and requires each LINE in its output.
expect() {
  local example="$1"; shift
  local out
  if ! out="$("$work/venv/bin/python" "$example" 2>&1)"; then
    echo "$out"; echo "FAILED: $example exited non-zero"; failed=$((failed + 1)); return
  fi
  local line
  for line in "$@"; do
    if ! grep -qF -- "$line" <<<"$out"; then
      echo "$out"; echo "FAILED: $example did not print: $line"; failed=$((failed + 1)); return
    fi
  done
  echo "ok: $example"; passed=$((passed + 1))
}

source_line="$("$work/venv/bin/python" -c 'import ferry; print(ferry.library_info().source, ferry.library_info().path)')"
case "$source_line" in
  "bundled $work/venv/"*) echo "ok: the installed package uses its bundled libferry"; passed=$((passed + 1)) ;;
  *) echo "FAILED: libferry came from: $source_line"; failed=$((failed + 1)) ;;
esac
expect quickstart.py "[1, 2, None, 4]" "sim:0 [1, 2, None, 4]" "[0. 1. 2. 3. 4.]"
expect producer.py "sim:0 event [0, 1, 2, 3]" "sim:0 event [8, 9, 10, 11]"
expect consumer.py "ferry stream on sim: 66" "pyarrow table: 7" "polars frame: 30"
expect pyarrow_interop.py "ferry sees: ['apple', None, 'cherry']" "pyarrow sees: ['apple', None, 'cherry']" "batches: [2, 2]"
expect sim_device.py "before waiting: a5a5a5a5" "after waiting: [10, 20, 30, 40]" "numpy: [10 20 30 40]"
expect async_stream.py "sim:0 [0, 1, 2, 3]" "sim:0 [8, 9, 10, 11]"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
