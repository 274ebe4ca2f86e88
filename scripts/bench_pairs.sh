#!/usr/bin/env bash
# The cross-runtime handoff benchmark (not a test): every ordered pair of the
# runtimes whose plugins are built, in one process and one run, through the
# benchmark entry points of core/harness/ferry_it_bench.h (each runtime's
# own binding API). Prints the load average, RESULT lines and the table
# (tests/integration/bench/bench.c and docs/bench/README.md explain every
# column), keeps the full output in docs/bench/handoff.txt and the table in
# docs/bench/handoff.tsv, and draws docs/bench/handoff.png.
#   scripts/bench_pairs.sh [ferry_it_bench options, e.g. --rounds 9 --sample-ms 50 --no-large]
# Everything is built by scripts/build.sh and scripts/build_plugins.sh
# (./dev.sh bench runs both); a runtime whose plugin is missing is SKIPPED,
# loudly. Run it on a quiet machine: one benchmark at a time (docs/bench/README.md).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need_file "$BUILD/bin/ferry_it_bench" "the benchmark"
# The Java plugin's JVM (created inside this C process) reads JAVA_TOOL_OPTIONS:
# its default direct-memory limit (the heap size) is below the 1 GiB array.
export JAVA_TOOL_OPTIONS="${JAVA_TOOL_OPTIONS:-} -XX:MaxDirectMemorySize=3g"
out="$ROOT/docs/bench"
mkdir -p "$out"
{
  echo "# ferry_it_bench $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, $(uname -m), $(go version 2>/dev/null | cut -d' ' -f3), $(java -version 2>&1 | grep -m1 version)"
  "$BUILD/bin/ferry_it_bench" --plugin-dir "$BUILD/plugins" --tsv "$out/handoff.tsv" "$@" 2>&1
} | tee "$out/handoff.txt"
if command -v gnuplot >/dev/null; then
  gnuplot -e "tsv='$out/handoff.tsv'; png='$out/handoff.png'" "$ROOT/tests/integration/bench/plot.gp"
  echo "plot: $out/handoff.png"
else
  echo "SKIPPED plot: gnuplot is not installed (scripts/deps.d/integration.sh installs it)"
fi
