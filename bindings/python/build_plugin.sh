#!/usr/bin/env bash
# Builds the Python participant of the cross-language tests (the builder
# core/harness/runtimes.def names for python):
#   1. the virtual environment $FERRY_BUILD_DIR/python/venv with the test
#      dependencies and ferry-arrow installed from this directory (env.sh);
#   2. $FERRY_BUILD_DIR/plugins/libferry_it_python.so, the CMake target
#      ferry_it_python (plugin/CMakeLists.txt): the build tree is configured
#      again when it was configured before the venv existed.
# The plugin links libferry.so (shared, one registry) and the venv's
# libpython, and embeds that Python when the host is not Python.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=env.sh
source "$HERE/env.sh"
BUILD="$FERRY_BUILD_DIR"
if [ ! -f "$BUILD/CMakeCache.txt" ] || [ ! -e "$BUILD/lib/libferry.so" ]; then
  echo "python plugin: $BUILD is not built; build the core first (scripts/build.sh)" >&2
  exit 1
fi
mkdir -p "$BUILD/python" "$BUILD/plugins"
ferry_python_venv
ferry_python_install
# Under scripts/build.sh's lock: the venv must be known to the configure.
exec 9>"$BUILD/.build.lock"
flock 9
if ! grep -q '^FERRY_PYTHON_VENV:PATH=' "$BUILD/CMakeCache.txt" ||
   ! cmake --build "$BUILD" --target help 2>/dev/null | grep ferry_it_python >/dev/null; then
  cmake -S "$FERRY_ROOT" -B "$BUILD" -DFERRY_PYTHON_VENV="$VENV" >"$BUILD/python/configure.log" 2>&1 ||
    { cat "$BUILD/python/configure.log"; echo "python plugin: configure failed" >&2; exit 1; }
fi
cmake --build "$BUILD" --target ferry_it_python >"$BUILD/python/plugin-build.log" 2>&1 ||
  { cat "$BUILD/python/plugin-build.log"; cat "$BUILD/python/configure.log" 2>/dev/null;
    echo "python plugin: build failed" >&2; exit 1; }
echo "built $BUILD/plugins/libferry_it_python.so"
