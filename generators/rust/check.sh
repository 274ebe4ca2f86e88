#!/usr/bin/env bash
# Fails (exit 1, "bindings.rs is stale: run ./dev.sh regen") when the committed
# Rust bindings differ from what generators/rust/gen.sh makes of the header now.
exec bash "$(dirname "${BASH_SOURCE[0]}")/gen.sh" --check
