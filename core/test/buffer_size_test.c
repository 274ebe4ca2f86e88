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

/* The buffers tables the rows below read (only the offsets and the
 * variadic sizes are read: kDummy stands for the rest). */
static const void* const kTwo[2] = {kDummy, kDummy};
static const void* const kThree[3] = {kDummy, kDummy, kDummy};
static const void* const kNullValidityAndData[3] = {NULL, kDummy, NULL};
static const int32_t kOffsets32[6] = {0, 2, 5, 9, 14, 20};
static const void* const kUtf8[3] = {kDummy, kOffsets32, kDummy};
static const int64_t kOffsets64[5] = {0, 3, 3, 10, INT64_C(5000000000)};
static const void* const kLargeUtf8[3] = {NULL, kOffsets64, kDummy};
static const int64_t kVariadicSizes[2] = {100, 7};
static const void* const kView[5] = {kDummy, kDummy, kDummy, kDummy, kVariadicSizes};
static const void* const kViewInlineOnly[3] = {NULL, kDummy, kDummy};
static const void* const kViewNoSizes[3] = {NULL, kDummy, NULL};

/* One expectation: buffer `index` of a `format` array of `length` elements
 * at `offset`, over `n_buffers` of `buffers`, has `size` bytes on the CPU
 * (-1000 - errno: refused). */
struct SizeRow {
  const char* format;
  int64_t length, offset, n_buffers, index, size;
  const void* const* buffers;
};

/* Checks each row; a failure names the row. */
static void check_rows(const struct SizeRow* rows, size_t n_rows) {
  for (size_t k = 0; k < n_rows; k++) {
    const struct SizeRow* r = &rows[k];
    int64_t got = size_of(r->format, r->length, r->offset, r->n_buffers,
                          (const void**)r->buffers, r->index);
    if (got != r->size) {
      char message[256];
      snprintf(
          message, sizeof message,
          "row %zu: format \"%s\" length %lld offset %lld n_buffers %lld buffer %lld: "
          "expected %lld, got %lld",
          k, r->format, (long long)r->length, (long long)r->offset,
          (long long)r->n_buffers, (long long)r->index, (long long)r->size,
          (long long)got);
      ferry_test_fail(__FILE__, __LINE__, message);
    }
  }
}

FERRY_TEST(fixed_width_layouts_with_and_without_offset) {
  static const struct {
    const char* format;
    int64_t byte_width;
  } cases[] = {{"c", 1},           {"C", 1},           {"s", 2},        {"S", 2},
               {"i", 4},           {"I", 4},           {"l", 8},        {"L", 8},
               {"e", 2},           {"f", 4},           {"g", 8},        {"tdD", 4},
               {"tdm", 8},         {"tts", 4},         {"ttm", 4},      {"ttu", 8},
               {"ttn", 8},         {"tss:", 8},        {"tsu:UTC", 8},  {"tDn", 8},
               {"tiM", 4},         {"tiD", 8},         {"tin", 16},     {"d:10,2", 16},
               {"d:10,2,128", 16}, {"d:40,2,256", 32}, {"d:5,1,32", 4}, {"d:15,3,64", 8},
               {"w:3", 3},         {"w:1", 1}};
  for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
    const char* f = cases[k].format;
    int64_t w = cases[k].byte_width;
    const struct SizeRow rows[] = {
        /* length 5, no offset */
        {f, 5, 0, 2, 0, 1, kTwo},
        {f, 5, 0, 2, 1, 5 * w, kTwo},
        /* length 5 at offset 4: 9 slots */
        {f, 5, 4, 2, 0, 2, kTwo},
        {f, 5, 4, 2, 1, 9 * w, kTwo},
        /* empty */
        {f, 0, 0, 2, 1, 0, kTwo},
    };
    check_rows(rows, sizeof rows / sizeof rows[0]);
  }
}

