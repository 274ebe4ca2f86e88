/* Every export of the plugin is a valid Arrow device array according to
 * ferry's own validator at FULL level (offsets, UTF-8, null counts, device
 * residency), so the cases other runtimes check are well-formed. */
#include "it_test_support.h"

static void on_finding(void* user_data, const char* rule, const char* where,
                       const char* what) {
  printf("  finding [%s] %s: %s (case %s)\n", rule, where, what, (const char*)user_data);
}

static void validate(const char* spec) {
  struct ArrowSchema schema;
  struct ArrowDeviceArray array;
  EXPORT_ARRAY_OK(spec, &schema, &array);
  struct FerryError error;
  ferry_error_init(&error);
  /* The data is in flight on the sim until the event is waited on. */
  CHECK_EQ_INT(0, ferry_device_array_wait(&array, NULL, &error));
  int rc = ferry_validate_schema(&schema, on_finding, (void*)spec, &error);
  if (rc == 0) {
    rc = ferry_validate_device_array(&schema, &array, FERRY_VALIDATE_FULL, on_finding,
                                     (void*)spec, &error);
  }
  ferry_schema_release(&schema);
  ferry_device_array_release(&array);
  if (rc != 0) {
    char message[1300];
    snprintf(message, sizeof message, "case \"%s\": %s", spec,
             ferry_error_message(&error));
    ferry_test_fail(__FILE__, __LINE__, message);
  }
}

FERRY_TEST(every_export_passes_full_validation) {
  const char* devices[] = {"cpu", "sim"};
  const char* variants[] = {
      "",          ":nulls=3",          ":offset=5",
      ":length=0", ":nulls=1:offset=3", ":length=1000:nulls=7:offset=9"};
  for (int d = 0; d < 2; d++) {
    for (int t = 0; t < IT_TEST_N_TYPES; t++) {
      for (int v = 0; v < (int)(sizeof(variants) / sizeof(variants[0])); v++) {
        char spec[128];
        snprintf(spec, sizeof spec, "%s%s:device=%s", it_test_types[t], variants[v],
                 devices[d]);
        validate(spec);
      }
    }
  }
}

FERRY_TEST(every_stream_batch_passes_full_validation) {
  struct ArrowDeviceArrayStream stream;
  memset(&stream, 0, sizeof(stream));
  CHECK_IT_OK(
      ferry_it_export_stream("struct_int32_utf8:nulls=2:offset=1:device=sim", &stream),
      "stream");
  struct ArrowSchema schema;
  memset(&schema, 0, sizeof(schema));
  CHECK_EQ_INT(0, stream.get_schema(&stream, &schema));
  int batches = 0;
  for (;;) {
    struct ArrowDeviceArray batch;
    memset(&batch, 0, sizeof(batch));
    CHECK_EQ_INT(0, stream.get_next(&stream, &batch));
    if (batch.array.release == NULL) break;
    struct FerryError error;
    ferry_error_init(&error);
    CHECK_EQ_INT(0, ferry_device_array_wait(&batch, NULL, &error));
    int rc = ferry_validate_device_array(&schema, &batch, FERRY_VALIDATE_FULL, NULL, NULL,
                                         &error);
    batch.array.release(&batch.array);
    CHECK_STR("", ferry_error_message(&error));
    CHECK_EQ_INT(0, rc);
    batches++;
  }
  CHECK_EQ_INT(3, batches);
  schema.release(&schema);
  stream.release(&stream);
}

FERRY_TEST_MAIN()
