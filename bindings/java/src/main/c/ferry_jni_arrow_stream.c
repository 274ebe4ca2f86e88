/* ferry_jni_arrow_stream.c: ferry's device streams <-> plain Arrow C streams
 * (ferry_jni.h), the form Arrow Java's C data module reads and writes
 * (Data.importArrayStream / Data.exportArrayStream). Both adapters are C so
 * that a batch crosses no JNI boundary of its own: Arrow Java's reader calls
 * get_next through its own JNI, and these functions call the producer.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ferry/ferry.h"
#include "ferry_jni.h"

/* ---- ArrowArrayStream -> ArrowDeviceArrayStream ------------------------- */

/* Copies the Arrow stream's get_last_error (or a generic text) into error. */
static int ferry_jni_arrow_failed(struct ArrowArrayStream* s, int rc, const char* what,
                                  struct FerryError* error) {
  const char* last = s->get_last_error != NULL ? s->get_last_error(s) : NULL;
  if (error != NULL) {
    snprintf(error->message, sizeof error->message, "the Arrow stream's %s failed: %s", what,
             last != NULL && last[0] != '\0' ? last : ferry_errno_name(rc));
  }
  return rc;
}

static int ferry_jni_from_arrow_get_schema(void* user_data, struct ArrowSchema* out,
                                           struct FerryError* error) {
  struct ArrowArrayStream* s = user_data;
  int rc = s->get_schema(s, out);
  return rc == 0 ? FERRY_OK : ferry_jni_arrow_failed(s, rc, "get_schema", error);
}

static int ferry_jni_from_arrow_get_next(void* user_data, struct ArrowDeviceArray* out,
                                         struct FerryError* error) {
  struct ArrowArrayStream* s = user_data;
  struct ArrowArray batch;
  memset(&batch, 0, sizeof batch);
  int rc = s->get_next(s, &batch);
  if (rc != 0) return ferry_jni_arrow_failed(s, rc, "get_next", error);
  if (batch.release == NULL) return FERRY_OK; /* the end: `out` stays released */
  rc = ferry_device_array_init(out, &batch, ARROW_DEVICE_CPU, -1, NULL, NULL, NULL, error);
  if (rc != FERRY_OK && batch.release != NULL) batch.release(&batch);
  return rc;
}

static void ferry_jni_from_arrow_release(void* user_data) {
  struct ArrowArrayStream* s = user_data;
  if (s->release != NULL) s->release(s);
  free(s);
}

int ferry_jni_stream_from_arrow(struct ArrowArrayStream* source,
                                struct ArrowDeviceArrayStream* out, struct FerryError* error) {
  if (source == NULL || source->release == NULL || out == NULL) {
    snprintf(error->message, sizeof error->message,
             "ferry_jni_stream_from_arrow: the Arrow stream is %s",
             source == NULL || out == NULL ? "NULL" : "released");
    return EINVAL;
  }
  struct ArrowArrayStream* moved = malloc(sizeof *moved);
  if (moved == NULL) {
    snprintf(error->message, sizeof error->message, "out of memory moving an Arrow stream");
    return ENOMEM;
  }
  *moved = *source;
  int rc = ferry_array_stream_init(out, ARROW_DEVICE_CPU, ferry_jni_from_arrow_get_schema,
                                   ferry_jni_from_arrow_get_next, ferry_jni_from_arrow_release,
                                   moved, error);
  if (rc != FERRY_OK) {
    free(moved); /* the source was not touched */
    return rc;
  }
  source->release = NULL;
  return FERRY_OK;
}

/* ---- ArrowDeviceArrayStream -> ArrowArrayStream ------------------------- */

struct ferry_jni_arrow_sink {
  struct ArrowDeviceArrayStream device; /* moved in */
  struct ArrowSchema schema;            /* fetched on the first get_next */
  struct FerryPreparedSchema* prepared; /* from `schema` */
  struct FerryError error;              /* get_last_error's text */
};

/* Arrow streams carry record batches (struct arrays), and Arrow Java refuses
 * anything else; a stream of plain arrays is presented as record batches of
 * one column, the field itself. */
static int ferry_jni_is_record(const struct ArrowSchema* schema) {
  const char* format = ferry_schema_format(schema);
  return format != NULL && strcmp(format, "+s") == 0;
}

/* Replaces `schema` (live) by a struct schema whose only child it is. */
static int ferry_jni_wrap_schema(struct ArrowSchema* schema, struct FerryError* error) {
  struct ArrowSchema column = *schema;
  schema->release = NULL;
  int rc = ferry_schema_init(schema, "+s", "", 0, 1, error);
  if (rc != FERRY_OK) {
    *schema = column;
    return rc;
  }
  ferry_schema_move(&column, ferry_schema_child(schema, 0));
  return FERRY_OK;
}

/* Replaces `array` (live) by a struct array of its length whose only child it is. */
static int ferry_jni_wrap_array(struct ArrowArray* array, struct FerryError* error) {
  struct ArrowArray column = *array;
  array->release = NULL;
  const void* no_validity[1] = {NULL};
  int rc = ferry_array_init(array, column.length, 0, 0, 1, no_validity, 1, NULL, NULL, error);
  if (rc != FERRY_OK) {
    *array = column;
    return rc;
  }
  ferry_array_move(&column, ferry_array_child(array, 0));
  return FERRY_OK;
}

