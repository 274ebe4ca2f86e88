/* TEST FIXTURE, never shipped or linked into libferry: an emulation of the
 * subset of the CUDA driver API that ferry uses, built as a shared library
 * and loaded by ferry through FERRY_CUDA_LIBRARY, so every line of
 * core/src/cuda.c runs in CI without a GPU. Device memory cannot be read by
 * the host (a dereference crashes, as on a GPU); streams run on threads and
 * do their work only once someone waits for it (emu_core.h).
 *
 * It is stricter than needed where that catches ferry's mistakes: calls
 * that need a context fail with CUDA_ERROR_INVALID_CONTEXT when none is
 * current (so a missing cuCtxPushCurrent shows), allocations belong to the
 * current context's device, copies on a stream of another device fail with
 * CUDA_ERROR_INVALID_HANDLE, and copies from or to memory the driver does
 * not know fail with CUDA_ERROR_INVALID_VALUE.
 *
 * Environment (read when the library is loaded):
 *   FERRY_CUDA_EMU_DEVICES=N    number of devices (default 2, at most 8)
 *   FERRY_CUDA_EMU_MODE=stub    behave like the toolkit's stub libcuda.so:
 *                               every call returns CUDA_ERROR_STUB_LIBRARY
 *   FERRY_CUDA_EMU_MODE=nodevice  cuInit returns CUDA_ERROR_NO_DEVICE
 *   FERRY_CUDA_EMU_FAIL=name:nth[:code],...  the nth call of `name` fails
 *                               (default code: CUDA_ERROR_OUT_OF_MEMORY for
 *                               allocations, CUDA_ERROR_UNKNOWN otherwise)
 * Tests reach the same controls through the cuda_emu_* functions below. */
#include "../../../core/src/cuda_driver_api.h"
#include "emu_core.h"

typedef ferry_CUresult CUresult;

struct EmuContext {
  int device;
  int retains;
};

static struct EmuContext emu_contexts[EMU_MAX_DEVICES];
static int emu_stub_mode;
static int emu_no_device_mode;
static int emu_device_count = 2;
static int emu_initialized;

#define EMU_CONTEXT_STACK 16
static __thread struct EmuContext* tls_contexts[EMU_CONTEXT_STACK];
static __thread int tls_depth;

static unsigned default_failure_code(const char* name) {
  return strstr(name, "Alloc") != NULL ? FERRY_CUDA_ERROR_OUT_OF_MEMORY
                                       : FERRY_CUDA_ERROR_UNKNOWN;
}

__attribute__((constructor)) static void cuda_emu_load(void) {
  const char* mode = getenv("FERRY_CUDA_EMU_MODE");
  emu_stub_mode = mode != NULL && strcmp(mode, "stub") == 0;
  emu_no_device_mode = mode != NULL && strcmp(mode, "nodevice") == 0;
  emu_device_count = emu_env_int("FERRY_CUDA_EMU_DEVICES", 2);
  if (emu_device_count < 0) emu_device_count = 0;
  if (emu_device_count > EMU_MAX_DEVICES) emu_device_count = EMU_MAX_DEVICES;
  for (int i = 0; i < EMU_MAX_DEVICES; i++) emu_contexts[i].device = i;
  emu_fail_from_env("FERRY_CUDA_EMU_FAIL", default_failure_code);
}

/* Every entry point starts here: stub mode, injected failures, cuInit. */
#define CU_ENTER(name)                                       \
  do {                                                       \
    if (emu_stub_mode) return FERRY_CUDA_ERROR_STUB_LIBRARY; \
    unsigned injected_ = emu_enter(name);                    \
    if (injected_ != 0) return injected_;                    \
  } while (0)
#define CU_NEED_INIT()                                             \
  do {                                                             \
    if (!emu_initialized) return FERRY_CUDA_ERROR_NOT_INITIALIZED; \
  } while (0)
