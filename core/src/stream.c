/* ArrowDeviceArrayStream: the consumer-side wrappers (any producer) and
 * ferry's own producer (callbacks from a binding, or a fixed list of arrays).
 *
 * The producer side is on the hot path of every pull-style handoff, where
 * bindings install static C trampolines into Go/Rust/Java/Lua: get_next is
 * one indirect call into the binding plus a few checks, with the producer
 * writing its message straight into the stream's stable last-error buffer. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "leak.h"
#include "producer.h"
#include "thread_state.h"
#include "word_copy.h"

/* ---- Consumer side --------------------------------------------------------- */

/* Borrows `stream`; 1 when NULL or released. */
int ferry_array_stream_is_released(const struct ArrowDeviceArrayStream* stream) {
  return stream == NULL || stream->release == NULL;
}

/* Borrows `stream`; 0 for NULL. */
ArrowDeviceType ferry_array_stream_device_type(const struct ArrowDeviceArrayStream* stream) {
  return stream == NULL ? 0 : stream->device_type;
}

/* Turns a failed callback into `error`: the producer's own message when it
 * has one, otherwise a generic one naming the operation and the code. */
static int ferry_array_stream_fail(struct ArrowDeviceArrayStream* stream, const char* op,
                             int rc, struct FerryError* error) {
  const char* message = NULL;
  if (stream->get_last_error != NULL) message = stream->get_last_error(stream);
  if (message != NULL && message[0] != '\0') {
    return ferry__set_error(error, rc, "%s", message);
  }
  return ferry__set_error(error, rc, "%s failed with %s (no message from producer)", op,
                         ferry_errno_name(rc));
}

static int ferry_array_stream_check_usable(const struct ArrowDeviceArrayStream* stream,
                                     const char* op, int has_callback,
                                     struct FerryError* error) {
  if (stream == NULL) return ferry__set_error(error, EINVAL, "%s: the stream is NULL", op);
  if (stream->release == NULL) {
    return ferry__set_error(error, EINVAL, "%s: the stream is released", op);
  }
  if (!has_callback) {
    return ferry__set_error(error, EINVAL, "%s: the stream has no %s callback", op, op);
  }
  return FERRY_OK;
}

/* Calls get_schema into released `out`, which the caller owns on success. */
int ferry_array_stream_get_schema(struct ArrowDeviceArrayStream* stream,
                            struct ArrowSchema* out, struct FerryError* error) {
  FERRY_RETURN_NOT_OK(ferry_array_stream_check_usable(
      stream, "get_schema", stream != NULL && stream->get_schema != NULL, error));
  if (out == NULL) return ferry__set_error(error, EINVAL, "get_schema: out is NULL");
  if (out->release != NULL) {
    return ferry__set_error(error, EINVAL,
                           "get_schema: out is a live schema (release it first)");
  }
  int rc = stream->get_schema(stream, out);
  if (rc != FERRY_OK) {
    ferry_array_stream_fail(stream, "get_schema", rc, error);
    /* A producer that fails must not hand over anything; if it did, we
     * own it now and must not leak it. */
    if (out->release != NULL) out->release(out);
    memset(out, 0, sizeof(*out));
    return rc;
  }
  if (out->release == NULL) {
    return ferry__set_error(error, EIO,
                           "get_schema: the producer reported success but "
                           "returned a released schema");
  }
  return FERRY_OK;
}

/* The argument errors of ferry_array_stream_get_next, out of line. */
__attribute__((noinline, cold)) static int ferry_array_stream_get_next_invalid(
    struct ArrowDeviceArrayStream* stream, struct ArrowDeviceArray* out,
    struct FerryError* error) {
  FERRY_RETURN_NOT_OK(ferry_array_stream_check_usable(
      stream, "get_next", stream != NULL && stream->get_next != NULL, error));
  if (out == NULL) return ferry__set_error(error, EINVAL, "get_next: out is NULL");
  return ferry__set_error(error, EINVAL,
                         "get_next: out is a live array (release it first)");
}

/* A failed get_next: the producer's message, and nothing handed over. */
__attribute__((noinline)) static int ferry_array_stream_get_next_failed(
    struct ArrowDeviceArrayStream* stream, struct ArrowDeviceArray* out, int rc,
    struct FerryError* error) {
  ferry_array_stream_fail(stream, "get_next", rc, error);
  if (out->array.release != NULL) out->array.release(&out->array);
  memset(out, 0, sizeof(*out));
  return rc;
}

