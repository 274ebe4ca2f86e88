#!/usr/bin/env bash
# What the Rust binding needs beyond deps.sh's Debian packages (pkg-config
# is there): cargo/rustc from rustup (preinstalled on the development
# machines and CI), rustfmt (cargo fmt), and the
# crates of bindings/rust/Cargo.lock fetched from crates.io. Idempotent;
# prints nothing when everything is present.
set -euo pipefail
ROOT="${FERRY_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
[ -d "${HOME:-/root}/.cargo/bin" ] && PATH="${HOME:-/root}/.cargo/bin:$PATH"
if ! command -v cargo >/dev/null; then
  echo "deps(rust): cargo not found; install Rust (rustup, https://rustup.rs), then rerun" >&2
  exit 1
fi
if ! command -v rustfmt >/dev/null; then
  rustup component add rustfmt >/dev/null 2>&1 ||
    { echo "deps(rust): rustfmt missing and 'rustup component add rustfmt' failed" >&2; exit 1; }
fi
# Fetch the locked crates (quiet; nothing to do when cached).
cargo fetch --quiet --locked --manifest-path "$ROOT/bindings/rust/Cargo.toml" >/dev/null 2>&1 ||
  { echo "deps(rust): cargo fetch failed:" >&2; cargo fetch --locked --manifest-path "$ROOT/bindings/rust/Cargo.toml" >&2; exit 1; }
