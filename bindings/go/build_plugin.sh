#!/usr/bin/env bash
# Builds the Go test plugin, $FERRY_BUILD_DIR/plugins/libferry_it_go.so
# (c-shared, linking libferry.so dynamically and the static generic async
# layer libferry_it_async.a), for scripts/build_plugins.sh.
# scripts/check_artefacts.sh checks how it links and what it exports.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$HERE/../../scripts/lib.sh"
export PKG_CONFIG_PATH="$BUILD/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
plugin="$BUILD/plugins/libferry_it_go.so"
mkdir -p "$BUILD/plugins"
# The async entry points (plugin/async.c) come from the harness's generic
# layer, a static archive of the CMake build (target ferry_it_async).
async_lib="$BUILD/lib/libferry_it_async.a"
need_file "$async_lib" "the generic async layer (cmake --build build --target ferry_it_async)" || exit 1
cd "$HERE"
CGO_LDFLAGS="$async_lib -lpthread${CGO_LDFLAGS:+ $CGO_LDFLAGS}" go build -buildmode=c-shared -o "$plugin" ./plugin
rm -f "${plugin%.so}.h" # cgo's generated header: ferry/ferry_it.h is the contract
