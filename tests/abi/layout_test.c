/* ABI layout test: the struct sizes and every field offset of the Arrow C
 * (device) data interface on LP64, checked at compile time, and the spec's
 * constant values. A binding generated from these headers inherits exactly
 * these numbers; a change here is an ABI break. */
#include <stddef.h>

#include "ferry/ferry.h"
#include "ferry_test.h"

#if UINTPTR_MAX == 0xFFFFFFFFFFFFFFFFu
#define LP64_ASSERT(cond) _Static_assert(cond, #cond)
#else
#define LP64_ASSERT(cond)
#endif

LP64_ASSERT(sizeof(struct ArrowSchema) == 72);
LP64_ASSERT(offsetof(struct ArrowSchema, format) == 0);
LP64_ASSERT(offsetof(struct ArrowSchema, name) == 8);
LP64_ASSERT(offsetof(struct ArrowSchema, metadata) == 16);
LP64_ASSERT(offsetof(struct ArrowSchema, flags) == 24);
LP64_ASSERT(offsetof(struct ArrowSchema, n_children) == 32);
LP64_ASSERT(offsetof(struct ArrowSchema, children) == 40);
LP64_ASSERT(offsetof(struct ArrowSchema, dictionary) == 48);
LP64_ASSERT(offsetof(struct ArrowSchema, release) == 56);
LP64_ASSERT(offsetof(struct ArrowSchema, private_data) == 64);

LP64_ASSERT(sizeof(struct ArrowArray) == 80);
LP64_ASSERT(offsetof(struct ArrowArray, length) == 0);
LP64_ASSERT(offsetof(struct ArrowArray, null_count) == 8);
LP64_ASSERT(offsetof(struct ArrowArray, offset) == 16);
LP64_ASSERT(offsetof(struct ArrowArray, n_buffers) == 24);
LP64_ASSERT(offsetof(struct ArrowArray, n_children) == 32);
LP64_ASSERT(offsetof(struct ArrowArray, buffers) == 40);
LP64_ASSERT(offsetof(struct ArrowArray, children) == 48);
LP64_ASSERT(offsetof(struct ArrowArray, dictionary) == 56);
LP64_ASSERT(offsetof(struct ArrowArray, release) == 64);
LP64_ASSERT(offsetof(struct ArrowArray, private_data) == 72);

LP64_ASSERT(sizeof(struct ArrowArrayStream) == 40);
LP64_ASSERT(offsetof(struct ArrowArrayStream, get_schema) == 0);
LP64_ASSERT(offsetof(struct ArrowArrayStream, get_next) == 8);
LP64_ASSERT(offsetof(struct ArrowArrayStream, get_last_error) == 16);
LP64_ASSERT(offsetof(struct ArrowArrayStream, release) == 24);
LP64_ASSERT(offsetof(struct ArrowArrayStream, private_data) == 32);

LP64_ASSERT(sizeof(struct ArrowDeviceArray) == 128);
LP64_ASSERT(offsetof(struct ArrowDeviceArray, array) == 0);
LP64_ASSERT(offsetof(struct ArrowDeviceArray, device_id) == 80);
LP64_ASSERT(offsetof(struct ArrowDeviceArray, device_type) == 88);
LP64_ASSERT(offsetof(struct ArrowDeviceArray, sync_event) == 96);
LP64_ASSERT(offsetof(struct ArrowDeviceArray, reserved) == 104);
LP64_ASSERT(sizeof(((struct ArrowDeviceArray*)0)->reserved) == 24);

LP64_ASSERT(sizeof(struct ArrowDeviceArrayStream) == 48);
LP64_ASSERT(offsetof(struct ArrowDeviceArrayStream, device_type) == 0);
LP64_ASSERT(offsetof(struct ArrowDeviceArrayStream, get_schema) == 8);
LP64_ASSERT(offsetof(struct ArrowDeviceArrayStream, get_next) == 16);
LP64_ASSERT(offsetof(struct ArrowDeviceArrayStream, get_last_error) == 24);
LP64_ASSERT(offsetof(struct ArrowDeviceArrayStream, release) == 32);
LP64_ASSERT(offsetof(struct ArrowDeviceArrayStream, private_data) == 40);

/* The async structs as Arrow C++ and arrow-go lay them out: no release member
 * in ArrowAsyncProducer (the published page shows one; a producer laid out
 * that way is read at the wrong offsets). */
LP64_ASSERT(sizeof(struct ArrowAsyncTask) == 16);
LP64_ASSERT(offsetof(struct ArrowAsyncTask, extract_data) == 0);
LP64_ASSERT(offsetof(struct ArrowAsyncTask, private_data) == 8);

