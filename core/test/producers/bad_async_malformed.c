/* Test producer for `ferry check --async`: batch 1 is malformed (its int32 child has 3
 * buffers). */
#include "async_util.h"

PU_EXPORT int produce_async(struct ArrowAsyncDeviceStreamHandler* handler) {
  struct au_defects defects = {0};
  defects.malformed = 1;
  return au_produce(handler, &defects);
}
