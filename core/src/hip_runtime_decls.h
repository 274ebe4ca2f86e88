/* The subset of the HIP runtime API that ferry's ROCm backend (hip.c) uses,
 * declared by ferry itself so that libferry builds without HIP headers.
 * Written from AMD's HIP API documentation; checked against the real
 * hip/hip_runtime_api.h at compile time by
 * core/gpu_check/hip_signatures_check.c (scripts/backends_test.sh).
 *
 * Names are prefixed (ferry_hip..., FERRY_HIP_...) so this header and the
 * real one can be included together. Stream and event handles use HIP's own
 * struct tags (ihipStream_t, ihipEvent_t), so they are the same types. */
#ifndef FERRY_SRC_HIP_RUNTIME_DECLS_H
#define FERRY_SRC_HIP_RUNTIME_DECLS_H

#include <stddef.h>

/* hipError_t and hipMemcpyKind are enums with non-negative values: their
 * compatible type is unsigned int with GCC and Clang. */
typedef unsigned int ferry_hipError_t;
typedef unsigned int ferry_hipMemcpyKind;
typedef struct ihipStream_t* ferry_hipStream_t;
typedef struct ihipEvent_t* ferry_hipEvent_t;

/* hipPointerAttribute_t. Its layout is the same in HIP 5 and 6, but HIP 6
 * renamed the first field (memoryType -> type) and renumbered hipMemoryType,
 * so hip.c interprets `memory_type` according to the runtime's version. */
struct ferry_hipPointerAttribute {
  unsigned int memory_type;
  int device;
  void* device_pointer;
  void* host_pointer;
  int is_managed;
  unsigned int allocation_flags;
};

/* hipMemoryType values before HIP 6 ... */
#define FERRY_HIP5_MEMORY_TYPE_HOST 0u
#define FERRY_HIP5_MEMORY_TYPE_DEVICE 1u
/* ... and from HIP 6 on, where 0 is hipMemoryTypeUnregistered (plain host
 * memory no longer fails hipPointerGetAttributes). */
#define FERRY_HIP6_MEMORY_TYPE_UNREGISTERED 0u
#define FERRY_HIP6_MEMORY_TYPE_HOST 1u
#define FERRY_HIP6_MEMORY_TYPE_DEVICE 2u
#define FERRY_HIP6_MEMORY_TYPE_MANAGED 3u

/* hipError_t values ferry names in its messages. */
#define FERRY_HIP_SUCCESS 0u
#define FERRY_HIP_ERROR_INVALID_VALUE 1u
#define FERRY_HIP_ERROR_OUT_OF_MEMORY 2u
#define FERRY_HIP_ERROR_NOT_INITIALIZED 3u
#define FERRY_HIP_ERROR_DEINITIALIZED 4u
#define FERRY_HIP_ERROR_INVALID_DEVICE_POINTER 17u
#define FERRY_HIP_ERROR_INVALID_MEMCPY_DIRECTION 21u
#define FERRY_HIP_ERROR_INSUFFICIENT_DRIVER 35u
#define FERRY_HIP_ERROR_NO_DEVICE 100u
#define FERRY_HIP_ERROR_INVALID_DEVICE 101u
#define FERRY_HIP_ERROR_INVALID_CONTEXT 201u
#define FERRY_HIP_ERROR_PEER_ACCESS_UNSUPPORTED 217u
#define FERRY_HIP_ERROR_SHARED_OBJECT_INIT_FAILED 303u
#define FERRY_HIP_ERROR_OPERATING_SYSTEM 304u
#define FERRY_HIP_ERROR_INVALID_HANDLE 400u
#define FERRY_HIP_ERROR_ILLEGAL_STATE 401u
#define FERRY_HIP_ERROR_NOT_FOUND 500u
#define FERRY_HIP_ERROR_NOT_READY 600u
#define FERRY_HIP_ERROR_ILLEGAL_ADDRESS 700u
#define FERRY_HIP_ERROR_PEER_ACCESS_NOT_ENABLED 705u
#define FERRY_HIP_ERROR_CONTEXT_IS_DESTROYED 709u
#define FERRY_HIP_ERROR_HOST_MEMORY_NOT_REGISTERED 713u
#define FERRY_HIP_ERROR_LAUNCH_FAILURE 719u
#define FERRY_HIP_ERROR_NOT_SUPPORTED 801u
#define FERRY_HIP_ERROR_UNKNOWN 999u
#define FERRY_HIP_ERROR_RUNTIME_MEMORY 1052u
#define FERRY_HIP_ERROR_RUNTIME_OTHER 1053u

