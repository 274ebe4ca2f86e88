/* DLPack 1.x ABI, as ferry uses it with ferry_device_array_to_dlpack and
 * ferry_device_array_from_dlpack.
 *
 * Written by ferry from the DLPack specification (dmlc/dlpack, v1.1); the
 * names are DLPack's own, because they are the interface. The whole file sits
 * behind DLPack's canonical include guard DLPACK_DLPACK_H_, so a program
 * that also includes DLPack's dlpack.h (before or after this file) gets one
 * definition, whichever came first, and both are the same ABI:
 * tests/gpu/dlpack_layout_test.c checks every size and offset here.
 *
 * Only the tensor exchange structures are here, not DLPack 1.3's Python
 * exchange API. Device type values equal Arrow's ARROW_DEVICE_* values. */
#ifndef DLPACK_DLPACK_H_
#define DLPACK_DLPACK_H_

#ifdef __cplusplus
#define DLPACK_EXTERN_C extern "C"
#else
#define DLPACK_EXTERN_C
#endif

/* The DLPack version these definitions follow. */
#define DLPACK_MAJOR_VERSION 1
#define DLPACK_MINOR_VERSION 1

#ifdef _WIN32
#ifdef DLPACK_EXPORTS
#define DLPACK_DLL __declspec(dllexport)
#else
#define DLPACK_DLL __declspec(dllimport)
#endif
#else
#define DLPACK_DLL
#endif

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ABI version of a DLManagedTensorVersioned: a consumer must not read any
 * field but the deleter when `major` differs from its own. */
typedef struct {
  uint32_t major;
  uint32_t minor;
} DLPackVersion;

/* Where a tensor lives. The values are Arrow's device types as well. */
#ifdef __cplusplus
typedef enum : int32_t {
#else
typedef enum {
#endif
  kDLCPU = 1,
  kDLCUDA = 2,
  kDLCUDAHost = 3, /* pinned host memory (cudaMallocHost) */
  kDLOpenCL = 4,
  kDLVulkan = 7,
  kDLMetal = 8,
  kDLVPI = 9,
  kDLROCM = 10,
  kDLROCMHost = 11,    /* pinned host memory (hipMallocHost) */
  kDLExtDev = 12,      /* extension device (ferry's sim device) */
  kDLCUDAManaged = 13, /* managed memory (cudaMallocManaged) */
  kDLOneAPI = 14,
  kDLWebGPU = 15,
  kDLHexagon = 16,
  kDLMAIA = 17, /* no Arrow equivalent */
  kDLTrn = 18,  /* no Arrow equivalent */
} DLDeviceType;

typedef struct {
  DLDeviceType device_type;
  int32_t device_id; /* 0 for the CPU, pinned and managed memory */
} DLDevice;

/* Element type families (DLDataType.code). */
typedef enum {
  kDLInt = 0U,
  kDLUInt = 1U,
  kDLFloat = 2U,
  kDLOpaqueHandle = 3U,
  kDLBfloat = 4U,
  kDLComplex = 5U,
  kDLBool = 6U, /* one byte per value, unlike Arrow's bitmaps */
  kDLFloat8_e3m4 = 7U,
  kDLFloat8_e4m3 = 8U,
  kDLFloat8_e4m3b11fnuz = 9U,
  kDLFloat8_e4m3fn = 10U,
  kDLFloat8_e4m3fnuz = 11U,
  kDLFloat8_e5m2 = 12U,
  kDLFloat8_e5m2fnuz = 13U,
  kDLFloat8_e8m0fnu = 14U,
  kDLFloat6_e2m3fn = 15U,
  kDLFloat6_e3m2fn = 16U,
  kDLFloat4_e2m1fn = 17U,
} DLDataTypeCode;

/* One element: `code` from DLDataTypeCode, `bits` per lane, `lanes` per
 * element (1 for scalars). */
typedef struct {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
} DLDataType;

/* A strided n-dimensional view; does not own anything. The first element is
 * at (char*)data + byte_offset; shape and strides (in elements) have ndim
 * entries each. */
typedef struct {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;
  uint64_t byte_offset;
} DLTensor;

/* The pre-1.0 managed tensor (deprecated by DLPack, kept for the ABI). */
typedef struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(struct DLManagedTensor* self);
} DLManagedTensor;

/* DLManagedTensorVersioned.flags bits. */
#define DLPACK_FLAG_BITMASK_READ_ONLY (1UL << 0UL)
#define DLPACK_FLAG_BITMASK_IS_COPIED (1UL << 1UL)
#define DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED (1UL << 2UL)

/* The 1.x exchange structure: the producer fills it, the consumer calls
 * `deleter(self)` exactly once when done (which frees `self` too). */
typedef struct DLManagedTensorVersioned {
  DLPackVersion version;
  void* manager_ctx;
  void (*deleter)(struct DLManagedTensorVersioned* self);
  uint64_t flags;
  DLTensor dl_tensor;
} DLManagedTensorVersioned;

#ifdef __cplusplus
}
#endif

#endif  // DLPACK_DLPACK_H_
