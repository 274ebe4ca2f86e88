/* Streams: round trips on cpu and sim, every failure injection, read both
 * through the plugin's checker and by hand through the raw callbacks. */
#include "it_test_support.h"

static void stream_roundtrip(const char* spec) {
  int64_t before = ferry_it_live_allocations();
  int64_t exports_before = ferry_live_exports();
  struct ArrowDeviceArrayStream stream;
  memset(&stream, 0, sizeof(stream));
  CHECK_IT_OK(ferry_it_export_stream(spec, &stream), spec);
  CHECK_IT_OK(ferry_it_check_stream(spec, &stream), spec);
  CHECK(stream.release == NULL);
  CHECK_EQ_INT(before, ferry_it_live_allocations());
  CHECK_EQ_INT(exports_before, ferry_live_exports());
}

FERRY_TEST(every_type_streams_on_cpu_and_sim) {
  const char* devices[] = {"cpu", "sim"};
  const char* variants[] = {"",
                            ":nulls=3",
                            ":offset=5",
                            ":length=0",
                            ":length=100000:batches=2",
                            ":batches=0",
                            ":batches=1:nulls=3:offset=5:seed=4294967295"};
  const int n_variants = (int)(sizeof(variants) / sizeof(variants[0]));
  char spec[160];
  for (int d = 0; d < 2; d++) {
    for (int t = 0; t < IT_TEST_N_TYPES; t++) {
      for (int v = 0; v < n_variants; v++) {
        snprintf(spec, sizeof spec, "%s%s:device=%s", it_test_types[t], variants[v],
                 devices[d]);
        stream_roundtrip(spec);
      }
    }
  }
}

FERRY_TEST(large_stream_round_trips) {
  stream_roundtrip("utf8:length=100000:batches=4:nulls=7:device=sim");
}

/* Reads a stream by hand: batch b must hold seed + b (checked by giving each
 * batch to the array checker with the shifted seed). */
FERRY_TEST(batches_use_seed_plus_b) {
  int64_t before = ferry_it_live_allocations();
  struct ArrowDeviceArrayStream stream;
  memset(&stream, 0, sizeof(stream));
  CHECK_IT_OK(ferry_it_export_stream("int32:seed=4294967294:batches=3", &stream),
              "stream");
  CHECK_EQ_INT(ARROW_DEVICE_CPU, stream.device_type);
  const char* per_batch[] = {"int32:seed=4294967294", "int32:seed=4294967295",
                             "int32:seed=0"};
  for (int b = 0; b < 3; b++) {
    struct ArrowSchema schema;
    memset(&schema, 0, sizeof(schema));
    CHECK_EQ_INT(0, stream.get_schema(&stream, &schema));
    struct ArrowDeviceArray batch;
    memset(&batch, 0, sizeof(batch));
    CHECK_EQ_INT(0, stream.get_next(&stream, &batch));
    CHECK(batch.array.release != NULL);
    CHECK_IT_OK(ferry_it_check_array(per_batch[b], &schema, &batch), per_batch[b]);
  }
  struct ArrowDeviceArray end;
  memset(&end, 0, sizeof(end));
  CHECK_EQ_INT(0, stream.get_next(&stream, &end));
  CHECK(end.array.release == NULL);
  stream.release(&stream);
  CHECK_EQ_INT(before, ferry_it_live_allocations());
}

FERRY_TEST(fail_get_next_n_by_hand) {
  for (int n = 1; n <= 4; n++) {
    int64_t before = ferry_it_live_allocations();
    char spec[64], expected[64];
    snprintf(spec, sizeof spec, "int8:batches=3:fail=get_next@%d", n);
    snprintf(expected, sizeof expected, "injected failure at get_next %d", n);
    struct ArrowDeviceArrayStream stream;
    memset(&stream, 0, sizeof(stream));
    CHECK_IT_OK(ferry_it_export_stream(spec, &stream), spec);
    for (int call = 1; call < n; call++) {
      struct ArrowDeviceArray batch;
      memset(&batch, 0, sizeof(batch));
      CHECK_EQ_INT(0, stream.get_next(&stream, &batch));
      CHECK(batch.array.release != NULL);
      batch.array.release(&batch.array);
    }
    struct ArrowDeviceArray failed;
    memset(&failed, 0, sizeof(failed));
    CHECK_EQ_INT(EIO, stream.get_next(&stream, &failed));
    CHECK(failed.array.release == NULL);
    CHECK_STR(expected, stream.get_last_error(&stream));
    stream.release(&stream);
    CHECK_EQ_INT(before, ferry_it_live_allocations());
  }
}

