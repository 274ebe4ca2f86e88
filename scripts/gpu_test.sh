#!/usr/bin/env bash
# The GPU suite (tests/gpu/gpu_suite.c) against the real CUDA driver and HIP
# runtime: the backend checks plus bandwidth (ferry_device_memcpy against
# the driver's own copy) and event-overhead benchmarks; then the GPU handoff
# benchmark (tests/gpu/handoff_bench.c: host time per handoff, ferry against
# the driver floor with a fresh and with a reused event). One command:
#   ./dev.sh gpu-test [--mib N] [--reps N] [--events N]
# FERRY_HANDOFF_ARGS passes options to the handoff benchmark
# (e.g. "--handoffs 50000 --rounds 9").
# A backend without a device is skipped LOUDLY with the probe's reason
# ("SKIPPED: no CUDA device: ..."); with no GPU at all the script still
# exits 0. It exits non-zero only when a check on a present GPU failed.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
CC="${CC:-cc}"
suite="$BUILD/gpu/gpu_suite"
if [ ! -f "$BUILD/lib/libferry.so" ]; then
  echo "gpu_test: $BUILD/lib/libferry.so is missing: build first (scripts/build.sh)" >&2
  exit 1
fi
# Built by CMake when tests/gpu is part of the build, else here.
bench="$BUILD/gpu/handoff_bench"
if grep -q 'gpu_suite' "$BUILD/build.ninja" 2>/dev/null || grep -qs 'gpu_suite' "$BUILD/Makefile"; then
  cmake --build "$BUILD" --target gpu_suite handoff_bench >/dev/null || exit 1
else
  mkdir -p "$BUILD/gpu"
  for t in gpu_suite handoff_bench; do
    "$CC" -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -Wno-unused-parameter \
      -I "$ROOT/core/include" -I "$ROOT/core/src" -o "$BUILD/gpu/$t" "$ROOT/tests/gpu/$t.c" \
      -L "$BUILD/lib" -lferry -Wl,-rpath,"$BUILD/lib" -ldl || exit 1
  done
fi
case "${FERRY_CUDA_LIBRARY:-}${FERRY_HIP_LIBRARY:-}" in
  *emu*) echo "NOTE: FERRY_CUDA_LIBRARY/FERRY_HIP_LIBRARY point at ferry's test emulation: no GPU result" ;;
esac
out="$(mktemp)"
trap 'rm -f "$out"' EXIT
"$suite" "$@" | tee "$out"
status=${PIPESTATUS[0]}
echo
echo "== GPU handoff benchmark"
# shellcheck disable=SC2086
"$bench" ${FERRY_HANDOFF_ARGS:-} | tee -a "$out"
bench_status=${PIPESTATUS[0]}
[ "$status" -eq 0 ] && status=$bench_status
if ! grep -q '^ok: ' "$out"; then
  echo "gpu_test: no GPU was found, so nothing ran on a GPU (see the SKIPPED lines above)"
elif grep -q 'EMULATION' "$out"; then
  echo "gpu_test: results above come from the test emulation, not from a GPU"
fi
exit "$status"
