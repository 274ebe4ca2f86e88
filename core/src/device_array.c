/* Device arrays and their sync events: exporting memory produced on a stream
 * (ferry_device_array_init_async), waiting on an imported array's event
 * (ferry_device_array_wait). Deep copies between devices are in copy.c. All
 * device work goes through the registry (device.c), so these functions work
 * the same for every backend. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "internal.h"

/* ---- export with an event ---------------------------------------------------- */

/* What the event_release hook needs to destroy an exported event. */
struct FerryExportedEvent {
  struct FerryDevice* device;
  void* sync_event;
};

/* Runs once, when the consumer releases the array: the event lives exactly
 * as long as the array, as the specification asks. */
static void destroy_exported_event(void* user_data) {
  struct FerryExportedEvent* exported = (struct FerryExportedEvent*)user_data;
  /* Nothing can report an error from inside a release callback; a failure
   * here would mean the event was already destroyed behind ferry's back. */
  ferry_device_event_destroy(exported->device, exported->sync_event, NULL);
  free(exported);
}

/* Moves `array` into `out` on `device`; with `producer_stream` and
 * FERRY_SYNC_RECORD_EVENT the new event is owned by `out` and destroyed
 * when it is released. The caller keeps `producer_stream`. */
int ferry_device_array_init_async(struct ArrowDeviceArray* out, struct ArrowArray* array,
                                  struct FerryDevice* device, void* producer_stream,
                                  int32_t policy, struct FerryError* error) {
  if (out == NULL) return ferry__set_error(error, EINVAL, "out must not be NULL");
  if (array == NULL) return ferry__set_error(error, EINVAL, "array must not be NULL");
  if (device == NULL) return ferry__set_error(error, EINVAL, "device must not be NULL");
  if (policy != FERRY_SYNC_RECORD_EVENT && policy != FERRY_SYNC_SYNCHRONIZE) {
    return ferry__set_error(error, EINVAL,
                           "policy %d is neither FERRY_SYNC_RECORD_EVENT (0) nor "
                           "FERRY_SYNC_SYNCHRONIZE (1)",
                           (int)policy);
  }
  if (array->release == NULL) {
    return ferry__set_error(error, EINVAL, "array is released (nothing to export)");
  }
  if (out->array.release != NULL && &out->array != array) {
    return ferry__set_error(error, EINVAL,
                           "out is a live device array (release it first)");
  }
  ArrowDeviceType type = ferry_device_type(device);
  int64_t id = ferry_device_id(device);

  /* Nothing pending, or a device without events: export no event. */
  if (producer_stream == NULL || type == ARROW_DEVICE_CPU) {
    return ferry_device_array_init(out, array, type, id, NULL, NULL, NULL, error);
  }
  if (policy == FERRY_SYNC_SYNCHRONIZE) {
    FERRY_RETURN_NOT_OK(ferry_device_stream_synchronize(device, producer_stream, error));
    return ferry_device_array_init(out, array, type, id, NULL, NULL, NULL, error);
  }

  struct FerryExportedEvent* exported =
      (struct FerryExportedEvent*)malloc(sizeof(struct FerryExportedEvent));
  if (exported == NULL) {
    return ferry__set_error(error, ENOMEM, "out of memory exporting a sync event");
  }
  exported->device = device;
  exported->sync_event = NULL;
  int code = ferry_device_event_create(device, &exported->sync_event, error);
  if (code == FERRY_OK) {
    code =
        ferry_device_event_record(device, exported->sync_event, producer_stream, error);
  }
  if (code == FERRY_OK) {
    code = ferry_device_array_init(out, array, type, id, exported->sync_event,
                                   destroy_exported_event, exported, error);
  }
  if (code != FERRY_OK) {
    if (exported->sync_event != NULL) {
      ferry_device_event_destroy(device, exported->sync_event, NULL);
    }
    free(exported);
  }
  return code;
}

/* ---- waiting on an imported array ------------------------------------------------ */

/* Borrows `array` and `consumer_stream`. */
int ferry_device_array_wait(const struct ArrowDeviceArray* array, void* consumer_stream,
                            struct FerryError* error) {
  if (array == NULL) return ferry__set_error(error, EINVAL, "array must not be NULL");
  if (array->array.release == NULL) {
    return ferry__set_error(error, EINVAL, "array is released (nothing to wait for)");
  }
  if (array->sync_event == NULL) return FERRY_OK;
  struct FerryDevice* device = NULL;
  FERRY_RETURN_NOT_OK(
      ferry_device_resolve(array->device_type, array->device_id, &device, error));
  if (consumer_stream == NULL) {
    return ferry_device_event_synchronize(device, array->sync_event, error);
  }
  return ferry_device_stream_wait_event(device, consumer_stream, array->sync_event,
                                        error);
}
