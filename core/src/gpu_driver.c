/* The GPU backends' operations (cuda, cuda_host, cuda_managed; rocm,
 * rocm_host), written once over a table of the driver's entry points
 * (gpu_driver.h); cuda.c and hip.c load their library and fill the table.
 *
 * Every call is bracketed by the table's enter/leave, which make the
 * device current on this thread only when it is not already, and restore
 * the caller's context or device afterwards: ferry neither needs nor
 * disturbs the caller's current device.
 *
 * Memory: a 0-byte allocation gets one byte (the drivers refuse or return
 * NULL for 0 bytes), so that ferry hands out a distinct, freeable pointer,
 * as malloc(0) may. When the work succeeded but the caller's context or
 * device could not be restored, what was made (memory, a stream, an event)
 * is given back instead of leaked, and the restore's failure is reported.
 *
 * Streams are non-blocking: ferry's NULL stream is "synchronous and
 * unordered" (device.c), so a NULL-stream copy must not wait for (or be
 * ordered after) work queued on ferry's streams. A NULL-stream copy is
 * issued on the driver's default stream and synchronized before returning;
 * synchronizing the NULL stream waits for the whole device.
 *
 * Events: sync_event is a heap slot holding the driver's event handle
 * (CUevent*, hipEvent_t*), as the Arrow specification says; events are
 * created with timing disabled because ferry only orders work with them.
 *
 * Errors: a failing driver call becomes ENOMEM, ENODEV or EIO (the table's
 * errno_of), with the message
 * "[entry point][ERROR_NAME] description (what ferry was doing)". */
#include "gpu_driver.h"

#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static const struct FerryGpuDriverApi* api_of(const struct FerryDevice* device) {
  return device->backend->driver_api;
}

static const char* type_name(const struct FerryDevice* device) {
  return ferry_device_type_name(device->device_type);
}

/* ---- errors and loading ------------------------------------------------------------ */

static int gpu_fail_v(const struct FerryGpuDriverApi* api, struct FerryError* error,
                      int code_errno, FerryGpuResult rc, const char* op, const char* fmt,
                      va_list args) {
  return ferry__set_driver_error_v(error, code_errno, api->error_names,
                                   api->n_error_names, api->result_type, rc, op, fmt,
                                   args);
}

int ferry__gpu_fail(const struct FerryGpuDriverApi* api, struct FerryError* error,
                    FerryGpuResult rc, const char* op, const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  int code = gpu_fail_v(api, error, api->errno_of(rc), rc, op, fmt, args);
  va_end(args);
  return code;
}

int ferry__gpu_fail_with(const struct FerryGpuDriverApi* api, struct FerryError* error,
                         int code_errno, FerryGpuResult rc, const char* op,
                         const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  int code = gpu_fail_v(api, error, code_errno, rc, op, fmt, args);
  va_end(args);
  return code;
}

int ferry__gpu_resolve(const struct FerryGpuDriverApi* api, void* library,
                       const char* path, const struct FerryGpuSymbol* symbols,
                       size_t n_symbols, struct FerryError* error) {
  for (size_t i = 0; i < n_symbols; i++) {
    *symbols[i].slot = dlsym(library, symbols[i].name);
    if (*symbols[i].slot == NULL) {
      return ferry__set_error(
          error, ENOTSUP, "%s backend: %s %s does not export %s (ferry needs %s)",
          api->backend, api->library_noun, path, symbols[i].name, api->minimum);
    }
  }
  return FERRY_OK;
}

/* The tail of every bracketed call: reports a failing `rc` of `op` as
 * "[op][NAME] description (context)", then restores the caller's context or
 * device. Returns the first failure's code. */
static int finish(const struct FerryGpuDriverApi* api, const struct FerryDevice* device,
                  int saved, FerryGpuResult rc, const char* op, struct FerryError* error,
                  const char* fmt, ...) FERRY_PRINTF(7, 8);
static int finish(const struct FerryGpuDriverApi* api, const struct FerryDevice* device,
                  int saved, FerryGpuResult rc, const char* op, struct FerryError* error,
                  const char* fmt, ...) {
  int code = FERRY_OK;
  if (rc != FERRY_GPU_SUCCESS) {
    va_list args;
    va_start(args, fmt);
    code = gpu_fail_v(api, error, api->errno_of(rc), rc, op, fmt, args);
    va_end(args);
  }
  return api->leave(device, saved, code, error);
}

/* Gives back the memory or the stream a call made when only restoring the
 * caller's context or device failed afterwards, rather than leak it: with
 * the device current again (entering is a no-op when the failed restore
 * left it current). Reports nothing: the restore's failure is the error. */
