#!/usr/bin/env bash
# Tests of the CUDA and ROCm backends without a GPU (scripts/test.sh runs it
# as the step gpu-backends-no-gpu):
#   1. ferry's own driver declarations compile against the real headers
#      (cuda.h from PyPI via scripts/deps.d/cuda_headers.sh, Debian's HIP
#      headers), and the check rejects a deliberately wrong declaration;
#      the DLPack layout test;
#   2. the emulations of tests/gpu/emu (built here into BUILD/test-emu/)
#      run every backend function, error paths included;
#   3. the unavailable paths against the real libraries (no libcuda, the
#      toolkit's stub when one exists, libamdhip64 without an AMD GPU) and
#      the emulations' failure modes: clear reasons, CPU and sim unaffected;
#   4. `ferry devices`: exit code and reason text;
# and the code paths of the GPU suite and the GPU handoff benchmark (its
# --check mode counts the driver calls of every handoff loop).
# Prints "N passed, N failed, N skipped" and exits non-zero on any failure.
# In CI (CI set) a missing header is a failure, elsewhere a loud skip.
set -uo pipefail
# ROOT, BUILD, pass/fail/skip and in_ci come from the shared helpers.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
CC="${CC:-cc}"
EMU="$BUILD/test-emu"
FERRY="$BUILD/bin/ferry"
log="$(mktemp)"
trap 'rm -f "$log"' EXIT

# run NAME COMMAND...: one check, passing when COMMAND succeeds.
run() {
  local name="$1"; shift
  if "$@" >"$log" 2>&1; then
    pass "$name"
  else
    fail "$name"; sed 's/^/    | /' "$log" | tail -n 40
  fi
}

# runner NAME [VAR=VALUE...] -- BINARY [ARGS]: a test binary that prints its
# own "N passed, N failed"; its counts are reported with the check.
runner() {
  local name="$1"; shift
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  if env "${envs[@]+"${envs[@]}"}" timeout 300 "$@" >"$log" 2>&1; then
    pass "$name ($(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1))"
  else
    fail "$name"; sed 's/^/    | /' "$log" | tail -n 60
  fi
}

if [ ! -f "$BUILD/lib/libferry.so" ] || [ ! -f "$BUILD/lib/libferry_internal.a" ]; then
  echo "FAILED: $BUILD/lib has no libferry.so / libferry_internal.a: build first (scripts/build.sh)"
  echo "0 passed, 1 failed"
  exit 1
fi
mkdir -p "$EMU"
CFLAGS=(-std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -Wno-unused-parameter -O1 -g)

# --- 1. signatures against the real headers -----------------------------------
# signatures_check NAME HEADER CHECK EDIT WRONG FUNCTION FLAGS...: ferry's
# declarations (core/src/HEADER) compile against the real header in
# core/gpu_check/CHECK, and the check must bite: HEADER changed by the sed
# expression EDIT (WRONG says what it then is) must fail it, naming FUNCTION.
signatures_check() {
  local name="$1" header="$2" check="$3" edit="$4" wrong_what="$5" function="$6" wrong
  shift 6
  run "$name" "$CC" -std=c11 -Wall -Wextra -Werror -I "$ROOT/core/src" "$@" \
    -fsyntax-only "$ROOT/core/gpu_check/$check"
  wrong="$(mktemp -d)"
  sed "$edit" "$ROOT/core/src/$header" >"$wrong/$header"
  if ! cmp -s "$ROOT/core/src/$header" "$wrong/$header" &&
     ! "$CC" -std=c11 -I "$wrong" -I "$ROOT/core/src" "$@" -fsyntax-only \
       "$ROOT/core/gpu_check/$check" >"$log" 2>&1 &&
     grep -q "$function differs" "$log"; then
    pass "$wrong_what fails the check ($function)"
  else
    fail "$wrong_what was not caught"; sed 's/^/    | /' "$log" | tail -n 20
  fi
  rm -rf "$wrong"
}

cuda_include=""
for dir in "${FERRY_CUDA_INCLUDE_DIR:-}" "$BUILD/deps/cuda/include" "$ROOT/build/deps/cuda/include" \
           /usr/local/cuda/include; do
  if [ -n "$dir" ] && [ -f "$dir/cuda.h" ]; then cuda_include="$dir"; break; fi
done
if [ -z "$cuda_include" ] && bash "$ROOT/scripts/deps.d/cuda_headers.sh" >"$log" 2>&1 &&
   [ -f "$BUILD/deps/cuda/include/cuda.h" ]; then
  cuda_include="$BUILD/deps/cuda/include"