/* Every other layout the CPU sizes without an error. */
FERRY_TEST(sizes_of_the_other_layouts) {
  static const struct SizeRow rows[] = {
      /* bool values are bits */
      {"b", 8, 0, 2, 1, 1, kTwo},
      {"b", 9, 0, 2, 1, 2, kTwo},
      {"b", 5, 7, 2, 1, 2, kTwo},
      {"b", 5, 7, 2, 0, 2, kTwo},
      {"b", 0, 0, 2, 1, 0, kTwo},
      /* zero-width fixed-size binary */
      {"w:0", 10, 0, 2, 1, 0, kTwo},
      /* NULL buffers have size 0; binary with a NULL data buffer: the
       * offsets are not read */
      {"i", 100, 0, 2, 0, 0, kNullValidityAndData},
      {"i", 100, 0, 2, 1, 400, kNullValidityAndData},
      {"u", 100, 0, 3, 2, 0, kNullValidityAndData},
      /* binary and utf8 read the last offset; offset 2, length 3:
       * offsets[0..5], data up to offsets[5]; length 0: no offset is needed
       * (nor read), and no data (issue 20) */
      {"z", 3, 0, 3, 0, 1, kUtf8},
      {"z", 3, 0, 3, 1, 16, kUtf8},
      {"z", 3, 0, 3, 2, 9, kUtf8},
      {"z", 3, 2, 3, 1, 24, kUtf8},
      {"z", 3, 2, 3, 2, 20, kUtf8},
      {"z", 0, 0, 3, 1, 0, kUtf8},
      {"z", 0, 0, 3, 2, 0, kUtf8},
      {"u", 3, 0, 3, 0, 1, kUtf8},
      {"u", 3, 0, 3, 1, 16, kUtf8},
      {"u", 3, 0, 3, 2, 9, kUtf8},
      {"u", 3, 2, 3, 1, 24, kUtf8},
      {"u", 3, 2, 3, 2, 20, kUtf8},
      {"u", 0, 0, 3, 1, 0, kUtf8},
      {"u", 0, 0, 3, 2, 0, kUtf8},
      /* large binary and utf8 read 8-byte offsets */
      {"Z", 3, 0, 3, 0, 0, kLargeUtf8},
      {"Z", 3, 0, 3, 1, 32, kLargeUtf8},
      {"Z", 3, 0, 3, 2, 10, kLargeUtf8},
      {"Z", 3, 1, 3, 1, 40, kLargeUtf8},
      {"Z", 3, 1, 3, 2, INT64_C(5000000000), kLargeUtf8},
      {"U", 3, 0, 3, 0, 0, kLargeUtf8},
      {"U", 3, 0, 3, 1, 32, kLargeUtf8},
      {"U", 3, 0, 3, 2, 10, kLargeUtf8},
      {"U", 3, 1, 3, 1, 40, kLargeUtf8},
      {"U", 3, 1, 3, 2, INT64_C(5000000000), kLargeUtf8},
      /* binary view and utf8 view with variadic buffers; an offset changes
       * the views, not the variadic buffers */
      {"vz", 4, 0, 5, 0, 1, kView},
      {"vz", 4, 0, 5, 1, 64, kView},
      {"vz", 4, 0, 5, 2, 100, kView},
      {"vz", 4, 0, 5, 3, 7, kView},
      {"vz", 4, 0, 5, 4, 16, kView},
      {"vz", 4, 6, 5, 0, 2, kView},
      {"vz", 4, 6, 5, 1, 160, kView},
      {"vz", 4, 6, 5, 2, 100, kView},
      {"vu", 4, 0, 5, 0, 1, kView},
      {"vu", 4, 0, 5, 1, 64, kView},
      {"vu", 4, 0, 5, 2, 100, kView},
      {"vu", 4, 0, 5, 3, 7, kView},
      {"vu", 4, 0, 5, 4, 16, kView},
      {"vu", 4, 6, 5, 0, 2, kView},
      {"vu", 4, 6, 5, 1, 160, kView},
      {"vu", 4, 6, 5, 2, 100, kView},
      /* no variadic buffers: the sizes buffer is empty (non-NULL or NULL) */
      {"vu", 3, 0, 3, 1, 48, kViewInlineOnly},
      {"vu", 3, 0, 3, 2, 0, kViewInlineOnly},
      {"vu", 3, 0, 3, 2, 0, kViewNoSizes},
      /* list and large list */
      {"+l", 4, 0, 2, 0, 1, kTwo},
      {"+l", 4, 0, 2, 1, 20, kTwo},
      {"+l", 4, 5, 2, 1, 40, kTwo},
      {"+L", 4, 0, 2, 1, 40, kTwo},
      {"+L", 4, 5, 2, 1, 80, kTwo},
      {"+L", 4, 5, 2, 0, 2, kTwo},
      /* list view and large list view have offsets and sizes */
      {"+vl", 4, 0, 3, 0, 1, kThree},
      {"+vl", 4, 0, 3, 1, 16, kThree},
      {"+vl", 4, 0, 3, 2, 16, kThree},
      {"+vl", 4, 5, 3, 1, 36, kThree},
      {"+vl", 4, 5, 3, 2, 36, kThree},
      {"+vL", 4, 0, 3, 1, 32, kThree},
      {"+vL", 4, 5, 3, 2, 72, kThree},
      /* fixed-size list (which has no buffer 1), struct and map */
      {"+w:4", 10, 0, 1, 0, 2, kTwo},
      {"+w:4", 10, 7, 1, 0, 3, kTwo},
      {"+w:4", 10, 0, 1, 1, -1000 - EINVAL, kTwo},
      {"+s", 16, 0, 1, 0, 2, kTwo},
      {"+s", 16, 1, 1, 0, 3, kTwo},
      {"+m", 3, 0, 2, 0, 1, kTwo},
      {"+m", 3, 0, 2, 1, 16, kTwo},
      {"+m", 3, 3, 2, 1, 28, kTwo},
      /* sparse and dense unions */
      {"+us:0,1", 6, 0, 1, 0, 6, kTwo},
      {"+us:0,1", 6, 3, 1, 0, 9, kTwo},
      {"+ud:0,1", 6, 0, 2, 0, 6, kTwo},
      {"+ud:0,1", 6, 0, 2, 1, 24, kTwo},
      {"+ud:0,1", 6, 3, 2, 0, 9, kTwo},
      {"+ud:0,1", 6, 3, 2, 1, 36, kTwo},
  };
  check_rows(rows, sizeof rows / sizeof rows[0]);
}

