/* What the GPU suite and the GPU benchmarks (tests/gpu/gpu_suite.c,
 * handoff_bench.c) share: the driver library ferry loaded, whose own entry
 * points give their baselines (the very library ferry uses), the test for
 * ferry's emulation (whose results are labelled or withheld), and a clock;
 * with the emulation suite (backend_test.c), an int32 view of device memory. */
#ifndef FERRY_TESTS_GPU_GPU_BENCH_H
#define FERRY_TESTS_GPU_GPU_BENCH_H

#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ferry/ferry.h"

/* ferry_backend_probe's index of the CUDA and the ROCm backend. */
#define FERRY_BACKEND_INDEX_CUDA 2
#define FERRY_BACKEND_INDEX_ROCM 3

/* The library backend `index` loaded (after a good probe), opened again:
 * the same mapping, so the same driver state. NULL when not found. */
static inline void* driver_library_open(int64_t index) {
  const char* override = getenv(index == FERRY_BACKEND_INDEX_CUDA ? "FERRY_CUDA_LIBRARY"
                                                                  : "FERRY_HIP_LIBRARY");
  if (override != NULL && override[0] != '\0') {
    return dlopen(override, RTLD_NOW | RTLD_NOLOAD);
  }
  static const char* const kCuda[] = {"libcuda.so.1", NULL};
  static const char* const kHip[] = {"libamdhip64.so", "libamdhip64.so.7",
                                     "libamdhip64.so.6", "libamdhip64.so.5", NULL};
  for (const char* const* name = index == FERRY_BACKEND_INDEX_CUDA ? kCuda : kHip;
       *name != NULL; name++) {
    void* library = dlopen(*name, RTLD_NOW | RTLD_NOLOAD);
    if (library != NULL) return library;
  }
  return NULL;
}

/* 1 when `library` is one of ferry's driver emulations (tests/gpu/emu). */
static inline int driver_library_is_emulation(void* library) {
  return library != NULL && (dlsym(library, "cuda_emu_fail") != NULL ||
                             dlsym(library, "hip_emu_fail") != NULL);
}

/* Monotonic seconds. */
static inline double now_seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* A live int32 schema and array of `length` values from `offset` on, whose
 * data buffer is `p` (no validity), declared to live on (type, id): the
 * array borrows `p`, its release frees nothing of it. */
static inline void int32_view(void* p, int64_t length, int64_t offset, ArrowDeviceType type,
                              int64_t id, struct ArrowSchema* schema,
                              struct ArrowDeviceArray* out) {
  memset(schema, 0, sizeof *schema);
  ferry_schema_init(schema, "i", NULL, 0, 0, NULL);
  struct ArrowArray inner;
  memset(&inner, 0, sizeof inner);
  const void* buffers[2] = {NULL, p};
  ferry_array_init(&inner, length, 0, offset, 2, buffers, 0, NULL, NULL, NULL);
  memset(out, 0, sizeof *out);
  ferry_device_array_init(out, &inner, type, id, NULL, NULL, NULL, NULL);
}

#endif  // FERRY_TESTS_GPU_GPU_BENCH_H
