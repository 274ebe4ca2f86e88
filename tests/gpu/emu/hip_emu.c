/* TEST FIXTURE, never shipped or linked into libferry: an emulation of the
 * subset of the HIP runtime that ferry uses, built as a shared library and
 * loaded through FERRY_HIP_LIBRARY, so every line of core/src/hip.c runs in
 * CI without an AMD GPU. Device memory cannot be read by the host (a
 * dereference crashes, as on a GPU); streams run on threads and do their
 * work only once someone waits for it (emu_core.h).
 *
 * Like the real runtime, each thread has a current device (0 at first) and
 * allocations belong to it. Stricter than the real runtime where that
 * catches ferry's mistakes: a copy on a stream of another device than the
 * current one fails with hipErrorInvalidHandle, and copies touching memory
 * the runtime does not know where it must fail with hipErrorInvalidValue.
 *
 * Environment (read when the library is loaded):
 *   FERRY_HIP_EMU_DEVICES=N          number of devices (default 2, at most 8)
 *   FERRY_HIP_EMU_MODE=nodevice      behave like the real runtime on a
 *                                    machine without an AMD GPU: hipInit
 *                                    fails with hipErrorInvalidDevice,
 *                                    hipGetDeviceCount with hipErrorNoDevice
 *   FERRY_HIP_EMU_RUNTIME_VERSION=V  hipRuntimeGetVersion (default 60200000);
 *                                    below 60000000 pointer attributes use
 *                                    the HIP 5 memory types and unknown
 *                                    pointers fail, as in HIP 5
 *   FERRY_HIP_EMU_FAIL=name:nth[:code],...  the nth call of `name` fails
 *                                    (default code hipErrorOutOfMemory for
 *                                    allocations, hipErrorUnknown otherwise) */
#include "../../../core/src/hip_runtime_decls.h"
#include "emu_core.h"

typedef ferry_hipError_t hipError_t;

static int emu_device_count = 2;
static int emu_no_device_mode;
static int emu_runtime_version = 60200000;
static __thread int tls_device;

static unsigned default_failure_code(const char* name) {
  return strstr(name, "alloc") != NULL || strstr(name, "Malloc") != NULL
             ? FERRY_HIP_ERROR_OUT_OF_MEMORY
             : FERRY_HIP_ERROR_UNKNOWN;
}

__attribute__((constructor)) static void hip_emu_load(void) {
  const char* mode = getenv("FERRY_HIP_EMU_MODE");
  emu_no_device_mode = mode != NULL && strcmp(mode, "nodevice") == 0;
  emu_device_count = emu_env_int("FERRY_HIP_EMU_DEVICES", 2);
  if (emu_device_count < 0) emu_device_count = 0;
  if (emu_device_count > EMU_MAX_DEVICES) emu_device_count = EMU_MAX_DEVICES;
  emu_runtime_version = emu_env_int("FERRY_HIP_EMU_RUNTIME_VERSION", 60200000);
  emu_fail_from_env("FERRY_HIP_EMU_FAIL", default_failure_code);
}

#define HIP_ENTER(name)                   \
  do {                                    \
    unsigned injected_ = emu_enter(name); \
    if (injected_ != 0) return injected_; \
  } while (0)
#define HIP_NEED_DEVICE()                            \
  do {                                               \
    if (emu_no_device_mode || emu_device_count == 0) \
      return FERRY_HIP_ERROR_INVALID_DEVICE;         \
  } while (0)

static int hip6(void) { return emu_runtime_version >= 60000000; }

/* A stream of the current device; NULL is its null stream. */
static hipError_t stream_for(ferry_hipStream_t handle, struct EmuStream** out) {
  return emu_stream_for(handle, tls_device, out) == 0 ? FERRY_HIP_SUCCESS
                                                      : FERRY_HIP_ERROR_INVALID_HANDLE;
}

/* A stream of any device; NULL is the current device's null stream. */
static hipError_t any_stream(ferry_hipStream_t handle, struct EmuStream** out) {
  if (handle == NULL) return stream_for(NULL, out);
  pthread_mutex_lock(&emu_lock);
  *out = emu_stream_lookup_locked(handle);
  pthread_mutex_unlock(&emu_lock);
  return *out != NULL ? FERRY_HIP_SUCCESS : FERRY_HIP_ERROR_INVALID_HANDLE;
}