/* The size and the error of the last cpu_size call. */
static int64_t g_size;
static struct FerryError g_error;

/* ferry_array_buffer_size of buffer `i` on the CPU into g_size (-1 before
 * the call) and g_error; returns its code. */
static int cpu_size(const struct ArrowSchema* schema, const struct ArrowArray* array,
                    int64_t i) {
  g_size = -1;
  ferry_error_init(&g_error);
  return ferry_array_buffer_size(schema, array, ARROW_DEVICE_CPU, -1, i, &g_size,
                                 &g_error);
}

FERRY_TEST(null_and_run_end_encoded_have_no_buffers) {
  struct ArrowSchema schema = schema_of("n");
  struct ArrowArray array = array_of(10, 0, 0, NULL);
  CHECK_EQ_INT(EINVAL, cpu_size(&schema, &array, 0));
  CHECK_CONTAINS(g_error.message, "buffer 0");
  CHECK_CONTAINS(g_error.message, "out of range");
  schema = schema_of("+r");
  CHECK_EQ_INT(EINVAL, cpu_size(&schema, &array, 0));
  CHECK_CONTAINS(g_error.message, "out of range");
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
  const void* buffers[3] = {kDummy, kDummy, kDummy};
  struct ArrowSchema schema = schema_of("i");
  struct ArrowArray array = array_of(4, 0, 2, buffers);

  CHECK_EQ_INT(EINVAL, cpu_size(NULL, &array, 0));
  CHECK_CONTAINS(g_error.message, "schema is NULL");
  CHECK_EQ_INT(EINVAL, cpu_size(&schema, NULL, 0));
  CHECK_CONTAINS(g_error.message, "array is NULL");
  CHECK_EQ_INT(EINVAL, ferry_array_buffer_size(&schema, &array, ARROW_DEVICE_CPU, -1, 0,
                                               NULL, &g_error));
  CHECK_CONTAINS(g_error.message, "size_out is NULL");

  CHECK_EQ_INT(EINVAL, cpu_size(&schema, &array, 2));
  CHECK_CONTAINS(g_error.message, "buffer 2 of an array of format \"i\"");
  CHECK_CONTAINS(g_error.message, "out of range");
  CHECK_EQ_INT(EINVAL, cpu_size(&schema, &array, -1));
  CHECK_CONTAINS(g_error.message, "buffer -1");

  array.n_buffers = 3;
  CHECK_EQ_INT(EINVAL, cpu_size(&schema, &array, 1));
  CHECK_CONTAINS(g_error.message, "the layout has 2 buffers but the array has 3");

  array.n_buffers = 2;
  array.buffers = NULL;
  CHECK_EQ_INT(EINVAL, cpu_size(&schema, &array, 1));
  CHECK_CONTAINS(g_error.message, "buffers table is NULL");

  array.buffers = buffers;
  array.length = -3;
  CHECK_EQ_INT(EINVAL, cpu_size(&schema, &array, 1));
  CHECK_CONTAINS(g_error.message, "length (-3)");

  array.length = INT64_MAX / 2;
  CHECK_EQ_INT(EINVAL, cpu_size(&schema, &array, 1));
  CHECK_CONTAINS(g_error.message, "overflow");

  struct ArrowSchema bad = schema_of("Q");
  array.length = 4;
  CHECK_EQ_INT(EINVAL, cpu_size(&bad, &array, 1));
  CHECK_CONTAINS(g_error.message, "bad format");
  bad.format = NULL;
  CHECK_EQ_INT(EINVAL, cpu_size(&bad, &array, 1));
  CHECK_CONTAINS(g_error.message, "format is NULL");
}

