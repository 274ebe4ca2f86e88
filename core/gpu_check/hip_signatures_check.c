/* Compile-time check of ferry's own HIP runtime declarations
 * (core/src/hip_runtime_decls.h) against AMD's hip/hip_runtime_api.h (Debian's
 * libamdhip64-dev). Never part of the library: it only has to compile.
 *   cc -std=c11 -D__HIP_PLATFORM_AMD__ -I core/src -fsyntax-only this file */
#include <hip/hip_runtime_api.h>
#include <stddef.h>

#include "hip_runtime_decls.h"

#define FERRY_SAME_TYPE(a, b) __builtin_types_compatible_p(a, b)

#define FERRY_CHECK_SIGNATURE(name, params)                             \
  _Static_assert(FERRY_SAME_TYPE(ferry_##name##_fn, __typeof__(&name)), \
                 "ferry's declaration of " #name " differs from hip_runtime_api.h");
FERRY_HIP_RUNTIME_FUNCTIONS(FERRY_CHECK_SIGNATURE)

/* hipPointerGetAttributes: the same signature with the real struct ... */
_Static_assert(FERRY_SAME_TYPE(__typeof__(&hipPointerGetAttributes),
                               hipError_t (*)(hipPointerAttribute_t*, const void*)),
               "hipPointerGetAttributes");
/* ... whose layout ferry's mirror reproduces field by field. */
_Static_assert(sizeof(struct ferry_hipPointerAttribute) == sizeof(hipPointerAttribute_t),
               "hipPointerAttribute_t size");
#define FERRY_CHECK_FIELD(mine, real)                                \
  _Static_assert(offsetof(struct ferry_hipPointerAttribute, mine) == \
                     offsetof(hipPointerAttribute_t, real),          \
                 #real);
FERRY_CHECK_FIELD(device, device)
FERRY_CHECK_FIELD(device_pointer, devicePointer)
FERRY_CHECK_FIELD(host_pointer, hostPointer)
FERRY_CHECK_FIELD(is_managed, isManaged)
FERRY_CHECK_FIELD(allocation_flags, allocationFlags)
_Static_assert(offsetof(struct ferry_hipPointerAttribute, memory_type) == 0,
               "memory type");
_Static_assert(sizeof(enum hipMemoryType) == sizeof(unsigned int), "hipMemoryType size");

_Static_assert(FERRY_SAME_TYPE(ferry_hipError_t, hipError_t), "hipError_t");
_Static_assert(FERRY_SAME_TYPE(ferry_hipMemcpyKind, hipMemcpyKind), "hipMemcpyKind");
_Static_assert(FERRY_SAME_TYPE(ferry_hipStream_t, hipStream_t), "hipStream_t");
_Static_assert(FERRY_SAME_TYPE(ferry_hipEvent_t, hipEvent_t), "hipEvent_t");

#define FERRY_CHECK_VALUE(mine, real) \
  _Static_assert((mine) == (real), #mine " != " #real);
/* The memory types of the header at hand (HIP 5 or 6). */
#if defined(HIP_VERSION_MAJOR) && HIP_VERSION_MAJOR >= 6
FERRY_CHECK_VALUE(FERRY_HIP6_MEMORY_TYPE_UNREGISTERED, hipMemoryTypeUnregistered)
FERRY_CHECK_VALUE(FERRY_HIP6_MEMORY_TYPE_HOST, hipMemoryTypeHost)
FERRY_CHECK_VALUE(FERRY_HIP6_MEMORY_TYPE_DEVICE, hipMemoryTypeDevice)
#else
FERRY_CHECK_VALUE(FERRY_HIP5_MEMORY_TYPE_HOST, hipMemoryTypeHost)
FERRY_CHECK_VALUE(FERRY_HIP5_MEMORY_TYPE_DEVICE, hipMemoryTypeDevice)
#endif
FERRY_CHECK_VALUE(FERRY_HIP_SUCCESS, hipSuccess)
FERRY_CHECK_VALUE(FERRY_HIP_ERROR_INVALID_VALUE, hipErrorInvalidValue)
FERRY_CHECK_VALUE(FERRY_HIP_ERROR_OUT_OF_MEMORY, hipErrorOutOfMemory)
FERRY_CHECK_VALUE(FERRY_HIP_ERROR_NOT_INITIALIZED, hipErrorNotInitialized)
FERRY_CHECK_VALUE(FERRY_HIP_ERROR_DEINITIALIZED, hipErrorDeinitialized)
FERRY_CHECK_VALUE(FERRY_HIP_ERROR_INVALID_DEVICE_POINTER, hipErrorInvalidDevicePointer)
FERRY_CHECK_VALUE(FERRY_HIP_ERROR_INVALID_MEMCPY_DIRECTION,
                  hipErrorInvalidMemcpyDirection)
FERRY_CHECK_VALUE(FERRY_HIP_ERROR_INSUFFICIENT_DRIVER, hipErrorInsufficientDriver)
FERRY_CHECK_VALUE(FERRY_HIP_ERROR_NO_DEVICE, hipErrorNoDevice)
FERRY_CHECK_VALUE(FERRY_HIP_ERROR_INVALID_DEVICE, hipErrorInvalidDevice)
FERRY_CHECK_VALUE(FERRY_HIP_ERROR_INVALID_CONTEXT, hipErrorInvalidContext)
FERRY_CHECK_VALUE(FERRY_HIP_ERROR_PEER_ACCESS_UNSUPPORTED, hipErrorPeerAccessUnsupported)
FERRY_CHECK_VALUE(FERRY_HIP_ERROR_SHARED_OBJECT_INIT_FAILED,
                  hipErrorSharedObjectInitFailed)
FERRY_CHECK_VALUE(FERRY_HIP_ERROR_OPERATING_SYSTEM, hipErrorOperatingSystem)
FERRY_CHECK_VALUE(FERRY_HIP_ERROR_INVALID_HANDLE, hipErrorInvalidHandle)
FERRY_CHECK_VALUE(FERRY_HIP_ERROR_ILLEGAL_STATE, hipErrorIllegalState)
FERRY_CHECK_VALUE(FERRY_HIP_ERROR_NOT_FOUND, hipErrorNotFound)
FERRY_CHECK_VALUE(FERRY_HIP_ERROR_NOT_READY, hipErrorNotReady)
FERRY_CHECK_VALUE(FERRY_HIP_ERROR_ILLEGAL_ADDRESS, hipErrorIllegalAddress)
FERRY_CHECK_VALUE(FERRY_HIP_ERROR_PEER_ACCESS_NOT_ENABLED, hipErrorPeerAccessNotEnabled)
FERRY_CHECK_VALUE(FERRY_HIP_ERROR_CONTEXT_IS_DESTROYED, hipErrorContextIsDestroyed)
FERRY_CHECK_VALUE(FERRY_HIP_ERROR_HOST_MEMORY_NOT_REGISTERED,
                  hipErrorHostMemoryNotRegistered)
FERRY_CHECK_VALUE(FERRY_HIP_ERROR_LAUNCH_FAILURE, hipErrorLaunchFailure)
FERRY_CHECK_VALUE(FERRY_HIP_ERROR_NOT_SUPPORTED, hipErrorNotSupported)
FERRY_CHECK_VALUE(FERRY_HIP_ERROR_UNKNOWN, hipErrorUnknown)
FERRY_CHECK_VALUE(FERRY_HIP_ERROR_RUNTIME_MEMORY, hipErrorRuntimeMemory)
FERRY_CHECK_VALUE(FERRY_HIP_ERROR_RUNTIME_OTHER, hipErrorRuntimeOther)
FERRY_CHECK_VALUE(FERRY_HIP_MEMCPY_HOST_TO_DEVICE, hipMemcpyHostToDevice)
FERRY_CHECK_VALUE(FERRY_HIP_MEMCPY_DEVICE_TO_HOST, hipMemcpyDeviceToHost)
FERRY_CHECK_VALUE(FERRY_HIP_MEMCPY_DEVICE_TO_DEVICE, hipMemcpyDeviceToDevice)
FERRY_CHECK_VALUE(FERRY_HIP_STREAM_NON_BLOCKING, hipStreamNonBlocking)
FERRY_CHECK_VALUE(FERRY_HIP_EVENT_DISABLE_TIMING, hipEventDisableTiming)
FERRY_CHECK_VALUE(FERRY_HIP_HOST_MALLOC_DEFAULT, hipHostMallocDefault)

int ferry_hip_signatures_checked(void);
int ferry_hip_signatures_checked(void) { return 1; }
