#!/usr/bin/env bash
# Tests the Go binding: generated files fresh, go vet, go test -race, the
# strict cgo pointer checks (GOEXPERIMENT=cgocheck2), the c-shared plugin
# build with its C-host test against the C plugin, `ferry check` on the Go
# plugin, and a short benchmark run printed next to its floors.
# Assumes the core is built in $FERRY_BUILD_DIR (default $FERRY_ROOT/build).
# Ends with "N passed, N failed" (steps).
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="${FERRY_ROOT:-$(cd "$HERE/../.." && pwd)}"
BUILD="${FERRY_BUILD_DIR:-$ROOT/build}"
export FERRY_ROOT="$ROOT" FERRY_BUILD_DIR="$BUILD"
# libferry is found through its pkg-config file (see ferry/cgo.go); module
# downloads (arrow-go, for ferryarrow only) come from the Go proxy.
export PKG_CONFIG_PATH="$BUILD/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
export GOFLAGS=-mod=mod
BENCHTIME="${FERRY_GO_BENCHTIME:-300000x}"

passed=0; failed=0; failures=()
run() { # run NAME COMMAND...
  local name="$1"; shift
  echo "== go: $name"
  if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); failures+=("$name"); echo "FAILED: $name"; fi
}

if [ ! -f "$BUILD/lib/libferry.so" ] || [ ! -f "$BUILD/lib/pkgconfig/ferry.pc" ]; then
  echo "go: libferry is not built in $BUILD (run ./dev.sh build)" >&2
  exit 1
fi
command -v go >/dev/null || { echo "go: the go tool is missing (scripts/deps.d/go.sh)" >&2; exit 1; }
echo "go: $(go version), libferry from $BUILD/lib"

cd "$HERE"
run "generated files fresh" bash "$ROOT/generators/go/check.sh"
run "go vet" go vet ./...
run "go vet (ferryarrow)" bash -c 'cd ferryarrow && go vet ./...'
run "go test -race" go test -race -count=1 ./...
run "go test -race (ferryarrow)" bash -c 'cd ferryarrow && go test -race -count=1 ./...'
run "go test cgocheck2" env GOEXPERIMENT=cgocheck2 go test -count=1 ./...
run "go test cgocheck2 (ferryarrow)" bash -c 'cd ferryarrow && GOEXPERIMENT=cgocheck2 go test -count=1 ./...'

plugin="$BUILD/plugins/libferry_it_go.so"
build_plugin() {
  mkdir -p "$BUILD/plugins"
  go build -buildmode=c-shared -o "$plugin" ./plugin || return 1
  rm -f "${plugin%.so}.h" # cgo's generated header: tests/integration/ferry_it.h is the contract
  # The core must be linked dynamically (one registry per process), never copied in.
  readelf -d "$plugin" | grep -q 'NEEDED.*libferry\.so' || { echo "plugin does not link libferry.so"; return 1; }
  if nm -D --defined-only "$plugin" | grep -qw 'ferry_array_init'; then
    echo "plugin contains its own copy of the core"; return 1
  fi
}
run "plugin build (c-shared)" build_plugin

host_test() {
  local host="$BUILD/plugins/go_plugin_host" c_plugin="$BUILD/plugins/libferry_it_c.so"
  gcc -std=c11 -D_GNU_SOURCE -O1 -Wall -Wextra -Werror -I"$ROOT/core/include" \
    -I"$ROOT/tests/integration" "$HERE/plugin/test/host.c" -ldl -lpthread -o "$host" || return 1
  if [ ! -f "$c_plugin" ]; then
    echo "SKIP (loud): $c_plugin is missing; only Go -> Go cells run"
    "$host" "$plugin"
  else
    "$host" "$plugin" "$c_plugin"
  fi
}
run "C host: Go plugin <-> C plugin" host_test

tool_check() {
  local tool="$BUILD/bin/ferry" c status=0
  if [ ! -x "$tool" ]; then echo "SKIP (loud): $tool is not built"; return 0; fi
  for c in int32:nulls=3 utf8:offset=3:length=40 list_int32:nulls=2 struct_int32_utf8:seed=11 \
           dict_int32_utf8:device=sim:nulls=4 bool:length=100 float64:device=sim; do
    "$tool" check --plugin "$plugin" --case "$c" || status=1
    "$tool" check --plugin "$plugin" --case "$c:batches=3" --stream || status=1
  done
  "$tool" check --plugin "$plugin" --case "int64:fail=get_next@2" --stream || status=1
  return "$status"
}
run "ferry check --plugin (Go plugin)" tool_check

