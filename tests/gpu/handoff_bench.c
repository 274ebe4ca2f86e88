/* The GPU handoff benchmark: host time per handoff of one device array from
 * a producer to a consumer on the same GPU -- export with an event recorded
 * on the producer's stream, move, the consumer's stream waits on the event,
 * release -- for ferry and for the driver floor, a program doing the same
 * event work by hand with the driver's own entry points:
 *   floor, fresh event   create, record, move, wait, release, destroy
 *   floor, reused event  record, move, wait, release (one event, made once)
 * ferry runs twice: with the device's primary context current on the thread
 * (a CUDA runtime program) and with no context current (ferry then pushes
 * and pops it per call). The producer's stream has no work queued, so the
 * figures are the host cost of the handoff itself.
 *
 *   handoff_bench [--handoffs N] [--rounds N]
 *       on a GPU: prints the figures (best round of each variant) and the
 *       ratios against both floors; a backend without a device is SKIPPED
 *       loudly with the reason, and so is ferry's test emulation (no
 *       figures from it). Exits 0 unless a call failed.
 *   handoff_bench --check
 *       against the driver emulations (FERRY_CUDA_LIBRARY, FERRY_HIP_LIBRARY):
 *       runs every loop and counts its driver calls per handoff (ferry in
 *       the steady state creates and destroys no event, records once and
 *       waits once, and pushes no context when it is current). No figures.
 *       Prints "N passed, N failed"; exits 1 on a failure.
 *
 * Targets on a GPU (issue 11): ferry at most 1.2x the reused-event floor and
 * at most 0.8x nanoarrow's handoff (nanoarrow is not built here). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuda_driver_api.h"
#include "gpu_bench.h"
#include "ferry/ferry.h"
#include "hip_runtime_decls.h"

static int g_passed, g_failed, g_skipped;

/* ---- the driver's own entry points --------------------------------------------- */

/* One backend's event work by hand, through the library ferry loaded. */
struct Driver {
  const char* name; /* "CUDA" / "ROCm" */
  int64_t index;
  ArrowDeviceType device_type;
  void* library;
  int emulated;
  /* CUDA */
  ferry_cuDeviceGet_fn cu_device_get;
  ferry_cuDevicePrimaryCtxRetain_fn cu_retain;
  ferry_cuDevicePrimaryCtxRelease_v2_fn cu_release;
  ferry_cuCtxPushCurrent_v2_fn cu_push;
  ferry_cuCtxPopCurrent_v2_fn cu_pop;
  ferry_cuEventCreate_fn cu_event_create;
  ferry_cuEventRecord_fn cu_event_record;
  ferry_cuEventDestroy_v2_fn cu_event_destroy;
  ferry_cuStreamWaitEvent_fn cu_wait;
  ferry_CUcontext cu_context;
  /* HIP */
  ferry_hipSetDevice_fn hip_set_device;
  ferry_hipEventCreateWithFlags_fn hip_event_create;
  ferry_hipEventRecord_fn hip_event_record;
  ferry_hipEventDestroy_fn hip_event_destroy;
  ferry_hipStreamWaitEvent_fn hip_wait;
  /* The emulation's call counter (--check only). */
  int64_t (*calls)(const char* name);
};

