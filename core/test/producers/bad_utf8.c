/* Test producer for `ferry check`: child b (utf8) holds an invalid UTF-8 sequence in
 * value 2. */
#include "producer_util.h"

PU_EXPORT int produce(struct ArrowSchema* schema, struct ArrowDeviceArray* array) {
  struct pu_options options = {0};
  options.b_data = "abcxx\xc3\x28llo"; /* 0xC3 followed by a non-continuation byte */
  return pu_export(schema, array, &options);
}
