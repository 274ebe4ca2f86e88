/* Negative tests: an exported array is tampered with, one field or one byte
 * at a time, and the checker must fail with a message naming the problem,
 * and still release everything. Buffers of CPU exports are host memory the
 * plugin allocated, so the test may write them before handing them back. */
#include "it_test_support.h"

typedef void (*tamper_fn)(struct ArrowSchema* schema, struct ArrowDeviceArray* array);

static void expect_tamper_detected(const char* spec, tamper_fn tamper,
                                   const char* needle) {
  int64_t before = ferry_it_live_allocations();
  int64_t exports_before = ferry_live_exports();
  struct ArrowSchema schema;
  struct ArrowDeviceArray array;
  EXPORT_ARRAY_OK(spec, &schema, &array);
  tamper(&schema, &array);
  int rc = ferry_it_check_array(spec, &schema, &array);
  if (rc == 0) {
    char message[256];
    snprintf(message, sizeof message, "tampered \"%s\" passed the check (wanted \"%s\")",
             spec, needle);
    ferry_test_fail(__FILE__, __LINE__, message);
  }
  CHECK_EQ_INT(EINVAL, rc);
  CHECK_CONTAINS(ferry_it_last_error(), needle);
  CHECK(schema.release == NULL);
  CHECK(array.array.release == NULL);
  CHECK_EQ_INT(before, ferry_it_live_allocations());
  CHECK_EQ_INT(exports_before, ferry_live_exports());
}

static void* writable(const struct ArrowArray* a, int buffer) {
  return (void*)a->buffers[buffer];
}

static void flip_int32_value_5(struct ArrowSchema* s, struct ArrowDeviceArray* a) {
  ((int32_t*)writable(&a->array, 1))[a->array.offset + 5] ^= 1;
}
FERRY_TEST(flipped_value_is_named) {
  expect_tamper_detected("int32", flip_int32_value_5,
                         "int32 element 5 (physical 5): expected ");
  expect_tamper_detected("int32:offset=2", flip_int32_value_5,
                         "int32 element 5 (physical 7): expected ");
}

static void flip_float_sign_bit_3(struct ArrowSchema* s, struct ArrowDeviceArray* a) {
  ((uint32_t*)writable(&a->array, 1))[3] ^= 0x80000000u;
}
FERRY_TEST(floats_are_compared_bit_exactly) {
  /* seed 0, i = 0 gives 0.0f: flipping the sign gives -0.0f, equal as a
   * float, different in bits. */
  struct ArrowSchema schema;
  struct ArrowDeviceArray array;
  EXPORT_ARRAY_OK("float32:seed=0", &schema, &array);
  CHECK(((const float*)array.array.buffers[1])[0] == 0.0f);
  ferry_schema_release(&schema);
  ferry_device_array_release(&array);
  expect_tamper_detected("float32", flip_float_sign_bit_3,
                         "float32 element 3 (physical 3)");
}
static void flip_zero_sign(struct ArrowSchema* s, struct ArrowDeviceArray* a) {
  ((uint32_t*)writable(&a->array, 1))[0] ^= 0x80000000u;
}
FERRY_TEST(negative_zero_is_not_zero) {
  expect_tamper_detected("float32:seed=0", flip_zero_sign,
                         "float32 element 0 (physical 0)");
}

static void flip_validity_2(struct ArrowSchema* s, struct ArrowDeviceArray* a) {
  ((uint8_t*)writable(&a->array, 0))[0] ^= 1u << 2; /* element 2 is null with nulls=3 */
}
FERRY_TEST(flipped_validity_bit_is_named) {
  expect_tamper_detected(
      "int64:nulls=3", flip_validity_2,
      "int64 validity of element 2 (physical 2): expected null, got valid");
}

static void drop_validity(struct ArrowSchema* s, struct ArrowDeviceArray* a) {
  /* The plugin frees through its own records, not through buffers[], so
   * dropping the pointer leaks nothing. */
  a->array.buffers[0] = NULL;
}
FERRY_TEST(missing_validity_is_detected) {
  expect_tamper_detected("uint16:nulls=2", drop_validity,
                         "validity buffer is NULL, but 8");
}

