/* Tests of core/src/buffer_size.c: ferry_array_buffer_size for every layout
 * of the C data interface, with and without an offset, plus its errors. */
#include <errno.h>
#include <stdint.h>

#include "ferry/ferry.h"
#include "ferry_test.h"

static void noop_schema_release(struct ArrowSchema* schema) { schema->release = NULL; }
static void noop_array_release(struct ArrowArray* array) { array->release = NULL; }

/* A non-NULL stand-in for buffers whose contents are never read. */
static const uint8_t kDummy[8];

static struct ArrowSchema schema_of(const char* format) {
  struct ArrowSchema schema = {.format = format, .release = noop_schema_release};
  return schema;
}

static struct ArrowArray array_of(int64_t length, int64_t offset, int64_t n_buffers,
                                  const void** buffers) {
  struct ArrowArray array = {.length = length,
                             .offset = offset,
                             .n_buffers = n_buffers,
                             .buffers = buffers,
                             .release = noop_array_release};
  return array;
}

/* Size of buffer i on the CPU, or -1000 - errno on failure. */
static int64_t size_of(const char* format, int64_t length, int64_t offset,
                       int64_t n_buffers, const void** buffers, int64_t i) {
  struct ArrowSchema schema = schema_of(format);
  struct ArrowArray array = array_of(length, offset, n_buffers, buffers);
  int64_t size = -1;
  struct FerryError error;
  int rc =
      ferry_array_buffer_size(&schema, &array, ARROW_DEVICE_CPU, -1, i, &size, &error);
  return rc == FERRY_OK ? size : -1000 - rc;
}

struct FixedCase {
  const char* format;
  int64_t byte_width; /* 0 for bits */
};

FERRY_TEST(fixed_width_layouts_with_and_without_offset) {
  static const struct FixedCase cases[] = {
      {"c", 1},           {"C", 1},           {"s", 2},        {"S", 2},
      {"i", 4},           {"I", 4},           {"l", 8},        {"L", 8},
      {"e", 2},           {"f", 4},           {"g", 8},        {"tdD", 4},
      {"tdm", 8},         {"tts", 4},         {"ttm", 4},      {"ttu", 8},
      {"ttn", 8},         {"tss:", 8},        {"tsu:UTC", 8},  {"tDn", 8},
      {"tiM", 4},         {"tiD", 8},         {"tin", 16},     {"d:10,2", 16},
      {"d:10,2,128", 16}, {"d:40,2,256", 32}, {"d:5,1,32", 4}, {"d:15,3,64", 8},
      {"w:3", 3},         {"w:1", 1}};
  const void* buffers[2] = {kDummy, kDummy};
  for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
    const struct FixedCase* c = &cases[k];
    /* length 5, no offset */
    CHECK_EQ_INT(1, size_of(c->format, 5, 0, 2, buffers, 0));
    CHECK_EQ_INT(5 * c->byte_width, size_of(c->format, 5, 0, 2, buffers, 1));
    /* length 5 at offset 4: 9 slots */
    CHECK_EQ_INT(2, size_of(c->format, 5, 4, 2, buffers, 0));
    CHECK_EQ_INT(9 * c->byte_width, size_of(c->format, 5, 4, 2, buffers, 1));
    /* empty */
    CHECK_EQ_INT(0, size_of(c->format, 0, 0, 2, buffers, 1));
  }
}

FERRY_TEST(bool_values_are_bits) {
  const void* buffers[2] = {kDummy, kDummy};
  CHECK_EQ_INT(1, size_of("b", 8, 0, 2, buffers, 1));
  CHECK_EQ_INT(2, size_of("b", 9, 0, 2, buffers, 1));
  CHECK_EQ_INT(2, size_of("b", 5, 7, 2, buffers, 1));
  CHECK_EQ_INT(2, size_of("b", 5, 7, 2, buffers, 0));
  CHECK_EQ_INT(0, size_of("b", 0, 0, 2, buffers, 1));
}

FERRY_TEST(zero_width_fixed_size_binary) {
  const void* buffers[2] = {kDummy, kDummy};
  CHECK_EQ_INT(0, size_of("w:0", 10, 0, 2, buffers, 1));
}