LP64_ASSERT(sizeof(struct ArrowAsyncProducer) == 40);
LP64_ASSERT(offsetof(struct ArrowAsyncProducer, device_type) == 0);
LP64_ASSERT(offsetof(struct ArrowAsyncProducer, request) == 8);
LP64_ASSERT(offsetof(struct ArrowAsyncProducer, cancel) == 16);
LP64_ASSERT(offsetof(struct ArrowAsyncProducer, additional_metadata) == 24);
LP64_ASSERT(offsetof(struct ArrowAsyncProducer, private_data) == 32);

LP64_ASSERT(sizeof(struct ArrowAsyncDeviceStreamHandler) == 48);
LP64_ASSERT(offsetof(struct ArrowAsyncDeviceStreamHandler, on_schema) == 0);
LP64_ASSERT(offsetof(struct ArrowAsyncDeviceStreamHandler, on_next_task) == 8);
LP64_ASSERT(offsetof(struct ArrowAsyncDeviceStreamHandler, on_error) == 16);
LP64_ASSERT(offsetof(struct ArrowAsyncDeviceStreamHandler, release) == 24);
LP64_ASSERT(offsetof(struct ArrowAsyncDeviceStreamHandler, producer) == 32);
LP64_ASSERT(offsetof(struct ArrowAsyncDeviceStreamHandler, private_data) == 40);

_Static_assert(sizeof(ArrowDeviceType) == 4, "ArrowDeviceType is int32_t");
_Static_assert(sizeof(struct FerryError) == FERRY_ERROR_MESSAGE_SIZE, "FerryError");

/* The values are shared with DLPack's DLDeviceType and fixed by the spec. */
FERRY_TEST(device_type_constants_match_the_specification) {
  CHECK_EQ_INT(1, ARROW_DEVICE_CPU);
  CHECK_EQ_INT(2, ARROW_DEVICE_CUDA);
  CHECK_EQ_INT(3, ARROW_DEVICE_CUDA_HOST);
  CHECK_EQ_INT(4, ARROW_DEVICE_OPENCL);
  CHECK_EQ_INT(7, ARROW_DEVICE_VULKAN);
  CHECK_EQ_INT(8, ARROW_DEVICE_METAL);
  CHECK_EQ_INT(9, ARROW_DEVICE_VPI);
  CHECK_EQ_INT(10, ARROW_DEVICE_ROCM);
  CHECK_EQ_INT(11, ARROW_DEVICE_ROCM_HOST);
  CHECK_EQ_INT(12, ARROW_DEVICE_EXT_DEV);
  CHECK_EQ_INT(13, ARROW_DEVICE_CUDA_MANAGED);
  CHECK_EQ_INT(14, ARROW_DEVICE_ONEAPI);
  CHECK_EQ_INT(15, ARROW_DEVICE_WEBGPU);
  CHECK_EQ_INT(16, ARROW_DEVICE_HEXAGON);
  CHECK_EQ_INT(1, ARROW_FLAG_DICTIONARY_ORDERED);
  CHECK_EQ_INT(2, ARROW_FLAG_NULLABLE);
  CHECK_EQ_INT(4, ARROW_FLAG_MAP_KEYS_SORTED);
}

FERRY_TEST(library_and_header_versions_agree) {
  CHECK_EQ_INT(FERRY_ABI_VERSION, ferry_abi_version());
  CHECK_STR(FERRY_VERSION_STRING, ferry_version());
  CHECK_EQ_INT(FERRY_OK, ferry_check_abi_version(FERRY_ABI_VERSION, NULL));
  struct FerryError error;
  CHECK_EQ_INT(EINVAL, ferry_check_abi_version(FERRY_ABI_VERSION + 1, &error));
  CHECK_CONTAINS(error.message, "ABI version mismatch");
}

FERRY_TEST(device_type_names_round_trip) {
  for (ArrowDeviceType t = 1; t <= 16; t++) {
    const char* name = ferry_device_type_name(t);
    if (strcmp(name, "unknown") == 0) {
      CHECK(t == 5 || t == 6);
      continue;
    }
    ArrowDeviceType parsed = 0;
    CHECK_EQ_INT(FERRY_OK, ferry_device_type_from_name(name, &parsed, NULL));
    CHECK_EQ_INT(t, parsed);
  }
  ArrowDeviceType sim = 0;
  CHECK_EQ_INT(FERRY_OK, ferry_device_type_from_name("sim", &sim, NULL));
  CHECK_EQ_INT(ARROW_DEVICE_EXT_DEV, sim);
  struct FerryError error;
  CHECK_EQ_INT(EINVAL, ferry_device_type_from_name("gpu", &sim, &error));
  CHECK_CONTAINS(error.message, "\"gpu\"");
  CHECK_STR("unknown", ferry_device_type_name(99));
  CHECK_STR("unknown", ferry_device_type_name(-1));
}

FERRY_TEST_MAIN()
