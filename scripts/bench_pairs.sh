#!/usr/bin/env bash
# The cross-runtime handoff benchmark (not part of the tests): every ordered
# pair of the runtimes whose plugins are built, in one process and one run.
# Prints RESULT lines and the table (tests/integration/bench/bench.c explains
# every column), keeps the full output in docs/bench/handoff.txt and the
# table in docs/bench/handoff.tsv, and draws docs/bench/handoff.png.
#   scripts/bench_pairs.sh [ferry_it_bench options, e.g. --no-large --min-ms 50]
# Run it on a quiet machine: one benchmark at a time (docs/bench/README.md).
set -euo pipefail
ROOT="${FERRY_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
BUILD="${FERRY_BUILD_DIR:-$ROOT/build}"
export FERRY_ROOT="$ROOT" FERRY_BUILD_DIR="$BUILD"
bash "$ROOT/scripts/build.sh"
bash "$ROOT/tests/integration/build.sh" bench
# The Java plugin's JVM (created inside this C process) reads JAVA_TOOL_OPTIONS:
# its default direct-memory limit (the heap size) is below the 1 GiB case.
export JAVA_TOOL_OPTIONS="${JAVA_TOOL_OPTIONS:-} -XX:MaxDirectMemorySize=3g"
out="$ROOT/docs/bench"
mkdir -p "$out"
{
  echo "# ferry_it_bench $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
  "$BUILD/bin/ferry_it_bench" --plugin-dir "$BUILD/plugins" --tsv "$out/handoff.tsv" "$@"
} | tee "$out/handoff.txt"
if command -v gnuplot >/dev/null; then
  gnuplot -e "tsv='$out/handoff.tsv'; png='$out/handoff.png'" "$ROOT/tests/integration/bench/plot.gp"
  echo "plot: $out/handoff.png"
else
  echo "SKIPPED plot: gnuplot is not installed (scripts/deps.d/integration.sh installs it)"
fi