FERRY_TEST(variable_size_errors) {
  struct ArrowSchema schema = schema_of("u");
  const void* no_offsets[3] = {NULL, NULL, kDummy};
  struct ArrowArray array = array_of(2, 0, 3, no_offsets);
  CHECK_EQ_INT(EINVAL, cpu_size(&schema, &array, 2));
  CHECK_CONTAINS(g_error.message, "buffer 2");
  CHECK_CONTAINS(g_error.message, "offsets buffer (buffer 1) is NULL");
  array.length = 0;
  CHECK_EQ_INT(FERRY_OK, cpu_size(&schema, &array, 2));
  CHECK_EQ_INT(0, g_size);

  const int32_t negative[3] = {0, -5, -9};
  const void* bad_offsets[3] = {NULL, negative, kDummy};
  array = array_of(2, 0, 3, bad_offsets);
  CHECK_EQ_INT(EINVAL, cpu_size(&schema, &array, 2));
  CHECK_CONTAINS(g_error.message, "last offset (offsets[2]) is negative (-9)");

  struct ArrowSchema view = schema_of("vu");
  const void* too_few[2] = {NULL, kDummy};
  array = array_of(2, 0, 2, too_few);
  CHECK_EQ_INT(EINVAL, cpu_size(&view, &array, 1));
  CHECK_CONTAINS(g_error.message, "at least 3 buffers");
  const void* no_sizes[4] = {NULL, kDummy, kDummy, NULL};
  array = array_of(2, 0, 4, no_sizes);
  CHECK_EQ_INT(EINVAL, cpu_size(&view, &array, 2));
  CHECK_CONTAINS(g_error.message, "buffer 2");
  CHECK_CONTAINS(g_error.message, "variadic sizes buffer (buffer 3) is NULL");
  const int64_t negative_size[1] = {-1};
  const void* bad_sizes[4] = {NULL, kDummy, kDummy, negative_size};
  array = array_of(2, 0, 4, bad_sizes);
  CHECK_EQ_INT(EINVAL, cpu_size(&view, &array, 2));
  CHECK_CONTAINS(g_error.message, "negative size (-1)");
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
  CHECK_EQ_INT(EINVAL, cpu_size(&schema, &array, 1));
  CHECK_CONTAINS(g_error.message, "buffer 1 of an array of format \"+l\"");
  CHECK_CONTAINS(g_error.message, "overflow");
  CHECK_EQ_INT(-1, g_size);
  struct ArrowSchema utf8 = schema_of("u");
  array = array_of(INT64_MAX - 5, 5, 3, buffers);
  CHECK_EQ_INT(EINVAL, cpu_size(&utf8, &array, 1));
  CHECK_CONTAINS(g_error.message, "overflow");
  CHECK_EQ_INT(-1, g_size);
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
  CHECK_EQ_INT(EINVAL, cpu_size(&schema, &array, 1));
  CHECK_CONTAINS(g_error.message, "ferry_array_buffer_size: schema is released");
  CHECK_EQ_INT(-1, g_size);
  struct ArrowSchema live = schema_of("i");
  array.release = NULL;
  CHECK_EQ_INT(EINVAL, cpu_size(&live, &array, 1));
  CHECK_CONTAINS(g_error.message, "ferry_array_buffer_size: array is released");
  CHECK_EQ_INT(-1, g_size);
}

FERRY_TEST_MAIN()
