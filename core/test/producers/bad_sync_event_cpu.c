/* Test producer for `ferry check`: a CPU array with a non-NULL sync_event. */
#include "producer_util.h"

static int not_an_event;

PU_EXPORT int produce(struct ArrowSchema* schema, struct ArrowDeviceArray* array) {
  struct pu_options options = {0};
  options.sync_event = &not_an_event;
  return pu_export(schema, array, &options);
}
