/* The CUDA and ROCm backends (core/src/gpu_driver.c, over cuda.c and hip.c)
 * and the GPU interchange functions (move_to_device.c, stream_handoff.c,
 * dlpack.c), run against the driver emulations of tests/gpu/emu through
 * FERRY_CUDA_LIBRARY and FERRY_HIP_LIBRARY, so that every backend function,
 * its error paths included, runs without a GPU.
 *
 * The emulation libraries are found next to this binary (BUILD/test-emu/)
 * unless the variables are set. The emulation is asynchronous (one thread
 * per stream); tests keep work pending with gates instead of sleeping and
 * assert what the host saw while it was pending.
 *
 * Links libferry's internal archive (to reach the backends' residency check,
 * which the validator turns into findings). Prints "N passed, N failed". */
#include "backend.h" /* ferry__device_check_pointer (linked from the internal archive) */

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ferry/dlpack_abi.h"
#include "ferry/ferry.h"
#include "ferry_test.h"
#include "gpu_bench.h"

/* ---- the emulations' test controls ----------------------------------------------------
 */

struct Emu {
  const char* backend; /* "cuda" or "rocm" */
  const char* library;
  ArrowDeviceType device_type, host_type;
  void (*fail)(const char*, int64_t, unsigned);
  void (*clear_failures)(void);
  int64_t (*calls)(const char*);
  int (*gate_close)(void*);
  void (*gates_open)(void);
  int64_t (*stream_pending)(void*);
  int64_t (*live_allocations)(void);
  int64_t (*live_streams)(void);
  int64_t (*live_events)(void);
  int (*event_done)(void*);
  int (*pointer_device)(const void*);
  /* CUDA only: the context stack depth of this thread; HIP only: its device. */
  int (*context_depth)(void);
  int (*current_device)(void);
  void* handle;
};

static struct Emu g_cuda = {.backend = "cuda",
                            .device_type = ARROW_DEVICE_CUDA,
                            .host_type = ARROW_DEVICE_CUDA_HOST};
static struct Emu g_hip = {.backend = "rocm",
                           .device_type = ARROW_DEVICE_ROCM,
                           .host_type = ARROW_DEVICE_ROCM_HOST};

static void* emu_symbol(struct Emu* emu, const char* prefix, const char* name) {
  char full[128];
  snprintf(full, sizeof full, "%s_%s", prefix, name);
  void* symbol = dlsym(emu->handle, full);
  if (symbol == NULL) {
    printf("FATAL: %s does not export %s\n", emu->library, full);
    exit(2);
  }
  return symbol;
}

static void emu_load(struct Emu* emu, const char* variable, const char* file,
                     const char* prefix) {
  static char paths[2][PATH_MAX + 64];
  const char* path = getenv(variable);
  if (path == NULL || path[0] == '\0') {
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) exit(2);
    self[n] = '\0';
    *strrchr(self, '/') = '\0';
    char* slot = paths[emu == &g_cuda ? 0 : 1];
    snprintf(slot, PATH_MAX + 64, "%s/%s", self, file);
    setenv(variable, slot, 1);
    path = slot;
  }
  emu->library = path;
  emu->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (emu->handle == NULL) {
    printf("FATAL: cannot load the emulation %s: %s\n", path, dlerror());
    exit(2);
  }
  *(void**)&emu->fail = emu_symbol(emu, prefix, "fail");
  *(void**)&emu->clear_failures = emu_symbol(emu, prefix, "clear_failures");
  *(void**)&emu->calls = emu_symbol(emu, prefix, "calls");
  *(void**)&emu->gate_close = emu_symbol(emu, prefix, "gate_close");
  *(void**)&emu->gates_open = emu_symbol(emu, prefix, "gates_open");
  *(void**)&emu->stream_pending = emu_symbol(emu, prefix, "stream_pending");
  *(void**)&emu->live_allocations = emu_symbol(emu, prefix, "live_allocations");
  *(void**)&emu->live_streams = emu_symbol(emu, prefix, "live_streams");
  *(void**)&emu->live_events = emu_symbol(emu, prefix, "live_events");
  *(void**)&emu->event_done = emu_symbol(emu, prefix, "event_done");
  *(void**)&emu->pointer_device = emu_symbol(emu, prefix, "pointer_device");
}

/* Runs before the tests (and before any probe): points ferry at the
 * emulations and opens their controls. */
__attribute__((constructor(200))) static void load_emulations(void) {
  emu_load(&g_cuda, "FERRY_CUDA_LIBRARY", "libcuda_emu.so", "cuda_emu");
  emu_load(&g_hip, "FERRY_HIP_LIBRARY", "libhip_emu.so", "hip_emu");
  *(void**)&g_cuda.context_depth = emu_symbol(&g_cuda, "cuda_emu", "context_depth");
  *(void**)&g_hip.current_device = emu_symbol(&g_hip, "hip_emu", "current_device");
}

static struct Emu* const kEmus[] = {&g_cuda, &g_hip};

static struct FerryDevice* device(ArrowDeviceType type, int64_t id) {
  struct FerryDevice* d = NULL;
  struct FerryError error;
  ferry_error_init(&error);
  int rc = ferry_device_resolve(type, id, &d, &error);
  if (rc != 0)
    printf("resolve %s:%d failed: %s\n", ferry_device_type_name(type), (int)id,
           error.message);
  return rc == 0 ? d : NULL;
}

/* The bracketing invariant: no ferry call leaves a context pushed or the
 * HIP current device changed (this thread never sets it, so it is 0). */
static void check_bracketing(void) {
  CHECK_EQ_INT(0, g_cuda.context_depth());
  CHECK_EQ_INT(0, g_hip.current_device());
}

/* Driver events of both emulations that are not waiting in one of ferry's
 * export pools: the events some array or caller holds. */
static int64_t events_in_use(void) {
  static const ArrowDeviceType kTypes[] = {ARROW_DEVICE_CUDA, ARROW_DEVICE_CUDA_HOST,
                                           ARROW_DEVICE_CUDA_MANAGED, ARROW_DEVICE_ROCM,
                                           ARROW_DEVICE_ROCM_HOST};
  int64_t n = g_cuda.live_events() + g_hip.live_events();
  for (size_t t = 0; t < sizeof kTypes / sizeof kTypes[0]; t++) {
    for (int64_t id = 0; id < 2; id++) n -= ferry__device_pooled_events(device(kTypes[t], id));
  }
  return n;
}

static void fill_pattern(uint8_t* bytes, size_t n, uint8_t seed) {
  for (size_t i = 0; i < n; i++) bytes[i] = (uint8_t)(seed + i * 7);
}

/* ---- probing and the registry
 * ---------------------------------------------------------- */

/* First in the file: it needs (type, id) pairs the registry has not made. */
FERRY_TEST(device_init_failures_are_reported_and_not_cached) {
  struct FerryError error;
  ferry_error_init(&error);
  struct FerryDevice* d = NULL;
  g_cuda.fail("cuDevicePrimaryCtxRetain", 1, 999);
  CHECK_EQ_INT(EIO, ferry_device_resolve(ARROW_DEVICE_CUDA_MANAGED, 1, &d, &error));
  CHECK_CONTAINS(error.message, "[cuDevicePrimaryCtxRetain][CUDA_ERROR_UNKNOWN]");
  CHECK(d == NULL);
  g_cuda.fail("cuDeviceGet", 1, 101);
  CHECK_EQ_INT(ENODEV, ferry_device_resolve(ARROW_DEVICE_CUDA_MANAGED, 1, &d, &error));
  CHECK_CONTAINS(error.message, "[cuDeviceGet][CUDA_ERROR_INVALID_DEVICE]");
  g_cuda.clear_failures();
  CHECK_EQ_INT(0, ferry_device_resolve(ARROW_DEVICE_CUDA_MANAGED, 1, &d, &error));
  CHECK(d != NULL);
  check_bracketing();
}

FERRY_TEST(emulated_backends_probe_available_with_two_devices_each) {
  struct FerryError error;
  ferry_error_init(&error);
  CHECK_EQ_INT(0, ferry_backend_probe(2, &error));
  CHECK_EQ_INT(0, ferry_backend_probe(3, &error));
  ArrowDeviceType types[] = {ARROW_DEVICE_CUDA, ARROW_DEVICE_CUDA_HOST,
                             ARROW_DEVICE_CUDA_MANAGED, ARROW_DEVICE_ROCM,
                             ARROW_DEVICE_ROCM_HOST};
  for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
    CHECK(device(types[t], 0) != NULL);
    CHECK(device(types[t], 1) != NULL);
    struct FerryDevice* missing = NULL;
    CHECK_EQ_INT(ENODEV, ferry_device_resolve(types[t], 2, &missing, &error));
    CHECK_CONTAINS(error.message, "does not exist (2 devices of that type)");
  }
  CHECK(device(ARROW_DEVICE_CUDA, 0) == device(ARROW_DEVICE_CUDA, 0));
  CHECK_EQ_INT(1, ferry_device_is_host_accessible(device(ARROW_DEVICE_CUDA_HOST, 0)));
  CHECK_EQ_INT(1, ferry_device_is_host_accessible(device(ARROW_DEVICE_CUDA_MANAGED, 0)));
  CHECK_EQ_INT(0, ferry_device_is_host_accessible(device(ARROW_DEVICE_CUDA, 0)));
  CHECK_EQ_INT(1, ferry_device_is_host_accessible(device(ARROW_DEVICE_ROCM_HOST, 0)));
  CHECK_EQ_INT(0, ferry_device_is_host_accessible(device(ARROW_DEVICE_ROCM, 0)));
  /* One primary context retain per (type, id) the registry created. */
  int (*retains)(int) =
      (int (*)(int))dlsym(g_cuda.handle, "cuda_emu_primary_context_retains");
  CHECK(retains != NULL);
  CHECK_EQ_INT(3, retains(0));
  CHECK_EQ_INT(3, retains(1));
  check_bracketing();
}

/* ---- memory
 * ------------------------------------------------------------------------------ */

FERRY_TEST(every_device_type_allocates_on_its_device_and_frees) {
  ArrowDeviceType types[] = {ARROW_DEVICE_CUDA, ARROW_DEVICE_CUDA_HOST,
                             ARROW_DEVICE_CUDA_MANAGED, ARROW_DEVICE_ROCM,
                             ARROW_DEVICE_ROCM_HOST};
  for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
    struct Emu* emu = types[t] >= ARROW_DEVICE_ROCM && types[t] <= ARROW_DEVICE_ROCM_HOST
                          ? &g_hip
                          : &g_cuda;
    for (int64_t id = 0; id < 2; id++) {
      struct FerryDevice* d = device(types[t], id);
      CHECK(d != NULL);
      int64_t before = emu->live_allocations();
      void* p = NULL;
      void* empty = NULL;
      CHECK_EQ_INT(0, ferry_device_allocate(d, 4096, &p, NULL));
      CHECK_EQ_INT(0, ferry_device_allocate(d, 0, &empty, NULL));
      CHECK(p != NULL && empty != NULL && p != empty);
      CHECK_EQ_INT(id, emu->pointer_device(p));
      CHECK_EQ_INT(before + 2, emu->live_allocations());
      CHECK_EQ_INT(2, ferry_device_live_allocations(d));
      CHECK_EQ_INT(0, ferry_device_deallocate(d, p, NULL));
      CHECK_EQ_INT(0, ferry_device_deallocate(d, empty, NULL));
      CHECK_EQ_INT(before, emu->live_allocations());
      CHECK_EQ_INT(0, ferry_device_live_allocations(d));
      check_bracketing();
    }
  }
}

FERRY_TEST(freeing_memory_of_another_kind_is_a_driver_error_not_a_crash) {
  struct FerryError error;
  ferry_error_init(&error);
  char host[16];
  CHECK_EQ_INT(EIO, ferry_device_deallocate(device(ARROW_DEVICE_CUDA, 0), host, &error));
  CHECK_CONTAINS(error.message, "[cuMemFree_v2][CUDA_ERROR_INVALID_VALUE]");
  CHECK_EQ_INT(EIO,
               ferry_device_deallocate(device(ARROW_DEVICE_ROCM_HOST, 0), host, &error));
  CHECK_CONTAINS(error.message, "[hipHostFree][hipErrorInvalidValue]");
  check_bracketing();
}

/* ---- copies
 * -------------------------------------------------------------------------------- */

/* H2D, D2H, D2D (same device) and peer (device 0 -> 1) on `type`, checked
 * byte for byte, with the driver entry point each one used. */
static void check_copies(struct Emu* emu, ArrowDeviceType type, const char* htod,
                         const char* dtoh, const char* dtod, const char* peer) {
  enum { N = 1000 };
  struct FerryDevice* cpu = device(ARROW_DEVICE_CPU, -1);
  struct FerryDevice* d0 = device(type, 0);
  struct FerryDevice* d1 = device(type, 1);
  uint8_t source[N], back[N];
  fill_pattern(source, N, (uint8_t)type);
  void *a = NULL, *b = NULL, *c = NULL;
  CHECK_EQ_INT(0, ferry_device_allocate(d0, N, &a, NULL));
  CHECK_EQ_INT(0, ferry_device_allocate(d0, N, &b, NULL));
  CHECK_EQ_INT(0, ferry_device_allocate(d1, N, &c, NULL));
  const char* names[4] = {htod, dtoh, dtod, peer};
  int64_t calls[4];
  for (int i = 0; i < 4; i++) calls[i] = names[i] != NULL ? emu->calls(names[i]) : 0;
  CHECK_EQ_INT(0, ferry_device_memcpy(d0, a, cpu, source, N, NULL, NULL));
  CHECK_EQ_INT(0, ferry_device_memcpy(d0, b, d0, a, N, NULL, NULL));
  CHECK_EQ_INT(0, ferry_device_memcpy(d1, c, d0, b, N, NULL, NULL));
  memset(back, 0, N);
  CHECK_EQ_INT(0, ferry_device_memcpy(cpu, back, d1, c, N, NULL, NULL));
  CHECK(memcmp(source, back, N) == 0);
  /* Each direction used its own entry point exactly once. */
  for (int i = 0; i < 4; i++) {
    if (names[i] != NULL) CHECK_EQ_INT(calls[i] + 1, emu->calls(names[i]));
  }
  CHECK_EQ_INT(0, ferry_device_deallocate(d0, a, NULL));
  CHECK_EQ_INT(0, ferry_device_deallocate(d0, b, NULL));
  CHECK_EQ_INT(0, ferry_device_deallocate(d1, c, NULL));
  check_bracketing();
}

FERRY_TEST(cuda_copies_host_to_device_device_to_host_device_to_device_and_peer) {
  ArrowDeviceType types[] = {ARROW_DEVICE_CUDA, ARROW_DEVICE_CUDA_HOST,
                             ARROW_DEVICE_CUDA_MANAGED};
  for (size_t t = 0; t < 3; t++) {
    check_copies(&g_cuda, types[t], "cuMemcpyHtoDAsync_v2", "cuMemcpyDtoHAsync_v2",
                 "cuMemcpyDtoDAsync_v2", "cuMemcpyPeerAsync");
  }
}

FERRY_TEST(rocm_copies_host_to_device_device_to_host_device_to_device_and_peer) {
  /* HIP has one entry point (with a kind) for the first three directions. */
  ArrowDeviceType types[] = {ARROW_DEVICE_ROCM, ARROW_DEVICE_ROCM_HOST};
  for (size_t t = 0; t < 2; t++) {
    int64_t async_before = g_hip.calls("hipMemcpyAsync");
    check_copies(&g_hip, types[t], NULL, NULL, NULL, "hipMemcpyPeerAsync");
    CHECK_EQ_INT(async_before + 3, g_hip.calls("hipMemcpyAsync"));
  }
}

