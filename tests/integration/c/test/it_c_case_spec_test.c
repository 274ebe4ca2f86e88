/* The case grammar through the entry points: defaults, stream-only keys that
 * array entry points ignore, and one test per error class, each checking
 * that the message names the offending part and nothing was allocated. */
#include <pthread.h>

#include "it_test_support.h"

FERRY_TEST(unknown_key_is_named_with_the_case) {
  expect_export_error("int32:lenght=3", EINVAL,
                      "unknown key \"lenght\" in case \"int32:lenght=3\"");
}

FERRY_TEST(unknown_type_is_named) {
  expect_export_error("int33:length=3", EINVAL,
                      "unknown type \"int33\" in case \"int33:length=3\"");
  expect_export_error("", EINVAL, "unknown type \"\"");
  expect_export_error("INT32", EINVAL, "unknown type \"INT32\"");
  expect_export_error("list_int32x", EINVAL, "unknown type \"list_int32x\"");
}

FERRY_TEST(malformed_numbers_are_named_with_their_key) {
  expect_export_error("int32:length=3x", EINVAL,
                      "malformed number \"3x\" for key \"length\"");
  expect_export_error("int32:length=", EINVAL,
                      "malformed number \"\" for key \"length\"");
  expect_export_error("int32:nulls=+3", EINVAL,
                      "malformed number \"+3\" for key \"nulls\"");
  expect_export_error("int32:offset= 1", EINVAL,
                      "malformed number \" 1\" for key \"offset\"");
  expect_export_error("int32:seed=0x10", EINVAL,
                      "malformed number \"0x10\" for key \"seed\"");
  expect_export_error("int32:batches=two", EINVAL,
                      "malformed number \"two\" for key \"batches\"");
}

FERRY_TEST(negative_numbers_are_errors) {
  expect_export_error("int32:length=-3", EINVAL, "negative length \"-3\"");
  expect_export_error("int32:offset=-1", EINVAL, "negative offset \"-1\"");
  expect_export_error("int32:nulls=-2", EINVAL, "negative nulls \"-2\"");
  expect_export_error("int32:seed=-1", EINVAL, "negative seed \"-1\"");
}

FERRY_TEST(out_of_range_numbers_are_errors) {
  expect_export_error("int32:seed=4294967296", EINVAL,
                      "seed \"4294967296\" out of range (0 to 4294967295)");
  expect_export_error("int32:length=99999999999999999999999", EINVAL,
                      "length \"99999999999999999999999\" out of range");
  expect_export_error("int32:length=268435456:offset=1", EINVAL,
                      "length 268435456 plus offset 1 exceeds");
}

FERRY_TEST(duplicate_keys_are_errors) {
  expect_export_error("int32:seed=1:length=2:seed=1", EINVAL, "duplicate key \"seed\"");
}

FERRY_TEST(malformed_pairs_are_errors) {
  expect_export_error("int32:length", EINVAL, "malformed KEY=VALUE \"length\"");
  expect_export_error("int32:", EINVAL, "malformed KEY=VALUE \"\"");
  expect_export_error("int32:=3", EINVAL, "malformed KEY=VALUE \"=3\"");
}

FERRY_TEST(unknown_devices_and_fail_modes_are_errors) {
  expect_export_error("int32:device=tpu", EINVAL, "unknown device \"tpu\"");
  expect_export_error("int32:fail=later", EINVAL, "unknown fail mode \"later\"");
  expect_export_error("int32:fail=get_next@0", EINVAL, "fail=get_next@0");
  expect_export_error("int32:fail=get_next@x", EINVAL, "malformed number \"x\"");
  expect_export_error("int32:fail=get_next@", EINVAL, "malformed number \"\"");
}

FERRY_TEST(null_case_string_is_an_error) {
  struct ArrowSchema schema;
  struct ArrowDeviceArray array;
  memset(&schema, 0, sizeof(schema));
  memset(&array, 0, sizeof(array));
  CHECK_EQ_INT(EINVAL, ferry_it_export_array(NULL, &schema, &array));
  CHECK_CONTAINS(ferry_it_last_error(), "NULL");
  CHECK_EQ_INT(EINVAL, ferry_it_export_array("int32", NULL, &array));
  CHECK_EQ_INT(EINVAL, ferry_it_check_array(NULL, NULL, NULL));
  CHECK_EQ_INT(EINVAL, ferry_it_check_stream(NULL, NULL));
}

