/* TEST FIXTURE, never shipped or linked into libferry: an emulation of the
 * subset of the HIP runtime that ferry uses, built as a shared library and
 * loaded through FERRY_HIP_LIBRARY, so every line of core/src/hip.c and
 * gpu_driver.c runs in CI without an AMD GPU. Device memory cannot be read
 * by the host (a dereference crashes, as on a GPU); streams run on threads
 * and do their work only once someone waits for it (emu_core.h, which holds
 * everything the two emulations share).
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

#define EMU_PREFIX hip_emu
#define EMU_SUCCESS FERRY_HIP_SUCCESS
#define EMU_INVALID_VALUE FERRY_HIP_ERROR_INVALID_VALUE
#define EMU_INVALID_HANDLE FERRY_HIP_ERROR_INVALID_HANDLE
#define EMU_OUT_OF_MEMORY FERRY_HIP_ERROR_OUT_OF_MEMORY
#define EMU_NOT_READY FERRY_HIP_ERROR_NOT_READY
#define EMU_UNKNOWN FERRY_HIP_ERROR_UNKNOWN
#define EMU_NO_CURRENT FERRY_HIP_ERROR_INVALID_DEVICE /* never: a thread always has one */
#include "emu_core.h"

typedef ferry_hipError_t hipError_t;

static int emu_device_count = 2;
static int emu_no_device_mode;
static int emu_runtime_version = 60200000;
static __thread int tls_device;

__attribute__((constructor)) static void hip_emu_load(void) {
  const char* mode = getenv("FERRY_HIP_EMU_MODE");
  emu_no_device_mode = mode != NULL && strcmp(mode, "nodevice") == 0;
  emu_device_count = emu_load_environment("FERRY_HIP_EMU_DEVICES", "FERRY_HIP_EMU_FAIL");
  emu_runtime_version = emu_env_int("FERRY_HIP_EMU_RUNTIME_VERSION", 60200000);
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
  if (out != NULL && size == 0) {
    *out = NULL; /* HIP returns success and NULL for 0 bytes */
    return FERRY_HIP_SUCCESS;
  }
  return emu_allocate_rc(tls_device, kind, size, out);
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
  return emu_free_rc(pointer, EMU_MEMORY_DEVICE);
}

EMU_EXPORT hipError_t hipHostFree(void* pointer) {
  HIP_ENTER("hipHostFree");
  HIP_NEED_DEVICE();
  if (pointer == NULL) return FERRY_HIP_SUCCESS;
  return emu_free_rc(pointer, EMU_MEMORY_HOST);
}

/* ---- copies
 * ---------------------------------------------------------------------------------- */

EMU_EXPORT hipError_t hipMemcpyAsync(void* dst, const void* src, size_t size,
                                     ferry_hipMemcpyKind kind, ferry_hipStream_t stream) {
  HIP_ENTER("hipMemcpyAsync");
  HIP_NEED_DEVICE();
  switch (kind) {
    case FERRY_HIP_MEMCPY_HOST_TO_DEVICE:
      return emu_copy_rc(tls_device, stream, dst, src, size, 1, 0);
    case FERRY_HIP_MEMCPY_DEVICE_TO_HOST:
      return emu_copy_rc(tls_device, stream, dst, src, size, 0, 1);
    case FERRY_HIP_MEMCPY_DEVICE_TO_DEVICE:
      return emu_copy_rc(tls_device, stream, dst, src, size, 1, 1);
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
  return emu_copy_peer_rc(tls_device, stream, dst, dst_device, src, src_device, size);
}
#endif

/* ---- streams and events
 * ----------------------------------------------------------------------- */

EMU_EXPORT hipError_t hipStreamCreateWithFlags(ferry_hipStream_t* stream,
                                               unsigned int flags) {
  HIP_ENTER("hipStreamCreateWithFlags");
  HIP_NEED_DEVICE();
  return emu_stream_create_rc(tls_device, stream, flags);
}

EMU_EXPORT hipError_t hipStreamDestroy(ferry_hipStream_t stream) {
  HIP_ENTER("hipStreamDestroy");
  HIP_NEED_DEVICE();
  return emu_stream_destroy_rc(stream);
}

/* A stream argument may be of any device; NULL is the current device's
 * null stream. */
EMU_EXPORT hipError_t hipStreamSynchronize(ferry_hipStream_t stream) {
  HIP_ENTER("hipStreamSynchronize");
  HIP_NEED_DEVICE();
  return emu_stream_synchronize_rc(stream, tls_device);
}

EMU_EXPORT hipError_t hipStreamQuery(ferry_hipStream_t stream) {
  HIP_ENTER("hipStreamQuery");
  return emu_stream_query_rc(stream, tls_device);
}

EMU_EXPORT hipError_t hipEventCreateWithFlags(ferry_hipEvent_t* event,
                                              unsigned int flags) {
  HIP_ENTER("hipEventCreateWithFlags");
  HIP_NEED_DEVICE();
  return emu_event_create_rc(tls_device, event, flags);
}

EMU_EXPORT hipError_t hipEventDestroy(ferry_hipEvent_t event) {
  HIP_ENTER("hipEventDestroy");
  return emu_event_destroy_rc(event);
}

EMU_EXPORT hipError_t hipEventRecord(ferry_hipEvent_t event, ferry_hipStream_t stream) {
  HIP_ENTER("hipEventRecord");
  HIP_NEED_DEVICE();
  return emu_event_record_rc(event, stream, tls_device);
}

EMU_EXPORT hipError_t hipEventQuery(ferry_hipEvent_t event) {
  HIP_ENTER("hipEventQuery");
  return emu_event_query_rc(event);
}

EMU_EXPORT hipError_t hipEventSynchronize(ferry_hipEvent_t event) {
  HIP_ENTER("hipEventSynchronize");
  return emu_event_synchronize_rc(event);
}

EMU_EXPORT hipError_t hipStreamWaitEvent(ferry_hipStream_t stream, ferry_hipEvent_t event,
                                         unsigned int flags) {
  HIP_ENTER("hipStreamWaitEvent");
  return emu_stream_wait_event_rc(stream, event, flags, tls_device);
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

/* ---- controls for tests (not part of the HIP API; the common ones are
 * emu_core.h's hip_emu_fail, hip_emu_calls, ...) --------------------------------------
 */

EMU_EXPORT int hip_emu_current_device(void) { return tls_device; }
