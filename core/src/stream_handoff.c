/* Consumer stream handoff for device streams: the consumer names its own
 * stream and ferry orders that stream after each batch's producer work
 * (cuStreamWaitEvent / hipStreamWaitEvent / the sim's wait) instead of
 * blocking the host. This is the "get_next on this stream" that the Arrow
 * device stream interface leaves to each consumer. */
#include "backend.h"
#include "internal.h"

/* Borrows `stream` and `consumer_stream`; on success the caller owns `out`. */
int ferry_array_stream_get_next_on(struct ArrowDeviceArrayStream* stream,
                             struct ArrowDeviceArray* out, void* consumer_stream,
                             struct FerryError* error) {
  FERRY_RETURN_NOT_OK(ferry_array_stream_get_next(stream, out, error));
  /* End of stream, or nothing pending: nothing to hand over. */
  if (out->array.release == NULL || out->sync_event == NULL) return FERRY_OK;
  int code = ferry_device_array_wait(out, consumer_stream, error);
  if (code != FERRY_OK) {
    /* The batch cannot be used safely: do not hand it out. */
    ferry_device_array_release(out);
  }
  return code;
}
