/* The CUDA backend (cuda, cuda_host, cuda_managed) over the CUDA driver API,
 * loaded at run time with dlopen so that the same libferry.so runs on
 * machines without an NVIDIA driver.
 *
 * Loading: the probe opens $FERRY_CUDA_LIBRARY, or "libcuda.so.1" (the
 * driver's own soname; the toolkit's link-time stub is called libcuda.so),
 * resolves every entry point by the name the driver exports (cuMemAlloc_v2,
 * cuStreamDestroy_v2, ...; see cuda_driver_api.h), calls cuInit and counts
 * devices. Whatever fails is reported as the reason the backend is
 * unavailable, with the driver's error name from ferry's own table: the
 * stub library fails cuGetErrorName as well, so it cannot be asked.
 *
 * Contexts: each device uses the primary context of its ordinal, retained
 * once in device_init (the registry never frees devices). A call finds the
 * thread's current context first (cuCtxGetCurrent): when it is already the
 * device's primary context (the usual case in a program using the CUDA
 * runtime) the call goes straight to the driver; otherwise it is bracketed
 * by cuCtxPushCurrent/cuCtxPopCurrent. Either way ferry neither needs nor
 * disturbs the caller's current context.
 *
 * Devices: cuda is device memory (cuMemAlloc), cuda_host pinned host memory
 * (cuMemAllocHost) and cuda_managed managed memory (cuMemAllocManaged); all
 * three share the driver's device ordinals, since pinned and managed memory
 * are allocated in the context of one device.
 *
 * Streams are created CU_STREAM_NON_BLOCKING: ferry's NULL stream is
 * "synchronous and unordered" (device.c), so a NULL-stream copy must not
 * wait for (or be ordered after) work queued on ferry's streams. A NULL-stream
 * copy is issued on the legacy default stream and synchronized before
 * returning; synchronizing the NULL stream waits for the whole context.
 *
 * Events: sync_event is a heap slot holding a CUevent (CUevent*), as the
 * Arrow specification says; events are created with CU_EVENT_DISABLE_TIMING
 * because ferry only orders work with them.
 *
 * Errors: a failing CUresult becomes ENOMEM (CUDA_ERROR_OUT_OF_MEMORY),
 * ENODEV (no device, stub library, device unavailable) or EIO (anything
 * else), with the message
 * "[entry point][CUDA_ERROR_NAME] description (what ferry was doing)". */
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "cuda_driver_api.h"
#include "internal.h"

#define FERRY_CUDA_DEFAULT_LIBRARY "libcuda.so.1"

static const ArrowDeviceType kCudaDeviceTypes[] = {
    ARROW_DEVICE_CUDA, ARROW_DEVICE_CUDA_HOST, ARROW_DEVICE_CUDA_MANAGED};

/* The loaded driver. Written only by cuda_probe (under the registry lock,
 * before any CUDA device exists) and read-only afterwards. */
struct FerryCudaDriver {
  void* library;
  char path[512];
  int driver_version;
  int device_count;
#define FERRY_CUDA_FIELD(name, params) ferry_##name##_fn name;
  FERRY_CUDA_DRIVER_FUNCTIONS(FERRY_CUDA_FIELD)
#undef FERRY_CUDA_FIELD
};
static struct FerryCudaDriver g_cuda;

/* FerryDevice.backend_data of a CUDA device. */
struct FerryCudaDevice {
  ferry_CUdevice device;
  ferry_CUcontext context;
};

/* ---- error names ----------------------------------------------------------- */

