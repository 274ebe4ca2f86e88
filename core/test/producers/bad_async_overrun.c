/* Test producer for `ferry check --async`: every batch at once, more tasks than
 * requested. */
#include "async_util.h"

PU_EXPORT int produce_async(struct ArrowAsyncDeviceStreamHandler* handler) {
  struct au_defects defects = {0};
  defects.ignore_demand = 1;
  return au_produce(handler, &defects);
}
