/* The benchmark entry points of ferry_it_bench.h for the C runtime, written
 * as a C user of ferry writes a producer and a consumer: ferry_schema_init,
 * ferry_array_init with a release hook and ferry_device_array_init to
 * export; ferry_*_move, the accessors and ferry_*_release to consume;
 * ferry_array_stream_init with callbacks for a stream.
 *
 * The exported buffer is allocated once per length and kept for the life of
 * the process (a small append-only table); each export holds one reference,
 * counted in the plugin's live allocations, which its release hook drops. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ferry/ferry.h"
#include "ferry_it_bench.h"
#include "plugin_state.h"

#define BENCH_CACHE_SLOTS 8

struct bench_buffer {
  int64_t length;
  int32_t* values;
};

/* Slots [0, g_cache_used) are complete and never change again, so lookups
 * read them without a lock; inserts are serialized. */
static struct bench_buffer g_cache[BENCH_CACHE_SLOTS];
static atomic_int g_cache_used;
static pthread_mutex_t g_cache_insert = PTHREAD_MUTEX_INITIALIZER;

static int bench_fail(int code, const char* what, const char* message) {
  char text[FERRY_ERROR_MESSAGE_SIZE];
  snprintf(text, sizeof text, "%s: %s", what, message);
  return it_set_last_error(code, text);
}

static const struct bench_buffer* find_cached(int64_t length, int used) {
  for (int i = 0; i < used; i++) {
    if (g_cache[i].length == length) return &g_cache[i];
  }
  return NULL;
}

/* Points `*out` at the buffer of `length` int32 values, allocated on first
 * use. Returns 0, or EINVAL/ENOMEM with the last error set. */
static int cached_buffer(int64_t length, const char* where,
                         const struct bench_buffer** out) {
  *out = find_cached(length, atomic_load_explicit(&g_cache_used, memory_order_acquire));
  if (*out != NULL) return FERRY_OK;
  if (length < 0 || length > FERRY_IT_BENCH_MAX_LENGTH) {
    char text[128];
    snprintf(text, sizeof text, "length %lld is outside 0..%lld", (long long)length,
             (long long)FERRY_IT_BENCH_MAX_LENGTH);
    return bench_fail(EINVAL, where, text);
  }
  int rc = FERRY_OK;
  pthread_mutex_lock(&g_cache_insert);
  int used = atomic_load_explicit(&g_cache_used, memory_order_relaxed);
  *out = find_cached(length, used);
  if (*out == NULL && used == BENCH_CACHE_SLOTS) {
    rc = bench_fail(ENOMEM, where, "the buffer cache is full (8 lengths)");
  } else if (*out == NULL) {
    int32_t* values = malloc((size_t)(length == 0 ? 1 : length) * sizeof(int32_t));
    if (values == NULL) {
      rc = bench_fail(ENOMEM, where, "cannot allocate the buffer");
    } else {
      /* Only element 0 is specified (the length, for the consumer's check). */
      values[0] = (int32_t)length;
      g_cache[used].length = length;
      g_cache[used].values = values;
      atomic_store_explicit(&g_cache_used, used + 1, memory_order_release);
      *out = &g_cache[used];
    }
  }
  pthread_mutex_unlock(&g_cache_insert);
  return rc;
}

/* The release hook of every export: drops the export's reference. */
static void drop_reference(void* buffer) {
  (void)buffer;
  it_count_allocations(-1);
}

static int export_int32_schema(struct ArrowSchema* out, struct FerryError* error) {
  return ferry_schema_init(out, "i", "values", 0, 0, error);
}

/* Fills the released `out` with the cached buffer, holding one reference. */
static int export_cached(const struct bench_buffer* buffer, struct ArrowDeviceArray* out,
                         struct FerryError* error) {
  const void* buffers[2] = {NULL, buffer->values};
  struct ArrowArray array;
  memset(&array, 0, sizeof array);
  it_count_allocations(1);
  int rc = ferry_array_init(&array, buffer->length, 0, 0, 2, buffers, 0, drop_reference,
                            (void*)buffer, error);
  if (rc != FERRY_OK) {
    it_count_allocations(-1); /* the hook is not called on failure */
    return rc;
  }
  rc =
      ferry_device_array_init(out, &array, ARROW_DEVICE_CPU, -1, NULL, NULL, NULL, error);
  if (rc != FERRY_OK) ferry_array_release(&array); /* runs the hook */
  return rc;
}

int64_t ferry_it_bench_noop(int64_t x) { return x + 1; }

int ferry_it_bench_export_array(int64_t length, struct ArrowSchema* schema_out,
                                struct ArrowDeviceArray* array_out) {
  static const char where[] = "ferry_it_bench_export_array";
  if (schema_out == NULL || array_out == NULL) {
    return bench_fail(EINVAL, where, "schema_out and array_out must not be NULL");
  }
  const struct bench_buffer* buffer = NULL;
  int rc = cached_buffer(length, where, &buffer);
  if (rc != FERRY_OK) return rc;
  struct FerryError error;
  error.message[0] = '\0';
  rc = export_int32_schema(schema_out, &error);
  if (rc != FERRY_OK) return bench_fail(rc, where, error.message);
  rc = export_cached(buffer, array_out, &error);
  if (rc != FERRY_OK) {
    ferry_schema_release(schema_out);
    return bench_fail(rc, where, error.message);
  }
  return FERRY_OK;
}

