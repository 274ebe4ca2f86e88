/* Test producer for `ferry check`: a correct struct<a: int32, b: utf8> array on the CPU.
 */
#include "producer_util.h"

PU_EXPORT int produce(struct ArrowSchema* schema, struct ArrowDeviceArray* array) {
  struct pu_options options = {0};
  return pu_export(schema, array, &options);
}
