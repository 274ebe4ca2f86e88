/* Tests of core/src/producer.c: ferry_schema_init and friends,
 * ferry_array_init and friends, ferry_device_array_init, and the
 * live-export counter. Every test ends with the counter at its baseline. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>

#include "ferry/ferry.h"
#include "ferry_test.h"

/* A release-order log: hooks append their tag, tests compare the string. */
static char order_log[64];
static void log_tag(char tag) {
  size_t n = strlen(order_log);
  if (n + 1 < sizeof(order_log)) {
    order_log[n] = tag;
    order_log[n + 1] = '\0';
  }
}
static void hook_log(void* user_data) { log_tag(*(const char*)user_data); }

static int hook_calls;
static void hook_count(void* user_data) {
  hook_calls++;
  if (user_data != NULL) (*(int*)user_data)++;
}

static void reset(void) {
  order_log[0] = '\0';
  hook_calls = 0;
}

/* ---- Schemas ------------------------------------------------------------- */

FERRY_TEST(schema_init_owns_copies_of_its_strings) {
  int64_t base = ferry_live_exports();
  char format[8] = "i", name[8] = "col";
  struct ArrowSchema schema = {0};
  struct FerryError error;
  CHECK_EQ_INT(FERRY_OK,
               ferry_schema_init(&schema, format, name, ARROW_FLAG_NULLABLE, 0, &error));
  CHECK_EQ_INT(base + 1, ferry_live_exports());
  format[0] = 'X';
  name[0] = 'X';
  CHECK_STR("i", ferry_schema_format(&schema));
  CHECK_STR("col", ferry_schema_name(&schema));
  CHECK_EQ_INT(ARROW_FLAG_NULLABLE, ferry_schema_flags(&schema));
  CHECK_EQ_INT(0, ferry_schema_n_children(&schema));
  CHECK(ferry_schema_metadata(&schema) == NULL);
  CHECK(ferry_schema_dictionary(&schema) == NULL);
  ferry_schema_release(&schema);
  CHECK(ferry_schema_is_released(&schema));
  CHECK_EQ_INT(base, ferry_live_exports());
}

FERRY_TEST(schema_init_without_name) {
  int64_t base = ferry_live_exports();
  struct ArrowSchema schema = {0};
  CHECK_EQ_INT(FERRY_OK, ferry_schema_init(&schema, "u", NULL, 0, 0, NULL));
  CHECK(ferry_schema_name(&schema) == NULL);
  ferry_schema_release(&schema);
  CHECK_EQ_INT(base, ferry_live_exports());
}

FERRY_TEST(schema_children_are_released_once_and_unfilled_slots_skipped) {
  int64_t base = ferry_live_exports();
  struct ArrowSchema schema = {0};
  CHECK_EQ_INT(FERRY_OK, ferry_schema_init(&schema, "+s", "root", 0, 3, NULL));
  for (int64_t i = 0; i < 3; i++) {
    CHECK(ferry_schema_child(&schema, i) != NULL);
    CHECK(ferry_schema_is_released(ferry_schema_child(&schema, i)));
  }
  CHECK(ferry_schema_child(&schema, 3) == NULL);
  CHECK_EQ_INT(FERRY_OK,
               ferry_schema_init(ferry_schema_child(&schema, 0), "i", "a", 0, 0, NULL));
  CHECK_EQ_INT(FERRY_OK,
               ferry_schema_init(ferry_schema_child(&schema, 1), "+l", "b", 0, 1, NULL));
  CHECK_EQ_INT(FERRY_OK,
               ferry_schema_init(ferry_schema_child(ferry_schema_child(&schema, 1), 0),
                                 "u", "item", 0, 0, NULL));
  /* Child 2 is left unfilled on purpose. */
  CHECK_EQ_INT(base + 4, ferry_live_exports());
  CHECK_STR("item",
            ferry_schema_name(ferry_schema_child(ferry_schema_child(&schema, 1), 0)));
  ferry_schema_release(&schema);
  CHECK_EQ_INT(base, ferry_live_exports());
}

