/* The interface every device backend implements (private to the core).
 *
 * A backend serves one family of device types (cpu; sim; cuda, cuda_host and
 * cuda_managed; rocm and rocm_host). The registry in device.c owns one
 * struct FerryDevice per (device_type, device_id) for the life of the
 * process and dispatches the public ferry_device_* functions here. Backends
 * that talk to a driver load it with dlopen inside `probe`, so libferry.so
 * has no link-time dependency on any GPU library. */
#ifndef FERRY_SRC_BACKEND_H
#define FERRY_SRC_BACKEND_H

#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "ferry/ferry.h"

struct FerryBackend;
struct FerryPooledEvent;
struct FerryGpuDriverApi;

struct FerryDevice {
  ArrowDeviceType device_type;
  int64_t device_id;
  const struct FerryBackend* backend;
  /* The backend's index in the registry (ferry_backend_name's numbering). */
  int64_t backend_index;
  /* Backend-owned per-device state (a CUDA primary context, ...). */
  void* backend_data;
  /* ferry_device_allocate minus ferry_device_deallocate; updated atomically. */
  int64_t live_allocations;
  /* Events of released exports, kept for the next export with
   * FERRY_SYNC_RECORD_EVENT (device_array.c), so that a steady stream of
   * exports creates and destroys no event. Guarded by event_pool_lock. */
  pthread_mutex_t event_pool_lock;
  struct FerryPooledEvent* event_pool;
  int64_t event_pool_size;
};

/* Direction of a copy, seen from the device that performs it. */
enum FerryCopyKind {
  FERRY_COPY_HOST_TO_DEVICE = 0,
  FERRY_COPY_DEVICE_TO_HOST = 1,
  FERRY_COPY_DEVICE_TO_DEVICE = 2 /* same device, or peer within one backend */
};

struct FerryBackend {
  /* "cpu", "sim", "cuda", "rocm". */
  const char* name;
  const ArrowDeviceType* device_types;
  int32_t n_device_types;

  /* Loads the driver and finds out whether the backend is usable. Called
   * once, under the registry lock; the registry caches code and message. */
  int (*probe)(struct FerryError* error);
  /* Number of device ids for `device_type` (called only after a good probe). */
  int (*device_count)(ArrowDeviceType device_type, int64_t* count,
                      struct FerryError* error);
  /* Optional: set up backend_data when the registry first creates `device`. */
  int (*device_init)(struct FerryDevice* device, struct FerryError* error);
  /* 1 when the host may dereference memory of `device_type` directly. */
  int (*is_host_accessible)(ArrowDeviceType device_type);

  int (*allocate)(struct FerryDevice* device, int64_t size, void** out,
                  struct FerryError* error);
  int (*deallocate)(struct FerryDevice* device, void* ptr, struct FerryError* error);
  /* `device` is the non-CPU side (for DEVICE_TO_DEVICE, the destination;
   * `src_device` is then the source, possibly another device of the same
   * backend). `stream` NULL: complete on return. */
  int (*memcpy)(struct FerryDevice* device, void* dst, struct FerryDevice* src_device,
                const void* src, int64_t size, enum FerryCopyKind kind, void* stream,
                struct FerryError* error);

  int (*stream_create)(struct FerryDevice* device, void** stream_out,
                       struct FerryError* error);
  int (*stream_destroy)(struct FerryDevice* device, void* stream,
                        struct FerryError* error);
  int (*stream_synchronize)(struct FerryDevice* device, void* stream,
                            struct FerryError* error);

  /* Events: `sync_event` always points at the native handle (CUevent*,
   * hipEvent_t*, the sim's own handle), as ArrowDeviceArray.sync_event does. */
  int (*event_create)(struct FerryDevice* device, void** sync_event_out,
                      struct FerryError* error);
  int (*event_destroy)(struct FerryDevice* device, void* sync_event,
                       struct FerryError* error);
  int (*event_record)(struct FerryDevice* device, void* sync_event, void* stream,
                      struct FerryError* error);
  int (*event_synchronize)(struct FerryDevice* device, void* sync_event,
                           struct FerryError* error);
  int (*stream_wait_event)(struct FerryDevice* device, void* stream, void* sync_event,
                           struct FerryError* error);
  /* Optional (NULL: nothing to do): an exported event goes back to ferry's
   * pool because its array was released. The backend may give the event a
   * new handle in `*sync_event`, so that the released array's handle is
   * refused from now on (the sim does: a consumer that waits after its
   * release is told so, as it was when the event was destroyed there). On
   * failure `*sync_event` is unchanged and still valid. */
  int (*event_recycle)(struct FerryDevice* device, void** sync_event,
                       struct FerryError* error);

