/* Test producer for `ferry check`: the producer fails with EIO (and leaves its outputs
 * released). */
#include "producer_util.h"

PU_EXPORT int produce(struct ArrowSchema* schema, struct ArrowDeviceArray* array) {
  return EIO;
}