FERRY_TEST(schema_child_moved_out_is_not_released_by_the_parent) {
  int64_t base = ferry_live_exports();
  struct ArrowSchema schema = {0}, moved = {0};
  CHECK_EQ_INT(FERRY_OK, ferry_schema_init(&schema, "+s", NULL, 0, 1, NULL));
  CHECK_EQ_INT(FERRY_OK, ferry_schema_init(schema.children[0], "i", "x", 0, 0, NULL));
  CHECK_EQ_INT(FERRY_OK, ferry_schema_move(schema.children[0], &moved));
  ferry_schema_release(&schema);
  CHECK_EQ_INT(base + 1, ferry_live_exports());
  CHECK_STR("x", ferry_schema_name(&moved));
  ferry_schema_release(&moved);
  CHECK_EQ_INT(base, ferry_live_exports());
}

FERRY_TEST(schema_init_errors_leave_out_released) {
  int64_t base = ferry_live_exports();
  struct FerryError error;
  struct ArrowSchema schema = {0};
  CHECK_EQ_INT(EINVAL, ferry_schema_init(NULL, "i", NULL, 0, 0, &error));
  CHECK_CONTAINS(error.message, "out is NULL");
  CHECK_EQ_INT(EINVAL, ferry_schema_init(&schema, NULL, NULL, 0, 0, &error));
  CHECK_CONTAINS(error.message, "format is NULL");
  CHECK(ferry_schema_is_released(&schema));
  CHECK_EQ_INT(EINVAL, ferry_schema_init(&schema, "+s", NULL, 0, -1, &error));
  CHECK_CONTAINS(error.message, "n_children");
  CHECK(ferry_schema_is_released(&schema));
  CHECK_EQ_INT(FERRY_OK, ferry_schema_init(&schema, "i", NULL, 0, 0, &error));
  /* A live out is refused and left alone (not leaked, not clobbered). */
  CHECK_EQ_INT(EINVAL, ferry_schema_init(&schema, "u", NULL, 0, 0, &error));
  CHECK_CONTAINS(error.message, "live");
  CHECK_STR("i", ferry_schema_format(&schema));
  ferry_schema_release(&schema);
  CHECK_EQ_INT(base, ferry_live_exports());
}

FERRY_TEST(schema_metadata_round_trips_through_the_accessors) {
  int64_t base = ferry_live_exports();
  struct ArrowSchema schema = {0};
  struct FerryError error;
  CHECK_EQ_INT(FERRY_OK, ferry_schema_init(&schema, "i", "m", 0, 0, NULL));
  CHECK_EQ_INT(FERRY_OK, ferry_schema_add_metadata(&schema, "ARROW:extension:name",
                                                   "ferry.test", &error));
  CHECK_EQ_INT(FERRY_OK, ferry_schema_add_metadata(&schema, "empty", "", &error));
  CHECK_EQ_INT(FERRY_OK, ferry_schema_add_metadata(&schema, "k3", "third value", &error));
  CHECK_EQ_INT(3, ferry_schema_metadata_count(&schema));
  int32_t len;
  const char* key = ferry_schema_metadata_key(&schema, 0, &len);
  CHECK_EQ_INT(20, len);
  CHECK(memcmp(key, "ARROW:extension:name", 20) == 0);
  const char* value = ferry_schema_metadata_value(&schema, 0, &len);
  CHECK_EQ_INT(10, len);
  CHECK(memcmp(value, "ferry.test", 10) == 0);
  ferry_schema_metadata_value(&schema, 1, &len);
  CHECK_EQ_INT(0, len);
  value = ferry_schema_metadata_value(&schema, 2, &len);
  CHECK_EQ_INT(11, len);
  CHECK(memcmp(value, "third value", 11) == 0);
  /* The raw blob starts with the pair count. */
  int32_t n_pairs;
  memcpy(&n_pairs, ferry_schema_metadata(&schema), sizeof(n_pairs));
  CHECK_EQ_INT(3, n_pairs);
  CHECK_EQ_INT(EINVAL, ferry_schema_add_metadata(&schema, NULL, "v", &error));
  CHECK_CONTAINS(error.message, "key is NULL");
  CHECK_EQ_INT(EINVAL, ferry_schema_add_metadata(&schema, "k", NULL, &error));
  CHECK_CONTAINS(error.message, "value is NULL");
  ferry_schema_release(&schema);
  CHECK_EQ_INT(base, ferry_live_exports());
}

static void foreign_schema_release(struct ArrowSchema* schema) { schema->release = NULL; }

