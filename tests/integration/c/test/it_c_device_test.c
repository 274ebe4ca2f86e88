/* Device behaviour of the plugin: sim exports are asynchronous (strict mode
 * serves poison until the event is waited on), the checker waits before
 * reading, and unavailable devices give a clear error naming the device. */
#include <stdlib.h>

#include "it_test_support.h"

FERRY_TEST(sim_export_is_in_flight_until_waited_on) {
  ferry_sim_set_strict(1);
  CHECK_EQ_INT(1, ferry_sim_is_strict());
  struct ArrowSchema schema;
  struct ArrowDeviceArray array;
  EXPORT_ARRAY_OK("int32:length=64:device=sim", &schema, &array);
  CHECK(array.sync_event != NULL);
  /* A consumer that skips the wait reads poison: every byte, every time. */
  const uint8_t* bytes = array.array.buffers[1];
  for (int k = 0; k < 64 * 4; k++) CHECK_EQ_INT(FERRY_SIM_POISON_BYTE, bytes[k]);
  /* After waiting, the real data is there. */
  CHECK_EQ_INT(0, ferry_device_array_wait(&array, NULL, NULL));
  CHECK_EQ_INT((int32_t)2654435761u, ((const int32_t*)array.array.buffers[1])[0]);
  CHECK_IT_OK(ferry_it_check_array("int32:length=64:device=sim", &schema, &array), "sim");
}

FERRY_TEST(checker_waits_before_reading_in_strict_mode) {
  ferry_sim_set_strict(1);
  for (int t = 0; t < IT_TEST_N_TYPES; t++) {
    char spec[96];
    snprintf(spec, sizeof spec, "%s:device=sim:nulls=3:offset=2:length=40",
             it_test_types[t]);
    struct ArrowSchema schema;
    struct ArrowDeviceArray array;
    EXPORT_ARRAY_OK(spec, &schema, &array);
    /* Untouched since export: only a checker that waits can pass. */
    CHECK_IT_OK(ferry_it_check_array(spec, &schema, &array), spec);
  }
}

/* A sim array whose event is dropped: the data never arrives for a reader
 * that trusts it, and the checker must notice poison, not pass. */
FERRY_TEST(checker_sees_poison_when_the_producer_hides_its_event) {
  ferry_sim_set_strict(1);
  int64_t before = ferry_it_live_allocations();
  struct ArrowSchema schema;
  struct ArrowDeviceArray array;
  EXPORT_ARRAY_OK("int32:device=sim", &schema, &array);
  void* event = array.sync_event;
  array.sync_event = NULL;
  CHECK(ferry_it_check_array("int32:device=sim", &schema, &array) != 0);
  CHECK_CONTAINS(ferry_it_last_error(),
                 "int32 element 0 (physical 0): expected -1640531535, got ");
  CHECK(event != NULL);
  CHECK_EQ_INT(before, ferry_it_live_allocations());
}

/* The path a checker takes for GPU memory (wait, deep copy to the host,
 * check the copy), exercised on the sim device. */
FERRY_TEST(checker_host_copy_path_round_trips_every_type) {
  CHECK_EQ_INT(0, setenv("FERRY_IT_C_FORCE_HOST_COPY", "1", 1));
  int64_t before = ferry_it_live_allocations();
  const char* variants[] = {"", ":nulls=3:offset=5:length=50", ":length=0"};
  for (int t = 0; t < IT_TEST_N_TYPES; t++) {
    for (int v = 0; v < 3; v++) {
      char spec[96];
      snprintf(spec, sizeof spec, "%s:device=sim%s", it_test_types[t], variants[v]);
      struct ArrowSchema schema;
      struct ArrowDeviceArray array;
      EXPORT_ARRAY_OK(spec, &schema, &array);
      int rc = ferry_it_check_array(spec, &schema, &array);
      if (rc != 0) unsetenv("FERRY_IT_C_FORCE_HOST_COPY");
      CHECK_IT_OK(rc, spec);
    }
  }
  /* The copy still catches a wrong value. */
  struct ArrowSchema schema;
  struct ArrowDeviceArray array;
  EXPORT_ARRAY_OK("int32:device=sim:seed=4", &schema, &array);
  int rc = ferry_it_check_array("int32:device=sim:seed=5", &schema, &array);
  unsetenv("FERRY_IT_C_FORCE_HOST_COPY");
  CHECK_EQ_INT(EINVAL, rc);
  CHECK_CONTAINS(ferry_it_last_error(), "int32 element 0 (physical 0)");
  CHECK_EQ_INT(before, ferry_it_live_allocations());
}

static void expect_unavailable(const char* device_word, ArrowDeviceType type) {
  char spec[64];
  snprintf(spec, sizeof spec, "int32:device=%s", device_word);
  struct FerryDevice* device = NULL;
  struct FerryError reason;
  ferry_error_init(&reason);
  int resolved = ferry_device_resolve(type, 0, &device, &reason);
  if (resolved == 0) {
    /* The device exists here: the generic device path must work on it. */
    printf("NOTE %s is available; round-tripping on it instead\n", device_word);
    struct ArrowSchema schema;
    struct ArrowDeviceArray array;
    EXPORT_ARRAY_OK(spec, &schema, &array);
    CHECK_IT_OK(ferry_it_check_array(spec, &schema, &array), spec);
    return;
  }
  int64_t before = ferry_it_live_allocations();
  struct ArrowSchema schema;
  struct ArrowDeviceArray array;
  memset(&schema, 0, sizeof(schema));
  memset(&array, 0, sizeof(array));
  CHECK_EQ_INT(resolved, ferry_it_export_array(spec, &schema, &array));
  char needle[160];
  snprintf(needle, sizeof needle,
           "device \"%s\" is not available for case \"%s\": ", device_word, spec);
  CHECK_CONTAINS(ferry_it_last_error(), needle);
  /* ferry's own reason is passed on. */
  CHECK_CONTAINS(ferry_it_last_error(), ferry_error_message(&reason));
  CHECK(schema.release == NULL && array.array.release == NULL);

  struct ArrowDeviceArrayStream stream;
  memset(&stream, 0, sizeof(stream));
  CHECK_EQ_INT(resolved, ferry_it_export_stream(spec, &stream));
  CHECK_CONTAINS(ferry_it_last_error(), needle);
  CHECK(stream.release == NULL);
  CHECK_EQ_INT(before, ferry_it_live_allocations());
}

FERRY_TEST(unavailable_cuda_is_a_clear_error) {
  expect_unavailable("cuda", ARROW_DEVICE_CUDA);
}

FERRY_TEST(unavailable_rocm_is_a_clear_error) {
  expect_unavailable("rocm", ARROW_DEVICE_ROCM);
}

FERRY_TEST(checker_rejects_a_cpu_array_for_a_sim_case) {
  expect_check_refused("int32", "int32:device=sim",
                       "device type: expected sim (12), got cpu (1)");
}

FERRY_TEST_MAIN()
