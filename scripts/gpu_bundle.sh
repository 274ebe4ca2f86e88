#!/usr/bin/env bash
# ./dev.sh gpu-bundle: one archive, BUILD/ferry-gpu-bundle-<version>.tar.gz,
# that runs ferry's GPU checks on a machine with a GPU and nothing else
# (offline, no Go, Rust, Java, Lua or C toolchain): the core, the tool, the
# GPU suite and the GPU handoff benchmark, the matrix host and the demo,
# every runtime's plugin with what it needs at run time (the Lua runtime
# library and the binding's Lua code, a JRE made with jlink plus the jars and
# the JNI library, the Go and Rust plugins as built, Python's package files
# for the machine's own CPython), the case list and run.sh
# (scripts/gpu_bundle_run.sh). Unpack it anywhere and run ./run.sh there.
#
#   gpu_bundle.sh           builds the archive from the build (scripts/build.sh
#                           and scripts/build_plugins.sh ran before)
#   gpu_bundle.sh --test    builds it, unpacks it outside the source tree and
#                           runs its run.sh there with the tree hidden (a mount
#                           namespace; without one, the libraries each process
#                           loads are checked instead): once on the CPU and the
#                           sim device (the GPU parts must skip loudly and the
#                           rest pass), once with ferry's driver emulations
#                           pointed to (the GPU paths of run.sh). The test
#                           command's step gpu-bundle.
#
# Nothing in the archive depends on the build tree's path: every RUNPATH is
# $ORIGIN-relative and run.sh points every runtime at the bundle's own files
# through the variables their plugins read. Libraries every Linux has (glibc,
# libstdc++, libgcc_s, zlib) and CPython's libpython come from the machine;
# run.sh checks that each one resolves before it starts.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

test_mode=0
[ "${1:-}" = --test ] && test_mode=1

VERSION="$("$BUILD/bin/ferry" --version 2>/dev/null | awk '{print $2}')"
NAME="ferry-gpu-bundle-${VERSION:-unknown}"
STAGE="$BUILD/gpu-bundle/$NAME"
ARCHIVE="$BUILD/$NAME.tar.gz"

# Libraries taken from the machine the bundle runs on, never shipped: the C
# and C++ runtimes (a shipped libstdc++ older than the machine's would break
# the HIP runtime, which links the machine's) and CPython's own library.
system_library() {
  case "$1" in
    libc.so.*|libm.so.*|libdl.so.*|libpthread.so.*|librt.so.*|ld-linux*|libgcc_s.so.*|\
    libstdc++.so.*|libz.so.*|libpython3*) return 0 ;;
  esac
  return 1
}

is_elf() { [ -f "$1" ] && [ "$(head -c 4 "$1" | od -An -c | tr -d ' ')" = '177ELF' ]; }

# ship_needed ELF: copies the libraries ELF needs that are neither shipped
# already nor the machine's own (system_library) into lib/.
ship_needed() {
  local lib path
  while read -r lib path; do
    [ -n "$lib" ] || continue
    system_library "$lib" && continue
    [ -e "$STAGE/lib/$lib" ] && continue
    [ "$lib" = libferry.so.0 ] && continue
    if [ -z "$path" ] || [ "$path" = "not" ]; then
      echo "gpu-bundle: $1 needs $lib, which is not found here" >&2
      return 1
    fi
    cp -L "$path" "$STAGE/lib/$lib"
  done < <(ldd "$1" 2>/dev/null | awk '/=>/ {print $1, $3}')
}

# The JRE: jlink with the modules the jars need (jdeps), from the JDK the
# Java plugin was built with.
make_jre() {
  local home
  home="$(sed -n 's/^java_home=//p' "$BUILD/plugins/libferry_it_java.conf" 2>/dev/null)"
  [ -x "$home/bin/jlink" ] || home="${JAVA_HOME:-/usr/lib/jvm/default-java}"
  [ -x "$home/bin/jlink" ] || { echo "gpu-bundle: no jlink in $home (a JDK is needed)" >&2; return 1; }
  local modules
  modules="$("$home/bin/jdeps" --print-module-deps --ignore-missing-deps "$BUILD"/java/*.jar 2>/dev/null)"
  "$home/bin/jlink" --add-modules "${modules:-java.base}" --strip-debug --no-man-pages \
    --no-header-files --output "$STAGE/jre" || return 1
  # The JVM's native debug symbols are most of its size.
  strip --strip-unneeded "$STAGE/jre/lib/server/libjvm.so"
  "$STAGE/jre/bin/java" -version 2>&1 | head -n 1
}

