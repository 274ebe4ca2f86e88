/* Test producer for `ferry check --async`: a task before on_schema. */
#include "async_util.h"

PU_EXPORT int produce_async(struct ArrowAsyncDeviceStreamHandler* handler) {
  struct au_defects defects = {0};
  defects.task_before_schema = 1;
  return au_produce(handler, &defects);
}
