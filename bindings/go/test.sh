#!/usr/bin/env bash
# Tests the Go binding (the module github.com/ferryarrow/ferry/bindings/go):
#   1. go mod verify and go vet of the whole module,
#   2. one instrumented go test of the whole module that is both -race and
#      GOEXPERIMENT=cgocheck2 (the strict cgo pointer checks; ferryarrow
#      exports arrow-go's Go-heap buffers there): one build and one run
#      where there were two of each; with the CUDA and ROCm driver
#      emulations configured, so the GPU tests (ferry/gpu_test.go, the
#      device cases of internal/itcase) run,
#   3. `ferry check --plugin` on the Go plugin (cpu, sim, cuda, rocm cases;
#      arrays, streams and async streams),
#   4. a smoke run of the benchmarks (bench.sh with FERRY_GO_BENCH_SHORT=1 and
#      -benchtime ${FERRY_GO_BENCHTIME:-20000x}): they build and run; their
#      figures come from scripts/bench.sh (./dev.sh bench).
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

run() { # run NAME COMMAND...: one step, its output shown as it runs, timed
  local name="$1" start=$SECONDS; shift
  echo "== go: $name"
  if "$@"; then pass "$name ($((SECONDS - start)) s)"; else fail "$name ($((SECONDS - start)) s)"; fi
}

need_file "$BUILD/lib/pkgconfig/ferry.pc" "libferry's pkg-config file" || exit 1
need_file "$BUILD/lib/libferry_hostile.so" "the hostile producers (tests/hostile)" || exit 1
need_file "$emu/libcuda_emu.so" "the CUDA driver emulation" || exit 1
need_file "$emu/libhip_emu.so" "the HIP driver emulation" || exit 1
command -v go >/dev/null || { echo "go: the go tool is missing (scripts/deps.d/go.sh)" >&2; exit 1; }
echo "go: $(go version), libferry from $BUILD/lib"

cd "$HERE"
run "go mod verify" go mod verify
run "go vet" go vet ./...
run "go test -race, cgocheck2 (GPU emulations on)" env "${gpu_env[@]}" GOEXPERIMENT=cgocheck2 go test -race -count=1 ./...

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
  # The async entry points (plugin/async.c over libferry_it_async.a) through
  # the strict checking consumer: windows, cancel, failures from both sides.
  for c in int32:window=4:batches=5:seed=7 struct_int32_utf8:window=1:batches=2:seed=31 \
           utf8:device=sim:batches=5:cancel=3:window=2:seed=310 int32:batches=3:fail=get_next@1 \
           int32:fail=get_schema:window=4 int32:batches=4:fail=consumer@3:window=4 \
           int64:device=cuda:batches=3:window=2 int8:batches=0; do
    env "${gpu_env[@]}" "$tool" check --plugin "$plugin" --case "$c" --async || status=1
  done
  return "$status"
}
run "ferry check --plugin (Go plugin)" tool_check

run "benchmarks, smoke run (bench.sh, -short, -benchtime ${FERRY_GO_BENCHTIME:-20000x})" \
  env FERRY_GO_BENCH_SHORT=1 FERRY_GO_BENCHTIME="${FERRY_GO_BENCHTIME:-20000x}" bash "$HERE/bench.sh"

echo
finish