FERRY_TEST(null_buffers_have_size_zero) {
  const void* buffers[3] = {NULL, kDummy, NULL};
  CHECK_EQ_INT(0, size_of("i", 100, 0, 2, buffers, 0));
  CHECK_EQ_INT(400, size_of("i", 100, 0, 2, buffers, 1));
  /* binary with a NULL data buffer: size 0, the offsets are not read */
  CHECK_EQ_INT(0, size_of("u", 100, 0, 3, buffers, 2));
}

FERRY_TEST(binary_and_utf8_read_the_last_offset) {
  const int32_t offsets[6] = {0, 2, 5, 9, 14, 20};
  const void* buffers[3] = {kDummy, offsets, kDummy};
  const char* formats[2] = {"z", "u"};
  for (int f = 0; f < 2; f++) {
    CHECK_EQ_INT(1, size_of(formats[f], 3, 0, 3, buffers, 0));
    CHECK_EQ_INT(16, size_of(formats[f], 3, 0, 3, buffers, 1));
    CHECK_EQ_INT(9, size_of(formats[f], 3, 0, 3, buffers, 2));
    /* offset 2, length 3: offsets[0..5], data up to offsets[5] */
    CHECK_EQ_INT(24, size_of(formats[f], 3, 2, 3, buffers, 1));
    CHECK_EQ_INT(20, size_of(formats[f], 3, 2, 3, buffers, 2));
    /* length 0: no offset is needed (nor read), and no data (issue 20) */
    CHECK_EQ_INT(0, size_of(formats[f], 0, 0, 3, buffers, 1));
    CHECK_EQ_INT(0, size_of(formats[f], 0, 0, 3, buffers, 2));
  }
}

FERRY_TEST(large_binary_and_utf8_read_8_byte_offsets) {
  const int64_t offsets[5] = {0, 3, 3, 10, INT64_C(5000000000)};
  const void* buffers[3] = {NULL, offsets, kDummy};
  const char* formats[2] = {"Z", "U"};
  for (int f = 0; f < 2; f++) {
    CHECK_EQ_INT(0, size_of(formats[f], 3, 0, 3, buffers, 0));
    CHECK_EQ_INT(32, size_of(formats[f], 3, 0, 3, buffers, 1));
    CHECK_EQ_INT(10, size_of(formats[f], 3, 0, 3, buffers, 2));
    CHECK_EQ_INT(40, size_of(formats[f], 3, 1, 3, buffers, 1));
    CHECK_EQ_INT(INT64_C(5000000000), size_of(formats[f], 3, 1, 3, buffers, 2));
  }
}

FERRY_TEST(binary_view_and_utf8_view_with_variadic_buffers) {
  const int64_t variadic_sizes[2] = {100, 7};
  const void* buffers[5] = {kDummy, kDummy, kDummy, kDummy, variadic_sizes};
  const char* formats[2] = {"vz", "vu"};
  for (int f = 0; f < 2; f++) {
    CHECK_EQ_INT(1, size_of(formats[f], 4, 0, 5, buffers, 0));
    CHECK_EQ_INT(64, size_of(formats[f], 4, 0, 5, buffers, 1));
    CHECK_EQ_INT(100, size_of(formats[f], 4, 0, 5, buffers, 2));
    CHECK_EQ_INT(7, size_of(formats[f], 4, 0, 5, buffers, 3));
    CHECK_EQ_INT(16, size_of(formats[f], 4, 0, 5, buffers, 4));
    /* offset changes the views, not the variadic buffers */
    CHECK_EQ_INT(2, size_of(formats[f], 4, 6, 5, buffers, 0));
    CHECK_EQ_INT(160, size_of(formats[f], 4, 6, 5, buffers, 1));
    CHECK_EQ_INT(100, size_of(formats[f], 4, 6, 5, buffers, 2));
  }
  /* No variadic buffers: the sizes buffer is empty (non-NULL or NULL). */
  const void* inline_only[3] = {NULL, kDummy, kDummy};
  CHECK_EQ_INT(48, size_of("vu", 3, 0, 3, inline_only, 1));
  CHECK_EQ_INT(0, size_of("vu", 3, 0, 3, inline_only, 2));
  inline_only[2] = NULL;
  CHECK_EQ_INT(0, size_of("vu", 3, 0, 3, inline_only, 2));
}

