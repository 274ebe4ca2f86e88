#!/usr/bin/env bash
# The new-user test of the Rust binding (issue 16): what a user does with
# nothing but bindings/rust/README.md.
#   1. examples/rust is copied to a temporary directory outside the tree; its
#      path dependency is pointed at this checkout's ferry-arrow (the one edit
#      the README asks for); it is built with PKG_CONFIG_PATH (the variable
#      the README names) and no other ferry, cargo or loader variable;
#   2. the binary runs on its own (no LD_LIBRARY_PATH) and through
#      `cargo run`, and prints the expected lines; once more on the CUDA
#      driver emulation (FERRY_CUDA_LIBRARY, the core's documented
#      variable), where its device array goes to "cuda:0";
#   3. a git dependency on this checkout (as on GitHub) without
#      PKG_CONFIG_PATH fails with the error naming what to set (cargo hides
#      warnings of git dependencies), and builds and runs with it.
# Needs the core built in $FERRY_BUILD_DIR (scripts/build.sh), cargo, git,
# and crates.io. Prints "N passed, N failed"; exits non-zero on a failure.
set -uo pipefail
[ -d "${HOME:-/root}/.cargo/bin" ] && PATH="${HOME:-/root}/.cargo/bin:$PATH"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
EXAMPLE=rust
USER_UNSET=(FERRY_LIB_DIR PKG_CONFIG_PATH CARGO_TARGET_DIR RUSTFLAGS)
. "$HERE/../new_user.sh"

need_core

# --- 1. the example, copied out of the tree --------------------------------
copy_example target Cargo.lock
sed -i "s#path = \"../../bindings/rust/ferry-arrow\"#path = \"$ROOT/bindings/rust/ferry-arrow\"#" "$app/Cargo.toml"
if grep -q "path = \"$ROOT/bindings/rust/ferry-arrow\"" "$app/Cargo.toml"; then
  pass "copied to $app, path dependency on $ROOT/bindings/rust/ferry-arrow"
else
  fail "the example's Cargo.toml has no path dependency to rewrite"
fi
if (cd "$app" && user PKG_CONFIG_PATH="$pc" cargo build --quiet) >"$log" 2>&1; then
  pass "cargo build with PKG_CONFIG_PATH only"
else
  fail "cargo build with PKG_CONFIG_PATH only"
fi

# --- 2. run it --------------------------------------------------------------
expect_output() { # expect_output FILE DEVICE_LINE_PATTERN
  expect_lines "$1" "^ferry 0\.1\.0$" "^consumer: \[1, null, 3, 4\], sum 8$" \
                   "^arrow: \[Some\(1\), None, Some\(3\), Some\(4\)\]$" \
                   "^stream: 3 batches, 6 rows: a,b,c,d,e,f$" "$2"
}
bin="$app/target/debug/ferry-example"
if prints "$tmp" '^device: (ext_dev:0 \(no GPU: the simulated device\)|cuda:0|rocm:0) -> host \[1, null, 3, 4\]$' \
     user "$bin"; then
  pass "the binary runs on its own (run path from its build.rs) and prints every line"
else
  fail "running $bin"
fi
if prints "$app" '^device: .* -> host \[1, null, 3, 4\]$' user PKG_CONFIG_PATH="$pc" cargo run --quiet; then
  pass "cargo run"
else
  fail "cargo run"
fi
emu="$tmp/libcuda_emu.so"
if "${CC:-cc}" -std=c11 -D_GNU_SOURCE -O1 -fPIC -shared -o "$emu" "$ROOT/tests/gpu/emu/cuda_emu.c" -lpthread \
     >"$log" 2>&1 &&
   prints "$tmp" '^device: cuda:0 -> host \[1, null, 3, 4\]$' user FERRY_CUDA_LIBRARY="$emu" "$bin"; then
  pass "on a GPU (the CUDA driver emulation) the device array goes to cuda:0 and back"
else
  fail "the example on the CUDA driver emulation"
fi

# --- 3. a git dependency -----------------------------------------------------
rev="$(git -C "$ROOT" rev-parse HEAD 2>/dev/null)"
if [ -z "$rev" ]; then
  fail "$ROOT is not a git checkout: cannot test a git dependency"
else
  git_app="$tmp/git-user"
  mkdir -p "$git_app/src"
  cat >"$git_app/Cargo.toml" <<EOF
[package]
name = "git-user"
version = "0.1.0"
edition = "2021"

[dependencies]
ferry-arrow = { git = "file://$ROOT", rev = "$rev" }
EOF
  echo 'fn main() { println!("ferry {}", ferry_arrow::version()); }' >"$git_app/src/main.rs"
  if user pkg-config --exists ferry 2>/dev/null; then
    echo "rust example: SKIPPED the missing-library message: pkg-config finds an installed ferry without PKG_CONFIG_PATH"
  elif (cd "$git_app" && user cargo build --quiet) >"$log" 2>&1; then
    fail "a git dependency built without PKG_CONFIG_PATH, where no libferry can be found"
  elif grep -q "cannot find libferry.so" "$log" && grep -q "PKG_CONFIG_PATH=<checkout>/build/lib/pkgconfig" "$log" &&
       grep -q "FERRY_LIB_DIR=" "$log"; then
    pass "a git dependency without PKG_CONFIG_PATH fails naming PKG_CONFIG_PATH and FERRY_LIB_DIR"
  else
    fail "a git dependency without PKG_CONFIG_PATH fails, but without the message naming the fix"
  fi
  if (cd "$git_app" && user PKG_CONFIG_PATH="$pc" cargo run --quiet) >"$log" 2>&1 && grep -q "^ferry 0.1.0$" "$log"; then
    pass "a git dependency with PKG_CONFIG_PATH builds and runs"
  else
    fail "a git dependency with PKG_CONFIG_PATH"
  fi
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
