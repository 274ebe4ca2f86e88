#!/usr/bin/env bash
# Tests the Go binding (the module github.com/ferryarrow/ferry/bindings/go):
#   1. go mod verify and go vet of the whole module,
#   2. go test -race, then GOEXPERIMENT=cgocheck2 go test (the strict cgo
#      pointer checks; ferryarrow exports arrow-go's Go-heap buffers there),
#      both with the CUDA and ROCm driver emulations configured, so the GPU
#      tests (ferry/gpu_test.go, the device cases of internal/itcase) run,
#   3. `ferry check --plugin` on the Go plugin (cpu, sim, cuda, rocm cases),
#   4. a short benchmark run printed next to its floors (bench.sh).
# The plugin itself is built by scripts/build_plugins.sh (build_plugin.sh),
# its links and exports checked by scripts/check_artefacts.sh, the generated
# files by generators/regen.sh --check, and its handoffs with every other
# runtime by the matrix host. Assumes scripts/test.sh's build step.
# Ends with "N passed, N failed" (steps).
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$HERE/../../scripts/lib.sh"
# libferry is found through its pkg-config file (see ferry/cgo.go); module
# downloads (arrow-go, for ferryarrow) come from the Go proxy, checked
# against go.sum.
export PKG_CONFIG_PATH="$BUILD/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
# The GPU paths without a GPU: the core's driver emulations (CMake targets
# cuda_emu and hip_emu), whose device memory the host cannot read.
emu="$BUILD/test-emu"
gpu_env=(FERRY_CUDA_LIBRARY="$emu/libcuda_emu.so" FERRY_HIP_LIBRARY="$emu/libhip_emu.so")

run() { # run NAME COMMAND...: one step, its output shown as it runs
  local name="$1"; shift
  echo "== go: $name"
  if "$@"; then pass "$name"; else fail "$name"; fi
}

need_file "$BUILD/lib/pkgconfig/ferry.pc" "libferry's pkg-config file" || exit 1
need_file "$emu/libcuda_emu.so" "the CUDA driver emulation" || exit 1
need_file "$emu/libhip_emu.so" "the HIP driver emulation" || exit 1
command -v go >/dev/null || { echo "go: the go tool is missing (scripts/deps.d/go.sh)" >&2; exit 1; }
echo "go: $(go version), libferry from $BUILD/lib"

cd "$HERE"
run "go mod verify" go mod verify
run "go vet" go vet ./...
run "go test -race (GPU emulations on)" env "${gpu_env[@]}" go test -race -count=1 ./...
run "go test cgocheck2 (GPU emulations on)" env "${gpu_env[@]}" GOEXPERIMENT=cgocheck2 go test -count=1 ./...

plugin="$BUILD/plugins/libferry_it_go.so"
tool_check() {
  local tool="$BUILD/bin/ferry" c status=0
  need_file "$tool" "the ferry tool" && need_file "$plugin" "the Go plugin" || return 1
  for c in int32:nulls=3 utf8:offset=3:length=40 list_int32:nulls=2 struct_int32_utf8:seed=11 \
           dict_int32_utf8:device=sim:nulls=4 bool:length=100 float64:device=sim \
           int64:device=cuda:nulls=3:offset=2 utf8:device=rocm:nulls=2 struct_int32_utf8:device=cuda; do
    env "${gpu_env[@]}" "$tool" check --plugin "$plugin" --case "$c" || status=1
    env "${gpu_env[@]}" "$tool" check --plugin "$plugin" --case "$c:batches=3" --stream || status=1
  done
  "$tool" check --plugin "$plugin" --case "int64:fail=get_next@2" --stream || status=1
  return "$status"
}
run "ferry check --plugin (Go plugin)" tool_check

run "benchmarks (bench.sh, -benchtime ${FERRY_GO_BENCHTIME:-300000x})" bash "$HERE/bench.sh"

echo
finish