# Python: the package as the build's virtual environment holds it (ferry,
# cffi and its parser), and the plugin's Python half.
ship_python() {
  local site
  site="$(ls -d "$BUILD"/python/venv/lib/python3*/site-packages 2>/dev/null | head -n 1)"
  [ -d "$site/ferry" ] || { echo "gpu-bundle: no ferry package in $BUILD/python/venv" >&2; return 1; }
  mkdir -p "$STAGE/python/site-packages" "$STAGE/python/plugin"
  local item
  for item in ferry cffi pycparser _cffi_backend.*.so cffi.libs; do
    # shellcheck disable=SC2086
    for path in $site/$item; do
      [ -e "$path" ] && cp -RL "$path" "$STAGE/python/site-packages/"
    done
  done
  find "$STAGE/python" -name __pycache__ -prune -exec rm -rf {} +
  # The package's own libraries were linked with the build's interpreter
  # directory in their RUNPATH; they need nothing outside the package.
  local f
  while read -r f; do
    is_elf "$f" || continue
    if readelf -d "$f" | grep 'R\(UN\)\{0,1\}PATH' >/dev/null &&
       readelf -d "$f" | grep -E 'R(UN)?PATH' | grep -v '\[\$ORIGIN[^:]*\]' >/dev/null; then
      patchelf --set-rpath '$ORIGIN' "$f" || return 1
    fi
  done < <(find "$STAGE/python" -type f -name '*.so*')
  cp "$ROOT"/bindings/python/plugin/*.py "$STAGE/python/plugin/"
  "$BUILD/python/venv/bin/python" -c \
    'import sys, sysconfig; print("python=%d.%d" % sys.version_info[:2]); print("python_soabi=" + sysconfig.get_config_var("SOABI"))'
}

# The highest glibc symbol version any shipped binary needs.
glibc_needed() {
  find "$STAGE" -path "$STAGE/jre" -prune -o -type f -print | while read -r f; do
    is_elf "$f" && objdump -T "$f" 2>/dev/null | grep -o 'GLIBC_[0-9.]*'
  done | sed 's/GLIBC_//' | sort -uV | tail -n 1
}

build_bundle() {
  local runtimes rt
  runtimes="$(ferry_runtimes)"
  for f in bin/ferry bin/ferry_it_host bin/ferry_it_demo gpu/gpu_suite gpu/handoff_bench \
           lib/libferry.so.0; do
    need_file "$BUILD/$f" "the bundle's $f" || return 1
  done
  for rt in $runtimes; do
    need_file "$BUILD/plugins/libferry_it_$rt.so" "the $rt plugin" || return 1
  done
  rm -rf "$BUILD/gpu-bundle"
  mkdir -p "$STAGE"/{bin,gpu,lib,plugins,scripts,core/harness,tests/integration}
  cp -L "$BUILD/lib/libferry.so.0" "$STAGE/lib/"
  cp "$BUILD/bin/ferry" "$BUILD/bin/ferry_it_host" "$BUILD/bin/ferry_it_demo" "$STAGE/bin/"
  cp "$BUILD/gpu/gpu_suite" "$BUILD/gpu/handoff_bench" "$STAGE/gpu/"
  for rt in $runtimes; do cp "$BUILD/plugins/libferry_it_$rt.so" "$STAGE/plugins/"; done
  cp "$ROOT/scripts/lib.sh" "$STAGE/scripts/"
  cp "$ROOT/core/harness/runtimes.def" "$STAGE/core/harness/"
  cp "$ROOT/tests/integration/run_gpu.sh" "$ROOT/tests/integration/cases.txt" \
    "$ROOT/tests/integration/cases_async.txt" "$STAGE/tests/integration/"
  cp "$ROOT/scripts/gpu_bundle_run.sh" "$STAGE/run.sh"
  chmod +x "$STAGE/run.sh"
  local manifest="$STAGE/MANIFEST"
  {
    echo "ferry=$VERSION"
    echo "commit=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
    echo "built_on=$(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME")"
    echo "runtimes=$runtimes"
  } >"$manifest"
  if [[ " $runtimes " == *" lua "* ]]; then
    mkdir -p "$STAGE/lua/plugin"
    cp -R "$ROOT/bindings/lua/ferry" "$STAGE/lua/"
    cp "$ROOT"/bindings/lua/plugin/*.lua "$STAGE/lua/plugin/"
  fi
  if [[ " $runtimes " == *" java "* ]]; then
    mkdir -p "$STAGE/java"
    cp "$BUILD/java/ferry-arrow.jar" "$BUILD/java/ferry-it.jar" "$BUILD/java/libferry_jni.so" \
      "$STAGE/java/" || return 1
    echo "java=$(make_jre)" >>"$manifest" || return 1
  fi
  if [[ " $runtimes " == *" python "* ]]; then
    ship_python >>"$manifest" || return 1
  fi
  # Every ELF of ours: what it needs beyond the machine's own libraries, and a
  # RUNPATH relative to itself (lib/ is ../lib from every other directory).
  local f
  for f in "$STAGE"/bin/* "$STAGE"/gpu/* "$STAGE"/plugins/* "$STAGE"/java/*.so "$STAGE"/lib/*; do
    is_elf "$f" || continue
    ship_needed "$f" || return 1
  done
  for f in "$STAGE"/bin/* "$STAGE"/gpu/* "$STAGE"/plugins/* "$STAGE"/java/*.so "$STAGE"/lib/*; do
    is_elf "$f" || continue
    if [ "$(dirname "$f")" = "$STAGE/lib" ]; then
      patchelf --set-rpath '$ORIGIN' "$f"
    else
      patchelf --set-rpath '$ORIGIN/../lib' "$f"
    fi || { echo "gpu-bundle: patchelf failed on $f" >&2; return 1; }
  done
  echo "glibc=$(glibc_needed)" >>"$manifest"
  rm -f "$ARCHIVE"
  tar -C "$BUILD/gpu-bundle" -czf "$ARCHIVE" "$NAME" || return 1
  echo "gpu-bundle: $ARCHIVE ($(du -h "$ARCHIVE" | cut -f1), $(du -sh "$STAGE" | cut -f1) unpacked)"
  sed 's/^/   /' "$manifest"
}

# check_relocatable DIR: no RUNPATH outside the bundle and no text file that
# names the source or build tree.
check_relocatable() {
  local dir="$1" bad="" f runpath
  while read -r f; do
    is_elf "$f" || continue
    runpath="$(readelf -d "$f" 2>/dev/null | sed -n 's/.*R\(UN\)\{0,1\}PATH.*\[\(.*\)\]/\2/p')"
    [ -z "$runpath" ] && continue
    tr ':' '\n' <<<"$runpath" | grep -v '^\$ORIGIN' >/dev/null && bad="$bad ${f#"$dir"/}($runpath)"
  done < <(find "$dir" -type f -not -path "*/jre/*")
  [ -z "$bad" ] || { echo "RUNPATH outside the bundle:$bad"; return 1; }
  local named
  named="$(grep -rIl -e "$ROOT" -e "$BUILD" "$dir" 2>/dev/null | head -n 5)"
  [ -z "$named" ] || { echo "files naming the build tree: $named"; return 1; }
}

if [ "$test_mode" -eq 0 ]; then
  build_bundle || { echo "gpu-bundle: FAILED" >&2; exit 1; }
  check_relocatable "$STAGE" || exit 1
  exit 0
fi

# ---- --test ------------------------------------------------------------------------
LOG="$BUILD/test-logs/gpu-bundle"
mkdir -p "$LOG"
start=$SECONDS
if build_bundle >"$LOG/build.log" 2>&1; then
  pass "$(grep '^gpu-bundle: ' "$LOG/build.log")"
else
  fail "building the bundle"; sed 's/^/    | /' "$LOG/build.log" | tail -n 30
  finish; exit 1
fi
check "nothing in the bundle names the build tree; every RUNPATH is \$ORIGIN-relative" \
  check_relocatable "$STAGE"

size=$(stat -c %s "$ARCHIVE")
if [ "$size" -lt $((64 * 1024 * 1024)) ]; then
  pass "the archive is $((size / 1024 / 1024)) MiB, under 64 MiB"
else
  fail "the archive is $((size / 1024 / 1024)) MiB: a GPU session cannot carry more than 64 MiB"
fi

work="$(mktemp -d /tmp/ferry-gpu-bundle-test.XXXXXX)"
trap 'rm -rf "$work"' EXIT
tar -C "$work" -xzf "$ARCHIVE"
bundle="$work/$NAME"
# The emulations are test fixtures, never shipped: copied next to the bundle.
mkdir -p "$work/emu"
cp "$BUILD/test-emu/libcuda_emu.so" "$BUILD/test-emu/libhip_emu.so" "$work/emu/" 2>/dev/null ||
  fail "the driver emulations are not built ($BUILD/test-emu)"

# The source and build trees, hidden while the bundle runs.
TREES=("$ROOT")
[[ "$BUILD" == "$ROOT"/* ]] || TREES+=("$BUILD")

# hidden COMMAND...: runs COMMAND in a private mount namespace where the trees
# are empty tmpfs mounts, so that anything the bundle still took from them
# fails.
hidden() {
  unshare -m --propagation private bash -c '
    for tree in "${@:2:$1}"; do mount -t tmpfs -o size=1m ferry-hidden "$tree" || exit 97; done
    shift $(($1 + 1)); exec "$@"' _ "${#TREES[@]}" "${TREES[@]}" "$@"
}
can_hide=0
hidden true 2>/dev/null && can_hide=1

# bundle_run NAME ENV_ARGS...: the unpacked run.sh (--quick) under `env
# ENV_ARGS`, with the trees hidden; where no mount namespace can be made,
# with every library each process loads recorded and checked instead.
bundle_run() {
  local name="$1"; shift
  local log="$LOG/$name.log"
  if [ "$can_hide" -eq 1 ]; then
    hidden env -u FERRY_ROOT -u FERRY_BUILD_DIR "$@" bash "$bundle/run.sh" --quick >"$log" 2>&1
    return
  fi
  rm -rf "$work/lddebug"
  mkdir -p "$work/lddebug"
  env -u FERRY_ROOT -u FERRY_BUILD_DIR "$@" LD_DEBUG=files LD_DEBUG_OUTPUT="$work/lddebug/ld" \
    bash "$bundle/run.sh" --quick >"$log" 2>&1
  local rc=$? leaked
  echo "NOTE: no mount namespace here (unshare -m): the trees stayed visible; the libraries" \
    "every process loaded were checked instead" >>"$log"
  leaked="$(grep -h 'file=' "$work/lddebug"/ld.* 2>/dev/null | grep -e "$ROOT" -e "$BUILD" | head -n 3)"
  [ -z "$leaked" ] || { echo "FAILED: libraries loaded from the build tree: $leaked" >>"$log"; rc=1; }
  return "$rc"
}
if [ "$can_hide" -eq 1 ]; then
  echo "the bundle runs with ${TREES[*]} hidden (a private mount namespace)"
else
  echo "NOTE: no mount namespace (unshare -m): the bundle's loaded libraries are checked instead"
fi

# Runs the bundle as `bundle_run NAME ENV...` does and judges its log: the run
# must pass and its log hold every pattern (grep -E) of the array EXPECT.
# WHAT names the run in the verdict, PASS_TAIL ends the pass line and BAD says
# what a run that passed without the patterns did.
bundle_step() {
  local name="$1" what="$2" pass_tail="$3" bad="$4" log="$LOG/$1.log" pattern complete=1
  shift 4
  if bundle_run "$name" "$@"; then
    for pattern in "${EXPECT[@]}"; do grep -Eq -- "$pattern" "$log" || complete=0; done
    if [ "$complete" -eq 1 ]; then
      pass "$what: $(grep -E '^[0-9]+ passed' "$log" | tail -n 1)$pass_tail"
    else
      fail "$what passed $bad (log $log)"
      tail -n 30 "$log" | sed 's/^/    | /'
    fi
  else
    fail "$what (log $log)"
    grep -E '^(FAILED|FAIL|   \|)' "$log" | head -n 40 | sed 's/^/    | /'
    tail -n 5 "$log" | sed 's/^/    | /'
  fi
}

# 1. CPU and sim: the GPU parts skip loudly, everything else passes.
EXPECT=('^[0-9]+ passed, 0 failed' 'SKIPPED: no CUDA device' 'SKIPPED: NO cuda DEVICE'
        'demo passed')
bundle_step cpu-sim "run.sh on the CPU and sim" ", GPU parts skipped loudly" \
  "but its output is not what it should be" -u FERRY_CUDA_LIBRARY -u FERRY_HIP_LIBRARY

# 2. The driver emulations: the GPU suite, the matrix and conformance on cuda
# and rocm, the demo on cuda and the handoff benchmark's skip.
EXPECT=('EMULATION' '^== matrix-cuda' '^== matrix-rocm' 'the demo on cuda')
bundle_step emulated "run.sh on the emulated GPUs" "" "without running the GPU parts" \
  FERRY_CUDA_LIBRARY="$work/emu/libcuda_emu.so" FERRY_HIP_LIBRARY="$work/emu/libhip_emu.so"
echo "gpu-bundle test: $((SECONDS - start)) s, logs $LOG"
finish
