/* The case grammar through the entry points: defaults, stream-only keys that
 * array entry points ignore, and one test per error class, each checking
 * that the message names the offending part and nothing was allocated. */
#include <pthread.h>

#include "it_test_support.h"

/* One row per malformed case: the case and a part of the EINVAL message
 * that must name what is wrong. */
static const struct {
  const char* spec;
  const char* needle;
} kBadCases[] = {
    /* Unknown keys and types are named with the case. */
    {"int32:lenght=3", "unknown key \"lenght\" in case \"int32:lenght=3\""},
    {"int33:length=3", "unknown type \"int33\" in case \"int33:length=3\""},
    {"", "unknown type \"\""},
    {"INT32", "unknown type \"INT32\""},
    {"list_int32x", "unknown type \"list_int32x\""},
    /* Malformed numbers are named with their key. */
    {"int32:length=3x", "malformed number \"3x\" for key \"length\""},
    {"int32:length=", "malformed number \"\" for key \"length\""},
    {"int32:nulls=+3", "malformed number \"+3\" for key \"nulls\""},
    {"int32:offset= 1", "malformed number \" 1\" for key \"offset\""},
    {"int32:seed=0x10", "malformed number \"0x10\" for key \"seed\""},
    {"int32:batches=two", "malformed number \"two\" for key \"batches\""},
    /* Negative and out-of-range numbers. */
    {"int32:length=-3", "negative length \"-3\""},
    {"int32:offset=-1", "negative offset \"-1\""},
    {"int32:nulls=-2", "negative nulls \"-2\""},
    {"int32:seed=-1", "negative seed \"-1\""},
    {"int32:seed=4294967296", "seed \"4294967296\" out of range (0 to 4294967295)"},
    {"int32:length=99999999999999999999999",
     "length \"99999999999999999999999\" out of range"},
    {"int32:length=268435456:offset=1", "length 268435456 plus offset 1 exceeds"},
    /* Duplicate keys and malformed KEY=VALUE pairs. */
    {"int32:seed=1:length=2:seed=1", "duplicate key \"seed\""},
    {"int32:length", "malformed KEY=VALUE \"length\""},
    {"int32:", "malformed KEY=VALUE \"\""},
    {"int32:=3", "malformed KEY=VALUE \"=3\""},
    /* Unknown devices and fail modes. */
    {"int32:device=tpu", "unknown device \"tpu\""},
    {"int32:fail=later", "unknown fail mode \"later\""},
    {"int32:fail=get_next@0", "fail=get_next@0"},
    {"int32:fail=get_next@x", "malformed number \"x\""},
    {"int32:fail=get_next@", "malformed number \"\""},
};

FERRY_TEST(each_malformed_case_is_refused_with_what_is_wrong) {
  for (size_t k = 0; k < sizeof kBadCases / sizeof kBadCases[0]; k++) {
    expect_export_error(kBadCases[k].spec, EINVAL, kBadCases[k].needle);
  }
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