FERRY_TEST(copies_between_cuda_and_rocm_and_sim_are_staged_through_the_host) {
  enum { N = 333 };
  struct FerryDevice* cpu = device(ARROW_DEVICE_CPU, -1);
  struct FerryDevice* cuda = device(ARROW_DEVICE_CUDA, 1);
  struct FerryDevice* rocm = device(ARROW_DEVICE_ROCM, 0);
  struct FerryDevice* sim = device(ARROW_DEVICE_EXT_DEV, 2);
  uint8_t source[N], back[N];
  fill_pattern(source, N, 3);
  void *on_cuda = NULL, *on_rocm = NULL, *on_sim = NULL;
  CHECK_EQ_INT(0, ferry_device_allocate(cuda, N, &on_cuda, NULL));
  CHECK_EQ_INT(0, ferry_device_allocate(rocm, N, &on_rocm, NULL));
  CHECK_EQ_INT(0, ferry_device_allocate(sim, N, &on_sim, NULL));
  CHECK_EQ_INT(0, ferry_device_memcpy(cuda, on_cuda, cpu, source, N, NULL, NULL));
  CHECK_EQ_INT(0, ferry_device_memcpy(rocm, on_rocm, cuda, on_cuda, N, NULL, NULL));
  CHECK_EQ_INT(0, ferry_device_memcpy(sim, on_sim, rocm, on_rocm, N, NULL, NULL));
  CHECK_EQ_INT(0, ferry_device_memcpy(cuda, on_cuda, sim, on_sim, N, NULL, NULL));
  memset(back, 0, N);
  CHECK_EQ_INT(0, ferry_device_memcpy(cpu, back, cuda, on_cuda, N, NULL, NULL));
  CHECK(memcmp(source, back, N) == 0);
  CHECK_EQ_INT(0, ferry_device_deallocate(cuda, on_cuda, NULL));
  CHECK_EQ_INT(0, ferry_device_deallocate(rocm, on_rocm, NULL));
  CHECK_EQ_INT(0, ferry_device_deallocate(sim, on_sim, NULL));
  check_bracketing();
}

/* ---- streams and events
 * ------------------------------------------------------------------------ */

FERRY_TEST(stream_work_stays_pending_until_the_stream_runs_and_keeps_its_order) {
  for (size_t e = 0; e < 2; e++) {
    struct Emu* emu = kEmus[e];
    enum { N = 256 };
    struct FerryDevice* cpu = device(ARROW_DEVICE_CPU, -1);
    struct FerryDevice* d = device(emu->device_type, 1);
    int64_t streams_before = emu->live_streams();
    void* stream = NULL;
    CHECK_EQ_INT(0, ferry_device_stream_create(d, &stream, NULL));
    CHECK_EQ_INT(streams_before + 1, emu->live_streams());
    void* on_device = NULL;
    CHECK_EQ_INT(0, ferry_device_allocate(d, N, &on_device, NULL));
    uint8_t source[N], back[N];
    fill_pattern(source, N, 9);
    memset(back, 0xEE, N);
    CHECK_EQ_INT(0, emu->gate_close(stream));
    CHECK_EQ_INT(0, ferry_device_memcpy(d, on_device, cpu, source, N, stream, NULL));
    /* The source may be reused at once (a pageable copy is staged). */
    memset(source + N / 2, 0, N / 2);
    CHECK_EQ_INT(0, ferry_device_memcpy(cpu, back, d, on_device, N, stream, NULL));
    /* Returned while the gate holds everything: nothing reached the host. */
    CHECK_EQ_INT(3, emu->stream_pending(stream));
    CHECK_EQ_INT(0xEE, back[0]);
    CHECK_EQ_INT(0xEE, back[N - 1]);
    emu->gates_open();
    CHECK_EQ_INT(0, ferry_device_stream_synchronize(d, stream, NULL));
    CHECK_EQ_INT(0, emu->stream_pending(stream));
    fill_pattern(source, N, 9);
    CHECK(memcmp(source, back, N) == 0);
    CHECK_EQ_INT(0, ferry_device_stream_destroy(d, stream, NULL));
    CHECK_EQ_INT(streams_before, emu->live_streams());
    CHECK_EQ_INT(0, ferry_device_deallocate(d, on_device, NULL));
    check_bracketing();
  }
}

FERRY_TEST(null_stream_synchronize_waits_for_every_stream_of_the_device) {
  for (size_t e = 0; e < 2; e++) {
    struct Emu* emu = kEmus[e];
    struct FerryDevice* d = device(emu->device_type, 0);
    void* stream = NULL;
    CHECK_EQ_INT(0, ferry_device_stream_create(d, &stream, NULL));
    void* on_device = NULL;
    CHECK_EQ_INT(0, ferry_device_allocate(d, 64, &on_device, NULL));
    uint8_t source[64] = {1, 2, 3};
    CHECK_EQ_INT(0, ferry_device_memcpy(d, on_device, device(ARROW_DEVICE_CPU, -1),
                                        source, 64, stream, NULL));
    CHECK_EQ_INT(0, ferry_device_stream_synchronize(d, NULL, NULL));
    CHECK_EQ_INT(0, emu->stream_pending(stream));
    CHECK_EQ_INT(0, ferry_device_stream_destroy(d, stream, NULL));
    CHECK_EQ_INT(0, ferry_device_deallocate(d, on_device, NULL));
    check_bracketing();
  }
}

FERRY_TEST(events_are_pointers_to_native_handles_and_complete_in_order) {
  for (size_t e = 0; e < 2; e++) {
    struct Emu* emu = kEmus[e];
    struct FerryDevice* d = device(emu->device_type, 0);
    int64_t events_before = emu->live_events();
    void* stream = NULL;
    void* event = NULL;
    CHECK_EQ_INT(0, ferry_device_stream_create(d, &stream, NULL));
    CHECK_EQ_INT(0, ferry_device_event_create(d, &event, NULL));
    CHECK_EQ_INT(events_before + 1, emu->live_events());
    void* handle = *(void**)event;            /* CUevent* / hipEvent_t* */
    CHECK_EQ_INT(1, emu->event_done(handle)); /* never recorded */
    CHECK_EQ_INT(0, emu->gate_close(stream));
    CHECK_EQ_INT(0, ferry_device_event_record(d, event, stream, NULL));
    CHECK_EQ_INT(0, emu->event_done(handle));
    emu->gates_open();
    CHECK_EQ_INT(0, ferry_device_event_synchronize(d, event, NULL));
    CHECK_EQ_INT(1, emu->event_done(handle));
    /* Recording on the NULL stream completes at once. */
    CHECK_EQ_INT(0, ferry_device_event_record(d, event, NULL, NULL));
    CHECK_EQ_INT(1, emu->event_done(handle));
    CHECK_EQ_INT(0, ferry_device_event_destroy(d, event, NULL));
    CHECK_EQ_INT(events_before, emu->live_events());
    CHECK_EQ_INT(0, ferry_device_stream_destroy(d, stream, NULL));
    check_bracketing();
  }
}

/* Builds a one-buffer int32 array of `n` values 0..n-1 on `d`, produced on
 * `stream` (behind a closed gate when `gated`), exported with `policy`. */
static void make_int32_array(struct FerryDevice* d, void* stream, int32_t policy,
                             int64_t n, struct ArrowSchema* schema,
                             struct ArrowDeviceArray* out, void** buffer_out);

struct OwnedBuffer {
  struct FerryDevice* device;
  void* pointer;
  int* released;
};

static void free_owned_buffer(void* user_data) {
  struct OwnedBuffer* owned = (struct OwnedBuffer*)user_data;
  ferry_device_deallocate(owned->device, owned->pointer, NULL);
  if (owned->released != NULL) (*owned->released)++;
  free(owned);
}

static int g_released_buffers;

static void make_int32_array(struct FerryDevice* d, void* stream, int32_t policy,
                             int64_t n, struct ArrowSchema* schema,
                             struct ArrowDeviceArray* out, void** buffer_out) {
  int32_t* values = (int32_t*)malloc((size_t)n * sizeof(int32_t) + 1);
  for (int64_t i = 0; i < n; i++) values[i] = (int32_t)(i * 3 + 1);
  struct OwnedBuffer* owned = (struct OwnedBuffer*)calloc(1, sizeof(*owned));
  owned->device = d;
  owned->released = &g_released_buffers;
  CHECK_EQ_INT(0, ferry_device_allocate(d, n * 4, &owned->pointer, NULL));
  CHECK_EQ_INT(0, ferry_device_memcpy(d, owned->pointer, device(ARROW_DEVICE_CPU, -1),
                                      values, n * 4, stream, NULL));
  free(values); /* the copy captured it */
  const void* buffers[2] = {NULL, owned->pointer};
  struct ArrowArray array;
  memset(&array, 0, sizeof array);
  CHECK_EQ_INT(0, ferry_array_init(&array, n, 0, 0, 2, buffers, 0, free_owned_buffer,
                                   owned, NULL));
  if (schema != NULL) CHECK_EQ_INT(0, ferry_schema_init(schema, "i", "x", 0, 0, NULL));
  struct FerryError error;
  ferry_error_init(&error);
  int rc = ferry_device_array_init_async(out, &array, d, stream, policy, &error);
  if (rc != 0) printf("init_async: %s\n", error.message);
  CHECK_EQ_INT(0, rc);
  if (buffer_out != NULL) *buffer_out = owned->pointer;
}

/* Checks that the array's values are (i + first) * 3 + 1, as made by
 * make_int32_array; `first` is the index of the first value it shows. */
static void check_int32_values_from(const struct ArrowDeviceArray* array, int64_t n,
                                    int64_t first) {
  struct FerryDevice* d = device(array->device_type, array->device_id);
  int32_t* back = (int32_t*)calloc((size_t)n + 1, sizeof(int32_t));
  CHECK_EQ_INT(0, ferry_device_memcpy(
                      device(ARROW_DEVICE_CPU, -1), back, d,
                      (const int32_t*)array->array.buffers[1] + array->array.offset,
                      n * 4, NULL, NULL));
  for (int64_t i = 0; i < n; i++) {
    if (back[i] != (int32_t)((i + first) * 3 + 1)) {
      free(back);
      CHECK(!"values differ");
    }
  }
  free(back);
}

static void check_int32_values(const struct ArrowDeviceArray* array, int64_t n) {
  check_int32_values_from(array, n, array->array.offset);
}

FERRY_TEST(export_policy_record_event_hands_out_an_event_owned_by_the_array) {
  for (size_t e = 0; e < 2; e++) {
    struct Emu* emu = kEmus[e];
    struct FerryDevice* d = device(emu->device_type, 0);
    void* stream = NULL;
    CHECK_EQ_INT(0, ferry_device_stream_create(d, &stream, NULL));
    int64_t events_before = events_in_use();
    struct ArrowDeviceArray array;
    memset(&array, 0, sizeof array);
    CHECK_EQ_INT(0, emu->gate_close(stream));
    make_int32_array(d, stream, FERRY_SYNC_RECORD_EVENT, 100, NULL, &array, NULL);
    CHECK(array.sync_event != NULL);
    CHECK_EQ_INT(events_before + 1, events_in_use());
    CHECK_EQ_INT(0, emu->event_done(*(void**)array.sync_event));
    CHECK_EQ_INT(emu->device_type, array.device_type);
    CHECK_EQ_INT(1, ferry_device_array_reserved_is_zero(&array));
    emu->gates_open();
    CHECK_EQ_INT(0, ferry_device_array_wait(&array, NULL, NULL)); /* the host waits */
    CHECK_EQ_INT(1, emu->event_done(*(void**)array.sync_event));
    check_int32_values(&array, 100);
    int released_before = g_released_buffers;
    ferry_device_array_release(&array);
    CHECK_EQ_INT(released_before + 1, g_released_buffers);
    /* The array no longer holds the event: it waits in the device's pool. */
    CHECK_EQ_INT(events_before, events_in_use());
    CHECK(ferry__device_pooled_events(d) >= 1);
    CHECK_EQ_INT(0, ferry_device_stream_destroy(d, stream, NULL));
    check_bracketing();
  }
}

FERRY_TEST(export_policy_synchronize_finishes_the_stream_and_exports_no_event) {
  for (size_t e = 0; e < 2; e++) {
    struct Emu* emu = kEmus[e];
    struct FerryDevice* d = device(emu->device_type, 1);
    void* stream = NULL;
    CHECK_EQ_INT(0, ferry_device_stream_create(d, &stream, NULL));
    int64_t events_before = emu->live_events();
    struct ArrowDeviceArray array;
    memset(&array, 0, sizeof array);
    make_int32_array(d, stream, FERRY_SYNC_SYNCHRONIZE, 50, NULL, &array, NULL);
    CHECK(array.sync_event == NULL);
    CHECK_EQ_INT(0, emu->stream_pending(stream));
    CHECK_EQ_INT(events_before, emu->live_events());
    check_int32_values(&array, 50);
    ferry_device_array_release(&array);
    CHECK_EQ_INT(0, ferry_device_stream_destroy(d, stream, NULL));
    check_bracketing();
  }
}

struct ProducerEvent {
  struct FerryDevice* device;
  void* event;
  int released;
};

static void release_producer_event(void* user_data) {
  struct ProducerEvent* p = (struct ProducerEvent*)user_data;
  ferry_device_event_destroy(p->device, p->event, NULL);
  p->released++;
}

FERRY_TEST(export_policy_pass_through_keeps_the_producers_event_until_release) {
  for (size_t e = 0; e < 2; e++) {
    struct Emu* emu = kEmus[e];
    struct FerryDevice* d = device(emu->device_type, 0);
    struct ProducerEvent producer = {d, NULL, 0};
    CHECK_EQ_INT(0, ferry_device_event_create(d, &producer.event, NULL));
    int64_t events_with_producer = emu->live_events();
    struct ArrowArray inner;
    memset(&inner, 0, sizeof inner);
    static const int32_t values[4] = {1, 2, 3, 4};
    const void* buffers[2] = {NULL, values};
    CHECK_EQ_INT(0, ferry_array_init(&inner, 4, 0, 0, 2, buffers, 0, NULL, NULL, NULL));
    struct ArrowDeviceArray array;
    memset(&array, 0, sizeof array);
    CHECK_EQ_INT(
        0, ferry_device_array_init(&array, &inner, emu->device_type, 0, producer.event,
                                   release_producer_event, &producer, NULL));
    CHECK(array.sync_event == producer.event);
    CHECK_EQ_INT(0, ferry_device_array_wait(&array, NULL, NULL));
    CHECK_EQ_INT(0, producer.released);
    CHECK_EQ_INT(events_with_producer, emu->live_events());
    ferry_device_array_release(&array);
    CHECK_EQ_INT(1, producer.released);
    CHECK_EQ_INT(events_with_producer - 1, emu->live_events());
    check_bracketing();
  }
}

/* ---- consumer stream handoff
 * ---------------------------------------------------------------------- */

FERRY_TEST(consumer_stream_waits_on_the_event_while_the_host_goes_on) {
  for (size_t e = 0; e < 2; e++) {
    struct Emu* emu = kEmus[e];
    enum { N = 64 };
    struct FerryDevice* d = device(emu->device_type, 0);
    struct FerryDevice* cpu = device(ARROW_DEVICE_CPU, -1);
    void *producer = NULL, *consumer = NULL;
    CHECK_EQ_INT(0, ferry_device_stream_create(d, &producer, NULL));
    CHECK_EQ_INT(0, ferry_device_stream_create(d, &consumer, NULL));
    CHECK_EQ_INT(0, emu->gate_close(producer));
    struct ArrowDeviceArray array;
    memset(&array, 0, sizeof array);
    void* buffer = NULL;
    make_int32_array(d, producer, FERRY_SYNC_RECORD_EVENT, N, NULL, &array, &buffer);
    /* The consumer orders its stream after the producer and returns. */
    CHECK_EQ_INT(0, ferry_device_array_wait(&array, consumer, NULL));
    CHECK_EQ_INT(0, emu->event_done(*(void**)array.sync_event));
    CHECK_EQ_INT(1, emu->stream_pending(consumer)); /* the queued wait */
    int32_t back[N];
    memset(back, 0xEE, sizeof back);
    CHECK_EQ_INT(0,
                 ferry_device_memcpy(cpu, back, d, buffer, sizeof back, consumer, NULL));
    /* Host returned with the producer still held by its gate. */
    CHECK_EQ_INT(2, emu->stream_pending(consumer));
    CHECK(emu->stream_pending(producer) >= 2);
    CHECK_EQ_INT((int32_t)0xEEEEEEEE, back[0]);
    emu->gates_open();
    CHECK_EQ_INT(0, ferry_device_stream_synchronize(d, consumer, NULL));
    for (int i = 0; i < N; i++) CHECK_EQ_INT(i * 3 + 1, back[i]);
    ferry_device_array_release(&array);
    CHECK_EQ_INT(0, ferry_device_stream_destroy(d, producer, NULL));
    CHECK_EQ_INT(0, ferry_device_stream_destroy(d, consumer, NULL));
    check_bracketing();
  }
}