static void give_back(const struct FerryGpuDriverApi* api,
                      const struct FerryDevice* device, void* memory, void* stream) {
  int saved = 0;
  if (api->enter(device, &saved, NULL) != FERRY_OK) return;
  const char* op = NULL;
  if (memory != NULL) api->deallocate(device, memory, &op);
  if (stream != NULL) api->stream_destroy(stream);
  api->leave(device, saved, FERRY_OK, NULL);
}

/* ---- memory ----------------------------------------------------------------------- */

int ferry__gpu_allocate(struct FerryDevice* device, int64_t size, void** out,
                        struct FerryError* error) {
  const struct FerryGpuDriverApi* api = api_of(device);
  size_t bytes = size == 0 ? 1 : (size_t)size;
  int saved = 0;
  FERRY_RETURN_NOT_OK(api->enter(device, &saved, error));
  void* pointer = NULL;
  const char* op = NULL;
  FerryGpuResult rc = api->allocate(device, bytes, &pointer, &op);
  int code = finish(api, device, saved, rc, op, error,
                    "allocating %" PRId64 " bytes on %s device %" PRId64, size,
                    type_name(device), device->device_id);
  if (code == FERRY_OK) {
    *out = pointer;
  } else if (rc == FERRY_GPU_SUCCESS) {
    give_back(api, device, pointer, NULL);
  }
  return code;
}

int ferry__gpu_deallocate(struct FerryDevice* device, void* ptr,
                          struct FerryError* error) {
  const struct FerryGpuDriverApi* api = api_of(device);
  int saved = 0;
  FERRY_RETURN_NOT_OK(api->enter(device, &saved, error));
  const char* op = NULL;
  FerryGpuResult rc = api->deallocate(device, ptr, &op);
  return finish(api, device, saved, rc, op, error, "freeing %p on %s device %" PRId64,
                ptr, type_name(device), device->device_id);
}

int ferry__gpu_memcpy(struct FerryDevice* device, void* dst,
                      struct FerryDevice* src_device, const void* src, int64_t size,
                      enum FerryCopyKind kind, void* stream, struct FerryError* error) {
  const struct FerryGpuDriverApi* api = api_of(device);
  int saved = 0;
  FERRY_RETURN_NOT_OK(api->enter(device, &saved, error));
  const char* op = NULL;
  FerryGpuResult rc =
      api->copy(device, dst, src_device, src, (size_t)size, kind, stream, &op);
  if (rc == FERRY_GPU_SUCCESS && stream == NULL) {
    op = api->stream_synchronize_name;
    rc = api->stream_synchronize(NULL);
  }
  return finish(api, device, saved, rc, op, error,
                "copying %" PRId64 " bytes %s %s device %" PRId64 " (%p -> %p)", size,
                kind == FERRY_COPY_DEVICE_TO_HOST ? "from" : "to", type_name(device),
                device->device_id, src, dst);
}

/* ---- streams ---------------------------------------------------------------------- */

int ferry__gpu_stream_create(struct FerryDevice* device, void** stream_out,
                             struct FerryError* error) {
  const struct FerryGpuDriverApi* api = api_of(device);
  int saved = 0;
  FERRY_RETURN_NOT_OK(api->enter(device, &saved, error));
  void* stream = NULL;
  FerryGpuResult rc = api->stream_create(&stream);
  int code = finish(api, device, saved, rc, api->stream_create_name, error,
                    "creating a stream on %s device %" PRId64, type_name(device),
                    device->device_id);
  if (code == FERRY_OK) {
    *stream_out = stream;
  } else if (rc == FERRY_GPU_SUCCESS) {
    give_back(api, device, NULL, stream);
  }
  return code;
}

int ferry__gpu_stream_destroy(struct FerryDevice* device, void* stream,
                              struct FerryError* error) {
  const struct FerryGpuDriverApi* api = api_of(device);
  int saved = 0;
  FERRY_RETURN_NOT_OK(api->enter(device, &saved, error));
  FerryGpuResult rc = api->stream_destroy(stream);
  return finish(api, device, saved, rc, api->stream_destroy_name, error,
                "destroying stream %p of %s device %" PRId64, stream, type_name(device),
                device->device_id);
}