FERRY_TEST(list_and_large_list) {
  const void* buffers[2] = {kDummy, kDummy};
  CHECK_EQ_INT(1, size_of("+l", 4, 0, 2, buffers, 0));
  CHECK_EQ_INT(20, size_of("+l", 4, 0, 2, buffers, 1));
  CHECK_EQ_INT(40, size_of("+l", 4, 5, 2, buffers, 1));
  CHECK_EQ_INT(40, size_of("+L", 4, 0, 2, buffers, 1));
  CHECK_EQ_INT(80, size_of("+L", 4, 5, 2, buffers, 1));
  CHECK_EQ_INT(2, size_of("+L", 4, 5, 2, buffers, 0));
}

FERRY_TEST(list_view_and_large_list_view_have_offsets_and_sizes) {
  const void* buffers[3] = {kDummy, kDummy, kDummy};
  CHECK_EQ_INT(1, size_of("+vl", 4, 0, 3, buffers, 0));
  CHECK_EQ_INT(16, size_of("+vl", 4, 0, 3, buffers, 1));
  CHECK_EQ_INT(16, size_of("+vl", 4, 0, 3, buffers, 2));
  CHECK_EQ_INT(36, size_of("+vl", 4, 5, 3, buffers, 1));
  CHECK_EQ_INT(36, size_of("+vl", 4, 5, 3, buffers, 2));
  CHECK_EQ_INT(32, size_of("+vL", 4, 0, 3, buffers, 1));
  CHECK_EQ_INT(72, size_of("+vL", 4, 5, 3, buffers, 2));
}

FERRY_TEST(fixed_size_list_struct_and_map) {
  const void* buffers[2] = {kDummy, kDummy};
  CHECK_EQ_INT(2, size_of("+w:4", 10, 0, 1, buffers, 0));
  CHECK_EQ_INT(3, size_of("+w:4", 10, 7, 1, buffers, 0));
  CHECK_EQ_INT(-1000 - EINVAL, size_of("+w:4", 10, 0, 1, buffers, 1));
  CHECK_EQ_INT(2, size_of("+s", 16, 0, 1, buffers, 0));
  CHECK_EQ_INT(3, size_of("+s", 16, 1, 1, buffers, 0));
  CHECK_EQ_INT(1, size_of("+m", 3, 0, 2, buffers, 0));
  CHECK_EQ_INT(16, size_of("+m", 3, 0, 2, buffers, 1));
  CHECK_EQ_INT(28, size_of("+m", 3, 3, 2, buffers, 1));
}

FERRY_TEST(sparse_and_dense_unions) {
  const void* buffers[2] = {kDummy, kDummy};
  CHECK_EQ_INT(6, size_of("+us:0,1", 6, 0, 1, buffers, 0));
  CHECK_EQ_INT(9, size_of("+us:0,1", 6, 3, 1, buffers, 0));
  CHECK_EQ_INT(6, size_of("+ud:0,1", 6, 0, 2, buffers, 0));
  CHECK_EQ_INT(24, size_of("+ud:0,1", 6, 0, 2, buffers, 1));
  CHECK_EQ_INT(9, size_of("+ud:0,1", 6, 3, 2, buffers, 0));
  CHECK_EQ_INT(36, size_of("+ud:0,1", 6, 3, 2, buffers, 1));
}

FERRY_TEST(null_and_run_end_encoded_have_no_buffers) {
  struct ArrowSchema schema = schema_of("n");
  struct ArrowArray array = array_of(10, 0, 0, NULL);
  int64_t size = -1;
  struct FerryError error;
  CHECK_EQ_INT(EINVAL, ferry_array_buffer_size(&schema, &array, ARROW_DEVICE_CPU, -1, 0,
                                               &size, &error));
  CHECK_CONTAINS(error.message, "buffer 0");
  CHECK_CONTAINS(error.message, "out of range");
  schema = schema_of("+r");
  CHECK_EQ_INT(EINVAL, ferry_array_buffer_size(&schema, &array, ARROW_DEVICE_CPU, -1, 0,
                                               &size, &error));
  CHECK_CONTAINS(error.message, "out of range");
  const void* buffers[1] = {kDummy};
  CHECK_EQ_INT(-1000 - EINVAL, size_of("n", 10, 0, 1, buffers, 0));
}