fi
if [ -n "$cuda_include" ]; then
  signatures_check "CUDA declarations match cuda.h ($cuda_include)" cuda_driver_api.h \
    cuda_signatures_check.c \
    's/(ferry_CUdeviceptr dst, const void\* src/(ferry_CUdeviceptr dst, void* src/' \
    "a wrong CUDA declaration" cuMemcpyHtoDAsync_v2 -I "$cuda_include"
elif in_ci; then
  fail "cuda.h not found and scripts/deps.d/cuda_headers.sh could not install it (CI needs it)"
  sed 's/^/    | /' "$log" | tail -n 20
else
  skip "CUDA signature check: no cuda.h (run scripts/deps.d/cuda_headers.sh; PyPI needed)"
fi

if [ -f /usr/include/hip/hip_runtime_api.h ]; then
  signatures_check "HIP declarations match hip/hip_runtime_api.h" hip_runtime_decls.h \
    hip_signatures_check.c 's/X(hipSetDevice, (int device))/X(hipSetDevice, (long device))/' \
    "a wrong HIP declaration" hipSetDevice -D__HIP_PLATFORM_AMD__
elif in_ci; then
  fail "hip/hip_runtime_api.h missing (apt-get install libamdhip64-dev; scripts/deps.sh all)"
else
  skip "HIP signature check: /usr/include/hip missing (apt-get install libamdhip64-dev)"
fi

# --- build the emulations and the tests --------------------------------------------
build() {
  "$CC" "${CFLAGS[@]}" "$@" >"$log" 2>&1 || { fail "build: $*"; sed 's/^/    | /' "$log" | tail -n 30; return 1; }
}
built=1
if grep -q 'gpu_backend_test' "$BUILD/build.ninja" 2>/dev/null; then
  # tests/gpu is part of the CMake build: let it build its own targets.
  cmake --build "$BUILD" --target cuda_emu hip_emu cuda_emu_old hip_emu_old gpu_backend_test \
    gpu_unavailable_test gpu_dlpack_layout_test gpu_suite handoff_bench >"$log" 2>&1 ||
    { built=0; fail "cmake --build of the tests/gpu targets"; sed 's/^/    | /' "$log" | tail -n 30; }
else
  build -fPIC -shared -fvisibility=hidden -o "$EMU/libcuda_emu.so" "$ROOT/tests/gpu/emu/cuda_emu.c" -lpthread || built=0
  build -fPIC -shared -fvisibility=hidden -DFERRY_CUDA_EMU_OLD_DRIVER -o "$EMU/libcuda_emu_old.so" \
    "$ROOT/tests/gpu/emu/cuda_emu.c" -lpthread || built=0
  build -fPIC -shared -fvisibility=hidden -o "$EMU/libhip_emu.so" "$ROOT/tests/gpu/emu/hip_emu.c" -lpthread || built=0
  build -fPIC -shared -fvisibility=hidden -DFERRY_HIP_EMU_OLD_RUNTIME -o "$EMU/libhip_emu_old.so" \
    "$ROOT/tests/gpu/emu/hip_emu.c" -lpthread || built=0
  build -I "$ROOT/core/include" -I "$ROOT/core/src" -I "$ROOT/core/test" -o "$EMU/backend_test" \
    "$ROOT/tests/gpu/backend_test.c" "$BUILD/lib/libferry_internal.a" -ldl -lpthread -lm || built=0
  mkdir -p "$BUILD/gpu"
  for t in gpu_suite handoff_bench; do
    build -I "$ROOT/core/include" -I "$ROOT/core/src" -o "$BUILD/gpu/$t" "$ROOT/tests/gpu/$t.c" \
      -L "$BUILD/lib" -lferry -Wl,-rpath,"$BUILD/lib" -ldl || built=0
  done
  for t in unavailable_test dlpack_layout_test; do
    build -pedantic -I "$ROOT/core/include" -I "$ROOT/core/test" -o "$EMU/$t" "$ROOT/tests/gpu/$t.c" \
      -L "$BUILD/lib" -lferry -Wl,-rpath,"$BUILD/lib" || built=0
  done
fi
if [ "$built" -eq 1 ]; then pass "emulations and tests built into $EMU"; fi

# 0 when the HIP runtime is installed where the default dlopen finds it.
have_hip_runtime() {
  local f
  for f in /usr/lib/x86_64-linux-gnu/libamdhip64.so* /opt/rocm/lib/libamdhip64.so*; do
    [ -e "$f" ] && return 0
  done
  return 1
}

