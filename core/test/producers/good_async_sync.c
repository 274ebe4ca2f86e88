/* Test producer for `ferry check --async`: the correct producer of
 * good_async.c, run on the calling thread (the call returns after the
 * handler's release), as ferry_async_export_stream_run does. */
#include "async_util.h"

PU_EXPORT int produce_async(struct ArrowAsyncDeviceStreamHandler* handler) {
  struct au_defects defects = {0};
  defects.synchronous = 1;
  return au_produce(handler, &defects);
}
