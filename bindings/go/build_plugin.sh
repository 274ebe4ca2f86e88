#!/usr/bin/env bash
# Builds only the Go test plugin, $FERRY_BUILD_DIR/plugins/libferry_it_go.so
# (c-shared, linking libferry.so dynamically), for harnesses that need the
# plugin without running the Go test suite (bindings/go/test.sh does both).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="${FERRY_ROOT:-$(cd "$HERE/../.." && pwd)}"
BUILD="${FERRY_BUILD_DIR:-$ROOT/build}"
export PKG_CONFIG_PATH="$BUILD/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
export GOFLAGS=-mod=mod
plugin="$BUILD/plugins/libferry_it_go.so"
mkdir -p "$BUILD/plugins"
cd "$HERE"
go build -buildmode=c-shared -o "$plugin" ./plugin
rm -f "${plugin%.so}.h" # cgo's generated header: tests/integration/ferry_it.h is the contract
readelf -d "$plugin" | grep -q 'NEEDED.*libferry\.so' || { echo "plugin does not link libferry.so" >&2; exit 1; }