static void bump_null_count(struct ArrowSchema* s, struct ArrowDeviceArray* a) {
  a->array.null_count += 1;
}
static void unknown_null_count(struct ArrowSchema* s, struct ArrowDeviceArray* a) {
  a->array.null_count = -1;
}
FERRY_TEST(null_count_must_be_exact) {
  expect_tamper_detected("int8:nulls=3", bump_null_count,
                         "int8 null_count: expected 5, got 6");
  expect_tamper_detected("int8:nulls=3", unknown_null_count,
                         "null_count: expected 5, got -1");
}

static void shorten(struct ArrowSchema* s, struct ArrowDeviceArray* a) {
  a->array.length -= 1;
}
FERRY_TEST(length_is_checked) {
  expect_tamper_detected("bool", shorten, "bool length: expected 16, got 15");
}

static void lower_offset(struct ArrowSchema* s, struct ArrowDeviceArray* a) {
  a->array.offset -= 1;
}
static void drop_offset(struct ArrowSchema* s, struct ArrowDeviceArray* a) {
  a->array.offset = 0;
}
FERRY_TEST(offset_is_checked) {
  expect_tamper_detected("utf8:offset=5", lower_offset, "utf8 offset: expected 5, got 4");
}

/* A checker that ignores the offset reads garbage: export with offset 5,
 * pretend the offset is 0, and check as an offset-0 case. */
static void expect_offset_ignoring_read_fails(const char* exported, const char* checked,
                                              const char* needle) {
  int64_t before = ferry_it_live_allocations();
  struct ArrowSchema schema;
  struct ArrowDeviceArray array;
  EXPORT_ARRAY_OK(exported, &schema, &array);
  drop_offset(&schema, &array);
  CHECK_EQ_INT(EINVAL, ferry_it_check_array(checked, &schema, &array));
  CHECK_CONTAINS(ferry_it_last_error(), needle);
  CHECK_EQ_INT(before, ferry_it_live_allocations());
}
FERRY_TEST(pre_offset_slots_fail_a_checker_that_ignores_offset) {
  expect_offset_ignoring_read_fails("int32:offset=5", "int32",
                                    "int32 element 0 (physical 0)");
  expect_offset_ignoring_read_fails("bool:offset=5", "bool", "bool element ");
  expect_offset_ignoring_read_fails("utf8:offset=5", "utf8", "utf8 element ");
  expect_offset_ignoring_read_fails("list_int32:offset=5", "list_int32",
                                    "list_int32 element ");
  expect_offset_ignoring_read_fails(
      "struct_int32_utf8:offset=5", "struct_int32_utf8",
      "struct_int32_utf8 child \"a\" element 0 (child position 0)");
  expect_offset_ignoring_read_fails("dict_int32_utf8:offset=5", "dict_int32_utf8",
                                    "dict_int32_utf8 element ");
}

/* Format and name: the schema is replaced by one the test builds, since the
 * exported schema owns its strings. */
static void wrong_format(struct ArrowSchema* s, struct ArrowDeviceArray* a) {
  ferry_schema_release(s);
  CHECK_EQ_INT(0, ferry_schema_init(s, "I", "int32", ARROW_FLAG_NULLABLE, 0, NULL));
}
static void wrong_name(struct ArrowSchema* s, struct ArrowDeviceArray* a) {
  ferry_schema_release(s);
  CHECK_EQ_INT(0, ferry_schema_init(s, "i", "x", ARROW_FLAG_NULLABLE, 0, NULL));
}
static void not_nullable(struct ArrowSchema* s, struct ArrowDeviceArray* a) {
  ferry_schema_release(s);
  CHECK_EQ_INT(0, ferry_schema_init(s, "i", "int32", 0, 0, NULL));
}
FERRY_TEST(schema_is_checked) {
  expect_tamper_detected("int32", wrong_format,
                         "int32 schema format: expected \"i\", got \"I\"");
  expect_tamper_detected("int32", wrong_name,
                         "int32 schema name: expected \"int32\", got \"x\"");
  expect_tamper_detected("int32", not_nullable, "must be nullable");
}