FERRY_TEST(metadata_and_dictionary_refuse_foreign_or_released_schemas) {
  struct FerryError error;
  struct ArrowSchema foreign = {.format = "i", .release = foreign_schema_release};
  struct ArrowSchema* dictionary = NULL;
  CHECK_EQ_INT(EINVAL, ferry_schema_add_metadata(&foreign, "k", "v", &error));
  CHECK_CONTAINS(error.message, "not made by ferry_schema_init");
  CHECK_EQ_INT(EINVAL, ferry_schema_allocate_dictionary(&foreign, &dictionary, &error));
  CHECK_EQ_INT(EINVAL, ferry_schema_add_metadata(NULL, "k", "v", &error));
  struct ArrowSchema released = {0};
  CHECK_EQ_INT(EINVAL, ferry_schema_allocate_dictionary(&released, &dictionary, &error));
  CHECK(dictionary == NULL);
}

FERRY_TEST(schema_dictionary_is_owned_and_released_once) {
  int64_t base = ferry_live_exports();
  struct ArrowSchema schema = {0};
  struct ArrowSchema* dictionary = NULL;
  struct FerryError error;
  CHECK_EQ_INT(FERRY_OK, ferry_schema_init(&schema, "i", "dict_col", 0, 0, NULL));
  CHECK_EQ_INT(FERRY_OK, ferry_schema_allocate_dictionary(&schema, &dictionary, &error));
  CHECK(dictionary != NULL && ferry_schema_dictionary(&schema) == dictionary);
  CHECK(ferry_schema_is_released(dictionary));
  CHECK_EQ_INT(FERRY_OK, ferry_schema_init(dictionary, "u", NULL, 0, 0, NULL));
  struct ArrowSchema* again = NULL;
  CHECK_EQ_INT(EINVAL, ferry_schema_allocate_dictionary(&schema, &again, &error));
  CHECK_CONTAINS(error.message, "already has a dictionary");
  CHECK_EQ_INT(base + 2, ferry_live_exports());
  ferry_schema_release(&schema);
  CHECK_EQ_INT(base, ferry_live_exports());
}

FERRY_TEST(unfilled_schema_dictionary_is_freed) {
  int64_t base = ferry_live_exports();
  struct ArrowSchema schema = {0};
  struct ArrowSchema* dictionary = NULL;
  CHECK_EQ_INT(FERRY_OK, ferry_schema_init(&schema, "i", NULL, 0, 0, NULL));
  CHECK_EQ_INT(FERRY_OK, ferry_schema_allocate_dictionary(&schema, &dictionary, NULL));
  ferry_schema_release(&schema); /* valgrind/ASan check the slot is freed */
  CHECK_EQ_INT(base, ferry_live_exports());
}

/* ---- Arrays -------------------------------------------------------------- */

FERRY_TEST(array_init_points_at_the_callers_buffers) {
  int64_t base = ferry_live_exports();
  reset();
  int32_t values[3] = {1, 2, 3};
  uint8_t validity[1] = {0x05};
  const void* buffers[2] = {validity, values};
  int hook_hits = 0;
  struct ArrowArray array = {0};
  struct FerryError error;
  CHECK_EQ_INT(FERRY_OK, ferry_array_init(&array, 3, 1, 0, 2, buffers, 0, hook_count,
                                          &hook_hits, &error));
  CHECK_EQ_INT(base + 1, ferry_live_exports());
  buffers[1] = NULL; /* the table was copied */
  /* The fields as the ABI lays them out (accessors_test reads them through
   * the accessors). */
  CHECK_EQ_INT(3, array.length);
  CHECK_EQ_INT(1, array.null_count);
  CHECK_EQ_INT(0, array.offset);
  CHECK_EQ_INT(2, array.n_buffers);
  CHECK_EQ_INT(0, array.n_children);
  CHECK(array.buffers[0] == validity);
  CHECK(array.buffers[1] == values);
  CHECK(array.dictionary == NULL);
  CHECK_EQ_INT(0, hook_hits);
  ferry_array_release(&array);
  ferry_array_release(&array);
  CHECK_EQ_INT(1, hook_hits);
  CHECK_EQ_INT(base, ferry_live_exports());
}

