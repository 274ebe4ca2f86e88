/* Test producer for `ferry check`: a stream whose second get_next fails with no
 * get_last_error message. */
#include "producer_util.h"

PU_EXPORT int produce_stream(struct ArrowDeviceArrayStream* out) {
  struct pu_stream_options options = {0};
  options.n_batches = 3;
  options.error_at = 2;
  options.error_without_message = 1;
  return pu_export_stream(out, &options);
}
