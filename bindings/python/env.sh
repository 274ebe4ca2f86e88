#!/usr/bin/env bash
# Sourced by build_plugin.sh, test.sh and bench/run.sh: makes the virtual
# environment $FERRY_BUILD_DIR/python/venv (quietly when it is there) with
# the test dependencies from PyPI and ferry-arrow installed from this
# directory, and sets PY (its python) and VENV.
#   FERRY_PYTHON_DEPS  extra/other packages (default: the test dependencies)
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
FERRY_ROOT="${FERRY_ROOT:-$(cd "$HERE/../.." && pwd)}"
FERRY_BUILD_DIR="${FERRY_BUILD_DIR:-$FERRY_ROOT/build}"
export FERRY_ROOT FERRY_BUILD_DIR
VENV="$FERRY_BUILD_DIR/python/venv"
PY="$VENV/bin/python"

ferry_python_venv() {
  if [ ! -x "$PY" ]; then
    if ! python3 -m venv "$VENV" >/dev/null 2>&1; then
      # Debian's system Python keeps venv in a separate package.
      export DEBIAN_FRONTEND=noninteractive
      apt-get install -y -qq python3-venv >/dev/null 2>&1 ||
        { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq python3-venv >/dev/null 2>&1; }
      rm -rf "$VENV"
      python3 -m venv "$VENV" || { echo "python: cannot create $VENV" >&2; return 1; }
    fi
  fi
  # setuptools 77: pyproject.toml's license metadata in its PEP 639 form.
  if ! "$PY" -c "import cffi, numpy, pyarrow, nanoarrow, polars, pytest, setuptools, wheel, sys; sys.exit(int(setuptools.__version__.split('.')[0]) < 77)" 2>/dev/null; then
    echo "python: installing the test dependencies into $VENV (PyPI)"
    "$PY" -m pip install -q --disable-pip-version-check ${FERRY_PYTHON_DEPS:-cffi numpy pyarrow nanoarrow polars pytest "setuptools>=77" wheel} ||
      { echo "python: pip install failed" >&2; return 1; }
  fi
}

# Installs the package from this directory (builds ferry._native and the
# bundled libferry from the repository's core/).
ferry_python_install() {
  "$PY" -m pip install -q --disable-pip-version-check --no-build-isolation --no-deps \
    --force-reinstall "$HERE" >"$FERRY_BUILD_DIR/python/pip-install.log" 2>&1 ||
    { cat "$FERRY_BUILD_DIR/python/pip-install.log"; echo "python: pip install of ferry-arrow failed" >&2; return 1; }
}
