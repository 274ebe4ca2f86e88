#!/usr/bin/env bash
# Builds the C core, the ferry tool and the C plugin into $FERRY_BUILD_DIR
# (default build/). Serialised with a lock so parallel callers do not collide.
set -euo pipefail
ROOT="${FERRY_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
BUILD="${FERRY_BUILD_DIR:-$ROOT/build}"
mkdir -p "$BUILD"
exec 9>"$BUILD/.build.lock"
flock 9
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
if [ ! -f "$BUILD/CMakeCache.txt" ]; then
  cmake -S "$ROOT" -B "$BUILD" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
fi
log="$BUILD/.build.log"
if ! cmake --build "$BUILD" -j"$(nproc)" >"$log" 2>&1; then
  cat "$log"
  echo "build failed (log: $log)" >&2
  exit 1
fi