FERRY_TEST(defaults_are_length_16_seed_1_no_nulls_offset_0_cpu) {
  struct ArrowSchema schema;
  struct ArrowDeviceArray array;
  EXPORT_ARRAY_OK("int32", &schema, &array);
  CHECK_EQ_INT(16, array.array.length);
  CHECK_EQ_INT(0, array.array.offset);
  CHECK_EQ_INT(0, array.array.null_count);
  CHECK(array.array.buffers[0] == NULL);
  CHECK_EQ_INT(ARROW_DEVICE_CPU, array.device_type);
  /* seed 1: u(0) = 2654435761, read as int32. */
  CHECK_EQ_INT((int32_t)2654435761u, ((const int32_t*)array.array.buffers[1])[0]);
  CHECK_IT_OK(ferry_it_check_array("int32:length=16:seed=1:nulls=0:offset=0:device=cpu",
                                   &schema, &array),
              "explicit defaults");
}

FERRY_TEST(seed_bounds_are_accepted) {
  const char* specs[] = {"int32:seed=0", "int32:seed=4294967295", "int32:seed=0004"};
  for (int k = 0; k < 3; k++) {
    struct ArrowSchema schema;
    struct ArrowDeviceArray array;
    EXPORT_ARRAY_OK(specs[k], &schema, &array);
    CHECK_IT_OK(ferry_it_check_array(specs[k], &schema, &array), specs[k]);
  }
}

FERRY_TEST(array_entry_points_ignore_stream_only_keys) {
  const char* specs[] = {"int32:batches=7", "int32:fail=get_next@2",
                         "int32:fail=get_schema",
                         "utf8:batches=0:fail=get_next@1:nulls=2"};
  for (int k = 0; k < 4; k++) {
    int64_t before = ferry_it_live_allocations();
    struct ArrowSchema schema;
    struct ArrowDeviceArray array;
    EXPORT_ARRAY_OK(specs[k], &schema, &array);
    CHECK_IT_OK(ferry_it_check_array(specs[k], &schema, &array), specs[k]);
    CHECK_EQ_INT(before, ferry_it_live_allocations());
  }
}

FERRY_TEST(check_with_a_bad_case_still_takes_ownership) {
  expect_check_refused("int32", "int32:lenght=3", "unknown key \"lenght\"");

  int64_t before = ferry_it_live_allocations();
  struct ArrowDeviceArrayStream stream;
  memset(&stream, 0, sizeof(stream));
  CHECK_IT_OK(ferry_it_export_stream("int32", &stream), "int32");
  CHECK_EQ_INT(EINVAL, ferry_it_check_stream("int32:bogus=1", &stream));
  CHECK_CONTAINS(ferry_it_last_error(), "unknown key \"bogus\"");
  CHECK(stream.release == NULL);
  CHECK_EQ_INT(before, ferry_it_live_allocations());
}

static void* fail_on_another_thread(void* message_out) {
  struct ArrowSchema schema;
  struct ArrowDeviceArray array;
  memset(&schema, 0, sizeof(schema));
  memset(&array, 0, sizeof(array));
  const char* fresh = ferry_it_last_error();
  int empty_at_start = fresh != NULL && fresh[0] == '\0';
  (void)ferry_it_export_array("int32:color=red", &schema, &array);
  snprintf((char*)message_out, 256, "%d|%s", empty_at_start, ferry_it_last_error());
  return NULL;
}

FERRY_TEST(last_error_is_per_thread) {
  struct ArrowSchema schema;
  struct ArrowDeviceArray array;
  memset(&schema, 0, sizeof(schema));
  memset(&array, 0, sizeof(array));
  CHECK_EQ_INT(EINVAL, ferry_it_export_array("int32:lenght=1", &schema, &array));
  char other[256] = "";
  pthread_t thread;
  CHECK_EQ_INT(0, pthread_create(&thread, NULL, fail_on_another_thread, other));
  CHECK_EQ_INT(0, pthread_join(thread, NULL));
  /* The other thread started with "" and saw only its own failure... */
  CHECK_CONTAINS(other, "1|unknown key \"color\"");
  /* ...and did not overwrite this thread's message. */
  CHECK_CONTAINS(ferry_it_last_error(), "unknown key \"lenght\"");
}

FERRY_TEST_MAIN()
