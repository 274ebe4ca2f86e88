/* The stream checker: schema, every batch, the end, or the injected failure. */
#include "stream_check.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "case_check.h"
#include "plugin_state.h"

static const char* stream_message(struct ArrowDeviceArrayStream* stream) {
  const char* message =
      stream->get_last_error != NULL ? stream->get_last_error(stream) : NULL;
  return message;
}

/* The call `what` returned `rc`; it must be the injected EIO with exactly
 * `expected` as the stream's last error. */
static int expect_injected(struct ArrowDeviceArrayStream* stream, int rc,
                           const char* what, const char* expected,
                           struct FerryError* error) {
  if (rc == FERRY_OK) {
    return it_error(error, EINVAL, "%s succeeded, expected the injected failure \"%s\"",
                    what, expected);
  }
  const char* message = stream_message(stream);
  if (rc != EIO) {
    return it_error(
        error, EINVAL,
        "%s returned %s (%d), expected EIO from the injected failure (message: %s)", what,
        ferry_errno_name(rc), rc, message == NULL ? "(none)" : message);
  }
  if (message == NULL || strcmp(message, expected) != 0) {
    return it_error(error, EINVAL, "%s: get_last_error returned \"%s\", expected \"%s\"",
                    what, message == NULL ? "(null)" : message, expected);
  }
  return FERRY_OK;
}

static int unexpected_failure(struct ArrowDeviceArrayStream* stream, int rc,
                              const char* what, struct FerryError* error) {
  const char* message = stream_message(stream);
  return it_error(error, rc, "%s failed with %s (%d): %s", what, ferry_errno_name(rc), rc,
                  message == NULL ? "(no message)" : message);
}

static int release_batch(struct ArrowDeviceArray* batch, const char* where,
                         struct FerryError* error) {
  if (batch->array.release == NULL) return FERRY_OK;
  batch->array.release(&batch->array);
  if (batch->array.release != NULL) {
    return it_error(error, EINVAL, "%srelease did not mark the array released", where);
  }
  return FERRY_OK;
}

static int check_batches(const struct it_case* c, struct ArrowDeviceArrayStream* stream,
                         const struct ArrowSchema* schema, struct FerryError* error) {
  int64_t failing_call = it_case_failing_get_next(c);
  int64_t batches_seen = 0;
  for (int64_t call = 1;; call++) {
    struct ArrowDeviceArray batch;
    memset(&batch, 0, sizeof(batch));
    int rc = stream->get_next(stream, &batch);
    char what[64];
    snprintf(what, sizeof(what), "get_next call %lld", (long long)call);
    if (call == failing_call) {
      char expected[64];
      snprintf(expected, sizeof(expected), "injected failure at get_next %lld",
               (long long)call);
      int checked = expect_injected(stream, rc, what, expected, error);
      if (rc == FERRY_OK) (void)release_batch(&batch, "", NULL);
      return checked;
    }
    if (rc != FERRY_OK) return unexpected_failure(stream, rc, what, error);
    if (batch.array.release == NULL) {
      if (batches_seen != c->batches) {
        return it_error(error, EINVAL, "stream ended after %lld batches, expected %lld",
                        (long long)batches_seen, (long long)c->batches);
      }
      if (failing_call != 0) {
        return it_error(error, EINVAL,
                        "stream ended before the injected failure at get_next call %lld",
                        (long long)failing_call);
      }
      return FERRY_OK;
    }
    char where[64];
    snprintf(where, sizeof(where), "batch %lld: ", (long long)batches_seen);
    if (batches_seen >= c->batches) {
      (void)release_batch(&batch, where, NULL);
      return it_error(error, EINVAL, "stream yielded more than %lld batches",
                      (long long)c->batches);
    }
    rc =
        it_check_array(c, c->seed + (uint32_t)batches_seen, schema, &batch, where, error);
    /* The batch is released whatever the outcome; a check failure wins. */
    struct FerryError release_error;
    int released = release_batch(&batch, where, &release_error);
    if (rc != FERRY_OK) return rc;
    if (released != FERRY_OK)
      return it_error(error, released, "%s", release_error.message);
    batches_seen++;
  }
}

int it_check_stream(const struct it_case* c, struct ArrowDeviceArrayStream* stream,
                    struct FerryError* error) {
  if (stream == NULL || stream->release == NULL) {
    return it_error(error, EINVAL, "stream is NULL or released");
  }
  if (stream->device_type != c->device_type) {
    return it_error(error, EINVAL, "stream device type: expected %s (%d), got %s (%d)",
                    c->device_name, (int)c->device_type,
                    ferry_device_type_name(stream->device_type),
                    (int)stream->device_type);
  }
  if (stream->get_schema == NULL || stream->get_next == NULL) {
    return it_error(error, EINVAL, "stream has no get_schema or get_next callback");
  }
  struct ArrowSchema schema;
  memset(&schema, 0, sizeof(schema));
  /* ArrowDeviceArrayStream's callbacks take the stream itself. */
  int rc = stream->get_schema(stream, &schema);
  if (c->fail == IT_FAIL_GET_SCHEMA) {
    int checked = expect_injected(stream, rc, "get_schema",
                                  "injected failure at get_schema", error);
    if (rc == FERRY_OK && schema.release != NULL) schema.release(&schema);
    return checked;
  }
  if (rc != FERRY_OK) return unexpected_failure(stream, rc, "get_schema", error);
  rc = it_check_schema(c, &schema, "", error);
  if (rc == FERRY_OK) rc = check_batches(c, stream, &schema, error);
  if (schema.release != NULL) schema.release(&schema);
  return rc;
}
