#!/usr/bin/env bash
# Builds the Rust test plugin (crate ferry-it, a cdylib) in release mode and
# installs it as $FERRY_BUILD_DIR/plugins/libferry_it_rust.so, the fixed
# place every harness looks for it (docs/cases.md). Needs the core built
# in $FERRY_BUILD_DIR (scripts/build.sh).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"

[ -f "$BUILD/lib/libferry.so" ] || { echo "build_plugin.sh: $BUILD/lib/libferry.so missing: run scripts/build.sh first" >&2; exit 1; }
cargo build --quiet --release --locked --manifest-path "$HERE/Cargo.toml" -p ferry-it
mkdir -p "$BUILD/plugins"
cp "$CARGO_TARGET_DIR/release/libferry_it_rust.so" "$BUILD/plugins/libferry_it_rust.so.tmp"
mv "$BUILD/plugins/libferry_it_rust.so.tmp" "$BUILD/plugins/libferry_it_rust.so"
echo "installed $BUILD/plugins/libferry_it_rust.so"