FERRY_TEST(array_init_with_null_buffer_table_and_set_buffer) {
  int64_t base = ferry_live_exports();
  int64_t data[2] = {7, 8};
  struct ArrowArray array = {0};
  struct FerryError error;
  CHECK_EQ_INT(FERRY_OK,
               ferry_array_init(&array, 2, 0, 0, 2, NULL, 0, NULL, NULL, &error));
  CHECK(ferry_array_buffer(&array, 0) == NULL && ferry_array_buffer(&array, 1) == NULL);
  CHECK_EQ_INT(FERRY_OK, ferry_array_set_buffer(&array, 1, data, &error));
  CHECK(ferry_array_buffer(&array, 1) == data);
  CHECK_EQ_INT(EINVAL, ferry_array_set_buffer(&array, 2, data, &error));
  CHECK_CONTAINS(error.message, "buffer index 2 out of range");
  CHECK_EQ_INT(EINVAL, ferry_array_set_buffer(&array, -1, data, &error));
  ferry_array_release(&array);
  CHECK_EQ_INT(EINVAL, ferry_array_set_buffer(&array, 0, data, &error));
  CHECK_CONTAINS(error.message, "not made by ferry_array_init");
  CHECK_EQ_INT(base, ferry_live_exports());
}

FERRY_TEST(array_init_with_many_buffers_uses_the_large_layout) {
  int64_t base = ferry_live_exports();
  static const char bytes[8][4] = {"a", "b", "c", "d", "e", "f", "g", "h"};
  const void* buffers[8];
  for (int i = 0; i < 8; i++) buffers[i] = bytes[i];
  struct ArrowArray array = {0};
  CHECK_EQ_INT(FERRY_OK,
               ferry_array_init(&array, 1, 0, 0, 8, buffers, 0, NULL, NULL, NULL));
  for (int i = 0; i < 8; i++) CHECK(ferry_array_buffer(&array, i) == bytes[i]);
  CHECK_EQ_INT(FERRY_OK, ferry_array_set_buffer(&array, 7, bytes[0], NULL));
  CHECK(ferry_array_buffer(&array, 7) == bytes[0]);
  ferry_array_release(&array);
  CHECK_EQ_INT(base, ferry_live_exports());
}

FERRY_TEST(array_release_order_children_dictionary_then_hook) {
  int64_t base = ferry_live_exports();
  reset();
  static const char parent_tag = 'P', child0_tag = '0', child1_tag = '1', dict_tag = 'D';
  struct ArrowArray array = {0};
  CHECK_EQ_INT(FERRY_OK, ferry_array_init(&array, 2, 0, 0, 1, NULL, 3, hook_log,
                                          (void*)&parent_tag, NULL));
  CHECK_EQ_INT(3, ferry_array_n_children(&array));
  for (int i = 0; i < 3; i++)
    CHECK(ferry_array_is_released(ferry_array_child(&array, i)));
  CHECK_EQ_INT(FERRY_OK, ferry_array_init(ferry_array_child(&array, 0), 2, 0, 0, 1, NULL,
                                          0, hook_log, (void*)&child0_tag, NULL));
  CHECK_EQ_INT(FERRY_OK, ferry_array_init(ferry_array_child(&array, 1), 2, 0, 0, 2, NULL,
                                          0, hook_log, (void*)&child1_tag, NULL));
  /* child 2 stays unfilled: it must simply be skipped */
  struct ArrowArray* dictionary = NULL;
  CHECK_EQ_INT(FERRY_OK, ferry_array_allocate_dictionary(&array, &dictionary, NULL));
  CHECK(ferry_array_dictionary(&array) == dictionary);
  CHECK_EQ_INT(FERRY_OK, ferry_array_init(dictionary, 5, 0, 0, 3, NULL, 0, hook_log,
                                          (void*)&dict_tag, NULL));
  CHECK_EQ_INT(base + 4, ferry_live_exports());
  ferry_array_release(&array);
  CHECK_STR("01DP", order_log);
  ferry_array_release(&array);
  CHECK_STR("01DP", order_log);
  CHECK_EQ_INT(base, ferry_live_exports());
}

