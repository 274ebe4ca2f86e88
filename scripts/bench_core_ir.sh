#!/usr/bin/env bash
# The core benchmark with instruction counts: Ir per operation of each
# core_bench case (callgrind), next to the wall-time table of one normal run.
#
#   scripts/bench_core_ir.sh [BUILD_DIR] [--ir-only]
#       (BUILD_DIR default: $FERRY_BUILD_DIR or build/)
#
# Each case runs alone under callgrind (--case NAME --reps 1) at two
# iteration counts; the difference of the two totals divided by the
# difference of the operation counts cancels start-up, warm-up and teardown,
# leaving the cost of one operation. Instruction counts are deterministic, so
# unlike wall time they can gate CI on a shared, loaded machine.
#
# Prints "IR c <case> <Ir/op>" per case and the Ir ratios of the handoff to
# its floors; then (unless --ir-only) runs core_bench once, pinned to one CPU
# when taskset exists, and prints one table: case, min ns, median ns, Ir/op,
# followed by core_bench's RESULT lines, ratios and load averages.
set -euo pipefail
ROOT="${FERRY_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
BUILD="${FERRY_BUILD_DIR:-$ROOT/build}"
ir_only=0
for arg in "$@"; do
  case "$arg" in
    --ir-only) ir_only=1 ;;
    -*) echo "usage: bench_core_ir.sh [BUILD_DIR] [--ir-only]" >&2; exit 2 ;;
    *) BUILD="$arg" ;;
  esac
done
BENCH="$BUILD/bench/core_bench"
if [ ! -x "$BENCH" ]; then
  echo "bench_core_ir.sh: $BENCH not found; build the core first" >&2
  exit 1
fi
if ! command -v valgrind >/dev/null; then
  echo "bench_core_ir.sh: SKIP: valgrind is not installed (apt-get install valgrind)" >&2
  exit 1
fi
CASES="raw_move_stable raw_move_fill raw_move_fill_words c2c_static handoff_1KiB
       handoff_1GiB stream_get_next"
N1=20000
N2=120000
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# Total Ir of one callgrind run of one case at N iterations.
total_ir() {
  local case_name="$1" n="$2" out="$work/cg.$1.$2"
  if ! valgrind --tool=callgrind --callgrind-out-file="$out" \
      "$BENCH" --case "$case_name" --iterations "$n" --reps 1 >/dev/null 2>"$work/log"; then
    echo "bench_core_ir.sh: core_bench --case $case_name failed under callgrind:" >&2
    cat "$work/log" >&2
    exit 1
  fi
  awk '/^totals:/ {print $2; found=1} END {if (!found) exit 1}' "$out"
}

for case_name in $CASES; do
  ir1=$(total_ir "$case_name" "$N1")
  ir2=$(total_ir "$case_name" "$N2")
  # The warm-up runs N/10 + 1 extra operations: (N2 - N1) * 1.1 in total.
  awk -v a="$ir1" -v b="$ir2" -v n1="$N1" -v n2="$N2" -v c="$case_name" \
    'BEGIN { ops = (n2 + int(n2 / 10) + 1) - (n1 + int(n1 / 10) + 1);
             printf "IR c %s %.1f\n", c, (b - a) / ops }'
done | tee "$work/ir"

awk '{ ir[$3] = $4 }
     END {
       printf "Ir ratios (information; wall time is what the targets are about):\n";
       printf "  handoff_1KiB / raw_move_fill   %.2f\n", ir["handoff_1KiB"] / ir["raw_move_fill"];
       printf "  handoff_1KiB / c2c_static      %.2f\n", ir["handoff_1KiB"] / ir["c2c_static"];
       printf "  handoff_1GiB / handoff_1KiB    %.2f\n", ir["handoff_1GiB"] / ir["handoff_1KiB"];
       printf "  stream_get_next / c2c_static   %.2f\n", ir["stream_get_next"] / ir["c2c_static"];
     }' "$work/ir"

[ "$ir_only" -eq 1 ] && exit 0

pin=()
command -v taskset >/dev/null && pin=(taskset -c 1)
echo
echo "core_bench (wall time${pin:+, pinned to CPU 1}):"
"${pin[@]}" "$BENCH" >"$work/wall"
# The merged table: the wall-time rows of core_bench with Ir/op appended.
awk 'NR == FNR { ir[$3] = $4; next }
     /^case / { printf "%-20s %10s %10s %10s\n", "case", "min ns", "median ns", "Ir/op"; next }
     ($1 in ir) && NF == 3 { printf "%-20s %10s %10s %10s\n", $1, $2, $3, ir[$1]; next }
     { print }' "$work/ir" "$work/wall"
