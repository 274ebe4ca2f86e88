/* The ROCm backend (rocm, rocm_host): the HIP runtime, loaded at run time
 * with dlopen so that the same libferry.so runs without AMD's stack,
 * filling the table of entry points that gpu_driver.c implements every
 * backend operation over.
 *
 * Loading: the probe opens $FERRY_HIP_LIBRARY, or the first of
 * libamdhip64.so, libamdhip64.so.7, .so.6 and .so.5 that loads (the
 * unversioned name only exists with the -dev package), resolves the entry
 * points of hip_runtime_decls.h, calls hipInit and counts devices. Without
 * an AMD GPU the runtime loads fine and hipInit fails with
 * hipErrorInvalidDevice (hipGetDeviceCount with hipErrorNoDevice): that
 * name is the reason `ferry devices` prints. The library is not unloaded
 * after a failed probe: ROCm runtimes are not written to be dlclose'd once
 * initialized, and one mapping is harmless.
 *
 * Devices: rocm is device memory (hipMalloc), rocm_host pinned host memory
 * (hipHostMalloc) allocated while device `device_id` is current.
 *
 * Current device: HIP keeps one current device per thread. Every call is
 * bracketed (the table's enter and leave): the caller's device is read
 * (hipGetDevice), ferry's device set when it differs, and the caller's
 * restored afterwards.
 *
 * Errors: a failing hipError_t becomes ENOMEM (hipErrorOutOfMemory), ENODEV
 * (no device) or EIO. */
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_driver.h"
#include "hip_runtime_decls.h"

static const ArrowDeviceType kRocmDeviceTypes[] = {ARROW_DEVICE_ROCM,
                                                   ARROW_DEVICE_ROCM_HOST};

static const char* const kHipDefaultLibraries[] = {
    "libamdhip64.so", "libamdhip64.so.7", "libamdhip64.so.6", "libamdhip64.so.5"};

/* The loaded runtime; written only by hip_probe (under the registry lock,
 * before any ROCm device exists), read-only afterwards. */
struct FerryHipRuntime {
  void* library;
  char path[512];
  int runtime_version;
  int device_count;
#define FERRY_HIP_FIELD(name, params) ferry_##name##_fn name;
  FERRY_HIP_RUNTIME_FUNCTIONS(FERRY_HIP_FIELD)
#undef FERRY_HIP_FIELD
  ferry_hipPointerGetAttributes_fn hipPointerGetAttributes;
};
static struct FerryHipRuntime g_hip;

/* The table this file fills, at its end (the messages above need it). */
static const struct FerryGpuDriverApi kHipApi;

/* ---- error names ---------------------------------------------------------------- */

