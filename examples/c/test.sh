#!/usr/bin/env bash
# The new-user test of C (issue 16): the core installed with `cmake --install`
# into a temporary prefix, this example copied outside the tree, then built
# the two ways README.md gives, with nothing but that prefix (no ferry
# variable, no loader path):
#   1. CMake: find_package(ferry CONFIG) through CMAKE_PREFIX_PATH, ferry::ferry;
#   2. pkg-config: PKG_CONFIG_PATH to the installed ferry.pc.
# Each binary runs and prints what README.md expects, uses the installed
# libferry.so (ldd) and defines none of its symbols (a shared link, not a
# copy). Needs the core built (scripts/build.sh). Prints "N passed, N failed".
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$HERE/../../scripts/lib.sh"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
prefix="$tmp/prefix"
app="$tmp/ferry-example"

# A new user's shell: none of the repository's variables, no loader path.
user() {
  env -u FERRY_BUILD_DIR -u FERRY_ROOT -u PKG_CONFIG_PATH -u LD_LIBRARY_PATH \
    -u CMAKE_PREFIX_PATH -u FERRY_CUDA_LIBRARY -u FERRY_HIP_LIBRARY "$@"
}

# runs_as_documented BINARY: the expected lines, the installed library, a shared link.
runs_as_documented() {
  local out libs
  out="$(user "$1" 2>&1)" || { echo "$out"; echo "$1 exited non-zero"; return 1; }
  for line in "cpu: consumer read 10 values, 3 null, sum 37" \
              "sim: exported on ext_dev:0, sync event set" \
              "sim: consumer read 10 values, 0 null, sum 55" \
              "release hooks run: 2, live exports: 0, sim allocations: 0"; do
    grep -F "$line" <<<"$out" >/dev/null || { echo "$out"; echo "missing: $line"; return 1; }
  done
  [ "$(tail -n 1 <<<"$out")" = ok ] || { echo "$out"; echo "the last line is not ok"; return 1; }
  libs="$(user ldd "$1")"
  grep -F "libferry.so.0 => $prefix/" <<<"$libs" >/dev/null ||
    { echo "$libs"; echo "$1 does not load the installed libferry.so"; return 1; }
  if nm --defined-only "$1" | grep ' T ferry_' >/dev/null; then
    echo "$1 defines ferry_ symbols: a static copy of the core"; return 1
  fi
}

need_file "$BUILD/CMakeCache.txt" "the core's build" || { fail "the core is built"; finish; exit 1; }
check "cmake --install of the core into $prefix" cmake --install "$BUILD" --prefix "$prefix"
check "the CMake package is installed" test -f "$prefix/lib/cmake/ferry/ferryConfig.cmake" -a \
  -f "$prefix/lib/cmake/ferry/ferryConfigVersion.cmake"
mkdir -p "$app"
(cd "$HERE" && tar cf - --exclude=./build --exclude=./test.sh .) | (cd "$app" && tar xf -)

# --- 1. CMake -------------------------------------------------------------------
check "cmake configure with CMAKE_PREFIX_PATH" \
  user cmake -S "$app" -B "$app/build" -DCMAKE_PREFIX_PATH="$prefix"
check "cmake build (ferry::ferry)" user cmake --build "$app/build"
check "the CMake-built example runs as README.md says" runs_as_documented "$app/build/ferry_example"
# A version the package does not satisfy is refused.
mkdir -p "$tmp/too-new"
sed 's/find_package(ferry 0.1 CONFIG REQUIRED)/find_package(ferry 0.2 CONFIG REQUIRED)/' \
  "$app/CMakeLists.txt" >"$tmp/too-new/CMakeLists.txt"
cp "$app"/*.c "$app"/*.h "$tmp/too-new/"
check "find_package(ferry 0.2) is refused by 0.1" \
  bash -c '! cmake -S "$1" -B "$1/build" -DCMAKE_PREFIX_PATH="$2" >/dev/null 2>&1' _ "$tmp/too-new" "$prefix"

# --- 2. pkg-config ------------------------------------------------------------------
check "cc with pkg-config --cflags --libs ferry" \
  user bash -c 'cd "$1" && export PKG_CONFIG_PATH="$2/lib/pkgconfig" &&
    cc -std=c11 -Wall -Werror main.c producer.c consumer.c $(pkg-config --cflags --libs ferry) \
       -o ferry_example_pc' \
  _ "$app" "$prefix"
check "the pkg-config-built example runs as README.md says" runs_as_documented "$app/ferry_example_pc"
finish
