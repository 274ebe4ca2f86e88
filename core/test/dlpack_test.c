/* Tests of dlpack.c on the CPU and the sim device: argument checks of
 * ferry_device_array_to_dlpack and ferry_device_array_from_dlpack that need no
 * GPU (the full matrix runs in tests/gpu against the driver emulations). */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "ferry/dlpack_abi.h"
#include "ferry/ferry.h"
#include "ferry_test.h"

static const int32_t kValues[4] = {10, 20, 30, 40};

static int g_hook_calls;
static void count_hook(void* user_data) { g_hook_calls++; }

/* A live CPU int32 array over kValues, with a release hook that counts. */
static void make_cpu_array(struct ArrowDeviceArray* out, int64_t length, int64_t offset) {
  const void* buffers[2] = {NULL, kValues};
  struct ArrowArray array;
  memset(&array, 0, sizeof array);
  memset(out, 0, sizeof *out);
  if (ferry_array_init(&array, length, 0, offset, 2, buffers, 0, count_hook, NULL,
                       NULL) != FERRY_OK ||
      ferry_device_array_init(out, &array, ARROW_DEVICE_CPU, -1, NULL, NULL, NULL,
                              NULL) != FERRY_OK) {
    printf("building the CPU array failed\n");
  }
}

FERRY_TEST(export_of_a_sliced_array_points_at_the_slice_and_releases_once) {
  g_hook_calls = 0;
  struct ArrowSchema schema;
  memset(&schema, 0, sizeof schema);
  CHECK_EQ_INT(FERRY_OK, ferry_schema_init(&schema, "i", NULL, 0, 0, NULL));
  struct ArrowDeviceArray array;
  make_cpu_array(&array, 3, 1);
  struct DLManagedTensorVersioned* tensor = NULL;
  struct FerryError error;
  CHECK_EQ_INT(FERRY_OK,
               ferry_device_array_to_dlpack(&schema, &array, NULL, &tensor, &error));
  CHECK(array.array.release == NULL);
  CHECK(tensor != NULL);
  CHECK_EQ_INT(3, tensor->dl_tensor.shape[0]);
  CHECK_EQ_INT(4, tensor->dl_tensor.byte_offset);
  CHECK_EQ_INT(0, tensor->dl_tensor.device.device_id);
  const int32_t* first = (const int32_t*)((const char*)tensor->dl_tensor.data +
                                          tensor->dl_tensor.byte_offset);
  CHECK_EQ_INT(20, first[0]);
  CHECK_EQ_INT(0, g_hook_calls);
  tensor->deleter(tensor);
  CHECK_EQ_INT(1, g_hook_calls);
  ferry_schema_release(&schema);
}

FERRY_TEST(export_refuses_an_offset_whose_byte_offset_overflows) {
  /* offset * 4 wrapped around uint64 and exported a wrong byte_offset. */
  g_hook_calls = 0;
  struct ArrowSchema schema;
  memset(&schema, 0, sizeof schema);
  CHECK_EQ_INT(FERRY_OK, ferry_schema_init(&schema, "i", NULL, 0, 0, NULL));
  struct ArrowDeviceArray array;
  make_cpu_array(&array, 1, 0);
  array.array.offset = INT64_MAX / 2;
  struct DLManagedTensorVersioned* tensor = NULL;
  struct FerryError error;
  CHECK_EQ_INT(EINVAL,
               ferry_device_array_to_dlpack(&schema, &array, NULL, &tensor, &error));
  CHECK_CONTAINS(error.message,
                 "offset (4611686018427387903) + length (1) elements of 4 "
                 "bytes overflow int64");
  array.array.offset = INT64_MAX;
  CHECK_EQ_INT(EINVAL,
               ferry_device_array_to_dlpack(&schema, &array, NULL, &tensor, &error));
  CHECK_CONTAINS(error.message, "overflow int64");
  CHECK(tensor == NULL);
  CHECK(array.array.release != NULL);
  array.array.offset = 0;
  ferry_device_array_release(&array);
  CHECK_EQ_INT(1, g_hook_calls);
  ferry_schema_release(&schema);
}

FERRY_TEST(export_refuses_a_released_schema_without_reading_it) {
  struct ArrowSchema schema;
  memset(&schema, 0, sizeof schema);
  CHECK_EQ_INT(FERRY_OK, ferry_schema_init(&schema, "i", NULL, 0, 0, NULL));
  ferry_schema_release(&schema); /* schema.format now points at freed memory */
  struct ArrowDeviceArray array;
  make_cpu_array(&array, 2, 0);
  struct DLManagedTensorVersioned* tensor = NULL;
  struct FerryError error;
  CHECK_EQ_INT(EINVAL,
               ferry_device_array_to_dlpack(&schema, &array, NULL, &tensor, &error));
  CHECK_CONTAINS(error.message, "schema must be a live (not NULL, not released) schema");
  CHECK(tensor == NULL && array.array.release != NULL);
  ferry_device_array_release(&array);
}

static int g_deleter_calls;
static void count_deleter(struct DLManagedTensorVersioned* self) { g_deleter_calls++; }

FERRY_TEST(import_refuses_a_negative_device_id_and_leaves_the_tensor_alone) {
  g_deleter_calls = 0;
  int64_t shape[1] = {4};
  struct DLManagedTensorVersioned tensor;
  memset(&tensor, 0, sizeof tensor);
  tensor.version.major = DLPACK_MAJOR_VERSION;
  tensor.deleter = count_deleter;
  tensor.dl_tensor.data = (void*)kValues;
  tensor.dl_tensor.device.device_type = kDLExtDev;
  tensor.dl_tensor.device.device_id = -1;
  tensor.dl_tensor.ndim = 1;
  tensor.dl_tensor.dtype.code = kDLInt;
  tensor.dl_tensor.dtype.bits = 32;
  tensor.dl_tensor.dtype.lanes = 1;
  tensor.dl_tensor.shape = shape;
  struct ArrowSchema schema;
  struct ArrowDeviceArray array;
  memset(&schema, 0, sizeof schema);
  memset(&array, 0, sizeof array);
  struct FerryError error;
  CHECK_EQ_INT(EINVAL, ferry_device_array_from_dlpack(&tensor, &schema, &array, &error));
  CHECK_CONTAINS(error.message, "DLPack device id -1 of ext_dev is negative");
  CHECK(schema.release == NULL && array.array.release == NULL);
  CHECK_EQ_INT(0, g_deleter_calls);

  /* The CPU's id is not read (DLPack says 0, Arrow -1), so any value works. */
  tensor.dl_tensor.device.device_type = kDLCPU;
  CHECK_EQ_INT(FERRY_OK,
               ferry_device_array_from_dlpack(&tensor, &schema, &array, &error));
  CHECK_EQ_INT(-1, array.device_id);
  CHECK_EQ_INT(4, array.array.length);
  ferry_device_array_release(&array);
  ferry_schema_release(&schema);
  CHECK_EQ_INT(1, g_deleter_calls);
}

FERRY_TEST_MAIN()
