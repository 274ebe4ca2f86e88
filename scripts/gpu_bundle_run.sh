#!/usr/bin/env bash
# run.sh of ferry's GPU bundle (made by `./dev.sh gpu-bundle` from
# scripts/gpu_bundle_run.sh): ferry's GPU checks on this machine, with
# nothing but the bundle and the GPU driver (offline; no compiler, Go, Rust,
# Java or Lua installed). Unpack the archive anywhere, then
#   ./run.sh            everything (a few minutes on a GPU)
#   ./run.sh --quick    a short run: a quarter of the cases, small benchmarks
# It runs, in order:
#   1. a preflight: every program and library of the bundle finds what it
#      needs on this machine (glibc, libstdc++, zlib; CPython for Python);
#   2. the GPU suite (gpu/gpu_suite): the backends against the real driver,
#      copy bandwidth against the driver's own copy, event overhead;
#   3. the cross-language matrix on the CPU and the sim device;
#   4. on every GPU device type ferry finds (cuda, rocm): the matrix of every
#      runtime pair over every case moved to that device, each runtime's
#      conformance suite there, and the demo on the GPU
#      (tests/integration/run_gpu.sh);
#   5. the demo on the sim device;
#   6. the GPU handoff benchmark (gpu/handoff_bench): host time per handoff,
#      ferry against the driver floor with a fresh and with a reused event.
# Without a GPU the GPU parts are SKIPPED loudly with the reason and the rest
# must pass. Ends with "N passed, N failed[, N skipped]"; exit 0 when nothing
# failed. Every log is kept in results/ (FERRY_BUNDLE_OUT to put it
# elsewhere): bring that directory back with the figures.
#
# Variables: FERRY_CUDA_LIBRARY / FERRY_HIP_LIBRARY (the driver libraries, as
# for ferry itself), FERRY_BUNDLE_PYTHON (the python to embed, when it is not
# found as pythonX.Y), FERRY_BUNDLE_OUT (where the logs go).
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export FERRY_ROOT="$HERE" FERRY_BUILD_DIR="$HERE"
. "$HERE/scripts/lib.sh"
quick=0
case "${1:-}" in
  --quick) quick=1 ;;
  "") ;;
  *) sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
OUT="${FERRY_BUNDLE_OUT:-$HERE/results}"
mkdir -p "$OUT"
manifest() { sed -n "s/^$1=//p" "$HERE/MANIFEST"; }
section() { printf '\n== %s\n' "$*"; }

echo "ferry GPU bundle $(manifest ferry) (commit $(manifest commit); built on $(manifest built_on);" \
  "needs glibc >= $(manifest glibc))"
echo "this machine: $(uname -srm), glibc $(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{print $2}')"
[ "$quick" -eq 1 ] && echo "--quick: every 4th case, small benchmarks"

# ---- every runtime reads the bundle's own files --------------------------------------
export JAVA_HOME="$HERE/jre"
export FERRY_JAVA_CLASSPATH="$HERE/java/ferry-arrow.jar:$HERE/java/ferry-it.jar"
export FERRY_JAVA_LIBRARY_PATH="$HERE/java"
export FERRY_LUA_DIR="$HERE/lua"
runtimes=" $(manifest runtimes) "
if [[ "$runtimes" == *" python "* ]]; then
  # The package's compiled parts are for CPython X.Y; the plugin embeds the
  # machine's own interpreter of that version (it needs its shared libpython).
  want="$(manifest python)"
  py=""
  for candidate in "${FERRY_BUNDLE_PYTHON:-}" "python$want" python3; do
    [ -n "$candidate" ] && command -v "$candidate" >/dev/null 2>&1 || continue
    py="$("$candidate" -c "import sys, sysconfig
ok = '%d.%d' % sys.version_info[:2] == '$want' and sysconfig.get_config_var('Py_ENABLE_SHARED')
print(sys.executable if ok else '')" 2>/dev/null)"
    [ -n "$py" ] && break
  done
  if [ -n "$py" ]; then
    libdir="$("$py" -c 'import sysconfig; print(sysconfig.get_config_var("LIBDIR"))')"
    export FERRY_PYTHON="$py" FERRY_PYTHON_PLUGIN_DIR="$HERE/python/plugin"
    export PYTHONPATH="$HERE/python/site-packages${PYTHONPATH:+:$PYTHONPATH}"
    export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    echo "python: $py (CPython $want with a shared libpython in $libdir)"
  else
    skip "RUNTIME python NOT TESTED: the bundle's Python package needs CPython $want built with" \
      "a shared libpython (Debian/Ubuntu: apt-get install python$want libpython$want), and none" \
      "was found; set FERRY_BUNDLE_PYTHON to such a python"
    runtimes="${runtimes/ python / }"
  fi
fi
runtimes="$(echo $runtimes)"
export FERRY_GPU_RUNTIMES="$runtimes"
list="$(echo "$runtimes" | tr ' ' ',')"
echo "runtimes: $runtimes"

