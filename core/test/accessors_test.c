/* Tests of core/src/accessors.c on hand-built structs: field reads, NULL
 * safety, index bounds and the binary metadata encoding (well-formed,
 * unaligned and malformed). */
#include <errno.h>
#include <stdint.h>

#include "ferry/ferry.h"
#include "ferry_test.h"

static void noop_schema_release(struct ArrowSchema* schema) { schema->release = NULL; }
static void noop_array_release(struct ArrowArray* array) { array->release = NULL; }

/* Appends an int32 (native endian) at *p, unaligned-safe. */
static char* put_int32(char* p, int32_t v) {
  memcpy(p, &v, sizeof(v));
  return p + sizeof(v);
}
static char* put_bytes(char* p, const char* s, int32_t n) {
  p = put_int32(p, n);
  memcpy(p, s, (size_t)n);
  return p + n;
}

FERRY_TEST(null_structs_answer_zero_or_null) {
  CHECK_EQ_INT(1, ferry_schema_is_released(NULL));
  CHECK(ferry_schema_format(NULL) == NULL);
  CHECK(ferry_schema_name(NULL) == NULL);
  CHECK(ferry_schema_metadata(NULL) == NULL);
  CHECK_EQ_INT(0, ferry_schema_flags(NULL));
  CHECK_EQ_INT(0, ferry_schema_n_children(NULL));
  CHECK(ferry_schema_child(NULL, 0) == NULL);
  CHECK(ferry_schema_dictionary(NULL) == NULL);
  CHECK_EQ_INT(0, ferry_schema_metadata_count(NULL));
  int32_t len = 99;
  CHECK(ferry_schema_metadata_key(NULL, 0, &len) == NULL);
  CHECK_EQ_INT(0, len);
  CHECK(ferry_schema_metadata_value(NULL, 0, NULL) == NULL);

  CHECK_EQ_INT(1, ferry_array_is_released(NULL));
  CHECK_EQ_INT(0, ferry_array_length(NULL));
  CHECK_EQ_INT(0, ferry_array_null_count(NULL));
  CHECK_EQ_INT(0, ferry_array_offset(NULL));
  CHECK_EQ_INT(0, ferry_array_n_buffers(NULL));
  CHECK_EQ_INT(0, ferry_array_n_children(NULL));
  CHECK(ferry_array_buffer(NULL, 0) == NULL);
  CHECK(ferry_array_child(NULL, 0) == NULL);
  CHECK(ferry_array_dictionary(NULL) == NULL);

  CHECK(ferry_device_array_array(NULL) == NULL);
  CHECK_EQ_INT(1, ferry_device_array_is_released(NULL));
  CHECK_EQ_INT(0, ferry_device_array_device_id(NULL));
  CHECK_EQ_INT(0, ferry_device_array_device_type(NULL));
  CHECK(ferry_device_array_sync_event(NULL) == NULL);
  CHECK_EQ_INT(0, ferry_device_array_reserved_is_zero(NULL));
}

FERRY_TEST(schema_fields_children_and_dictionary) {
  struct ArrowSchema child0 = {
      .format = "i", .name = "a", .release = noop_schema_release};
  struct ArrowSchema child1 = {
      .format = "u", .name = "b", .release = noop_schema_release};
  struct ArrowSchema dictionary = {.format = "u", .release = noop_schema_release};
  struct ArrowSchema* children[2] = {&child0, &child1};
  struct ArrowSchema schema = {.format = "+s",
                               .name = "root",
                               .flags = ARROW_FLAG_NULLABLE,
                               .n_children = 2,
                               .children = children,
                               .dictionary = &dictionary,
                               .release = noop_schema_release};
  CHECK_EQ_INT(0, ferry_schema_is_released(&schema));
  CHECK_STR("+s", ferry_schema_format(&schema));
  CHECK_STR("root", ferry_schema_name(&schema));
  CHECK(ferry_schema_metadata(&schema) == NULL);
  CHECK_EQ_INT(0, ferry_schema_metadata_count(&schema));
  CHECK_EQ_INT(ARROW_FLAG_NULLABLE, ferry_schema_flags(&schema));
  CHECK_EQ_INT(2, ferry_schema_n_children(&schema));
  CHECK(ferry_schema_child(&schema, 0) == &child0);
  CHECK(ferry_schema_child(&schema, 1) == &child1);
  CHECK(ferry_schema_child(&schema, 2) == NULL);
  CHECK(ferry_schema_child(&schema, -1) == NULL);
  CHECK(ferry_schema_dictionary(&schema) == &dictionary);
  CHECK_STR("b", ferry_schema_name(ferry_schema_child(&schema, 1)));
  /* A NULL children list with a positive count is answered with NULL. */
  schema.children = NULL;
  CHECK(ferry_schema_child(&schema, 0) == NULL);
  schema.release = NULL;
  CHECK_EQ_INT(1, ferry_schema_is_released(&schema));
}

