#!/usr/bin/env bash
# The Go binding's benchmarks (ferry/bench_test.go, ratio_bench_test.go, and the arrow-go peer table of ferryarrow/peer_bench_test.go; not
# tests): go test -bench with the figures printed next to their floors
# measured in the same run (RESULT lines and ratios against the 1.5x target),
# then the interleaved ratios of BenchmarkRatios. Run by bindings/go/test.sh
# (a smoke run: FERRY_GO_BENCH_SHORT=1) and scripts/bench.sh (the figures).
#   FERRY_GO_BENCHTIME   -benchtime of the first part (default 300000x)
#   FERRY_GO_BENCH_ONLY  peers: only the arrow-go peer table (BenchmarkPeers)
#   FERRY_GO_BENCH_SHORT 1: go test -short, which BenchmarkRatios reads as 3
#                        rounds of 2000 instead of 15 of 20000 (it runs; its
#                        figures are rough)
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$HERE/../../scripts/lib.sh"
export PKG_CONFIG_PATH="$BUILD/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
BENCHTIME="${FERRY_GO_BENCHTIME:-300000x}"
short=()
[ "${FERRY_GO_BENCH_SHORT:-0}" = 1 ] && short=(-short)
cd "$HERE"
out=""
if [ "${FERRY_GO_BENCH_ONLY:-}" != peers ]; then
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) (1, 5, 15 min)"
out="$(go test "${short[@]}" -run '^$' -bench . -skip 'Ratios|Peers' -benchmem -benchtime "$BENCHTIME" -count 1 ./ferry/ 2>&1)" || { echo "$out"; exit 1; }
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
    ratio("C->Go array, lean (Import, Buffer) / floor", "Consume/lean", "Consume/floor", 1.5)
    ratio("C->Go array, everyday (Host, Value) / floor", "Consume/everyday", "Consume/floor", 3)
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
out="$(go test "${short[@]}" -run '^$' -bench Ratios -benchtime 1x -count 1 ./ferry/ 2>&1)" || { echo "$out"; exit 1; }
echo "$out" | awk '
  /^BenchmarkRatios/ { for (i = 5; i < NF; i += 2) v[$(i + 1)] = $i }
  function show(label, key, target) {
    if (!(("x-" key) in v)) return
    if (target == 0) target = 1.5
    r = v["x-" key]
    printf "RESULT go ratio/%s %s\n", key, r
    printf "  %-48s %7.2fx [%.2f-%.2f] %s\n", label, r, v["x-min-" key], v["x-max-" key],
           (r <= target ? "PASS (target " target "x)" : "MISS (target " target "x)")
  }
  END {
    print "interleaved in one process, median of 15 rounds [min-max]:"
    show("C->Go array, lean (Import, Buffer) / floor", "lean/floor", 1.5)
    show("C->Go array, everyday (Host, Value) / floor", "everyday/floor", 3)
    show("Go->C array: ferry / raw cgo", "ferry/raw")
    show("Go->C array via DeviceArray / raw cgo", "object/raw")
    show("Go stream -> C on a Go thread / floor", "stream-go/floor")
    show("Go stream -> C on a C thread / floor", "stream-c/floor")
    printf "  ns per op (medians): raw %s, ferry %s, object %s, stream on Go / C thread %s / %s, callback Go / C thread %s / %s\n",
           v["ns-raw"], v["ns-ferry"], v["ns-object"], v["ns-stream-go"], v["ns-stream-c"], v["ns-callback-go"], v["ns-callback-c"]
    printf "  consumer ns per op (medians): floor %s, lean %s, everyday %s\n",
           v["ns-consume-floor"], v["ns-consume-lean"], v["ns-consume-everyday"]
  }'
fi
# ferry against arrow-go's own C Data Interface (cdata), the paths a user of
# arrow-go takes (ferryarrow/peer_bench_test.go): interleaved rounds in one
# process, median of per-round ratios ferry / arrow-go with [min-max],
# allocations per operation beside ns, and what each side does.
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) (1, 5, 15 min; a shared machine: the spread shows the noise)"
out="$(go test "${short[@]}" -run '^$' -bench Peers -benchtime 1x -count 1 ./ferryarrow/ 2>&1)" || { echo "$out"; exit 1; }
echo "$out" | awk '
  /^PEER / { line = $0; sub(/^PEER /, "", line); n = split(line, f, " \\| "); key = f[1]; order[++rows] = key; label[key] = f[2]; same[key] = f[3] }
  /^BenchmarkPeers/ { for (i = 3; i < NF; i += 2) v[$(i + 1)] = $i }
  END {
    print "ferry / arrow-go cdata, median of per-round ratios [min-max] (target <= 1.0x), ns and allocations per operation (per batch for streams):"
    for (k = 1; k <= rows; k++) {
      key = order[k]
      r = v["x-" key]
      printf "RESULT go peer/%s %s\n", key, r
      printf "  %-9s %6.2fx [%.2f-%.2f] %s  ferry %.0f ns %.1f allocs, arrow-go %.0f ns %.1f allocs\n", key, r,
             v["x-min-" key], v["x-max-" key], (r <= 1.0 ? "PASS" : "MISS"),
             v["ns-ferry-" key], v["allocs-ferry-" key], v["ns-peer-" key], v["allocs-peer-" key]
      printf "            %s\n            same work? %s\n", label[key], same[key]
    }
  }'
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) (1, 5, 15 min)"