static void claim_sim(struct ArrowSchema* s, struct ArrowDeviceArray* a) {
  a->device_type = ARROW_DEVICE_EXT_DEV;
}
static void set_reserved(struct ArrowSchema* s, struct ArrowDeviceArray* a) {
  a->reserved[1] = 7;
}
FERRY_TEST(device_type_and_reserved_are_checked) {
  expect_tamper_detected("int32", claim_sim,
                         "device type: expected cpu (1), got ext_dev (12)");
  expect_tamper_detected("int32", set_reserved, "reserved word 1 is not zero");
}

static void change_utf8_byte(struct ArrowSchema* s, struct ArrowDeviceArray* a) {
  const int32_t* offsets = a->array.buffers[1];
  ((char*)writable(&a->array, 2))[offsets[1]] ^= 1; /* element 1 is never "" */
}
FERRY_TEST(utf8_bytes_are_checked) {
  expect_tamper_detected("utf8", change_utf8_byte,
                         "utf8 element 1 (physical 1): expected \"");
  expect_tamper_detected("binary", change_utf8_byte, "binary element 1 (physical 1)");
}

static void list_one_item_more(struct ArrowSchema* s, struct ArrowDeviceArray* a) {
  int32_t* offsets = writable(&a->array, 1);
  for (int64_t p = 1; p <= a->array.length; p++) offsets[p] += 1;
}
static void list_item_value(struct ArrowSchema* s, struct ArrowDeviceArray* a) {
  const int32_t* offsets = a->array.buffers[1];
  /* seed 1: u(2) = 2654516767, so list 2 holds 3 items. */
  ((int32_t*)writable(a->array.children[0], 1))[offsets[2]] ^= 4;
}
FERRY_TEST(list_offsets_and_items_are_checked) {
  expect_tamper_detected("list_int32", list_one_item_more,
                         "list_int32 element 0 (physical 0): expected ");
  expect_tamper_detected("list_int32", list_item_value,
                         "list_int32 element 2 (physical 2) item 0");
}

static void struct_b_byte(struct ArrowSchema* s, struct ArrowDeviceArray* a) {
  const struct ArrowArray* b = a->array.children[1];
  const int32_t* offsets = b->buffers[1];
  ((char*)writable(b, 2))[offsets[a->array.offset + 2]] ^= 1;
}
static void struct_a_value(struct ArrowSchema* s, struct ArrowDeviceArray* a) {
  ((int32_t*)writable(a->array.children[0], 1))[a->array.offset + 4] ^= 1;
}
FERRY_TEST(struct_children_are_checked) {
  expect_tamper_detected("struct_int32_utf8:offset=3", struct_a_value,
                         "struct_int32_utf8 child \"a\" element 4 (child position 7)");
  expect_tamper_detected("struct_int32_utf8:offset=3", struct_b_byte,
                         "struct_int32_utf8 child \"b\" element 2 (child position 5)");
}

static void dict_index(struct ArrowSchema* s, struct ArrowDeviceArray* a) {
  int32_t* indices = writable(&a->array, 1);
  indices[6] = (indices[6] + 1) % 7;
}
static void dict_value(struct ArrowSchema* s, struct ArrowDeviceArray* a) {
  ((char*)writable(a->array.dictionary, 2))[5] = '9'; /* "d2" -> "d9" */
}
FERRY_TEST(dictionary_is_checked) {
  expect_tamper_detected("dict_int32_utf8", dict_index,
                         "dict_int32_utf8 element 6 (physical 6)");
  expect_tamper_detected(
      "dict_int32_utf8", dict_value,
      "dict_int32_utf8 dictionary element 2: expected \"d2\", got \"d9\"");
}

static void bool_value(struct ArrowSchema* s, struct ArrowDeviceArray* a) {
  ((uint8_t*)writable(&a->array, 1))[1] ^= 1u << 1; /* element 9 */
}
FERRY_TEST(bool_values_are_checked) {
  expect_tamper_detected("bool", bool_value, "bool element 9 (physical 9)");
}

FERRY_TEST_MAIN()
