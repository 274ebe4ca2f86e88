/* The CPU backend: host memory, synchronous copies, no events.
 *
 * Everything on the CPU is synchronous, so streams are no-op handles (one
 * shared token, so creating and destroying them cannot fail or leak) and the
 * CPU never needs an event: the specification says sync_event must be NULL
 * for ARROW_DEVICE_CPU, and every event function says so. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "internal.h"

/* Cache-line alignment, which Arrow recommends for buffers (64 bytes). */
#define FERRY_CPU_ALIGNMENT 64

static const ArrowDeviceType kCpuDeviceTypes[] = {ARROW_DEVICE_CPU};

/* The handle every CPU stream shares; its contents are never read. */
static char g_cpu_stream_token;

static int cpu_probe(struct FerryError* error) { return FERRY_OK; }

static int cpu_device_count(ArrowDeviceType device_type, int64_t* count,
                            struct FerryError* error) {
  *count = 1;
  return FERRY_OK;
}

static int cpu_is_host_accessible(ArrowDeviceType device_type) { return 1; }

static int cpu_allocate(struct FerryDevice* device, int64_t size, void** out,
                        struct FerryError* error) {
  int64_t rounded = ferry__aligned_alloc_size(size, FERRY_CPU_ALIGNMENT);
  if (rounded == 0) {
    return ferry__set_error(
        error, ENOMEM, "cannot allocate %" PRId64 " bytes on the CPU (too large)", size);
  }
  void* ptr = aligned_alloc(FERRY_CPU_ALIGNMENT, (size_t)rounded);
  if (ptr == NULL) {
    return ferry__set_error(error, ENOMEM,
                           "out of memory allocating %" PRId64 " bytes on the CPU", size);
  }
  *out = ptr;
  return FERRY_OK;
}

static int cpu_deallocate(struct FerryDevice* device, void* ptr,
                          struct FerryError* error) {
  free(ptr);
  return FERRY_OK;
}

static int cpu_memcpy(struct FerryDevice* device, void* dst,
                      struct FerryDevice* src_device, const void* src, int64_t size,
                      enum FerryCopyKind kind, void* stream, struct FerryError* error) {
  memmove(dst, src, (size_t)size);
  return FERRY_OK;
}

static int cpu_stream_create(struct FerryDevice* device, void** stream_out,
                             struct FerryError* error) {
  *stream_out = &g_cpu_stream_token;
  return FERRY_OK;
}

static int cpu_stream_destroy(struct FerryDevice* device, void* stream,
                              struct FerryError* error) {
  return FERRY_OK;
}

static int cpu_stream_synchronize(struct FerryDevice* device, void* stream,
                                  struct FerryError* error) {
  return FERRY_OK;
}

static int cpu_no_events(struct FerryError* error) {
  return ferry__set_error(error, EINVAL, "the CPU has no events; export sync_event NULL");
}

static int cpu_event_create(struct FerryDevice* device, void** sync_event_out,
                            struct FerryError* error) {
  return cpu_no_events(error);
}

static int cpu_event_destroy(struct FerryDevice* device, void* sync_event,
                             struct FerryError* error) {
  return cpu_no_events(error);
}

static int cpu_event_record(struct FerryDevice* device, void* sync_event, void* stream,
                            struct FerryError* error) {
  return cpu_no_events(error);
}

static int cpu_event_synchronize(struct FerryDevice* device, void* sync_event,
                                 struct FerryError* error) {
  return cpu_no_events(error);
}

static int cpu_stream_wait_event(struct FerryDevice* device, void* stream,
                                 void* sync_event, struct FerryError* error) {
  return cpu_no_events(error);
}

static int cpu_check_pointer(struct FerryDevice* device, const void* ptr, int64_t size,
                             struct FerryError* error) {
  /* Any address may be host memory: malloc, mmap, a runtime's own heap. */
  return ferry__set_error(error, ENOTSUP,
                         "the cpu backend cannot tell whether %p is host memory", ptr);
}

const struct FerryBackend ferry__backend_cpu = {
    FERRY_BACKEND_IDENTITY("cpu", kCpuDeviceTypes, cpu, NULL),
    .allocate = cpu_allocate,
    .deallocate = cpu_deallocate,
    .memcpy = cpu_memcpy,
    .stream_create = cpu_stream_create,
    .stream_destroy = cpu_stream_destroy,
    .stream_synchronize = cpu_stream_synchronize,
    .event_create = cpu_event_create,
    .event_destroy = cpu_event_destroy,
    .event_record = cpu_event_record,
    .event_synchronize = cpu_event_synchronize,
    .stream_wait_event = cpu_stream_wait_event,
    .check_pointer = cpu_check_pointer,
};