#define CU_NEED_CONTEXT(context_var)                                                   \
  struct EmuContext* context_var = tls_depth > 0 ? tls_contexts[tls_depth - 1] : NULL; \
  if (context_var == NULL) return FERRY_CUDA_ERROR_INVALID_CONTEXT

static struct EmuContext* context_from_handle(ferry_CUcontext handle) {
  for (int i = 0; i < emu_device_count; i++) {
    if ((ferry_CUcontext)(void*)&emu_contexts[i] == handle &&
        emu_contexts[i].retains > 0) {
      return &emu_contexts[i];
    }
  }
  return NULL;
}

/* Resolves a stream handle for work on `device`: NULL is the legacy stream. */
static CUresult stream_for(ferry_CUstream handle, int device, struct EmuStream** out) {
  return emu_stream_for(handle, device, out) == 0 ? FERRY_CUDA_SUCCESS
                                                  : FERRY_CUDA_ERROR_INVALID_HANDLE;
}

/* ---- initialization, devices, contexts
 * ------------------------------------------------- */

EMU_EXPORT CUresult cuInit(unsigned int flags) {
  CU_ENTER("cuInit");
  if (flags != 0) return FERRY_CUDA_ERROR_INVALID_VALUE;
  if (emu_no_device_mode) return FERRY_CUDA_ERROR_NO_DEVICE;
  emu_initialized = 1;
  return FERRY_CUDA_SUCCESS;
}

EMU_EXPORT CUresult cuDriverGetVersion(int* version) {
  CU_ENTER("cuDriverGetVersion");
  if (version == NULL) return FERRY_CUDA_ERROR_INVALID_VALUE;
  *version = 12090;
  return FERRY_CUDA_SUCCESS;
}

EMU_EXPORT CUresult cuDeviceGetCount(int* count) {
  CU_ENTER("cuDeviceGetCount");
  CU_NEED_INIT();
  if (count == NULL) return FERRY_CUDA_ERROR_INVALID_VALUE;
  *count = emu_device_count;
  return FERRY_CUDA_SUCCESS;
}

EMU_EXPORT CUresult cuDeviceGet(ferry_CUdevice* device, int ordinal) {
  CU_ENTER("cuDeviceGet");
  CU_NEED_INIT();
  if (device == NULL) return FERRY_CUDA_ERROR_INVALID_VALUE;
  if (ordinal < 0 || ordinal >= emu_device_count) return FERRY_CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return FERRY_CUDA_SUCCESS;
}

EMU_EXPORT CUresult cuDevicePrimaryCtxRetain(ferry_CUcontext* context,
                                             ferry_CUdevice device) {
  CU_ENTER("cuDevicePrimaryCtxRetain");
  CU_NEED_INIT();
  if (context == NULL) return FERRY_CUDA_ERROR_INVALID_VALUE;
  if (device < 0 || device >= emu_device_count) return FERRY_CUDA_ERROR_INVALID_DEVICE;
  pthread_mutex_lock(&emu_lock);
  emu_contexts[device].retains++;
  pthread_mutex_unlock(&emu_lock);
  *context = (ferry_CUcontext)(void*)&emu_contexts[device];
  return FERRY_CUDA_SUCCESS;
}

EMU_EXPORT CUresult cuDevicePrimaryCtxRelease_v2(ferry_CUdevice device) {
  CU_ENTER("cuDevicePrimaryCtxRelease_v2");
  CU_NEED_INIT();
  if (device < 0 || device >= emu_device_count) return FERRY_CUDA_ERROR_INVALID_DEVICE;
  pthread_mutex_lock(&emu_lock);
  int ok = emu_contexts[device].retains > 0;
  if (ok) emu_contexts[device].retains--;
  pthread_mutex_unlock(&emu_lock);
  return ok ? FERRY_CUDA_SUCCESS : FERRY_CUDA_ERROR_INVALID_CONTEXT;
}