/* A batch on another device type than its stream's (the specification: every
 * array of a stream is on the stream's device type). ferry's own producer
 * refuses that itself; a foreign producer's batch is released here, so that
 * no consumer reads memory of one device as another's. */
__attribute__((noinline, cold)) static int ferry_array_stream_get_next_wrong_device(
    struct ArrowDeviceArrayStream* stream, struct ArrowDeviceArray* out,
    struct FerryError* error) {
  ArrowDeviceType got = out->device_type;
  out->array.release(&out->array);
  memset(out, 0, sizeof(*out));
  return ferry__set_error(error, EINVAL,
                          "get_next: the producer returned a batch on device type %s from a "
                          "stream of device type %s (%d and %d); the batch was released",
                          ferry_device_type_name(got), ferry_device_type_name(stream->device_type),
                          (int)got, (int)stream->device_type);
}

/* Calls get_next into released `out`; the caller owns `out` on success, and
 * a released `out` on success means end of stream. */
int ferry_array_stream_get_next(struct ArrowDeviceArrayStream* stream,
                          struct ArrowDeviceArray* out, struct FerryError* error) {
  if (__builtin_expect(stream == NULL || stream->release == NULL ||
                           stream->get_next == NULL || out == NULL ||
                           out->array.release != NULL,
                       0)) {
    return ferry_array_stream_get_next_invalid(stream, out, error);
  }
  int rc = stream->get_next(stream, out);
  if (__builtin_expect(rc != FERRY_OK, 0)) {
    return ferry_array_stream_get_next_failed(stream, out, rc, error);
  }
  if (__builtin_expect(out->array.release != NULL && out->device_type != stream->device_type,
                       0)) {
    return ferry_array_stream_get_next_wrong_device(stream, out, error);
  }
  return FERRY_OK;
}

/* Borrows `stream`; the message is the stream's until its next call. */
const char* ferry_array_stream_get_last_error(struct ArrowDeviceArrayStream* stream) {
  if (stream == NULL || stream->release == NULL || stream->get_last_error == NULL) {
    return NULL;
  }
  return stream->get_last_error(stream);
}

/* ---- ferry's producer ------------------------------------------------------ */

struct FerryStreamPrivate {
  FerryStreamGetSchemaFn get_schema;
  FerryStreamGetNextFn get_next;
  FerryReleaseHook release_hook;
  void* user_data;
  /* The stream's device type as created; the public field is the
   * consumer's to read, not ours to trust. */
  ArrowDeviceType device_type;
  int32_t ended;
  int32_t has_error;
  /* Stable storage for get_last_error, valid until the next call. */
  struct FerryError last_error;
};

/* Records a failure of callback `op` that returned `rc`: the producer's
 * message (already in last_error) or a generic one. */
static int ferry_array_stream_record_failure(struct FerryStreamPrivate* priv, const char* op,
                                       int rc) {
  priv->has_error = 1;
  if (priv->last_error.message[0] == '\0') {
    ferry__set_error(&priv->last_error, rc, "%s failed with %s (no message from producer)",
                    op, ferry_errno_name(rc));
  }
  return rc;
}

static int ferry_array_stream_private_get_schema(struct ArrowDeviceArrayStream* stream,
                                           struct ArrowSchema* out) {
  if (stream == NULL || out == NULL) return EINVAL;
  struct FerryStreamPrivate* priv = (struct FerryStreamPrivate*)stream->private_data;
  if (stream->release == NULL || priv == NULL) return EINVAL;
  /* The ABI lets consumers pass uninitialised memory. */
  memset(out, 0, sizeof(*out));
  priv->has_error = 0;
  priv->last_error.message[0] = '\0';
  if (priv->get_schema == NULL) {
    ferry__set_error(&priv->last_error, ENOSYS, "get_schema: the producer has no schema");
    return ferry_array_stream_record_failure(priv, "get_schema", ENOSYS);
  }
  int rc = priv->get_schema(priv->user_data, out, &priv->last_error);
  if (rc != FERRY_OK) {
    if (out->release != NULL) out->release(out);
    memset(out, 0, sizeof(*out));
    return ferry_array_stream_record_failure(priv, "get_schema", rc);
  }
  if (out->release == NULL) {
    ferry__set_error(&priv->last_error, EIO,
                    "get_schema: the producer reported success but returned no schema");
    return ferry_array_stream_record_failure(priv, "get_schema", EIO);
  }
  return FERRY_OK;
}

/* The unusual ends of ferry_array_stream_private_get_next, out of line: the
 * callback failed (`rc`), reached the end (released `out`) or returned a
 * batch on the wrong device. */