FERRY_TEST(stream_get_next_on_hands_every_batch_to_the_consumer_stream) {
  for (size_t e = 0; e < 2; e++) {
    struct Emu* emu = kEmus[e];
    struct FerryDevice* d = device(emu->device_type, 1);
    void *producer = NULL, *consumer = NULL;
    CHECK_EQ_INT(0, ferry_device_stream_create(d, &producer, NULL));
    CHECK_EQ_INT(0, ferry_device_stream_create(d, &consumer, NULL));
    CHECK_EQ_INT(0, emu->gate_close(producer));
    struct ArrowSchema schema;
    memset(&schema, 0, sizeof schema);
    struct ArrowDeviceArray batches[3];
    memset(batches, 0, sizeof batches);
    for (int b = 0; b < 3; b++) {
      make_int32_array(d, producer, FERRY_SYNC_RECORD_EVENT, 10 + b,
                       b == 0 ? &schema : NULL, &batches[b], NULL);
    }
    struct ArrowDeviceArrayStream stream;
    memset(&stream, 0, sizeof stream);
    CHECK_EQ_INT(0, ferry_array_stream_init_from_arrays(&stream, emu->device_type, &schema,
                                                  batches, 3, NULL));
    int64_t waits_before =
        emu->calls(emu == &g_cuda ? "cuStreamWaitEvent" : "hipStreamWaitEvent");
    struct ArrowDeviceArray got[3];
    memset(got, 0, sizeof got);
    for (int b = 0; b < 3; b++) {
      CHECK_EQ_INT(0, ferry_array_stream_get_next_on(&stream, &got[b], consumer, NULL));
      CHECK(got[b].array.release != NULL);
      CHECK_EQ_INT(10 + b, got[b].array.length);
    }
    /* Three waits queued on the consumer, none satisfied: the host never
     * blocked although the producer is still gated. */
    CHECK_EQ_INT(waits_before + 3,
                 emu->calls(emu == &g_cuda ? "cuStreamWaitEvent" : "hipStreamWaitEvent"));
    CHECK_EQ_INT(3, emu->stream_pending(consumer));
    struct ArrowDeviceArray end;
    memset(&end, 0, sizeof end);
    CHECK_EQ_INT(0, ferry_array_stream_get_next_on(&stream, &end, consumer, NULL));
    CHECK(end.array.release == NULL);
    emu->gates_open();
    CHECK_EQ_INT(0, ferry_device_stream_synchronize(d, consumer, NULL));
    for (int b = 0; b < 3; b++) {
      check_int32_values(&got[b], 10 + b);
      ferry_device_array_release(&got[b]);
    }
    ferry_array_stream_release(&stream);
    CHECK_EQ_INT(0, ferry_device_stream_destroy(d, producer, NULL));
    CHECK_EQ_INT(0, ferry_device_stream_destroy(d, consumer, NULL));
    check_bracketing();
  }
}

FERRY_TEST(stream_get_next_on_with_a_failing_wait_returns_no_batch) {
  struct FerryDevice* d = device(ARROW_DEVICE_CUDA, 0);
  void *producer = NULL, *consumer = NULL;
  CHECK_EQ_INT(0, ferry_device_stream_create(d, &producer, NULL));
  CHECK_EQ_INT(0, ferry_device_stream_create(d, &consumer, NULL));
  struct ArrowSchema schema;
  memset(&schema, 0, sizeof schema);
  struct ArrowDeviceArray batch;
  memset(&batch, 0, sizeof batch);
  int released_before = g_released_buffers;
  make_int32_array(d, producer, FERRY_SYNC_RECORD_EVENT, 5, &schema, &batch, NULL);
  struct ArrowDeviceArrayStream stream;
  memset(&stream, 0, sizeof stream);
  CHECK_EQ_INT(0, ferry_array_stream_init_from_arrays(&stream, ARROW_DEVICE_CUDA, &schema,
                                                &batch, 1, NULL));
  g_cuda.fail("cuStreamWaitEvent", 1, 999);
  struct FerryError error;
  ferry_error_init(&error);
  struct ArrowDeviceArray got;
  memset(&got, 0, sizeof got);
  CHECK_EQ_INT(EIO, ferry_array_stream_get_next_on(&stream, &got, consumer, &error));
  CHECK_CONTAINS(error.message, "[cuStreamWaitEvent][CUDA_ERROR_UNKNOWN]");
  CHECK(got.array.release == NULL);
  CHECK_EQ_INT(released_before + 1, g_released_buffers);
  ferry_array_stream_release(&stream);
  CHECK_EQ_INT(0, ferry_device_stream_destroy(d, producer, NULL));
  CHECK_EQ_INT(0, ferry_device_stream_destroy(d, consumer, NULL));
  check_bracketing();
}

/* ---- injected driver failures
 * ------------------------------------------------------------------------ */

/* One injected failure: `entry` fails on its next call while `action` runs;
 * the action must report EIO (or `expected_errno`) naming entry and code,
 * and leave nothing behind in the emulation. */
struct Injection {
  struct Emu* emu;
  const char* entry;
  int (*action)(struct Emu* emu, struct FerryError* error);
  const char* expected_name; /* the code's name in the message */
};

static struct FerryDevice* main_device(struct Emu* emu) {
  return device(emu->device_type, 0);
}

static int act_allocate(struct Emu* emu, struct FerryError* error) {
  void* p = NULL;
  int rc = ferry_device_allocate(main_device(emu), 100, &p, error);
  if (rc == 0) ferry_device_deallocate(main_device(emu), p, NULL);
  return rc;
}
static int act_allocate_host(struct Emu* emu, struct FerryError* error) {
  void* p = NULL;
  struct FerryDevice* d = device(emu->host_type, 0);
  int rc = ferry_device_allocate(d, 100, &p, error);
  if (rc == 0) ferry_device_deallocate(d, p, NULL);
  return rc;
}
static int act_allocate_managed(struct Emu* emu, struct FerryError* error) {
  void* p = NULL;
  struct FerryDevice* d = device(ARROW_DEVICE_CUDA_MANAGED, 0);
  int rc = ferry_device_allocate(d, 100, &p, error);
  if (rc == 0) ferry_device_deallocate(d, p, NULL);
  return rc;
}
/* The free fails; the memory is still there and is freed afterwards. */
static int act_deallocate_on(struct FerryDevice* d, struct FerryError* error) {
  void* p = NULL;
  if (ferry_device_allocate(d, 100, &p, NULL) != 0) return -1;
  int rc = ferry_device_deallocate(d, p, error);
  if (rc != 0 && ferry_device_deallocate(d, p, NULL) != 0) return -2;
  return rc;
}
static int act_deallocate(struct Emu* emu, struct FerryError* error) {
  return act_deallocate_on(main_device(emu), error);
}
static int act_deallocate_host(struct Emu* emu, struct FerryError* error) {
  return act_deallocate_on(device(emu->host_type, 0), error);
}
static int copy_with(struct Emu* emu, int direction, void* stream,
                     struct FerryError* error) {
  struct FerryDevice* cpu = device(ARROW_DEVICE_CPU, -1);
  struct FerryDevice* d0 = main_device(emu);
  struct FerryDevice* d1 = device(emu->device_type, 1);
  void *a = NULL, *b = NULL;
  uint8_t host[32] = {0};
  ferry_device_allocate(d0, 32, &a, NULL);
  ferry_device_allocate(d1, 32, &b, NULL);
  int rc;
  switch (direction) {
    case 0:
      rc = ferry_device_memcpy(d0, a, cpu, host, 32, stream, error);
      break;
    case 1:
      rc = ferry_device_memcpy(cpu, host, d0, a, 32, stream, error);
      break;
    case 2:
      rc = ferry_device_memcpy(d0, a, d0, a, 32, stream, error);
      break;
    default:
      rc = ferry_device_memcpy(d1, b, d0, a, 32, stream, error);
      break;
  }
  ferry_device_deallocate(d0, a, NULL);
  ferry_device_deallocate(d1, b, NULL);
  return rc;
}
static int act_copy_htod(struct Emu* emu, struct FerryError* error) {
  return copy_with(emu, 0, NULL, error);
}
static int act_copy_dtoh(struct Emu* emu, struct FerryError* error) {
  return copy_with(emu, 1, NULL, error);
}
static int act_copy_dtod(struct Emu* emu, struct FerryError* error) {
  return copy_with(emu, 2, NULL, error);
}
static int act_copy_peer(struct Emu* emu, struct FerryError* error) {
  return copy_with(emu, 3, NULL, error);
}
static int act_stream_create(struct Emu* emu, struct FerryError* error) {
  void* s = NULL;
  int rc = ferry_device_stream_create(main_device(emu), &s, error);
  if (rc == 0) ferry_device_stream_destroy(main_device(emu), s, NULL);
  return rc;
}
static int act_stream_destroy(struct Emu* emu, struct FerryError* error) {
  void* s = NULL;
  if (ferry_device_stream_create(main_device(emu), &s, NULL) != 0) return -1;
  int rc = ferry_device_stream_destroy(main_device(emu), s, error);
  if (rc != 0 && ferry_device_stream_destroy(main_device(emu), s, NULL) != 0) return -2;
  return rc;
}
static int act_stream_synchronize(struct Emu* emu, struct FerryError* error) {
  void* s = NULL;
  if (ferry_device_stream_create(main_device(emu), &s, NULL) != 0) return -1;
  int rc = ferry_device_stream_synchronize(main_device(emu), s, error);
  ferry_device_stream_destroy(main_device(emu), s, NULL);
  return rc;
}
static int act_device_synchronize(struct Emu* emu, struct FerryError* error) {
  return ferry_device_stream_synchronize(main_device(emu), NULL, error);
}
static int act_event_create(struct Emu* emu, struct FerryError* error) {
  void* ev = NULL;
  int rc = ferry_device_event_create(main_device(emu), &ev, error);
  if (rc == 0) ferry_device_event_destroy(main_device(emu), ev, NULL);
  return rc;
}
static int act_event_destroy(struct Emu* emu, struct FerryError* error) {
  void* ev = NULL;
  if (ferry_device_event_create(main_device(emu), &ev, NULL) != 0) return -1;
  int rc = ferry_device_event_destroy(main_device(emu), ev, error);
  /* On failure the event is still the caller's: destroying again works. */
  if (rc != 0 && ferry_device_event_destroy(main_device(emu), ev, NULL) != 0) return -2;
  return rc;
}
static int with_event_and_stream(struct Emu* emu, int what, struct FerryError* error) {
  void *ev = NULL, *s = NULL;
  struct FerryDevice* d = main_device(emu);
  if (ferry_device_event_create(d, &ev, NULL) != 0) return -1;
  if (ferry_device_stream_create(d, &s, NULL) != 0) return -1;
  int rc;
  if (what == 0) {
    rc = ferry_device_event_record(d, ev, s, error);
  } else if (what == 1) {
    ferry_device_event_record(d, ev, s, NULL);
    rc = ferry_device_event_synchronize(d, ev, error);
  } else {
    ferry_device_event_record(d, ev, s, NULL);
    rc = ferry_device_stream_wait_event(d, s, ev, error);
  }
  ferry_device_stream_destroy(d, s, NULL);
  ferry_device_event_destroy(d, ev, NULL);
  return rc;
}
static int act_event_record(struct Emu* emu, struct FerryError* error) {
  return with_event_and_stream(emu, 0, error);
}
static int act_event_synchronize(struct Emu* emu, struct FerryError* error) {
  return with_event_and_stream(emu, 1, error);
}
static int act_stream_wait_event(struct Emu* emu, struct FerryError* error) {
  return with_event_and_stream(emu, 2, error);
}
/* The backend's residency answer for a fresh 64-byte allocation of `d`. */
static int check_one_pointer(struct FerryDevice* d, struct FerryError* error) {
  void* p = NULL;
  if (ferry_device_allocate(d, 64, &p, NULL) != 0) return -1;
  int rc = ferry__device_check_pointer(d, p, 64, error);
  ferry_device_deallocate(d, p, NULL);
  return rc;
}
static int act_check_pointer(struct Emu* emu, struct FerryError* error) {
  return check_one_pointer(main_device(emu), error);
}

static const struct Injection kInjections[] = {
    {&g_cuda, "cuMemAlloc_v2", act_allocate, "CUDA_ERROR_OUT_OF_MEMORY"},
    {&g_cuda, "cuMemAllocHost_v2", act_allocate_host, "CUDA_ERROR_OUT_OF_MEMORY"},
    {&g_cuda, "cuMemAllocManaged", act_allocate_managed, "CUDA_ERROR_OUT_OF_MEMORY"},
    {&g_cuda, "cuMemFree_v2", act_deallocate, "CUDA_ERROR_UNKNOWN"},
    {&g_cuda, "cuMemFreeHost", act_deallocate_host, "CUDA_ERROR_UNKNOWN"},
    {&g_cuda, "cuMemcpyHtoDAsync_v2", act_copy_htod, "CUDA_ERROR_UNKNOWN"},
    {&g_cuda, "cuMemcpyDtoHAsync_v2", act_copy_dtoh, "CUDA_ERROR_UNKNOWN"},
    {&g_cuda, "cuMemcpyDtoDAsync_v2", act_copy_dtod, "CUDA_ERROR_UNKNOWN"},
    {&g_cuda, "cuMemcpyPeerAsync", act_copy_peer, "CUDA_ERROR_UNKNOWN"},
    {&g_cuda, "cuStreamSynchronize", act_copy_htod, "CUDA_ERROR_UNKNOWN"},
    {&g_cuda, "cuStreamSynchronize", act_stream_synchronize, "CUDA_ERROR_UNKNOWN"},
    {&g_cuda, "cuStreamCreate", act_stream_create, "CUDA_ERROR_UNKNOWN"},
    {&g_cuda, "cuStreamDestroy_v2", act_stream_destroy, "CUDA_ERROR_UNKNOWN"},
    {&g_cuda, "cuCtxSynchronize", act_device_synchronize, "CUDA_ERROR_UNKNOWN"},
    {&g_cuda, "cuEventCreate", act_event_create, "CUDA_ERROR_UNKNOWN"},
    {&g_cuda, "cuEventDestroy_v2", act_event_destroy, "CUDA_ERROR_UNKNOWN"},
    {&g_cuda, "cuEventRecord", act_event_record, "CUDA_ERROR_UNKNOWN"},
    {&g_cuda, "cuEventSynchronize", act_event_synchronize, "CUDA_ERROR_UNKNOWN"},
    {&g_cuda, "cuStreamWaitEvent", act_stream_wait_event, "CUDA_ERROR_UNKNOWN"},
    {&g_cuda, "cuCtxPushCurrent_v2", act_allocate, "CUDA_ERROR_UNKNOWN"},
    {&g_cuda, "cuCtxPushCurrent_v2", act_event_create, "CUDA_ERROR_UNKNOWN"},
    {&g_cuda, "cuCtxGetCurrent", act_allocate, "CUDA_ERROR_UNKNOWN"},
    {&g_cuda, "cuPointerGetAttribute", act_check_pointer, "CUDA_ERROR_UNKNOWN"},
    {&g_hip, "hipMalloc", act_allocate, "hipErrorOutOfMemory"},
    {&g_hip, "hipHostMalloc", act_allocate_host, "hipErrorOutOfMemory"},
    {&g_hip, "hipFree", act_deallocate, "hipErrorUnknown"},
    {&g_hip, "hipHostFree", act_deallocate_host, "hipErrorUnknown"},
    {&g_hip, "hipMemcpyAsync", act_copy_htod, "hipErrorUnknown"},
    {&g_hip, "hipMemcpyPeerAsync", act_copy_peer, "hipErrorUnknown"},
    {&g_hip, "hipStreamSynchronize", act_copy_dtoh, "hipErrorUnknown"},
    {&g_hip, "hipStreamSynchronize", act_stream_synchronize, "hipErrorUnknown"},
    {&g_hip, "hipStreamCreateWithFlags", act_stream_create, "hipErrorUnknown"},
    {&g_hip, "hipStreamDestroy", act_stream_destroy, "hipErrorUnknown"},
    {&g_hip, "hipDeviceSynchronize", act_device_synchronize, "hipErrorUnknown"},
    {&g_hip, "hipEventCreateWithFlags", act_event_create, "hipErrorUnknown"},
    {&g_hip, "hipEventDestroy", act_event_destroy, "hipErrorUnknown"},
    {&g_hip, "hipEventRecord", act_event_record, "hipErrorUnknown"},
    {&g_hip, "hipEventSynchronize", act_event_synchronize, "hipErrorUnknown"},
    {&g_hip, "hipStreamWaitEvent", act_stream_wait_event, "hipErrorUnknown"},
    {&g_hip, "hipGetDevice", act_allocate, "hipErrorUnknown"},
    {&g_hip, "hipGetDevice", act_event_create, "hipErrorUnknown"},
    {&g_hip, "hipPointerGetAttributes", act_check_pointer, "hipErrorUnknown"},
    {&g_hip, "hipMemGetAddressRange", act_check_pointer, "hipErrorUnknown"},
};

