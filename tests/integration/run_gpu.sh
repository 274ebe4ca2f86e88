#!/usr/bin/env bash
# The cross-language tests on a GPU: for each GPU device type ferry finds
# (cuda, rocm), every ordered pair of runtimes in one process over every case
# of cases.txt moved to that device (arrays and streams), the conformance
# suite of every runtime's plugin with its sim cases on that device, and
# then the polyglot demo on the best device (CUDA first, as `./dev.sh demo`
# picks). A runtime that reads device memory without copying it fails here,
# as it would on a GPU.
#
#   run_gpu.sh --emulated     on ferry's driver emulations (BUILD/test-emu):
#                             CI's view of a GPU (scripts/test.sh step
#                             gpu-emulated); both cuda and rocm must be there
#   run_gpu.sh                on the real drivers: a device type ferry does
#                             not find is SKIPPED loudly (exit 0 with none)
#   run_gpu.sh --print-cases DEVICE
#                             prints the case list for DEVICE and exits
#   --plugin-dir DIR          the plugins (default BUILD/plugins)
#   --sample N                every Nth case only (a quick run)
#   FERRY_GPU_RUNTIMES        the runtimes (default: every runtime of
#                             core/harness/runtimes.def); each must load
#   FERRY_GPU_LOGS            where the logs go (default BUILD/it-logs/gpu)
#
# The case lists for a device are derived from cases.txt and cases_async.txt
# (the async pairs: every pair whose plugins export the async entry points),
# never kept by hand:
# every case on cpu or sim (a case without device= is on the cpu) moves to
# the device; the rejected case strings stay as they are. Ends with
# "N passed, N failed[, N skipped]"; exits non-zero on any failure. Builds
# nothing. The GPU bundle (scripts/gpu_bundle.sh) ships this script with the
# files it reads, laid out as here.
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$HERE/../../scripts/lib.sh"

# device_cases DEVICE FILE: FILE's cases moved to DEVICE.
device_cases() {
  sed -E -e '/^[[:space:]]*(#|$)/b' -e '/^reject /b' \
    -e 's/device=(cpu|sim)([:[:space:]]|$)/device='"$1"'\2/' \
    -e '/device=/!s/[[:space:]]*$/:device='"$1"'/' "$2"
}

emulated=0
sample=1
plugins="$BUILD/plugins"
while [ $# -gt 0 ]; do
  case "$1" in
    --emulated) emulated=1 ;;
    --plugin-dir) plugins="$2"; shift ;;
    --sample) sample="$2"; shift ;;
    --print-cases) device_cases "$2" "$HERE/cases.txt"; device_cases "$2" "$HERE/cases_async.txt"; exit 0 ;;
    *) echo "usage: run_gpu.sh [--emulated] [--plugin-dir DIR] [--sample N] | --print-cases DEVICE" >&2
       exit 2 ;;
  esac
  shift
done

LOGS="${FERRY_GPU_LOGS:-$BUILD/it-logs/gpu}"
mkdir -p "$LOGS"
HOST="$BUILD/bin/ferry_it_host"
runtimes="${FERRY_GPU_RUNTIMES:-$(ferry_runtimes)}"
list="$(echo "$runtimes" | tr ' ' ',')"
need_file "$HOST" "the matrix host" || { fail "the host is not built"; finish; exit 1; }
label=""
if [ "$emulated" -eq 1 ]; then
  # The emulations hand out device memory the host cannot read: a runtime
  # that dereferences it crashes here as on a GPU (docs/events.md).
  export FERRY_CUDA_LIBRARY="$BUILD/test-emu/libcuda_emu.so"
  export FERRY_HIP_LIBRARY="$BUILD/test-emu/libhip_emu.so"
  need_file "$FERRY_CUDA_LIBRARY" "the CUDA driver emulation" &&
    need_file "$FERRY_HIP_LIBRARY" "the HIP runtime emulation" ||
    { fail "the driver emulations are not built"; finish; exit 1; }
  label=" [EMULATION, not a GPU]"