FERRY_TEST(array_child_moved_out_survives_the_parent) {
  int64_t base = ferry_live_exports();
  reset();
  int child_hits = 0, parent_hits = 0;
  struct ArrowArray array = {0}, moved = {0};
  CHECK_EQ_INT(FERRY_OK, ferry_array_init(&array, 1, 0, 0, 1, NULL, 1, hook_count,
                                          &parent_hits, NULL));
  CHECK_EQ_INT(FERRY_OK, ferry_array_init(array.children[0], 1, 0, 0, 2, NULL, 0,
                                          hook_count, &child_hits, NULL));
  CHECK_EQ_INT(FERRY_OK, ferry_array_move(array.children[0], &moved));
  ferry_array_release(&array);
  CHECK_EQ_INT(1, parent_hits);
  CHECK_EQ_INT(0, child_hits);
  ferry_array_release(&moved);
  CHECK_EQ_INT(1, child_hits);
  CHECK_EQ_INT(base, ferry_live_exports());
}

FERRY_TEST(array_dictionary_twice_and_unfilled) {
  int64_t base = ferry_live_exports();
  struct ArrowArray array = {0};
  struct ArrowArray* dictionary = NULL;
  struct FerryError error;
  CHECK_EQ_INT(FERRY_OK, ferry_array_init(&array, 1, 0, 0, 2, NULL, 0, NULL, NULL, NULL));
  CHECK_EQ_INT(FERRY_OK, ferry_array_allocate_dictionary(&array, &dictionary, &error));
  CHECK_EQ_INT(EINVAL, ferry_array_allocate_dictionary(&array, &dictionary, &error));
  CHECK_CONTAINS(error.message, "already has a dictionary");
  CHECK_EQ_INT(EINVAL, ferry_array_allocate_dictionary(&array, NULL, &error));
  ferry_array_release(&array);
  struct ArrowArray released = {0};
  CHECK_EQ_INT(EINVAL, ferry_array_allocate_dictionary(&released, &dictionary, &error));
  CHECK_CONTAINS(error.message, "not made by ferry_array_init");
  CHECK_EQ_INT(base, ferry_live_exports());
}

FERRY_TEST(array_init_errors_do_not_call_the_hook) {
  int64_t base = ferry_live_exports();
  reset();
  struct ArrowArray array = {0};
  struct FerryError error;
  CHECK_EQ_INT(EINVAL,
               ferry_array_init(NULL, 1, 0, 0, 0, NULL, 0, hook_count, NULL, &error));
  CHECK_CONTAINS(error.message, "out is NULL");
  CHECK_EQ_INT(EINVAL,
               ferry_array_init(&array, -1, 0, 0, 0, NULL, 0, hook_count, NULL, &error));
  CHECK_CONTAINS(error.message, "length (-1)");
  CHECK_EQ_INT(EINVAL,
               ferry_array_init(&array, 1, -2, 0, 0, NULL, 0, hook_count, NULL, &error));
  CHECK_EQ_INT(EINVAL,
               ferry_array_init(&array, 1, 0, -1, 0, NULL, 0, hook_count, NULL, &error));
  CHECK_EQ_INT(EINVAL,
               ferry_array_init(&array, 1, 0, 0, -1, NULL, 0, hook_count, NULL, &error));
  CHECK_CONTAINS(error.message, "n_buffers (-1)");
  CHECK_EQ_INT(EINVAL,
               ferry_array_init(&array, 1, 0, 0, 0, NULL, -1, hook_count, NULL, &error));
  CHECK(ferry_array_is_released(&array));
  CHECK_EQ_INT(FERRY_OK,
               ferry_array_init(&array, 1, -1, 0, 0, NULL, 0, hook_count, NULL, &error));
  CHECK_EQ_INT(EINVAL,
               ferry_array_init(&array, 1, 0, 0, 0, NULL, 0, hook_count, NULL, &error));
  CHECK_CONTAINS(error.message, "live array");
  CHECK_EQ_INT(-1, ferry_array_null_count(&array));
  CHECK_EQ_INT(0, hook_calls);
  ferry_array_release(&array);
  CHECK_EQ_INT(1, hook_calls);
  CHECK_EQ_INT(base, ferry_live_exports());
}

/* ---- Device arrays ----------------------------------------------------- */

