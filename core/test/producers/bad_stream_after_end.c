/* Test producer for `ferry check`: a stream whose get_next after the end segfaults. */
#include "producer_util.h"

PU_EXPORT int produce_stream(struct ArrowDeviceArrayStream* out) {
  struct pu_stream_options options = {0};
  options.n_batches = 2;
  options.crash_after_end = 1;
  return pu_export_stream(out, &options);
}