FERRY_TEST(metadata_pairs_are_parsed) {
  char blob[128];
  char* p = put_int32(blob, 2);
  p = put_bytes(p, "k1", 2);
  p = put_bytes(p, "value-one", 9);
  p = put_bytes(p, "", 0);
  p = put_bytes(p, "v2", 2);
  struct ArrowSchema schema = {
      .format = "i", .metadata = blob, .release = noop_schema_release};
  CHECK(ferry_schema_metadata(&schema) == blob);
  CHECK_EQ_INT(2, ferry_schema_metadata_count(&schema));
  int32_t len = -1;
  const char* key = ferry_schema_metadata_key(&schema, 0, &len);
  CHECK_EQ_INT(2, len);
  CHECK(key != NULL && memcmp(key, "k1", 2) == 0);
  const char* value = ferry_schema_metadata_value(&schema, 0, &len);
  CHECK_EQ_INT(9, len);
  CHECK(value != NULL && memcmp(value, "value-one", 9) == 0);
  key = ferry_schema_metadata_key(&schema, 1, &len);
  CHECK(key != NULL);
  CHECK_EQ_INT(0, len);
  value = ferry_schema_metadata_value(&schema, 1, &len);
  CHECK_EQ_INT(2, len);
  CHECK(memcmp(value, "v2", 2) == 0);
  CHECK(ferry_schema_metadata_key(&schema, 2, &len) == NULL);
  CHECK_EQ_INT(0, len);
  CHECK(ferry_schema_metadata_value(&schema, -1, &len) == NULL);
  /* The length pointer is optional. */
  CHECK(ferry_schema_metadata_key(&schema, 0, NULL) == blob + 8);
  CHECK(ferry_schema_metadata_value(&schema, 1, NULL) == value);
}

FERRY_TEST(metadata_at_an_odd_address_is_read_safely) {
  /* Producers may place metadata anywhere; UBSan flags misaligned loads. */
  char storage[64];
  char* blob = storage + 1;
  char* p = put_int32(blob, 1);
  p = put_bytes(p, "key", 3);
  put_bytes(p, "val", 3);
  struct ArrowSchema schema = {
      .format = "i", .metadata = blob, .release = noop_schema_release};
  CHECK_EQ_INT(1, ferry_schema_metadata_count(&schema));
  int32_t len = 0;
  const char* value = ferry_schema_metadata_value(&schema, 0, &len);
  CHECK_EQ_INT(3, len);
  CHECK(memcmp(value, "val", 3) == 0);
}

FERRY_TEST(empty_metadata_has_zero_pairs) {
  char blob[4];
  put_int32(blob, 0);
  struct ArrowSchema schema = {
      .format = "i", .metadata = blob, .release = noop_schema_release};
  CHECK_EQ_INT(0, ferry_schema_metadata_count(&schema));
  CHECK(ferry_schema_metadata_key(&schema, 0, NULL) == NULL);
}

