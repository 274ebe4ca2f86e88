/* Test producer for `ferry check`: a correct stream of three batches that ends properly.
 */
#include "producer_util.h"

PU_EXPORT int produce_stream(struct ArrowDeviceArrayStream* out) {
  struct pu_stream_options options = {0};
  options.n_batches = 3;
  return pu_export_stream(out, &options);
}
