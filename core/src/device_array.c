/* Device arrays and their sync events: exporting memory produced on a stream
 * (ferry_device_array_init_async), waiting on an imported array's event
 * (ferry_device_array_wait). Deep copies between devices are in copy.c. All
 * device work goes through the registry (device.c), so these functions work
 * the same for every backend. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "internal.h"

/* ---- export with an event ---------------------------------------------------- */

/* Released events wait in their device's pool for the next export, so that
 * a steady stream of exports records an event per export and creates none.
 * At most this many wait per device; more are destroyed on release. */
#define FERRY_EVENT_POOL_MAX 64

/* One event of `device`: owned by one exported array until that array is
 * released, then kept in the device's pool (FerryDevice.event_pool). */
struct FerryPooledEvent {
  struct FerryDevice* device;
  void* sync_event;
  struct FerryPooledEvent* next;
};

/* An event for a new export: one from the pool, else a new one. */
static int acquire_event(struct FerryDevice* device, struct FerryPooledEvent** out,
                         struct FerryError* error) {
  pthread_mutex_lock(&device->event_pool_lock);
  struct FerryPooledEvent* pooled = device->event_pool;
  if (pooled != NULL) {
    device->event_pool = pooled->next;
    device->event_pool_size--;
  }
  pthread_mutex_unlock(&device->event_pool_lock);
  if (pooled == NULL) {
    pooled = (struct FerryPooledEvent*)malloc(sizeof(struct FerryPooledEvent));
    if (pooled == NULL) {
      return ferry__set_error(error, ENOMEM, "out of memory exporting a sync event");
    }
    pooled->device = device;
    pooled->sync_event = NULL;
    int code = ferry_device_event_create(device, &pooled->sync_event, error);
    if (code != FERRY_OK) {
      free(pooled);
      return code;
    }
  }
  pooled->next = NULL;
  *out = pooled;
  return FERRY_OK;
}

/* Destroys the event: one that saw a failure, or one the pool has no room
 * for. Nothing can report an error from a release callback; a failure here
 * would mean the event was destroyed behind ferry's back. */
static void discard_event(struct FerryPooledEvent* pooled) {
  ferry_device_event_destroy(pooled->device, pooled->sync_event, NULL);
  free(pooled);
}

/* The event_release hook of an export. It runs once, when the consumer
 * releases the array: the event is valid exactly as long as the array, as
 * the specification asks, and is recorded again only by a later export. */
static void return_exported_event(void* user_data) {
  struct FerryPooledEvent* pooled = (struct FerryPooledEvent*)user_data;
  struct FerryDevice* device = pooled->device;
  if (ferry__device_usable(device, NULL) != FERRY_OK) {
    free(pooled); /* a forked child: the handle is the parent's */
    return;
  }
  if (device->backend->event_recycle != NULL &&
      device->backend->event_recycle(device, &pooled->sync_event, NULL) != FERRY_OK) {
    discard_event(pooled);
    return;
  }
  pthread_mutex_lock(&device->event_pool_lock);
  int kept = device->event_pool_size < FERRY_EVENT_POOL_MAX;
  if (kept) {
    pooled->next = device->event_pool;
    device->event_pool = pooled;
    device->event_pool_size++;
  }
  pthread_mutex_unlock(&device->event_pool_lock);
  if (!kept) discard_event(pooled);
}

int64_t ferry__device_pooled_events(struct FerryDevice* device) {
  pthread_mutex_lock(&device->event_pool_lock);
  int64_t size = device->event_pool_size;
  pthread_mutex_unlock(&device->event_pool_lock);
  return size;
}

/* Moves `array` into `out` on `device`; with `producer_stream` and
 * FERRY_SYNC_RECORD_EVENT the event recorded on it is owned by `out` until
 * `out` is released (then it goes back to the device's pool). The caller
 * keeps `producer_stream`. */
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

  struct FerryPooledEvent* pooled = NULL;
  FERRY_RETURN_NOT_OK(acquire_event(device, &pooled, error));
  int code = ferry_device_event_record(device, pooled->sync_event, producer_stream, error);
  if (code == FERRY_OK) {
    code = ferry_device_array_init(out, array, type, id, pooled->sync_event,
                                   return_exported_event, pooled, error);
  }
  if (code != FERRY_OK) discard_event(pooled);
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