FERRY_TEST(device_array_init_moves_the_array_in_and_zeroes_reserved) {
  int64_t base = ferry_live_exports();
  reset();
  int32_t values[2] = {1, 2};
  const void* buffers[2] = {NULL, values};
  int hook_hits = 0;
  struct ArrowArray array = {0};
  CHECK_EQ_INT(FERRY_OK, ferry_array_init(&array, 2, 0, 0, 2, buffers, 0, hook_count,
                                          &hook_hits, NULL));
  void* private_data = array.private_data;
  struct ArrowDeviceArray device_array;
  memset(&device_array, 0xFF, sizeof(device_array)); /* garbage ... */
  device_array.array.release = NULL;                 /* ... but released */
  CHECK_EQ_INT(FERRY_OK, ferry_device_array_init(&device_array, &array, ARROW_DEVICE_CPU,
                                                 -1, NULL, NULL, NULL, NULL));
  CHECK(ferry_array_is_released(&array));
  CHECK(device_array.array.private_data == private_data); /* no wrapper */
  CHECK_EQ_INT(1, ferry_device_array_reserved_is_zero(&device_array));
  CHECK_EQ_INT(ARROW_DEVICE_CPU, ferry_device_array_device_type(&device_array));
  CHECK_EQ_INT(-1, ferry_device_array_device_id(&device_array));
  CHECK(ferry_device_array_sync_event(&device_array) == NULL);
  CHECK(ferry_array_buffer(ferry_device_array_array(&device_array), 1) == values);
  CHECK_EQ_INT(base + 1, ferry_live_exports());
  ferry_device_array_release(&device_array);
  CHECK_EQ_INT(1, hook_hits);
  CHECK_EQ_INT(base, ferry_live_exports());
}

FERRY_TEST(device_array_init_defines_every_byte_after_the_array) {
  /* Garbage in `out` (device_type's padding included) must not survive:
   * tools compare and hash whole structs. */
  int64_t base = ferry_live_exports();
  int32_t values[1] = {5};
  const void* buffers[2] = {NULL, values};
  int event = 0;
  struct ArrowArray array = {0};
  CHECK_EQ_INT(FERRY_OK,
               ferry_array_init(&array, 1, 0, 0, 2, buffers, 0, NULL, NULL, NULL));
  struct ArrowArray expected_array = array;
  struct ArrowDeviceArray out;
  memset(&out, 0xEE, sizeof(out));
  out.array.release = NULL;
  CHECK_EQ_INT(FERRY_OK, ferry_device_array_init(&out, &array, ARROW_DEVICE_EXT_DEV, 3,
                                                 &event, NULL, NULL, NULL));
  CHECK_EQ_INT(0, memcmp(&out.array, &expected_array, sizeof(expected_array)));
  struct ArrowDeviceArray expected;
  memset(&expected, 0, sizeof(expected));
  expected.array = expected_array;
  expected.device_id = 3;
  expected.device_type = ARROW_DEVICE_EXT_DEV;
  expected.sync_event = &event;
  CHECK_EQ_INT(0, memcmp(&out, &expected, sizeof(out)));
  ferry_device_array_release(&out);
  CHECK_EQ_INT(base, ferry_live_exports());
}

FERRY_TEST(recycled_array_blocks_start_clean) {
  /* Released small arrays are recycled; a new export must not inherit the
   * old one's dictionary, buffers or hook, for any buffer count, and the
   * recycling must stay exact past the free list's capacity (64). */
  int64_t base = ferry_live_exports();
  reset();
  int32_t a[1] = {1}, b[1] = {2}, c[1] = {3};
  const void* buffers[3] = {a, b, c};
  enum { kMany = 150 };
  static struct ArrowArray arrays[kMany];
  int hook_hits = 0;
  for (int round = 0; round < 2; round++) {
    for (int i = 0; i < kMany; i++) {
      memset(&arrays[i], 0, sizeof(arrays[i]));
      int64_t n_buffers = i % 4;
      CHECK_EQ_INT(FERRY_OK, ferry_array_init(&arrays[i], i, 0, 0, n_buffers, buffers, 0,
                                              hook_count, &hook_hits, NULL));
      CHECK_EQ_INT(n_buffers, ferry_array_n_buffers(&arrays[i]));
      for (int64_t k = 0; k < n_buffers; k++) {
        CHECK(ferry_array_buffer(&arrays[i], k) == buffers[k]);
      }
      CHECK(ferry_array_dictionary(&arrays[i]) == NULL);
      CHECK(arrays[i].children == NULL && arrays[i].n_children == 0);
      /* Every third array gets a dictionary, filled or not, so that its
       * block returns to the list after having had one. */
      if (i % 3 == 0) {
        struct ArrowArray* dictionary = NULL;
        CHECK_EQ_INT(FERRY_OK,
                     ferry_array_allocate_dictionary(&arrays[i], &dictionary, NULL));
        if (i % 2 == 0) {
          CHECK_EQ_INT(FERRY_OK, ferry_array_init(dictionary, 1, 0, 0, 1, buffers, 0,
                                                  NULL, NULL, NULL));
        }
      }
    }
    CHECK(ferry_live_exports() > base + kMany - 1);
    for (int i = 0; i < kMany; i++) ferry_array_release(&arrays[i]);
    CHECK_EQ_INT(base, ferry_live_exports());
    CHECK_EQ_INT((round + 1) * kMany, hook_hits);
  }
  CHECK_EQ_INT(2 * kMany, hook_calls);
}