FERRY_TEST(dictionary_encoded_arrays_use_the_index_type) {
  struct ArrowSchema values = schema_of("u");
  struct ArrowSchema schema = schema_of("s"); /* int16 indices */
  schema.dictionary = &values;
  const void* buffers[2] = {kDummy, kDummy};
  struct ArrowArray array = array_of(10, 2, 2, buffers);
  int64_t size = -1;
  CHECK_EQ_INT(FERRY_OK, ferry_array_buffer_size(&schema, &array, ARROW_DEVICE_CPU, -1, 1,
                                                 &size, NULL));
  CHECK_EQ_INT(24, size);
  CHECK_EQ_INT(FERRY_OK, ferry_array_buffer_size(&schema, &array, ARROW_DEVICE_CPU, -1, 0,
                                                 &size, NULL));
  CHECK_EQ_INT(2, size);
}

FERRY_TEST(errors_name_the_buffer_and_the_reason) {
  struct FerryError error;
  int64_t size = -1;
  const void* buffers[3] = {kDummy, kDummy, kDummy};
  struct ArrowSchema schema = schema_of("i");
  struct ArrowArray array = array_of(4, 0, 2, buffers);

  CHECK_EQ_INT(EINVAL, ferry_array_buffer_size(NULL, &array, ARROW_DEVICE_CPU, -1, 0,
                                               &size, &error));
  CHECK_CONTAINS(error.message, "schema is NULL");
  CHECK_EQ_INT(EINVAL, ferry_array_buffer_size(&schema, NULL, ARROW_DEVICE_CPU, -1, 0,
                                               &size, &error));
  CHECK_CONTAINS(error.message, "array is NULL");
  CHECK_EQ_INT(EINVAL, ferry_array_buffer_size(&schema, &array, ARROW_DEVICE_CPU, -1, 0,
                                               NULL, &error));
  CHECK_CONTAINS(error.message, "size_out is NULL");

  CHECK_EQ_INT(EINVAL, ferry_array_buffer_size(&schema, &array, ARROW_DEVICE_CPU, -1, 2,
                                               &size, &error));
  CHECK_CONTAINS(error.message, "buffer 2 of an array of format \"i\"");
  CHECK_CONTAINS(error.message, "out of range");
  CHECK_EQ_INT(EINVAL, ferry_array_buffer_size(&schema, &array, ARROW_DEVICE_CPU, -1, -1,
                                               &size, &error));
  CHECK_CONTAINS(error.message, "buffer -1");

  array.n_buffers = 3;
  CHECK_EQ_INT(EINVAL, ferry_array_buffer_size(&schema, &array, ARROW_DEVICE_CPU, -1, 1,
                                               &size, &error));
  CHECK_CONTAINS(error.message, "the layout has 2 buffers but the array has 3");

  array.n_buffers = 2;
  array.buffers = NULL;
  CHECK_EQ_INT(EINVAL, ferry_array_buffer_size(&schema, &array, ARROW_DEVICE_CPU, -1, 1,
                                               &size, &error));
  CHECK_CONTAINS(error.message, "buffers table is NULL");

  array.buffers = buffers;
  array.length = -3;
  CHECK_EQ_INT(EINVAL, ferry_array_buffer_size(&schema, &array, ARROW_DEVICE_CPU, -1, 1,
                                               &size, &error));
  CHECK_CONTAINS(error.message, "length (-3)");

  array.length = INT64_MAX / 2;
  CHECK_EQ_INT(EINVAL, ferry_array_buffer_size(&schema, &array, ARROW_DEVICE_CPU, -1, 1,
                                               &size, &error));
  CHECK_CONTAINS(error.message, "overflow");

  struct ArrowSchema bad = schema_of("Q");
  array.length = 4;
  CHECK_EQ_INT(EINVAL, ferry_array_buffer_size(&bad, &array, ARROW_DEVICE_CPU, -1, 1,
                                               &size, &error));
  CHECK_CONTAINS(error.message, "bad format");
  bad.format = NULL;
  CHECK_EQ_INT(EINVAL, ferry_array_buffer_size(&bad, &array, ARROW_DEVICE_CPU, -1, 1,
                                               &size, &error));
  CHECK_CONTAINS(error.message, "format is NULL");
}

