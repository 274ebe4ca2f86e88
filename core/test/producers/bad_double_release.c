/* Test producer for `ferry check`: the top-level release releases child 0 twice. */
#include "producer_util.h"

PU_EXPORT int produce(struct ArrowSchema* schema, struct ArrowDeviceArray* array) {
  struct pu_options options = {0};
  options.double_child_release = 1;
  return pu_export(schema, array, &options);
}
