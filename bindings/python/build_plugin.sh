#!/usr/bin/env bash
# Builds the Python participant of the cross-language tests:
#   $FERRY_BUILD_DIR/plugins/libferry_it_python.so
# after making the virtual environment $FERRY_BUILD_DIR/python/venv with
# ferry-arrow installed (env.sh). The plugin links libferry.so (shared, one
# registry) and the venv's libpython, and embeds that Python when the host
# is not Python. plugin/CMakeLists.txt builds the same for CMake.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=env.sh
source "$HERE/env.sh"
BUILD="$FERRY_BUILD_DIR"
if [ ! -e "$BUILD/lib/libferry.so" ]; then
  echo "python plugin: $BUILD/lib/libferry.so is missing; build the core first (./dev.sh build)" >&2
  exit 1
fi
mkdir -p "$BUILD/python" "$BUILD/plugins"
ferry_python_venv
ferry_python_install
read -r PYINC PYLIBDIR PYLDVERSION PYSHARED < <("$PY" -c '
import sysconfig as s
print(s.get_paths()["include"], s.get_config_var("LIBDIR"), s.get_config_var("LDVERSION"),
      s.get_config_var("Py_ENABLE_SHARED"))')
if [ ! -e "$PYLIBDIR/libpython$PYLDVERSION.so" ]; then
  echo "python plugin: $PYLIBDIR/libpython$PYLDVERSION.so is missing (Py_ENABLE_SHARED=$PYSHARED):" \
       "embedding needs a shared libpython (Debian: libpython3-dev)" >&2
  exit 1
fi
gcc -std=c11 -D_GNU_SOURCE -O2 -g -fPIC -Wall -Wextra -Wno-unused-parameter -Werror \
  -fvisibility=hidden -shared \
  -I"$FERRY_ROOT/core/include" -I"$FERRY_ROOT/tests/integration" -I"$PYINC" \
  -DFERRY_PYTHON_EXECUTABLE="\"$VENV/bin/python\"" -DFERRY_PYTHON_PLUGIN_DIR="\"$HERE/plugin\"" \
  "$HERE/plugin/ferry_it_python.c" -o "$BUILD/plugins/libferry_it_python.so" \
  -L"$BUILD/lib" -Wl,-rpath,"$BUILD/lib" -lferry \
  -L"$PYLIBDIR" -Wl,-rpath,"$PYLIBDIR" "-lpython$PYLDVERSION" -lpthread
echo "built $BUILD/plugins/libferry_it_python.so"
