#!/usr/bin/env bash
# Runs the Rust handoff benchmark (ferry/benches/handoff.rs) against the
# core in $FERRY_BUILD_DIR, pinned to one core when taskset exists:
#   1. wall time: min/median ns per handoff, the matching raw-C floor from
#      the same run, the ratios against the target (1.5; 3 for the everyday
#      `*_host` consumer path), `RESULT rust <case>
#      <ns/op>` lines;
#   2. instructions (when valgrind is installed): each case runs alone under
#      callgrind twice, with N1 and N2 operations; Ir/op = (Ir(N2) - Ir(N1))
#      / (N2 - N1) cancels start-up and warm-up, and does not move with the
#      machine's load. Printed next to the floor's Ir/op with the ratio, plus
#      `RESULT_IR rust <case> <Ir/op>` lines. Callgrind counts instructions,
#      not stalls: the wall-time table is the one that sees those.
#   3. the peer table (benches/peers.rs, issue 24): ferry against arrow-rs's
#      own C Data Interface (ffi, ffi_stream) in one process, interleaved
#      rounds, median of per-round ratios ferry / arrow-rs with their spread,
#      each line saying whether both sides do the same work; then, with
#      valgrind, instructions per operation of each side (the robust figure on
#      a loaded machine) and their ratio. `RESULT_PEER rust <op> <ratio>` and
#      `RESULT_PEER_IR rust <op> <ratio>` lines.
# Environment: FERRY_BENCH_QUICK=1 (fewer rounds), FERRY_BENCH_FILTER=word
# (matching cases and their floors), FERRY_BENCH_CALLGRIND=0 (skip 2 and the
# peers' instruction counts), FERRY_BENCH_WALL=0 (skip 1 and the peers' wall
# times), FERRY_BENCH_PEERS=0 (skip 3), FERRY_BENCH_HANDOFF=0 (skip 1 and 2:
# the peer table alone, as docs/bench/rust-peers.txt records it).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"

bin="$(cargo bench --quiet --locked --manifest-path "$HERE/Cargo.toml" -p ferry-arrow --bench handoff --no-run \
  --message-format=json 2>/dev/null | sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' | tail -1)"
if [ -z "$bin" ] || [ ! -x "$bin" ]; then
  echo "bench.sh: could not build the handoff benchmark" >&2
  exit 1
fi
pin=()
command -v taskset >/dev/null && pin=(taskset -c 1)

handoff="${FERRY_BENCH_HANDOFF:-1}"
if [ "${FERRY_BENCH_WALL:-1}" != 0 ] && [ "$handoff" != 0 ]; then
  "${pin[@]}" "$bin"
  # The async device stream against the sync one, Rust -> Rust (not pinned:
  # the producer is a thread of its own). FERRY_BENCH_ASYNC=0 skips it.
  if [ "${FERRY_BENCH_ASYNC:-1}" != 0 ]; then
    echo
    cargo bench --quiet --locked --manifest-path "$HERE/Cargo.toml" -p ferry-arrow --bench async_handoff
  fi
fi

# The peer benchmark (needs the `arrow` feature); its binary, built now so
# that the callgrind section below can use it too.
peers=""
if [ "${FERRY_BENCH_PEERS:-1}" != 0 ]; then
  peers="$(cargo bench --quiet --locked --manifest-path "$HERE/Cargo.toml" -p ferry-arrow --features arrow --bench peers \
    --no-run --message-format=json 2>/dev/null | sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' | tail -1)"
  if [ -z "$peers" ] || [ ! -x "$peers" ]; then
    echo "bench.sh: could not build the peer benchmark" >&2
    exit 1
  fi
  if [ "${FERRY_BENCH_WALL:-1}" != 0 ]; then
    echo
    echo "load average (a shared machine: wall times move with it): $(uptime | sed 's/.*load average: //')"
    "${pin[@]}" "$peers"
  fi
fi

[ "${FERRY_BENCH_CALLGRIND:-1}" = 0 ] && exit 0
if ! command -v valgrind >/dev/null; then
  echo "bench.sh: SKIPPED the callgrind Ir/op table: valgrind is not installed"
  exit 0
fi
n1=10000
n2=60000
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
# "case floor" pairs (floor "-" for the floors themselves), filtered as the
# wall-time run filters.
if [ "$handoff" != 0 ]; then
FERRY_BENCH_LIST=1 "$bin" >"$tmp/list"
if [ -n "${FERRY_BENCH_FILTER:-}" ]; then
  awk -v f="$FERRY_BENCH_FILTER" 'NR == FNR { if (index($1, f) && $2 != "-") keep[$2] = 1; next }
       index($1, f) || ($1 in keep)' "$tmp/list" "$tmp/list" >"$tmp/list.f"
  mv "$tmp/list.f" "$tmp/list"
