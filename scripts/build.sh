#!/usr/bin/env bash
# Builds every C artefact into $FERRY_BUILD_DIR (default build/) with CMake:
# the core, the tool, the harness and hosts, the C plugin, the GPU driver
# emulations, the hostile producers every hostile suite loads
# (lib/libferry_hostile.so, tests/hostile), and the bindings' C parts (JNI
# library, Lua module, plugin shims). Serialised with a lock so parallel callers do not collide.
#   scripts/build.sh                        the normal build (RelWithDebInfo)
#   scripts/build.sh --sanitize LIST        the sanitizer build in BUILD/san-<LIST>
#                                           (Debug, -fsanitize=LIST, no bindings)
#   scripts/build.sh -- CMAKE_ARGS...       extra arguments for the first configure
# The other runtimes' plugins (cargo, go, Maven): scripts/build_plugins.sh.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
dir="$BUILD"
config=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DFERRY_WERROR=ON)
case "${1:-}" in
  --sanitize)
    san="${2:?--sanitize needs a list, e.g. address,undefined}"
    dir="$BUILD/san-${san//,/-}"
    config=(-DCMAKE_BUILD_TYPE=Debug -DFERRY_WERROR=ON -DFERRY_SANITIZE="$san" -DFERRY_BINDINGS=OFF)
    shift 2 ;;
  --) shift ;;
esac
[ "${1:-}" = -- ] && shift
mkdir -p "$dir"
exec 9>"$dir/.build.lock"
flock 9
if [ ! -f "$dir/CMakeCache.txt" ]; then
  # shellcheck disable=SC2046
  cmake -S "$ROOT" -B "$dir" $(cmake_generator) "${config[@]}" "$@" >"$dir/.configure.log" 2>&1 ||
    { cat "$dir/.configure.log"; echo "configure failed (log: $dir/.configure.log)" >&2; exit 1; }
fi
log="$dir/.build.log"
if ! cmake --build "$dir" -j"$(nproc)" >"$log" 2>&1; then
  cat "$log"
  echo "build failed (log: $log)" >&2
  exit 1
fi
# Configure warnings (a missing JDK or Lua) must not pass silently.
grep -A2 '^CMake Warning' "$dir/.configure.log" 2>/dev/null | grep -v '^--$' || true
