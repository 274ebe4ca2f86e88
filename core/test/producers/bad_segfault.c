/* Test producer for `ferry check`: the producer call itself segfaults. */
#include "producer_util.h"

PU_EXPORT int produce(struct ArrowSchema* schema, struct ArrowDeviceArray* array) {
  pu_segfault();
  return 0;
}