/* Out of memory is ENOMEM (as ferry.h promises), every other failure EIO. */
static int is_out_of_memory(const char* name) {
  return strstr(name, "OUT_OF_MEMORY") != NULL || strstr(name, "OutOfMemory") != NULL;
}

FERRY_TEST(every_injected_driver_failure_is_reported_with_its_name_and_leaks_nothing) {
  for (size_t i = 0; i < sizeof kInjections / sizeof kInjections[0]; i++) {
    const struct Injection* inj = &kInjections[i];
    struct Emu* emu = inj->emu;
    /* Warm up (lazy registry entries) so the counts compare like with like. */
    CHECK_EQ_INT(0, inj->action(emu, NULL));
    int64_t allocations = emu->live_allocations(), streams = emu->live_streams(),
            events = emu->live_events();
    int64_t ferry_allocations = ferry_device_live_allocations(main_device(emu));
    int64_t calls_before = emu->calls(inj->entry);
    int oom = is_out_of_memory(inj->expected_name);
    emu->fail(inj->entry, 1, oom ? 2u : 999u);
    struct FerryError error;
    ferry_error_init(&error);
    int rc = inj->action(emu, &error);
    emu->clear_failures();
    char expected[128];
    snprintf(expected, sizeof expected, "[%s][%s]", inj->entry, inj->expected_name);
    int expected_errno = oom ? ENOMEM : EIO;
    if (rc != expected_errno || strstr(error.message, expected) == NULL) {
      printf("  injection %s: rc %d, message \"%s\"\n", inj->entry, rc, error.message);
    }
    CHECK(emu->calls(inj->entry) > calls_before); /* the entry point really ran */
    CHECK_EQ_INT(expected_errno, rc);
    CHECK_CONTAINS(error.message, expected);
    CHECK_EQ_INT(allocations, emu->live_allocations());
    CHECK_EQ_INT(streams, emu->live_streams());
    CHECK_EQ_INT(events, emu->live_events());
    CHECK_EQ_INT(ferry_allocations, ferry_device_live_allocations(main_device(emu)));
    check_bracketing();
  }
}

FERRY_TEST(no_device_codes_map_to_enodev) {
  g_cuda.fail("cuMemAlloc_v2", 1, 100); /* CUDA_ERROR_NO_DEVICE */
  struct FerryError error;
  ferry_error_init(&error);
  CHECK_EQ_INT(ENODEV, act_allocate(&g_cuda, &error));
  CHECK_CONTAINS(error.message, "[cuMemAlloc_v2][CUDA_ERROR_NO_DEVICE]");
  g_hip.fail("hipMalloc", 1, 101);
  CHECK_EQ_INT(ENODEV, act_allocate(&g_hip, &error));
  CHECK_CONTAINS(error.message, "[hipMalloc][hipErrorInvalidDevice]");
  g_cuda.fail("cuMemAlloc_v2", 1, 4242); /* a code ferry has no name for */
  CHECK_EQ_INT(EIO, act_allocate(&g_cuda, &error));
  CHECK_CONTAINS(error.message, "[cuMemAlloc_v2][CUresult 4242]");
  check_bracketing();
}

FERRY_TEST(a_failing_context_pop_is_reported_and_the_allocation_given_back) {
  int64_t allocations = g_cuda.live_allocations();
  g_cuda.fail("cuCtxPopCurrent_v2", 1, 999);
  struct FerryError error;
  ferry_error_init(&error);
  CHECK_EQ_INT(EIO, act_allocate(&g_cuda, &error));
  CHECK_CONTAINS(error.message, "[cuCtxPopCurrent_v2][CUDA_ERROR_UNKNOWN]");
  CHECK_EQ_INT(allocations, g_cuda.live_allocations());
  /* The emulated pop failed without popping: restore this thread's stack. */
  typedef unsigned (*pop_fn)(void**);
  pop_fn pop = (pop_fn)dlsym(g_cuda.handle, "cuCtxPopCurrent_v2");
  CHECK_EQ_INT(1, g_cuda.context_depth());
  CHECK_EQ_INT(0, pop(NULL));
  /* HIP: restoring the caller's device fails after the work succeeded. */
  struct FerryDevice* d1 = device(ARROW_DEVICE_ROCM, 1);
  int64_t hip_allocations = g_hip.live_allocations();
  g_hip.fail("hipSetDevice", 2, 999); /* the first sets device 1, the second restores 0 */
  void* p = NULL;
  CHECK_EQ_INT(EIO, ferry_device_allocate(d1, 10, &p, &error));
  CHECK_CONTAINS(error.message, "[hipSetDevice][hipErrorUnknown]");
  CHECK_CONTAINS(error.message, "restoring the caller's current device 0");
  CHECK_EQ_INT(hip_allocations, g_hip.live_allocations());
  typedef unsigned (*set_fn)(int);
  set_fn set_device = (set_fn)dlsym(g_hip.handle, "hipSetDevice");
  CHECK_EQ_INT(0, set_device(0));
  g_hip.clear_failures();
  check_bracketing();
}

FERRY_TEST(failing_restores_after_creating_streams_and_events_give_them_back) {
  typedef unsigned (*pop_fn)(void**);
  pop_fn pop = (pop_fn)dlsym(g_cuda.handle, "cuCtxPopCurrent_v2");
  struct FerryError error;
  ferry_error_init(&error);
  struct FerryDevice* d = device(ARROW_DEVICE_CUDA, 0);
  int64_t streams = g_cuda.live_streams(), events = g_cuda.live_events();
  void* out = NULL;
  g_cuda.fail("cuCtxPopCurrent_v2", 1, 999);
  CHECK_EQ_INT(EIO, ferry_device_stream_create(d, &out, &error));
  CHECK_CONTAINS(error.message, "[cuCtxPopCurrent_v2][CUDA_ERROR_UNKNOWN]");
  CHECK_EQ_INT(0, pop(NULL));
  CHECK_EQ_INT(streams, g_cuda.live_streams());
  g_cuda.fail("cuCtxPopCurrent_v2", 1, 999);
  CHECK_EQ_INT(EIO, ferry_device_event_create(d, &out, &error));
  CHECK_EQ_INT(0, pop(NULL));
  CHECK_EQ_INT(events, g_cuda.live_events());

  typedef unsigned (*set_fn)(int);
  set_fn set_device = (set_fn)dlsym(g_hip.handle, "hipSetDevice");
  struct FerryDevice* h1 = device(ARROW_DEVICE_ROCM, 1);
  streams = g_hip.live_streams();
  events = g_hip.live_events();
  g_hip.fail("hipSetDevice", 2, 999);
  CHECK_EQ_INT(EIO, ferry_device_stream_create(h1, &out, &error));
  CHECK_EQ_INT(0, set_device(0));
  CHECK_EQ_INT(streams, g_hip.live_streams());
  g_hip.fail("hipSetDevice", 2, 999);
  CHECK_EQ_INT(EIO, ferry_device_event_create(h1, &out, &error));
  CHECK_EQ_INT(0, set_device(0));
  CHECK_EQ_INT(events, g_hip.live_events());
  /* Entering fails: nothing was done at all. */
  g_hip.fail("hipSetDevice", 1, 101);
  CHECK_EQ_INT(ENODEV, ferry_device_allocate(h1, 8, &out, &error));
  CHECK_CONTAINS(error.message, "[hipSetDevice][hipErrorInvalidDevice]");
  CHECK_CONTAINS(error.message, "making rocm device 1 current");
  g_hip.fail("hipMalloc", 1, 4242);
  CHECK_EQ_INT(EIO, ferry_device_allocate(device(ARROW_DEVICE_ROCM, 0), 8, &out, &error));
  CHECK_CONTAINS(error.message, "[hipMalloc][hipError_t 4242]");
  g_hip.clear_failures();
  g_cuda.clear_failures();
  check_bracketing();
}

/* ---- the HIP current device
 * ------------------------------------------------------------------------ */

FERRY_TEST(rocm_calls_leave_the_callers_current_device_alone) {
  typedef unsigned (*set_fn)(int);
  set_fn set_device = (set_fn)dlsym(g_hip.handle, "hipSetDevice");
  CHECK_EQ_INT(0, set_device(1));
  void* p = NULL;
  struct FerryDevice* d0 = device(ARROW_DEVICE_ROCM, 0);
  CHECK_EQ_INT(0, ferry_device_allocate(d0, 16, &p, NULL));
  CHECK_EQ_INT(0, g_hip.pointer_device(p)); /* allocated on ferry's device */
  CHECK_EQ_INT(1, g_hip.current_device());  /* the caller's is back */
  CHECK_EQ_INT(0, ferry_device_deallocate(d0, p, NULL));
  CHECK_EQ_INT(1, g_hip.current_device());
  CHECK_EQ_INT(0, set_device(0));
  check_bracketing();
}

/* ---- residency in validation
 * ------------------------------------------------------------------------- */

struct Findings {
  int count;
  char first[512];
};

static void collect(void* user_data, const char* rule, const char* where,
                    const char* what) {
  struct Findings* f = (struct Findings*)user_data;
  if (f->count++ == 0)
    snprintf(f->first, sizeof f->first, "%s: %s: %s", rule, where, what);
}

/* Validates an int32 array of `length` values from `offset` on, whose data
 * buffer is `p`, declared to live on (type, id). */
static int validate_declared_at(void* p, int64_t length, int64_t offset,
                                ArrowDeviceType type, int64_t id,
                                struct Findings* findings) {
  struct ArrowSchema schema;
  struct ArrowDeviceArray array;
  int32_view(p, length, offset, type, id, &schema, &array);
  memset(findings, 0, sizeof *findings);
  int rc = ferry_validate_device_array(&schema, &array, FERRY_VALIDATE_DEFAULT, collect,
                                       findings, NULL);
  ferry_device_array_release(&array);
  ferry_schema_release(&schema);
  return rc;
}

static int validate_declared(void* p, int64_t length, ArrowDeviceType type, int64_t id,
                             struct Findings* findings) {
  return validate_declared_at(p, length, 0, type, id, findings);
}

