/* Test producer for `ferry check --async`: request calls on_next_task synchronously
 * (re-entrant). */
#include "async_util.h"

PU_EXPORT int produce_async(struct ArrowAsyncDeviceStreamHandler* handler) {
  struct au_defects defects = {0};
  defects.reentrant = 1;
  return au_produce(handler, &defects);
}
