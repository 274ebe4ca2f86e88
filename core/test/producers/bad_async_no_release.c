/* Test producer for `ferry check --async`: never releases the handler. */
#include "async_util.h"

PU_EXPORT int produce_async(struct ArrowAsyncDeviceStreamHandler* handler) {
  struct au_defects defects = {0};
  defects.no_release = 1;
  return au_produce(handler, &defects);
}