int ferry__gpu_stream_synchronize(struct FerryDevice* device, void* stream,
                                  struct FerryError* error) {
  const struct FerryGpuDriverApi* api = api_of(device);
  int saved = 0;
  FERRY_RETURN_NOT_OK(api->enter(device, &saved, error));
  /* ferry's NULL stream means "all work of the device". */
  FerryGpuResult rc =
      stream == NULL ? api->device_synchronize() : api->stream_synchronize(stream);
  return finish(
      api, device, saved, rc,
      stream == NULL ? api->device_synchronize_name : api->stream_synchronize_name, error,
      "synchronizing stream %p of %s device %" PRId64, stream, type_name(device),
      device->device_id);
}

/* ---- events ----------------------------------------------------------------------- */

int ferry__gpu_event_create(struct FerryDevice* device, void** sync_event_out,
                            struct FerryError* error) {
  const struct FerryGpuDriverApi* api = api_of(device);
  void** slot = (void**)malloc(sizeof(void*));
  if (slot == NULL) {
    return ferry__set_error(error, ENOMEM, "out of memory creating a %s event",
                            api->memory_noun);
  }
  *slot = NULL;
  int saved = 0;
  int code = api->enter(device, &saved, error);
  if (code != FERRY_OK) {
    free(slot);
    return code;
  }
  FerryGpuResult rc = api->event_create(slot);
  code = finish(api, device, saved, rc, api->event_create_name, error,
                "creating an event on %s device %" PRId64, type_name(device),
                device->device_id);
  if (code != FERRY_OK) {
    /* Only the restore failed: the device is still current, give it back. */
    if (rc == FERRY_GPU_SUCCESS) api->event_destroy(*slot);
    free(slot);
    return code;
  }
  *sync_event_out = slot;
  return FERRY_OK;
}

/* On failure the slot (and the handle in it) stays the caller's, who may
 * try again; only a destroyed handle's slot is freed. */
int ferry__gpu_event_destroy(struct FerryDevice* device, void* sync_event,
                             struct FerryError* error) {
  const struct FerryGpuDriverApi* api = api_of(device);
  void** slot = (void**)sync_event;
  int saved = 0;
  int code = api->enter(device, &saved, error);
  int destroyed = 0;
  if (code == FERRY_OK) {
    FerryGpuResult rc = api->event_destroy(*slot);
    destroyed = rc == FERRY_GPU_SUCCESS;
    code = finish(api, device, saved, rc, api->event_destroy_name, error,
                  "destroying event %p of %s device %" PRId64, sync_event,
                  type_name(device), device->device_id);
  }
  if (destroyed) free(slot);
  return code;
}

int ferry__gpu_event_record(struct FerryDevice* device, void* sync_event, void* stream,
                            struct FerryError* error) {
  const struct FerryGpuDriverApi* api = api_of(device);
  int saved = 0;
  FERRY_RETURN_NOT_OK(api->enter(device, &saved, error));
  FerryGpuResult rc = api->event_record(*(void**)sync_event, stream);
  return finish(api, device, saved, rc, api->event_record_name, error,
                "recording event %p on stream %p of %s device %" PRId64, sync_event,
                stream, type_name(device), device->device_id);
}

int ferry__gpu_event_synchronize(struct FerryDevice* device, void* sync_event,
                                 struct FerryError* error) {
  const struct FerryGpuDriverApi* api = api_of(device);
  int saved = 0;
  FERRY_RETURN_NOT_OK(api->enter(device, &saved, error));
  FerryGpuResult rc = api->event_synchronize(*(void**)sync_event);
  return finish(api, device, saved, rc, api->event_synchronize_name, error,
                "waiting for event %p of %s device %" PRId64, sync_event,
                type_name(device), device->device_id);
}

int ferry__gpu_stream_wait_event(struct FerryDevice* device, void* stream,
                                 void* sync_event, struct FerryError* error) {
  if (stream == NULL) return ferry__gpu_event_synchronize(device, sync_event, error);
  const struct FerryGpuDriverApi* api = api_of(device);
  int saved = 0;
  FERRY_RETURN_NOT_OK(api->enter(device, &saved, error));
  FerryGpuResult rc = api->stream_wait_event(stream, *(void**)sync_event);
  return finish(api, device, saved, rc, api->stream_wait_event_name, error,
                "making stream %p of %s device %" PRId64 " wait for event %p", stream,
                type_name(device), device->device_id, sync_event);
}

/* ---- residency -------------------------------------------------------------------- */

/* Asks the driver about `ptr`. EFAULT with a message when it does not know
 * it (plain host memory, freed memory, another runtime's). */