/* The names are HIP's; the descriptions are ferry's own words. */
static const struct FerryDriverErrorName kHipErrorNames[] = {
    {FERRY_HIP_SUCCESS, "hipSuccess", "no error"},
    {FERRY_HIP_ERROR_INVALID_VALUE, "hipErrorInvalidValue",
     "an argument is invalid or out of range"},
    {FERRY_HIP_ERROR_OUT_OF_MEMORY, "hipErrorOutOfMemory", "out of memory"},
    {FERRY_HIP_ERROR_NOT_INITIALIZED, "hipErrorNotInitialized",
     "the runtime is not initialized"},
    {FERRY_HIP_ERROR_DEINITIALIZED, "hipErrorDeinitialized",
     "the runtime is shutting down"},
    {FERRY_HIP_ERROR_INVALID_DEVICE_POINTER, "hipErrorInvalidDevicePointer",
     "the pointer is not a device pointer"},
    {FERRY_HIP_ERROR_INVALID_MEMCPY_DIRECTION, "hipErrorInvalidMemcpyDirection",
     "the copy direction does not match the pointers"},
    {FERRY_HIP_ERROR_INSUFFICIENT_DRIVER, "hipErrorInsufficientDriver",
     "the kernel driver is too old for this runtime"},
    {FERRY_HIP_ERROR_NO_DEVICE, "hipErrorNoDevice", "no AMD GPU was found"},
    {FERRY_HIP_ERROR_INVALID_DEVICE, "hipErrorInvalidDevice",
     "no usable device (the runtime could not initialize one)"},
    {FERRY_HIP_ERROR_INVALID_CONTEXT, "hipErrorInvalidContext", "the context is invalid"},
    {FERRY_HIP_ERROR_PEER_ACCESS_UNSUPPORTED, "hipErrorPeerAccessUnsupported",
     "peer access is not supported between these devices"},
    {FERRY_HIP_ERROR_SHARED_OBJECT_INIT_FAILED, "hipErrorSharedObjectInitFailed",
     "a shared object failed to initialize"},
    {FERRY_HIP_ERROR_OPERATING_SYSTEM, "hipErrorOperatingSystem",
     "an operating system call failed"},
    {FERRY_HIP_ERROR_INVALID_HANDLE, "hipErrorInvalidHandle",
     "a stream or event handle is invalid"},
    {FERRY_HIP_ERROR_ILLEGAL_STATE, "hipErrorIllegalState",
     "a resource is not in a valid state for this operation"},
    {FERRY_HIP_ERROR_NOT_FOUND, "hipErrorNotFound", "a named symbol was not found"},
    {FERRY_HIP_ERROR_NOT_READY, "hipErrorNotReady", "the work has not completed yet"},
    {FERRY_HIP_ERROR_ILLEGAL_ADDRESS, "hipErrorIllegalAddress",
     "the device accessed an illegal address"},
    {FERRY_HIP_ERROR_PEER_ACCESS_NOT_ENABLED, "hipErrorPeerAccessNotEnabled",
     "peer access was not enabled"},
    {FERRY_HIP_ERROR_CONTEXT_IS_DESTROYED, "hipErrorContextIsDestroyed",
     "the context was destroyed"},
    {FERRY_HIP_ERROR_HOST_MEMORY_NOT_REGISTERED, "hipErrorHostMemoryNotRegistered",
     "the host memory is not registered with the runtime"},
    {FERRY_HIP_ERROR_LAUNCH_FAILURE, "hipErrorLaunchFailure", "a kernel failed"},
    {FERRY_HIP_ERROR_NOT_SUPPORTED, "hipErrorNotSupported",
     "the operation is not supported on this system or device"},
    {FERRY_HIP_ERROR_UNKNOWN, "hipErrorUnknown", "an unknown internal error"},
    {FERRY_HIP_ERROR_RUNTIME_MEMORY, "hipErrorRuntimeMemory",
     "an HSA runtime memory call failed"},
    {FERRY_HIP_ERROR_RUNTIME_OTHER, "hipErrorRuntimeOther", "an HSA runtime call failed"},
};

/* ENOMEM when memory ran out (as ferry.h promises), ENODEV when no usable
 * device is behind the call, EIO for every other runtime failure. */
static int hip_errno(ferry_hipError_t code) {
  switch (code) {
    case FERRY_HIP_ERROR_OUT_OF_MEMORY: return ENOMEM;
    case FERRY_HIP_ERROR_NO_DEVICE:
    case FERRY_HIP_ERROR_INVALID_DEVICE: return ENODEV;
    default: return EIO;
  }
}

#define hip_fail(error, rc, op, ...) \
  ferry__gpu_fail(&kHipApi, (error), (rc), (op), __VA_ARGS__)

/* ---- loading the runtime ----------------------------------------------------------- */

static void hip_forget(void) {
  /* Deliberately no dlclose (see the top of the file). */
  memset(&g_hip, 0, sizeof(g_hip));
}

static int hip_probe_failed(struct FerryError* error, ferry_hipError_t rc,
                            const char* op) {
  int code = ferry__gpu_fail_with(
      &kHipApi, error, ENODEV, rc, op, "rocm backend: HIP runtime %d.%d loaded from %s%s",
      g_hip.runtime_version / 10000000, (g_hip.runtime_version / 100000) % 100,
      g_hip.path,
      rc == FERRY_HIP_ERROR_INVALID_DEVICE || rc == FERRY_HIP_ERROR_NO_DEVICE
          ? "; the runtime is installed but finds no AMD GPU"
          : "");
  hip_forget();
  return code;
}