static int driver_load(struct Driver* d) {
  void* h = d->library;
#define GET(field, symbol)              \
  *(void**)&d->field = dlsym(h, symbol); \
  if (d->field == NULL) return 1
  if (d->index == FERRY_BACKEND_INDEX_CUDA) {
    GET(cu_device_get, "cuDeviceGet");
    GET(cu_retain, "cuDevicePrimaryCtxRetain");
    GET(cu_release, "cuDevicePrimaryCtxRelease_v2");
    GET(cu_push, "cuCtxPushCurrent_v2");
    GET(cu_pop, "cuCtxPopCurrent_v2");
    GET(cu_event_create, "cuEventCreate");
    GET(cu_event_record, "cuEventRecord");
    GET(cu_event_destroy, "cuEventDestroy_v2");
    GET(cu_wait, "cuStreamWaitEvent");
    ferry_CUdevice device = 0;
    if (d->cu_device_get(&device, 0) != 0 || d->cu_retain(&d->cu_context, device) != 0) {
      return 1;
    }
  } else {
    GET(hip_set_device, "hipSetDevice");
    GET(hip_event_create, "hipEventCreateWithFlags");
    GET(hip_event_record, "hipEventRecord");
    GET(hip_event_destroy, "hipEventDestroy");
    GET(hip_wait, "hipStreamWaitEvent");
    if (d->hip_set_device(0) != 0) return 1;
  }
  if (d->emulated) {
    GET(calls, d->index == FERRY_BACKEND_INDEX_CUDA ? "cuda_emu_calls" : "hip_emu_calls");
  }
#undef GET
  return 0;
}

static int is_cuda(const struct Driver* d) { return d->index == FERRY_BACKEND_INDEX_CUDA; }

/* Makes device 0 current on this thread (its primary context for CUDA). */
static int make_current(struct Driver* d) {
  return is_cuda(d) ? d->cu_push(d->cu_context) != 0 : d->hip_set_device(0) != 0;
}
/* Leaves this thread with no current context (CUDA; HIP always has a device). */
static int drop_current(struct Driver* d) {
  ferry_CUcontext ignored;
  return is_cuda(d) ? d->cu_pop(&ignored) != 0 : 0;
}

static int event_create(struct Driver* d, void* event) {
  return is_cuda(d)
             ? d->cu_event_create((ferry_CUevent*)event, FERRY_CU_EVENT_DISABLE_TIMING) != 0
             : d->hip_event_create((ferry_hipEvent_t*)event,
                                   FERRY_HIP_EVENT_DISABLE_TIMING) != 0;
}
static int event_destroy(struct Driver* d, void* event) {
  return is_cuda(d) ? d->cu_event_destroy(*(ferry_CUevent*)event) != 0
                    : d->hip_event_destroy(*(ferry_hipEvent_t*)event) != 0;
}
static int event_record(struct Driver* d, void* event, void* stream) {
  return is_cuda(d)
             ? d->cu_event_record(*(ferry_CUevent*)event, (ferry_CUstream)stream) != 0
             : d->hip_event_record(*(ferry_hipEvent_t*)event, (ferry_hipStream_t)stream) !=
                   0;
}
static int stream_wait(struct Driver* d, void* stream, void* event) {
  return is_cuda(d) ? d->cu_wait((ferry_CUstream)stream, *(ferry_CUevent*)event, 0) != 0
                    : d->hip_wait((ferry_hipStream_t)stream, *(ferry_hipEvent_t*)event,
                                  0) != 0;
}

/* ---- the handoff, four ways ---------------------------------------------------------- */

enum Variant { FERRY_CURRENT, FERRY_NO_CONTEXT, FLOOR_FRESH, FLOOR_REUSED, N_VARIANTS };
static const char* const kVariantNames[N_VARIANTS] = {
    "ferry, context current", "ferry, no current context", "driver floor, fresh event",
    "driver floor, reused event"};

/* What every handoff moves: a one-buffer array whose release does nothing,
 * as a producer's array over memory it keeps. */
static void release_nothing(struct ArrowArray* array) { array->release = NULL; }

struct Bench {
  struct Driver* driver;
  struct FerryDevice* device;
  void* producer;
  void* consumer;
  struct ArrowArray template_array;
  const void* buffers[2];
  union {
    ferry_CUevent cu;
    ferry_hipEvent_t hip;
  } reused_event;
};