fi
echo "runtimes: $runtimes; plugins: $plugins"

# run NAME COMMAND...: one process that prints "N passed, N failed"; its FAIL
# lines (the first 40), its summary and its time; a crash is a failure.
run() {
  local name="$1"; shift
  local log="$LOGS/$name.log" start=$SECONDS
  timeout 900 "$@" >"$log" 2>&1
  local rc=$? before=$FERRY_FAILED
  grep -E '^(FAIL|SKIPPED runtime)' "$log" | head -n 40 | sed 's/^/   /'
  if ! add_counts "$log"; then
    tail -n 20 "$log" | sed 's/^/   | /'
    echo "FAILED: $name: no summary (exit code $rc: a crash?), log $log"
    return
  fi
  if [ "$rc" -ne 0 ] && [ "$FERRY_FAILED" -eq "$before" ]; then
    fail "$name: exit code $rc after its summary (log $log)"
  fi
  grep -A 8 '^producer \\ consumer' "$log" | sed 's/^/   /'
  echo "== $name$label: $(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)" \
    "($((SECONDS - start)) s, log $LOGS/$name.log)"
}

devices="$("$BUILD/bin/ferry" devices 2>&1)"
found=""
for device in cuda rocm; do
  if ! grep -Eq "^$device +available$" <<<"$devices"; then
    reason="$(grep -E "^$device " <<<"$devices" | sed -E "s/^$device +//")"
    if [ "$emulated" -eq 1 ]; then
      fail "$device is not available through the emulation: $reason"
    else
      skip "NO $device DEVICE, nothing ran on $device: $reason"
    fi
    continue
  fi
  found="$found $device"
  cases="$LOGS/cases-$device.txt"
  device_cases "$device" "$HERE/cases.txt" | grep -Ev '^[[:space:]]*(#|$)' |
    awk -v n="$sample" 'NR % n == 1 % n' >"$cases"
  every=""
  [ "$sample" -gt 1 ] && every=", every ${sample}th"
  echo "== $device$label: $(wc -l <"$cases") cases (cases.txt moved to $device$every)"
  async_cases="$LOGS/cases-async-$device.txt"
  device_cases "$device" "$HERE/cases_async.txt" | grep -Ev '^[[:space:]]*(#|$)' |
    awk -v n="$sample" 'NR % n == 1 % n' >"$async_cases"
  echo "   and $(wc -l <"$async_cases") async cases (cases_async.txt moved to $device$every)"
  run "matrix-$device" "$HOST" --plugin-dir "$plugins" --plugins "$list" --require "$list" \
    --cases "$cases" --async-cases "$async_cases"
  for rt in $runtimes; do
    run "conformance-$rt-$device" "$HOST" conformance "$plugins/libferry_it_$rt.so" \
      --reference "$plugins/libferry_it_c.so" --device "$device"
  done
done

# The demo on the best device, which must be the first GPU found.
if [ -n "$found" ]; then
  best="${found# }"; best="${best%% *}"
  log="$LOGS/demo.log"
  if timeout 600 "$BUILD/bin/ferry_it_demo" --plugin-dir "$plugins" >"$log" 2>&1 &&
     grep -Eq "^   device: $best$" "$log" && grep -q '^demo passed' "$log"; then
    pass "the demo on $best$label: $(grep '^demo passed' "$log")"
  else
    fail "the demo on $best$label (log $log)"
    grep -E '^(FAIL|   device:|demo)' "$log" | head -n 20 | sed 's/^/   | /'
  fi
else
  skip "the demo on a GPU: no GPU device was found"
fi
# Without a GPU nothing could pass, and that is not a failure here.
if [ -z "$found" ] && [ "$emulated" -eq 0 ]; then
  finish
  exit 0
fi
finish