  /* Residency: FERRY_OK when [ptr, ptr + size) lives on `device`; EFAULT with
   * a message when it does not; ENOTSUP when the backend cannot tell. A
   * zero-length range may point one past the end of its allocation. */
  int (*check_pointer)(struct FerryDevice* device, const void* ptr, int64_t size,
                       struct FerryError* error);

  /* 1 for drivers that cannot be used in the child of a fork() once the
   * parent initialized them (CUDA, HIP): the registry then refuses every
   * call there with a message saying so (device.c). */
  int unusable_after_fork;

  /* GPU backends only (NULL otherwise): the driver's entry points, which
   * the shared operations of gpu_driver.c call (gpu_driver.h). */
  const struct FerryGpuDriverApi* driver_api;
};

/* The designated initializers every backend table starts with: its name, its
 * device types (counted from the array itself, so the count cannot drift), and
 * the `prefix`_probe, _device_count and _is_host_accessible functions of its
 * file; `init` is the optional device_init (NULL for none). */
// clang-format off
#define FERRY_BACKEND_IDENTITY(backend_name, types, prefix, init)                  \
  .name = (backend_name), .device_types = (types),                                 \
  .n_device_types = (int32_t)(sizeof(types) / sizeof((types)[0])),                 \
  .probe = prefix##_probe, .device_count = prefix##_device_count,                  \
  .device_init = (init), .is_host_accessible = prefix##_is_host_accessible
// clang-format on

/* One result code of a GPU driver (CUresult, hipError_t): the driver's own
 * name for it and ferry's description. */
struct FerryDriverErrorName {
  unsigned int code;
  const char* name;
  const char* description;
};

/* The one message shape of every driver failure, "[op][NAME] description
 * (context)", with the name looked up in `table` (or "[op][<result_type> N]"
 * when ferry has no name for `rc`); `fmt` and `args` give the context.
 * Returns `code_errno`. Defined in error.c. */
int ferry__set_driver_error_v(struct FerryError* error, int code_errno,
                             const struct FerryDriverErrorName* table, size_t table_size,
                             const char* result_type, unsigned int rc, const char* op,
                             const char* fmt, va_list args);

/* The backends compiled into libferry, in the order ferry_backend_* lists
 * them. Defined in cpu.c, sim.c, cuda.c and hip.c (the last two over
 * gpu_driver.c). */
extern const struct FerryBackend ferry__backend_cpu;
extern const struct FerryBackend ferry__backend_sim;
extern const struct FerryBackend ferry__backend_cuda;
extern const struct FerryBackend ferry__backend_rocm;

/* The device struct for (type, id), or NULL with the reason in `error`. */
int ferry__registry_resolve(ArrowDeviceType device_type, int64_t device_id,
                           struct FerryDevice** out, struct FerryError* error);

/* FERRY_OK, or ENODEV with "forked" in the message when `device`'s backend
 * was initialized before this process was forked from its parent (see
 * unusable_after_fork). Borrows `device`. Defined in device.c. */
int ferry__device_usable(const struct FerryDevice* device, struct FerryError* error);

/* Events waiting in `device`'s export pool (for tests). Defined in
 * device_array.c. */
int64_t ferry__device_pooled_events(struct FerryDevice* device);

/* Residency check for the validator: FERRY_OK when [ptr, ptr + size) lives on
 * `device`, EFAULT (message names the pointer and the device) when it does
 * not, ENOTSUP when the backend cannot tell, EINVAL for bad arguments.
 * Borrows everything. Defined in device.c. */
int ferry__device_check_pointer(struct FerryDevice* device, const void* ptr, int64_t size,
                               struct FerryError* error);

/* Live counts of the simulated device's streams and events (all sim device
 * ids together), for leak tests. Defined in sim.c. */
int64_t ferry__sim_live_streams(void);
int64_t ferry__sim_live_events(void);

#endif  // FERRY_SRC_BACKEND_H
