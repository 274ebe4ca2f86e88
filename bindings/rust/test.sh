#!/usr/bin/env bash
# Every test of the Rust binding, for the top-level test command:
#   1. cargo test of the workspace (unit, integration and doc tests), then
#      of ferry-arrow's feature-gated test targets with the arrow-rs features
#      of the two ends of the supported range (ARROW_MIN, ARROW_MAX below;
#      the majors between them share every line of arrow_rs/ and are not
#      built on each run) and `futures`,
#   2. cargo package of the two publishable crates (verified: each is built
#      from its packaged sources),
#   3. the GPU tests (gpu_emu.rs) on CUDA and ROCm through the core's driver
#      emulations (built by CMake into $FERRY_BUILD_DIR/test-emu),
#   4. `ferry check --plugin` on the plugin $FERRY_BUILD_DIR/plugins/libferry_it_rust.so,
#      arrays, streams and async streams (--async).
# The plugin is built by scripts/build_plugins.sh (build_plugin.sh), its links
# and exports checked by scripts/check_artefacts.sh, bindings.rs by
# generators/regen.sh --check. Assumes scripts/test.sh's build step.
# Exits non-zero on any failure and ends with "N passed, N failed"; each
# step prints its time.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
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
  local started=$SECONDS
  "$@" >"$log" 2>&1
  local rc=$?
  local took=$((SECONDS - started))
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
    echo "rust $name: ok (${took} s)"
  else
    grep -vE '^(test result:|running [0-9]+ tests?|\.+|)$' "$log" | tail -60
    echo "rust $name: FAILED after ${took} s (log: $log)"
  fi
}

if [ ! -f "$BUILD/lib/libferry.so" ]; then
  echo "rust: $BUILD/lib/libferry.so is missing: build the core first (scripts/build.sh)"
  echo "0 passed, 1 failed"
  exit 1
fi
# tests/hostile.rs is empty without tests/hostile's library (ferry-arrow/build.rs).
if [ ! -f "$BUILD/lib/libferry_hostile.so" ]; then
  echo "rust: $BUILD/lib/libferry_hostile.so (the hostile producers) is missing: scripts/build.sh builds it"
  echo "0 passed, 1 failed"
  exit 1
fi

step cargo-default cargo test --quiet --locked --no-fail-fast --manifest-path "$HERE/Cargo.toml" --workspace
# The supported arrow-rs majors are ARROW_MIN..=ARROW_MAX (ferry-arrow's
# features arrow-57 .. arrow-60; `arrow` is the newest). Both ends are tested
# on every run, in one build; a new major moves ARROW_MAX (and the feature
# list in ferry-arrow/Cargo.toml and the README with it). Only the test
# targets with code under a feature run again here (arrow.rs, features.rs,
# hostile.rs: arrow; async_streams.rs: futures); every other test, the doc
# tests included, is the same code as in cargo-default and ran there.
ARROW_MIN=57
ARROW_MAX=60
step cargo-features cargo test --quiet --locked --no-fail-fast --manifest-path "$HERE/Cargo.toml" -p ferry-arrow \
  --features "arrow-$ARROW_MIN,arrow-$ARROW_MAX,arrow,futures" \
  --test arrow --test features --test hostile --test async_streams
# cargo verifies ferry-arrow against the packaged ferry-arrow-sys of a local
# registry, extracted once per version into $CARGO_HOME/registry/src and then
# reused: after a change of the sources (a regen of bindings.rs) it would build
# the old copy. Stale extractions of these two unpublished crates go first.
for extracted in "${CARGO_HOME:-${HOME:-/root}/.cargo}"/registry/src/*/ferry-arrow-sys-0.* \
                 "${CARGO_HOME:-${HOME:-/root}/.cargo}"/registry/src/*/ferry-arrow-0.*; do
  [ -d "$extracted/src" ] || continue
  case "$(basename "$extracted")" in
    ferry-arrow-sys-*) tree="$HERE/ferry-arrow-sys/src" ;;
    *) tree="$HERE/ferry-arrow/src" ;;
  esac
  diff -rq "$extracted/src" "$tree" >/dev/null 2>&1 || rm -rf "$extracted"
done
step cargo-package cargo package --quiet --locked --allow-dirty --manifest-path "$HERE/Cargo.toml" \
  -p ferry-arrow-sys -p ferry-arrow

# CUDA and ROCm paths without a GPU: the core's driver emulations (CMake
# targets cuda_emu and hip_emu) carry the GPU API tests and every case on
# device=cuda/rocm.
emu="$BUILD/test-emu"
step cargo-gpu-emulated env FERRY_CUDA_LIBRARY="$emu/libcuda_emu.so" FERRY_HIP_LIBRARY="$emu/libhip_emu.so" \
  cargo test --quiet --locked --no-fail-fast --manifest-path "$HERE/Cargo.toml" \
  -p ferry-arrow --test gpu_emu -p ferry-it --test gpu_emu

plugin="$BUILD/plugins/libferry_it_rust.so"
tool="$BUILD/bin/ferry"
if [ -x "$tool" ]; then
  for case in int32:nulls=3 utf8:length=40:nulls=4:offset=3 list_int32:seed=9 \
              struct_int32_utf8:device=sim dict_int32_utf8:length=0; do
    step "ferry-check-$case" "$tool" check --plugin "$plugin" --case "$case"
    step "ferry-check-stream-$case" "$tool" check --plugin "$plugin" --case "$case" --stream
  done
  # An injected producer failure must travel as EIO + get_last_error.
  step "ferry-check-stream-int32:fail=get_next@2" "$tool" check --plugin "$plugin" --case int32:fail=get_next@2 --stream
  # The async entry points (over the harness's generic layer): the strict
  # checking consumer against this plugin's producer; windows, the sim
  # device, cancel and failures from both sides. (The full async matrix of
  # every pair runs in the cross-language step.)
  for case in int32 utf8:nulls=3:offset=2:window=2:batches=4:seed=21 list_int32:device=sim:window=4:batches=6 \
              int32:batches=6:cancel=1:window=4 int32:fail=export int32:fail=get_schema:window=4 \
              int32:batches=3:fail=get_next@3:window=4 int32:batches=4:fail=consumer@2:window=2; do
    step "ferry-check-async-$case" "$tool" check --plugin "$plugin" --case "$case" --async
  done
else
  echo "rust: FAILED ferry check --plugin: $tool does not exist (build the tool with scripts/build.sh)"
  failed=$((failed + 1))
fi

echo "rust: ${SECONDS} s in all"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