static int hip_open(struct FerryError* error) {
  const char* override = getenv("FERRY_HIP_LIBRARY");
  dlerror();
  if (override != NULL && override[0] != '\0') {
    snprintf(g_hip.path, sizeof(g_hip.path), "%s", override);
    g_hip.library = dlopen(override, RTLD_NOW | RTLD_LOCAL);
    if (g_hip.library == NULL) {
      const char* why = dlerror();
      return ferry__set_error(
          error, ENODEV,
          "rocm backend: cannot load the HIP runtime %s (FERRY_HIP_LIBRARY): %s",
          override, why != NULL ? why : "unknown dlopen error");
    }
    return FERRY_OK;
  }
  char first_failure[512] = "";
  for (size_t i = 0; i < sizeof(kHipDefaultLibraries) / sizeof(kHipDefaultLibraries[0]);
       i++) {
    g_hip.library = dlopen(kHipDefaultLibraries[i], RTLD_NOW | RTLD_LOCAL);
    if (g_hip.library != NULL) {
      snprintf(g_hip.path, sizeof(g_hip.path), "%s", kHipDefaultLibraries[i]);
      return FERRY_OK;
    }
    const char* why = dlerror();
    if (first_failure[0] == '\0') {
      snprintf(first_failure, sizeof(first_failure), "%s", why != NULL ? why : "");
    }
  }
  return ferry__set_error(
      error, ENODEV,
      "rocm backend: cannot load the HIP runtime (tried libamdhip64.so, "
      ".so.7, .so.6, .so.5): %s (ROCm not installed?)",
      first_failure);
}

static int hip_probe(struct FerryError* error) {
  memset(&g_hip, 0, sizeof(g_hip));
  int code = hip_open(error);
  if (code != FERRY_OK) {
    hip_forget();
    return code;
  }
  const struct FerryGpuSymbol symbols[] = {
#define FERRY_HIP_SYMBOL(name, params) {#name, (void**)&g_hip.name},
      FERRY_HIP_RUNTIME_FUNCTIONS(FERRY_HIP_SYMBOL)
          FERRY_HIP_SYMBOL(hipPointerGetAttributes, ())
#undef FERRY_HIP_SYMBOL
  };
  code = ferry__gpu_resolve(&kHipApi, g_hip.library, g_hip.path, symbols,
                            sizeof(symbols) / sizeof(symbols[0]), error);
  if (code != FERRY_OK) {
    hip_forget();
    return code;
  }
  /* The version first: it works without a GPU and names what was loaded. */
  ferry_hipError_t rc = g_hip.hipRuntimeGetVersion(&g_hip.runtime_version);
  if (rc != FERRY_HIP_SUCCESS) return hip_probe_failed(error, rc, "hipRuntimeGetVersion");
  rc = g_hip.hipInit(0);
  if (rc != FERRY_HIP_SUCCESS) return hip_probe_failed(error, rc, "hipInit");
  rc = g_hip.hipGetDeviceCount(&g_hip.device_count);
  if (rc != FERRY_HIP_SUCCESS) return hip_probe_failed(error, rc, "hipGetDeviceCount");
  if (g_hip.device_count <= 0)
    return hip_probe_failed(error, FERRY_HIP_ERROR_NO_DEVICE, "hipGetDeviceCount");
  return FERRY_OK;
}

static int hip_device_count(ArrowDeviceType device_type, int64_t* count,
                            struct FerryError* error) {
  *count = g_hip.device_count;
  return FERRY_OK;
}

static int hip_is_host_accessible(ArrowDeviceType device_type) {
  return device_type == ARROW_DEVICE_ROCM_HOST;
}

/* ---- current device bracketing ----------------------------------------------------- */

static const char* type_name(const struct FerryDevice* device) {
  return ferry_device_type_name(device->device_type);
}

/* Makes the device current on this thread; `*saved` gets the caller's. */
static int hip_enter(const struct FerryDevice* device, int* saved,
                     struct FerryError* error) {
  ferry_hipError_t rc = g_hip.hipGetDevice(saved);
  if (rc != FERRY_HIP_SUCCESS) {
    return hip_fail(error, rc, "hipGetDevice", "reading the caller's current device");
  }
  if (*saved != (int)device->device_id) {
    rc = g_hip.hipSetDevice((int)device->device_id);
    if (rc != FERRY_HIP_SUCCESS) {
      return hip_fail(error, rc, "hipSetDevice", "making %s device %" PRId64 " current",
                      type_name(device), device->device_id);
    }
  }
  return FERRY_OK;
}

/* Restores the caller's device. */
static int hip_leave(const struct FerryDevice* device, int saved, int code,
                     struct FerryError* error) {
  if (saved == (int)device->device_id) return code;
  ferry_hipError_t rc = g_hip.hipSetDevice(saved);
  if (rc != FERRY_HIP_SUCCESS && code == FERRY_OK) {
    return hip_fail(error, rc, "hipSetDevice", "restoring the caller's current device %d",
                    saved);
  }
  return code;
}

