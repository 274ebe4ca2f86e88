/* Test producer for `ferry check --async`: on_error after the handler's release. */
#include "async_util.h"

PU_EXPORT int produce_async(struct ArrowAsyncDeviceStreamHandler* handler) {
  struct au_defects defects = {0};
  defects.call_after_release = 1;
  /* On the calling thread, returning after the defect: the checker judges a
   * run once the producer call has returned, so what comes after the first
   * release is always seen (from a thread of its own it could come after
   * the verdict). */
  defects.synchronous = 1;
  return au_produce(handler, &defects);
}
