/* Test producer for `ferry check --async`: on_schema with handler->producer left NULL. */
#include "async_util.h"

PU_EXPORT int produce_async(struct ArrowAsyncDeviceStreamHandler* handler) {
  struct au_defects defects = {0};
  defects.no_producer = 1;
  return au_produce(handler, &defects);
}