/* ---- runtime and devices
 * ------------------------------------------------------------------ */

EMU_EXPORT hipError_t hipInit(unsigned int flags) {
  HIP_ENTER("hipInit");
  if (flags != 0) return FERRY_HIP_ERROR_INVALID_VALUE;
  HIP_NEED_DEVICE();
  return FERRY_HIP_SUCCESS;
}

EMU_EXPORT hipError_t hipDriverGetVersion(int* version) {
  HIP_ENTER("hipDriverGetVersion");
  if (version == NULL) return FERRY_HIP_ERROR_INVALID_VALUE;
  *version = emu_runtime_version;
  return FERRY_HIP_SUCCESS;
}

EMU_EXPORT hipError_t hipRuntimeGetVersion(int* version) {
  HIP_ENTER("hipRuntimeGetVersion");
  if (version == NULL) return FERRY_HIP_ERROR_INVALID_VALUE;
  *version = emu_runtime_version;
  return FERRY_HIP_SUCCESS;
}

EMU_EXPORT hipError_t hipGetDeviceCount(int* count) {
  HIP_ENTER("hipGetDeviceCount");
  if (count == NULL) return FERRY_HIP_ERROR_INVALID_VALUE;
  if (emu_no_device_mode) {
    *count = 0;
    return FERRY_HIP_ERROR_NO_DEVICE;
  }
  *count = emu_device_count;
  return FERRY_HIP_SUCCESS;
}

EMU_EXPORT hipError_t hipGetDevice(int* device) {
  HIP_ENTER("hipGetDevice");
  HIP_NEED_DEVICE();
  if (device == NULL) return FERRY_HIP_ERROR_INVALID_VALUE;
  *device = tls_device;
  return FERRY_HIP_SUCCESS;
}

EMU_EXPORT hipError_t hipSetDevice(int device) {
  HIP_ENTER("hipSetDevice");
  HIP_NEED_DEVICE();
  if (device < 0 || device >= emu_device_count) return FERRY_HIP_ERROR_INVALID_DEVICE;
  tls_device = device;
  return FERRY_HIP_SUCCESS;
}

EMU_EXPORT hipError_t hipDeviceSynchronize(void) {
  HIP_ENTER("hipDeviceSynchronize");
  HIP_NEED_DEVICE();
  emu_device_synchronize(tls_device);
  return FERRY_HIP_SUCCESS;
}

/* ---- memory
 * ------------------------------------------------------------------------------- */

static hipError_t allocate(enum EmuMemoryKind kind, size_t size, void** out) {
  HIP_NEED_DEVICE();
  if (out == NULL) return FERRY_HIP_ERROR_INVALID_VALUE;
  if (size == 0) {
    *out = NULL; /* HIP returns success and NULL for 0 bytes */
    return FERRY_HIP_SUCCESS;
  }
  void* block = emu_allocate(tls_device, kind, size);
  if (block == NULL) return FERRY_HIP_ERROR_OUT_OF_MEMORY;
  *out = block;
  return FERRY_HIP_SUCCESS;
}

EMU_EXPORT hipError_t hipMalloc(void** pointer, size_t size) {
  HIP_ENTER("hipMalloc");
  return allocate(EMU_MEMORY_DEVICE, size, pointer);
}

EMU_EXPORT hipError_t hipHostMalloc(void** pointer, size_t size, unsigned int flags) {
  HIP_ENTER("hipHostMalloc");
  if (flags != 0) return FERRY_HIP_ERROR_INVALID_VALUE;
  return allocate(EMU_MEMORY_HOST, size, pointer);
}

EMU_EXPORT hipError_t hipFree(void* pointer) {
  HIP_ENTER("hipFree");
  HIP_NEED_DEVICE();
  if (pointer == NULL) return FERRY_HIP_SUCCESS;
  return emu_free(pointer, EMU_MEMORY_DEVICE) == 0 ? FERRY_HIP_SUCCESS
                                                   : FERRY_HIP_ERROR_INVALID_VALUE;
}