/* Reads the length and element 0 of a consumed array (0 or EINVAL). */
static int read_first(const struct ArrowArray* array, const char* where) {
  int64_t length = ferry_array_length(array);
  if (length <= 0) return FERRY_OK;
  const int32_t* values = (const int32_t*)ferry_array_buffer(array, 1);
  if (values == NULL) return bench_fail(EINVAL, where, "the values buffer is NULL");
  int32_t first = values[ferry_array_offset(array)];
  if (first != (int32_t)length) {
    char text[128];
    snprintf(text, sizeof text, "element 0 is %ld, expected the length %lld", (long)first,
             (long long)length);
    return bench_fail(EINVAL, where, text);
  }
  return FERRY_OK;
}

int ferry_it_bench_consume_array(struct ArrowSchema* schema,
                                 struct ArrowDeviceArray* array) {
  static const char where[] = "ferry_it_bench_consume_array";
  struct ArrowSchema owned_schema;
  struct ArrowDeviceArray owned_array;
  memset(&owned_schema, 0, sizeof owned_schema);
  memset(&owned_array, 0, sizeof owned_array);
  int rc = FERRY_OK;
  /* Take ownership first, so that both are released on every path. */
  if (schema == NULL || array == NULL) {
    rc = bench_fail(EINVAL, where, "schema and array must not be NULL");
  } else if (ferry_schema_move(schema, &owned_schema) != FERRY_OK ||
             ferry_device_array_move(array, &owned_array) != FERRY_OK) {
    rc = bench_fail(EINVAL, where, "the schema or the array is already released");
  }
  if (rc == FERRY_OK) rc = read_first(&owned_array.array, where);
  ferry_device_array_release(&owned_array);
  ferry_schema_release(&owned_schema);
  ferry_device_array_release(array);
  ferry_schema_release(schema);
  return rc;
}

/* The producer behind an exported stream. */
struct bench_stream {
  const struct bench_buffer* buffer;
  int64_t remaining;
};

static int stream_get_schema(void* user_data, struct ArrowSchema* out,
                             struct FerryError* error) {
  (void)user_data;
  return export_int32_schema(out, error);
}

static int stream_get_next(void* user_data, struct ArrowDeviceArray* out,
                           struct FerryError* error) {
  struct bench_stream* producer = (struct bench_stream*)user_data;
  if (producer->remaining == 0) return FERRY_OK; /* the end: out stays released */
  producer->remaining--;
  return export_cached(producer->buffer, out, error);
}

static void stream_release(void* user_data) { it_free(user_data); }

int ferry_it_bench_export_stream(int64_t length, int64_t batches,
                                 struct ArrowDeviceArrayStream* out) {
  static const char where[] = "ferry_it_bench_export_stream";
  if (out == NULL) return bench_fail(EINVAL, where, "out must not be NULL");
  if (batches < 0) return bench_fail(EINVAL, where, "batches must not be negative");
  const struct bench_buffer* buffer = NULL;
  int rc = cached_buffer(length, where, &buffer);
  if (rc != FERRY_OK) return rc;
  struct bench_stream* producer = it_alloc(sizeof *producer);
  if (producer == NULL) return bench_fail(ENOMEM, where, "cannot allocate the producer");
  producer->buffer = buffer;
  producer->remaining = batches;
  struct FerryError error;
  error.message[0] = '\0';
  rc = ferry_array_stream_init(out, ARROW_DEVICE_CPU, stream_get_schema, stream_get_next,
                         stream_release, producer, &error);
  if (rc != FERRY_OK) {
    it_free(producer); /* the hook is not called on failure */
    return bench_fail(rc, where, error.message);
  }
  return FERRY_OK;
}

int ferry_it_bench_consume_stream(struct ArrowDeviceArrayStream* stream) {
  static const char where[] = "ferry_it_bench_consume_stream";
  struct ArrowDeviceArrayStream owned;
  memset(&owned, 0, sizeof owned);
  if (stream == NULL) return bench_fail(EINVAL, where, "stream must not be NULL");
  if (ferry_array_stream_move(stream, &owned) != FERRY_OK) {
    return bench_fail(EINVAL, where, "the stream is already released");
  }
  struct FerryError error;
  error.message[0] = '\0';
  struct ArrowSchema schema;
  memset(&schema, 0, sizeof schema);
  int rc = ferry_array_stream_get_schema(&owned, &schema, &error);
  if (rc != FERRY_OK) rc = bench_fail(rc, "get_schema", error.message);
  while (rc == FERRY_OK) {
    struct ArrowDeviceArray batch;
    memset(&batch, 0, sizeof batch);
    rc = ferry_array_stream_get_next(&owned, &batch, &error);
    if (rc != FERRY_OK) {
      rc = bench_fail(rc, "get_next", error.message);
      break;
    }
    if (ferry_device_array_is_released(&batch)) break; /* the end */
    rc = read_first(&batch.array, where);
    ferry_device_array_release(&batch);
  }
  ferry_schema_release(&schema);
  ferry_array_stream_release(&owned);
  return rc;
}
