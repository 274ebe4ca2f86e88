/* Test producer for `ferry check --async`: ignores request(0) and request(-1). */
#include "async_util.h"

PU_EXPORT int produce_async(struct ArrowAsyncDeviceStreamHandler* handler) {
  struct au_defects defects = {0};
  defects.ignore_bad_request = 1;
  return au_produce(handler, &defects);
}
