/* ferry_example: a producer hands an int32 array to a consumer, once from
 * the CPU and once from the simulated device. Prints what the consumer read
 * and checks that every release ran exactly once. */
#include <stdio.h>

#include "example.h"

static int hand_over(const char* what,
                     int (*produce)(int64_t, struct ArrowSchema*, struct ArrowDeviceArray*,
                                    struct FerryError*)) {
  struct ArrowSchema schema = {0};
  struct ArrowDeviceArray array = {0};
  struct FerryError error;
  ferry_error_init(&error);
  int rc = produce(10, &schema, &array, &error);
  if (rc != FERRY_OK) {
    fprintf(stderr, "%s: export failed: %s: %s\n", what, ferry_errno_name(rc), error.message);
    return 1;
  }
  printf("%s: exported on %s:%lld, sync event %s\n", what,
         ferry_device_type_name(array.device_type), (long long)array.device_id,
         array.sync_event != NULL ? "set (the data is still being written)" : "none");
  struct example_summary summary;
  rc = example_consume(&schema, &array, &summary, &error);
  if (rc != FERRY_OK) {
    fprintf(stderr, "%s: consumer failed: %s: %s\n", what, ferry_errno_name(rc), error.message);
    return 1;
  }
  printf("%s: consumer read %lld values, %lld null, sum %lld\n", what,
         (long long)summary.length, (long long)summary.null_count, (long long)summary.sum);
  return 0;
}

int main(void) {
  printf("ferry %s\n", ferry_version());
  int failures = hand_over("cpu", example_produce);
  failures += hand_over("sim", example_produce_on_sim);
  struct FerryDevice* sim = NULL;
  ferry_device_resolve(ARROW_DEVICE_EXT_DEV, 0, &sim, NULL);
  printf("release hooks run: %lld, live exports: %lld, sim allocations: %lld\n",
         (long long)example_released(), (long long)ferry_live_exports(),
         (long long)ferry_device_live_allocations(sim));
  if (example_released() != 2 || ferry_live_exports() != 0 ||
      ferry_device_live_allocations(sim) != 0) {
    failures++;
  }
  printf("%s\n", failures == 0 ? "ok" : "FAILED");
  return failures == 0 ? 0 : 1;
}
