/* Test producer for `ferry check --async`: on_error after the handler's release. */
#include "async_util.h"

PU_EXPORT int produce_async(struct ArrowAsyncDeviceStreamHandler* handler) {
  struct au_defects defects = {0};
  defects.call_after_release = 1;
  return au_produce(handler, &defects);
}