FERRY_TEST(device_array_event_hook_runs_once_after_the_array) {
  int64_t base = ferry_live_exports();
  reset();
  static const char array_tag = 'A', event_tag = 'E';
  int event_handle = 0;
  struct ArrowArray array = {0};
  CHECK_EQ_INT(FERRY_OK, ferry_array_init(&array, 4, 0, 0, 2, NULL, 0, hook_log,
                                          (void*)&array_tag, NULL));
  struct ArrowDeviceArray device_array = {0};
  CHECK_EQ_INT(FERRY_OK,
               ferry_device_array_init(&device_array, &array, ARROW_DEVICE_EXT_DEV, 1,
                                       &event_handle, hook_log, (void*)&event_tag, NULL));
  CHECK(ferry_device_array_sync_event(&device_array) == &event_handle);
  CHECK_EQ_INT(4, ferry_array_length(&device_array.array));
  CHECK_EQ_INT(2, ferry_array_n_buffers(&device_array.array));
  CHECK_EQ_INT(1, ferry_device_array_reserved_is_zero(&device_array));
  CHECK_EQ_INT(base + 2, ferry_live_exports()); /* the array and the event wrapper */
  /* The consumer may move the device array before releasing it. */
  struct ArrowDeviceArray consumer = {0};
  CHECK_EQ_INT(FERRY_OK, ferry_device_array_move(&device_array, &consumer));
  ferry_device_array_release(&device_array);
  CHECK_STR("", order_log);
  ferry_device_array_release(&consumer);
  ferry_device_array_release(&consumer);
  CHECK_STR("AE", order_log);
  CHECK_EQ_INT(base, ferry_live_exports());
}

static void foreign_array_release(struct ArrowArray* array) {
  hook_count(array->private_data);
  array->release = NULL;
}

FERRY_TEST(device_array_init_accepts_foreign_arrays_and_in_place_upgrade) {
  int64_t base = ferry_live_exports();
  reset();
  int foreign_hits = 0, event_hits = 0;
  struct ArrowDeviceArray device_array = {0};
  device_array.array.release = foreign_array_release;
  device_array.array.private_data = &foreign_hits;
  device_array.array.length = 9;
  /* out's own embedded array moved into out: a legal in-place upgrade. */
  CHECK_EQ_INT(FERRY_OK, ferry_device_array_init(&device_array, &device_array.array,
                                                 ARROW_DEVICE_CPU, -1, NULL, hook_count,
                                                 &event_hits, NULL));
  CHECK(!ferry_device_array_is_released(&device_array));
  CHECK_EQ_INT(9, ferry_array_length(&device_array.array));
  CHECK_EQ_INT(base + 1, ferry_live_exports());
  ferry_device_array_release(&device_array);
  CHECK_EQ_INT(1, foreign_hits);
  CHECK_EQ_INT(1, event_hits);
  CHECK_EQ_INT(base, ferry_live_exports());
}

