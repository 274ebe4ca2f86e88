/* Test producer for `ferry check`: the top-level release does not set release to NULL. */
#include "producer_util.h"

PU_EXPORT int produce(struct ArrowSchema* schema, struct ArrowDeviceArray* array) {
  struct pu_options options = {0};
  options.release_keeps_pointer = 1;
  return pu_export(schema, array, &options);
}
