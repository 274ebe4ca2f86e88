/* The subset of the CUDA driver API that ferry's CUDA backend (cuda.c) uses,
 * declared by ferry itself so that libferry builds on machines without any
 * CUDA header. Written from NVIDIA's driver API documentation; every type,
 * value and signature here is checked against the real cuda.h at compile
 * time by core/gpu_check/cuda_signatures_check.c (scripts/backends_test.sh).
 *
 * Names are prefixed (ferry_CU..., FERRY_CU_...) so this header and cuda.h
 * can be included together by that check. The opaque handle types use the
 * driver's own struct tags (CUctx_st, CUstream_st, CUevent_st), which makes
 * them the very same types as CUcontext, CUstream and CUevent.
 *
 * Functions are listed once, in FERRY_CUDA_DRIVER_FUNCTIONS, by the name the
 * driver library exports (cuMemAlloc_v2, not the cuMemAlloc macro of cuda.h):
 * cuda.c resolves exactly those names with dlsym. */
#ifndef FERRY_SRC_CUDA_DRIVER_API_H
#define FERRY_SRC_CUDA_DRIVER_API_H

#include <stddef.h>

/* CUresult is an enum whose values are all non-negative, so GCC and Clang
 * give it the compatible type unsigned int. */
typedef unsigned int ferry_CUresult;
typedef int ferry_CUdevice;
/* 64-bit builds only (ferry does not support 32-bit hosts for CUDA). */
typedef unsigned long long ferry_CUdeviceptr;
typedef struct CUctx_st* ferry_CUcontext;
typedef struct CUstream_st* ferry_CUstream;
typedef struct CUevent_st* ferry_CUevent;
/* CUpointer_attribute, an enum with non-negative values. */
typedef unsigned int ferry_CUpointer_attribute;

/* CUresult values ferry names in its messages (cuGetErrorName cannot be
 * used: the toolkit's stub library fails it too). */
#define FERRY_CUDA_SUCCESS 0u
#define FERRY_CUDA_ERROR_INVALID_VALUE 1u
#define FERRY_CUDA_ERROR_OUT_OF_MEMORY 2u
#define FERRY_CUDA_ERROR_NOT_INITIALIZED 3u
#define FERRY_CUDA_ERROR_DEINITIALIZED 4u
#define FERRY_CUDA_ERROR_STUB_LIBRARY 34u
#define FERRY_CUDA_ERROR_DEVICE_UNAVAILABLE 46u
#define FERRY_CUDA_ERROR_NO_DEVICE 100u
#define FERRY_CUDA_ERROR_INVALID_DEVICE 101u
#define FERRY_CUDA_ERROR_DEVICE_NOT_LICENSED 102u
#define FERRY_CUDA_ERROR_INVALID_CONTEXT 201u
#define FERRY_CUDA_ERROR_ECC_UNCORRECTABLE 214u
#define FERRY_CUDA_ERROR_PEER_ACCESS_UNSUPPORTED 217u
#define FERRY_CUDA_ERROR_SHARED_OBJECT_INIT_FAILED 303u
#define FERRY_CUDA_ERROR_OPERATING_SYSTEM 304u
#define FERRY_CUDA_ERROR_INVALID_HANDLE 400u
#define FERRY_CUDA_ERROR_ILLEGAL_STATE 401u
#define FERRY_CUDA_ERROR_NOT_FOUND 500u
#define FERRY_CUDA_ERROR_NOT_READY 600u
#define FERRY_CUDA_ERROR_ILLEGAL_ADDRESS 700u
#define FERRY_CUDA_ERROR_PEER_ACCESS_NOT_ENABLED 705u
#define FERRY_CUDA_ERROR_CONTEXT_IS_DESTROYED 709u
#define FERRY_CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED 713u
#define FERRY_CUDA_ERROR_LAUNCH_FAILED 719u
#define FERRY_CUDA_ERROR_NOT_PERMITTED 800u
#define FERRY_CUDA_ERROR_NOT_SUPPORTED 801u
#define FERRY_CUDA_ERROR_SYSTEM_NOT_READY 802u
#define FERRY_CUDA_ERROR_SYSTEM_DRIVER_MISMATCH 803u
#define FERRY_CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE 804u
#define FERRY_CUDA_ERROR_UNKNOWN 999u

