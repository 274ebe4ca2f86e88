/* Test producer for `ferry check --async`: hands the same task out twice
 * (its extract_data would run twice) when two batches are requested. */
#include "async_util.h"

PU_EXPORT int produce_async(struct ArrowAsyncDeviceStreamHandler* handler) {
  struct au_defects defects = {0};
  defects.task_twice = 1;
  return au_produce(handler, &defects);
}