/* Runs `n` handoffs of one variant; 0 on success. */
static int run_handoffs(struct Bench* b, enum Variant variant, int n) {
  struct Driver* d = b->driver;
  for (int i = 0; i < n; i++) {
    struct ArrowArray produced = b->template_array;
    struct ArrowDeviceArray exported, moved;
    memset(&moved, 0, sizeof moved);
    if (variant == FERRY_CURRENT || variant == FERRY_NO_CONTEXT) {
      memset(&exported, 0, sizeof exported);
      if (ferry_device_array_init_async(&exported, &produced, b->device, b->producer,
                                        FERRY_SYNC_RECORD_EVENT, NULL) != 0 ||
          ferry_device_array_move(&exported, &moved) != 0 ||
          ferry_device_array_wait(&moved, b->consumer, NULL) != 0) {
        return 1;
      }
      ferry_device_array_release(&moved);
      continue;
    }
    union {
      ferry_CUevent cu;
      ferry_hipEvent_t hip;
    } fresh;
    void* event = variant == FLOOR_FRESH ? (void*)&fresh : (void*)&b->reused_event;
    if (variant == FLOOR_FRESH && event_create(d, event) != 0) return 1;
    if (event_record(d, event, b->producer) != 0) return 1;
    exported.array = produced;
    exported.device_id = 0;
    exported.device_type = d->device_type;
    exported.sync_event = event;
    moved = exported; /* the move */
    exported.array.release = NULL;
    if (stream_wait(d, b->consumer, moved.sync_event) != 0) return 1;
    moved.array.release(&moved.array);
    if (variant == FLOOR_FRESH && event_destroy(d, event) != 0) return 1;
  }
  return 0;
}

/* Driver calls so far, from the emulation's counters (--check only). */
struct Counts {
  int64_t create, destroy, record, wait, push, pop;
};

static struct Counts counts(struct Driver* d) {
  int cuda = is_cuda(d);
  struct Counts c = {
      d->calls(cuda ? "cuEventCreate" : "hipEventCreateWithFlags"),
      d->calls(cuda ? "cuEventDestroy_v2" : "hipEventDestroy"),
      d->calls(cuda ? "cuEventRecord" : "hipEventRecord"),
      d->calls(cuda ? "cuStreamWaitEvent" : "hipStreamWaitEvent"),
      d->calls(cuda ? "cuCtxPushCurrent_v2" : "hipSetDevice"),
      d->calls(cuda ? "cuCtxPopCurrent_v2" : "hipSetDevice"),
  };
  return c;
}

/* "No current context" is a CUDA notion: HIP always has a current device. */
static int variant_applies(const struct Driver* d, enum Variant v) {
  return v != FERRY_NO_CONTEXT || is_cuda(d);
}

/* Runs `n` handoffs of `variant` with the thread's context as the variant
 * wants it, then lets the streams drain. `*seconds` gets the time of the
 * handoffs alone; `*calls`, when not NULL, the driver calls they made. */
static int run_variant(struct Bench* b, enum Variant variant, int n, double* seconds,
                       struct Counts* calls) {
  int drop = variant == FERRY_NO_CONTEXT;
  if (drop && drop_current(b->driver) != 0) return 1;
  struct Counts before = {0, 0, 0, 0, 0, 0};
  if (calls != NULL) before = counts(b->driver);
  double t0 = now_seconds();
  int failed = run_handoffs(b, variant, n);
  double t1 = now_seconds();
  if (calls != NULL) {
    struct Counts after = counts(b->driver);
    *calls = (struct Counts){after.create - before.create, after.destroy - before.destroy,
                             after.record - before.record, after.wait - before.wait,
                             after.push - before.push,     after.pop - before.pop};
  }
  if (seconds != NULL) *seconds = t1 - t0;
  if (drop && make_current(b->driver) != 0) return 1;
  if (ferry_device_stream_synchronize(b->device, b->consumer, NULL) != 0 ||
      ferry_device_stream_synchronize(b->device, b->producer, NULL) != 0) {
    return 1;
  }
  return failed;
}