FERRY_TEST(validation_checks_residency_on_cuda_and_rocm) {
  struct Findings f;
  struct {
    ArrowDeviceType allocated_type;
    int64_t allocated_id;
    ArrowDeviceType declared_type;
    int64_t declared_id;
    const char* expected; /* NULL: clean */
  } cases[] = {
      {ARROW_DEVICE_CUDA, 0, ARROW_DEVICE_CUDA, 0, NULL},
      {ARROW_DEVICE_CUDA, 1, ARROW_DEVICE_CUDA, 0, "(it is cuda device 1 memory)"},
      {ARROW_DEVICE_CUDA_HOST, 0, ARROW_DEVICE_CUDA, 0,
       "(it is cuda_host (pinned host) memory)"},
      {ARROW_DEVICE_CUDA, 0, ARROW_DEVICE_CUDA_HOST, 0, "(it is cuda device 0 memory)"},
      {ARROW_DEVICE_CUDA_HOST, 1, ARROW_DEVICE_CUDA_HOST, 1, NULL},
      {ARROW_DEVICE_CUDA_MANAGED, 1, ARROW_DEVICE_CUDA_MANAGED, 0, NULL},
      /* Managed memory declared as cuda is what RMM and cuDF export: valid,
       * and reachable from every device. */
      {ARROW_DEVICE_CUDA_MANAGED, 0, ARROW_DEVICE_CUDA, 0, NULL},
      {ARROW_DEVICE_CUDA_MANAGED, 1, ARROW_DEVICE_CUDA, 0, NULL},
      {ARROW_DEVICE_CUDA_MANAGED, 0, ARROW_DEVICE_CUDA_HOST, 0,
       "(it is cuda_managed memory (of device 0))"},
      {ARROW_DEVICE_CUDA, 1, ARROW_DEVICE_CUDA_MANAGED, 1, "(it is cuda device 1 memory)"},
      {ARROW_DEVICE_ROCM, 0, ARROW_DEVICE_ROCM, 0, NULL},
      {ARROW_DEVICE_ROCM, 1, ARROW_DEVICE_ROCM, 0, "(it is rocm device 1 memory)"},
      {ARROW_DEVICE_ROCM_HOST, 0, ARROW_DEVICE_ROCM, 1,
       "(it is rocm_host (pinned host) memory)"},
      {ARROW_DEVICE_ROCM_HOST, 1, ARROW_DEVICE_ROCM_HOST, 0, NULL},
      {ARROW_DEVICE_CUDA, 0, ARROW_DEVICE_ROCM, 0, "the HIP runtime does not know it"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    struct FerryDevice* owner = device(cases[i].allocated_type, cases[i].allocated_id);
    void* p = NULL;
    CHECK_EQ_INT(0, ferry_device_allocate(owner, 40, &p, NULL));
    int rc = validate_declared(p, 10, cases[i].declared_type, cases[i].declared_id, &f);
    if ((cases[i].expected == NULL) != (rc == 0)) printf("  case %zu: %s\n", i, f.first);
    if (cases[i].expected == NULL) {
      CHECK_EQ_INT(0, rc);
      CHECK_EQ_INT(0, f.count);
    } else {
      CHECK_EQ_INT(EINVAL, rc);
      CHECK_EQ_INT(1, f.count);
      CHECK_CONTAINS(f.first, cases[i].expected);
    }
    /* Twice the values fit no allocation: the range runs past its end. */
    if (cases[i].expected == NULL) {
      CHECK_EQ_INT(EINVAL, validate_declared(p, 20, cases[i].declared_type,
                                             cases[i].declared_id, &f));
      CHECK_CONTAINS(f.first, "runs past the end of its 40-byte allocation");
    }
    CHECK_EQ_INT(0, ferry_device_deallocate(owner, p, NULL));
  }
  /* Plain host memory declared as device memory. */
  int32_t host[10] = {0};
  CHECK_EQ_INT(EINVAL, validate_declared(host, 10, ARROW_DEVICE_CUDA, 1, &f));
  CHECK_CONTAINS(f.first, "the CUDA driver does not know it");
  CHECK_EQ_INT(EINVAL, validate_declared(host, 10, ARROW_DEVICE_ROCM_HOST, 0, &f));
  CHECK_CONTAINS(f.first, "the HIP runtime does not know it");
  check_bracketing();
}

/* A driver that cannot answer the residency question leaves the buffer's
 * residency unknown: validation reports it instead of passing silently. */
FERRY_TEST(validation_reports_a_residency_check_the_driver_could_not_answer) {
  struct Findings f;
  struct FerryDevice* cuda = device(ARROW_DEVICE_CUDA, 0);
  void* p = NULL;
  CHECK_EQ_INT(0, ferry_device_allocate(cuda, 40, &p, NULL));
  g_cuda.fail("cuPointerGetAttribute", 1, 999u);
  int rc = validate_declared(p, 10, ARROW_DEVICE_CUDA, 0, &f);
  g_cuda.clear_failures();
  CHECK_EQ_INT(EINVAL, rc);
  CHECK_EQ_INT(1, f.count);
  CHECK_CONTAINS(f.first, "residency could not be checked");
  CHECK_CONTAINS(f.first, "[cuPointerGetAttribute][CUDA_ERROR_UNKNOWN]");
  /* With the driver answering again the same array is clean. */
  CHECK_EQ_INT(0, validate_declared(p, 10, ARROW_DEVICE_CUDA, 0, &f));
  CHECK_EQ_INT(0, ferry_device_deallocate(cuda, p, NULL));
  check_bracketing();
}

FERRY_TEST(residency_names_memory_types_ferry_does_not_allocate) {
  typedef int (*override_fn)(const void*, int, int);
  override_fn cuda_override =
      (override_fn)dlsym(g_cuda.handle, "cuda_emu_override_report");
  override_fn hip_override = (override_fn)dlsym(g_hip.handle, "hip_emu_override_report");
  CHECK(cuda_override != NULL && hip_override != NULL);
  struct FerryError error;
  ferry_error_init(&error);
  struct FerryDevice* cuda = device(ARROW_DEVICE_CUDA, 0);
  struct FerryDevice* rocm = device(ARROW_DEVICE_ROCM, 0);
  void *c = NULL, *r = NULL;
  CHECK_EQ_INT(0, ferry_device_allocate(cuda, 16, &c, NULL));
  CHECK_EQ_INT(0, ferry_device_allocate(rocm, 16, &r, NULL));
  CHECK_EQ_INT(0, cuda_override(c, 3, -1)); /* CU_MEMORYTYPE_ARRAY */
  CHECK_EQ_INT(EFAULT, ferry__device_check_pointer(cuda, c, 16, &error));
  CHECK_CONTAINS(error.message, "(it is CUDA memory of type 3)");
  CHECK_EQ_INT(0, hip_override(r, -1, 1)); /* hipMallocManaged memory */
  /* Arrow has no rocm_managed: managed memory is declared as rocm, and only
   * as rocm. */
  CHECK_EQ_INT(0, ferry__device_check_pointer(rocm, r, 16, &error));
  CHECK_EQ_INT(0, ferry__device_check_pointer(device(ARROW_DEVICE_ROCM, 1), r, 16, &error));
  CHECK_EQ_INT(EFAULT,
               ferry__device_check_pointer(device(ARROW_DEVICE_ROCM_HOST, 0), r, 16, &error));
  CHECK_CONTAINS(error.message, "(it is managed memory of device 0)");
  /* Type 3 is hipMemoryTypeManaged in HIP 6, hipMemoryTypeUnified before. */
  const char* version = getenv("FERRY_HIP_EMU_RUNTIME_VERSION");
  int hip6 = version == NULL || atoi(version) >= 60000000;
  CHECK_EQ_INT(0, hip_override(r, 3, 0));
  CHECK_EQ_INT(hip6 ? 0 : EFAULT, ferry__device_check_pointer(rocm, r, 16, &error));
  if (!hip6) CHECK_CONTAINS(error.message, "(it is HIP memory of type 3)");
  CHECK_EQ_INT(0, hip_override(r, 10, 0)); /* hipMemoryTypeArray (HIP 6) */
  CHECK_EQ_INT(EFAULT, ferry__device_check_pointer(rocm, r, 16, &error));
  CHECK_CONTAINS(error.message, "(it is HIP memory of type 10)");
  CHECK_EQ_INT(0, ferry_device_deallocate(cuda, c, NULL));
  CHECK_EQ_INT(0, ferry_device_deallocate(rocm, r, NULL));
  check_bracketing();
}

FERRY_TEST(rocm_host_memory_without_an_address_range_is_still_resident) {
  g_hip.fail("hipMemGetAddressRange", 1, 500);
  struct FerryError error;
  ferry_error_init(&error);
  CHECK_EQ_INT(0, check_one_pointer(device(ARROW_DEVICE_ROCM_HOST, 0), &error));
  g_hip.clear_failures();
  check_bracketing();
}

/* ---- what real producers export: managed memory, end pointers, exact sizes
 * ------------------------------------------------------------------------- */

static const ArrowDeviceType kGpuTypes[] = {ARROW_DEVICE_CUDA, ARROW_DEVICE_CUDA_HOST,
                                            ARROW_DEVICE_CUDA_MANAGED, ARROW_DEVICE_ROCM,
                                            ARROW_DEVICE_ROCM_HOST};
#define N_GPU_TYPES (sizeof kGpuTypes / sizeof kGpuTypes[0])

FERRY_TEST(an_empty_buffer_one_past_the_end_of_its_allocation_is_resident) {
  for (size_t t = 0; t < N_GPU_TYPES; t++) {
    ArrowDeviceType type = kGpuTypes[t];
    struct FerryDevice* d = device(type, 1);
    struct FerryError error;
    ferry_error_init(&error);
    struct Findings f;
    void* p = NULL;
    CHECK_EQ_INT(0, ferry_device_allocate(d, 40, &p, NULL));
    char* end = (char*)p + 40;
    int rc = ferry__device_check_pointer(d, end, 0, &error);
    if (rc != 0) printf("  %s: %s\n", ferry_device_type_name(type), error.message);
    CHECK_EQ_INT(0, rc);
    /* What the validator sees: an empty int32 array whose data is the end. */
    CHECK_EQ_INT(0, validate_declared(end, 0, type, 1, &f));
    CHECK_EQ_INT(0, f.count);
    /* One byte further is not the end of anything the driver knows. */
    CHECK_EQ_INT(EFAULT, ferry__device_check_pointer(d, end + 1, 0, &error));
    /* Only an empty range may start there. */
    CHECK_EQ_INT(EFAULT, ferry__device_check_pointer(d, end, 4, &error));
    /* The allocation before the end pointer must itself be resident. */
    if (type == ARROW_DEVICE_CUDA || type == ARROW_DEVICE_ROCM) {
      CHECK_EQ_INT(EFAULT, ferry__device_check_pointer(device(type, 0), end, 0, &error));
      CHECK_EQ_INT(EINVAL, validate_declared(end, 0, type, 0, &f));
      CHECK_CONTAINS(f.first, "is not on");
    }
    CHECK_EQ_INT(0, ferry_device_deallocate(d, p, NULL));
  }
  /* An empty buffer in plain host memory is still not device memory. */
  int32_t host[4] = {0};
  struct Findings f;
  CHECK_EQ_INT(EINVAL, validate_declared(host + 4, 0, ARROW_DEVICE_CUDA, 0, &f));
  CHECK_EQ_INT(EINVAL, validate_declared(host + 4, 0, ARROW_DEVICE_ROCM, 0, &f));
  check_bracketing();
}

FERRY_TEST(a_declared_length_longer_than_the_allocation_is_refused) {
  for (size_t t = 0; t < N_GPU_TYPES; t++) {
    ArrowDeviceType type = kGpuTypes[t];
    struct FerryDevice* d = device(type, 0);
    struct FerryError error;
    ferry_error_init(&error);
    struct Findings f;
    void* p = NULL;
    CHECK_EQ_INT(0, ferry_device_allocate(d, 40, &p, NULL));
    char* bytes = (char*)p;
    CHECK_EQ_INT(0, ferry__device_check_pointer(d, p, 40, &error));
    CHECK_EQ_INT(EFAULT, ferry__device_check_pointer(d, p, 41, &error));
    CHECK_CONTAINS(error.message, "runs past the end of its 40-byte allocation");
    CHECK_EQ_INT(0, ferry__device_check_pointer(d, bytes + 8, 32, &error));
    CHECK_EQ_INT(EFAULT, ferry__device_check_pointer(d, bytes + 8, 33, &error));
    CHECK_EQ_INT(EFAULT, ferry__device_check_pointer(d, bytes + 8, INT64_MAX, &error));
    /* The validator asks with the size the array's length needs. */
    CHECK_EQ_INT(0, validate_declared(p, 10, type, 0, &f));
    CHECK_EQ_INT(EINVAL, validate_declared(p, 11, type, 0, &f));
    CHECK_EQ_INT(1, f.count);
    CHECK_CONTAINS(f.first, "runs past the end of its 40-byte allocation");
    /* A slice counts from the buffer's start: offset 2 + 8 values fit. */
    CHECK_EQ_INT(0, validate_declared_at(p, 8, 2, type, 0, &f));
    CHECK_EQ_INT(EINVAL, validate_declared_at(p, 8, 3, type, 0, &f));
    CHECK_CONTAINS(f.first, "runs past the end of its 40-byte allocation");
    CHECK_EQ_INT(0, ferry_device_deallocate(d, p, NULL));
  }
  check_bracketing();
}

/* ---- out of memory, fork
 * ------------------------------------------------------------------------- */

FERRY_TEST(out_of_memory_from_the_driver_is_enomem) {
  struct {
    struct Emu* emu;
    const char* entry;
    ArrowDeviceType type;
    const char* name;
  } cases[] = {
      {&g_cuda, "cuMemAlloc_v2", ARROW_DEVICE_CUDA, "CUDA_ERROR_OUT_OF_MEMORY"},
      {&g_cuda, "cuMemAllocHost_v2", ARROW_DEVICE_CUDA_HOST, "CUDA_ERROR_OUT_OF_MEMORY"},
      {&g_cuda, "cuMemAllocManaged", ARROW_DEVICE_CUDA_MANAGED, "CUDA_ERROR_OUT_OF_MEMORY"},
      {&g_hip, "hipMalloc", ARROW_DEVICE_ROCM, "hipErrorOutOfMemory"},
      {&g_hip, "hipHostMalloc", ARROW_DEVICE_ROCM_HOST, "hipErrorOutOfMemory"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    struct FerryError error;
    ferry_error_init(&error);
    void* p = NULL;
    cases[i].emu->fail(cases[i].entry, 1, 2u); /* CUDA_ERROR_OUT_OF_MEMORY, hipErrorOutOfMemory */
    CHECK_EQ_INT(ENOMEM, ferry_device_allocate(device(cases[i].type, 1), 1 << 20, &p, &error));
    CHECK(p == NULL);
    char expected[96];
    snprintf(expected, sizeof expected, "[%s][%s]", cases[i].entry, cases[i].name);
    CHECK_CONTAINS(error.message, expected);
  }
  /* Any call can run out of device memory, not only allocations. */
  void* stream = NULL;
  struct FerryError error;
  ferry_error_init(&error);
  g_cuda.fail("cuStreamCreate", 1, 2u);
  CHECK_EQ_INT(ENOMEM, ferry_device_stream_create(device(ARROW_DEVICE_CUDA, 0), &stream,
                                                  &error));
  g_hip.fail("hipEventCreateWithFlags", 1, 2u);
  CHECK_EQ_INT(ENOMEM, ferry_device_event_create(device(ARROW_DEVICE_ROCM, 0), &stream,
                                                 &error));
  /* A deep copy whose allocation fails says so too. */
  struct ArrowSchema schema;
  memset(&schema, 0, sizeof schema);
  struct ArrowDeviceArray src, out;
  memset(&src, 0, sizeof src);
  memset(&out, 0, sizeof out);
  make_int32_array(device(ARROW_DEVICE_CPU, -1), NULL, FERRY_SYNC_RECORD_EVENT, 8, &schema,
                   &src, NULL);
  g_cuda.fail("cuMemAlloc_v2", 1, 2u);
  CHECK_EQ_INT(ENOMEM,
               ferry_device_array_copy(&schema, &src, ARROW_DEVICE_CUDA, 0, &out, &error));
  CHECK(out.array.release == NULL);
  ferry_device_array_release(&src);
  ferry_schema_release(&schema);
  g_cuda.clear_failures();
  g_hip.clear_failures();
  check_bracketing();
}

/* Child-side check of the fork test: prints and counts, no longjmp. */
#define CHILD_EXPECT(cond)                                               \
  do {                                                                   \
    if (!(cond)) {                                                       \
      printf("  forked child: %s failed (line %d)\n", #cond, __LINE__); \
      failures++;                                                        \
    }                                                                    \
  } while (0)

FERRY_TEST(a_forked_child_cannot_use_cuda_or_rocm_and_is_told_it_forked) {
  struct FerryDevice* cuda = device(ARROW_DEVICE_CUDA, 0);
  struct FerryDevice* rocm = device(ARROW_DEVICE_ROCM, 1);
  struct FerryDevice* cpu = device(ARROW_DEVICE_CPU, -1);
  void* parent_memory = NULL;
  CHECK_EQ_INT(0, ferry_device_allocate(cuda, 64, &parent_memory, NULL));
  fflush(stdout);
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    int failures = 0;
    struct FerryError error;
    ferry_error_init(&error);
    void* p = NULL;
    CHILD_EXPECT(ferry_device_allocate(cuda, 16, &p, &error) == ENODEV);
    CHILD_EXPECT(strstr(error.message, "cuda device 0 cannot be used in this process: "
                                       "it was forked") != NULL);
    CHILD_EXPECT(ferry_device_deallocate(cuda, parent_memory, &error) == ENODEV);
    CHILD_EXPECT(ferry_device_stream_create(rocm, &p, &error) == ENODEV);
    CHILD_EXPECT(strstr(error.message, "rocm device 1") != NULL &&
                 strstr(error.message, "forked") != NULL);
    CHILD_EXPECT(ferry__device_check_pointer(cuda, parent_memory, 64, &error) == ENODEV);
    struct FerryDevice* again = NULL;
    CHILD_EXPECT(ferry_device_resolve(ARROW_DEVICE_CUDA_HOST, 0, &again, &error) == ENODEV);
    CHILD_EXPECT(strstr(error.message, "forked") != NULL && again == NULL);
    CHILD_EXPECT(ferry_backend_probe(2, &error) == ENODEV);
    CHILD_EXPECT(strstr(error.message, "the cuda backend cannot be used") != NULL);
    CHILD_EXPECT(ferry_backend_probe(3, &error) == ENODEV);
    CHILD_EXPECT(strstr(error.message, "forked") != NULL);
    /* The CPU is unaffected. */
    CHILD_EXPECT(ferry_device_allocate(cpu, 16, &p, &error) == 0);
    CHILD_EXPECT(ferry_device_deallocate(cpu, p, &error) == 0);
    fflush(stdout);
    _exit(failures == 0 ? 0 : 1);
  }
  int status = 0;
  CHECK_EQ_INT(pid, waitpid(pid, &status, 0));
  CHECK(WIFEXITED(status));
  CHECK_EQ_INT(0, WEXITSTATUS(status));
  /* The parent goes on as before. */
  CHECK_EQ_INT(0, ferry_backend_probe(2, NULL));
  CHECK_EQ_INT(0, ferry_device_deallocate(cuda, parent_memory, NULL));
  void* stream = NULL;
  CHECK_EQ_INT(0, ferry_device_stream_create(rocm, &stream, NULL));
  CHECK_EQ_INT(0, ferry_device_stream_destroy(rocm, stream, NULL));
  check_bracketing();
}

/* ---- what a GPU would crash on, or leave unfinished
 * ------------------------------------------------------------------------- */

/* 1 when a host read of `p` kills a child process with SIGSEGV. */
static int host_read_crashes(const void* p) {
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    struct rlimit no_core = {0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    signal(SIGSEGV, SIG_DFL); /* no sanitizer report: the plain signal */
    volatile const uint8_t* bytes = (volatile const uint8_t*)p;
    _exit(bytes[0] == 0x5A ? 3 : 4); /* reached only when the read worked */
  }
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) != pid) return 0;
  return WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV;
}

FERRY_TEST(a_host_read_of_emulated_device_memory_crashes_as_on_a_gpu) {
  struct FerryDevice* cpu = device(ARROW_DEVICE_CPU, -1);
  for (size_t t = 0; t < N_GPU_TYPES; t++) {
    struct FerryDevice* d = device(kGpuTypes[t], 1);
    uint8_t source[64];
    fill_pattern(source, sizeof source, 0x5A);
    void* p = NULL;
    CHECK_EQ_INT(0, ferry_device_allocate(d, sizeof source, &p, NULL));
    CHECK_EQ_INT(0, ferry_device_memcpy(d, p, cpu, source, sizeof source, NULL, NULL));
    if (ferry_device_is_host_accessible(d)) {
      /* Pinned and managed memory: the host reads it, as on a GPU. */
      CHECK(memcmp(p, source, sizeof source) == 0);
    } else {
      CHECK(host_read_crashes(p));
      CHECK(host_read_crashes((const uint8_t*)p + sizeof source - 1));
      /* The copy calls still reach it. */
      uint8_t back[64];
      CHECK_EQ_INT(0, ferry_device_memcpy(cpu, back, d, p, sizeof back, NULL, NULL));
      CHECK(memcmp(back, source, sizeof source) == 0);
    }
    CHECK_EQ_INT(0, ferry_device_deallocate(d, p, NULL));
  }
  check_bracketing();
}

