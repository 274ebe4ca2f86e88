/* Test producer for `ferry check --async`: releases the handler twice. */
#include "async_util.h"

PU_EXPORT int produce_async(struct ArrowAsyncDeviceStreamHandler* handler) {
  struct au_defects defects = {0};
  defects.double_release = 1;
  return au_produce(handler, &defects);
}