EMU_EXPORT hipError_t hipHostFree(void* pointer) {
  HIP_ENTER("hipHostFree");
  HIP_NEED_DEVICE();
  if (pointer == NULL) return FERRY_HIP_SUCCESS;
  return emu_free(pointer, EMU_MEMORY_HOST) == 0 ? FERRY_HIP_SUCCESS
                                                 : FERRY_HIP_ERROR_INVALID_VALUE;
}

/* ---- copies
 * ---------------------------------------------------------------------------------- */

static hipError_t copy(void* dst, const void* src, size_t size, ferry_hipStream_t stream,
                       int dst_must_be_known, int src_must_be_known) {
  struct EmuStream* s = NULL;
  hipError_t rc = stream_for(stream, &s);
  if (rc != FERRY_HIP_SUCCESS) return rc;
  switch (emu_copy(s, dst, src, size, dst_must_be_known, src_must_be_known)) {
    case 0: return FERRY_HIP_SUCCESS;
    case -1: return FERRY_HIP_ERROR_INVALID_VALUE;
    default: return FERRY_HIP_ERROR_OUT_OF_MEMORY;
  }
}

EMU_EXPORT hipError_t hipMemcpyAsync(void* dst, const void* src, size_t size,
                                     ferry_hipMemcpyKind kind, ferry_hipStream_t stream) {
  HIP_ENTER("hipMemcpyAsync");
  HIP_NEED_DEVICE();
  switch (kind) {
    case FERRY_HIP_MEMCPY_HOST_TO_DEVICE:
      return copy(dst, src, size, stream, 1, 0);
    case FERRY_HIP_MEMCPY_DEVICE_TO_HOST:
      return copy(dst, src, size, stream, 0, 1);
    case FERRY_HIP_MEMCPY_DEVICE_TO_DEVICE:
      return copy(dst, src, size, stream, 1, 1);
    default:
      return FERRY_HIP_ERROR_INVALID_MEMCPY_DIRECTION;
  }
}

/* Left out of the "old runtime" build (-DFERRY_HIP_EMU_OLD_RUNTIME), which
 * tests ferry's report of a missing entry point. */
#ifndef FERRY_HIP_EMU_OLD_RUNTIME
EMU_EXPORT hipError_t hipMemcpyPeerAsync(void* dst, int dst_device, const void* src,
                                         int src_device, size_t size,
                                         ferry_hipStream_t stream) {
  HIP_ENTER("hipMemcpyPeerAsync");
  HIP_NEED_DEVICE();
  struct EmuAllocation d, s;
  if (emu_lookup(dst, &d) != 0 || emu_lookup(src, &s) != 0 || d.device != dst_device ||
      s.device != src_device) {
    return FERRY_HIP_ERROR_INVALID_VALUE;
  }
  return copy(dst, src, size, stream, 1, 1);
}
#endif

/* ---- streams and events
 * ----------------------------------------------------------------------- */

EMU_EXPORT hipError_t hipStreamCreateWithFlags(ferry_hipStream_t* stream,
                                               unsigned int flags) {
  HIP_ENTER("hipStreamCreateWithFlags");
  HIP_NEED_DEVICE();
  if (stream == NULL || flags > 1u) return FERRY_HIP_ERROR_INVALID_VALUE;
  struct EmuStream* s = emu_stream_create(tls_device);
  if (s == NULL) return FERRY_HIP_ERROR_OUT_OF_MEMORY;
  *stream = (ferry_hipStream_t)(void*)s;
  return FERRY_HIP_SUCCESS;
}

EMU_EXPORT hipError_t hipStreamDestroy(ferry_hipStream_t stream) {
  HIP_ENTER("hipStreamDestroy");
  HIP_NEED_DEVICE();
  return emu_stream_destroy(stream) == 0 ? FERRY_HIP_SUCCESS
                                         : FERRY_HIP_ERROR_INVALID_HANDLE;
}

EMU_EXPORT hipError_t hipStreamSynchronize(ferry_hipStream_t stream) {
  HIP_ENTER("hipStreamSynchronize");
  HIP_NEED_DEVICE();
  struct EmuStream* s = NULL;
  hipError_t rc = any_stream(stream, &s);
  if (rc == FERRY_HIP_SUCCESS) emu_stream_synchronize(s);
  return rc;
}

