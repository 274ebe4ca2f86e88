/* The CUDA backend (cuda, cuda_host, cuda_managed): the CUDA driver API,
 * loaded at run time with dlopen so that the same libferry.so runs on
 * machines without an NVIDIA driver, filling the table of entry points
 * that gpu_driver.c implements every backend operation over.
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
 * by cuCtxPushCurrent/cuCtxPopCurrent (the table's enter and leave).
 *
 * Devices: cuda is device memory (cuMemAlloc), cuda_host pinned host memory
 * (cuMemAllocHost) and cuda_managed managed memory (cuMemAllocManaged); all
 * three share the driver's device ordinals, since pinned and managed memory
 * are allocated in the context of one device.
 *
 * Errors: a failing CUresult becomes ENOMEM (CUDA_ERROR_OUT_OF_MEMORY),
 * ENODEV (no device, stub library, device unavailable) or EIO (anything
 * else). */
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_driver_api.h"
#include "gpu_driver.h"

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

/* The table this file fills, at its end (the messages above need it). */
static const struct FerryGpuDriverApi kCudaApi;

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

#define cuda_fail(error, rc, op, ...) \
  ferry__gpu_fail(&kCudaApi, (error), (rc), (op), __VA_ARGS__)

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
  int code =
      ferry__gpu_fail_with(&kCudaApi, error, ENODEV, rc, op,
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

  const struct FerryGpuSymbol symbols[] = {
#define FERRY_CUDA_SYMBOL(name, params) {#name, (void**)&g_cuda.name},
      FERRY_CUDA_DRIVER_FUNCTIONS(FERRY_CUDA_SYMBOL)
#undef FERRY_CUDA_SYMBOL
  };
  int code = ferry__gpu_resolve(&kCudaApi, g_cuda.library, path, symbols,
                                sizeof(symbols) / sizeof(symbols[0]), error);
  if (code != FERRY_OK) {
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
    code = ferry__set_error(error, ENODEV,
                            "[cuDeviceGetCount] cuda backend: the CUDA driver %d.%d (%s) "
                            "reports no device",
                            g_cuda.driver_version / 1000,
                            (g_cuda.driver_version % 1000) / 10, path);
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
  if (state == NULL)
    return ferry__set_error(error, ENOMEM, "out of memory (cuda device)");
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

/* Restores the caller's context when cuda_enter pushed one. */
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

/* ---- the entry points as gpu_driver.c calls them --------------------------------- */

static ferry_CUdeviceptr address_of(const void* pointer) {
  return (ferry_CUdeviceptr)(uintptr_t)pointer;
}

static FerryGpuResult cuda_allocate(const struct FerryDevice* device, size_t bytes,
                                    void** out, const char** op) {
  if (device->device_type == ARROW_DEVICE_CUDA_HOST) {
    *op = "cuMemAllocHost_v2";
    return g_cuda.cuMemAllocHost_v2(out, bytes);
  }
  ferry_CUdeviceptr address = 0;
  ferry_CUresult rc;
  if (device->device_type == ARROW_DEVICE_CUDA_MANAGED) {
    *op = "cuMemAllocManaged";
    rc = g_cuda.cuMemAllocManaged(&address, bytes, FERRY_CU_MEM_ATTACH_GLOBAL);
  } else {
    *op = "cuMemAlloc_v2";
    rc = g_cuda.cuMemAlloc_v2(&address, bytes);
  }
  *out = (void*)(uintptr_t)address;
  return rc;
}

/* Frees with the entry point that matches the device type. */
static FerryGpuResult cuda_deallocate(const struct FerryDevice* device, void* ptr,
                                      const char** op) {
  if (device->device_type == ARROW_DEVICE_CUDA_HOST) {
    *op = "cuMemFreeHost";
    return g_cuda.cuMemFreeHost(ptr);
  }
  *op = "cuMemFree_v2";
  return g_cuda.cuMemFree_v2(address_of(ptr));
}

static FerryGpuResult cuda_copy(const struct FerryDevice* device, void* dst,
                                const struct FerryDevice* src_device, const void* src,
                                size_t size, enum FerryCopyKind kind, void* stream,
                                const char** op) {
  ferry_CUstream s = (ferry_CUstream)stream;
  switch (kind) {
    case FERRY_COPY_HOST_TO_DEVICE:
      *op = "cuMemcpyHtoDAsync_v2";
      return g_cuda.cuMemcpyHtoDAsync_v2(address_of(dst), src, size, s);
    case FERRY_COPY_DEVICE_TO_HOST:
      *op = "cuMemcpyDtoHAsync_v2";
      return g_cuda.cuMemcpyDtoHAsync_v2(dst, address_of(src), size, s);
    default:
      if (src_device->device_id == device->device_id) {
        *op = "cuMemcpyDtoDAsync_v2";
        return g_cuda.cuMemcpyDtoDAsync_v2(address_of(dst), address_of(src), size, s);
      }
      /* Between two GPUs the driver routes through peer access or the host,
       * whichever the pair supports. */
      *op = "cuMemcpyPeerAsync";
      return g_cuda.cuMemcpyPeerAsync(address_of(dst), context_of(device),
                                      address_of(src), context_of(src_device), size, s);
  }
}

static FerryGpuResult cuda_stream_synchronize(void* stream) {
  return g_cuda.cuStreamSynchronize((ferry_CUstream)stream);
}
static FerryGpuResult cuda_device_synchronize(void) { return g_cuda.cuCtxSynchronize(); }
static FerryGpuResult cuda_stream_create(void** stream) {
  ferry_CUstream created = NULL;
  ferry_CUresult rc = g_cuda.cuStreamCreate(&created, FERRY_CU_STREAM_NON_BLOCKING);
  *stream = created;
  return rc;
}
static FerryGpuResult cuda_stream_destroy(void* stream) {
  return g_cuda.cuStreamDestroy_v2((ferry_CUstream)stream);
}
static FerryGpuResult cuda_event_create(void** event) {
  ferry_CUevent created = NULL;
  ferry_CUresult rc = g_cuda.cuEventCreate(&created, FERRY_CU_EVENT_DISABLE_TIMING);
  *event = created;
  return rc;
}
static FerryGpuResult cuda_event_destroy(void* event) {
  return g_cuda.cuEventDestroy_v2((ferry_CUevent)event);
}
static FerryGpuResult cuda_event_record(void* event, void* stream) {
  return g_cuda.cuEventRecord((ferry_CUevent)event, (ferry_CUstream)stream);
}
static FerryGpuResult cuda_event_synchronize(void* event) {
  return g_cuda.cuEventSynchronize((ferry_CUevent)event);
}
static FerryGpuResult cuda_stream_wait_event(void* stream, void* event) {
  return g_cuda.cuStreamWaitEvent((ferry_CUstream)stream, (ferry_CUevent)event, 0);
}

/* Five attribute queries; the driver does not know the pointer when the
 * first one fails with CUDA_ERROR_INVALID_VALUE. */
static FerryGpuResult cuda_query_pointer(const struct FerryDevice* device,
                                         const void* ptr, struct FerryGpuPointer* info,
                                         const char** op, const char** what) {
  unsigned int memory_type = 0, is_managed = 0;
  ferry_CUdeviceptr range_start = 0;
  struct {
    ferry_CUpointer_attribute attribute;
    void* data;
    const char* what;
  } queries[] = {
      {FERRY_CU_POINTER_ATTRIBUTE_MEMORY_TYPE, &memory_type, "memory type"},
      {FERRY_CU_POINTER_ATTRIBUTE_IS_MANAGED, &is_managed, "managed flag"},
      {FERRY_CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, &info->ordinal, "device ordinal"},
      {FERRY_CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, &range_start, "allocation start"},
      {FERRY_CU_POINTER_ATTRIBUTE_RANGE_SIZE, &info->size, "allocation size"},
  };
  for (size_t i = 0; i < sizeof(queries) / sizeof(queries[0]); i++) {
    ferry_CUresult rc = g_cuda.cuPointerGetAttribute(
        queries[i].data, queries[i].attribute, address_of(ptr));
    if (rc == FERRY_CUDA_ERROR_INVALID_VALUE && i == 0) return FERRY_CUDA_SUCCESS;
    if (rc != FERRY_CUDA_SUCCESS) {
      *op = "cuPointerGetAttribute";
      *what = queries[i].what;
      return rc;
    }
  }
  info->known = 1;
  info->driver_type = memory_type;
  info->memory = is_managed                                  ? FERRY_GPU_MEMORY_MANAGED
                 : memory_type == FERRY_CU_MEMORYTYPE_HOST   ? FERRY_GPU_MEMORY_HOST
                 : memory_type == FERRY_CU_MEMORYTYPE_DEVICE ? FERRY_GPU_MEMORY_DEVICE
                                                             : FERRY_GPU_MEMORY_OTHER;
  info->have_range = 1;
  info->base = (uintptr_t)range_start;
  return FERRY_CUDA_SUCCESS;
}

static const struct FerryGpuDriverApi kCudaApi = {
    .backend = "cuda",
    .driver_noun = "the CUDA driver",
    .library_noun = "the CUDA driver library",
    .minimum = "a driver for CUDA 11 or newer",
    .memory_noun = "CUDA",
    .managed_before = "cuda_managed memory (of device ",
    .managed_after = ")",
    .result_type = "CUresult",
    .error_names = kCudaErrorNames,
    .n_error_names = sizeof(kCudaErrorNames) / sizeof(kCudaErrorNames[0]),
    .errno_of = cuda_errno,
    .device_memory = ARROW_DEVICE_CUDA,
    .host_memory = ARROW_DEVICE_CUDA_HOST,
    .managed_memory = ARROW_DEVICE_CUDA_MANAGED,
    .enter = cuda_enter,
    .leave = cuda_leave,
    .allocate = cuda_allocate,
    .deallocate = cuda_deallocate,
    .copy = cuda_copy,
    .stream_synchronize = cuda_stream_synchronize,
    .stream_synchronize_name = "cuStreamSynchronize",
    .device_synchronize = cuda_device_synchronize,
    .device_synchronize_name = "cuCtxSynchronize",
    .stream_create = cuda_stream_create,
    .stream_create_name = "cuStreamCreate",
    .stream_destroy = cuda_stream_destroy,
    .stream_destroy_name = "cuStreamDestroy_v2",
    .event_create = cuda_event_create,
    .event_create_name = "cuEventCreate",
    .event_destroy = cuda_event_destroy,
    .event_destroy_name = "cuEventDestroy_v2",
    .event_record = cuda_event_record,
    .event_record_name = "cuEventRecord",
    .event_synchronize = cuda_event_synchronize,
    .event_synchronize_name = "cuEventSynchronize",
    .stream_wait_event = cuda_stream_wait_event,
    .stream_wait_event_name = "cuStreamWaitEvent",
    .query_pointer = cuda_query_pointer,
};

const struct FerryBackend ferry__backend_cuda = {
    FERRY_BACKEND_IDENTITY("cuda", kCudaDeviceTypes, cuda, cuda_device_init),
    FERRY_GPU_BACKEND_OPERATIONS(&kCudaApi),
};
