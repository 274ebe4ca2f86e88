/* The stream watch (see stream_watch.h). */
#include "stream_watch.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "release_watch.h"

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static struct it_stream_observed g_observed;
static int g_tamper_first_batch;
static int (*g_original_get_schema)(struct ArrowDeviceArrayStream*, struct ArrowSchema*);
static int (*g_original_get_next)(struct ArrowDeviceArrayStream*, struct ArrowDeviceArray*);
static const char* (*g_original_get_last_error)(struct ArrowDeviceArrayStream*);

/* The first array of the tree (depth first) with a data buffer and at
 * least one physical slot: its buffer 1 is what a premature read would see. */
static const struct ArrowArray* first_data_array(const struct ArrowArray* array, int depth) {
  if (array == NULL || depth > 8) return NULL;
  if (array->n_buffers >= 2 && array->buffers != NULL && array->buffers[1] != NULL &&
      array->length + array->offset > 0) {
    return array;
  }
  for (int64_t i = 0; array->children != NULL && i < array->n_children; i++) {
    const struct ArrowArray* found = first_data_array(array->children[i], depth + 1);
    if (found != NULL) return found;
  }
  return NULL;
}

int it_sim_pending(const struct ArrowDeviceArray* array) {
  const struct ArrowArray* data = first_data_array(&array->array, 0);
  if (data == NULL) return -1;
  /* Reading sim memory never triggers queued work: in strict mode a pending
   * write reads as poison until somebody waits on the event. */
  const unsigned char* bytes = (const unsigned char*)data->buffers[1];
  return array->sync_event != NULL && bytes[0] == FERRY_SIM_POISON_BYTE ? 1 : 0;
}

int it_tamper_int32(struct ArrowDeviceArray* array) {
  struct ArrowArray* a = &array->array;
  if (array->device_type != ARROW_DEVICE_CPU || a->length < 1 || a->n_buffers != 2 ||
      a->buffers == NULL || a->buffers[1] == NULL) {
    return -1;
  }
  unsigned char* values = (unsigned char*)a->buffers[1];
  values[a->offset * 4] ^= 0x5A;
  return 0;
}

static int watched_get_schema(struct ArrowDeviceArrayStream* stream, struct ArrowSchema* out) {
  int rc = g_original_get_schema(stream, out);
  pthread_mutex_lock(&g_lock);
  g_observed.get_schema_calls++;
  if (rc != 0) {
    if (g_observed.get_schema_failure_code == 0) {
      g_observed.get_schema_failure_code = rc;
      const char* m = g_original_get_last_error ? g_original_get_last_error(stream) : NULL;
      snprintf(g_observed.failure_message, sizeof g_observed.failure_message, "%s",
               m == NULL ? "(get_last_error returned NULL)" : m);
    }
  } else {
    char where[64];
    snprintf(where, sizeof where, "schema#%lld", (long long)g_observed.get_schema_calls);
    if (it_watch_schema(out, where) != 0) g_observed.track_failures++;
  }
  pthread_mutex_unlock(&g_lock);
  return rc;
}

static int watched_get_next(struct ArrowDeviceArrayStream* stream, struct ArrowDeviceArray* out) {
  int rc = g_original_get_next(stream, out);
  pthread_mutex_lock(&g_lock);
  int64_t call = ++g_observed.get_next_calls;
  if (rc != 0) {
    if (g_observed.first_failure_call == 0) {
      g_observed.first_failure_call = call;
      g_observed.first_failure_code = rc;
      const char* m = g_original_get_last_error ? g_original_get_last_error(stream) : NULL;
      snprintf(g_observed.failure_message, sizeof g_observed.failure_message, "%s",
               m == NULL ? "(get_last_error returned NULL)" : m);
    }
  } else if (out->array.release == NULL) {
    g_observed.end_seen++;
  } else {
    int64_t b = g_observed.batches++;
    if (out->device_type == ARROW_DEVICE_EXT_DEV) {
      int pending = it_sim_pending(out);
      if (pending == 1) g_observed.sim_pending_batches++;
      if (pending == 0) g_observed.sim_ready_batches++;
    }
    if (b == 0 && g_tamper_first_batch && it_tamper_int32(out) == 0) {
      g_observed.tampered_batches++;
    }
    char where[64];
    snprintf(where, sizeof where, "batch[%lld]", (long long)b);
    if (it_watch_array(&out->array, where) != 0) g_observed.track_failures++;
  }
  pthread_mutex_unlock(&g_lock);
  return rc;
}

void it_stream_watch_begin(struct ArrowDeviceArrayStream* stream, int tamper_first_batch) {
  pthread_mutex_lock(&g_lock);
  memset(&g_observed, 0, sizeof g_observed);
  g_tamper_first_batch = tamper_first_batch;
  g_original_get_schema = stream->get_schema;
  g_original_get_next = stream->get_next;
  g_original_get_last_error = stream->get_last_error;
  if (stream->get_schema != NULL) stream->get_schema = watched_get_schema;
  if (stream->get_next != NULL) stream->get_next = watched_get_next;
  pthread_mutex_unlock(&g_lock);
}

const struct it_stream_observed* it_stream_watch_observed(void) { return &g_observed; }