EMU_EXPORT CUresult cuCtxPushCurrent_v2(ferry_CUcontext context) {
  CU_ENTER("cuCtxPushCurrent_v2");
  CU_NEED_INIT();
  struct EmuContext* c = context_from_handle(context);
  if (c == NULL || tls_depth == EMU_CONTEXT_STACK)
    return FERRY_CUDA_ERROR_INVALID_CONTEXT;
  tls_contexts[tls_depth++] = c;
  return FERRY_CUDA_SUCCESS;
}

EMU_EXPORT CUresult cuCtxPopCurrent_v2(ferry_CUcontext* context) {
  CU_ENTER("cuCtxPopCurrent_v2");
  CU_NEED_INIT();
  if (tls_depth == 0) return FERRY_CUDA_ERROR_INVALID_CONTEXT;
  struct EmuContext* c = tls_contexts[--tls_depth];
  if (context != NULL) *context = (ferry_CUcontext)(void*)c;
  return FERRY_CUDA_SUCCESS;
}

EMU_EXPORT CUresult cuCtxGetCurrent(ferry_CUcontext* context) {
  CU_ENTER("cuCtxGetCurrent");
  CU_NEED_INIT();
  if (context == NULL) return FERRY_CUDA_ERROR_INVALID_VALUE;
  *context = tls_depth > 0 ? (ferry_CUcontext)(void*)tls_contexts[tls_depth - 1] : NULL;
  return FERRY_CUDA_SUCCESS;
}

EMU_EXPORT CUresult cuCtxSynchronize(void) {
  CU_ENTER("cuCtxSynchronize");
  CU_NEED_INIT();
  CU_NEED_CONTEXT(context);
  emu_device_synchronize(context->device);
  return FERRY_CUDA_SUCCESS;
}

/* ---- memory
 * ------------------------------------------------------------------------------- */

static CUresult allocate(enum EmuMemoryKind kind, size_t size, void** out) {
  CU_NEED_INIT();
  CU_NEED_CONTEXT(context);
  if (out == NULL || size == 0) return FERRY_CUDA_ERROR_INVALID_VALUE;
  void* block = emu_allocate(context->device, kind, size);
  if (block == NULL) return FERRY_CUDA_ERROR_OUT_OF_MEMORY;
  *out = block;
  return FERRY_CUDA_SUCCESS;
}

EMU_EXPORT CUresult cuMemAlloc_v2(ferry_CUdeviceptr* pointer, size_t size) {
  CU_ENTER("cuMemAlloc_v2");
  void* block = NULL;
  CUresult rc = allocate(EMU_MEMORY_DEVICE, size, &block);
  if (rc == FERRY_CUDA_SUCCESS) *pointer = (ferry_CUdeviceptr)(uintptr_t)block;
  return rc;
}

EMU_EXPORT CUresult cuMemAllocManaged(ferry_CUdeviceptr* pointer, size_t size,
                                      unsigned int flags) {
  CU_ENTER("cuMemAllocManaged");
  if (flags != 1u && flags != 2u) return FERRY_CUDA_ERROR_INVALID_VALUE;
  void* block = NULL;
  CUresult rc = allocate(EMU_MEMORY_MANAGED, size, &block);
  if (rc == FERRY_CUDA_SUCCESS) *pointer = (ferry_CUdeviceptr)(uintptr_t)block;
  return rc;
}

EMU_EXPORT CUresult cuMemAllocHost_v2(void** pointer, size_t size) {
  CU_ENTER("cuMemAllocHost_v2");
  return allocate(EMU_MEMORY_HOST, size, pointer);
}

EMU_EXPORT CUresult cuMemFree_v2(ferry_CUdeviceptr pointer) {
  CU_ENTER("cuMemFree_v2");
  CU_NEED_INIT();
  CU_NEED_CONTEXT(context);
  (void)context;
  void* p = (void*)(uintptr_t)pointer;
  if (emu_free(p, EMU_MEMORY_DEVICE) == 0 || emu_free(p, EMU_MEMORY_MANAGED) == 0) {
    return FERRY_CUDA_SUCCESS;
  }
  return FERRY_CUDA_ERROR_INVALID_VALUE;
}

