/* The GPU suite: ferry's CUDA and ROCm backends against the real driver,
 * plus bandwidth (ferry_device_memcpy against the driver's own copy, same
 * buffers, same run) and event-overhead benchmarks. scripts/gpu_test.sh
 * (./dev.sh gpu-test) runs it.
 *
 * A backend whose probe fails is skipped loudly with the probe's reason
 * ("SKIPPED: no CUDA device: ..."); the suite then exits 0. When the loaded
 * library is one of ferry's test emulations (FERRY_CUDA_LIBRARY pointing at
 * tests/gpu/emu), every result is labelled EMULATION: those numbers say
 * nothing about a GPU.
 *
 *   gpu_suite [--mib N] [--reps N] [--events N]
 * Prints "N passed, N failed, N skipped"; exits 1 when a check failed. */
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuda_driver_api.h"
#include "gpu_bench.h"
#include "ferry/dlpack_abi.h"
#include "ferry/ferry.h"
#include "hip_runtime_decls.h"

static int g_passed, g_failed, g_skipped;
static const char* g_label = "";

#define EXPECT(cond)                                                        \
  do {                                                                      \
    if (!(cond)) {                                                          \
      printf("    check failed at %s:%d: %s\n", __FILE__, __LINE__, #cond); \
      return 1;                                                             \
    }                                                                       \
  } while (0)
#define EXPECT_OK(call)                                                  \
  do {                                                                   \
    int expect_rc_ = (call);                                             \
    if (expect_rc_ != 0) {                                               \
      printf("    %s failed at %s:%d (%s)\n", #call, __FILE__, __LINE__, \
             ferry_errno_name(expect_rc_));                              \
      return 1;                                                          \
    }                                                                    \
  } while (0)

static void report(const char* name, int failed) {
  if (failed) {
    g_failed++;
    printf("FAILED: %s%s\n", g_label, name);
  } else {
    g_passed++;
    printf("ok: %s%s\n", g_label, name);
  }
}

/* ---- what each backend is ---------------------------------------------------------- */

struct Backend {
  const char* name; /* "CUDA" / "ROCm" */
  int64_t index;
  ArrowDeviceType device, host, managed; /* managed: 0 when none */
  int64_t device_count;
  /* The driver's own entry points, for the baselines (same library). */
  void* library;
  int emulated;
};

static struct FerryDevice* dev(ArrowDeviceType type, int64_t id) {
  struct FerryDevice* d = NULL;
  return ferry_device_resolve(type, id, &d, NULL) == 0 ? d : NULL;
}

static void fill(uint8_t* p, size_t n, uint8_t seed) {
  for (size_t i = 0; i < n; i++) p[i] = (uint8_t)(seed + i * 13);
}

/* ---- checks (each returns 1 on failure)
 * ------------------------------------------------ */

static int check_allocations(struct Backend* b) {
  ArrowDeviceType types[3] = {b->device, b->host, b->managed};
  for (int t = 0; t < 3; t++) {
    if (types[t] == 0) continue;
    struct FerryDevice* d = dev(types[t], 0);
    EXPECT(d != NULL);
    void* p = NULL;
    EXPECT_OK(ferry_device_allocate(d, 1 << 20, &p, NULL));
    EXPECT_OK(ferry_device_deallocate(d, p, NULL));
    EXPECT(ferry_device_live_allocations(d) == 0);
  }
  return 0;
}

static int check_copies(struct Backend* b) {
  enum { N = 3 << 20 };
  struct FerryDevice* cpu = dev(ARROW_DEVICE_CPU, -1);
  struct FerryDevice* d0 = dev(b->device, 0);
  struct FerryDevice* d1 = b->device_count > 1 ? dev(b->device, 1) : d0;
  uint8_t* source = malloc(N);
  uint8_t* back = malloc(N);
  EXPECT(source != NULL && back != NULL);
  fill(source, N, 5);
  memset(back, 0, N);
  void *a = NULL, *c = NULL, *h = NULL;
  EXPECT_OK(ferry_device_allocate(d0, N, &a, NULL));
  EXPECT_OK(ferry_device_allocate(d1, N, &c, NULL));
  EXPECT_OK(ferry_device_allocate(dev(b->host, 0), N, &h, NULL));
  EXPECT_OK(ferry_device_memcpy(d0, a, cpu, source, N, NULL, NULL)); /* H2D */
  EXPECT_OK(ferry_device_memcpy(d1, c, d0, a, N, NULL, NULL));       /* D2D or peer */
  EXPECT_OK(
      ferry_device_memcpy(dev(b->host, 0), h, d1, c, N, NULL, NULL)); /* to pinned */
  EXPECT_OK(ferry_device_memcpy(cpu, back, dev(b->host, 0), h, N, NULL, NULL));
  EXPECT(memcmp(source, back, N) == 0);
  EXPECT(memcmp(source, h, N) == 0); /* pinned memory is host-readable */
  EXPECT_OK(ferry_device_deallocate(d0, a, NULL));
  EXPECT_OK(ferry_device_deallocate(d1, c, NULL));
  EXPECT_OK(ferry_device_deallocate(dev(b->host, 0), h, NULL));
  if (b->device_count < 2) printf("    (one device: peer copies not exercised)\n");
  free(source);
  free(back);
  return 0;
}

/* Producer stream -> event -> consumer stream, through an exported array. */
static int check_event_handoff(struct Backend* b, int32_t policy) {
  enum { N = 16 << 20 };
  struct FerryDevice* cpu = dev(ARROW_DEVICE_CPU, -1);
  struct FerryDevice* d = dev(b->device, 0);
  void *producer = NULL, *consumer = NULL, *buffer = NULL;
  EXPECT_OK(ferry_device_stream_create(d, &producer, NULL));
  EXPECT_OK(ferry_device_stream_create(d, &consumer, NULL));
  EXPECT_OK(ferry_device_allocate(d, N, &buffer, NULL));
  uint8_t* source = malloc(N);
  uint8_t* back = malloc(N);
  EXPECT(source != NULL && back != NULL);
  fill(source, N, (uint8_t)policy);
  EXPECT_OK(ferry_device_memcpy(d, buffer, cpu, source, N, producer, NULL));
  struct ArrowArray inner;
  memset(&inner, 0, sizeof inner);
  const void* buffers[2] = {NULL, buffer};
  EXPECT_OK(ferry_array_init(&inner, N, 0, 0, 2, buffers, 0, NULL, NULL, NULL));
  struct ArrowDeviceArray array;
  memset(&array, 0, sizeof array);
  EXPECT_OK(ferry_device_array_init_async(&array, &inner, d, producer, policy, NULL));
  EXPECT((array.sync_event != NULL) == (policy == FERRY_SYNC_RECORD_EVENT));
  double t0 = now_seconds();
  EXPECT_OK(ferry_device_array_wait(&array, consumer, NULL));
  double waited = now_seconds() - t0;
  EXPECT_OK(ferry_device_memcpy(cpu, back, d, buffer, N, consumer, NULL));
  EXPECT_OK(ferry_device_stream_synchronize(d, consumer, NULL));
  EXPECT(memcmp(source, back, N) == 0);
  printf("    (handing the array to the consumer stream took %.1f us on the host)\n",
         waited * 1e6);
  ferry_device_array_release(&array);
  EXPECT_OK(ferry_device_deallocate(d, buffer, NULL));
  EXPECT_OK(ferry_device_stream_destroy(d, producer, NULL));
  EXPECT_OK(ferry_device_stream_destroy(d, consumer, NULL));
  free(source);
  free(back);
  return 0;
}

struct Finding {
  int count;
};
static void count_finding(void* user_data, const char* rule, const char* where,
                          const char* what) {
  ((struct Finding*)user_data)->count++;
  printf("    finding %s %s: %s\n", rule, where, what);
}

/* Findings of validating `length` int32 values at `p` declared on (type, id). */
static int validate_int32_n(void* p, int64_t length, ArrowDeviceType type, int64_t id) {
  struct ArrowSchema schema;
  struct ArrowDeviceArray array;
  int32_view(p, length, 0, type, id, &schema, &array);
  struct Finding f = {0};
  ferry_validate_device_array(&schema, &array, FERRY_VALIDATE_DEFAULT, count_finding, &f,
                              NULL);
  ferry_device_array_release(&array);
  ferry_schema_release(&schema);
  return f.count;
}

static int validate_int32(void* p, ArrowDeviceType type, int64_t id) {
  return validate_int32_n(p, 16, type, id);
}

static int check_residency(struct Backend* b) {
  void *on_device = NULL, *pinned = NULL;
  EXPECT_OK(ferry_device_allocate(dev(b->device, 0), 64, &on_device, NULL));
  EXPECT_OK(ferry_device_allocate(dev(b->host, 0), 64, &pinned, NULL));
  int32_t plain[16] = {0};
  EXPECT(validate_int32(on_device, b->device, 0) == 0);
  EXPECT(validate_int32(pinned, b->host, 0) == 0);
  EXPECT(validate_int32(pinned, b->device, 0) == 1);
  EXPECT(validate_int32(on_device, b->host, 0) == 1);
  EXPECT(validate_int32(plain, b->device, 0) == 1);
  if (b->device_count > 1) EXPECT(validate_int32(on_device, b->device, 1) == 1);
  EXPECT_OK(ferry_device_deallocate(dev(b->device, 0), on_device, NULL));
  EXPECT_OK(ferry_device_deallocate(dev(b->host, 0), pinned, NULL));
  return 0;
}

/* What the real driver says about memory as real producers export it:
 * managed memory declared as device memory (RMM, cuDF), an empty buffer one
 * past the end of its allocation, a length far past the allocation. */
static int check_producer_memory(struct Backend* b) {
  void* on_device = NULL;
  EXPECT_OK(ferry_device_allocate(dev(b->device, 0), 64, &on_device, NULL));
  EXPECT(validate_int32_n((char*)on_device + 64, 0, b->device, 0) == 0);
  EXPECT(validate_int32_n(on_device, 1 << 20, b->device, 0) == 1);
  EXPECT_OK(ferry_device_deallocate(dev(b->device, 0), on_device, NULL));
  if (b->managed != 0) {
    void* managed = NULL;
    EXPECT_OK(ferry_device_allocate(dev(b->managed, 0), 64, &managed, NULL));
    EXPECT(validate_int32(managed, b->device, 0) == 0);
    EXPECT(validate_int32(managed, b->managed, 0) == 0);
    EXPECT(validate_int32(managed, b->host, 0) == 1);
    EXPECT_OK(ferry_device_deallocate(dev(b->managed, 0), managed, NULL));
  }
  return 0;
}

static int check_array_copy_move_and_dlpack(struct Backend* b) {
  static const int32_t values[6] = {3, 1, 4, 1, 5, 9};
  struct ArrowSchema schema;
  memset(&schema, 0, sizeof schema);
  EXPECT_OK(ferry_schema_init(&schema, "i", NULL, 0, 0, NULL));
  struct ArrowArray inner;
  memset(&inner, 0, sizeof inner);
  const void* buffers[2] = {NULL, values};
  EXPECT_OK(ferry_array_init(&inner, 6, 0, 0, 2, buffers, 0, NULL, NULL, NULL));
  struct ArrowDeviceArray on_cpu, on_gpu, on_sim, on_host, moved;
  memset(&on_cpu, 0, sizeof on_cpu);
  memset(&on_gpu, 0, sizeof on_gpu);
  memset(&on_sim, 0, sizeof on_sim);
  memset(&on_host, 0, sizeof on_host);
  memset(&moved, 0, sizeof moved);
  EXPECT_OK(ferry_device_array_init(&on_cpu, &inner, ARROW_DEVICE_CPU, -1, NULL, NULL,
                                    NULL, NULL));
  EXPECT_OK(ferry_device_array_copy(&schema, &on_cpu, b->device, 0, &on_gpu, NULL));
  EXPECT_OK(
      ferry_device_array_copy(&schema, &on_gpu, ARROW_DEVICE_EXT_DEV, 0, &on_sim, NULL));
  EXPECT_OK(ferry_device_array_copy(&schema, &on_sim, b->host, 0, &on_host, NULL));
  const void* pinned = on_host.array.buffers[1];
  EXPECT_OK(ferry_device_array_move_to_device(&schema, &on_host, ARROW_DEVICE_CPU, -1,
                                              &moved, NULL));
  EXPECT(moved.array.buffers[1] == pinned); /* zero-copy */
  EXPECT(memcmp(moved.array.buffers[1], values, sizeof values) == 0);
  struct DLManagedTensorVersioned* tensor = NULL;
  const void* gpu_buffer = on_gpu.array.buffers[1];
  EXPECT_OK(ferry_device_array_to_dlpack(&schema, &on_gpu, NULL, &tensor, NULL));
  EXPECT(tensor->dl_tensor.data == gpu_buffer);
  EXPECT((int)tensor->dl_tensor.device.device_type == (int)b->device);
  struct ArrowSchema back_schema;
  struct ArrowDeviceArray back;
  memset(&back_schema, 0, sizeof back_schema);
  memset(&back, 0, sizeof back);
  EXPECT_OK(ferry_device_array_from_dlpack(tensor, &back_schema, &back, NULL));
  EXPECT(back.array.buffers[1] == gpu_buffer);
  ferry_device_array_release(&back);
  ferry_schema_release(&back_schema);
  ferry_device_array_release(&moved);
  ferry_device_array_release(&on_sim);
  ferry_device_array_release(&on_cpu);
  ferry_schema_release(&schema);
  return 0;
}

/* ---- benchmarks
 * --------------------------------------------------------------------------------- */

/* The driver's own entry points for the baselines: a copy on the driver's
 * legacy stream followed by a synchronize, which is what a program calling
 * the driver directly does. */
static ferry_cuMemcpyHtoDAsync_v2_fn cu_htod;
static ferry_cuMemcpyDtoHAsync_v2_fn cu_dtoh;
static ferry_cuMemcpyDtoDAsync_v2_fn cu_dtod;
static ferry_cuStreamSynchronize_fn cu_sync;
static ferry_cuCtxPushCurrent_v2_fn cu_push;
static ferry_cuCtxPopCurrent_v2_fn cu_pop;
static ferry_cuDeviceGet_fn cu_device_get;
static ferry_cuDevicePrimaryCtxRetain_fn cu_retain;
static ferry_cuEventCreate_fn cu_event_create;
static ferry_cuEventRecord_fn cu_event_record;
static ferry_cuEventSynchronize_fn cu_event_sync;
static ferry_cuEventDestroy_v2_fn cu_event_destroy;
static ferry_CUcontext cu_context;
static ferry_hipMemcpyAsync_fn hip_copy;
static ferry_hipStreamSynchronize_fn hip_sync;
static ferry_hipSetDevice_fn hip_set_device;
static ferry_hipEventCreateWithFlags_fn hip_event_create;
static ferry_hipEventRecord_fn hip_event_record;
static ferry_hipEventSynchronize_fn hip_event_sync;
static ferry_hipEventDestroy_fn hip_event_destroy;

static int load_baseline(struct Backend* b) {
  void* h = b->library;
#define GET(var, name)            \
  *(void**)&var = dlsym(h, name); \
  if (var == NULL) return 1
  if (b->index == 2) {
    GET(cu_htod, "cuMemcpyHtoDAsync_v2");
    GET(cu_dtoh, "cuMemcpyDtoHAsync_v2");
    GET(cu_dtod, "cuMemcpyDtoDAsync_v2");
    GET(cu_sync, "cuStreamSynchronize");
    GET(cu_push, "cuCtxPushCurrent_v2");
    GET(cu_pop, "cuCtxPopCurrent_v2");
    GET(cu_device_get, "cuDeviceGet");
    GET(cu_retain, "cuDevicePrimaryCtxRetain");
    GET(cu_event_create, "cuEventCreate");
    GET(cu_event_record, "cuEventRecord");
    GET(cu_event_sync, "cuEventSynchronize");
    GET(cu_event_destroy, "cuEventDestroy_v2");
    ferry_CUdevice device = 0;
    if (cu_device_get(&device, 0) != 0 || cu_retain(&cu_context, device) != 0) return 1;
  } else {
    GET(hip_copy, "hipMemcpyAsync");
    GET(hip_sync, "hipStreamSynchronize");
    GET(hip_set_device, "hipSetDevice");
    GET(hip_event_create, "hipEventCreateWithFlags");
    GET(hip_event_record, "hipEventRecord");
    GET(hip_event_sync, "hipEventSynchronize");
    GET(hip_event_destroy, "hipEventDestroy");
    if (hip_set_device(0) != 0) return 1;
  }
#undef GET
  return 0;
}

/* kind: 0 H2D, 1 D2H, 2 D2D. */
static int driver_copy(struct Backend* b, void* dst, const void* src, size_t n,
                       int kind) {
  if (b->index == 2) {
    if (cu_push(cu_context) != 0) return 1;
    unsigned rc = kind == 0   ? cu_htod((ferry_CUdeviceptr)(uintptr_t)dst, src, n, NULL)
                  : kind == 1 ? cu_dtoh(dst, (ferry_CUdeviceptr)(uintptr_t)src, n, NULL)
                              : cu_dtod((ferry_CUdeviceptr)(uintptr_t)dst,
                                        (ferry_CUdeviceptr)(uintptr_t)src, n, NULL);
    if (rc == 0) rc = cu_sync(NULL);
    ferry_CUcontext ignored;
    cu_pop(&ignored);
    return rc != 0;
  }
  unsigned kinds[3] = {FERRY_HIP_MEMCPY_HOST_TO_DEVICE, FERRY_HIP_MEMCPY_DEVICE_TO_HOST,
                       FERRY_HIP_MEMCPY_DEVICE_TO_DEVICE};
  unsigned rc = hip_copy(dst, src, n, kinds[kind], NULL);
  if (rc == 0) rc = hip_sync(NULL);
  return rc != 0;
}

static int bench_bandwidth(struct Backend* b, size_t mib, int reps) {
  size_t n = mib << 20;
  struct FerryDevice* cpu = dev(ARROW_DEVICE_CPU, -1);
  struct FerryDevice* d = dev(b->device, 0);
  uint8_t* host = malloc(n);
  EXPECT(host != NULL);
  fill(host, n, 1);
  void *a = NULL, *c = NULL;
  EXPECT_OK(ferry_device_allocate(d, (int64_t)n, &a, NULL));
  EXPECT_OK(ferry_device_allocate(d, (int64_t)n, &c, NULL));
  const char* names[3] = {"H2D (pageable host)", "D2H (pageable host)", "D2D"};
  for (int kind = 0; kind < 3; kind++) {
    double best_ferry = 1e30, best_driver = 1e30;
    for (int r = 0; r < reps; r++) {
      double t0 = now_seconds();
      if (kind == 0)
        EXPECT_OK(ferry_device_memcpy(d, a, cpu, host, (int64_t)n, NULL, NULL));
      if (kind == 1)
        EXPECT_OK(ferry_device_memcpy(cpu, host, d, a, (int64_t)n, NULL, NULL));
      if (kind == 2) EXPECT_OK(ferry_device_memcpy(d, c, d, a, (int64_t)n, NULL, NULL));
      double t1 = now_seconds();
      void* dst = kind == 0 ? a : kind == 1 ? (void*)host : c;
      const void* src = kind == 0 ? (const void*)host : a;
      EXPECT(driver_copy(b, dst, src, n, kind) == 0);
      double t2 = now_seconds();
      if (t1 - t0 < best_ferry) best_ferry = t1 - t0;
      if (t2 - t1 < best_driver) best_driver = t2 - t1;
    }
    printf(
        "    bandwidth %-20s %6zu MiB: ferry %8.2f GB/s, driver %8.2f GB/s (best of "
        "%d)%s\n",
        names[kind], mib, (double)n / best_ferry / 1e9, (double)n / best_driver / 1e9,
        reps, b->emulated ? "  [EMULATION, not a GPU]" : "");
  }
  EXPECT_OK(ferry_device_deallocate(d, a, NULL));
  EXPECT_OK(ferry_device_deallocate(d, c, NULL));
  free(host);
  return 0;
}

static int bench_events(struct Backend* b, int iterations) {
  struct FerryDevice* d = dev(b->device, 0);
  void* stream = NULL;
  EXPECT_OK(ferry_device_stream_create(d, &stream, NULL));
  double t0 = now_seconds();
  for (int i = 0; i < iterations; i++) {
    void* event = NULL;
    EXPECT_OK(ferry_device_event_create(d, &event, NULL));
    EXPECT_OK(ferry_device_event_record(d, event, stream, NULL));
    EXPECT_OK(ferry_device_event_synchronize(d, event, NULL));
    EXPECT_OK(ferry_device_event_destroy(d, event, NULL));
  }
  double t1 = now_seconds();
  for (int i = 0; i < iterations; i++) {
    if (b->index == 2) {
      ferry_CUevent event = NULL;
      ferry_CUcontext ignored;
      EXPECT(cu_push(cu_context) == 0);
      EXPECT(cu_event_create(&event, FERRY_CU_EVENT_DISABLE_TIMING) == 0);
      EXPECT(cu_event_record(event, (ferry_CUstream)stream) == 0);
      EXPECT(cu_event_sync(event) == 0);
      EXPECT(cu_event_destroy(event) == 0);
      cu_pop(&ignored);
    } else {
      ferry_hipEvent_t event = NULL;
      EXPECT(hip_event_create(&event, FERRY_HIP_EVENT_DISABLE_TIMING) == 0);
      EXPECT(hip_event_record(event, (ferry_hipStream_t)stream) == 0);
      EXPECT(hip_event_sync(event) == 0);
      EXPECT(hip_event_destroy(event) == 0);
    }
  }
  double t2 = now_seconds();
  printf(
      "    event create+record+synchronize+destroy: ferry %.2f us, driver %.2f us "
      "(mean of %d)%s\n",
      (t1 - t0) / iterations * 1e6, (t2 - t1) / iterations * 1e6, iterations,
      b->emulated ? "  [EMULATION, not a GPU]" : "");
  EXPECT_OK(ferry_device_stream_destroy(d, stream, NULL));
  return 0;
}

/* ---- driver
 * -------------------------------------------------------------------------------------
 */

static void run_backend(struct Backend* b, size_t mib, int reps, int events) {
  struct FerryError error;
  ferry_error_init(&error);
  int rc = ferry_backend_probe(b->index, &error);
  if (rc != 0) {
    g_skipped++;
    printf("SKIPPED: no %s device: %s (%s)\n", b->name, error.message,
           ferry_errno_name(rc));
    return;
  }
  struct FerryDevice* probe = NULL;
  int64_t count = 0;
  while (ferry_device_resolve(b->device, count, &probe, NULL) == 0) count++;
  b->device_count = count;
  b->library = driver_library_open(b->index);
  b->emulated = driver_library_is_emulation(b->library);
  static char label[64];
  snprintf(label, sizeof label, "%s%s: ", b->name, b->emulated ? " [EMULATION]" : "");
  g_label = label;
  printf("== %s: %lld device(s)%s\n", b->name, (long long)count,
         b->emulated
             ? " -- this is ferry's test emulation, NOT a GPU: no GPU result below"
             : "");
  report("allocate and free every device type", check_allocations(b));
  report("copies H2D, D2H, D2D/peer, pinned, values checked", check_copies(b));
  report("export RECORD_EVENT, consumer stream handoff",
         check_event_handoff(b, FERRY_SYNC_RECORD_EVENT));
  report("export SYNCHRONIZE", check_event_handoff(b, FERRY_SYNC_SYNCHRONIZE));
  report("residency findings in validation", check_residency(b));
  report("residency of managed memory, end pointers and over-long buffers",
         check_producer_memory(b));
  report("array copy via sim, zero-copy move, DLPack round trip",
         check_array_copy_move_and_dlpack(b));
  if (b->library == NULL || load_baseline(b) != 0) {
    report("driver baseline entry points found", 1);
  } else {
    report("bandwidth: ferry_device_memcpy vs the driver's copy",
           bench_bandwidth(b, mib, reps));
    report("event overhead: ferry vs the driver", bench_events(b, events));
  }
  g_label = "";
}

int main(int argc, char** argv) {
  size_t mib = 64;
  int reps = 5, events = 1000;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--mib") == 0)
      mib = (size_t)atol(argv[i + 1]);
    else if (strcmp(argv[i], "--reps") == 0)
      reps = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--events") == 0)
      events = atoi(argv[i + 1]);
  }
  if (mib == 0 || reps <= 0 || events <= 0) {
    fprintf(stderr, "usage: gpu_suite [--mib N] [--reps N] [--events N]\n");
    return 2;
  }
  struct Backend cuda = {
      "CUDA", 2, ARROW_DEVICE_CUDA, ARROW_DEVICE_CUDA_HOST, ARROW_DEVICE_CUDA_MANAGED, 0,
      NULL,   0};
  struct Backend rocm = {"ROCm", 3, ARROW_DEVICE_ROCM, ARROW_DEVICE_ROCM_HOST, 0, 0,
                         NULL,   0};
  run_backend(&cuda, mib, reps, events);
  run_backend(&rocm, mib, reps, events);
  printf("%d passed, %d failed, %d skipped\n", g_passed, g_failed, g_skipped);
  return g_failed == 0 ? 0 : 1;
}
