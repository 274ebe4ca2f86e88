#!/usr/bin/env bash
# Builds the Go test plugin, $FERRY_BUILD_DIR/plugins/libferry_it_go.so
# (c-shared, linking libferry.so dynamically), for scripts/build_plugins.sh.
# scripts/check_artefacts.sh checks how it links and what it exports.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$HERE/../../scripts/lib.sh"
export PKG_CONFIG_PATH="$BUILD/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
plugin="$BUILD/plugins/libferry_it_go.so"
mkdir -p "$BUILD/plugins"
cd "$HERE"
go build -buildmode=c-shared -o "$plugin" ./plugin
rm -f "${plugin%.so}.h" # cgo's generated header: ferry/ferry_it.h is the contract
