/* Test producer for `ferry check --async`: on_next_task from another thread while the
 * consumer is inside on_schema. */
#include "async_util.h"

PU_EXPORT int produce_async(struct ArrowAsyncDeviceStreamHandler* handler) {
  struct au_defects defects = {0};
  defects.overlap = 1;
  return au_produce(handler, &defects);
}
