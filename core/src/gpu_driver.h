/* One backend for the GPU driver families (private to the core).
 *
 * The CUDA driver API and the HIP runtime have the same shape: allocate and
 * free per memory kind, asynchronous copies on streams, events recorded on
 * streams and waited on, pointer queries, one current device or context per
 * thread. gpu_driver.c implements every backend operation once, over a
 * table of the driver's entry points as ferry calls them
 * (struct FerryGpuDriverApi); cuda.c and hip.c only load their library and
 * fill the table: cu* entry points with a context push/pop as enter/leave,
 * hip* entry points with hipSetDevice as enter/leave.
 *
 * Every entry point of the table returns the driver's own result code
 * (CUresult, hipError_t: both enums whose success value is 0) and names the
 * driver function it called in `*op` where that depends on the arguments,
 * so that messages read "[cuMemAllocHost_v2][CUDA_ERROR_...] ..." exactly
 * as the driver spells it. */
#ifndef FERRY_SRC_GPU_DRIVER_H
#define FERRY_SRC_GPU_DRIVER_H

#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "internal.h"

/* A CUresult or hipError_t. */
typedef unsigned int FerryGpuResult;
#define FERRY_GPU_SUCCESS 0u

/* What kind of memory the driver says a pointer is. */
enum FerryGpuMemory {
  FERRY_GPU_MEMORY_OTHER = 0, /* a type ferry does not make (arrays, ...) */
  FERRY_GPU_MEMORY_DEVICE = 1,
  FERRY_GPU_MEMORY_HOST = 2, /* pinned host memory */
  FERRY_GPU_MEMORY_MANAGED = 3
};

/* What the driver says about one pointer. */
struct FerryGpuPointer {
  int known; /* 0: the driver does not know it (plain host memory, freed) */
  enum FerryGpuMemory memory;
  unsigned int driver_type; /* the driver's memory type, for FERRY_GPU_MEMORY_OTHER */
  int ordinal;              /* the device the memory belongs to */
  int have_range;           /* HIP does not track every pinned allocation's range */
  uintptr_t base;
  size_t size;
};

/* The entry points of one driver family, as ferry calls them, and the words
 * its messages use. Filled once by cuda.c or hip.c; read-only afterwards.
 * `device` is always a device of this backend; streams and events are the
 * driver's handles (CUstream, hipEvent_t, ...) as void*. */
struct FerryGpuDriverApi {
  const char* backend;        /* "cuda", "rocm" */
  const char* driver_noun;    /* "the CUDA driver", "the HIP runtime" */
  const char* library_noun;   /* "the CUDA driver library", "the HIP runtime" */
  const char* minimum;        /* "a driver for CUDA 11 or newer", ... */
  const char* memory_noun;    /* "CUDA", "HIP": "CUDA memory of type 3" */
  const char* managed_before; /* the managed-memory description around its */
  const char* managed_after;  /* ordinal: "cuda_managed memory (of device 0)" */
  const char* result_type;    /* "CUresult", "hipError_t" */
  const struct FerryDriverErrorName* error_names;
  size_t n_error_names;
  /* ENOMEM, ENODEV or EIO for a failing result (ferry.h's promise). */
  int (*errno_of)(FerryGpuResult rc);
  ArrowDeviceType device_memory;  /* cuda, rocm */
  ArrowDeviceType host_memory;    /* cuda_host, rocm_host */
  ArrowDeviceType managed_memory; /* cuda_managed; rocm (Arrow has no rocm_managed) */

  /* Makes `device` current on this thread (a context push, hipSetDevice),
   * unless it already is; `*saved` is what `leave` needs to restore the
   * caller's. Both return ferry codes with the message set. `leave` gets
   * the code of the bracketed work: a failing restore only matters when
   * that work succeeded. `error` may be NULL. */
  int (*enter)(const struct FerryDevice* device, int* saved, struct FerryError* error);
  int (*leave)(const struct FerryDevice* device, int saved, int code,
               struct FerryError* error);

  /* Memory of `device`'s type (`bytes` > 0). */
  FerryGpuResult (*allocate)(const struct FerryDevice* device, size_t bytes, void** out,
                             const char** op);
  FerryGpuResult (*deallocate)(const struct FerryDevice* device, void* ptr,
                               const char** op);
  /* Queues a copy on `stream` (NULL: the driver's default stream); for
   * FERRY_COPY_DEVICE_TO_DEVICE between two devices, a peer copy. */
  FerryGpuResult (*copy)(const struct FerryDevice* device, void* dst,
                         const struct FerryDevice* src_device, const void* src,
                         size_t size, enum FerryCopyKind kind, void* stream,
                         const char** op);
  /* Each with the name of the driver function it calls. */
  FerryGpuResult (*stream_synchronize)(void* stream); /* NULL: the default stream */
  const char* stream_synchronize_name;
  FerryGpuResult (*device_synchronize)(void); /* the current device's work */
  const char* device_synchronize_name;
  FerryGpuResult (*stream_create)(void** stream); /* non-blocking */
  const char* stream_create_name;
  FerryGpuResult (*stream_destroy)(void* stream);
  const char* stream_destroy_name;
  FerryGpuResult (*event_create)(void** event); /* timing disabled */
  const char* event_create_name;
  FerryGpuResult (*event_destroy)(void* event);
  const char* event_destroy_name;
  FerryGpuResult (*event_record)(void* event, void* stream);
  const char* event_record_name;
  FerryGpuResult (*event_synchronize)(void* event);
  const char* event_synchronize_name;
  FerryGpuResult (*stream_wait_event)(void* stream, void* event);
  const char* stream_wait_event_name;
  /* Fills `info` (known = 0 when the driver does not know `ptr`); on a
   * failing result, `*op` and `*what` ("memory type", "allocation") name
   * what could not be read. Called with `device` current. */
  FerryGpuResult (*query_pointer)(const struct FerryDevice* device, const void* ptr,
                                  struct FerryGpuPointer* info, const char** op,
                                  const char** what);
};

