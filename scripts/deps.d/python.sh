#!/usr/bin/env bash
# What the Python binding and the Python runtime of the cross-language tests
# need on Debian 12: python3 with venv and the headers and shared libpython
# to embed it (python3-venv, python3-dev: libpython3.11-dev), then the
# virtual environment $FERRY_BUILD_DIR/python/venv with the test
# dependencies from PyPI (bindings/python/env.sh: cffi numpy pyarrow
# nanoarrow polars pytest setuptools wheel). Idempotent; prints nothing when
# everything is present.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
missing=()
python3 -c 'import venv, ensurepip' 2>/dev/null || missing+=(python3-venv)
# The embedding headers and libpython of the python3 on PATH.
if ! python3 - <<'PY' 2>/dev/null
import os, sysconfig as s
lib = os.path.join(s.get_config_var("LIBDIR"), "libpython%s.so" % s.get_config_var("LDVERSION"))
assert os.path.exists(os.path.join(s.get_paths()["include"], "Python.h")) and os.path.exists(lib)
PY
then
  missing+=(python3-dev)
fi
[ "${#missing[@]}" -eq 0 ] || apt_install "Python binding" "${missing[@]}"
# shellcheck source=../../bindings/python/env.sh
source "$ROOT/bindings/python/env.sh"
mkdir -p "$FERRY_BUILD_DIR/python"
ferry_python_venv