EMU_EXPORT CUresult cuMemFreeHost(void* pointer) {
  CU_ENTER("cuMemFreeHost");
  CU_NEED_INIT();
  CU_NEED_CONTEXT(context);
  (void)context;
  return emu_free(pointer, EMU_MEMORY_HOST) == 0 ? FERRY_CUDA_SUCCESS
                                                 : FERRY_CUDA_ERROR_INVALID_VALUE;
}

/* ---- copies
 * ----------------------------------------------------------------------------------- */

static CUresult copy(void* dst, const void* src, size_t size, ferry_CUstream stream,
                     int dst_must_be_known, int src_must_be_known) {
  CU_NEED_INIT();
  CU_NEED_CONTEXT(context);
  struct EmuStream* s = NULL;
  CUresult rc = stream_for(stream, context->device, &s);
  if (rc != FERRY_CUDA_SUCCESS) return rc;
  switch (emu_copy(s, dst, src, size, dst_must_be_known, src_must_be_known)) {
    case 0: return FERRY_CUDA_SUCCESS;
    case -1: return FERRY_CUDA_ERROR_INVALID_VALUE;
    default: return FERRY_CUDA_ERROR_OUT_OF_MEMORY;
  }
}

EMU_EXPORT CUresult cuMemcpyHtoDAsync_v2(ferry_CUdeviceptr dst, const void* src,
                                         size_t size, ferry_CUstream stream) {
  CU_ENTER("cuMemcpyHtoDAsync_v2");
  return copy((void*)(uintptr_t)dst, src, size, stream, 1, 0);
}

EMU_EXPORT CUresult cuMemcpyDtoHAsync_v2(void* dst, ferry_CUdeviceptr src, size_t size,
                                         ferry_CUstream stream) {
  CU_ENTER("cuMemcpyDtoHAsync_v2");
  return copy(dst, (const void*)(uintptr_t)src, size, stream, 0, 1);
}

EMU_EXPORT CUresult cuMemcpyDtoDAsync_v2(ferry_CUdeviceptr dst, ferry_CUdeviceptr src,
                                         size_t size, ferry_CUstream stream) {
  CU_ENTER("cuMemcpyDtoDAsync_v2");
  return copy((void*)(uintptr_t)dst, (const void*)(uintptr_t)src, size, stream, 1, 1);
}

/* Left out of the "old driver" build (-DFERRY_CUDA_EMU_OLD_DRIVER), which
 * tests ferry's report of a missing entry point. */
#ifndef FERRY_CUDA_EMU_OLD_DRIVER
EMU_EXPORT CUresult cuMemcpyPeerAsync(ferry_CUdeviceptr dst, ferry_CUcontext dst_context,
                                      ferry_CUdeviceptr src, ferry_CUcontext src_context,
                                      size_t size, ferry_CUstream stream) {
  CU_ENTER("cuMemcpyPeerAsync");
  CU_NEED_INIT();
  struct EmuContext* dst_c = context_from_handle(dst_context);
  struct EmuContext* src_c = context_from_handle(src_context);
  if (dst_c == NULL || src_c == NULL) return FERRY_CUDA_ERROR_INVALID_CONTEXT;
  struct EmuAllocation d, s;
  if (emu_lookup((void*)(uintptr_t)dst, &d) != 0 ||
      emu_lookup((void*)(uintptr_t)src, &s) != 0 || d.device != dst_c->device ||
      s.device != src_c->device) {
    return FERRY_CUDA_ERROR_INVALID_VALUE; /* each pointer must be of its context */
  }
  return copy((void*)(uintptr_t)dst, (const void*)(uintptr_t)src, size, stream, 1, 1);
}
#endif

/* ---- streams and events
 * ---------------------------------------------------------------------- */

