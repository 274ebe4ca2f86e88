#!/usr/bin/env bash
# Runs the Rust handoff benchmark (ferry/benches/handoff.rs) against the
# core in $FERRY_BUILD_DIR, pinned to one core when taskset exists. Prints
# min/median ns per handoff, the matching raw-C floor from the same run, the
# ratio against the 1.5 target, and `RESULT rust <case> <ns/op>` lines.
set -euo pipefail
# rustup installs cargo in ~/.cargo/bin, which a CI shell may not have on PATH.
[ -d "${HOME:-/root}/.cargo/bin" ] && PATH="${HOME:-/root}/.cargo/bin:$PATH"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="${FERRY_ROOT:-$(cd "$HERE/../.." && pwd)}"
BUILD="${FERRY_BUILD_DIR:-$ROOT/build}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$BUILD/rust-target}"
export PKG_CONFIG_PATH="$BUILD/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
export FERRY_BUILD_DIR="$BUILD"
cargo bench --quiet --locked --manifest-path "$HERE/Cargo.toml" -p ferry --bench handoff --no-run 2>/dev/null
pin=()
command -v taskset >/dev/null && pin=(taskset -c 1)
exec "${pin[@]}" cargo bench --quiet --locked --manifest-path "$HERE/Cargo.toml" -p ferry --bench handoff
