#!/usr/bin/env bash
# Builds and runs the libFuzzer targets of core/fuzz against the core sources
# (compiled directly, with ASan and UBSan) and exits non-zero on a crash.
#
#   scripts/fuzz.sh short            about 30 s in total (10 s per target)
#   scripts/fuzz.sh long [SECONDS]   SECONDS per target (default 300)
#
# Targets: fuzz_format (format strings), fuzz_validate (FULL validation of
# arbitrary contents), fuzz_hostile (a hostile producer's graph through
# validation, buffer sizes, the deep copy and DLPack; see its header).
# A slow input is a failure: -timeout is 10 s per input (5 s for
# fuzz_hostile, whose walks must be linear), which catches exponential walks.
#
# Corpora grow under build/fuzz/<target>/ (seeded from core/fuzz/corpus/);
# crash inputs land in build/fuzz/<target>/crashes/. Needs clang-14 (installed by
# scripts/deps.sh fuzz when missing).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
MODE=${1:-short}
case $MODE in
  short) SECONDS_PER_TARGET=10 ;;
  long) SECONDS_PER_TARGET=${2:-300} ;;
  -h|--help|help)
    sed -n '2,15p' "${BASH_SOURCE[0]}"
    exit 0 ;;
  *)
    echo "usage: scripts/fuzz.sh short | long [SECONDS]" >&2
    exit 2 ;;
esac
if ! [[ $SECONDS_PER_TARGET =~ ^[0-9]+$ ]] || [ "$SECONDS_PER_TARGET" -lt 1 ]; then
  echo "fuzz.sh: SECONDS must be a positive whole number, got \"$SECONDS_PER_TARGET\"" >&2
  exit 2
fi
CLANG=${CLANG:-clang-14}
# Only fuzzing needs clang and LLVM (building the core does not): installed
# here, quietly when present.
[ "$CLANG" = clang-14 ] && bash "$ROOT/scripts/deps.sh" fuzz
if ! command -v "$CLANG" >/dev/null; then
  echo "fuzz.sh: $CLANG not found (apt-get install clang-14)" >&2
  exit 2
fi

OUT=${FERRY_FUZZ_DIR:-$ROOT/build/fuzz}
mkdir -p "$OUT"
FLAGS=(-std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined
       -fno-sanitize-recover=all -fno-omit-frame-pointer
       -I"$ROOT/core/include" -I"$ROOT/core/src")

status=0
for target in fuzz_format fuzz_validate fuzz_hostile; do
  binary="$OUT/bin/$target"
  mkdir -p "$OUT/bin"
  echo "== building $target"
  "$CLANG" "${FLAGS[@]}" "$ROOT/core/fuzz/$target.c" "$ROOT"/core/src/*.c \
    -o "$binary" -ldl -lpthread -lm
  corpus="$OUT/$target/corpus"
  crashes="$OUT/$target/crashes"
  mkdir -p "$corpus" "$crashes"
  seeds=()
  timeout=10
  [ "$target" = fuzz_format ] && seeds=("$ROOT/core/fuzz/corpus/format")
  [ "$target" = fuzz_hostile ] && seeds=("$ROOT/core/fuzz/corpus/hostile") && timeout=5
  echo "== running $target for ${SECONDS_PER_TARGET}s"
  if ! (cd "$crashes" && "$binary" -max_total_time="$SECONDS_PER_TARGET" -print_final_stats=1 \
          -max_len=4096 -timeout="$timeout" "$corpus" "${seeds[@]}" 2>"$OUT/$target.log"); then
    echo "== $target FOUND A CRASH; log: $OUT/$target.log, inputs: $crashes"
    grep -E "ERROR|SUMMARY|runtime error" "$OUT/$target.log" | head -20
    status=1
  else
    grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "$OUT/$target.log" |
      sed "s/^/   $target /"
  fi
done
if [ "$status" -eq 0 ]; then echo "fuzz.sh: no crashes"; fi
exit $status