static int query_pointer(const struct FerryGpuDriverApi* api,
                         const struct FerryDevice* device, const void* ptr,
                         struct FerryGpuPointer* info, struct FerryError* error) {
  int saved = 0;
  FERRY_RETURN_NOT_OK(api->enter(device, &saved, error));
  *info = (struct FerryGpuPointer){0};
  info->ordinal = -1;
  const char* op = NULL;
  const char* what = NULL;
  FerryGpuResult rc = api->query_pointer(device, ptr, info, &op, &what);
  int code = FERRY_OK;
  if (rc != FERRY_GPU_SUCCESS) {
    code = ferry__gpu_fail(api, error, rc, op, "reading the %s of pointer %p", what, ptr);
  } else if (!info->known) {
    code = ferry__set_error(error, EFAULT,
                            "pointer %p is not %s device %" PRId64
                            " memory (%s does not know it: plain host memory or freed)",
                            ptr, type_name(device), device->device_id, api->driver_noun);
  }
  return api->leave(device, saved, code, error);
}

static void describe_pointer(const struct FerryGpuDriverApi* api,
                             const struct FerryGpuPointer* info, char* out, size_t size) {
  switch (info->memory) {
    case FERRY_GPU_MEMORY_MANAGED:
      snprintf(out, size, "%s%d%s", api->managed_before, info->ordinal,
               api->managed_after);
      break;
    case FERRY_GPU_MEMORY_HOST:
      snprintf(out, size, "%s (pinned host) memory",
               ferry_device_type_name(api->host_memory));
      break;
    case FERRY_GPU_MEMORY_DEVICE:
      snprintf(out, size, "%s device %d memory", api->backend, info->ordinal);
      break;
    default:
      snprintf(out, size, "%s memory of type %u", api->memory_noun, info->driver_type);
      break;
  }
}

/* FERRY_OK when the memory `info` describes may be declared as `device`,
 * and [ptr, ptr + size) stays inside its allocation; EFAULT otherwise. */
static int judge_pointer(const struct FerryGpuDriverApi* api,
                         const struct FerryDevice* device, const void* ptr, int64_t size,
                         const struct FerryGpuPointer* info, struct FerryError* error) {
  int resident;
  switch (info->memory) {
    case FERRY_GPU_MEMORY_MANAGED:
      /* Managed memory is reachable from every device: it may be declared
       * as device memory of any ordinal (what RMM and cuDF export as
       * ARROW_DEVICE_CUDA) or as managed memory. */
      resident = device->device_type == api->device_memory ||
                 device->device_type == api->managed_memory;
      break;
    case FERRY_GPU_MEMORY_HOST: resident = device->device_type == api->host_memory; break;
    case FERRY_GPU_MEMORY_DEVICE:
      resident = device->device_type == api->device_memory &&
                 info->ordinal == (int)device->device_id;
      break;
    default: resident = 0; break;
  }
  if (!resident) {
    char found[128];
    describe_pointer(api, info, found, sizeof(found));
    return ferry__set_error(error, EFAULT,
                            "pointer %p is not %s device %" PRId64 " memory (it is %s)",
                            ptr, type_name(device), device->device_id, found);
  }
  /* The driver found ptr in the range, so the offset is below its size. */
  if (info->have_range &&
      (uint64_t)size > (uint64_t)info->size - ((uintptr_t)ptr - info->base)) {
    return ferry__set_error(error, EFAULT,
                            "range [%p, +%" PRId64
                            ") runs past the end of its %zu-byte "
                            "allocation on %s device %" PRId64 " at %p",
                            ptr, size, info->size, type_name(device), device->device_id,
                            (void*)info->base);
  }
  return FERRY_OK;
}

int ferry__gpu_check_pointer(struct FerryDevice* device, const void* ptr, int64_t size,
                             struct FerryError* error) {
  const struct FerryGpuDriverApi* api = api_of(device);
  struct FerryGpuPointer info;
  int code = query_pointer(api, device, ptr, &info, error);
  if (code == FERRY_OK) code = judge_pointer(api, device, ptr, size, &info, error);
  if (code == EFAULT && size == 0) {
    /* An empty buffer may point one past the end of its allocation (a slice
     * at the end, a producer's end pointer): then the byte before it is the
     * allocation's last (when the driver tracks its range), and that
     * allocation must be resident. */
    const char* last = (const char*)ptr - 1;
    if (query_pointer(api, device, last, &info, NULL) == FERRY_OK &&
        (!info.have_range || info.base + info.size == (uintptr_t)ptr) &&
        judge_pointer(api, device, last, 1, &info, NULL) == FERRY_OK) {
      return FERRY_OK;
    }
  }
  return code;
}
