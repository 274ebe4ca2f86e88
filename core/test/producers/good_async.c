/* Test producer for `ferry check --async`: a correct threaded producer of
 * three batches (request, cancel, refusals and request(n <= 0) as the
 * specification says). */
#include "async_util.h"

PU_EXPORT int produce_async(struct ArrowAsyncDeviceStreamHandler* handler) {
  struct au_defects defects = {0};
  return au_produce(handler, &defects);
}