typedef unsigned (*retain_fn)(void**, int);
typedef unsigned (*release_fn)(int);
typedef unsigned (*push_fn)(void*);
typedef unsigned (*pop_fn)(void**);
typedef unsigned (*sync_fn)(void*);
typedef unsigned (*query_fn)(void*);
typedef unsigned (*cu_dtod_fn)(uintptr_t, uintptr_t, size_t, void*);
typedef unsigned (*hip_copy_fn)(void*, const void*, size_t, unsigned, void*);

static void* driver_entry(struct Emu* emu, const char* name) {
  void* entry = dlsym(emu->handle, name);
  if (entry == NULL) printf("  %s does not export %s\n", emu->library, name);
  return entry;
}

FERRY_TEST(emulated_streams_and_the_null_stream_work_only_once_waited_for) {
  enum { N = 256 };
  struct FerryDevice* cpu = device(ARROW_DEVICE_CPU, -1);
  for (size_t e = 0; e < 2; e++) {
    struct Emu* emu = kEmus[e];
    struct FerryDevice* d = device(emu->device_type, 0);
    struct FerryDevice* host = device(emu->host_type, 0);
    uint8_t source[N];
    fill_pattern(source, N, 21);
    void *on_device = NULL, *pinned = NULL, *stream = NULL;
    CHECK_EQ_INT(0, ferry_device_allocate(d, N, &on_device, NULL));
    CHECK_EQ_INT(0, ferry_device_allocate(host, N, &pinned, NULL));
    CHECK_EQ_INT(0, ferry_device_stream_create(d, &stream, NULL));
    memset(pinned, 0, N);
    /* Queued on a stream, with nobody waiting: nothing reaches the pinned
     * memory, however long the host looks (no gate holds it). */
    CHECK_EQ_INT(0, ferry_device_memcpy(d, on_device, cpu, source, N, stream, NULL));
    CHECK_EQ_INT(0, ferry_device_memcpy(host, pinned, d, on_device, N, stream, NULL));
    CHECK_EQ_INT(2, emu->stream_pending(stream));
    CHECK_EQ_INT(0, ((uint8_t*)pinned)[0]);
    CHECK_EQ_INT(0, ferry_device_stream_synchronize(d, stream, NULL));
    CHECK(memcmp(pinned, source, N) == 0);

    /* A polling caller makes progress: the first query says "not ready". */
    memset(pinned, 0, N);
    CHECK_EQ_INT(0, ferry_device_memcpy(host, pinned, d, on_device, N, stream, NULL));
    query_fn query = (query_fn)driver_entry(
        emu, emu == &g_cuda ? "cuStreamQuery" : "hipStreamQuery");
    CHECK(query != NULL);
    CHECK_EQ_INT(600, query(stream)); /* CUDA_ERROR_NOT_READY = hipErrorNotReady */
    long polls = 0;
    while (query(stream) != 0 && polls < 100000000L) {
      sched_yield();
      polls++;
    }
    CHECK(memcmp(pinned, source, N) == 0);

    /* The driver's own NULL-stream copy is asynchronous too: without the
     * stream synchronize that ferry always adds, nothing has happened. */
    memset(pinned, 0, N);
    if (emu == &g_cuda) {
      void* context = NULL;
      retain_fn retain = (retain_fn)driver_entry(emu, "cuDevicePrimaryCtxRetain");
      release_fn release = (release_fn)driver_entry(emu, "cuDevicePrimaryCtxRelease_v2");
      push_fn push = (push_fn)driver_entry(emu, "cuCtxPushCurrent_v2");
      pop_fn pop = (pop_fn)driver_entry(emu, "cuCtxPopCurrent_v2");
      cu_dtod_fn dtod = (cu_dtod_fn)driver_entry(emu, "cuMemcpyDtoDAsync_v2");
      sync_fn sync = (sync_fn)driver_entry(emu, "cuStreamSynchronize");
      CHECK(retain && release && push && pop && dtod && sync);
      CHECK_EQ_INT(0, retain(&context, 0));
      CHECK_EQ_INT(0, push(context));
      CHECK_EQ_INT(0, dtod((uintptr_t)pinned, (uintptr_t)on_device, N, NULL));
      CHECK_EQ_INT(0, ((uint8_t*)pinned)[0]);
      CHECK_EQ_INT(0, sync(NULL));
      CHECK_EQ_INT(0, pop(NULL));
      CHECK_EQ_INT(0, release(0));
    } else {
      hip_copy_fn copy = (hip_copy_fn)driver_entry(emu, "hipMemcpyAsync");
      sync_fn sync = (sync_fn)driver_entry(emu, "hipStreamSynchronize");
      CHECK(copy && sync);
      CHECK_EQ_INT(0, copy(pinned, on_device, N, 3 /* hipMemcpyDeviceToDevice */, NULL));
      CHECK_EQ_INT(0, ((uint8_t*)pinned)[0]);
      CHECK_EQ_INT(0, sync(NULL));
    }
    CHECK(memcmp(pinned, source, N) == 0);
    CHECK_EQ_INT(0, ferry_device_stream_destroy(d, stream, NULL));
    CHECK_EQ_INT(0, ferry_device_deallocate(d, on_device, NULL));
    CHECK_EQ_INT(0, ferry_device_deallocate(host, pinned, NULL));
    check_bracketing();
  }
}

/* ---- the event pool
 * ------------------------------------------------------------------------- */

/* Exports a 4-value int32 array over `buffer` (not owned) on `d`, produced
 * on `stream`, with a recorded event. */
static void export_borrowed(struct FerryDevice* d, void* stream, const void* buffer,
                            struct ArrowDeviceArray* out) {
  struct ArrowArray inner;
  memset(&inner, 0, sizeof inner);
  const void* buffers[2] = {NULL, buffer};
  CHECK_EQ_INT(0, ferry_array_init(&inner, 4, 0, 0, 2, buffers, 0, NULL, NULL, NULL));
  memset(out, 0, sizeof *out);
  CHECK_EQ_INT(0, ferry_device_array_init_async(out, &inner, d, stream,
                                                FERRY_SYNC_RECORD_EVENT, NULL));
  CHECK(out->sync_event != NULL);
}

/* One handoff as a consumer sees it: export, move, wait, release. */
static void handoff(struct FerryDevice* d, void* producer, void* consumer,
                    const void* buffer) {
  struct ArrowDeviceArray exported, moved;
  export_borrowed(d, producer, buffer, &exported);
  memset(&moved, 0, sizeof moved);
  CHECK_EQ_INT(0, ferry_device_array_move(&exported, &moved));
  CHECK_EQ_INT(0, ferry_device_array_wait(&moved, consumer, NULL));
  ferry_device_array_release(&moved);
}

struct CallCounts {
  int64_t create, destroy, record, wait, push, pop, get, set;
};

static struct CallCounts count_calls(struct Emu* emu) {
  struct CallCounts c;
  int cuda = emu == &g_cuda;
  c.create = emu->calls(cuda ? "cuEventCreate" : "hipEventCreateWithFlags");
  c.destroy = emu->calls(cuda ? "cuEventDestroy_v2" : "hipEventDestroy");
  c.record = emu->calls(cuda ? "cuEventRecord" : "hipEventRecord");
  c.wait = emu->calls(cuda ? "cuStreamWaitEvent" : "hipStreamWaitEvent");
  c.push = emu->calls(cuda ? "cuCtxPushCurrent_v2" : "hipSetDevice");
  c.pop = emu->calls(cuda ? "cuCtxPopCurrent_v2" : "hipSetDevice");
  c.get = emu->calls(cuda ? "cuCtxGetCurrent" : "hipGetDevice");
  return c;
}

FERRY_TEST(steady_state_handoffs_create_no_event_and_record_and_wait_once_each) {
  enum { K = 10 };
  for (size_t e = 0; e < 2; e++) {
    struct Emu* emu = kEmus[e];
    struct FerryDevice* d = device(emu->device_type, 0);
    void *producer = NULL, *consumer = NULL, *buffer = NULL;
    CHECK_EQ_INT(0, ferry_device_stream_create(d, &producer, NULL));
    CHECK_EQ_INT(0, ferry_device_stream_create(d, &consumer, NULL));
    CHECK_EQ_INT(0, ferry_device_allocate(d, 16, &buffer, NULL));
    int64_t allocations = emu->live_allocations();
    handoff(d, producer, consumer, buffer); /* the pool holds an event from now on */
    int64_t events = emu->live_events();

    /* No context current on this thread (CUDA): each call pushes and pops. */
    struct CallCounts before = count_calls(emu);
    for (int i = 0; i < K; i++) handoff(d, producer, consumer, buffer);
    struct CallCounts after = count_calls(emu);
    CHECK_EQ_INT(0, after.create - before.create);
    CHECK_EQ_INT(0, after.destroy - before.destroy);
    CHECK_EQ_INT(K, after.record - before.record);
    CHECK_EQ_INT(K, after.wait - before.wait);
    if (emu == &g_cuda) {
      CHECK_EQ_INT(2 * K, after.push - before.push);
      CHECK_EQ_INT(2 * K, after.pop - before.pop);
    } else {
      CHECK_EQ_INT(0, after.push - before.push); /* device 0 is already current */
    }
    CHECK_EQ_INT(events, emu->live_events());
    CHECK_EQ_INT(allocations, emu->live_allocations());

    /* The device's context already current, as in a CUDA runtime program:
     * no push or pop at all, one cuCtxGetCurrent per call. */
    if (emu == &g_cuda) {
      retain_fn retain = (retain_fn)driver_entry(emu, "cuDevicePrimaryCtxRetain");
      release_fn release = (release_fn)driver_entry(emu, "cuDevicePrimaryCtxRelease_v2");
      push_fn push = (push_fn)driver_entry(emu, "cuCtxPushCurrent_v2");
      pop_fn pop = (pop_fn)driver_entry(emu, "cuCtxPopCurrent_v2");
      CHECK(retain && release && push && pop);
      void* context = NULL;
      CHECK_EQ_INT(0, retain(&context, 0));
      CHECK_EQ_INT(0, push(context));
      before = count_calls(emu);
      for (int i = 0; i < K; i++) handoff(d, producer, consumer, buffer);
      after = count_calls(emu);
      CHECK_EQ_INT(0, after.push - before.push);
      CHECK_EQ_INT(0, after.pop - before.pop);
      CHECK_EQ_INT(2 * K, after.get - before.get);
      CHECK_EQ_INT(K, after.record - before.record);
      CHECK_EQ_INT(K, after.wait - before.wait);
      CHECK_EQ_INT(0, after.create - before.create);
      CHECK_EQ_INT(1, g_cuda.context_depth()); /* the caller's context stays */
      CHECK_EQ_INT(0, pop(NULL));
      CHECK_EQ_INT(0, release(0));
    }
    CHECK_EQ_INT(0, ferry_device_stream_synchronize(d, consumer, NULL));
    CHECK_EQ_INT(0, ferry_device_deallocate(d, buffer, NULL));
    CHECK_EQ_INT(0, ferry_device_stream_destroy(d, producer, NULL));
    CHECK_EQ_INT(0, ferry_device_stream_destroy(d, consumer, NULL));
    check_bracketing();
  }
}

FERRY_TEST(a_pooled_event_is_reused_only_after_its_array_was_released) {
  enum { LIVE = 70 }; /* more than the pool keeps (64) */
  for (size_t e = 0; e < 2; e++) {
    struct Emu* emu = kEmus[e];
    struct FerryDevice* d = device(emu->host_type, 1);
    void *stream = NULL, *buffer = NULL;
    CHECK_EQ_INT(0, ferry_device_stream_create(d, &stream, NULL));
    CHECK_EQ_INT(0, ferry_device_allocate(d, 16, &buffer, NULL));
    int64_t pooled = ferry__device_pooled_events(d);
    int64_t events = emu->live_events();
    static struct ArrowDeviceArray live[LIVE];
    for (int i = 0; i < LIVE; i++) {
      export_borrowed(d, stream, buffer, &live[i]);
      /* No live array shares its event with another. */
      for (int j = 0; j < i; j++) CHECK(live[j].sync_event != live[i].sync_event);
    }
    CHECK_EQ_INT(0, ferry__device_pooled_events(d));
    CHECK_EQ_INT(events + LIVE - pooled, emu->live_events());
    /* Released in order: the first 64 fill the pool, the last one kept is
     * live[63]'s. */
    void* last_kept = live[63].sync_event;
    for (int i = 0; i < LIVE; i++) ferry_device_array_release(&live[i]);
    /* The pool keeps 64; the others were destroyed. */
    CHECK_EQ_INT(64, ferry__device_pooled_events(d));
    CHECK_EQ_INT(events + 64 - pooled, emu->live_events());
    /* The next export reuses a released event (the last one kept first). */
    struct ArrowDeviceArray next;
    export_borrowed(d, stream, buffer, &next);
    CHECK(next.sync_event == last_kept);
    ferry_device_array_release(&next);
    CHECK_EQ_INT(0, ferry_device_stream_synchronize(d, stream, NULL));
    CHECK_EQ_INT(0, ferry_device_deallocate(d, buffer, NULL));
    CHECK_EQ_INT(0, ferry_device_stream_destroy(d, stream, NULL));
    check_bracketing();
  }
}

/* The lifetime rule of docs/events.md, with pooling: a consumer that queued
 * its wait before releasing stays ordered after the producer, although the
 * event it waited on is recorded again by the next export. */
FERRY_TEST(a_wait_queued_before_release_keeps_its_order_when_the_event_is_reused) {
  enum { N = 128 };
  struct FerryDevice* cpu = device(ARROW_DEVICE_CPU, -1);
  for (size_t e = 0; e < 2; e++) {
    struct Emu* emu = kEmus[e];
    struct FerryDevice* d = device(emu->device_type, 1);
    struct FerryDevice* host = device(emu->host_type, 1);
    void *producer = NULL, *other = NULL, *consumer = NULL, *buffer = NULL, *pinned = NULL;
    CHECK_EQ_INT(0, ferry_device_stream_create(d, &producer, NULL));
    CHECK_EQ_INT(0, ferry_device_stream_create(d, &other, NULL));
    CHECK_EQ_INT(0, ferry_device_stream_create(d, &consumer, NULL));
    CHECK_EQ_INT(0, ferry_device_allocate(d, N, &buffer, NULL));
    CHECK_EQ_INT(0, ferry_device_allocate(host, N, &pinned, NULL));
    uint8_t source[N];
    fill_pattern(source, N, 77);
    memset(pinned, 0, N);
    /* The producer's copy is queued; nothing runs until someone waits. */
    CHECK_EQ_INT(0, ferry_device_memcpy(d, buffer, cpu, source, N, producer, NULL));
    struct ArrowDeviceArray first, second;
    export_borrowed(d, producer, buffer, &first);
    void* event = first.sync_event;
    CHECK_EQ_INT(0, ferry_device_array_wait(&first, consumer, NULL));
    ferry_device_array_release(&first);
    /* The next export records the same event on another stream. */
    export_borrowed(d, other, buffer, &second);
    CHECK(second.sync_event == event);
    CHECK_EQ_INT(0, ferry_device_memcpy(host, pinned, d, buffer, N, consumer, NULL));
    /* Only the consumer is synchronized: its queued wait still names the
     * producer's copy, which must run first. */
    CHECK_EQ_INT(0, ferry_device_stream_synchronize(d, consumer, NULL));
    CHECK(memcmp(pinned, source, N) == 0);
    ferry_device_array_release(&second);
    CHECK_EQ_INT(0, ferry_device_deallocate(host, pinned, NULL));
    CHECK_EQ_INT(0, ferry_device_deallocate(d, buffer, NULL));
    CHECK_EQ_INT(0, ferry_device_stream_destroy(d, producer, NULL));
    CHECK_EQ_INT(0, ferry_device_stream_destroy(d, other, NULL));
    CHECK_EQ_INT(0, ferry_device_stream_destroy(d, consumer, NULL));
    check_bracketing();
  }
}

/* ---- deep copies of whole arrays between every device
 * --------------------------------------------------- */