/* "[op][NAME] description (context)" from the api's name table, with the
 * errno that `rc` maps to (ferry__gpu_fail) or `code_errno`
 * (ferry__gpu_fail_with, for probe failures, which are all ENODEV). Both
 * return that errno; `error` may be NULL. */
int ferry__gpu_fail(const struct FerryGpuDriverApi* api, struct FerryError* error,
                    FerryGpuResult rc, const char* op, const char* fmt, ...)
    FERRY_PRINTF(5, 6);
int ferry__gpu_fail_with(const struct FerryGpuDriverApi* api, struct FerryError* error,
                         int code_errno, FerryGpuResult rc, const char* op,
                         const char* fmt, ...) FERRY_PRINTF(6, 7);

/* One driver symbol to resolve: its exported name and where its address goes. */
struct FerryGpuSymbol {
  const char* name;
  void** slot;
};

/* Resolves every symbol from `library`; on a missing one, ENOTSUP with
 * "<backend> backend: <library noun> <path> does not export <name> (ferry
 * needs <minimum>)". Borrows everything. */
int ferry__gpu_resolve(const struct FerryGpuDriverApi* api, void* library,
                       const char* path, const struct FerryGpuSymbol* symbols,
                       size_t n_symbols, struct FerryError* error);

/* The backend operations, the same for every driver family: each finds its
 * driver's table through device->backend->driver_api. */
int ferry__gpu_allocate(struct FerryDevice* device, int64_t size, void** out,
                        struct FerryError* error);
int ferry__gpu_deallocate(struct FerryDevice* device, void* ptr,
                          struct FerryError* error);
int ferry__gpu_memcpy(struct FerryDevice* device, void* dst,
                      struct FerryDevice* src_device, const void* src, int64_t size,
                      enum FerryCopyKind kind, void* stream, struct FerryError* error);
int ferry__gpu_stream_create(struct FerryDevice* device, void** stream_out,
                             struct FerryError* error);
int ferry__gpu_stream_destroy(struct FerryDevice* device, void* stream,
                              struct FerryError* error);
int ferry__gpu_stream_synchronize(struct FerryDevice* device, void* stream,
                                  struct FerryError* error);
int ferry__gpu_event_create(struct FerryDevice* device, void** sync_event_out,
                            struct FerryError* error);
int ferry__gpu_event_destroy(struct FerryDevice* device, void* sync_event,
                             struct FerryError* error);
int ferry__gpu_event_record(struct FerryDevice* device, void* sync_event, void* stream,
                            struct FerryError* error);
int ferry__gpu_event_synchronize(struct FerryDevice* device, void* sync_event,
                                 struct FerryError* error);
int ferry__gpu_stream_wait_event(struct FerryDevice* device, void* stream,
                                 void* sync_event, struct FerryError* error);
int ferry__gpu_check_pointer(struct FerryDevice* device, const void* ptr, int64_t size,
                             struct FerryError* error);

/* The designated initializers of a GPU backend's operations (cuda.c, hip.c
 * put FERRY_BACKEND_IDENTITY of backend.h before them): .allocate =
 * ferry__gpu_allocate, and so on. */
// clang-format off
#define FERRY_GPU_OPERATION(name) .name = ferry__gpu_##name,
#define FERRY_GPU_BACKEND_OPERATIONS(api)                                          \
  FERRY_GPU_OPERATION(allocate) FERRY_GPU_OPERATION(deallocate)                    \
  FERRY_GPU_OPERATION(memcpy) FERRY_GPU_OPERATION(stream_create)                   \
  FERRY_GPU_OPERATION(stream_destroy) FERRY_GPU_OPERATION(stream_synchronize)      \
  FERRY_GPU_OPERATION(event_create) FERRY_GPU_OPERATION(event_destroy)             \
  FERRY_GPU_OPERATION(event_record) FERRY_GPU_OPERATION(event_synchronize)         \
  FERRY_GPU_OPERATION(stream_wait_event) FERRY_GPU_OPERATION(check_pointer)        \
  .unusable_after_fork = 1, .driver_api = (api)
// clang-format on

#endif  // FERRY_SRC_GPU_DRIVER_H