/* Flags and enum values passed to the runtime. */
#define FERRY_HIP_MEMCPY_HOST_TO_DEVICE 1u
#define FERRY_HIP_MEMCPY_DEVICE_TO_HOST 2u
#define FERRY_HIP_MEMCPY_DEVICE_TO_DEVICE 3u
#define FERRY_HIP_STREAM_NON_BLOCKING 0x1u
#define FERRY_HIP_EVENT_DISABLE_TIMING 0x2u
#define FERRY_HIP_HOST_MALLOC_DEFAULT 0x0u

/* X(exported symbol name, parameter list): every runtime entry point ferry
 * calls, each returning hipError_t. hip.c makes `ferry_<name>_fn` pointers
 * of them; the signature check compares each with the real header. */
#define FERRY_HIP_RUNTIME_FUNCTIONS(X)                                                  \
  X(hipInit, (unsigned int flags))                                                      \
  X(hipDriverGetVersion, (int* version))                                                \
  X(hipRuntimeGetVersion, (int* version))                                               \
  X(hipGetDeviceCount, (int* count))                                                    \
  X(hipGetDevice, (int* device))                                                        \
  X(hipSetDevice, (int device))                                                         \
  X(hipDeviceSynchronize, (void))                                                       \
  X(hipMalloc, (void** pointer, size_t size))                                           \
  X(hipFree, (void* pointer))                                                           \
  X(hipHostMalloc, (void** pointer, size_t size, unsigned int flags))                   \
  X(hipHostFree, (void* pointer))                                                       \
  X(hipMemcpyAsync, (void* dst, const void* src, size_t size, ferry_hipMemcpyKind kind, \
                     ferry_hipStream_t stream))                                         \
  X(hipMemcpyPeerAsync, (void* dst, int dst_device, const void* src, int src_device,    \
                         size_t size, ferry_hipStream_t stream))                        \
  X(hipStreamCreateWithFlags, (ferry_hipStream_t * stream, unsigned int flags))         \
  X(hipStreamDestroy, (ferry_hipStream_t stream))                                       \
  X(hipStreamSynchronize, (ferry_hipStream_t stream))                                   \
  X(hipStreamWaitEvent,                                                                 \
    (ferry_hipStream_t stream, ferry_hipEvent_t event, unsigned int flags))             \
  X(hipEventCreateWithFlags, (ferry_hipEvent_t * event, unsigned int flags))            \
  X(hipEventDestroy, (ferry_hipEvent_t event))                                          \
  X(hipEventRecord, (ferry_hipEvent_t event, ferry_hipStream_t stream))                 \
  X(hipEventSynchronize, (ferry_hipEvent_t event))                                      \
  X(hipMemGetAddressRange, (void** base, size_t* size, void* pointer))

/* Separate because its parameter is ferry's mirror of hipPointerAttribute_t
 * (the check compares the layout and the rest of the signature). */
typedef ferry_hipError_t (*ferry_hipPointerGetAttributes_fn)(
    struct ferry_hipPointerAttribute* attributes, const void* pointer);

#define FERRY_HIP_DECLARE_FN_TYPE(name, params) \
  typedef ferry_hipError_t(*ferry_##name##_fn) params;
FERRY_HIP_RUNTIME_FUNCTIONS(FERRY_HIP_DECLARE_FN_TYPE)
#undef FERRY_HIP_DECLARE_FN_TYPE

#endif  // FERRY_SRC_HIP_RUNTIME_DECLS_H
