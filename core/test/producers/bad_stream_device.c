/* Test producer for `ferry check`: a CPU stream whose second batch claims the ext_dev
 * (sim) device. */
#include "producer_util.h"

PU_EXPORT int produce_stream(struct ArrowDeviceArrayStream* out) {
  struct pu_stream_options options = {0};
  options.n_batches = 3;
  options.wrong_device_batch = 2;
  return pu_export_stream(out, &options);
}