__attribute__((noinline)) static int ferry_array_stream_private_get_next_unusual(
    struct FerryStreamPrivate* priv, struct ArrowDeviceArray* out, int rc) {
  if (rc != FERRY_OK) {
    if (out->array.release != NULL) out->array.release(&out->array);
    ferry__zero_words(out, sizeof(*out) / sizeof(uint64_t));
    return ferry_array_stream_record_failure(priv, "get_next", rc);
  }
  if (out->array.release == NULL) {
    priv->ended = 1;
    return FERRY_OK;
  }
  ArrowDeviceType got = out->device_type;
  out->array.release(&out->array);
  ferry__zero_words(out, sizeof(*out) / sizeof(uint64_t));
  ferry__set_error(&priv->last_error, EINVAL,
                  "get_next: the producer returned a batch on device type %d (%s) but "
                  "the stream's device type is %d (%s); the batch was released",
                  (int)got, ferry_device_type_name(got), (int)priv->device_type,
                  ferry_device_type_name(priv->device_type));
  return ferry_array_stream_record_failure(priv, "get_next", EINVAL);
}

static int ferry_array_stream_private_get_next(struct ArrowDeviceArrayStream* stream,
                                         struct ArrowDeviceArray* out) {
  if (stream == NULL || out == NULL) return EINVAL;
  struct FerryStreamPrivate* priv = (struct FerryStreamPrivate*)stream->private_data;
  if (stream->release == NULL || priv == NULL) return EINVAL;
  priv->has_error = 0;
  priv->last_error.message[0] = '\0';
  /* Consumers may hand over uninitialised memory; the producer callback
   * then always starts from a released, zeroed struct (and an ended stream
   * answers with one). */
  ferry__zero_words(out, sizeof(*out) / sizeof(uint64_t));
  if (priv->ended) return FERRY_OK;
  int rc = priv->get_next(priv->user_data, out, &priv->last_error);
  if (__builtin_expect(rc == FERRY_OK && out->array.release != NULL &&
                           out->device_type == priv->device_type,
                       1)) {
    return FERRY_OK;
  }
  return ferry_array_stream_private_get_next_unusual(priv, out, rc);
}

static const char* ferry_array_stream_private_get_last_error(
    struct ArrowDeviceArrayStream* stream) {
  if (stream == NULL || stream->release == NULL || stream->private_data == NULL)
    return NULL;
  struct FerryStreamPrivate* priv = (struct FerryStreamPrivate*)stream->private_data;
  return priv->has_error ? priv->last_error.message : NULL;
}

static void ferry_array_stream_private_release(struct ArrowDeviceArrayStream* stream) {
  if (stream == NULL || stream->release == NULL) return;
  struct FerryStreamPrivate* priv = (struct FerryStreamPrivate*)stream->private_data;
  if (priv->release_hook != NULL) priv->release_hook(priv->user_data);
  if (ferry__leak_enabled()) ferry__leak_export_remove(priv);
  free(priv);
  stream->private_data = NULL;
  ferry__live_add(-1);
  stream->release = NULL;
}

/* Fills released `out` with a stream backed by the callbacks (borrowed
 * until release, when `release_hook(user_data)` runs once). */
int ferry_array_stream_init(struct ArrowDeviceArrayStream* out, ArrowDeviceType device_type,
                      FerryStreamGetSchemaFn get_schema, FerryStreamGetNextFn get_next,
                      FerryReleaseHook release_hook, void* user_data,
                      struct FerryError* error) {
  if (out == NULL)
    return ferry__set_error(error, EINVAL, "ferry_array_stream_init: out is NULL");
  if (out->release != NULL) {
    return ferry__set_error(error, EINVAL,
                           "ferry_array_stream_init: out is a live stream (release it first)");
  }
  if (get_next == NULL) {
    return ferry__set_error(error, EINVAL, "ferry_array_stream_init: get_next is NULL");
  }
  if (device_type <= 0) {
    return ferry__set_error(error, EINVAL, "ferry_array_stream_init: invalid device type %d",
                           (int)device_type);
  }
  struct FerryStreamPrivate* priv =
      (struct FerryStreamPrivate*)malloc(sizeof(struct FerryStreamPrivate));
  if (priv == NULL)
    return ferry__set_error(error, ENOMEM, "ferry_array_stream_init: out of memory");
  priv->get_schema = get_schema;
  priv->get_next = get_next;
  priv->release_hook = release_hook;
  priv->user_data = user_data;
  priv->device_type = device_type;
  priv->ended = 0;
  priv->has_error = 0;
  priv->last_error.message[0] = '\0';
  /* In the order of the fields, which the Arrow ABI fixes: device_type,
   * get_schema, get_next, get_last_error, release, private_data. */
  *out = (struct ArrowDeviceArrayStream){device_type,
                                         ferry_array_stream_private_get_schema,
                                         ferry_array_stream_private_get_next,
                                         ferry_array_stream_private_get_last_error,
                                         ferry_array_stream_private_release,
                                         priv};
  ferry__live_add(1);
  if (ferry__leak_enabled()) {
    ferry__leak_export_add(priv, "stream on %s", ferry_device_type_name(device_type));
  }
  return FERRY_OK;
}

