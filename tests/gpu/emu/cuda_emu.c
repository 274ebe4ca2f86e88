/* TEST FIXTURE, never shipped or linked into libferry: an emulation of the
 * subset of the CUDA driver API that ferry uses, built as a shared library
 * and loaded by ferry through FERRY_CUDA_LIBRARY, so every line of
 * core/src/cuda.c and gpu_driver.c runs in CI without a GPU. Device memory
 * cannot be read by the host (a dereference crashes, as on a GPU); streams
 * run on threads and do their work only once someone waits for it
 * (emu_core.h, which holds everything the two emulations share).
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
 * Tests reach the same controls through the cuda_emu_* functions (the
 * common ones defined by emu_core.h, the CUDA-only ones below). */
#include "../../../core/src/cuda_driver_api.h"

#define EMU_PREFIX cuda_emu
#define EMU_SUCCESS FERRY_CUDA_SUCCESS
#define EMU_INVALID_VALUE FERRY_CUDA_ERROR_INVALID_VALUE
#define EMU_INVALID_HANDLE FERRY_CUDA_ERROR_INVALID_HANDLE
#define EMU_OUT_OF_MEMORY FERRY_CUDA_ERROR_OUT_OF_MEMORY
#define EMU_NOT_READY FERRY_CUDA_ERROR_NOT_READY
#define EMU_UNKNOWN FERRY_CUDA_ERROR_UNKNOWN
#define EMU_NO_CURRENT FERRY_CUDA_ERROR_INVALID_CONTEXT
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

__attribute__((constructor)) static void cuda_emu_load(void) {
  const char* mode = getenv("FERRY_CUDA_EMU_MODE");
  emu_stub_mode = mode != NULL && strcmp(mode, "stub") == 0;
  emu_no_device_mode = mode != NULL && strcmp(mode, "nodevice") == 0;
  emu_device_count =
      emu_load_environment("FERRY_CUDA_EMU_DEVICES", "FERRY_CUDA_EMU_FAIL");
  for (int i = 0; i < EMU_MAX_DEVICES; i++) emu_contexts[i].device = i;
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

/* The device of the current context, -1 without one. */
static int current_device(void) {
  return tls_depth > 0 ? tls_contexts[tls_depth - 1]->device : -1;
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
  if (size == 0) return FERRY_CUDA_ERROR_INVALID_VALUE;
  return emu_allocate_rc(context->device, kind, size, out);
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
  return emu_free_rc(pointer, EMU_MEMORY_HOST);
}

/* ---- copies
 * ----------------------------------------------------------------------------------- */

static CUresult copy(void* dst, const void* src, size_t size, ferry_CUstream stream,
                     int dst_must_be_known, int src_must_be_known) {
  CU_NEED_INIT();
  CU_NEED_CONTEXT(context);
  return emu_copy_rc(context->device, stream, dst, src, size, dst_must_be_known,
                     src_must_be_known);
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
  return emu_copy_peer_rc(current_device(), stream, (void*)(uintptr_t)dst, dst_c->device,
                          (const void*)(uintptr_t)src, src_c->device, size);
}
#endif

/* ---- streams and events
 * ---------------------------------------------------------------------- */

EMU_EXPORT CUresult cuStreamCreate(ferry_CUstream* stream, unsigned int flags) {
  CU_ENTER("cuStreamCreate");
  CU_NEED_INIT();
  CU_NEED_CONTEXT(context);
  return emu_stream_create_rc(context->device, stream, flags);
}

EMU_EXPORT CUresult cuStreamDestroy_v2(ferry_CUstream stream) {
  CU_ENTER("cuStreamDestroy_v2");
  CU_NEED_INIT();
  return emu_stream_destroy_rc(stream);
}

/* A stream argument may be of any device; NULL is the legacy stream of the
 * current context (CUDA_ERROR_INVALID_CONTEXT without one). */
EMU_EXPORT CUresult cuStreamSynchronize(ferry_CUstream stream) {
  CU_ENTER("cuStreamSynchronize");
  CU_NEED_INIT();
  return emu_stream_synchronize_rc(stream, current_device());
}

EMU_EXPORT CUresult cuStreamQuery(ferry_CUstream stream) {
  CU_ENTER("cuStreamQuery");
  CU_NEED_INIT();
  return emu_stream_query_rc(stream, current_device());
}

EMU_EXPORT CUresult cuEventCreate(ferry_CUevent* event, unsigned int flags) {
  CU_ENTER("cuEventCreate");
  CU_NEED_INIT();
  CU_NEED_CONTEXT(context);
  return emu_event_create_rc(context->device, event, flags);
}

EMU_EXPORT CUresult cuEventDestroy_v2(ferry_CUevent event) {
  CU_ENTER("cuEventDestroy_v2");
  CU_NEED_INIT();
  return emu_event_destroy_rc(event);
}

EMU_EXPORT CUresult cuEventRecord(ferry_CUevent event, ferry_CUstream stream) {
  CU_ENTER("cuEventRecord");
  CU_NEED_INIT();
  return emu_event_record_rc(event, stream, current_device());
}

EMU_EXPORT CUresult cuEventQuery(ferry_CUevent event) {
  CU_ENTER("cuEventQuery");
  CU_NEED_INIT();
  return emu_event_query_rc(event);
}

EMU_EXPORT CUresult cuEventSynchronize(ferry_CUevent event) {
  CU_ENTER("cuEventSynchronize");
  CU_NEED_INIT();
  return emu_event_synchronize_rc(event);
}

EMU_EXPORT CUresult cuStreamWaitEvent(ferry_CUstream stream, ferry_CUevent event,
                                      unsigned int flags) {
  CU_ENTER("cuStreamWaitEvent");
  CU_NEED_INIT();
  return emu_stream_wait_event_rc(stream, event, flags, current_device());
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
  const char* known = code == FERRY_CUDA_SUCCESS               ? "CUDA_SUCCESS"
                      : code == FERRY_CUDA_ERROR_OUT_OF_MEMORY ? "CUDA_ERROR_OUT_OF_MEMORY"
                      : code == FERRY_CUDA_ERROR_UNKNOWN       ? "CUDA_ERROR_UNKNOWN"
                                                               : NULL;
  if (name == NULL || known == NULL) return FERRY_CUDA_ERROR_INVALID_VALUE;
  *name = known;
  return FERRY_CUDA_SUCCESS;
}

EMU_EXPORT CUresult cuGetErrorString(CUresult code, const char** text) {
  CU_ENTER("cuGetErrorString");
  if (text == NULL) return FERRY_CUDA_ERROR_INVALID_VALUE;
  *text = code == FERRY_CUDA_SUCCESS ? "no error" : "emulated error";
  return FERRY_CUDA_SUCCESS;
}

/* ---- controls for tests (not part of the CUDA API; the common ones are
 * emu_core.h's cuda_emu_fail, cuda_emu_calls, ...) -------------------------------------
 */

EMU_EXPORT int cuda_emu_context_depth(void) { return tls_depth; }
EMU_EXPORT int cuda_emu_primary_context_retains(int device) {
  if (device < 0 || device >= EMU_MAX_DEVICES) return -1;
  pthread_mutex_lock(&emu_lock);
  int retains = emu_contexts[device].retains;
  pthread_mutex_unlock(&emu_lock);
  return retains;
}