FERRY_TEST(variable_size_errors) {
  struct FerryError error;
  int64_t size = -1;
  struct ArrowSchema schema = schema_of("u");
  const void* no_offsets[3] = {NULL, NULL, kDummy};
  struct ArrowArray array = array_of(2, 0, 3, no_offsets);
  CHECK_EQ_INT(EINVAL, ferry_array_buffer_size(&schema, &array, ARROW_DEVICE_CPU, -1, 2,
                                               &size, &error));
  CHECK_CONTAINS(error.message, "buffer 2");
  CHECK_CONTAINS(error.message, "offsets buffer (buffer 1) is NULL");
  array.length = 0;
  CHECK_EQ_INT(FERRY_OK, ferry_array_buffer_size(&schema, &array, ARROW_DEVICE_CPU, -1, 2,
                                                 &size, &error));
  CHECK_EQ_INT(0, size);

  const int32_t negative[3] = {0, -5, -9};
  const void* bad_offsets[3] = {NULL, negative, kDummy};
  array = array_of(2, 0, 3, bad_offsets);
  CHECK_EQ_INT(EINVAL, ferry_array_buffer_size(&schema, &array, ARROW_DEVICE_CPU, -1, 2,
                                               &size, &error));
  CHECK_CONTAINS(error.message, "last offset (offsets[2]) is negative (-9)");

  struct ArrowSchema view = schema_of("vu");
  const void* too_few[2] = {NULL, kDummy};
  array = array_of(2, 0, 2, too_few);
  CHECK_EQ_INT(EINVAL, ferry_array_buffer_size(&view, &array, ARROW_DEVICE_CPU, -1, 1,
                                               &size, &error));
  CHECK_CONTAINS(error.message, "at least 3 buffers");
  const void* no_sizes[4] = {NULL, kDummy, kDummy, NULL};
  array = array_of(2, 0, 4, no_sizes);
  CHECK_EQ_INT(EINVAL, ferry_array_buffer_size(&view, &array, ARROW_DEVICE_CPU, -1, 2,
                                               &size, &error));
  CHECK_CONTAINS(error.message, "buffer 2");
  CHECK_CONTAINS(error.message, "variadic sizes buffer (buffer 3) is NULL");
  const int64_t negative_size[1] = {-1};
  const void* bad_sizes[4] = {NULL, kDummy, kDummy, negative_size};
  array = array_of(2, 0, 4, bad_sizes);
  CHECK_EQ_INT(EINVAL, ferry_array_buffer_size(&view, &array, ARROW_DEVICE_CPU, -1, 2,
                                               &size, &error));
  CHECK_CONTAINS(error.message, "negative size (-1)");
}

FERRY_TEST(offsets_on_the_sim_device_are_read_through_the_backend) {
  struct FerryDevice* sim = NULL;
  struct FerryDevice* cpu = NULL;
  struct FerryError error;
  CHECK_EQ_INT(FERRY_OK, ferry_device_resolve(ARROW_DEVICE_EXT_DEV, 0, &sim, &error));
  CHECK_EQ_INT(FERRY_OK, ferry_device_resolve(ARROW_DEVICE_CPU, -1, &cpu, &error));
  const int32_t offsets[4] = {0, 4, 4, 11};
  void* device_offsets = NULL;
  CHECK_EQ_INT(FERRY_OK,
               ferry_device_allocate(sim, sizeof(offsets), &device_offsets, &error));
  CHECK_EQ_INT(FERRY_OK, ferry_device_memcpy(sim, device_offsets, cpu, offsets,
                                             sizeof(offsets), NULL, &error));
  const void* buffers[3] = {NULL, device_offsets, kDummy};
  struct ArrowSchema schema = schema_of("u");
  struct ArrowArray array = array_of(3, 0, 3, buffers);
  int64_t size = -1;
  int rc =
      ferry_array_buffer_size(&schema, &array, ARROW_DEVICE_EXT_DEV, 0, 2, &size, &error);
  ferry_device_deallocate(sim, device_offsets, NULL);
  CHECK_EQ_INT(FERRY_OK, rc);
  CHECK_EQ_INT(11, size);
}

/* Found by fuzz_hostile: a sim offsets buffer shorter than the length says
 * was read past its allocation to find the data size. */