EMU_EXPORT CUresult cuStreamCreate(ferry_CUstream* stream, unsigned int flags) {
  CU_ENTER("cuStreamCreate");
  CU_NEED_INIT();
  CU_NEED_CONTEXT(context);
  if (stream == NULL || flags > 1u) return FERRY_CUDA_ERROR_INVALID_VALUE;
  struct EmuStream* s = emu_stream_create(context->device);
  if (s == NULL) return FERRY_CUDA_ERROR_OUT_OF_MEMORY;
  *stream = (ferry_CUstream)(void*)s;
  return FERRY_CUDA_SUCCESS;
}

EMU_EXPORT CUresult cuStreamDestroy_v2(ferry_CUstream stream) {
  CU_ENTER("cuStreamDestroy_v2");
  CU_NEED_INIT();
  return emu_stream_destroy(stream) == 0 ? FERRY_CUDA_SUCCESS
                                         : FERRY_CUDA_ERROR_INVALID_HANDLE;
}

/* The stream behind a handle of any device (NULL: the legacy stream of the
 * current context), or an error. */
static CUresult any_stream(ferry_CUstream handle, struct EmuStream** out) {
  if (handle == NULL) {
    CU_NEED_CONTEXT(context);
    return stream_for(NULL, context->device, out);
  }
  pthread_mutex_lock(&emu_lock);
  *out = emu_stream_lookup_locked(handle);
  pthread_mutex_unlock(&emu_lock);
  return *out != NULL ? FERRY_CUDA_SUCCESS : FERRY_CUDA_ERROR_INVALID_HANDLE;
}

EMU_EXPORT CUresult cuStreamSynchronize(ferry_CUstream stream) {
  CU_ENTER("cuStreamSynchronize");
  CU_NEED_INIT();
  struct EmuStream* s = NULL;
  CUresult rc = any_stream(stream, &s);
  if (rc == FERRY_CUDA_SUCCESS) emu_stream_synchronize(s);
  return rc;
}

EMU_EXPORT CUresult cuStreamQuery(ferry_CUstream stream) {
  CU_ENTER("cuStreamQuery");
  CU_NEED_INIT();
  struct EmuStream* s = NULL;
  CUresult rc = any_stream(stream, &s);
  if (rc != FERRY_CUDA_SUCCESS) return rc;
  return emu_stream_query(s) == 0 ? FERRY_CUDA_SUCCESS : FERRY_CUDA_ERROR_NOT_READY;
}

EMU_EXPORT CUresult cuEventCreate(ferry_CUevent* event, unsigned int flags) {
  CU_ENTER("cuEventCreate");
  CU_NEED_INIT();
  CU_NEED_CONTEXT(context);
  if (event == NULL || (flags & ~7u) != 0) return FERRY_CUDA_ERROR_INVALID_VALUE;
  struct EmuEvent* e = emu_event_create(context->device);
  if (e == NULL) return FERRY_CUDA_ERROR_OUT_OF_MEMORY;
  *event = (ferry_CUevent)(void*)e;
  return FERRY_CUDA_SUCCESS;
}

EMU_EXPORT CUresult cuEventDestroy_v2(ferry_CUevent event) {
  CU_ENTER("cuEventDestroy_v2");
  CU_NEED_INIT();
  return emu_event_destroy(event) == 0 ? FERRY_CUDA_SUCCESS
                                       : FERRY_CUDA_ERROR_INVALID_HANDLE;
}

EMU_EXPORT CUresult cuEventRecord(ferry_CUevent event, ferry_CUstream stream) {
  CU_ENTER("cuEventRecord");
  CU_NEED_INIT();
  struct EmuStream* s = NULL;
  CUresult rc = any_stream(stream, &s);
  if (rc != FERRY_CUDA_SUCCESS) return rc;
  pthread_mutex_lock(&emu_lock);
  struct EmuEvent* e = emu_event_lookup_locked(event);
  if (e == NULL || e->device != s->device) {
    rc = FERRY_CUDA_ERROR_INVALID_HANDLE; /* event and stream of one context */
  } else {
    emu_event_record_locked(e, s);
  }
  pthread_mutex_unlock(&emu_lock);
  return rc;
}

