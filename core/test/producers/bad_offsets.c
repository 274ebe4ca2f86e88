/* Test producer for `ferry check`: child b (utf8) has offsets that decrease. */
#include "producer_util.h"

PU_EXPORT int produce(struct ArrowSchema* schema, struct ArrowDeviceArray* array) {
  static const int32_t offsets[5] = {0, 3, 2, 8, 10};
  struct pu_options options = {0};
  options.b_offsets = offsets;
  return pu_export(schema, array, &options);
}