# The plugins of those runtimes (a runtime left out is not loaded at all), in
# a directory of this run with lib/ beside it for their $ORIGIN/../lib.
view="$(mktemp -d "$OUT/plugin-view.XXXXXX")" || { echo "run.sh: cannot write to $OUT" >&2; exit 1; }
trap 'rm -rf "$view"' EXIT
PLUGINS="$view/plugins"
mkdir -p "$PLUGINS"
ln -s "$HERE/lib" "$view/lib"
for rt in $runtimes; do ln -s "$HERE/plugins/libferry_it_$rt.so" "$PLUGINS/"; done

# ---- 1. preflight ------------------------------------------------------------------------
section "preflight: libraries"
missing=""
for f in "$HERE"/bin/* "$HERE"/gpu/* "$HERE"/lib/* "$HERE"/java/*.so "$HERE"/jre/bin/java \
         "$HERE"/jre/lib/server/libjvm.so "$PLUGINS"/*; do
  [ -e "$f" ] || continue
  problems="$(ldd "$f" 2>&1 | grep -E 'not found|version .* not found')"
  [ -z "$problems" ] || missing="$missing"$'\n'"   ${f#"$HERE"/}: $problems"
done
if [ -z "$missing" ]; then
  pass "every program and library of the bundle finds what it needs here"
else
  fail "libraries missing on this machine (install them, or use a newer distribution):$missing"
fi
section "ferry devices"
"$HERE/bin/ferry" devices 2>&1 | tee "$OUT/devices.txt"

# add_log NAME LOG: LOG's "N passed, N failed[, N skipped]" into the counts (a
# log without one is a failure: the program crashed).
add_log() {
  local skipped
  if ! add_counts "$2"; then
    echo "FAILED: $1: no summary (crashed?), log $2"
    return
  fi
  skipped="$(grep -Eo '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped' "$2" | tail -n 1 | awk '{print $5}')"
  FERRY_SKIPPED=$((FERRY_SKIPPED + ${skipped:-0}))
}

# ---- 2. the GPU suite --------------------------------------------------------------------
section "GPU suite (gpu/gpu_suite)"
suite_args=()
[ "$quick" -eq 1 ] && suite_args=(--mib 4 --reps 2 --events 200)
"$HERE/gpu/gpu_suite" "${suite_args[@]}" 2>&1 | tee "$OUT/gpu_suite.log"
add_log "GPU suite" "$OUT/gpu_suite.log"

# ---- 3. the matrix on the CPU and the sim device -----------------------------------------
section "cross-language matrix on the CPU and the sim device"
cases="$HERE/tests/integration/cases.txt"
if [ "$quick" -eq 1 ]; then
  grep -Ev '^[[:space:]]*(#|$)' "$cases" | awk 'NR % 4 == 1' >"$OUT/cases-quick.txt"
  cases="$OUT/cases-quick.txt"
fi
timeout 1800 "$HERE/bin/ferry_it_host" --plugin-dir "$PLUGINS" --plugins "$list" --require "$list" \
  --cases "$cases" --async-cases "$HERE/tests/integration/cases_async.txt" \
  >"$OUT/matrix-cpu-sim.log" 2>&1
grep -E '^FAIL' "$OUT/matrix-cpu-sim.log" | head -n 40
grep -A 7 '^producer \\ consumer' "$OUT/matrix-cpu-sim.log"
tail -n 2 "$OUT/matrix-cpu-sim.log"
add_log "matrix on cpu and sim" "$OUT/matrix-cpu-sim.log"

# ---- 4. cuda and rocm: matrix, conformance, demo -----------------------------------------
section "cuda and rocm (tests/integration/run_gpu.sh)"
gpu_args=(--plugin-dir "$PLUGINS")
[ "$quick" -eq 1 ] && gpu_args+=(--sample 4)
FERRY_GPU_LOGS="$OUT/gpu" bash "$HERE/tests/integration/run_gpu.sh" "${gpu_args[@]}" 2>&1 |
  tee "$OUT/gpu.log"
add_log "cuda and rocm" "$OUT/gpu.log"

# ---- 5. the demo on the sim device ---------------------------------------------------------
section "the demo on the sim device"
if FERRY_CUDA_LIBRARY=/nonexistent/libcuda.so.1 FERRY_HIP_LIBRARY=/nonexistent/libamdhip64.so \
     "$HERE/bin/ferry_it_demo" --plugin-dir "$PLUGINS" >"$OUT/demo-sim.log" 2>&1 &&
   grep -q '^demo passed' "$OUT/demo-sim.log"; then
  pass "the demo on sim: $(grep '^demo passed' "$OUT/demo-sim.log")"
else
  fail "the demo on sim (log $OUT/demo-sim.log)"
  grep -E '^(FAIL|demo)' "$OUT/demo-sim.log" | head -n 20
fi

# ---- 6. the GPU handoff benchmark -----------------------------------------------------------
section "GPU handoff benchmark (gpu/handoff_bench)"
bench_args=()
[ "$quick" -eq 1 ] && bench_args=(--handoffs 2000 --rounds 3)
"$HERE/gpu/handoff_bench" "${bench_args[@]}" 2>&1 | tee "$OUT/handoff_bench.log"
add_log "GPU handoff benchmark" "$OUT/handoff_bench.log"

section "summary"
echo "logs: $OUT"
finish