/* ---- the entry points as gpu_driver.c calls them ----------------------------------- */

static FerryGpuResult hip_allocate(const struct FerryDevice* device, size_t bytes,
                                   void** out, const char** op) {
  if (device->device_type == ARROW_DEVICE_ROCM_HOST) {
    *op = "hipHostMalloc";
    return g_hip.hipHostMalloc(out, bytes, FERRY_HIP_HOST_MALLOC_DEFAULT);
  }
  *op = "hipMalloc";
  return g_hip.hipMalloc(out, bytes);
}

static FerryGpuResult hip_deallocate(const struct FerryDevice* device, void* ptr,
                                     const char** op) {
  if (device->device_type == ARROW_DEVICE_ROCM_HOST) {
    *op = "hipHostFree";
    return g_hip.hipHostFree(ptr);
  }
  *op = "hipFree";
  return g_hip.hipFree(ptr);
}

static FerryGpuResult hip_copy(const struct FerryDevice* device, void* dst,
                               const struct FerryDevice* src_device, const void* src,
                               size_t size, enum FerryCopyKind kind, void* stream,
                               const char** op) {
  ferry_hipStream_t s = (ferry_hipStream_t)stream;
  *op = "hipMemcpyAsync";
  switch (kind) {
    case FERRY_COPY_HOST_TO_DEVICE:
      return g_hip.hipMemcpyAsync(dst, src, size, FERRY_HIP_MEMCPY_HOST_TO_DEVICE, s);
    case FERRY_COPY_DEVICE_TO_HOST:
      return g_hip.hipMemcpyAsync(dst, src, size, FERRY_HIP_MEMCPY_DEVICE_TO_HOST, s);
    default:
      if (src_device->device_id == device->device_id) {
        return g_hip.hipMemcpyAsync(dst, src, size, FERRY_HIP_MEMCPY_DEVICE_TO_DEVICE, s);
      }
      *op = "hipMemcpyPeerAsync";
      return g_hip.hipMemcpyPeerAsync(dst, (int)device->device_id, src,
                                      (int)src_device->device_id, size, s);
  }
}

static FerryGpuResult hip_stream_synchronize(void* stream) {
  return g_hip.hipStreamSynchronize((ferry_hipStream_t)stream);
}
static FerryGpuResult hip_device_synchronize(void) {
  return g_hip.hipDeviceSynchronize();
}
static FerryGpuResult hip_stream_create(void** stream) {
  ferry_hipStream_t created = NULL;
  ferry_hipError_t rc =
      g_hip.hipStreamCreateWithFlags(&created, FERRY_HIP_STREAM_NON_BLOCKING);
  *stream = created;
  return rc;
}
static FerryGpuResult hip_stream_destroy(void* stream) {
  return g_hip.hipStreamDestroy((ferry_hipStream_t)stream);
}
static FerryGpuResult hip_event_create(void** event) {
  ferry_hipEvent_t created = NULL;
  ferry_hipError_t rc =
      g_hip.hipEventCreateWithFlags(&created, FERRY_HIP_EVENT_DISABLE_TIMING);
  *event = created;
  return rc;
}
static FerryGpuResult hip_event_destroy(void* event) {
  return g_hip.hipEventDestroy((ferry_hipEvent_t)event);
}
static FerryGpuResult hip_event_record(void* event, void* stream) {
  return g_hip.hipEventRecord((ferry_hipEvent_t)event, (ferry_hipStream_t)stream);
}
static FerryGpuResult hip_event_synchronize(void* event) {
  return g_hip.hipEventSynchronize((ferry_hipEvent_t)event);
}
static FerryGpuResult hip_stream_wait_event(void* stream, void* event) {
  return g_hip.hipStreamWaitEvent((ferry_hipStream_t)stream, (ferry_hipEvent_t)event, 0);
}

/* hipPointerGetAttributes, then the allocation's range. HIP 6 renumbered
 * the memory types and reports plain host memory as "unregistered" where
 * HIP 5 fails with hipErrorInvalidValue; pinned host memory does not always
 * have a range, which only device memory must have. */
