/* The layout of ferry's DLPack definitions (core/include/ferry/dlpack_abi.h)
 * is DLPack 1.x's on 64-bit hosts: checked at compile time, and again at
 * run time so the test reports numbers. Also checks that the definitions
 * stand behind DLPack's canonical guard and that ferry.h's forward
 * declaration of DLManagedTensorVersioned is the same type. */
#include <stddef.h>

#include "ferry/dlpack_abi.h"
#include "ferry/ferry.h"
#include "ferry_test.h"

#ifndef DLPACK_DLPACK_H_
#error "dlpack_abi.h must define DLPack's canonical guard DLPACK_DLPACK_H_"
#endif

_Static_assert(sizeof(DLPackVersion) == 8, "DLPackVersion");
_Static_assert(sizeof(DLDevice) == 8 && offsetof(DLDevice, device_id) == 4, "DLDevice");
_Static_assert(sizeof(DLDataType) == 4 && offsetof(DLDataType, bits) == 1 &&
                   offsetof(DLDataType, lanes) == 2,
               "DLDataType");
_Static_assert(offsetof(DLTensor, data) == 0 && offsetof(DLTensor, device) == 8 &&
                   offsetof(DLTensor, ndim) == 16 && offsetof(DLTensor, dtype) == 20 &&
                   offsetof(DLTensor, shape) == 24 && offsetof(DLTensor, strides) == 32 &&
                   offsetof(DLTensor, byte_offset) == 40 && sizeof(DLTensor) == 48,
               "DLTensor");
_Static_assert(offsetof(DLManagedTensorVersioned, version) == 0 &&
                   offsetof(DLManagedTensorVersioned, manager_ctx) == 8 &&
                   offsetof(DLManagedTensorVersioned, deleter) == 16 &&
                   offsetof(DLManagedTensorVersioned, flags) == 24 &&
                   offsetof(DLManagedTensorVersioned, dl_tensor) == 32 &&
                   sizeof(DLManagedTensorVersioned) == 80,
               "DLManagedTensorVersioned");
_Static_assert(offsetof(DLManagedTensor, manager_ctx) == 48 &&
                   offsetof(DLManagedTensor, deleter) == 56 &&
                   sizeof(DLManagedTensor) == 64,
               "DLManagedTensor");
_Static_assert(sizeof(DLDeviceType) == 4, "DLDeviceType is 32-bit");

FERRY_TEST(dlpack_sizes_and_offsets_match_dlpack_1) {
  CHECK_EQ_INT(48, sizeof(DLTensor));
  CHECK_EQ_INT(80, sizeof(DLManagedTensorVersioned));
  CHECK_EQ_INT(32, offsetof(DLManagedTensorVersioned, dl_tensor));
  CHECK_EQ_INT(1, DLPACK_MAJOR_VERSION);
  CHECK_EQ_INT(1, DLPACK_FLAG_BITMASK_READ_ONLY);
  CHECK_EQ_INT(2, DLPACK_FLAG_BITMASK_IS_COPIED);
  CHECK_EQ_INT(4, DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED);
}

FERRY_TEST(dlpack_device_types_equal_arrow_device_types) {
  CHECK_EQ_INT(ARROW_DEVICE_CPU, kDLCPU);
  CHECK_EQ_INT(ARROW_DEVICE_CUDA, kDLCUDA);
  CHECK_EQ_INT(ARROW_DEVICE_CUDA_HOST, kDLCUDAHost);
  CHECK_EQ_INT(ARROW_DEVICE_OPENCL, kDLOpenCL);
  CHECK_EQ_INT(ARROW_DEVICE_VULKAN, kDLVulkan);
  CHECK_EQ_INT(ARROW_DEVICE_METAL, kDLMetal);
  CHECK_EQ_INT(ARROW_DEVICE_VPI, kDLVPI);
  CHECK_EQ_INT(ARROW_DEVICE_ROCM, kDLROCM);
  CHECK_EQ_INT(ARROW_DEVICE_ROCM_HOST, kDLROCMHost);
  CHECK_EQ_INT(ARROW_DEVICE_EXT_DEV, kDLExtDev);
  CHECK_EQ_INT(ARROW_DEVICE_CUDA_MANAGED, kDLCUDAManaged);
  CHECK_EQ_INT(ARROW_DEVICE_ONEAPI, kDLOneAPI);
  CHECK_EQ_INT(ARROW_DEVICE_WEBGPU, kDLWebGPU);
  CHECK_EQ_INT(ARROW_DEVICE_HEXAGON, kDLHexagon);
}

FERRY_TEST(ferry_h_forward_declaration_is_the_dlpack_struct) {
  /* Assigning through ferry.h's prototype type-checks the pointer types. */
  int (*to)(const struct ArrowSchema*, struct ArrowDeviceArray*, void*,
            DLManagedTensorVersioned**, struct FerryError*) =
      ferry_device_array_to_dlpack;
  int (*from)(DLManagedTensorVersioned*, struct ArrowSchema*, struct ArrowDeviceArray*,
              struct FerryError*) = ferry_device_array_from_dlpack;
  CHECK(to != NULL && from != NULL);
}

FERRY_TEST_MAIN()
