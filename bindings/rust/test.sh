#!/usr/bin/env bash
# Every test of the Rust binding, for the top-level test command:
#   1. bindings.rs is fresh (generators/rust/gen.sh --check),
#   2. cargo test of the workspace (unit, integration and doc tests), then
#      of ferry-arrow with every arrow-rs release feature (arrow-57..60),
#   3. cargo package of the two publishable crates (verified: each is built
#      from its packaged sources),
#   4. the plugin is built and installed as $FERRY_BUILD_DIR/plugins/libferry_it_rust.so
#      and linked to the shared core (readelf); the GPU tests (gpu_emu.rs)
#      run on CUDA and ROCm through the core's driver emulations,
#   5. `ferry check --plugin` on it for a few cases, when the tool exists.
# Assumes the core is built in $FERRY_BUILD_DIR (default $FERRY_ROOT/build).
# Exits non-zero on any failure and ends with "N passed, N failed".
set -uo pipefail
# rustup installs cargo in ~/.cargo/bin, which a CI shell may not have on PATH.
[ -d "${HOME:-/root}/.cargo/bin" ] && PATH="${HOME:-/root}/.cargo/bin:$PATH"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="${FERRY_ROOT:-$(cd "$HERE/../.." && pwd)}"
BUILD="${FERRY_BUILD_DIR:-$ROOT/build}"
export FERRY_ROOT="$ROOT" FERRY_BUILD_DIR="$BUILD"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$BUILD/rust-target}"
export PKG_CONFIG_PATH="$BUILD/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
# Caught panics in tests must not spam the log with backtraces.
export RUST_BACKTRACE=0

# The closing line counts every cargo test (from cargo's own summaries) plus
# every other step (freshness, plugin build and link, each ferry check).
passed=0
failed=0
step() { # step NAME COMMAND...: runs a step, counts it, shows its output on failure
  local name="$1"; shift
  local log="$CARGO_TARGET_DIR/test-$name.log"
  mkdir -p "$CARGO_TARGET_DIR"
  "$@" >"$log" 2>&1
  local rc=$?
  local counts p f
  counts="$(grep -E '^test result:' "$log" | awk '{ p += $4; f += $6 } END { print p + 0, f + 0 }')"
  read -r p f <<<"$counts"
  if [ "$p" -gt 0 ] || [ "$f" -gt 0 ]; then
    echo "rust $name: $p tests passed, $f failed"
    passed=$((passed + p))
    failed=$((failed + f))
    [ "$rc" -ne 0 ] && [ "$f" -eq 0 ] && failed=$((failed + 1))
  elif [ "$rc" -eq 0 ]; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
  fi
  if [ "$rc" -eq 0 ]; then
    echo "rust $name: ok"
  else
    grep -vE '^(test result:|running [0-9]+ tests?|\.+|)$' "$log" | tail -60
    echo "rust $name: FAILED (log: $log)"
  fi
}

if [ ! -f "$BUILD/lib/libferry.so" ]; then
  echo "rust: $BUILD/lib/libferry.so is missing: build the core first (scripts/build.sh)"
  echo "0 passed, 1 failed"
  exit 1
fi

step bindings-fresh bash "$ROOT/generators/rust/gen.sh" --check
step cargo-default cargo test --quiet --locked --no-fail-fast --manifest-path "$HERE/Cargo.toml" --workspace
step cargo-arrow cargo test --quiet --locked --no-fail-fast --manifest-path "$HERE/Cargo.toml" -p ferry-arrow \
  --features arrow,arrow-57,arrow-58,arrow-59
step cargo-package cargo package --quiet --locked --allow-dirty --manifest-path "$HERE/Cargo.toml" \
  -p ferry-arrow-sys -p ferry-arrow
step plugin-build bash "$HERE/build_plugin.sh"

# CUDA and ROCm paths without a GPU: the core's driver emulations, built
# here, carry the GPU API tests and every case on device=cuda/rocm.
emu="$CARGO_TARGET_DIR/emu"
build_emulations() {
  mkdir -p "$emu" && for lib in cuda hip; do
    "${CC:-cc}" -std=c11 -D_GNU_SOURCE -O1 -fPIC -shared -o "$emu/lib${lib}_emu.so" \
      "$ROOT/tests/gpu/emu/${lib}_emu.c" -lpthread || return 1
  done
}
step gpu-emulations-build build_emulations
step cargo-gpu-emulated env FERRY_CUDA_LIBRARY="$emu/libcuda_emu.so" FERRY_HIP_LIBRARY="$emu/libhip_emu.so" \
  cargo test --quiet --locked --no-fail-fast --manifest-path "$HERE/Cargo.toml" \
  -p ferry-arrow --test gpu_emu -p ferry-it --test gpu_emu

plugin="$BUILD/plugins/libferry_it_rust.so"
linked_shared() {
  # The plugin must link the shared core (NEEDED libferry.so.0), never a copy,
  # and export the six entry points.
  readelf -d "$plugin" | grep -q 'NEEDED.*\[libferry\.so' || { echo "$plugin does not link libferry.so"; return 1; }
  if nm -D --defined-only "$plugin" | grep -q ' T ferry_array_init'; then
    echo "$plugin contains a copy of the core"; return 1
  fi
  for sym in ferry_it_export_array ferry_it_check_array ferry_it_export_stream \
             ferry_it_check_stream ferry_it_live_allocations ferry_it_last_error; do
    nm -D --defined-only "$plugin" | grep -q " T $sym\$" || { echo "$plugin does not export $sym"; return 1; }
  done
}
step plugin-links-shared-core linked_shared

tool="$BUILD/bin/ferry"
if [ -x "$tool" ]; then
  for case in int32:nulls=3 utf8:length=40:nulls=4:offset=3 list_int32:seed=9 \
              struct_int32_utf8:device=sim dict_int32_utf8:length=0; do
    step "ferry-check-$case" "$tool" check --plugin "$plugin" --case "$case"
    step "ferry-check-stream-$case" "$tool" check --plugin "$plugin" --case "$case" --stream
  done
  # An injected producer failure must travel as EIO + get_last_error.
  step "ferry-check-stream-int32:fail=get_next@2" "$tool" check --plugin "$plugin" --case int32:fail=get_next@2 --stream
else
  echo "rust: SKIPPED ferry check --plugin: $tool does not exist (build the tool with scripts/build.sh)"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