static FerryGpuResult hip_query_pointer(const struct FerryDevice* device, const void* ptr,
                                        struct FerryGpuPointer* info, const char** op,
                                        const char** what) {
  int hip6 = g_hip.runtime_version >= 60000000;
  struct ferry_hipPointerAttribute attributes;
  memset(&attributes, 0, sizeof(attributes));
  ferry_hipError_t rc = g_hip.hipPointerGetAttributes(&attributes, ptr);
  if (rc == FERRY_HIP_ERROR_INVALID_VALUE ||
      (rc == FERRY_HIP_SUCCESS && hip6 &&
       attributes.memory_type == FERRY_HIP6_MEMORY_TYPE_UNREGISTERED)) {
    return FERRY_HIP_SUCCESS; /* unknown */
  }
  if (rc != FERRY_HIP_SUCCESS) {
    *op = "hipPointerGetAttributes";
    *what = "attributes";
    return rc;
  }
  void* base = NULL;
  rc = g_hip.hipMemGetAddressRange(&base, &info->size, (void*)(uintptr_t)ptr);
  if (rc == FERRY_HIP_SUCCESS) {
    info->have_range = 1;
    info->base = (uintptr_t)base;
  } else if (device->device_type == ARROW_DEVICE_ROCM) {
    *op = "hipMemGetAddressRange";
    *what = "allocation";
    return rc;
  }
  unsigned int host_type =
      hip6 ? FERRY_HIP6_MEMORY_TYPE_HOST : FERRY_HIP5_MEMORY_TYPE_HOST;
  unsigned int device_type =
      hip6 ? FERRY_HIP6_MEMORY_TYPE_DEVICE : FERRY_HIP5_MEMORY_TYPE_DEVICE;
  info->known = 1;
  info->ordinal = attributes.device;
  info->driver_type = attributes.memory_type;
  if (attributes.is_managed ||
      (hip6 && attributes.memory_type == FERRY_HIP6_MEMORY_TYPE_MANAGED)) {
    info->memory = FERRY_GPU_MEMORY_MANAGED;
  } else if (attributes.memory_type == host_type) {
    info->memory = FERRY_GPU_MEMORY_HOST;
  } else if (attributes.memory_type == device_type) {
    info->memory = FERRY_GPU_MEMORY_DEVICE;
  } else {
    info->memory = FERRY_GPU_MEMORY_OTHER;
  }
  return FERRY_HIP_SUCCESS;
}

static const struct FerryGpuDriverApi kHipApi = {
    .backend = "rocm",
    .driver_noun = "the HIP runtime",
    .library_noun = "the HIP runtime",
    .minimum = "HIP 5 or newer",
    .memory_noun = "HIP",
    .managed_before = "managed memory of device ",
    .managed_after = "",
    .result_type = "hipError_t",
    .error_names = kHipErrorNames,
    .n_error_names = sizeof(kHipErrorNames) / sizeof(kHipErrorNames[0]),
    .errno_of = hip_errno,
    .device_memory = ARROW_DEVICE_ROCM,
    .host_memory = ARROW_DEVICE_ROCM_HOST,
    /* Arrow has no rocm_managed: managed memory is exported as rocm. */
    .managed_memory = ARROW_DEVICE_ROCM,
    .enter = hip_enter,
    .leave = hip_leave,
    .allocate = hip_allocate,
    .deallocate = hip_deallocate,
    .copy = hip_copy,
    .stream_synchronize = hip_stream_synchronize,
    .stream_synchronize_name = "hipStreamSynchronize",
    .device_synchronize = hip_device_synchronize,
    .device_synchronize_name = "hipDeviceSynchronize",
    .stream_create = hip_stream_create,
    .stream_create_name = "hipStreamCreateWithFlags",
    .stream_destroy = hip_stream_destroy,
    .stream_destroy_name = "hipStreamDestroy",
    .event_create = hip_event_create,
    .event_create_name = "hipEventCreateWithFlags",
    .event_destroy = hip_event_destroy,
    .event_destroy_name = "hipEventDestroy",
    .event_record = hip_event_record,
    .event_record_name = "hipEventRecord",
    .event_synchronize = hip_event_synchronize,
    .event_synchronize_name = "hipEventSynchronize",
    .stream_wait_event = hip_stream_wait_event,
    .stream_wait_event_name = "hipStreamWaitEvent",
    .query_pointer = hip_query_pointer,
};

const struct FerryBackend ferry__backend_rocm = {
    FERRY_BACKEND_IDENTITY("rocm", kRocmDeviceTypes, hip, NULL),
    FERRY_GPU_BACKEND_OPERATIONS(&kHipApi),
};
