/* Tests of dlpack.c on the CPU and the sim device: argument checks of
 * ferry_device_array_to_dlpack and ferry_device_array_from_dlpack that need no
 * GPU (the full matrix runs in tests/gpu against the driver emulations). */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "ferry/dlpack_abi.h"
#include "ferry/ferry.h"
#include "ferry_test.h"
#include "hand_made.h"

static const int32_t kValues[4] = {10, 20, 30, 40};

static int g_hook_calls;
static void count_hook(void* user_data) { g_hook_calls++; }

/* A live schema of `format` and a live CPU array over kValues (as int32
 * values), with a release hook whose count starts again at 0; FERRY_OK or the
 * schema's error. */
static int make_cpu_pair(const char* format, struct ArrowSchema* schema,
                         struct ArrowDeviceArray* out, int64_t length, int64_t offset) {
  g_hook_calls = 0;
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
  memset(schema, 0, sizeof *schema);
  return ferry_schema_init(schema, format, NULL, 0, 0, NULL);
}

FERRY_TEST(export_of_a_sliced_array_points_at_the_slice_and_releases_once) {
  struct ArrowSchema schema;
  struct ArrowDeviceArray array;
  CHECK_EQ_INT(FERRY_OK, make_cpu_pair("i", &schema, &array, 3, 1));
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
  struct ArrowSchema schema;
  struct ArrowDeviceArray array;
  CHECK_EQ_INT(FERRY_OK, make_cpu_pair("i", &schema, &array, 1, 0));
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
  struct ArrowDeviceArray array;
  CHECK_EQ_INT(FERRY_OK, make_cpu_pair("i", &schema, &array, 2, 0));
  ferry_schema_release(&schema); /* schema.format now points at freed memory */
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

/* A CPU int32 tensor of `length` values over kValues, with count_deleter
 * (its count starts again at 0). */
static void make_tensor(struct DLManagedTensorVersioned* tensor, int64_t* shape, int64_t length) {
  g_deleter_calls = 0;
  shape[0] = length;
  init_int32_tensor(tensor, shape, (void*)kValues, count_deleter);
}

/* Checks that importing `tensor` is refused naming `message`, with both
 * outputs left released and the tensor's deleter not called. */
static void check_import_refused(struct DLManagedTensorVersioned* tensor, const char* message) {
  g_deleter_calls = 0;
  struct ArrowSchema schema = {0};
  struct ArrowDeviceArray array = {0};
  struct FerryError error;
  CHECK_EQ_INT(EINVAL, ferry_device_array_from_dlpack(tensor, &schema, &array, &error));
  CHECK_CONTAINS(error.message, message);
  CHECK(schema.release == NULL && array.array.release == NULL);
  CHECK_EQ_INT(0, g_deleter_calls);
}

FERRY_TEST(import_refuses_a_negative_device_id_and_leaves_the_tensor_alone) {
  int64_t shape[1];
  struct DLManagedTensorVersioned tensor;
  make_tensor(&tensor, shape, 4);
  tensor.dl_tensor.device.device_type = kDLExtDev;
  tensor.dl_tensor.device.device_id = -1;
  check_import_refused(&tensor, "DLPack device id -1 of ext_dev is negative");
  struct ArrowSchema schema = {0};
  struct ArrowDeviceArray array = {0};
  struct FerryError error;

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

FERRY_TEST(import_gives_a_bare_schema_and_deletes_the_tensor_once_on_release) {
  /* The schema owns no memory (its format is the type table's literal), so
   * it may be released before or after the array, and the tensor's deleter
   * belongs to the array alone. */
  int64_t shape[1];
  struct DLManagedTensorVersioned tensor;
  make_tensor(&tensor, shape, 4);
  struct ArrowSchema schema = {0};
  struct ArrowDeviceArray array = {0};
  int64_t exports_before = ferry_live_exports();
  CHECK_EQ_INT(FERRY_OK, ferry_device_array_from_dlpack(&tensor, &schema, &array, NULL));
  CHECK_STR("i", schema.format);
  CHECK(schema.name == NULL && schema.metadata == NULL && schema.dictionary == NULL);
  CHECK_EQ_INT(0, schema.flags);
  CHECK_EQ_INT(0, schema.n_children);
  CHECK(schema.release != NULL);
  CHECK(array.sync_event == NULL);
  CHECK(array.reserved[0] == 0 && array.reserved[1] == 0 && array.reserved[2] == 0);
  CHECK(array.array.buffers[1] == (const void*)kValues);
  CHECK_EQ_INT(FERRY_OK, ferry_validate_device_array(&schema, &array, FERRY_VALIDATE_FULL,
                                                     NULL, NULL, NULL));
  ferry_schema_release(&schema);
  CHECK(schema.release == NULL);
  CHECK_EQ_INT(0, g_deleter_calls);
  ferry_device_array_release(&array);
  CHECK_EQ_INT(1, g_deleter_calls);
  ferry_device_array_release(&array); /* released: a no-op */
  CHECK_EQ_INT(1, g_deleter_calls);
  CHECK_EQ_INT(exports_before, ferry_live_exports());
}

FERRY_TEST(import_refuses_a_tensor_whose_size_overflows_and_leaves_it_alone) {
  int64_t shape[1];
  struct DLManagedTensorVersioned tensor;
  make_tensor(&tensor, shape, INT64_MAX / 2); /* * 4 bytes wraps int64 */
  check_import_refused(&tensor, "elements of 4 bytes overflow int64");
  shape[0] = INT64_MAX / 4; /* the largest that fits: the size check passes */
  tensor.dl_tensor.data = NULL; /* and the NULL data is what is refused */
  check_import_refused(&tensor, "data is NULL");
}

/* Exports a zero-length array of `format`; the tensor's (code, bits), or
 * (-1, -1) when the export refuses the format. */
static void export_format(const char* format, int* code, int* bits) {
  *code = *bits = -1;
  struct ArrowSchema schema;
  struct ArrowDeviceArray array;
  if (make_cpu_pair(format, &schema, &array, 0, 0) != FERRY_OK) {
    ferry_device_array_release(&array);
    return;
  }
  struct DLManagedTensorVersioned* tensor = NULL;
  if (ferry_device_array_to_dlpack(&schema, &array, NULL, &tensor, NULL) == FERRY_OK) {
    *code = tensor->dl_tensor.dtype.code;
    *bits = tensor->dl_tensor.dtype.bits;
    tensor->deleter(tensor);
  } else {
    ferry_device_array_release(&array);
  }
  ferry_schema_release(&schema);
}

FERRY_TEST(export_matches_formats_exactly_and_timestamps_by_prefix) {
  static const struct {
    const char* format;
    int code, bits;
  } cases[] = {
      {"i", kDLInt, 32},          {"C", kDLUInt, 8},           {"g", kDLFloat, 64},
      {"e", kDLFloat, 16},        {"tdD", kDLInt, 32},         {"tDn", kDLInt, 64},
      {"tss:", kDLInt, 64},       {"tsu:UTC", kDLInt, 64},     {"tsn:Europe/Paris", kDLInt, 64},
      {"ii", -1, -1},             {"ts", -1, -1},              {"tsu", -1, -1},
      {"tdDx", -1, -1},           {"t", -1, -1},               {"u", -1, -1},
      {"b", -1, -1},              {"", -1, -1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    int code, bits;
    export_format(cases[i].format, &code, &bits);
    if (code != cases[i].code || bits != cases[i].bits)
      printf("  format \"%s\": (%d, %d)\n", cases[i].format, code, bits);
    CHECK_EQ_INT(cases[i].code, code);
    CHECK_EQ_INT(cases[i].bits, bits);
  }
}

FERRY_TEST_MAIN()