FERRY_TEST(device_array_init_errors_move_nothing_and_run_no_hook) {
  int64_t base = ferry_live_exports();
  reset();
  struct FerryError error;
  struct ArrowArray array = {0};
  struct ArrowDeviceArray device_array = {0};
  CHECK_EQ_INT(EINVAL, ferry_device_array_init(&device_array, &array, ARROW_DEVICE_CPU,
                                               -1, NULL, hook_count, NULL, &error));
  CHECK_CONTAINS(error.message, "released");
  CHECK_EQ_INT(FERRY_OK, ferry_array_init(&array, 1, 0, 0, 2, NULL, 0, NULL, NULL, NULL));
  CHECK_EQ_INT(EINVAL, ferry_device_array_init(NULL, &array, ARROW_DEVICE_CPU, -1, NULL,
                                               hook_count, NULL, &error));
  CHECK_CONTAINS(error.message, "out is NULL");
  CHECK_EQ_INT(EINVAL, ferry_device_array_init(&device_array, NULL, ARROW_DEVICE_CPU, -1,
                                               NULL, hook_count, NULL, &error));
  CHECK_CONTAINS(error.message, "array is NULL");
  CHECK_EQ_INT(EINVAL, ferry_device_array_init(&device_array, &array, 0, -1, NULL,
                                               hook_count, NULL, &error));
  CHECK_CONTAINS(error.message, "invalid device type");
  CHECK(!ferry_array_is_released(&array));
  struct ArrowArray other = {0};
  CHECK_EQ_INT(FERRY_OK, ferry_array_init(&other, 1, 0, 0, 2, NULL, 0, NULL, NULL, NULL));
  CHECK_EQ_INT(FERRY_OK, ferry_device_array_init(&device_array, &other, ARROW_DEVICE_CPU,
                                                 -1, NULL, NULL, NULL, &error));
  CHECK_EQ_INT(EINVAL, ferry_device_array_init(&device_array, &array, ARROW_DEVICE_CPU,
                                               -1, NULL, hook_count, NULL, &error));
  CHECK_CONTAINS(error.message, "live device array");
  CHECK(!ferry_array_is_released(&array));
  CHECK_EQ_INT(0, hook_calls);
  ferry_array_release(&array);
  ferry_device_array_release(&device_array);
  CHECK_EQ_INT(0, hook_calls);
  CHECK_EQ_INT(base, ferry_live_exports());
}

/* ---- Threads: export on one thread, release on another ----------------- */

#define THREAD_BATCHES 200

struct ThreadHandoff {
  struct ArrowDeviceArray arrays[THREAD_BATCHES];
  int hook_hits;
};

static void* release_all(void* arg) {
  struct ThreadHandoff* handoff = (struct ThreadHandoff*)arg;
  for (int i = 0; i < THREAD_BATCHES; i++)
    ferry_device_array_release(&handoff->arrays[i]);
  return NULL;
}

static void* export_all(void* arg) {
  struct ThreadHandoff* handoff = (struct ThreadHandoff*)arg;
  static int32_t values[4] = {1, 2, 3, 4};
  const void* buffers[2] = {NULL, values};
  for (int i = 0; i < THREAD_BATCHES; i++) {
    struct ArrowArray array = {0};
    if (ferry_array_init(&array, 4, 0, 0, 2, buffers, 0, hook_count, &handoff->hook_hits,
                         NULL) != FERRY_OK) {
      return (void*)1;
    }
    memset(&handoff->arrays[i], 0, sizeof(handoff->arrays[i]));
    if (ferry_device_array_init(&handoff->arrays[i], &array, ARROW_DEVICE_CPU, -1, NULL,
                                NULL, NULL, NULL) != FERRY_OK) {
      return (void*)1;
    }
  }
  return NULL;
}

FERRY_TEST(exports_released_on_other_threads_are_counted_and_freed) {
  int64_t base = ferry_live_exports();
  reset();
  static struct ThreadHandoff handoff;
  memset(&handoff, 0, sizeof(handoff));
  for (int round = 0; round < 3; round++) {
    pthread_t producer, consumer;
    void* result = NULL;
    CHECK_EQ_INT(0, pthread_create(&producer, NULL, export_all, &handoff));
    CHECK_EQ_INT(0, pthread_join(producer, &result));
    CHECK(result == NULL);
    CHECK_EQ_INT(base + THREAD_BATCHES, ferry_live_exports());
    CHECK_EQ_INT(0, pthread_create(&consumer, NULL, release_all, &handoff));
    CHECK_EQ_INT(0, pthread_join(consumer, NULL));
    CHECK_EQ_INT(base, ferry_live_exports());
  }
  CHECK_EQ_INT(3 * THREAD_BATCHES, hook_calls);
}

FERRY_TEST_MAIN()
