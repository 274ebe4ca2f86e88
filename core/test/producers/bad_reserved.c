/* Test producer for `ferry check`: reserved[1] of the device array is not zero. */
#include "producer_util.h"

PU_EXPORT int produce(struct ArrowSchema* schema, struct ArrowDeviceArray* array) {
  struct pu_options options = {0};
  options.reserved1 = 0x5eed;
  return pu_export(schema, array, &options);
}