/* The names are the driver's; the descriptions are ferry's own words. */
static const struct FerryDriverErrorName kCudaErrorNames[] = {
    {FERRY_CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {FERRY_CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE",
     "an argument is invalid or out of range"},
    {FERRY_CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {FERRY_CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED",
     "the driver is not initialized"},
    {FERRY_CUDA_ERROR_DEINITIALIZED, "CUDA_ERROR_DEINITIALIZED",
     "the driver is shutting down"},
    {FERRY_CUDA_ERROR_STUB_LIBRARY, "CUDA_ERROR_STUB_LIBRARY",
     "the loaded libcuda is the CUDA toolkit's stub library, not a driver"},
    {FERRY_CUDA_ERROR_DEVICE_UNAVAILABLE, "CUDA_ERROR_DEVICE_UNAVAILABLE",
     "the device is busy or unavailable"},
    {FERRY_CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device"},
    {FERRY_CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE",
     "the device ordinal is invalid"},
    {FERRY_CUDA_ERROR_DEVICE_NOT_LICENSED, "CUDA_ERROR_DEVICE_NOT_LICENSED",
     "the device is not licensed for this use"},
    {FERRY_CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT",
     "no valid context is current"},
    {FERRY_CUDA_ERROR_ECC_UNCORRECTABLE, "CUDA_ERROR_ECC_UNCORRECTABLE",
     "an uncorrectable ECC error was detected"},
    {FERRY_CUDA_ERROR_PEER_ACCESS_UNSUPPORTED, "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED",
     "peer access is not supported between these devices"},
    {FERRY_CUDA_ERROR_SHARED_OBJECT_INIT_FAILED, "CUDA_ERROR_SHARED_OBJECT_INIT_FAILED",
     "a shared object failed to initialize"},
    {FERRY_CUDA_ERROR_OPERATING_SYSTEM, "CUDA_ERROR_OPERATING_SYSTEM",
     "an operating system call failed"},
    {FERRY_CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE",
     "a stream, event or context handle is invalid"},
    {FERRY_CUDA_ERROR_ILLEGAL_STATE, "CUDA_ERROR_ILLEGAL_STATE",
     "a resource is not in a valid state for this operation"},
    {FERRY_CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "a named symbol was not found"},
    {FERRY_CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY",
     "the work has not completed yet"},
    {FERRY_CUDA_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS",
     "the device accessed an illegal address (the context is now unusable)"},
    {FERRY_CUDA_ERROR_PEER_ACCESS_NOT_ENABLED, "CUDA_ERROR_PEER_ACCESS_NOT_ENABLED",
     "peer access was not enabled"},
    {FERRY_CUDA_ERROR_CONTEXT_IS_DESTROYED, "CUDA_ERROR_CONTEXT_IS_DESTROYED",
     "the context was destroyed"},
    {FERRY_CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED",
     "the host memory is not registered with the driver"},
    {FERRY_CUDA_ERROR_LAUNCH_FAILED, "CUDA_ERROR_LAUNCH_FAILED",
     "a kernel failed (the context is now unusable)"},
    {FERRY_CUDA_ERROR_NOT_PERMITTED, "CUDA_ERROR_NOT_PERMITTED",
     "the operation is not permitted"},
    {FERRY_CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED",
     "the operation is not supported on this system or device"},
    {FERRY_CUDA_ERROR_SYSTEM_NOT_READY, "CUDA_ERROR_SYSTEM_NOT_READY",
     "the system is not ready (is the driver daemon running?)"},
    {FERRY_CUDA_ERROR_SYSTEM_DRIVER_MISMATCH, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
     "the user-mode driver and the kernel driver versions differ"},
    {FERRY_CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE,
     "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE",
     "the forward-compatibility driver does not support this device"},
    {FERRY_CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "an unknown internal error"},
};

/* The errno a failing CUresult maps to: ENOMEM when device (or pinned)
 * memory ran out, as ferry.h promises for every allocation; ENODEV when
 * there is no usable device behind the call; EIO for every other driver
 * failure. */
static int cuda_errno(ferry_CUresult code) {
  switch (code) {
    case FERRY_CUDA_ERROR_OUT_OF_MEMORY: return ENOMEM;
    case FERRY_CUDA_ERROR_NO_DEVICE:
    case FERRY_CUDA_ERROR_INVALID_DEVICE:
    case FERRY_CUDA_ERROR_STUB_LIBRARY:
    case FERRY_CUDA_ERROR_DEVICE_UNAVAILABLE: return ENODEV;
    default: return EIO;
  }
}

/* Sets "[op][NAME] description (context)" and returns `code_errno`. */
static int cuda_fail_with(struct FerryError* error, int code_errno, ferry_CUresult rc,
                          const char* op, const char* fmt, ...) FERRY_PRINTF(5, 6);
static int cuda_fail_with(struct FerryError* error, int code_errno, ferry_CUresult rc,
                          const char* op, const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  int code =
      ferry__set_driver_error_v(error, code_errno, kCudaErrorNames,
                               sizeof(kCudaErrorNames) / sizeof(kCudaErrorNames[0]),
                               "CUresult", rc, op, fmt, args);
  va_end(args);
  return code;
}

#define cuda_fail(error, rc, op, ...) \
  cuda_fail_with((error), cuda_errno(rc), (rc), (op), __VA_ARGS__)

/* ---- loading the driver --------------------------------------------------------- */

static void cuda_unload(void) {
  if (g_cuda.library != NULL) dlclose(g_cuda.library);
  memset(&g_cuda, 0, sizeof(g_cuda));
}

/* Every probe failure means "unavailable": ENODEV with the driver's name. */
static int cuda_probe_failed(struct FerryError* error, ferry_CUresult rc,
                             const char* op) {
  const char* hint = "";
  if (rc == FERRY_CUDA_ERROR_STUB_LIBRARY) {
    hint =
        "; install the NVIDIA driver, or point FERRY_CUDA_LIBRARY at the real "
        "libcuda.so.1";
  } else if (rc == FERRY_CUDA_ERROR_NO_DEVICE) {
    hint = "; the driver is installed but sees no NVIDIA GPU";
  }
  int code = cuda_fail_with(error, ENODEV, rc, op,
                            "cuda backend: driver loaded from %s%s", g_cuda.path, hint);
  cuda_unload();
  return code;
}

static int cuda_probe(struct FerryError* error) {
  const char* override = getenv("FERRY_CUDA_LIBRARY");
  const char* path =
      override != NULL && override[0] != '\0' ? override : FERRY_CUDA_DEFAULT_LIBRARY;
  memset(&g_cuda, 0, sizeof(g_cuda));
  snprintf(g_cuda.path, sizeof(g_cuda.path), "%s", path);

  dlerror();
  g_cuda.library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (g_cuda.library == NULL) {
    const char* why = dlerror();
    int code =
        ferry__set_error(error, ENODEV,
                        "cuda backend: cannot load the CUDA driver library %s%s: %s "
                        "(no NVIDIA driver installed?)",
                        path, override != NULL ? " (FERRY_CUDA_LIBRARY)" : "",
                        why != NULL ? why : "unknown dlopen error");
    cuda_unload();
    return code;
  }

  const char* missing = NULL;
#define FERRY_CUDA_RESOLVE(name, params)                    \
  if (missing == NULL) {                                    \
    *(void**)(&g_cuda.name) = dlsym(g_cuda.library, #name); \
    if (g_cuda.name == NULL) missing = #name;               \
  }
  FERRY_CUDA_DRIVER_FUNCTIONS(FERRY_CUDA_RESOLVE)
#undef FERRY_CUDA_RESOLVE
  if (missing != NULL) {
    int code =
        ferry__set_error(error, ENOTSUP,
                        "cuda backend: the CUDA driver library %s does not export %s "
                        "(ferry needs a driver for CUDA 11 or newer)",
                        path, missing);
    cuda_unload();
    return code;
  }

  ferry_CUresult rc = g_cuda.cuInit(0);
  if (rc != FERRY_CUDA_SUCCESS) return cuda_probe_failed(error, rc, "cuInit");
  rc = g_cuda.cuDriverGetVersion(&g_cuda.driver_version);
  if (rc != FERRY_CUDA_SUCCESS) return cuda_probe_failed(error, rc, "cuDriverGetVersion");
  rc = g_cuda.cuDeviceGetCount(&g_cuda.device_count);
  if (rc != FERRY_CUDA_SUCCESS) return cuda_probe_failed(error, rc, "cuDeviceGetCount");
  if (g_cuda.device_count <= 0) {
    int code = ferry__set_error(
        error, ENODEV,
        "[cuDeviceGetCount] cuda backend: the CUDA driver %d.%d (%s) "
        "reports no device",
        g_cuda.driver_version / 1000, (g_cuda.driver_version % 1000) / 10, path);
    cuda_unload();
    return code;
  }
  return FERRY_OK;
}

static int cuda_device_count(ArrowDeviceType device_type, int64_t* count,
                             struct FerryError* error) {
  *count = g_cuda.device_count;
  return FERRY_OK;
}

static int cuda_device_init(struct FerryDevice* device, struct FerryError* error) {
  struct FerryCudaDevice* state = (struct FerryCudaDevice*)calloc(1, sizeof(*state));
  if (state == NULL) return ferry__set_error(error, ENOMEM, "out of memory (cuda device)");
  ferry_CUresult rc = g_cuda.cuDeviceGet(&state->device, (int)device->device_id);
  if (rc != FERRY_CUDA_SUCCESS) {
    free(state);
    return cuda_fail(error, rc, "cuDeviceGet", "looking up cuda device %" PRId64,
                     device->device_id);
  }
  rc = g_cuda.cuDevicePrimaryCtxRetain(&state->context, state->device);
  if (rc != FERRY_CUDA_SUCCESS) {
    free(state);
    return cuda_fail(error, rc, "cuDevicePrimaryCtxRetain",
                     "retaining the primary context of cuda device %" PRId64,
                     device->device_id);
  }
  device->backend_data = state;
  return FERRY_OK;
}

static int cuda_is_host_accessible(ArrowDeviceType device_type) {
  return device_type == ARROW_DEVICE_CUDA_HOST ||
         device_type == ARROW_DEVICE_CUDA_MANAGED;
}

/* ---- context bracketing ---------------------------------------------------------- */

static ferry_CUcontext context_of(const struct FerryDevice* device) {
  return ((const struct FerryCudaDevice*)device->backend_data)->context;
}

static const char* type_name(const struct FerryDevice* device) {
  return ferry_device_type_name(device->device_type);
}

/* Makes the device's primary context current on this thread, unless it
 * already is. A caller that works on this device (a CUDA runtime program
 * has its primary context current) then costs one cuCtxGetCurrent instead
 * of a push and a pop on every call. `*pushed` tells cuda_leave whether
 * there is something to pop. */
static int cuda_enter(const struct FerryDevice* device, int* pushed,
                      struct FerryError* error) {
  *pushed = 0;
  ferry_CUcontext current = NULL;
  ferry_CUresult rc = g_cuda.cuCtxGetCurrent(&current);
  if (rc != FERRY_CUDA_SUCCESS) {
    return cuda_fail(error, rc, "cuCtxGetCurrent",
                     "reading the current context before work on %s device %" PRId64,
                     type_name(device), device->device_id);
  }
  if (current == context_of(device)) return FERRY_OK;
  rc = g_cuda.cuCtxPushCurrent_v2(context_of(device));
  if (rc != FERRY_CUDA_SUCCESS) {
    return cuda_fail(error, rc, "cuCtxPushCurrent_v2",
                     "making the primary context of %s device %" PRId64 " current",
                     type_name(device), device->device_id);
  }
  *pushed = 1;
  return FERRY_OK;
}

/* Restores the caller's context when cuda_enter pushed one. `code` is the
 * result of the bracketed work: a failing pop only matters when that work
 * succeeded. */
static int cuda_leave(const struct FerryDevice* device, int pushed, int code,
                      struct FerryError* error) {
  if (!pushed) return code;
  ferry_CUcontext popped = NULL;
  ferry_CUresult rc = g_cuda.cuCtxPopCurrent_v2(&popped);
  if (rc != FERRY_CUDA_SUCCESS && code == FERRY_OK) {
    return cuda_fail(error, rc, "cuCtxPopCurrent_v2",
                     "restoring the caller's context after work on %s device %" PRId64,
                     type_name(device), device->device_id);
  }
  return code;
}

/* ---- memory ------------------------------------------------------------------------ */

/* Frees with the entry point that matches the device type (named in *op). */
static ferry_CUresult cuda_free_in_context(struct FerryDevice* device, void* ptr,
                                           const char** op) {
  if (device->device_type == ARROW_DEVICE_CUDA_HOST) {
    *op = "cuMemFreeHost";
    return g_cuda.cuMemFreeHost(ptr);
  }
  *op = "cuMemFree_v2";
  return g_cuda.cuMemFree_v2((ferry_CUdeviceptr)(uintptr_t)ptr);
}

static int cuda_allocate(struct FerryDevice* device, int64_t size, void** out,
                         struct FerryError* error) {
  /* The driver refuses 0-byte allocations; ferry hands out a distinct,
   * freeable pointer for them, as malloc(0) may. */
  size_t bytes = size == 0 ? 1 : (size_t)size;
  int pushed = 0;
  FERRY_RETURN_NOT_OK(cuda_enter(device, &pushed, error));
  ferry_CUresult rc;
  const char* op;
  void* pointer = NULL;
  if (device->device_type == ARROW_DEVICE_CUDA_HOST) {
    op = "cuMemAllocHost_v2";
    rc = g_cuda.cuMemAllocHost_v2(&pointer, bytes);
  } else {
    ferry_CUdeviceptr address = 0;
    if (device->device_type == ARROW_DEVICE_CUDA_MANAGED) {
      op = "cuMemAllocManaged";
      rc = g_cuda.cuMemAllocManaged(&address, bytes, FERRY_CU_MEM_ATTACH_GLOBAL);
    } else {
      op = "cuMemAlloc_v2";
      rc = g_cuda.cuMemAlloc_v2(&address, bytes);
    }
    pointer = (void*)(uintptr_t)address;
  }
  int code = FERRY_OK;
  if (rc != FERRY_CUDA_SUCCESS) {
    code = cuda_fail(error, rc, op, "allocating %" PRId64 " bytes on %s device %" PRId64,
                     size, type_name(device), device->device_id);
  }
  int popped = cuda_leave(device, pushed, code, error);
  if (popped != FERRY_OK && code == FERRY_OK) {
    /* The allocation succeeded but the caller's context could not be
     * restored: give the memory back rather than leak it. */
    int again = 0;
    if (cuda_enter(device, &again, NULL) == FERRY_OK) {
      const char* free_op;
      cuda_free_in_context(device, pointer, &free_op);
      cuda_leave(device, again, FERRY_OK, NULL);
    }
    return popped;
  }
  if (popped == FERRY_OK) *out = pointer;
  return popped;
}

static int cuda_deallocate(struct FerryDevice* device, void* ptr,
                           struct FerryError* error) {
  int pushed = 0;
  FERRY_RETURN_NOT_OK(cuda_enter(device, &pushed, error));
  const char* op;
  ferry_CUresult rc = cuda_free_in_context(device, ptr, &op);
  int code = FERRY_OK;
  if (rc != FERRY_CUDA_SUCCESS) {
    code = cuda_fail(error, rc, op, "freeing %p on %s device %" PRId64, ptr,
                     type_name(device), device->device_id);
  }
  return cuda_leave(device, pushed, code, error);
}

static int cuda_memcpy(struct FerryDevice* device, void* dst,
                       struct FerryDevice* src_device, const void* src, int64_t size,
                       enum FerryCopyKind kind, void* stream, struct FerryError* error) {
  int pushed = 0;
  FERRY_RETURN_NOT_OK(cuda_enter(device, &pushed, error));
  ferry_CUstream s = (ferry_CUstream)stream;
  ferry_CUdeviceptr dst_address = (ferry_CUdeviceptr)(uintptr_t)dst;
  ferry_CUdeviceptr src_address = (ferry_CUdeviceptr)(uintptr_t)src;
  ferry_CUresult rc;
  const char* op;
  switch (kind) {
    case FERRY_COPY_HOST_TO_DEVICE:
      op = "cuMemcpyHtoDAsync_v2";
      rc = g_cuda.cuMemcpyHtoDAsync_v2(dst_address, src, (size_t)size, s);
      break;
    case FERRY_COPY_DEVICE_TO_HOST:
      op = "cuMemcpyDtoHAsync_v2";
      rc = g_cuda.cuMemcpyDtoHAsync_v2(dst, src_address, (size_t)size, s);
      break;
    default:
      if (src_device->device_id == device->device_id) {
        op = "cuMemcpyDtoDAsync_v2";
        rc = g_cuda.cuMemcpyDtoDAsync_v2(dst_address, src_address, (size_t)size, s);
      } else {
        /* Between two GPUs the driver routes through peer access or the
         * host, whichever the pair supports. */
        op = "cuMemcpyPeerAsync";
        rc = g_cuda.cuMemcpyPeerAsync(dst_address, context_of(device), src_address,
                                      context_of(src_device), (size_t)size, s);
      }
      break;
  }
  if (rc == FERRY_CUDA_SUCCESS && stream == NULL) {
    op = "cuStreamSynchronize";
    rc = g_cuda.cuStreamSynchronize(NULL);
  }
  int code = FERRY_OK;
  if (rc != FERRY_CUDA_SUCCESS) {
    code = cuda_fail(error, rc, op,
                     "copying %" PRId64 " bytes %s %s device %" PRId64 " (%p -> %p)",
                     size, kind == FERRY_COPY_DEVICE_TO_HOST ? "from" : "to",
                     type_name(device), device->device_id, src, dst);
  }
  return cuda_leave(device, pushed, code, error);
}

/* ---- streams and events ----------------------------------------------------------- */

static int cuda_stream_create(struct FerryDevice* device, void** stream_out,
                              struct FerryError* error) {
  int pushed = 0;
  FERRY_RETURN_NOT_OK(cuda_enter(device, &pushed, error));
  ferry_CUstream stream = NULL;
  ferry_CUresult rc = g_cuda.cuStreamCreate(&stream, FERRY_CU_STREAM_NON_BLOCKING);
  int code = FERRY_OK;
  if (rc != FERRY_CUDA_SUCCESS) {
    code =
        cuda_fail(error, rc, "cuStreamCreate", "creating a stream on %s device %" PRId64,
                  type_name(device), device->device_id);
  }
  code = cuda_leave(device, pushed, code, error);
  if (code == FERRY_OK) {
    *stream_out = stream;
  } else if (rc == FERRY_CUDA_SUCCESS) {
    int again = 0; /* only the pop failed: do not leak the stream */
    if (cuda_enter(device, &again, NULL) == FERRY_OK) {
      g_cuda.cuStreamDestroy_v2(stream);
      cuda_leave(device, again, FERRY_OK, NULL);
    }
  }
  return code;
}

static int cuda_stream_destroy(struct FerryDevice* device, void* stream,
                               struct FerryError* error) {
  int pushed = 0;
  FERRY_RETURN_NOT_OK(cuda_enter(device, &pushed, error));
  ferry_CUresult rc = g_cuda.cuStreamDestroy_v2((ferry_CUstream)stream);
  int code = FERRY_OK;
  if (rc != FERRY_CUDA_SUCCESS) {
    code = cuda_fail(error, rc, "cuStreamDestroy_v2",
                     "destroying stream %p of %s device %" PRId64, stream,
                     type_name(device), device->device_id);
  }
  return cuda_leave(device, pushed, code, error);
}

static int cuda_stream_synchronize(struct FerryDevice* device, void* stream,
                                   struct FerryError* error) {
  int pushed = 0;
  FERRY_RETURN_NOT_OK(cuda_enter(device, &pushed, error));
  ferry_CUresult rc;
  const char* op;
  if (stream == NULL) {
    /* ferry's NULL stream means "all work of the device". */
    op = "cuCtxSynchronize";
    rc = g_cuda.cuCtxSynchronize();
  } else {
    op = "cuStreamSynchronize";
    rc = g_cuda.cuStreamSynchronize((ferry_CUstream)stream);
  }
  int code = FERRY_OK;
  if (rc != FERRY_CUDA_SUCCESS) {
    code = cuda_fail(error, rc, op, "synchronizing stream %p of %s device %" PRId64,
                     stream, type_name(device), device->device_id);
  }
  return cuda_leave(device, pushed, code, error);
}

static int cuda_event_create(struct FerryDevice* device, void** sync_event_out,
                             struct FerryError* error) {
  ferry_CUevent* slot = (ferry_CUevent*)malloc(sizeof(ferry_CUevent));
  if (slot == NULL)
    return ferry__set_error(error, ENOMEM, "out of memory creating a CUDA event");
  *slot = NULL;
  int pushed = 0;
  int code = cuda_enter(device, &pushed, error);
  if (code != FERRY_OK) {
    free(slot);
    return code;
  }
  ferry_CUresult rc = g_cuda.cuEventCreate(slot, FERRY_CU_EVENT_DISABLE_TIMING);
  if (rc != FERRY_CUDA_SUCCESS) {
    code =
        cuda_fail(error, rc, "cuEventCreate", "creating an event on %s device %" PRId64,
                  type_name(device), device->device_id);
  }
  code = cuda_leave(device, pushed, code, error);
  if (code != FERRY_OK) {
    if (rc == FERRY_CUDA_SUCCESS) g_cuda.cuEventDestroy_v2(*slot);
    free(slot);
    return code;
  }
  *sync_event_out = slot;
  return FERRY_OK;
}

/* On failure the slot (and the handle in it) stays the caller's, who may
 * try again; only a destroyed handle's slot is freed. */
static int cuda_event_destroy(struct FerryDevice* device, void* sync_event,
                              struct FerryError* error) {
  ferry_CUevent* slot = (ferry_CUevent*)sync_event;
  int pushed = 0;
  int code = cuda_enter(device, &pushed, error);
  int destroyed = 0;
  if (code == FERRY_OK) {
    ferry_CUresult rc = g_cuda.cuEventDestroy_v2(*slot);
    destroyed = rc == FERRY_CUDA_SUCCESS;
    if (!destroyed) {
      code = cuda_fail(error, rc, "cuEventDestroy_v2",
                       "destroying event %p of %s device %" PRId64, sync_event,
                       type_name(device), device->device_id);
    }
    code = cuda_leave(device, pushed, code, error);
  }
  if (destroyed) free(slot);
  return code;
}

static int cuda_event_record(struct FerryDevice* device, void* sync_event, void* stream,
                             struct FerryError* error) {
  int pushed = 0;
  FERRY_RETURN_NOT_OK(cuda_enter(device, &pushed, error));
  ferry_CUresult rc =
      g_cuda.cuEventRecord(*(ferry_CUevent*)sync_event, (ferry_CUstream)stream);
  int code = FERRY_OK;
  if (rc != FERRY_CUDA_SUCCESS) {
    code = cuda_fail(error, rc, "cuEventRecord",
                     "recording event %p on stream %p of %s device %" PRId64, sync_event,
                     stream, type_name(device), device->device_id);
  }
  return cuda_leave(device, pushed, code, error);
}

static int cuda_event_synchronize(struct FerryDevice* device, void* sync_event,
                                  struct FerryError* error) {
  int pushed = 0;
  FERRY_RETURN_NOT_OK(cuda_enter(device, &pushed, error));
  ferry_CUresult rc = g_cuda.cuEventSynchronize(*(ferry_CUevent*)sync_event);
  int code = FERRY_OK;
  if (rc != FERRY_CUDA_SUCCESS) {
    code = cuda_fail(error, rc, "cuEventSynchronize",
                     "waiting for event %p of %s device %" PRId64, sync_event,
                     type_name(device), device->device_id);
  }
  return cuda_leave(device, pushed, code, error);
}

static int cuda_stream_wait_event(struct FerryDevice* device, void* stream,
                                  void* sync_event, struct FerryError* error) {
  if (stream == NULL) return cuda_event_synchronize(device, sync_event, error);
  int pushed = 0;
  FERRY_RETURN_NOT_OK(cuda_enter(device, &pushed, error));
  ferry_CUresult rc =
      g_cuda.cuStreamWaitEvent((ferry_CUstream)stream, *(ferry_CUevent*)sync_event, 0);
  int code = FERRY_OK;
  if (rc != FERRY_CUDA_SUCCESS) {
    code = cuda_fail(error, rc, "cuStreamWaitEvent",
                     "making stream %p of %s device %" PRId64 " wait for event %p",
                     stream, type_name(device), device->device_id, sync_event);
  }
  return cuda_leave(device, pushed, code, error);
}

/* ---- residency
 * ------------------------------------------------------------------------- */

/* What the driver says about one pointer. */
struct FerryCudaPointerInfo {
  unsigned int memory_type;
  unsigned int is_managed;
  int ordinal;
  ferry_CUdeviceptr range_start;
  size_t range_size;
};

static void describe_pointer(const struct FerryCudaPointerInfo* info, char* out,
                             size_t size) {
  if (info->is_managed) {
    snprintf(out, size, "cuda_managed memory (of device %d)", info->ordinal);
  } else if (info->memory_type == FERRY_CU_MEMORYTYPE_HOST) {
    snprintf(out, size, "cuda_host (pinned host) memory");
  } else if (info->memory_type == FERRY_CU_MEMORYTYPE_DEVICE) {
    snprintf(out, size, "cuda device %d memory", info->ordinal);
  } else {
    snprintf(out, size, "CUDA memory of type %u", info->memory_type);
  }
}

/* Asks the driver about `ptr`. EFAULT with a message when the driver does
 * not know it (plain host memory, freed memory, another runtime's). */
static int cuda_query_pointer(const struct FerryDevice* device, const void* ptr,
                              struct FerryCudaPointerInfo* info,
                              struct FerryError* error) {
  int pushed = 0;
  FERRY_RETURN_NOT_OK(cuda_enter(device, &pushed, error));
  *info = (struct FerryCudaPointerInfo){0, 0, -1, 0, 0};
  ferry_CUdeviceptr address = (ferry_CUdeviceptr)(uintptr_t)ptr;
  struct {
    ferry_CUpointer_attribute attribute;
    void* data;
    const char* what;
  } queries[] = {
      {FERRY_CU_POINTER_ATTRIBUTE_MEMORY_TYPE, &info->memory_type, "memory type"},
      {FERRY_CU_POINTER_ATTRIBUTE_IS_MANAGED, &info->is_managed, "managed flag"},
      {FERRY_CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, &info->ordinal, "device ordinal"},
      {FERRY_CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, &info->range_start,
       "allocation start"},
      {FERRY_CU_POINTER_ATTRIBUTE_RANGE_SIZE, &info->range_size, "allocation size"},
  };
  int code = FERRY_OK;
  for (size_t i = 0; i < sizeof(queries) / sizeof(queries[0]) && code == FERRY_OK; i++) {
    ferry_CUresult rc =
        g_cuda.cuPointerGetAttribute(queries[i].data, queries[i].attribute, address);
    if (rc == FERRY_CUDA_ERROR_INVALID_VALUE && i == 0) {
      code =
          ferry__set_error(error, EFAULT,
                          "pointer %p is not %s device %" PRId64
                          " memory (the CUDA driver does not know it: plain host memory "
                          "or freed)",
                          ptr, type_name(device), device->device_id);
    } else if (rc != FERRY_CUDA_SUCCESS) {
      code = cuda_fail(error, rc, "cuPointerGetAttribute", "reading the %s of pointer %p",
                       queries[i].what, ptr);
    }
  }
  return cuda_leave(device, pushed, code, error);
}

/* FERRY_OK when the memory `info` describes may be declared as `device`,
 * and [ptr, ptr + size) stays inside its allocation; EFAULT otherwise. */
static int cuda_judge_pointer(const struct FerryDevice* device, const void* ptr,
                              int64_t size, const struct FerryCudaPointerInfo* info,
                              struct FerryError* error) {
  int resident;
  switch (device->device_type) {
    case ARROW_DEVICE_CUDA_HOST:
      resident = !info->is_managed && info->memory_type == FERRY_CU_MEMORYTYPE_HOST;
      break;
    case ARROW_DEVICE_CUDA_MANAGED:
      /* Managed memory is reachable from every device: any ordinal will do. */
      resident = info->is_managed != 0;
      break;
    default:
      /* Managed memory is device memory too, and what RMM and cuDF export
       * as ARROW_DEVICE_CUDA; it is reachable from every device. */
      resident = info->is_managed != 0 ||
                 (info->memory_type == FERRY_CU_MEMORYTYPE_DEVICE &&
                  info->ordinal == (int)device->device_id);
      break;
  }
  if (!resident) {
    char found[128];
    describe_pointer(info, found, sizeof(found));
    return ferry__set_error(error, EFAULT,
                           "pointer %p is not %s device %" PRId64 " memory (it is %s)",
                           ptr, type_name(device), device->device_id, found);
  }
  /* The driver found ptr in the range, so the offset is below its size. */
  uint64_t offset = (uint64_t)(uintptr_t)ptr - (uint64_t)info->range_start;
  if ((uint64_t)size > (uint64_t)info->range_size - offset) {
    return ferry__set_error(error, EFAULT,
                           "range [%p, +%" PRId64
                           ") runs past the end of its %zu-byte "
                           "allocation on %s device %" PRId64 " at 0x%llx",
                           ptr, size, info->range_size, type_name(device),
                           device->device_id, (unsigned long long)info->range_start);
  }
  return FERRY_OK;
}

static int cuda_check_pointer(struct FerryDevice* device, const void* ptr, int64_t size,
                              struct FerryError* error) {
  struct FerryCudaPointerInfo info;
  int code = cuda_query_pointer(device, ptr, &info, error);
  if (code == FERRY_OK) code = cuda_judge_pointer(device, ptr, size, &info, error);
  if (code == EFAULT && size == 0) {
    /* An empty buffer may point one past the end of its allocation (a slice
     * at the end, a producer's end pointer): then the byte before it is the
     * allocation's last, and that allocation must be resident. */
    const char* last = (const char*)ptr - 1;
    if (cuda_query_pointer(device, last, &info, NULL) == FERRY_OK &&
        (uint64_t)info.range_start + info.range_size == (uint64_t)(uintptr_t)ptr &&
        cuda_judge_pointer(device, last, 1, &info, NULL) == FERRY_OK) {
      return FERRY_OK;
    }
  }
  return code;
}

const struct FerryBackend ferry__backend_cuda = {
    .name = "cuda",
    .device_types = kCudaDeviceTypes,
    .n_device_types = 3,
    .probe = cuda_probe,
    .device_count = cuda_device_count,
    .device_init = cuda_device_init,
    .is_host_accessible = cuda_is_host_accessible,
    .allocate = cuda_allocate,
    .deallocate = cuda_deallocate,
    .memcpy = cuda_memcpy,
    .stream_create = cuda_stream_create,
    .stream_destroy = cuda_stream_destroy,
    .stream_synchronize = cuda_stream_synchronize,
    .event_create = cuda_event_create,
    .event_destroy = cuda_event_destroy,
    .event_record = cuda_event_record,
    .event_synchronize = cuda_event_synchronize,
    .stream_wait_event = cuda_stream_wait_event,
    .check_pointer = cuda_check_pointer,
    .unusable_after_fork = 1,
};
