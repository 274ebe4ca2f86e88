/* Test producer for `ferry check`: child a (int32) declares 3 buffers instead of 2. */
#include "producer_util.h"

PU_EXPORT int produce(struct ArrowSchema* schema, struct ArrowDeviceArray* array) {
  struct pu_options options = {0};
  options.a_n_buffers = 3;
  return pu_export(schema, array, &options);
}