/* A struct<int32 "a", utf8 "b", dictionary<int8 -> utf8> "c", string_view
 * "d"> of 4 rows in CPU memory, with nulls in "a" and a long (variadic)
 * view in "d". */
static const uint8_t kValidityA[1] = {0x0B}; /* rows 0, 1, 3 valid */
static const int32_t kValuesA[4] = {10, 20, 0, 40};
static const int32_t kOffsetsB[5] = {0, 3, 3, 8, 12};
static const char kDataB[12] = {'o', 'n', 'e', 't', 'h', 'r',
                                'e', 'e', 'f', 'o', 'u', 'r'};
static const int8_t kIndicesC[4] = {1, 0, 1, 1};
static const int32_t kDictOffsets[3] = {0, 3, 8};
static const char kDictData[8] = {'r', 'e', 'd', 'g', 'r', 'e', 'e', 'n'};
static const char kLongView[] = "a string longer than twelve bytes";
static uint8_t kViewsD[4][16];
static const int64_t kVariadicSizesD[1] = {sizeof kLongView - 1};

static void build_sample(struct ArrowSchema* schema, struct ArrowDeviceArray* out) {
  /* Views: rows 0 and 2 inline ("hi", "short"), rows 1 and 3 in buffer 0. */
  memset(kViewsD, 0, sizeof kViewsD);
  int32_t lengths[4] = {2, (int32_t)(sizeof kLongView - 1), 5, 10};
  const char* inline_text[4] = {"hi", NULL, "short", NULL};
  int32_t offsets[4] = {0, 0, 0, 2};
  for (int i = 0; i < 4; i++) {
    memcpy(kViewsD[i], &lengths[i], 4);
    if (inline_text[i] != NULL) {
      memcpy(kViewsD[i] + 4, inline_text[i], (size_t)lengths[i]);
    } else {
      memcpy(kViewsD[i] + 4, kLongView + offsets[i], 4);
      int32_t buffer_index = 0;
      memcpy(kViewsD[i] + 8, &buffer_index, 4);
      memcpy(kViewsD[i] + 12, &offsets[i], 4);
    }
  }
  CHECK_EQ_INT(0, ferry_schema_init(schema, "+s", "row", 0, 4, NULL));
  CHECK_EQ_INT(0, ferry_schema_init(ferry_schema_child(schema, 0), "i", "a", 2, 0, NULL));
  CHECK_EQ_INT(0, ferry_schema_init(ferry_schema_child(schema, 1), "u", "b", 2, 0, NULL));
  CHECK_EQ_INT(0, ferry_schema_init(ferry_schema_child(schema, 2), "c", "c", 2, 0, NULL));
  struct ArrowSchema* dict_schema = NULL;
  CHECK_EQ_INT(0, ferry_schema_allocate_dictionary(ferry_schema_child(schema, 2),
                                                   &dict_schema, NULL));
  CHECK_EQ_INT(0, ferry_schema_init(dict_schema, "u", NULL, 2, 0, NULL));
  CHECK_EQ_INT(0,
               ferry_schema_init(ferry_schema_child(schema, 3), "vu", "d", 2, 0, NULL));

  struct ArrowArray root;
  memset(&root, 0, sizeof root);
  const void* root_buffers[1] = {NULL};
  CHECK_EQ_INT(0, ferry_array_init(&root, 4, 0, 0, 1, root_buffers, 4, NULL, NULL, NULL));
  const void* a[2] = {kValidityA, kValuesA};
  CHECK_EQ_INT(0, ferry_array_init(ferry_array_child(&root, 0), 4, 1, 0, 2, a, 0, NULL,
                                   NULL, NULL));
  const void* b[3] = {NULL, kOffsetsB, kDataB};
  CHECK_EQ_INT(0, ferry_array_init(ferry_array_child(&root, 1), 4, 0, 0, 3, b, 0, NULL,
                                   NULL, NULL));
  const void* c[2] = {NULL, kIndicesC};
  CHECK_EQ_INT(0, ferry_array_init(ferry_array_child(&root, 2), 4, 0, 0, 2, c, 0, NULL,
                                   NULL, NULL));
  struct ArrowArray* dict = NULL;
  CHECK_EQ_INT(0,
               ferry_array_allocate_dictionary(ferry_array_child(&root, 2), &dict, NULL));
  const void* dict_buffers[3] = {NULL, kDictOffsets, kDictData};
  CHECK_EQ_INT(0, ferry_array_init(dict, 2, 0, 0, 3, dict_buffers, 0, NULL, NULL, NULL));
  const void* d[4] = {NULL, kViewsD, kLongView, kVariadicSizesD};
  CHECK_EQ_INT(0, ferry_array_init(ferry_array_child(&root, 3), 4, 0, 0, 4, d, 0, NULL,
                                   NULL, NULL));
  CHECK_EQ_INT(0, ferry_device_array_init(out, &root, ARROW_DEVICE_CPU, -1, NULL, NULL,
                                          NULL, NULL));
}

static int same_bytes(const void* a, const void* b, size_t n) {
  return memcmp(a, b, n) == 0;
}

static void check_sample_on_cpu(const struct ArrowDeviceArray* array) {
  CHECK_EQ_INT(ARROW_DEVICE_CPU, array->device_type);
  const struct ArrowArray* root = &array->array;
  CHECK_EQ_INT(4, root->n_children);
  const struct ArrowArray* a = root->children[0];
  CHECK(same_bytes(a->buffers[0], kValidityA, 1));
  CHECK(same_bytes(a->buffers[1], kValuesA, sizeof kValuesA));
  const struct ArrowArray* b = root->children[1];
  CHECK(same_bytes(b->buffers[1], kOffsetsB, sizeof kOffsetsB));
  CHECK(same_bytes(b->buffers[2], kDataB, sizeof kDataB));
  const struct ArrowArray* c = root->children[2];
  CHECK(same_bytes(c->buffers[1], kIndicesC, sizeof kIndicesC));
  CHECK(c->dictionary != NULL);
  CHECK(same_bytes(c->dictionary->buffers[1], kDictOffsets, sizeof kDictOffsets));
  CHECK(same_bytes(c->dictionary->buffers[2], kDictData, sizeof kDictData));
  const struct ArrowArray* d = root->children[3];
  CHECK_EQ_INT(4, d->n_buffers);
  CHECK(same_bytes(d->buffers[1], kViewsD, sizeof kViewsD));
  CHECK(same_bytes(d->buffers[2], kLongView, sizeof kLongView - 1));
  CHECK(same_bytes(d->buffers[3], kVariadicSizesD, sizeof kVariadicSizesD));
}

FERRY_TEST(
    whole_arrays_copy_through_cpu_sim_cuda_and_rocm_with_children_dictionaries_and_views) {
  struct ArrowSchema schema;
  memset(&schema, 0, sizeof schema);
  struct ArrowDeviceArray current;
  memset(&current, 0, sizeof current);
  build_sample(&schema, &current);
  struct FerryError error;
  ferry_error_init(&error);
  CHECK_EQ_INT(0, ferry_validate_device_array(&schema, &current, FERRY_VALIDATE_FULL,
                                              NULL, NULL, &error));
  struct {
    ArrowDeviceType type;
    int64_t id;
  } route[] = {{ARROW_DEVICE_CUDA, 0},      {ARROW_DEVICE_CUDA, 1},
               {ARROW_DEVICE_ROCM, 1},      {ARROW_DEVICE_EXT_DEV, 2},
               {ARROW_DEVICE_ROCM_HOST, 0}, {ARROW_DEVICE_CUDA_MANAGED, 1},
               {ARROW_DEVICE_CUDA_HOST, 0}, {ARROW_DEVICE_ROCM, 0},
               {ARROW_DEVICE_CPU, -1}};
  int64_t cuda_allocations = g_cuda.live_allocations(),
          hip_allocations = g_hip.live_allocations();
  for (size_t i = 0; i < sizeof route / sizeof route[0]; i++) {
    struct ArrowDeviceArray next;
    memset(&next, 0, sizeof next);
    int rc = ferry_device_array_copy(&schema, &current, route[i].type, route[i].id, &next,
                                     &error);
    if (rc != 0)
      printf("  copy to %s:%d: %s\n", ferry_device_type_name(route[i].type),
             (int)route[i].id, error.message);
    CHECK_EQ_INT(0, rc);
    CHECK_EQ_INT(route[i].type, next.device_type);
    CHECK(next.sync_event == NULL);
    /* Every buffer, child, dictionary and variadic buffer is on the new device. */
    if (route[i].type != ARROW_DEVICE_CPU) {
      rc = ferry_validate_device_array(&schema, &next, FERRY_VALIDATE_FULL, NULL, NULL,
                                       &error);
      if (rc != 0)
        printf("  validate on %s: %s\n", ferry_device_type_name(route[i].type),
               error.message);
      CHECK_EQ_INT(0, rc);
    }
    ferry_device_array_release(&current);
    ferry_device_array_move(&next, &current);
  }
  check_sample_on_cpu(&current);
  ferry_device_array_release(&current);
  ferry_schema_release(&schema);
  CHECK_EQ_INT(cuda_allocations, g_cuda.live_allocations());
  CHECK_EQ_INT(hip_allocations, g_hip.live_allocations());
  check_bracketing();
}

/* ---- move without copying
 * -------------------------------------------------------------------------------- */

static void move_and_check(ArrowDeviceType from, int64_t from_id, ArrowDeviceType to,
                           int64_t to_id, int expect_zero_copy) {
  struct ArrowSchema schema;
  memset(&schema, 0, sizeof schema);
  struct ArrowDeviceArray src, out;
  memset(&src, 0, sizeof src);
  memset(&out, 0, sizeof out);
  void* stream = NULL;
  struct FerryDevice* d = device(from, from_id);
  CHECK_EQ_INT(0, ferry_device_stream_create(d, &stream, NULL));
  void* buffer = NULL;
  make_int32_array(d, stream, FERRY_SYNC_RECORD_EVENT, 30, &schema, &src, &buffer);
  int had_event = src.sync_event != NULL;
  struct FerryError error;
  ferry_error_init(&error);
  int released_before = g_released_buffers;
  int rc = ferry_device_array_move_to_device(&schema, &src, to, to_id, &out, &error);
  if (rc != 0) printf("  move: %s\n", error.message);
  CHECK_EQ_INT(0, rc);
  CHECK(src.array.release == NULL); /* consumed */
  CHECK_EQ_INT(to, out.device_type);
  CHECK_EQ_INT(to == ARROW_DEVICE_CPU ? -1 : to_id, out.device_id);
  if (expect_zero_copy) {
    CHECK(out.array.buffers[1] == buffer);
    CHECK_EQ_INT(released_before, g_released_buffers);
    if (to == ARROW_DEVICE_CPU) {
      CHECK(out.sync_event == NULL);
      const int32_t* values = (const int32_t*)out.array.buffers[1];
      for (int i = 0; i < 30; i++) CHECK_EQ_INT(i * 3 + 1, values[i]);
    } else {
      CHECK_EQ_INT(had_event, out.sync_event != NULL);
    }
  } else {
    CHECK(out.array.buffers[1] != buffer);
    CHECK_EQ_INT(released_before + 1, g_released_buffers); /* src released */
    check_int32_values(&out, 30);
  }
  ferry_device_array_release(&out);
  ferry_schema_release(&schema);
  CHECK_EQ_INT(0, ferry_device_stream_destroy(d, stream, NULL));
  check_bracketing();
}

FERRY_TEST(move_to_device_is_zero_copy_where_the_memory_is_reachable) {
  int64_t events = events_in_use();
  move_and_check(ARROW_DEVICE_CUDA, 1, ARROW_DEVICE_CUDA, 1, 1);
  move_and_check(ARROW_DEVICE_CUDA_HOST, 0, ARROW_DEVICE_CPU, -1, 1);
  move_and_check(ARROW_DEVICE_CUDA_MANAGED, 1, ARROW_DEVICE_CPU, 0, 1);
  move_and_check(ARROW_DEVICE_CUDA_MANAGED, 1, ARROW_DEVICE_CUDA, 1, 1);
  move_and_check(ARROW_DEVICE_ROCM_HOST, 1, ARROW_DEVICE_CPU, -1, 1);
  move_and_check(ARROW_DEVICE_ROCM, 0, ARROW_DEVICE_ROCM, 0, 1);
  move_and_check(ARROW_DEVICE_EXT_DEV, 1, ARROW_DEVICE_EXT_DEV, 1, 1);
  CHECK_EQ_INT(events, events_in_use());
}

FERRY_TEST(move_to_device_copies_where_the_memory_is_not_reachable) {
  move_and_check(ARROW_DEVICE_CUDA, 0, ARROW_DEVICE_CUDA, 1, 0);
  move_and_check(ARROW_DEVICE_CUDA, 0, ARROW_DEVICE_CPU, -1, 0);
  move_and_check(ARROW_DEVICE_CUDA_MANAGED, 0, ARROW_DEVICE_CUDA, 1, 0);
  move_and_check(ARROW_DEVICE_ROCM, 1, ARROW_DEVICE_CUDA, 0, 0);
  move_and_check(ARROW_DEVICE_EXT_DEV, 0, ARROW_DEVICE_CPU, -1, 0); /* sim models a GPU */
  move_and_check(ARROW_DEVICE_CPU, -1, ARROW_DEVICE_CUDA_HOST, 0, 0);
}

FERRY_TEST(move_to_device_refuses_bad_input_and_leaves_src_alone) {
  struct ArrowSchema schema;
  memset(&schema, 0, sizeof schema);
  struct ArrowDeviceArray src, out;
  memset(&src, 0, sizeof src);
  memset(&out, 0, sizeof out);
  make_int32_array(device(ARROW_DEVICE_CUDA, 0), NULL, FERRY_SYNC_RECORD_EVENT, 4,
                   &schema, &src, NULL);
  struct FerryError error;
  ferry_error_init(&error);
  CHECK_EQ_INT(ENODEV, ferry_device_array_move_to_device(&schema, &src, ARROW_DEVICE_CUDA,
                                                         7, &out, &error));
  CHECK_CONTAINS(error.message, "cuda device 7 does not exist");
  CHECK(src.array.release != NULL);
  CHECK_EQ_INT(EINVAL, ferry_device_array_move_to_device(NULL, &src, ARROW_DEVICE_CPU, -1,
                                                         &out, &error));
  CHECK(src.array.release != NULL);
  struct ArrowDeviceArray live;
  memset(&live, 0, sizeof live);
  make_int32_array(device(ARROW_DEVICE_CPU, -1), NULL, FERRY_SYNC_RECORD_EVENT, 2, NULL,
                   &live, NULL);
  CHECK_EQ_INT(EINVAL, ferry_device_array_move_to_device(&schema, &src, ARROW_DEVICE_CPU,
                                                         -1, &live, &error));
  CHECK_CONTAINS(error.message, "out is a live device array");
  struct ArrowDeviceArray released;
  memset(&released, 0, sizeof released);
  CHECK_EQ_INT(EINVAL, ferry_device_array_move_to_device(
                           &schema, &released, ARROW_DEVICE_CPU, -1, &out, &error));
  CHECK_CONTAINS(error.message, "src is released");
  ferry_device_array_release(&live);
  ferry_device_array_release(&src);
  ferry_schema_release(&schema);
}

/* ---- DLPack
 * ------------------------------------------------------------------------------------------------
 */

