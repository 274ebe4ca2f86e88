/* Test producer for `ferry check`: the producer call never returns. */
#include "producer_util.h"

#include <unistd.h>

PU_EXPORT int produce(struct ArrowSchema* schema, struct ArrowDeviceArray* array) {
  for (;;) pause(); /* only a signal ends this; the tool sends SIGKILL */
  return 0;
}