FERRY_TEST(offsets_beyond_their_sim_allocation_are_not_read) {
  struct FerryDevice* sim = NULL;
  struct FerryError error;
  CHECK_EQ_INT(FERRY_OK, ferry_device_resolve(ARROW_DEVICE_EXT_DEV, 0, &sim, &error));
  void* short_offsets = NULL;
  CHECK_EQ_INT(FERRY_OK, ferry_device_allocate(sim, 14, &short_offsets, &error));
  const void* buffers[3] = {NULL, short_offsets, kDummy};
  struct ArrowSchema schema = schema_of("u");
  struct ArrowArray array = array_of(3, 0, 3, buffers); /* needs 16 bytes of offsets */
  int64_t size = -1;
  int rc =
      ferry_array_buffer_size(&schema, &array, ARROW_DEVICE_EXT_DEV, 0, 2, &size, &error);
  ferry_device_deallocate(sim, short_offsets, NULL);
  CHECK_EQ_INT(EFAULT, rc);
  CHECK_CONTAINS(error.message, "reading 4 bytes from device ext_dev:0 failed");
  CHECK_CONTAINS(error.message, "runs past the end of a 14-byte allocation");
}

FERRY_TEST(unavailable_device_is_reported_with_its_reason) {
  const int32_t offsets[2] = {0, 3};
  const void* buffers[3] = {NULL, offsets, kDummy};
  struct ArrowSchema schema = schema_of("u");
  struct ArrowArray array = array_of(1, 0, 3, buffers);
  int64_t size = -1;
  struct FerryError error;
  /* Vulkan has no backend in ferry: reading the last offset must fail
   * cleanly rather than dereference device memory. */
  int rc =
      ferry_array_buffer_size(&schema, &array, ARROW_DEVICE_VULKAN, 0, 2, &size, &error);
  CHECK(rc != FERRY_OK);
  CHECK_CONTAINS(error.message, "buffer 2");
  CHECK_CONTAINS(error.message, "device vulkan:0");
  /* Fixed-width sizes need no device access at all. */
  CHECK_EQ_INT(FERRY_OK, ferry_array_buffer_size(&schema, &array, ARROW_DEVICE_VULKAN, 0,
                                                 1, &size, &error));
  CHECK_EQ_INT(8, size);
}

FERRY_TEST(offsets_count_of_a_maximal_length_is_an_error_not_an_overflow) {
  /* length + offset == INT64_MAX is a legal sum, but an offsets buffer has
   * one more entry than that: the count itself must not overflow. */
  const void* buffers[3] = {NULL, kDummy, kDummy};
  struct ArrowSchema schema = schema_of("+l");
  struct ArrowArray array = array_of(INT64_MAX, 0, 2, buffers);
  int64_t size = -1;
  struct FerryError error;
  CHECK_EQ_INT(EINVAL, ferry_array_buffer_size(&schema, &array, ARROW_DEVICE_CPU, -1, 1,
                                               &size, &error));
  CHECK_CONTAINS(error.message, "buffer 1 of an array of format \"+l\"");
  CHECK_CONTAINS(error.message, "overflow");
  struct ArrowSchema utf8 = schema_of("u");
  array = array_of(INT64_MAX - 5, 5, 3, buffers);
  CHECK_EQ_INT(EINVAL, ferry_array_buffer_size(&utf8, &array, ARROW_DEVICE_CPU, -1, 1,
                                               &size, &error));
  CHECK_CONTAINS(error.message, "overflow");
  CHECK_EQ_INT(-1, size);
}

FERRY_TEST(released_schema_or_array_is_refused_before_reading_it) {
  /* A released ferry schema's format points into freed memory: it must not
   * be read. */
  struct ArrowSchema schema;
  memset(&schema, 0, sizeof schema);
  CHECK_EQ_INT(FERRY_OK, ferry_schema_init(&schema, "i", NULL, 0, 0, NULL));
  ferry_schema_release(&schema);
  const void* buffers[2] = {NULL, kDummy};
  struct ArrowArray array = array_of(4, 0, 2, buffers);
  int64_t size = -1;
  struct FerryError error;
  CHECK_EQ_INT(EINVAL, ferry_array_buffer_size(&schema, &array, ARROW_DEVICE_CPU, -1, 1,
                                               &size, &error));
  CHECK_CONTAINS(error.message, "ferry_array_buffer_size: schema is released");
  struct ArrowSchema live = schema_of("i");
  array.release = NULL;
  CHECK_EQ_INT(EINVAL, ferry_array_buffer_size(&live, &array, ARROW_DEVICE_CPU, -1, 1,
                                               &size, &error));
  CHECK_CONTAINS(error.message, "ferry_array_buffer_size: array is released");
  CHECK_EQ_INT(-1, size);
}

FERRY_TEST_MAIN()
