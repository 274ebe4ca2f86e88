/* Test producer for `ferry check --async`: answers cancel with on_error. */
#include "async_util.h"

PU_EXPORT int produce_async(struct ArrowAsyncDeviceStreamHandler* handler) {
  struct au_defects defects = {0};
  defects.error_after_cancel = 1;
  return au_produce(handler, &defects);
}
