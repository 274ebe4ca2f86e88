/* Every type x {no nulls, nulls=3, offset=5, length=0, length=100000, a mix}
 * x {cpu, sim}: export, check, and every allocation returns. */
#include "it_test_support.h"

static const char* const variants[] = {"",
                                       ":nulls=3",
                                       ":offset=5",
                                       ":length=0",
                                       ":length=100000",
                                       ":nulls=1",
                                       ":length=33:nulls=4:offset=3:seed=4294967295",
                                       ":length=0:nulls=2:offset=7"};
#define N_VARIANTS ((int)(sizeof(variants) / sizeof(variants[0])))

static void roundtrip(const char* spec) {
  int64_t before = ferry_it_live_allocations();
  int64_t exports_before = ferry_live_exports();
  struct ArrowSchema schema;
  struct ArrowDeviceArray array;
  EXPORT_ARRAY_OK(spec, &schema, &array);
  CHECK(ferry_it_live_allocations() > before);
  CHECK_IT_OK(ferry_it_check_array(spec, &schema, &array), spec);
  CHECK(schema.release == NULL);
  CHECK(array.array.release == NULL);
  CHECK_EQ_INT(before, ferry_it_live_allocations());
  CHECK_EQ_INT(exports_before, ferry_live_exports());
}

static void roundtrip_all_on(const char* device) {
  char spec[160];
  for (int t = 0; t < IT_TEST_N_TYPES; t++) {
    for (int v = 0; v < N_VARIANTS; v++) {
      snprintf(spec, sizeof spec, "%s%s:device=%s", it_test_types[t], variants[v],
               device);
      roundtrip(spec);
    }
  }
}

FERRY_TEST(every_type_and_variant_round_trips_on_cpu) { roundtrip_all_on("cpu"); }

FERRY_TEST(every_type_and_variant_round_trips_on_sim) { roundtrip_all_on("sim"); }

FERRY_TEST(cpu_exports_carry_cpu_device_and_no_event) {
  struct ArrowSchema schema;
  struct ArrowDeviceArray array;
  EXPORT_ARRAY_OK("int16:nulls=2", &schema, &array);
  CHECK_EQ_INT(ARROW_DEVICE_CPU, array.device_type);
  CHECK_EQ_INT(-1, array.device_id);
  CHECK(array.sync_event == NULL);
  CHECK_IT_OK(ferry_it_check_array("int16:nulls=2", &schema, &array), "int16:nulls=2");
}

FERRY_TEST(sim_exports_carry_ext_dev_and_an_event) {
  struct ArrowSchema schema;
  struct ArrowDeviceArray array;
  EXPORT_ARRAY_OK("utf8:device=sim", &schema, &array);
  CHECK_EQ_INT(ARROW_DEVICE_EXT_DEV, array.device_type);
  CHECK_EQ_INT(0, array.device_id);
  CHECK(array.sync_event != NULL);
  CHECK_IT_OK(ferry_it_check_array("utf8:device=sim", &schema, &array),
              "utf8:device=sim");
}

FERRY_TEST(releasing_without_checking_returns_every_allocation) {
  int64_t before = ferry_it_live_allocations();
  struct FerryDevice* sim = NULL;
  CHECK_EQ_INT(0, ferry_device_resolve(ARROW_DEVICE_EXT_DEV, 0, &sim, NULL));
  int64_t sim_before = ferry_device_live_allocations(sim);
  for (int t = 0; t < IT_TEST_N_TYPES; t++) {
    char spec[96];
    snprintf(spec, sizeof spec, "%s:device=sim:nulls=2:offset=1", it_test_types[t]);
    struct ArrowSchema schema;
    struct ArrowDeviceArray array;
    EXPORT_ARRAY_OK(spec, &schema, &array);
    CHECK(ferry_device_live_allocations(sim) > sim_before);
    /* Never waited on: the release must still drain the queued copies. */
    ferry_device_array_release(&array);
    ferry_schema_release(&schema);
    CHECK_EQ_INT(sim_before, ferry_device_live_allocations(sim));
  }
  CHECK_EQ_INT(before, ferry_it_live_allocations());
}

FERRY_TEST(a_check_with_another_seed_fails_and_still_releases) {
  expect_check_refused("float64:seed=3:device=sim", "float64:seed=4:device=sim",
                       "float64 element 0 (physical 0): expected ");
}

FERRY_TEST_MAIN()