EMU_EXPORT CUresult cuEventQuery(ferry_CUevent event) {
  CU_ENTER("cuEventQuery");
  CU_NEED_INIT();
  pthread_mutex_lock(&emu_lock);
  struct EmuEvent* e = emu_event_lookup_locked(event);
  CUresult rc = e == NULL                      ? FERRY_CUDA_ERROR_INVALID_HANDLE
                : emu_event_query_locked(e) ? FERRY_CUDA_SUCCESS
                                               : FERRY_CUDA_ERROR_NOT_READY;
  pthread_mutex_unlock(&emu_lock);
  return rc;
}

EMU_EXPORT CUresult cuEventSynchronize(ferry_CUevent event) {
  CU_ENTER("cuEventSynchronize");
  CU_NEED_INIT();
  pthread_mutex_lock(&emu_lock);
  struct EmuEvent* e = emu_event_lookup_locked(event);
  if (e != NULL) emu_event_synchronize_locked(e);
  pthread_mutex_unlock(&emu_lock);
  return e != NULL ? FERRY_CUDA_SUCCESS : FERRY_CUDA_ERROR_INVALID_HANDLE;
}

EMU_EXPORT CUresult cuStreamWaitEvent(ferry_CUstream stream, ferry_CUevent event,
                                      unsigned int flags) {
  CU_ENTER("cuStreamWaitEvent");
  CU_NEED_INIT();
  if (flags != 0) return FERRY_CUDA_ERROR_INVALID_VALUE;
  struct EmuStream* s = NULL;
  CUresult rc = any_stream(stream, &s);
  if (rc != FERRY_CUDA_SUCCESS) return rc;
  pthread_mutex_lock(&emu_lock);
  struct EmuEvent* e = emu_event_lookup_locked(event);
  if (e == NULL) {
    rc = FERRY_CUDA_ERROR_INVALID_HANDLE;
  } else if (emu_stream_wait_event_locked(s, e) != 0) {
    rc = FERRY_CUDA_ERROR_OUT_OF_MEMORY;
  }
  pthread_mutex_unlock(&emu_lock);
  return rc;
}

/* ---- pointer queries and error names
 * ------------------------------------------------------------ */

EMU_EXPORT CUresult cuPointerGetAttribute(void* data, ferry_CUpointer_attribute attribute,
                                          ferry_CUdeviceptr pointer) {
  CU_ENTER("cuPointerGetAttribute");
  CU_NEED_INIT();
  struct EmuAllocation a;
  if (data == NULL || emu_lookup((void*)(uintptr_t)pointer, &a) != 0) {
    return FERRY_CUDA_ERROR_INVALID_VALUE;
  }
  switch (attribute) {
    case FERRY_CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
      *(unsigned int*)data = a.reported_type >= 0        ? (unsigned)a.reported_type
                             : a.kind == EMU_MEMORY_HOST ? FERRY_CU_MEMORYTYPE_HOST
                                                         : FERRY_CU_MEMORYTYPE_DEVICE;
      return FERRY_CUDA_SUCCESS;
    case FERRY_CU_POINTER_ATTRIBUTE_IS_MANAGED:
      *(unsigned int*)data = a.reported_managed >= 0 ? (unsigned)a.reported_managed
                                                     : a.kind == EMU_MEMORY_MANAGED;
      return FERRY_CUDA_SUCCESS;
    case FERRY_CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
      *(int*)data = a.device;
      return FERRY_CUDA_SUCCESS;
    case FERRY_CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
      *(ferry_CUdeviceptr*)data = (ferry_CUdeviceptr)a.start;
      return FERRY_CUDA_SUCCESS;
    case FERRY_CU_POINTER_ATTRIBUTE_RANGE_SIZE:
      *(size_t*)data = a.size;
      return FERRY_CUDA_SUCCESS;
    default:
      return FERRY_CUDA_ERROR_INVALID_VALUE;
  }
}