bench() {
  local out
  echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) (1, 5, 15 min)"
  out="$(go test -run '^$' -bench . -skip Ratios -benchmem -benchtime "$BENCHTIME" -count 1 ./ferry/ 2>&1)" || { echo "$out"; return 1; }
  echo "$out" | grep '^Benchmark'
  echo "$out" | awk '
    /^Benchmark/ { name = $1; sub(/^Benchmark/, "", name); sub(/-[0-9]+$/, "", name); ns[name] = $3
                   printf "RESULT go %s %s\n", name, $3 }
    function ratio(label, a, b, target) {
      if (!(a in ns) || !(b in ns)) return
      r = ns[a] / ns[b]
      printf "  %-48s %7.2fx %s\n", label, r, (target == 0 ? "" : (r <= target ? "PASS (target " target "x)" : "MISS (target " target "x)"))
    }
    END {
      print "ratios against floors measured in this run (reported, not gated; one short run on a shared machine):"
      ratio("C->Go stream batch: ferry / raw cgo", "CToGo/ferry", "CToGo/raw", 1.5)
      ratio("Go->C array: ferry / raw cgo", "GoToC/ferry", "GoToC/raw", 1.5)
      ratio("Go->C array via DeviceArray / raw cgo", "GoToC/object", "GoToC/raw", 1.5)
      ns["floor-go"] = ns["Callback/gothread"] + ns["GoToC/raw"]
      ns["floor-c"] = ns["Callback/cthread"] + ns["GoToC/raw"]
      ratio("Go stream -> C on a Go thread / floor", "GoStreamToC/gothread", "floor-go", 1.5)
      ratio("Go stream -> C on a C thread / floor", "GoStreamToC/cthread", "floor-c", 1.5)
      ratio("export: pinned Go slice / C memory", "Export/pinned", "Export/cmem", 0)
      ratio("handles: cgo.Handle / table", "Handle/cgo", "Handle/table", 0)
      ratio("safety net: AddCleanup+Stop / nursery", "Guard/addcleanup", "Guard/nursery", 0)
      ratio("safety net: nursery / bare object", "Guard/nursery", "Guard/none", 0)
      printf "  C->Go callback on a new C thread: %s ns (target well under 1000 ns)\n", ns["Callback/cthread"]
    }'
  # The same handoffs and floors in alternating blocks within one process
  # (BenchmarkRatios): the median of per-round ratios resists load drift.
  echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) (1, 5, 15 min)"
  out="$(go test -run '^$' -bench Ratios -benchtime 1x -count 1 ./ferry/ 2>&1)" || { echo "$out"; return 1; }
  echo "$out" | awk '
    /^BenchmarkRatios/ { for (i = 5; i < NF; i += 2) v[$(i + 1)] = $i }
    function show(label, key) {
      if (!(("x-" key) in v)) return
      r = v["x-" key]
      printf "RESULT go ratio/%s %s\n", key, r
      printf "  %-48s %7.2fx [%.2f-%.2f] %s\n", label, r, v["x-min-" key], v["x-max-" key],
             (r <= 1.5 ? "PASS (target 1.5x)" : "MISS (target 1.5x)")
    }
    END {
      print "interleaved in one process, median of 15 rounds [min-max]:"
      show("Go->C array: ferry / raw cgo", "ferry/raw")
      show("Go->C array via DeviceArray / raw cgo", "object/raw")
      show("Go stream -> C on a Go thread / floor", "stream-go/floor")
      show("Go stream -> C on a C thread / floor", "stream-c/floor")
      printf "  ns per op (medians): raw %s, ferry %s, object %s, stream on Go / C thread %s / %s, callback Go / C thread %s / %s\n",
             v["ns-raw"], v["ns-ferry"], v["ns-object"], v["ns-stream-go"], v["ns-stream-c"], v["ns-callback-go"], v["ns-callback-c"]
    }'
}
run "benchmarks (-benchtime $BENCHTIME)" bench

echo
[ "$failed" -gt 0 ] && echo "go failed steps: ${failures[*]}"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
