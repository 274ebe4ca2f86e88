/* The ROCm backend (rocm, rocm_host) over the HIP runtime, loaded at run
 * time with dlopen so that the same libferry.so runs without AMD's stack.
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
 * bracketed: the caller's device is read (hipGetDevice), ferry's device set
 * when it differs, and the caller's restored afterwards.
 *
 * Streams, events, NULL stream and errors follow the CUDA backend (cuda.c):
 * streams are hipStreamNonBlocking, events hipEventDisableTiming,
 * sync_event is a heap slot holding a hipEvent_t (hipEvent_t*), and a
 * failing hipError_t becomes ENOMEM (hipErrorOutOfMemory), ENODEV (no
 * device) or EIO with
 * "[entry point][hipErrorName] description (what ferry was doing)" from
 * ferry's own name table. */
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "hip_runtime_decls.h"
#include "internal.h"

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

static int hip_fail_with(struct FerryError* error, int code_errno, ferry_hipError_t rc,
                         const char* op, const char* fmt, ...) FERRY_PRINTF(5, 6);
static int hip_fail_with(struct FerryError* error, int code_errno, ferry_hipError_t rc,
                         const char* op, const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  int code = ferry__set_driver_error_v(error, code_errno, kHipErrorNames,
                                      sizeof(kHipErrorNames) / sizeof(kHipErrorNames[0]),
                                      "hipError_t", rc, op, fmt, args);
  va_end(args);
  return code;
}

#define hip_fail(error, rc, op, ...) \
  hip_fail_with((error), hip_errno(rc), (rc), (op), __VA_ARGS__)

/* ---- loading the runtime --------------------------------------------------------------
 */

static void hip_forget(void) {
  /* Deliberately no dlclose (see the top of the file). */
  memset(&g_hip, 0, sizeof(g_hip));
}