/* Present because the real driver has them; like the stub, they fail in
 * stub mode and leave the out-pointer untouched. */
EMU_EXPORT CUresult cuGetErrorName(CUresult code, const char** name) {
  CU_ENTER("cuGetErrorName");
  if (name == NULL) return FERRY_CUDA_ERROR_INVALID_VALUE;
  switch (code) {
    case FERRY_CUDA_SUCCESS:
      *name = "CUDA_SUCCESS";
      return FERRY_CUDA_SUCCESS;
    case FERRY_CUDA_ERROR_OUT_OF_MEMORY:
      *name = "CUDA_ERROR_OUT_OF_MEMORY";
      return FERRY_CUDA_SUCCESS;
    case FERRY_CUDA_ERROR_UNKNOWN:
      *name = "CUDA_ERROR_UNKNOWN";
      return FERRY_CUDA_SUCCESS;
    default:
      return FERRY_CUDA_ERROR_INVALID_VALUE;
  }
}

EMU_EXPORT CUresult cuGetErrorString(CUresult code, const char** text) {
  CU_ENTER("cuGetErrorString");
  if (text == NULL) return FERRY_CUDA_ERROR_INVALID_VALUE;
  *text = code == FERRY_CUDA_SUCCESS ? "no error" : "emulated error";
  return FERRY_CUDA_SUCCESS;
}

/* ---- controls for tests (not part of the CUDA API)
 * ------------------------------------------------ */

EMU_EXPORT void cuda_emu_fail(const char* name, int64_t nth, unsigned code) {
  emu_fail(name, nth, code);
}
EMU_EXPORT void cuda_emu_clear_failures(void) { emu_clear_failures(); }
EMU_EXPORT int64_t cuda_emu_calls(const char* name) { return emu_calls(name); }
EMU_EXPORT int cuda_emu_gate_close(void* stream) { return emu_gate_close(stream); }
EMU_EXPORT void cuda_emu_gates_open(void) { emu_gates_open(); }
EMU_EXPORT int64_t cuda_emu_stream_pending(void* stream) {
  return emu_stream_pending(stream);
}
EMU_EXPORT int64_t cuda_emu_live_allocations(void) { return emu_live(0); }
EMU_EXPORT int64_t cuda_emu_live_streams(void) { return emu_live(1); }
EMU_EXPORT int64_t cuda_emu_live_events(void) { return emu_live(2); }
EMU_EXPORT int cuda_emu_context_depth(void) { return tls_depth; }
EMU_EXPORT int cuda_emu_primary_context_retains(int device) {
  if (device < 0 || device >= EMU_MAX_DEVICES) return -1;
  pthread_mutex_lock(&emu_lock);
  int retains = emu_contexts[device].retains;
  pthread_mutex_unlock(&emu_lock);
  return retains;
}
/* 1 when the event (a CUevent, not a CUevent*) has completed, 0 when
 * pending, -1 for an unknown handle. */
EMU_EXPORT int cuda_emu_event_done(void* event) {
  pthread_mutex_lock(&emu_lock);
  struct EmuEvent* e = emu_event_lookup_locked(event);
  int done = e == NULL ? -1 : emu_event_done_locked(e);
  pthread_mutex_unlock(&emu_lock);
  return done;
}
/* Pointer queries about `pointer`'s allocation report this memory type
 * and managed flag from now on (-1: the truth). */
EMU_EXPORT int cuda_emu_override_report(const void* pointer, int type, int managed) {
  return emu_override_report(pointer, type, managed);
}
/* The device and kind the emulation recorded for a pointer (-1: unknown). */
EMU_EXPORT int cuda_emu_pointer_device(const void* pointer) {
  struct EmuAllocation a;
  return emu_lookup(pointer, &a) == 0 ? a.device : -1;
}