CUDA_EMU="$EMU/libcuda_emu.so"
HIP_EMU="$EMU/libhip_emu.so"
run_unavailable() { # NAME CUDA_EXPECT ROCM_EXPECT [VAR=VALUE...]
  local name="$1" cuda="$2" rocm="$3"; shift 3
  runner "$name" FERRY_EXPECT_CUDA="$cuda" FERRY_EXPECT_ROCM="$rocm" "$@" -- "$EMU/unavailable_test"
}

if [ "$built" -eq 1 ]; then
  runner "DLPack layout" -- "$EMU/dlpack_layout_test"
  # --- 2. every backend function against the emulations --------------------------
  runner "backends on the emulations" FERRY_CUDA_LIBRARY="$CUDA_EMU" FERRY_HIP_LIBRARY="$HIP_EMU" \
    -- "$EMU/backend_test"
  runner "residency with HIP 5 pointer attributes" FERRY_CUDA_LIBRARY="$CUDA_EMU" \
    FERRY_HIP_LIBRARY="$HIP_EMU" FERRY_HIP_EMU_RUNTIME_VERSION=50221153 -- "$EMU/backend_test" residency

  # --- 3. unavailable paths -----------------------------------------------------------
  run_unavailable "emulated drivers are available" available available \
    FERRY_CUDA_LIBRARY="$CUDA_EMU" FERRY_HIP_LIBRARY="$HIP_EMU"
  run_unavailable "FERRY_CUDA_LIBRARY names a missing file" \
    "/nonexistent/libcuda.so.1: cannot open shared object file" "" \
    FERRY_CUDA_LIBRARY=/nonexistent/libcuda.so.1
  if ldconfig -p 2>/dev/null | grep 'libcuda\.so\.1 ' >/dev/null; then
    skip "default libcuda.so.1 path: this machine has an NVIDIA driver (checked by scripts/gpu_test.sh)"
  else
    run_unavailable "no libcuda.so.1 on the machine (the default)" \
      "libcuda.so.1: cannot open shared object file" "" FERRY_CUDA_LIBRARY=
  fi
  stub=""
  for candidate in "${FERRY_CUDA_STUB_LIBRARY:-}" /usr/local/cuda/lib64/stubs/libcuda.so \
                   /usr/local/cuda/targets/x86_64-linux/lib/stubs/libcuda.so; do
    if [ -n "$candidate" ] && [ -f "$candidate" ]; then stub="$candidate"; break; fi
  done
  if [ -n "$stub" ]; then
    run_unavailable "the CUDA toolkit's stub library ($stub)" "[cuInit][CUDA_ERROR_STUB_LIBRARY]" "" \
      FERRY_CUDA_LIBRARY="$stub"
  else
    skip "REAL CUDA STUB LIBRARY NOT TESTED: no stub libcuda.so here, and none is obtainable from \
the registries (the PyPI wheels nvidia-cuda-runtime-cu12, nvidia-cuda-runtime and nvidia-cuda-nvcc \
ship no lib/stubs/libcuda.so; Debian main has no CUDA toolkit). Set FERRY_CUDA_STUB_LIBRARY to test one. \
The emulation's stub mode below covers ferry's side."
  fi
  run_unavailable "emulated stub library" "[cuInit][CUDA_ERROR_STUB_LIBRARY]" "" \
    FERRY_CUDA_LIBRARY="$CUDA_EMU" FERRY_CUDA_EMU_MODE=stub
  run_unavailable "driver without devices" "[cuInit][CUDA_ERROR_NO_DEVICE]" "" \
    FERRY_CUDA_LIBRARY="$CUDA_EMU" FERRY_CUDA_EMU_MODE=nodevice
  run_unavailable "driver reporting 0 devices" "reports no device" "" \
    FERRY_CUDA_LIBRARY="$CUDA_EMU" FERRY_CUDA_EMU_DEVICES=0
  run_unavailable "driver too old (missing entry point)" "does not export cuMemcpyPeerAsync" "" \
    FERRY_CUDA_LIBRARY="$EMU/libcuda_emu_old.so"
  run_unavailable "cuDriverGetVersion fails" "[cuDriverGetVersion][CUDA_ERROR_UNKNOWN]" "" \
    FERRY_CUDA_LIBRARY="$CUDA_EMU" FERRY_CUDA_EMU_FAIL=cuDriverGetVersion:1
  run_unavailable "cuDeviceGetCount fails" "[cuDeviceGetCount][CUDA_ERROR_NOT_INITIALIZED]" "" \
    FERRY_CUDA_LIBRARY="$CUDA_EMU" FERRY_CUDA_EMU_FAIL=cuDeviceGetCount:1:3
  if have_hip_runtime; then
    if [ -e /dev/kfd ]; then
      skip "real libamdhip64 without a GPU: this machine has /dev/kfd (checked by scripts/gpu_test.sh)"
    else
      run_unavailable "real libamdhip64 on a machine without an AMD GPU" "" \
        "the runtime is installed but finds no AMD GPU" FERRY_HIP_LIBRARY=
    fi
  elif in_ci; then
    fail "libamdhip64 is not installed (scripts/deps.sh all installs libamdhip64-dev)"
  else
    skip "real libamdhip64 path: libamdhip64 not installed (apt-get install libamdhip64-dev)"
  fi
  run_unavailable "FERRY_HIP_LIBRARY names a missing file" "" \
    "cannot load the HIP runtime /nonexistent/libamdhip64.so" FERRY_HIP_LIBRARY=/nonexistent/libamdhip64.so
  run_unavailable "HIP runtime too old (missing entry point)" "" "does not export hipMemcpyPeerAsync" \
    FERRY_HIP_LIBRARY="$EMU/libhip_emu_old.so"
  run_unavailable "emulated HIP runtime without a GPU" "" "[hipInit][hipErrorInvalidDevice]" \
    FERRY_HIP_LIBRARY="$HIP_EMU" FERRY_HIP_EMU_MODE=nodevice
  run_unavailable "hipGetDeviceCount finds no device" "" "[hipGetDeviceCount][hipErrorNoDevice]" \
    FERRY_HIP_LIBRARY="$HIP_EMU" FERRY_HIP_EMU_FAIL=hipGetDeviceCount:1:100
  run_unavailable "hipRuntimeGetVersion fails" "" "[hipRuntimeGetVersion][hipErrorUnknown]" \
    FERRY_HIP_LIBRARY="$HIP_EMU" FERRY_HIP_EMU_FAIL=hipRuntimeGetVersion:1