EMU_EXPORT hipError_t hipStreamQuery(ferry_hipStream_t stream) {
  HIP_ENTER("hipStreamQuery");
  struct EmuStream* s = NULL;
  hipError_t rc = any_stream(stream, &s);
  if (rc != FERRY_HIP_SUCCESS) return rc;
  return emu_stream_query(s) == 0 ? FERRY_HIP_SUCCESS : FERRY_HIP_ERROR_NOT_READY;
}

EMU_EXPORT hipError_t hipEventCreateWithFlags(ferry_hipEvent_t* event,
                                              unsigned int flags) {
  HIP_ENTER("hipEventCreateWithFlags");
  HIP_NEED_DEVICE();
  if (event == NULL || (flags & ~7u) != 0) return FERRY_HIP_ERROR_INVALID_VALUE;
  struct EmuEvent* e = emu_event_create(tls_device);
  if (e == NULL) return FERRY_HIP_ERROR_OUT_OF_MEMORY;
  *event = (ferry_hipEvent_t)(void*)e;
  return FERRY_HIP_SUCCESS;
}

EMU_EXPORT hipError_t hipEventDestroy(ferry_hipEvent_t event) {
  HIP_ENTER("hipEventDestroy");
  return emu_event_destroy(event) == 0 ? FERRY_HIP_SUCCESS
                                       : FERRY_HIP_ERROR_INVALID_HANDLE;
}

EMU_EXPORT hipError_t hipEventRecord(ferry_hipEvent_t event, ferry_hipStream_t stream) {
  HIP_ENTER("hipEventRecord");
  HIP_NEED_DEVICE();
  struct EmuStream* s = NULL;
  hipError_t rc = any_stream(stream, &s);
  if (rc != FERRY_HIP_SUCCESS) return rc;
  pthread_mutex_lock(&emu_lock);
  struct EmuEvent* e = emu_event_lookup_locked(event);
  if (e == NULL || e->device != s->device) {
    rc = FERRY_HIP_ERROR_INVALID_HANDLE;
  } else {
    emu_event_record_locked(e, s);
  }
  pthread_mutex_unlock(&emu_lock);
  return rc;
}

EMU_EXPORT hipError_t hipEventQuery(ferry_hipEvent_t event) {
  HIP_ENTER("hipEventQuery");
  pthread_mutex_lock(&emu_lock);
  struct EmuEvent* e = emu_event_lookup_locked(event);
  hipError_t rc = e == NULL                      ? FERRY_HIP_ERROR_INVALID_HANDLE
                  : emu_event_query_locked(e) ? FERRY_HIP_SUCCESS
                                                 : FERRY_HIP_ERROR_NOT_READY;
  pthread_mutex_unlock(&emu_lock);
  return rc;
}

EMU_EXPORT hipError_t hipEventSynchronize(ferry_hipEvent_t event) {
  HIP_ENTER("hipEventSynchronize");
  pthread_mutex_lock(&emu_lock);
  struct EmuEvent* e = emu_event_lookup_locked(event);
  if (e != NULL) emu_event_synchronize_locked(e);
  pthread_mutex_unlock(&emu_lock);
  return e != NULL ? FERRY_HIP_SUCCESS : FERRY_HIP_ERROR_INVALID_HANDLE;
}

EMU_EXPORT hipError_t hipStreamWaitEvent(ferry_hipStream_t stream, ferry_hipEvent_t event,
                                         unsigned int flags) {
  HIP_ENTER("hipStreamWaitEvent");
  if (flags != 0) return FERRY_HIP_ERROR_INVALID_VALUE;
  struct EmuStream* s = NULL;
  hipError_t rc = any_stream(stream, &s);
  if (rc != FERRY_HIP_SUCCESS) return rc;
  pthread_mutex_lock(&emu_lock);
  struct EmuEvent* e = emu_event_lookup_locked(event);
  if (e == NULL) {
    rc = FERRY_HIP_ERROR_INVALID_HANDLE;
  } else if (emu_stream_wait_event_locked(s, e) != 0) {
    rc = FERRY_HIP_ERROR_OUT_OF_MEMORY;
  }
  pthread_mutex_unlock(&emu_lock);
  return rc;
}