static int bench_setup(struct Bench* b, struct Driver* d) {
  memset(b, 0, sizeof *b);
  b->driver = d;
  if (ferry_device_resolve(d->device_type, 0, &b->device, NULL) != 0) return 1;
  if (ferry_device_stream_create(b->device, &b->producer, NULL) != 0 ||
      ferry_device_stream_create(b->device, &b->consumer, NULL) != 0) {
    return 1;
  }
  void* buffer = NULL;
  if (ferry_device_allocate(b->device, 64, &buffer, NULL) != 0) return 1;
  b->buffers[0] = NULL;
  b->buffers[1] = buffer;
  b->template_array.length = 16;
  b->template_array.n_buffers = 2;
  b->template_array.buffers = b->buffers;
  b->template_array.release = release_nothing;
  if (make_current(d) != 0) return 1;
  return event_create(d, &b->reused_event);
}

static void bench_teardown(struct Bench* b) {
  event_destroy(b->driver, &b->reused_event);
  drop_current(b->driver);
  ferry_device_deallocate(b->device, (void*)b->buffers[1], NULL);
  ferry_device_stream_destroy(b->device, b->producer, NULL);
  ferry_device_stream_destroy(b->device, b->consumer, NULL);
}

/* ---- figures (on a GPU) ---------------------------------------------------------------- */

static void report(const char* what, int failed) {
  if (failed) {
    g_failed++;
    printf("FAILED: %s\n", what);
  } else {
    g_passed++;
    printf("ok: %s\n", what);
  }
}

/* Times every variant; prints the figures unless `withhold` (the
 * emulation's times say nothing about a GPU). */
static void measure(struct Bench* b, int handoffs, int rounds, int withhold) {
  double best[N_VARIANTS];
  for (int v = 0; v < N_VARIANTS; v++) best[v] = 1e30;
  for (int v = 0; v < N_VARIANTS; v++) {
    if (!variant_applies(b->driver, (enum Variant)v)) continue;
    if (run_variant(b, (enum Variant)v, handoffs / 10 + 1, NULL, NULL) != 0) {
      report("handoff warm-up", 1);
      return;
    }
  }
  for (int r = 0; r < rounds; r++) {
    for (int k = 0; k < N_VARIANTS; k++) {
      enum Variant v = (enum Variant)((k + r) % N_VARIANTS); /* rotate the order */
      if (!variant_applies(b->driver, v)) continue;
      double seconds = 0;
      if (run_variant(b, v, handoffs, &seconds, NULL) != 0) {
        report(kVariantNames[v], 1);
        return;
      }
      if (seconds / handoffs < best[v]) best[v] = seconds / handoffs;
    }
  }
  if (withhold) {
    report("timing loops ran on the emulation (no figures: not a GPU)", 0);
    return;
  }
  printf("%s handoff, host time per handoff (best of %d rounds x %d handoffs):\n",
         b->driver->name, rounds, handoffs);
  for (int v = 0; v < N_VARIANTS; v++) {
    if (!variant_applies(b->driver, (enum Variant)v)) continue;
    printf("  %-28s %7.3f us", kVariantNames[v], best[v] * 1e6);
    if (v == FERRY_CURRENT || v == FERRY_NO_CONTEXT) {
      printf("   %.2fx the reused-event floor (target <= 1.20), %.2fx the fresh-event floor",
             best[v] / best[FLOOR_REUSED], best[v] / best[FLOOR_FRESH]);
    }
    printf("\n");
  }
  printf("  (nanoarrow is not measured here; its target: ferry <= 0.80x nanoarrow's "
         "handoff)\n");
  report("handoff benchmark ran", 0);
}

