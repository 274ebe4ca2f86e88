#!/usr/bin/env bash
# Every benchmark of the repository, one after another (never two at once:
# they would time each other), and their figures kept in docs/bench/:
#   scripts/bench_*.sh        the core (core_bench with instruction counts), the
#                             cross-runtime pairs, and whatever else is added there
#   bindings/<lang>/bench.sh  each binding's handoff benchmark, for every runtime
#                             of core/harness/runtimes.def but C
# Benchmarks print figures; they are not tests (a missed target is reported,
# not failed). Each one's full output (colour codes removed) is saved as docs/bench/<name>.txt
# (core_ir.txt, rust.txt, ...), except bench_pairs.sh, which keeps its own
# record (docs/bench/handoff.txt, .tsv, .png). Run it on a quiet machine.
#   scripts/bench.sh [NAME...]   only those (names as printed: core_ir, pairs, rust, ...)
# Assumes everything is built (./dev.sh bench builds first). Exits non-zero
# when a benchmark could not run.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
OUT="$ROOT/docs/bench"
SELF_RECORDING="pairs" # benchmarks that write docs/bench themselves
mkdir -p "$OUT"
SELECTION=("$@")

# bench NAME SCRIPT: runs one benchmark, its output on the terminal and, for
# all but the self-recording ones, in docs/bench/NAME.txt.
bench() {
  local name="$1" script="$2" status
  selected "$name" || return 0
  echo "== $name ($script)"
  if [ ! -f "$script" ]; then
    fail "$name: $script does not exist"
    return
  fi
  if [[ " $SELF_RECORDING " == *" $name "* ]]; then
    bash "$script"
    status=$?
  else
    {
      echo "# $name $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, $(uname -m), load $(cut -d' ' -f1-3 /proc/loadavg)"
      bash "$script" 2>&1
    } | sed 's/\x1b\[[0-9;]*m//g' | tee "$OUT/$name.txt.tmp"
    status=${PIPESTATUS[0]}
    mv "$OUT/$name.txt.tmp" "$OUT/$name.txt"
  fi
  if [ "$status" -eq 0 ]; then pass "$name"; else fail "$name (exit code $status)"; fi
}

for script in "$ROOT"/scripts/bench_*.sh; do
  name="$(basename "$script" .sh)"
  bench "${name#bench_}" "$script"
done
for lang in $(ferry_runtimes); do
  [ "$lang" = c ] && continue
  bench "$lang" "$ROOT/bindings/$lang/bench.sh"
done
echo
finish