FERRY_TEST(malformed_metadata_is_rejected) {
  char blob[64];
  struct ArrowSchema schema = {
      .format = "i", .metadata = blob, .release = noop_schema_release};
  int32_t len = 5;

  /* Negative pair count. */
  put_int32(blob, -1);
  CHECK_EQ_INT(-1, ferry_schema_metadata_count(&schema));
  CHECK(ferry_schema_metadata_key(&schema, 0, &len) == NULL);
  CHECK_EQ_INT(0, len);

  /* Negative key length in the first pair. */
  char* p = put_int32(blob, 1);
  put_int32(p, -7);
  CHECK_EQ_INT(-1, ferry_schema_metadata_count(&schema));
  CHECK(ferry_schema_metadata_key(&schema, 0, &len) == NULL);

  /* Negative value length. */
  p = put_int32(blob, 1);
  p = put_bytes(p, "k", 1);
  put_int32(p, INT32_MIN);
  CHECK_EQ_INT(-1, ferry_schema_metadata_count(&schema));
  CHECK(ferry_schema_metadata_value(&schema, 0, &len) == NULL);

  /* A good first pair followed by a bad second one: the whole blob is
   * malformed, so even pair 0 is not handed out. */
  p = put_int32(blob, 2);
  p = put_bytes(p, "k", 1);
  p = put_bytes(p, "v", 1);
  put_int32(p, -1);
  CHECK_EQ_INT(-1, ferry_schema_metadata_count(&schema));
  CHECK(ferry_schema_metadata_key(&schema, 0, &len) == NULL);
  CHECK(ferry_schema_metadata_value(&schema, 0, &len) == NULL);
}

FERRY_TEST(array_fields_buffers_children_and_dictionary) {
  int32_t values[4] = {1, 2, 3, 4};
  uint8_t validity[1] = {0x0F};
  const void* buffers[2] = {validity, values};
  struct ArrowArray child = {.length = 4, .release = noop_array_release};
  struct ArrowArray* children[1] = {&child};
  struct ArrowArray dictionary = {.length = 2, .release = noop_array_release};
  struct ArrowArray array = {.length = 3,
                             .null_count = 1,
                             .offset = 1,
                             .n_buffers = 2,
                             .n_children = 1,
                             .buffers = buffers,
                             .children = children,
                             .dictionary = &dictionary,
                             .release = noop_array_release};
  CHECK_EQ_INT(0, ferry_array_is_released(&array));
  CHECK_EQ_INT(3, ferry_array_length(&array));
  CHECK_EQ_INT(1, ferry_array_null_count(&array));
  CHECK_EQ_INT(1, ferry_array_offset(&array));
  CHECK_EQ_INT(2, ferry_array_n_buffers(&array));
  CHECK_EQ_INT(1, ferry_array_n_children(&array));
  CHECK(ferry_array_buffer(&array, 0) == validity);
  CHECK(ferry_array_buffer(&array, 1) == values);
  CHECK(ferry_array_buffer(&array, 2) == NULL);
  CHECK(ferry_array_buffer(&array, -1) == NULL);
  CHECK(ferry_array_child(&array, 0) == &child);
  CHECK(ferry_array_child(&array, 1) == NULL);
  CHECK(ferry_array_child(&array, -5) == NULL);
  CHECK(ferry_array_dictionary(&array) == &dictionary);
  array.buffers = NULL; /* broken producer: count says 2, table missing */
  CHECK(ferry_array_buffer(&array, 0) == NULL);
  array.children = NULL;
  CHECK(ferry_array_child(&array, 0) == NULL);
}

FERRY_TEST(device_array_fields_and_reserved) {
  int event = 0;
  struct ArrowDeviceArray array;
  memset(&array, 0, sizeof(array));
  array.array.release = noop_array_release;
  array.array.length = 10;
  array.device_id = 3;
  array.device_type = ARROW_DEVICE_CUDA;
  array.sync_event = &event;
  CHECK(ferry_device_array_array(&array) == &array.array);
  CHECK_EQ_INT(10, ferry_array_length(ferry_device_array_array(&array)));
  CHECK_EQ_INT(0, ferry_device_array_is_released(&array));
  CHECK_EQ_INT(3, ferry_device_array_device_id(&array));
  CHECK_EQ_INT(ARROW_DEVICE_CUDA, ferry_device_array_device_type(&array));
  CHECK(ferry_device_array_sync_event(&array) == &event);
  CHECK_EQ_INT(1, ferry_device_array_reserved_is_zero(&array));
  for (int i = 0; i < 3; i++) {
    array.reserved[i] = 1;
    CHECK_EQ_INT(0, ferry_device_array_reserved_is_zero(&array));
    array.reserved[i] = 0;
  }
  array.array.release = NULL;
  CHECK_EQ_INT(1, ferry_device_array_is_released(&array));
}

FERRY_TEST_MAIN()