static struct ferry_jni_arrow_sink* ferry_jni_sink(struct ArrowArrayStream* self) {
  return self->private_data;
}

static int ferry_jni_to_arrow_get_schema(struct ArrowArrayStream* self, struct ArrowSchema* out) {
  struct ferry_jni_arrow_sink* sink = ferry_jni_sink(self);
  sink->error.message[0] = '\0';
  int rc = ferry_array_stream_get_schema(&sink->device, out, &sink->error);
  if (rc != FERRY_OK || ferry_jni_is_record(out)) return rc;
  rc = ferry_jni_wrap_schema(out, &sink->error);
  if (rc != FERRY_OK) ferry_schema_release(out);
  return rc;
}

/* The schema batches are validated against (and moved to the host with). */
static int ferry_jni_sink_prepare(struct ferry_jni_arrow_sink* sink) {
  if (sink->prepared != NULL) return FERRY_OK;
  if (sink->schema.release == NULL) {
    int rc = ferry_array_stream_get_schema(&sink->device, &sink->schema, &sink->error);
    if (rc != FERRY_OK) return rc;
  }
  return ferry_prepared_schema_create(&sink->schema, NULL, NULL, &sink->prepared, &sink->error);
}

static int ferry_jni_to_arrow_get_next(struct ArrowArrayStream* self, struct ArrowArray* out) {
  struct ferry_jni_arrow_sink* sink = ferry_jni_sink(self);
  sink->error.message[0] = '\0';
  out->release = NULL;
  int rc = ferry_jni_sink_prepare(sink);
  if (rc != FERRY_OK) return rc;
  struct ArrowDeviceArray batch;
  memset(&batch, 0, sizeof batch);
  rc = ferry_array_stream_get_next(&sink->device, &batch, &sink->error);
  if (rc != FERRY_OK || batch.array.release == NULL) return rc; /* failure, or the end */
  struct FerryError finding;
  finding.message[0] = '\0';
  rc = ferry_validate_prepared(sink->prepared, &batch, FERRY_VALIDATE_FULL, NULL, NULL, &finding);
  if (rc != FERRY_OK) {
    /* The finding's message is cut to what fits after the prefix. */
    static const char prefix[] = "the array fails validation: ";
    snprintf(sink->error.message, sizeof sink->error.message, "%s%.*s", prefix,
             (int)(sizeof sink->error.message - sizeof prefix), finding.message);
    ferry_device_array_release(&batch);
    return rc;
  }
  if (batch.device_type != ARROW_DEVICE_CPU) {
    struct ArrowDeviceArray host;
    memset(&host, 0, sizeof host);
    rc = ferry_device_array_move_to_device(&sink->schema, &batch, ARROW_DEVICE_CPU, -1, &host,
                                           &sink->error);
    if (rc != FERRY_OK) {
      ferry_device_array_release(&batch);
      return rc;
    }
    batch = host;
  }
  /* CPU arrays carry no event (validation refuses one). */
  if (!ferry_jni_is_record(&sink->schema)) {
    rc = ferry_jni_wrap_array(&batch.array, &sink->error);
    if (rc != FERRY_OK) {
      ferry_array_release(&batch.array);
      return rc;
    }
  }
  *out = batch.array;
  return FERRY_OK;
}

static const char* ferry_jni_to_arrow_last_error(struct ArrowArrayStream* self) {
  struct ferry_jni_arrow_sink* sink = ferry_jni_sink(self);
  return sink->error.message[0] != '\0' ? sink->error.message : NULL;
}

static void ferry_jni_to_arrow_release(struct ArrowArrayStream* self) {
  struct ferry_jni_arrow_sink* sink = ferry_jni_sink(self);
  ferry_array_stream_release(&sink->device);
  ferry_schema_release(&sink->schema);
  ferry_prepared_schema_free(sink->prepared);
  free(sink);
  self->release = NULL;
  self->private_data = NULL;
}

int ferry_jni_stream_to_arrow(struct ArrowDeviceArrayStream* source,
                              struct ArrowArrayStream* out, struct FerryError* error) {
  if (source == NULL || ferry_array_stream_is_released(source) || out == NULL) {
    snprintf(error->message, sizeof error->message,
             "ferry_jni_stream_to_arrow: the device stream is %s",
             source == NULL || out == NULL ? "NULL" : "released");
    return EINVAL;
  }
  struct ferry_jni_arrow_sink* sink = calloc(1, sizeof *sink);
  if (sink == NULL) {
    snprintf(error->message, sizeof error->message, "out of memory moving a device stream");
    return ENOMEM;
  }
  ferry_array_stream_move(source, &sink->device);
  out->get_schema = ferry_jni_to_arrow_get_schema;
  out->get_next = ferry_jni_to_arrow_get_next;
  out->get_last_error = ferry_jni_to_arrow_last_error;
  out->release = ferry_jni_to_arrow_release;
  out->private_data = sink;
  return FERRY_OK;
}