/* ---- A stream over a fixed list of arrays ---------------------------------- */

struct FerryArrayList {
  struct ArrowSchema schema;
  int64_t n;
  int64_t next;
  struct ArrowDeviceArray arrays[];
};

static int ferry_array_list_get_schema(void* user_data, struct ArrowSchema* out,
                                       struct FerryError* error) {
  struct FerryArrayList* list = (struct FerryArrayList*)user_data;
  /* get_schema may be called any number of times; each caller gets its own
   * copy and the stream keeps the original. */
  return ferry__schema_deep_copy(&list->schema, out, error);
}

static int ferry_array_list_get_next(void* user_data, struct ArrowDeviceArray* out,
                                     struct FerryError* error) {
  struct FerryArrayList* list = (struct FerryArrayList*)user_data;
  if (list->next < list->n) {
    *out = list->arrays[list->next];
    list->arrays[list->next].array.release = NULL;
    list->next++;
  }
  return FERRY_OK;
}

static void ferry_array_list_release(void* user_data) {
  struct FerryArrayList* list = (struct FerryArrayList*)user_data;
  for (int64_t i = list->next; i < list->n; i++) {
    ferry_device_array_release(&list->arrays[i]);
  }
  ferry_schema_release(&list->schema);
  free(list);
}

/* Fills released `out` with a stream yielding `schema` then `arrays[0..n)`,
 * all moved in on success; on failure nothing is moved. */
int ferry_array_stream_init_from_arrays(struct ArrowDeviceArrayStream* out,
                                  ArrowDeviceType device_type, struct ArrowSchema* schema,
                                  struct ArrowDeviceArray* arrays, int64_t n,
                                  struct FerryError* error) {
  const char* op = "ferry_array_stream_init_from_arrays";
  if (out == NULL) return ferry__set_error(error, EINVAL, "%s: out is NULL", op);
  if (out->release != NULL) {
    return ferry__set_error(error, EINVAL, "%s: out is a live stream (release it first)",
                           op);
  }
  if (schema == NULL || schema->release == NULL) {
    return ferry__set_error(error, EINVAL, "%s: the schema is NULL or released", op);
  }
  if (n < 0 || n > (INT64_C(1) << 32) || (n > 0 && arrays == NULL)) {
    return ferry__set_error(error, EINVAL, "%s: bad array list (n = %lld, arrays %s)", op,
                           (long long)n, arrays == NULL ? "NULL" : "set");
  }
  for (int64_t i = 0; i < n; i++) {
    if (arrays[i].array.release == NULL) {
      return ferry__set_error(
          error, EINVAL, "%s: arrays[%lld] is released (it would end the stream early)",
          op, (long long)i);
    }
    if (arrays[i].device_type != device_type) {
      return ferry__set_error(
          error, EINVAL,
          "%s: arrays[%lld] is on device type %d (%s), the stream's is %d "
          "(%s)",
          op, (long long)i, (int)arrays[i].device_type,
          ferry_device_type_name(arrays[i].device_type), (int)device_type,
          ferry_device_type_name(device_type));
    }
  }
  struct FerryArrayList* list = (struct FerryArrayList*)malloc(
      sizeof(struct FerryArrayList) + (size_t)n * sizeof(struct ArrowDeviceArray));
  if (list == NULL) return ferry__set_error(error, ENOMEM, "%s: out of memory", op);
  list->n = n;
  list->next = 0;
  int rc =
      ferry_array_stream_init(out, device_type, ferry_array_list_get_schema,
                        ferry_array_list_get_next, ferry_array_list_release, list, error);
  if (rc != FERRY_OK) {
    free(list);
    return rc;
  }
  /* Nothing can fail from here on, so the moves are all-or-nothing. */
  list->schema = *schema;
  schema->release = NULL;
  for (int64_t i = 0; i < n; i++) {
    list->arrays[i] = arrays[i];
    arrays[i].array.release = NULL;
  }
  return FERRY_OK;
}