FERRY_TEST(dlpack_round_trips_zero_copy_on_every_device_with_exact_device_mapping) {
  struct {
    ArrowDeviceType type;
    int64_t id;
    int32_t expected_dl_type;
    int32_t expected_dl_id;
  } cases[] = {
      {ARROW_DEVICE_CPU, -1, 1, 0},          {ARROW_DEVICE_CUDA, 1, 2, 1},
      {ARROW_DEVICE_CUDA_HOST, 0, 3, 0},     {ARROW_DEVICE_ROCM, 1, 10, 1},
      {ARROW_DEVICE_ROCM_HOST, 0, 11, 0},    {ARROW_DEVICE_EXT_DEV, 3, 12, 3},
      {ARROW_DEVICE_CUDA_MANAGED, 1, 13, 1},
  };
  CHECK_EQ_INT(kDLCUDAHost, 3);
  CHECK_EQ_INT(kDLROCM, 10);
  CHECK_EQ_INT(kDLROCMHost, 11);
  CHECK_EQ_INT(kDLExtDev, 12);
  CHECK_EQ_INT(kDLCUDAManaged, 13);
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    struct FerryDevice* d = device(cases[i].type, cases[i].id);
    struct ArrowSchema schema;
    memset(&schema, 0, sizeof schema);
    struct ArrowDeviceArray array;
    memset(&array, 0, sizeof array);
    void* buffer = NULL;
    make_int32_array(d, NULL, FERRY_SYNC_RECORD_EVENT, 12, &schema, &array, &buffer);
    array.array.offset = 2; /* a slice: byte_offset must say so */
    array.array.length = 10;
    int released_before = g_released_buffers;
    struct DLManagedTensorVersioned* tensor = NULL;
    struct FerryError error;
    ferry_error_init(&error);
    int rc = ferry_device_array_to_dlpack(&schema, &array, NULL, &tensor, &error);
    if (rc != 0)
      printf("  to_dlpack %s: %s\n", ferry_device_type_name(cases[i].type),
             error.message);
    CHECK_EQ_INT(0, rc);
    CHECK(array.array.release == NULL); /* moved into the tensor */
    CHECK_EQ_INT(1, tensor->version.major);
    CHECK_EQ_INT(DLPACK_FLAG_BITMASK_READ_ONLY, tensor->flags);
    CHECK_EQ_INT(0, tensor->flags & DLPACK_FLAG_BITMASK_IS_COPIED);
    CHECK(tensor->dl_tensor.data == buffer);
    CHECK_EQ_INT(8, tensor->dl_tensor.byte_offset);
    CHECK_EQ_INT(cases[i].expected_dl_type, tensor->dl_tensor.device.device_type);
    CHECK_EQ_INT(cases[i].expected_dl_id, tensor->dl_tensor.device.device_id);
    CHECK_EQ_INT(1, tensor->dl_tensor.ndim);
    CHECK_EQ_INT(10, tensor->dl_tensor.shape[0]);
    CHECK_EQ_INT(1, tensor->dl_tensor.strides[0]);
    CHECK_EQ_INT(kDLInt, tensor->dl_tensor.dtype.code);
    CHECK_EQ_INT(32, tensor->dl_tensor.dtype.bits);
    CHECK_EQ_INT(1, tensor->dl_tensor.dtype.lanes);

    struct ArrowSchema back_schema;
    memset(&back_schema, 0, sizeof back_schema);
    struct ArrowDeviceArray back;
    memset(&back, 0, sizeof back);
    CHECK_EQ_INT(0, ferry_device_array_from_dlpack(tensor, &back_schema, &back, &error));
    CHECK_STR("i", back_schema.format);
    CHECK_EQ_INT(cases[i].type, back.device_type);
    CHECK_EQ_INT(cases[i].id, back.device_id);
    CHECK(back.sync_event == NULL);
    CHECK_EQ_INT(10, back.array.length);
    CHECK_EQ_INT(0, back.array.null_count);
    CHECK(back.array.buffers[1] == (const char*)buffer + 8);
    check_int32_values_from(&back, 10, 2); /* the slice starts at value 2 */
    CHECK_EQ_INT(released_before, g_released_buffers);
    ferry_device_array_release(&back); /* -> tensor deleter -> original release */
    CHECK_EQ_INT(released_before + 1, g_released_buffers);
    ferry_schema_release(&back_schema);
    ferry_schema_release(&schema);
  }
  check_bracketing();
}

FERRY_TEST(dlpack_export_orders_the_consumer_stream_after_the_event) {
  struct FerryDevice* d = device(ARROW_DEVICE_CUDA, 0);
  void *producer = NULL, *consumer = NULL;
  CHECK_EQ_INT(0, ferry_device_stream_create(d, &producer, NULL));
  CHECK_EQ_INT(0, ferry_device_stream_create(d, &consumer, NULL));
  CHECK_EQ_INT(0, g_cuda.gate_close(producer));
  struct ArrowSchema schema;
  memset(&schema, 0, sizeof schema);
  struct ArrowDeviceArray array;
  memset(&array, 0, sizeof array);
  make_int32_array(d, producer, FERRY_SYNC_RECORD_EVENT, 8, &schema, &array, NULL);
  struct DLManagedTensorVersioned* tensor = NULL;
  CHECK_EQ_INT(0, ferry_device_array_to_dlpack(&schema, &array, consumer, &tensor, NULL));
  CHECK_EQ_INT(1, g_cuda.stream_pending(consumer)); /* the wait, queued; host went on */
  g_cuda.gates_open();
  CHECK_EQ_INT(0, ferry_device_stream_synchronize(d, consumer, NULL));
  tensor->deleter(tensor);
  ferry_schema_release(&schema);
  CHECK_EQ_INT(0, ferry_device_stream_destroy(d, producer, NULL));
  CHECK_EQ_INT(0, ferry_device_stream_destroy(d, consumer, NULL));
  check_bracketing();
}

static int g_foreign_deleted;
static void foreign_deleter(DLManagedTensorVersioned* self) {
  g_foreign_deleted++;
  (void)self;
}

FERRY_TEST(dlpack_imports_foreign_tensors_and_refuses_what_arrow_cannot_hold) {
  static float data[6] = {0.5f, 1.5f, 2.5f, 3.5f, 4.5f, 5.5f};
  int64_t shape[2] = {6, 1};
  int64_t strides[2] = {1, 1};
  DLManagedTensorVersioned t;
  memset(&t, 0, sizeof t);
  t.version.major = 1;
  t.version.minor = 0;
  t.deleter = foreign_deleter;
  t.flags = DLPACK_FLAG_BITMASK_IS_COPIED;
  t.dl_tensor.data = data;
  t.dl_tensor.device.device_type = kDLCPU;
  t.dl_tensor.device.device_id = 0;
  t.dl_tensor.ndim = 1;
  t.dl_tensor.dtype.code = kDLFloat;
  t.dl_tensor.dtype.bits = 32;
  t.dl_tensor.dtype.lanes = 1;
  t.dl_tensor.shape = shape;
  t.dl_tensor.strides = NULL;
  t.dl_tensor.byte_offset = 4;
  shape[0] = 5;
  struct ArrowSchema schema;
  struct ArrowDeviceArray array;
  memset(&schema, 0, sizeof schema);
  memset(&array, 0, sizeof array);
  CHECK_EQ_INT(0, ferry_device_array_from_dlpack(&t, &schema, &array, NULL));
  CHECK_STR("f", schema.format);
  CHECK_EQ_INT(ARROW_DEVICE_CPU, array.device_type);
  CHECK_EQ_INT(-1, array.device_id);
  CHECK(array.array.buffers[1] == &data[1]);
  CHECK_EQ_INT(0, g_foreign_deleted);
  ferry_device_array_release(&array);
  ferry_schema_release(&schema);
  CHECK_EQ_INT(1, g_foreign_deleted);

  /* Refusals: each leaves the tensor to the caller (no deleter call). */
  struct {
    const char* what;
    void (*spoil)(DLManagedTensorVersioned*);
    const char* expected;
  } refusals[] = {
      {"bool", NULL, "DLPack booleans are bytes"},
      {"maia", NULL, "has no Arrow equivalent (kDLMAIA)"},
      {"trn", NULL, "(kDLTrn)"},
      {"2d", NULL, "the tensor has 2 dimensions"},
      {"strided", NULL, "the tensor is strided (stride 2"},
      {"version", NULL, "DLPack major version 2 is not 1"},
      {"lanes", NULL, "vector elements (4 lanes)"},
      {"bfloat", NULL, "DLPack type code 4 with 16 bits"},
  };
  for (size_t i = 0; i < sizeof refusals / sizeof refusals[0]; i++) {
    DLManagedTensorVersioned bad = t;
    shape[0] = 5;
    const char* w = refusals[i].what;
    if (strcmp(w, "bool") == 0) {
      bad.dl_tensor.dtype.code = kDLBool;
      bad.dl_tensor.dtype.bits = 8;
    }
    if (strcmp(w, "maia") == 0) bad.dl_tensor.device.device_type = kDLMAIA;
    if (strcmp(w, "trn") == 0) bad.dl_tensor.device.device_type = kDLTrn;
    if (strcmp(w, "2d") == 0) {
      bad.dl_tensor.ndim = 2;
    }
    if (strcmp(w, "strided") == 0) {
      strides[0] = 2;
      bad.dl_tensor.strides = strides;
    }
    if (strcmp(w, "version") == 0) bad.version.major = 2;
    if (strcmp(w, "lanes") == 0) bad.dl_tensor.dtype.lanes = 4;
    if (strcmp(w, "bfloat") == 0) {
      bad.dl_tensor.dtype.code = kDLBfloat;
      bad.dl_tensor.dtype.bits = 16;
    }
    struct FerryError error;
    ferry_error_init(&error);
    memset(&schema, 0, sizeof schema);
    memset(&array, 0, sizeof array);
    CHECK_EQ_INT(EINVAL, ferry_device_array_from_dlpack(&bad, &schema, &array, &error));
    CHECK_CONTAINS(error.message, refusals[i].expected);
    CHECK(schema.release == NULL);
    CHECK(array.array.release == NULL);
    strides[0] = 1;
  }
  CHECK_EQ_INT(1, g_foreign_deleted);

  /* Bad calls and a 0-D tensor (one value). */
  struct FerryError error;
  ferry_error_init(&error);
  CHECK_EQ_INT(EINVAL, ferry_device_array_from_dlpack(&t, NULL, &array, &error));
  memset(&schema, 0, sizeof schema);
  ferry_schema_init(&schema, "i", NULL, 0, 0, NULL);
  CHECK_EQ_INT(EINVAL, ferry_device_array_from_dlpack(&t, &schema, &array, &error));
  CHECK_CONTAINS(error.message, "must be released beforehand");
  ferry_schema_release(&schema);
  DLManagedTensorVersioned bad = t;
  bad.dl_tensor.shape = NULL;
  CHECK_EQ_INT(EINVAL, ferry_device_array_from_dlpack(&bad, &schema, &array, &error));
  CHECK_CONTAINS(error.message, "shape is missing or negative");
  bad = t;
  bad.dl_tensor.data = NULL;
  CHECK_EQ_INT(EINVAL, ferry_device_array_from_dlpack(&bad, &schema, &array, &error));
  CHECK_CONTAINS(error.message, "data is NULL for 5 values");
  DLManagedTensorVersioned scalar = t;
  scalar.dl_tensor.ndim = 0;
  scalar.dl_tensor.shape = NULL;
  scalar.dl_tensor.byte_offset = 0;
  scalar.dl_tensor.device.device_type = kDLROCM;
  scalar.dl_tensor.device.device_id = 1;
  CHECK_EQ_INT(0, ferry_device_array_from_dlpack(&scalar, &schema, &array, &error));
  CHECK_EQ_INT(1, array.array.length);
  CHECK_EQ_INT(ARROW_DEVICE_ROCM, array.device_type);
  CHECK_EQ_INT(1, array.device_id);
  ferry_device_array_release(&array);
  ferry_schema_release(&schema);
  CHECK_EQ_INT(2, g_foreign_deleted);
}

FERRY_TEST(dlpack_export_refuses_nulls_and_non_numeric_types_and_keeps_the_array) {
  struct FerryDevice* cpu = device(ARROW_DEVICE_CPU, -1);
  struct ArrowSchema schema;
  memset(&schema, 0, sizeof schema);
  struct ArrowDeviceArray array;
  memset(&array, 0, sizeof array);
  make_int32_array(cpu, NULL, FERRY_SYNC_RECORD_EVENT, 8, &schema, &array, NULL);
  struct FerryError error;
  ferry_error_init(&error);
  struct DLManagedTensorVersioned* tensor = NULL;
  array.array.null_count = 1;
  CHECK_EQ_INT(EINVAL,
               ferry_device_array_to_dlpack(&schema, &array, NULL, &tensor, &error));
  CHECK_CONTAINS(error.message, "DLPack tensors cannot represent nulls");
  CHECK(array.array.release != NULL && tensor == NULL);
  array.array.null_count = 0;
  struct ArrowSchema utf8;
  memset(&utf8, 0, sizeof utf8);
  ferry_schema_init(&utf8, "u", NULL, 0, 0, NULL);
  CHECK_EQ_INT(EINVAL,
               ferry_device_array_to_dlpack(&utf8, &array, NULL, &tensor, &error));
  CHECK_CONTAINS(error.message, "format \"u\" is not a fixed-width number type");
  struct ArrowSchema boolean;
  memset(&boolean, 0, sizeof boolean);
  ferry_schema_init(&boolean, "b", NULL, 0, 0, NULL);
  CHECK_EQ_INT(EINVAL,
               ferry_device_array_to_dlpack(&boolean, &array, NULL, &tensor, &error));
  CHECK_CONTAINS(error.message, "booleans are bit-packed");
  /* Structural refusals, each leaving the array alone. */
  CHECK_EQ_INT(EINVAL, ferry_device_array_to_dlpack(NULL, &array, NULL, &tensor, &error));
  array.array.offset = -1;
  CHECK_EQ_INT(EINVAL,
               ferry_device_array_to_dlpack(&schema, &array, NULL, &tensor, &error));
  CHECK_CONTAINS(error.message, "must not be negative");
  array.array.offset = 0;
  array.array.n_buffers = 1;
  CHECK_EQ_INT(EINVAL,
               ferry_device_array_to_dlpack(&schema, &array, NULL, &tensor, &error));
  CHECK_CONTAINS(error.message, "must have 2 buffers and no children (it has 1 buffers");
  array.array.n_buffers = 2;
  const void* data = array.array.buffers[1];
  array.array.buffers[1] = NULL;
  CHECK_EQ_INT(EINVAL,
               ferry_device_array_to_dlpack(&schema, &array, NULL, &tensor, &error));
  CHECK_CONTAINS(error.message, "buffer 1 (data) is NULL for 8 values");
  array.array.buffers[1] = data;
  array.device_type = 5; /* no device type has the value 5 */
  CHECK_EQ_INT(EINVAL,
               ferry_device_array_to_dlpack(&schema, &array, NULL, &tensor, &error));
  CHECK_CONTAINS(error.message, "device type 5 has no DLPack equivalent");
  array.device_type = ARROW_DEVICE_CUDA;
  array.device_id = (int64_t)1 << 40;
  CHECK_EQ_INT(EINVAL,
               ferry_device_array_to_dlpack(&schema, &array, NULL, &tensor, &error));
  CHECK_CONTAINS(error.message, "does not fit DLPack's int32 device id");
  array.device_type = ARROW_DEVICE_CPU;
  array.device_id = -1;
  struct ArrowSchema dictionary_encoded;
  memset(&dictionary_encoded, 0, sizeof dictionary_encoded);
  ferry_schema_init(&dictionary_encoded, "i", NULL, 0, 0, NULL);
  struct ArrowSchema* values_schema = NULL;
  ferry_schema_allocate_dictionary(&dictionary_encoded, &values_schema, NULL);
  ferry_schema_init(values_schema, "u", NULL, 0, 0, NULL);
  CHECK_EQ_INT(EINVAL, ferry_device_array_to_dlpack(&dictionary_encoded, &array, NULL,
                                                    &tensor, &error));
  CHECK_CONTAINS(error.message, "dictionary-encoded");
  ferry_schema_release(&dictionary_encoded);
  CHECK(array.array.release != NULL && tensor == NULL);
  /* A timestamp exports as its int64 storage. */
  struct ArrowSchema timestamp;
  memset(&timestamp, 0, sizeof timestamp);
  ferry_schema_init(&timestamp, "tsu:UTC", NULL, 0, 0, NULL);
  array.array.length = 4; /* 4 int64 values fit the 8 int32 values' 32 bytes */
  CHECK_EQ_INT(0,
               ferry_device_array_to_dlpack(&timestamp, &array, NULL, &tensor, &error));
  CHECK_EQ_INT(64, tensor->dl_tensor.dtype.bits);
  CHECK_EQ_INT(kDLInt, tensor->dl_tensor.dtype.code);
  tensor->deleter(tensor);
  ferry_schema_release(&utf8);
  ferry_schema_release(&boolean);
  ferry_schema_release(&timestamp);
  ferry_schema_release(&schema);
}

FERRY_TEST_MAIN()