fi
ir_total() { # ir_total CASE N: total Ir of one run
  FERRY_BENCH_CASE="$1" FERRY_BENCH_OPS="$2" "${pin[@]}" valgrind --tool=callgrind \
    --callgrind-out-file="$tmp/out" "$bin" >/dev/null 2>"$tmp/err" || { cat "$tmp/err" >&2; return 1; }
  awk '/^summary:/ { print $2 }' "$tmp/out"
}
while read -r name floor; do
  a="$(ir_total "$name" "$n1")"
  b="$(ir_total "$name" "$n2")"
  echo "$name $floor $(awk -v a="$a" -v b="$b" -v n1="$n1" -v n2="$n2" 'BEGIN { printf "%.1f", (b - a) / (n2 - n1) }')"
done <"$tmp/list" >"$tmp/ir"
echo
echo "instructions per handoff (callgrind, Ir(N=$n2) - Ir(N=$n1) over $((n2 - n1)) ops; same floors as above)"
awk '{ ir[$1] = $3; floor[$1] = $2; order[NR] = $1 }
  END {
    printf "%-31s %8s  %-25s %8s %7s  target (1.5; 3 for *_host)\n", "case", "Ir/op", "floor", "floor Ir", "ratio"
    worst = 0
    for (i = 1; i <= NR; i++) {
      c = order[i]; f = floor[c]
      if (f == "-") { printf "%-31s %8.1f  %-25s %8s %7s\n", c, ir[c], "(floor)", "-", "-"; continue }
      t = (c ~ /_host$/) ? 3 : 1.5
      r = ir[c] / ir[f]; if (r / t > worst) worst = r / t
      printf "%-31s %8.1f  %-25s %8.1f %7.2f  %s\n", c, ir[c], f, ir[f], r, (r <= t ? "ok" : "ABOVE TARGET")
    }
    for (i = 1; i <= NR; i++) printf "RESULT_IR rust %s %.1f\n", order[i], ir[order[i]]
    printf "worst Ir/op ratio against its floor, as a share of its target: %.2f (<= 1 meets it)\n", worst
  }' "$tmp/ir"
fi

# Instructions per operation of each side of each peer case: one side alone,
# run twice (N1 and N2 operations; a stream case's operation is a stream of
# 1,000 batches, reported per batch), the difference over the extra work.
[ -z "$peers" ] && exit 0
echo
echo "ferry vs arrow-rs, instructions per operation (callgrind; per batch for streams)"
printf '%-16s %9s %9s %7s\n' operation ferry arrow-rs ratio
while read -r name units; do
  if [ "$units" = 1 ]; then p1=2000; p2=12000; else p1=1; p2=6; fi
  irs=()
  for side in ferry arrow; do
    a="$(FERRY_PEER_CASE="$name" FERRY_PEER_SIDE="$side" FERRY_BENCH_OPS="$p1" "${pin[@]}" valgrind --tool=callgrind \
      --callgrind-out-file="$tmp/out" "$peers" >/dev/null 2>"$tmp/err" && awk '/^summary:/ { print $2 }' "$tmp/out")" \
      || { cat "$tmp/err" >&2; exit 1; }
    b="$(FERRY_PEER_CASE="$name" FERRY_PEER_SIDE="$side" FERRY_BENCH_OPS="$p2" "${pin[@]}" valgrind --tool=callgrind \
      --callgrind-out-file="$tmp/out" "$peers" >/dev/null 2>"$tmp/err" && awk '/^summary:/ { print $2 }' "$tmp/out")" \
      || { cat "$tmp/err" >&2; exit 1; }
    irs+=("$(awk -v a="$a" -v b="$b" -v d="$(( (p2 - p1) * units ))" 'BEGIN { printf "%.0f", (b - a) / d }')")
  done
  awk -v n="$name" -v f="${irs[0]}" -v r="${irs[1]}" 'BEGIN {
    printf "%-16s %9d %9d %6.2fx\n", n, f, r, f / r; printf "RESULT_PEER_IR rust %s %.3f\n", n, f / r }'
done < <(FERRY_BENCH_LIST=1 FERRY_BENCH_FILTER="${FERRY_BENCH_FILTER:-}" "$peers")
