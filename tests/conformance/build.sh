#!/usr/bin/env bash
# Builds BUILD/bin/ferry_conformance with gcc against BUILD/lib/libferry.so.
#   build.sh [BUILD_DIR]   (default $FERRY_BUILD_DIR or /work/main/build)
# The binary may also go elsewhere: FERRY_CONFORMANCE_OUT=/path/to/binary.
# A sanitizer build: FERRY_CONFORMANCE_LIBDIR=BUILD/san-address-undefined/lib
#   FERRY_CONFORMANCE_CFLAGS="-fsanitize=address,undefined -fno-omit-frame-pointer"
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="${FERRY_ROOT:-$(cd "$HERE/../.." && pwd)}"
BUILD="${1:-${FERRY_BUILD_DIR:-$ROOT/build}}"
OUT="${FERRY_CONFORMANCE_OUT:-$BUILD/bin/ferry_conformance}"
LIBDIR="${FERRY_CONFORMANCE_LIBDIR:-$BUILD/lib}"
read -r -a EXTRA <<<"${FERRY_CONFORMANCE_CFLAGS:-}"
[ -f "$LIBDIR/libferry.so" ] || { echo "build.sh: $LIBDIR/libferry.so is missing (build the core first)" >&2; exit 1; }
mkdir -p "$(dirname "$OUT")"
gcc -std=c11 -D_GNU_SOURCE -O1 -g "${EXTRA[@]}" -Wall -Wextra -Werror -Wno-unused-parameter \
  -I"$ROOT/core/include" -I"$BUILD/core/include" -I"$BUILD/include" \
  "$HERE"/conformance.c "$HERE"/conf_case.c "$HERE"/verify.c "$HERE"/release_watch.c \
  "$HERE"/plugin.c "$HERE"/suite.c "$HERE"/area_export.c "$HERE"/area_errors.c \
  "$HERE"/area_inject.c "$HERE"/area_check.c "$HERE"/area_thread.c \
  -L"$LIBDIR" -Wl,-rpath,"$LIBDIR" -lferry -ldl -lpthread -o "$OUT"