static int hip_probe_failed(struct FerryError* error, ferry_hipError_t rc,
                            const char* op) {
  int code = hip_fail_with(
      error, ENODEV, rc, op, "rocm backend: HIP runtime %d.%d loaded from %s%s",
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
  const char* missing = NULL;
#define FERRY_HIP_RESOLVE(name, params)                   \
  if (missing == NULL) {                                  \
    *(void**)(&g_hip.name) = dlsym(g_hip.library, #name); \
    if (g_hip.name == NULL) missing = #name;              \
  }
  FERRY_HIP_RUNTIME_FUNCTIONS(FERRY_HIP_RESOLVE)
  FERRY_HIP_RESOLVE(hipPointerGetAttributes, ())
#undef FERRY_HIP_RESOLVE
  if (missing != NULL) {
    code = ferry__set_error(
        error, ENOTSUP,
        "rocm backend: the HIP runtime %s does not export %s (ferry needs "
        "HIP 5 or newer)",
        g_hip.path, missing);
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

/* ---- current device bracketing -------------------------------------------------------
 */

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

/* Restores the caller's device; a failure only matters when `code` is OK. */
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

/* ---- memory
 * -------------------------------------------------------------------------------- */

static ferry_hipError_t hip_free_any(const struct FerryDevice* device, void* ptr,
                                     const char** op) {
  if (device->device_type == ARROW_DEVICE_ROCM_HOST) {
    *op = "hipHostFree";
    return g_hip.hipHostFree(ptr);
  }
  *op = "hipFree";
  return g_hip.hipFree(ptr);
}

static int hip_allocate(struct FerryDevice* device, int64_t size, void** out,
                        struct FerryError* error) {
  size_t bytes = size == 0 ? 1 : (size_t)size; /* a distinct, freeable pointer */
  int saved = 0;
  FERRY_RETURN_NOT_OK(hip_enter(device, &saved, error));
  void* pointer = NULL;
  const char* op;
  ferry_hipError_t rc;
  if (device->device_type == ARROW_DEVICE_ROCM_HOST) {
    op = "hipHostMalloc";
    rc = g_hip.hipHostMalloc(&pointer, bytes, FERRY_HIP_HOST_MALLOC_DEFAULT);
  } else {
    op = "hipMalloc";
    rc = g_hip.hipMalloc(&pointer, bytes);
  }
  int code = FERRY_OK;
  if (rc != FERRY_HIP_SUCCESS) {
    code = hip_fail(error, rc, op, "allocating %" PRId64 " bytes on %s device %" PRId64,
                    size, type_name(device), device->device_id);
  }
  int left = hip_leave(device, saved, code, error);
  if (left != FERRY_OK && code == FERRY_OK) {
    hip_free_any(device, pointer, &op); /* only restoring failed: do not leak */
  }
  if (left == FERRY_OK) *out = pointer;
  return left;
}

static int hip_deallocate(struct FerryDevice* device, void* ptr,
                          struct FerryError* error) {
  int saved = 0;
  FERRY_RETURN_NOT_OK(hip_enter(device, &saved, error));
  const char* op;
  ferry_hipError_t rc = hip_free_any(device, ptr, &op);
  int code = FERRY_OK;
  if (rc != FERRY_HIP_SUCCESS) {
    code = hip_fail(error, rc, op, "freeing %p on %s device %" PRId64, ptr,
                    type_name(device), device->device_id);
  }
  return hip_leave(device, saved, code, error);
}

static int hip_memcpy(struct FerryDevice* device, void* dst,
                      struct FerryDevice* src_device, const void* src, int64_t size,
                      enum FerryCopyKind kind, void* stream, struct FerryError* error) {
  int saved = 0;
  FERRY_RETURN_NOT_OK(hip_enter(device, &saved, error));
  ferry_hipStream_t s = (ferry_hipStream_t)stream;
  const char* op = "hipMemcpyAsync";
  ferry_hipError_t rc;
  switch (kind) {
    case FERRY_COPY_HOST_TO_DEVICE:
      rc = g_hip.hipMemcpyAsync(dst, src, (size_t)size, FERRY_HIP_MEMCPY_HOST_TO_DEVICE,
                                s);
      break;
    case FERRY_COPY_DEVICE_TO_HOST:
      rc = g_hip.hipMemcpyAsync(dst, src, (size_t)size, FERRY_HIP_MEMCPY_DEVICE_TO_HOST,
                                s);
      break;
    default:
      if (src_device->device_id == device->device_id) {
        rc = g_hip.hipMemcpyAsync(dst, src, (size_t)size,
                                  FERRY_HIP_MEMCPY_DEVICE_TO_DEVICE, s);
      } else {
        op = "hipMemcpyPeerAsync";
        rc = g_hip.hipMemcpyPeerAsync(dst, (int)device->device_id, src,
                                      (int)src_device->device_id, (size_t)size, s);
      }
      break;
  }
  if (rc == FERRY_HIP_SUCCESS && stream == NULL) {
    op = "hipStreamSynchronize";
    rc = g_hip.hipStreamSynchronize(NULL);
  }
  int code = FERRY_OK;
  if (rc != FERRY_HIP_SUCCESS) {
    code = hip_fail(error, rc, op,
                    "copying %" PRId64 " bytes %s %s device %" PRId64 " (%p -> %p)", size,
                    kind == FERRY_COPY_DEVICE_TO_HOST ? "from" : "to", type_name(device),
                    device->device_id, src, dst);
  }
  return hip_leave(device, saved, code, error);
}

/* ---- streams and events
 * -------------------------------------------------------------------- */

static int hip_stream_create(struct FerryDevice* device, void** stream_out,
                             struct FerryError* error) {
  int saved = 0;
  FERRY_RETURN_NOT_OK(hip_enter(device, &saved, error));
  ferry_hipStream_t stream = NULL;
  ferry_hipError_t rc =
      g_hip.hipStreamCreateWithFlags(&stream, FERRY_HIP_STREAM_NON_BLOCKING);
  int code = FERRY_OK;
  if (rc != FERRY_HIP_SUCCESS) {
    code = hip_fail(error, rc, "hipStreamCreateWithFlags",
                    "creating a stream on %s device %" PRId64, type_name(device),
                    device->device_id);
  }
  int left = hip_leave(device, saved, code, error);
  if (left != FERRY_OK && code == FERRY_OK) g_hip.hipStreamDestroy(stream);
  if (left == FERRY_OK) *stream_out = stream;
  return left;
}

static int hip_stream_destroy(struct FerryDevice* device, void* stream,
                              struct FerryError* error) {
  int saved = 0;
  FERRY_RETURN_NOT_OK(hip_enter(device, &saved, error));
  ferry_hipError_t rc = g_hip.hipStreamDestroy((ferry_hipStream_t)stream);
  int code = FERRY_OK;
  if (rc != FERRY_HIP_SUCCESS) {
    code = hip_fail(error, rc, "hipStreamDestroy",
                    "destroying stream %p of %s device %" PRId64, stream,
                    type_name(device), device->device_id);
  }
  return hip_leave(device, saved, code, error);
}

static int hip_stream_synchronize(struct FerryDevice* device, void* stream,
                                  struct FerryError* error) {
  int saved = 0;
  FERRY_RETURN_NOT_OK(hip_enter(device, &saved, error));
  const char* op;
  ferry_hipError_t rc;
  if (stream == NULL) {
    op = "hipDeviceSynchronize"; /* ferry's NULL stream: all work of the device */
    rc = g_hip.hipDeviceSynchronize();
  } else {
    op = "hipStreamSynchronize";
    rc = g_hip.hipStreamSynchronize((ferry_hipStream_t)stream);
  }
  int code = FERRY_OK;
  if (rc != FERRY_HIP_SUCCESS) {
    code = hip_fail(error, rc, op, "synchronizing stream %p of %s device %" PRId64,
                    stream, type_name(device), device->device_id);
  }
  return hip_leave(device, saved, code, error);
}

static int hip_event_create(struct FerryDevice* device, void** sync_event_out,
                            struct FerryError* error) {
  ferry_hipEvent_t* slot = (ferry_hipEvent_t*)malloc(sizeof(ferry_hipEvent_t));
  if (slot == NULL)
    return ferry__set_error(error, ENOMEM, "out of memory creating a HIP event");
  *slot = NULL;
  int saved = 0;
  int code = hip_enter(device, &saved, error);
  if (code != FERRY_OK) {
    free(slot);
    return code;
  }
  ferry_hipError_t rc =
      g_hip.hipEventCreateWithFlags(slot, FERRY_HIP_EVENT_DISABLE_TIMING);
  if (rc != FERRY_HIP_SUCCESS) {
    code = hip_fail(error, rc, "hipEventCreateWithFlags",
                    "creating an event on %s device %" PRId64, type_name(device),
                    device->device_id);
  }
  code = hip_leave(device, saved, code, error);
  if (code != FERRY_OK) {
    if (rc == FERRY_HIP_SUCCESS) g_hip.hipEventDestroy(*slot);
    free(slot);
    return code;
  }
  *sync_event_out = slot;
  return FERRY_OK;
}

/* On failure the slot (and the handle in it) stays the caller's, who may
 * try again; only a destroyed handle's slot is freed. */
static int hip_event_destroy(struct FerryDevice* device, void* sync_event,
                             struct FerryError* error) {
  ferry_hipEvent_t* slot = (ferry_hipEvent_t*)sync_event;
  int saved = 0;
  int code = hip_enter(device, &saved, error);
  int destroyed = 0;
  if (code == FERRY_OK) {
    ferry_hipError_t rc = g_hip.hipEventDestroy(*slot);
    destroyed = rc == FERRY_HIP_SUCCESS;
    if (!destroyed) {
      code = hip_fail(error, rc, "hipEventDestroy",
                      "destroying event %p of %s device %" PRId64, sync_event,
                      type_name(device), device->device_id);
    }
    code = hip_leave(device, saved, code, error);
  }
  if (destroyed) free(slot);
  return code;
}

static int hip_event_record(struct FerryDevice* device, void* sync_event, void* stream,
                            struct FerryError* error) {
  int saved = 0;
  FERRY_RETURN_NOT_OK(hip_enter(device, &saved, error));
  ferry_hipError_t rc =
      g_hip.hipEventRecord(*(ferry_hipEvent_t*)sync_event, (ferry_hipStream_t)stream);
  int code = FERRY_OK;
  if (rc != FERRY_HIP_SUCCESS) {
    code = hip_fail(error, rc, "hipEventRecord",
                    "recording event %p on stream %p of %s device %" PRId64, sync_event,
                    stream, type_name(device), device->device_id);
  }
  return hip_leave(device, saved, code, error);
}

static int hip_event_synchronize(struct FerryDevice* device, void* sync_event,
                                 struct FerryError* error) {
  int saved = 0;
  FERRY_RETURN_NOT_OK(hip_enter(device, &saved, error));
  ferry_hipError_t rc = g_hip.hipEventSynchronize(*(ferry_hipEvent_t*)sync_event);
  int code = FERRY_OK;
  if (rc != FERRY_HIP_SUCCESS) {
    code = hip_fail(error, rc, "hipEventSynchronize",
                    "waiting for event %p of %s device %" PRId64, sync_event,
                    type_name(device), device->device_id);
  }
  return hip_leave(device, saved, code, error);
}

static int hip_stream_wait_event(struct FerryDevice* device, void* stream,
                                 void* sync_event, struct FerryError* error) {
  if (stream == NULL) return hip_event_synchronize(device, sync_event, error);
  int saved = 0;
  FERRY_RETURN_NOT_OK(hip_enter(device, &saved, error));
  ferry_hipError_t rc = g_hip.hipStreamWaitEvent((ferry_hipStream_t)stream,
                                                 *(ferry_hipEvent_t*)sync_event, 0);
  int code = FERRY_OK;
  if (rc != FERRY_HIP_SUCCESS) {
    code = hip_fail(error, rc, "hipStreamWaitEvent",
                    "making stream %p of %s device %" PRId64 " wait for event %p", stream,
                    type_name(device), device->device_id, sync_event);
  }
  return hip_leave(device, saved, code, error);
}

/* ---- residency
 * ------------------------------------------------------------------------------- */

/* What the runtime says about one pointer. */
struct FerryHipPointerInfo {
  struct ferry_hipPointerAttribute attributes;
  int have_range; /* pinned host memory is not always tracked as a range */
  uintptr_t base;
  size_t range;
};

/* Asks the runtime about `ptr`. EFAULT with a message when it does not know
 * it (plain host memory, freed memory, another runtime's). */
static int hip_query_pointer(const struct FerryDevice* device, const void* ptr,
                             struct FerryHipPointerInfo* info, struct FerryError* error) {
  int saved = 0;
  FERRY_RETURN_NOT_OK(hip_enter(device, &saved, error));
  memset(info, 0, sizeof(*info));
  int hip6 = g_hip.runtime_version >= 60000000;
  ferry_hipError_t rc = g_hip.hipPointerGetAttributes(&info->attributes, ptr);
  int code = FERRY_OK;
  int unknown = rc == FERRY_HIP_ERROR_INVALID_VALUE ||
                (rc == FERRY_HIP_SUCCESS && hip6 &&
                 info->attributes.memory_type == FERRY_HIP6_MEMORY_TYPE_UNREGISTERED);
  if (unknown) {
    code =
        ferry__set_error(error, EFAULT,
                        "pointer %p is not %s device %" PRId64
                        " memory (the HIP runtime does not know it: plain host memory or "
                        "freed)",
                        ptr, type_name(device), device->device_id);
  } else if (rc != FERRY_HIP_SUCCESS) {
    code = hip_fail(error, rc, "hipPointerGetAttributes",
                    "reading the attributes of pointer %p", ptr);
  }
  if (code == FERRY_OK) {
    void* base = NULL;
    rc = g_hip.hipMemGetAddressRange(&base, &info->range, (void*)(uintptr_t)ptr);
    if (rc == FERRY_HIP_SUCCESS) {
      info->have_range = 1;
      info->base = (uintptr_t)base;
    } else if (device->device_type == ARROW_DEVICE_ROCM) {
      code = hip_fail(error, rc, "hipMemGetAddressRange",
                      "reading the allocation of pointer %p", ptr);
    }
  }
  return hip_leave(device, saved, code, error);
}

/* FERRY_OK when the memory `info` describes may be declared as `device`,
 * and [ptr, ptr + size) stays inside its allocation; EFAULT otherwise. */
static int hip_judge_pointer(const struct FerryDevice* device, const void* ptr,
                             int64_t size, const struct FerryHipPointerInfo* info,
                             struct FerryError* error) {
  const struct ferry_hipPointerAttribute* attributes = &info->attributes;
  int hip6 = g_hip.runtime_version >= 60000000;
  unsigned int host_type =
      hip6 ? FERRY_HIP6_MEMORY_TYPE_HOST : FERRY_HIP5_MEMORY_TYPE_HOST;
  unsigned int device_type =
      hip6 ? FERRY_HIP6_MEMORY_TYPE_DEVICE : FERRY_HIP5_MEMORY_TYPE_DEVICE;
  int resident;
  char found[96];
  if (attributes->is_managed ||
      (hip6 && attributes->memory_type == FERRY_HIP6_MEMORY_TYPE_MANAGED)) {
    /* Arrow has no rocm_managed: managed memory is exported as rocm. */
    snprintf(found, sizeof(found), "managed memory of device %d", attributes->device);
    resident = device->device_type == ARROW_DEVICE_ROCM;
  } else if (attributes->memory_type == host_type) {
    snprintf(found, sizeof(found), "rocm_host (pinned host) memory");
    resident = device->device_type == ARROW_DEVICE_ROCM_HOST;
  } else if (attributes->memory_type == device_type) {
    snprintf(found, sizeof(found), "rocm device %d memory", attributes->device);
    resident = device->device_type == ARROW_DEVICE_ROCM &&
               attributes->device == (int)device->device_id;
  } else {
    snprintf(found, sizeof(found), "HIP memory of type %u", attributes->memory_type);
    resident = 0;
  }
  if (!resident) {
    return ferry__set_error(error, EFAULT,
                           "pointer %p is not %s device %" PRId64 " memory (it is %s)",
                           ptr, type_name(device), device->device_id, found);
  }
  /* The runtime found ptr in the range, so the offset is below its size. */
  if (info->have_range && (uint64_t)size > info->range - ((uintptr_t)ptr - info->base)) {
    return ferry__set_error(error, EFAULT,
                           "range [%p, +%" PRId64
                           ") runs past the end of its %zu-byte "
                           "allocation on %s device %" PRId64 " at %p",
                           ptr, size, info->range, type_name(device), device->device_id,
                           (void*)info->base);
  }
  return FERRY_OK;
}

static int hip_check_pointer(struct FerryDevice* device, const void* ptr, int64_t size,
                             struct FerryError* error) {
  struct FerryHipPointerInfo info;
  int code = hip_query_pointer(device, ptr, &info, error);
  if (code == FERRY_OK) code = hip_judge_pointer(device, ptr, size, &info, error);
  if (code == EFAULT && size == 0) {
    /* An empty buffer may point one past the end of its allocation: then
     * the byte before it is that allocation's last (when the runtime tracks
     * its range), and that allocation must be resident. */
    const char* last = (const char*)ptr - 1;
    if (hip_query_pointer(device, last, &info, NULL) == FERRY_OK &&
        (!info.have_range || info.base + info.range == (uintptr_t)ptr) &&
        hip_judge_pointer(device, last, 1, &info, NULL) == FERRY_OK) {
      return FERRY_OK;
    }
  }
  return code;
}

const struct FerryBackend ferry__backend_rocm = {
    .name = "rocm",
    .device_types = kRocmDeviceTypes,
    .n_device_types = 2,
    .probe = hip_probe,
    .device_count = hip_device_count,
    .device_init = NULL,
    .is_host_accessible = hip_is_host_accessible,
    .allocate = hip_allocate,
    .deallocate = hip_deallocate,
    .memcpy = hip_memcpy,
    .stream_create = hip_stream_create,
    .stream_destroy = hip_stream_destroy,
    .stream_synchronize = hip_stream_synchronize,
    .event_create = hip_event_create,
    .event_destroy = hip_event_destroy,
    .event_record = hip_event_record,
    .event_synchronize = hip_event_synchronize,
    .stream_wait_event = hip_stream_wait_event,
    .check_pointer = hip_check_pointer,
    .unusable_after_fork = 1,
};