/* Flags and enum values passed to or read from the driver. */
#define FERRY_CU_STREAM_NON_BLOCKING 0x1u
#define FERRY_CU_EVENT_DISABLE_TIMING 0x2u
#define FERRY_CU_MEM_ATTACH_GLOBAL 0x1u
#define FERRY_CU_POINTER_ATTRIBUTE_MEMORY_TYPE 2u
#define FERRY_CU_POINTER_ATTRIBUTE_IS_MANAGED 8u
#define FERRY_CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL 9u
#define FERRY_CU_POINTER_ATTRIBUTE_RANGE_START_ADDR 11u
#define FERRY_CU_POINTER_ATTRIBUTE_RANGE_SIZE 12u
#define FERRY_CU_MEMORYTYPE_HOST 1u
#define FERRY_CU_MEMORYTYPE_DEVICE 2u

/* X(exported symbol name, return type, parameter list): every driver entry
 * point ferry calls. cuda.c turns each into a function pointer
 * `ferry_<name>_fn`, the signature check compares each with cuda.h. */
#define FERRY_CUDA_DRIVER_FUNCTIONS(X)                                                   \
  X(cuInit, (unsigned int flags))                                                        \
  X(cuDriverGetVersion, (int* driver_version))                                           \
  X(cuDeviceGetCount, (int* count))                                                      \
  X(cuDeviceGet, (ferry_CUdevice * device, int ordinal))                                 \
  X(cuDevicePrimaryCtxRetain, (ferry_CUcontext * context, ferry_CUdevice device))        \
  X(cuDevicePrimaryCtxRelease_v2, (ferry_CUdevice device))                               \
  X(cuCtxPushCurrent_v2, (ferry_CUcontext context))                                      \
  X(cuCtxPopCurrent_v2, (ferry_CUcontext * context))                                     \
  X(cuCtxGetCurrent, (ferry_CUcontext * context))                                        \
  X(cuCtxSynchronize, (void))                                                            \
  X(cuMemAlloc_v2, (ferry_CUdeviceptr * pointer, size_t size))                           \
  X(cuMemFree_v2, (ferry_CUdeviceptr pointer))                                           \
  X(cuMemAllocHost_v2, (void** pointer, size_t size))                                    \
  X(cuMemFreeHost, (void* pointer))                                                      \
  X(cuMemAllocManaged, (ferry_CUdeviceptr * pointer, size_t size, unsigned int flags))   \
  X(cuMemcpyHtoDAsync_v2,                                                                \
    (ferry_CUdeviceptr dst, const void* src, size_t size, ferry_CUstream stream))        \
  X(cuMemcpyDtoHAsync_v2,                                                                \
    (void* dst, ferry_CUdeviceptr src, size_t size, ferry_CUstream stream))              \
  X(cuMemcpyDtoDAsync_v2,                                                                \
    (ferry_CUdeviceptr dst, ferry_CUdeviceptr src, size_t size, ferry_CUstream stream))  \
  X(cuMemcpyPeerAsync,                                                                   \
    (ferry_CUdeviceptr dst, ferry_CUcontext dst_context, ferry_CUdeviceptr src,          \
     ferry_CUcontext src_context, size_t size, ferry_CUstream stream))                   \
  X(cuStreamCreate, (ferry_CUstream * stream, unsigned int flags))                       \
  X(cuStreamDestroy_v2, (ferry_CUstream stream))                                         \
  X(cuStreamSynchronize, (ferry_CUstream stream))                                        \
  X(cuStreamWaitEvent, (ferry_CUstream stream, ferry_CUevent event, unsigned int flags)) \
  X(cuEventCreate, (ferry_CUevent * event, unsigned int flags))                          \
  X(cuEventDestroy_v2, (ferry_CUevent event))                                            \
  X(cuEventRecord, (ferry_CUevent event, ferry_CUstream stream))                         \
  X(cuEventSynchronize, (ferry_CUevent event))                                           \
  X(cuPointerGetAttribute,                                                               \
    (void* data, ferry_CUpointer_attribute attribute, ferry_CUdeviceptr pointer))

#define FERRY_CUDA_DECLARE_FN_TYPE(name, params) \
  typedef ferry_CUresult(*ferry_##name##_fn) params;
FERRY_CUDA_DRIVER_FUNCTIONS(FERRY_CUDA_DECLARE_FN_TYPE)
#undef FERRY_CUDA_DECLARE_FN_TYPE

#endif  // FERRY_SRC_CUDA_DRIVER_API_H
