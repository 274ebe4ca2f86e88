#!/usr/bin/env bash
# The new-user test of the Go binding (issue 16): what a user does with
# nothing but bindings/go/README.md.
#   1. examples/go is copied to a temporary directory outside the tree; its
#      `replace` line is pointed at this checkout's bindings/go (the one edit
#      the README asks for until the module is published); it is built with
#      PKG_CONFIG_PATH (the variable the README names) and no other ferry,
#      Go or loader variable;
#   2. the binary runs on its own (no LD_LIBRARY_PATH: the run path comes
#      from ferry.pc) and through `go run`, and prints the expected lines;
#      once more on the CUDA driver emulation (FERRY_CUDA_LIBRARY, the core's
#      documented variable), where its device array goes to "cuda:0";
#   3. a program that imports only package ferry builds without arrow-go
#      (module graph pruning: ferryarrow's dependency is not built).
# Needs the core built in $FERRY_BUILD_DIR (scripts/build.sh), go, and the
# Go module proxy. Prints "N passed, N failed"; exits non-zero on a failure.
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
EXAMPLE=go
USER_UNSET=(PKG_CONFIG_PATH GOFLAGS CGO_CFLAGS CGO_LDFLAGS)
. "$HERE/../new_user.sh"

need_core
module="$ROOT/bindings/go"

# --- 1. the example, copied out of the tree --------------------------------
copy_example ferry-example
sed -i "s#=> ../../bindings/go#=> $module#" "$app/go.mod"
if grep -q "=> $module\$" "$app/go.mod"; then
  pass "copied to $app, replace pointing at $module"
else
  fail "the example's go.mod has no replace line to point at the checkout"
fi
if (cd "$app" && user PKG_CONFIG_PATH="$pc" go build -o ferry-example .) >"$log" 2>&1; then
  pass "go build with PKG_CONFIG_PATH only"
else
  fail "go build with PKG_CONFIG_PATH only"
fi

# --- 2. run it --------------------------------------------------------------
expect_output() { # expect_output FILE DEVICE_LINE_PATTERN
  expect_lines "$1" "^ferry 0\.1\.0$" "^consumer: \[1 null 3 4\], sum 8$" "^arrow: \[1 \(null\) 3 4\]$" \
                   "^stream: 3 batches, 6 rows: a,b,c,d,e,f$" "$2"
}
bin="$app/ferry-example"
if prints "$tmp" '^device: (ext_dev:0 \(no GPU: the simulated device\)|cuda:0|rocm:0) -> host \[1 null 3 4\]$' \
     user "$bin"; then
  pass "the binary runs on its own (run path from ferry.pc) and prints every line"
else
  fail "running $bin"
fi
if prints "$app" '^device: .* -> host \[1 null 3 4\]$' user PKG_CONFIG_PATH="$pc" go run .; then
  pass "go run"
else
  fail "go run"
fi
if prints "$tmp" '^device: cuda:0 -> host \[1 null 3 4\]$' \
     user FERRY_CUDA_LIBRARY="$BUILD/test-emu/libcuda_emu.so" "$bin"; then
  pass "on a GPU (the CUDA driver emulation) the device array goes to cuda:0 and back"
else
  fail "the example on the CUDA driver emulation"
fi

# --- 3. package ferry alone does not build arrow-go --------------------------
lean="$tmp/lean-user"
mkdir -p "$lean"
cat >"$lean/go.mod" <<EOF
module example.com/lean

go 1.25.0

require github.com/ferryarrow/ferry/bindings/go v0.1.0

replace github.com/ferryarrow/ferry/bindings/go => $module
EOF
cat >"$lean/main.go" <<'EOF'
package main

import (
	"fmt"

	"github.com/ferryarrow/ferry/bindings/go/ferry"
)

func main() { fmt.Println("ferry", ferry.Version()) }
EOF
if (cd "$lean" && user PKG_CONFIG_PATH="$pc" GOFLAGS=-mod=mod go mod tidy && \
    user PKG_CONFIG_PATH="$pc" go list -deps . >"$tmp/deps" && user PKG_CONFIG_PATH="$pc" go run .) >"$log" 2>&1 &&
   grep -q "^ferry 0.1.0$" "$log" && ! grep -q "arrow-go" "$tmp/deps" && grep -q "bindings/go/ferry$" "$tmp/deps"; then
  pass "a program importing only package ferry builds and runs without arrow-go"
else
  [ -f "$tmp/deps" ] && grep arrow-go "$tmp/deps" | head -3 >>"$log"
  fail "a program importing only package ferry"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