static void check_counts(struct Bench* b, enum Variant v, int n) {
  struct Driver* d = b->driver;
  /* Expected driver calls per handoff: create, destroy, record, wait, push, pop. */
  int cuda_pushes = is_cuda(d) && v == FERRY_NO_CONTEXT ? 2 : 0;
  int expected[6] = {v == FLOOR_FRESH, v == FLOOR_FRESH, 1, 1, cuda_pushes, cuda_pushes};
  struct Counts calls = {0};  /* run_variant fills it only when it runs */
  int failed = run_variant(b, v, n, NULL, &calls);
  int64_t got[6] = {calls.create, calls.destroy, calls.record,
                    calls.wait,   calls.push,    calls.pop};
  static const char* const kNames[6] = {"event creates", "event destroys", "records",
                                        "waits",         "context pushes", "context pops"};
  for (int i = 0; i < 6; i++) {
    if (got[i] != (int64_t)expected[i] * n) {
      printf("    %s: %s per handoff: %.2f, expected %d\n", kVariantNames[v], kNames[i],
             (double)got[i] / n, expected[i]);
      failed = 1;
    }
  }
  char what[160];
  snprintf(what, sizeof what,
           "%s [EMULATION]: %s: %d create, %d destroy, 1 record, 1 wait, %d push per "
           "handoff",
           d->name, kVariantNames[v], expected[0], expected[1], expected[4]);
  report(what, failed);
}

/* ---- main ------------------------------------------------------------------------------ */

static void run_backend(struct Driver* d, int check, int handoffs, int rounds) {
  struct FerryError error;
  ferry_error_init(&error);
  int rc = ferry_backend_probe(d->index, &error);
  if (rc != 0) {
    if (check) {
      report(d->name, 1);
      printf("    the %s emulation is not loaded: %s\n", d->name, error.message);
    } else {
      g_skipped++;
      printf("SKIPPED: no %s device: %s (%s)\n", d->name, error.message,
             ferry_errno_name(rc));
    }
    return;
  }
  d->library = driver_library_open(d->index);
  d->emulated = driver_library_is_emulation(d->library);
  if (!check && d->emulated) {
    g_skipped++;
    printf("SKIPPED: %s: the loaded driver is ferry's test emulation, not a GPU: no "
           "figures (--check counts its driver calls instead)\n",
           d->name);
    return;
  }
  if (check && !d->emulated) {
    g_skipped++;
    printf("SKIPPED: %s: --check counts calls of ferry's driver emulation; this is a real "
           "driver (run without --check for figures)\n",
           d->name);
    return;
  }
  struct Bench b;
  if (d->library == NULL || driver_load(d) != 0 || bench_setup(&b, d) != 0) {
    report("driver entry points and benchmark setup", 1);
    return;
  }
  if (check) {
    enum { N = 50 };
    for (int v = 0; v < N_VARIANTS; v++) {
      if (!variant_applies(d, (enum Variant)v)) continue;
      /* One handoff first: ferry's pool holds an event from then on. */
      if (run_variant(&b, (enum Variant)v, 1, NULL, NULL) != 0) report("warm-up", 1);
      check_counts(&b, (enum Variant)v, N);
    }
    measure(&b, 100, 2, 1);
  } else {
    measure(&b, handoffs, rounds, 0);
  }
  bench_teardown(&b);
  if (is_cuda(d)) d->cu_release(0);
}

int main(int argc, char** argv) {
  int check = 0, handoffs = 20000, rounds = 7;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--check") == 0) {
      check = 1;
    } else if (strcmp(argv[i], "--handoffs") == 0 && i + 1 < argc) {
      handoffs = atoi(argv[++i]);
    } else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) {
      rounds = atoi(argv[++i]);
    } else {
      handoffs = 0;
    }
  }
  if (handoffs <= 0 || rounds <= 0) {
    fprintf(stderr, "usage: handoff_bench [--handoffs N] [--rounds N] | --check\n");
    return 2;
  }
  struct Driver cuda = {.name = "CUDA",
                        .index = FERRY_BACKEND_INDEX_CUDA,
                        .device_type = ARROW_DEVICE_CUDA};
  struct Driver rocm = {.name = "ROCm",
                        .index = FERRY_BACKEND_INDEX_ROCM,
                        .device_type = ARROW_DEVICE_ROCM};
  run_backend(&cuda, check, handoffs, rounds);
  run_backend(&rocm, check, handoffs, rounds);
  printf("%d passed, %d failed, %d skipped\n", g_passed, g_failed, g_skipped);
  return g_failed == 0 ? 0 : 1;
}
