#!/usr/bin/env bash
# Instructions per operation of each core_bench case, counted by callgrind.
#
#   scripts/bench_core_ir.sh [BUILD_DIR]      (default: $FERRY_BUILD_DIR or build/)
#
# Each case runs alone (--case NAME --reps 1) at two iteration counts; the
# difference of the two totals divided by the difference of the counts
# cancels start-up, warm-up and teardown, leaving the cost of one operation.
# Instruction counts are deterministic, so unlike wall time they can gate CI
# on a shared machine. Prints "IR c <case> <Ir/op>" per case.
set -euo pipefail
ROOT="${FERRY_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
BUILD="${1:-${FERRY_BUILD_DIR:-$ROOT/build}}"
BENCH="$BUILD/bench/core_bench"
if [ ! -x "$BENCH" ]; then
  echo "bench_core_ir.sh: $BENCH not found; build the core first" >&2
  exit 1
fi
if ! command -v valgrind >/dev/null; then
  echo "bench_core_ir.sh: SKIP: valgrind is not installed" >&2
  exit 1
fi
N1=20000
N2=120000
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# Total Ir of one callgrind run of one case at N iterations.
total_ir() {
  local case_name="$1" n="$2" out="$work/cg.$1.$2"
  valgrind --tool=callgrind --callgrind-out-file="$out" \
    "$BENCH" --case "$case_name" --iterations "$n" --reps 1 >/dev/null 2>"$work/log"
  awk '/^totals:/ {print $2; found=1} END {if (!found) exit 1}' "$out"
}

for case_name in raw_move handoff_1KiB handoff_1GiB stream_get_next; do
  ir1=$(total_ir "$case_name" "$N1")
  ir2=$(total_ir "$case_name" "$N2")
  # The warm-up runs N/10 + 1 extra operations: (N2 - N1) * 1.1 in total.
  awk -v a="$ir1" -v b="$ir2" -v n1="$N1" -v n2="$N2" -v c="$case_name" \
    'BEGIN { ops = (n2 + int(n2 / 10) + 1) - (n1 + int(n1 / 10) + 1);
             printf "IR c %s %.1f\n", c, (b - a) / ops }'
done
