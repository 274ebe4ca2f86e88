/* Test producer for `ferry check --async`: answers request(n <= 0) with on_error and a
 * NULL message. */
#include "async_util.h"

PU_EXPORT int produce_async(struct ArrowAsyncDeviceStreamHandler* handler) {
  struct au_defects defects = {0};
  defects.null_message = 1;
  return au_produce(handler, &defects);
}