FERRY_TEST(fail_get_schema_by_hand) {
  struct ArrowDeviceArrayStream stream;
  memset(&stream, 0, sizeof(stream));
  CHECK_IT_OK(ferry_it_export_stream("utf8:fail=get_schema:device=sim", &stream),
              "stream");
  struct ArrowSchema schema;
  memset(&schema, 0, sizeof(schema));
  CHECK_EQ_INT(EIO, stream.get_schema(&stream, &schema));
  CHECK(schema.release == NULL);
  CHECK_STR("injected failure at get_schema", stream.get_last_error(&stream));
  stream.release(&stream);
}

FERRY_TEST(checker_expects_every_injected_failure) {
  const char* specs[] = {
      "int32:fail=get_schema",
      "int32:batches=3:fail=get_next@1",
      "int32:batches=3:fail=get_next@2:device=sim",
      "list_int32:batches=3:fail=get_next@3:nulls=2",
      "struct_int32_utf8:batches=3:fail=get_next@4", /* replaces the end of stream */
      "dict_int32_utf8:batches=3:fail=get_next@9",   /* never reached: a plain stream */
      "bool:batches=0:fail=get_next@1:device=sim",
  };
  for (size_t k = 0; k < sizeof(specs) / sizeof(specs[0]); k++)
    stream_roundtrip(specs[k]);
}

FERRY_TEST(fail_export_fails_both_entry_points_without_allocating) {
  const char* specs[] = {"int32:fail=export", "utf8:fail=export:device=sim"};
  for (int k = 0; k < 2; k++)
    expect_export_fails(specs[k], EIO, "injected failure at export", 1);
}

/* Negative: the stream checker notices what differs from its case. */
static void expect_stream_check_failure(const char* exported, const char* checked,
                                        const char* needle) {
  int64_t before = ferry_it_live_allocations();
  struct ArrowDeviceArrayStream stream;
  memset(&stream, 0, sizeof(stream));
  CHECK_IT_OK(ferry_it_export_stream(exported, &stream), exported);
  CHECK(ferry_it_check_stream(checked, &stream) != 0);
  CHECK_CONTAINS(ferry_it_last_error(), needle);
  CHECK(stream.release == NULL);
  CHECK_EQ_INT(before, ferry_it_live_allocations());
}

FERRY_TEST(stream_checker_rejects_mismatches) {
  expect_stream_check_failure("int32:batches=3", "int32:batches=2",
                              "more than 2 batches");
  expect_stream_check_failure("int32:batches=2", "int32:batches=3",
                              "stream ended after 2 batches, expected 3");
  expect_stream_check_failure("int32:batches=2", "int32:batches=2:seed=2",
                              "batch 0: int32 element 0 (physical 0): expected ");
  expect_stream_check_failure("int32:batches=2:seed=5", "int32:batches=2:seed=4",
                              "batch 0: int32 element 0");
  expect_stream_check_failure("int32", "int64",
                              "schema format: expected \"l\", got \"i\"");
  expect_stream_check_failure("int32", "int32:device=sim",
                              "stream device type: expected sim");
  expect_stream_check_failure("int32:batches=3", "int32:batches=3:fail=get_next@2",
                              "get_next call 2 succeeded, expected the injected failure");
  expect_stream_check_failure(
      "int32:fail=get_next@1", "int32",
      "get_next call 1 failed with EIO (5): injected failure at get_next 1");
  expect_stream_check_failure("int32:fail=get_next@2", "int32:fail=get_next@1",
                              "get_next call 1 succeeded");
  expect_stream_check_failure("int32", "int32:fail=get_schema", "get_schema succeeded");
  expect_stream_check_failure(
      "int32:fail=get_schema", "int32",
      "get_schema failed with EIO (5): injected failure at get_schema");
}

FERRY_TEST_MAIN()