/* ---- pointer queries and error names
 * --------------------------------------------------------------- */

EMU_EXPORT hipError_t hipPointerGetAttributes(
    struct ferry_hipPointerAttribute* attributes, const void* pointer) {
  HIP_ENTER("hipPointerGetAttributes");
  if (attributes == NULL) return FERRY_HIP_ERROR_INVALID_VALUE;
  struct EmuAllocation a;
  memset(attributes, 0, sizeof(*attributes));
  if (emu_lookup(pointer, &a) != 0) {
    if (!hip6()) return FERRY_HIP_ERROR_INVALID_VALUE;
    attributes->memory_type = FERRY_HIP6_MEMORY_TYPE_UNREGISTERED;
    attributes->device = -1;
    return FERRY_HIP_SUCCESS;
  }
  int host = a.kind == EMU_MEMORY_HOST;
  if (hip6()) {
    attributes->memory_type =
        host ? FERRY_HIP6_MEMORY_TYPE_HOST : FERRY_HIP6_MEMORY_TYPE_DEVICE;
  } else {
    attributes->memory_type =
        host ? FERRY_HIP5_MEMORY_TYPE_HOST : FERRY_HIP5_MEMORY_TYPE_DEVICE;
  }
  if (a.reported_type >= 0) attributes->memory_type = (unsigned)a.reported_type;
  if (a.reported_managed >= 0) attributes->is_managed = a.reported_managed;
  attributes->device = a.device;
  attributes->device_pointer = (void*)pointer;
  attributes->host_pointer = host ? (void*)pointer : NULL;
  return FERRY_HIP_SUCCESS;
}

EMU_EXPORT hipError_t hipMemGetAddressRange(void** base, size_t* size, void* pointer) {
  HIP_ENTER("hipMemGetAddressRange");
  struct EmuAllocation a;
  if (emu_lookup(pointer, &a) != 0) return FERRY_HIP_ERROR_NOT_FOUND;
  if (base != NULL) *base = (void*)a.start;
  if (size != NULL) *size = a.size;
  return FERRY_HIP_SUCCESS;
}

EMU_EXPORT const char* hipGetErrorName(hipError_t code) {
  return code == FERRY_HIP_SUCCESS ? "hipSuccess" : "hipErrorEmulated";
}

/* ---- controls for tests (not part of the HIP API)
 * ------------------------------------------------------ */

EMU_EXPORT void hip_emu_fail(const char* name, int64_t nth, unsigned code) {
  emu_fail(name, nth, code);
}
EMU_EXPORT void hip_emu_clear_failures(void) { emu_clear_failures(); }
EMU_EXPORT int64_t hip_emu_calls(const char* name) { return emu_calls(name); }
EMU_EXPORT int hip_emu_gate_close(void* stream) { return emu_gate_close(stream); }
EMU_EXPORT void hip_emu_gates_open(void) { emu_gates_open(); }
EMU_EXPORT int64_t hip_emu_stream_pending(void* stream) {
  return emu_stream_pending(stream);
}
EMU_EXPORT int64_t hip_emu_live_allocations(void) { return emu_live(0); }
EMU_EXPORT int64_t hip_emu_live_streams(void) { return emu_live(1); }
EMU_EXPORT int64_t hip_emu_live_events(void) { return emu_live(2); }
EMU_EXPORT int hip_emu_current_device(void) { return tls_device; }
EMU_EXPORT int hip_emu_event_done(void* event) {
  pthread_mutex_lock(&emu_lock);
  struct EmuEvent* e = emu_event_lookup_locked(event);
  int done = e == NULL ? -1 : emu_event_done_locked(e);
  pthread_mutex_unlock(&emu_lock);
  return done;
}
EMU_EXPORT int hip_emu_override_report(const void* pointer, int type, int managed) {
  return emu_override_report(pointer, type, managed);
}
EMU_EXPORT int hip_emu_pointer_device(const void* pointer) {
  struct EmuAllocation a;
  return emu_lookup(pointer, &a) == 0 ? a.device : -1;
}