fi

# --- the GPU suite's own code paths (no GPU result: see scripts/gpu_test.sh) -------
if [ "$built" -eq 1 ]; then
  # Without drivers it must skip loudly, naming each reason, and exit 0.
  if env FERRY_CUDA_LIBRARY=/nonexistent/libcuda.so.1 FERRY_HIP_LIBRARY=/nonexistent/libamdhip64.so \
       "$BUILD/gpu/gpu_suite" --mib 1 --reps 1 --events 1 >"$log" 2>&1 &&
     grep -q '^SKIPPED: no CUDA device: cuda backend: cannot load the CUDA driver library' "$log" &&
     grep -q '^SKIPPED: no ROCm device: rocm backend: cannot load the HIP runtime' "$log" &&
     grep -q '^0 passed, 0 failed, 2 skipped$' "$log"; then
    pass "GPU suite skips loudly without a GPU"
  else
    fail "GPU suite without a GPU"; sed 's/^/    | /' "$log"
  fi
  # On the emulations every check and benchmark runs, labelled EMULATION.
  if env FERRY_CUDA_LIBRARY="$CUDA_EMU" FERRY_HIP_LIBRARY="$HIP_EMU" \
       "$BUILD/gpu/gpu_suite" --mib 2 --reps 1 --events 20 >"$log" 2>&1 &&
     grep -q '^18 passed, 0 failed, 0 skipped$' "$log" &&
     ! grep -E '^ok: ' "$log" | grep -vq 'EMULATION'; then
    pass "GPU suite code runs on the emulations (every line labelled EMULATION)"
  else
    fail "GPU suite on the emulations"; sed 's/^/    | /' "$log"
  fi
  # The handoff benchmark: loud skips without a GPU (no figures from the
  # emulation either), and --check counts the driver calls of every loop.
  if env FERRY_CUDA_LIBRARY=/nonexistent/libcuda.so.1 FERRY_HIP_LIBRARY=/nonexistent/libamdhip64.so \
       "$BUILD/gpu/handoff_bench" >"$log" 2>&1 &&
     grep -q '^SKIPPED: no CUDA device: cuda backend: cannot load the CUDA driver library' "$log" &&
     grep -q '^SKIPPED: no ROCm device: rocm backend: cannot load the HIP runtime' "$log" &&
     grep -q '^0 passed, 0 failed, 2 skipped$' "$log" &&
     env FERRY_CUDA_LIBRARY="$CUDA_EMU" FERRY_HIP_LIBRARY="$HIP_EMU" \
       "$BUILD/gpu/handoff_bench" >"$log" 2>&1 &&
     [ "$(grep -c "^SKIPPED: .*ferry's test emulation, not a GPU: no figures" "$log")" -eq 2 ] &&
     ! grep -q ' us' "$log"; then
    pass "GPU handoff benchmark skips loudly without a GPU and gives no figures on the emulations"
  else
    fail "GPU handoff benchmark without a GPU"; sed 's/^/    | /' "$log"
  fi
  runner "GPU handoff benchmark --check: driver calls per handoff on the emulations" \
    FERRY_CUDA_LIBRARY="$CUDA_EMU" FERRY_HIP_LIBRARY="$HIP_EMU" -- "$BUILD/gpu/handoff_bench" --check
fi

# --- 4. ferry devices ----------------------------------------------------------------------
# devices_check NAME PATTERN... [-- VAR=VALUE...]: exit 0, cpu and sim
# available, and every PATTERN (an extended regex) on some line.
devices_check() {
  local name="$1"; shift
  local patterns=() envs=()
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do patterns+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  envs=("$@")
  env "${envs[@]+"${envs[@]}"}" "$FERRY" devices >"$log" 2>&1
  local code=$? missing=""
  for p in '^cpu +available$' '^sim +available$' "${patterns[@]}"; do
    grep -Eq -- "$p" "$log" || missing="$missing [$p]"
  done
  if [ "$code" -eq 0 ] && [ -z "$missing" ]; then
    pass "ferry devices: $name"
  else
    fail "ferry devices: $name (exit $code, missing:$missing)"; sed 's/^/    | /' "$log"
  fi
}
if [ -x "$FERRY" ]; then
  devices_check "missing driver named with the dlopen error" \
    '^cuda +unavailable \(ENODEV\): .*cannot load the CUDA driver library /nonexistent/libcuda\.so\.1 .*cannot open shared object file' \
    '^rocm +unavailable \(ENODEV\): .*cannot load the HIP runtime' \
    -- FERRY_CUDA_LIBRARY=/nonexistent/libcuda.so.1 FERRY_HIP_LIBRARY=/nonexistent/libamdhip64.so
  if [ -f "$CUDA_EMU" ] && [ -f "$HIP_EMU" ]; then
    devices_check "emulated drivers available" '^cuda +available$' '^rocm +available$' \
      -- FERRY_CUDA_LIBRARY="$CUDA_EMU" FERRY_HIP_LIBRARY="$HIP_EMU"
    devices_check "stub library named" \
      '^cuda +unavailable \(ENODEV\): \[cuInit\]\[CUDA_ERROR_STUB_LIBRARY\] ' \
      -- FERRY_CUDA_LIBRARY="$CUDA_EMU" FERRY_CUDA_EMU_MODE=stub
    devices_check "no device named" '^cuda +unavailable \(ENODEV\): \[cuInit\]\[CUDA_ERROR_NO_DEVICE\] ' \
      '^rocm +unavailable \(ENODEV\): \[hipInit\]\[hipErrorInvalidDevice\] ' \
      -- FERRY_CUDA_LIBRARY="$CUDA_EMU" FERRY_CUDA_EMU_MODE=nodevice FERRY_HIP_LIBRARY="$HIP_EMU" \
      FERRY_HIP_EMU_MODE=nodevice
  fi
  if [ ! -e /dev/kfd ] && have_hip_runtime; then
    devices_check "real libamdhip64 names the HIP error" \
      '^rocm +unavailable \(ENODEV\): \[hip(Init|GetDeviceCount)\]\[hipError(InvalidDevice|NoDevice)\] ' \
      -- FERRY_HIP_LIBRARY=
  fi
  if ! ldconfig -p 2>/dev/null | grep 'libcuda\.so\.1 ' >/dev/null; then
    devices_check "default driver path" \
      '^cuda +unavailable \(ENODEV\): .*libcuda\.so\.1: cannot open shared object file' \
      -- FERRY_CUDA_LIBRARY=
  fi
else
  fail "$FERRY is missing: build first"
fi

echo
echo "$FERRY_PASSED passed, $FERRY_FAILED failed, $FERRY_SKIPPED skipped"
[ "$FERRY_FAILED" -eq 0 ]
