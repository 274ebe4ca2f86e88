/* The nine C entry points of ferry_it.h for the C runtime: each parses the
 * case, does its work through the other files of this plugin, and turns any
 * failure into an errno code plus this thread's last-error message. */
#include <errno.h>
#include <string.h>

#include "case_check.h"
#include "case_device.h"
#include "case_export.h"
#include "case_spec.h"
#include "ferry/ferry_it.h"
#include "ferry_it_async.h"
#include "plugin_state.h"
#include "stream_check.h"
#include "stream_export.h"

static int fail_with(int code, const struct FerryError* error) {
  return it_set_last_error(code, error->message);
}

/* Parses the case and handles fail=export, which must fail before anything
 * is allocated or any device is touched, on every machine alike. */
static int parse_for_export(const char* case_spec, struct it_case* c,
                            struct FerryError* error) {
  int rc = it_case_parse(case_spec, c, error);
  if (rc != FERRY_OK) return rc;
  if (c->fail == IT_FAIL_EXPORT)
    return it_error(error, EIO, "injected failure at export");
  return FERRY_OK;
}

int ferry_it_export_array(const char* case_spec, struct ArrowSchema* schema_out,
                          struct ArrowDeviceArray* array_out) {
  struct FerryError error = {0};
  if (schema_out == NULL || array_out == NULL) {
    return it_set_last_error(
        EINVAL, "ferry_it_export_array: schema_out and array_out must not be NULL");
  }
  struct it_case c;
  struct FerryDevice* device = NULL;
  int rc = parse_for_export(case_spec, &c, &error);
  if (rc == FERRY_OK) rc = it_case_device_resolve(&c, case_spec, &device, &error);
  if (rc == FERRY_OK) rc = it_export_schema(&c, schema_out, &error);
  if (rc != FERRY_OK) return fail_with(rc, &error);
  rc = it_export_array(&c, c.seed, device, array_out, &error);
  if (rc != FERRY_OK) {
    ferry_schema_release(schema_out);
    return fail_with(rc, &error);
  }
  return FERRY_OK;
}

int ferry_it_export_stream(const char* case_spec, struct ArrowDeviceArrayStream* out) {
  struct FerryError error = {0};
  if (out == NULL) {
    return it_set_last_error(EINVAL, "ferry_it_export_stream: out must not be NULL");
  }
  struct it_case c;
  struct FerryDevice* device = NULL;
  int rc = parse_for_export(case_spec, &c, &error);
  if (rc == FERRY_OK) rc = it_case_device_resolve(&c, case_spec, &device, &error);
  if (rc == FERRY_OK) rc = it_export_stream(&c, device, out, &error);
  return rc == FERRY_OK ? FERRY_OK : fail_with(rc, &error);
}

/* Releases what a checker was handed, through the producer's own callbacks,
 * and reports a release that does not mark its struct released. */
static int release_schema(struct ArrowSchema* schema, struct FerryError* error) {
  if (schema == NULL || schema->release == NULL) return FERRY_OK;
  schema->release(schema);
  if (schema->release != NULL) {
    return it_error(error, EINVAL, "schema release did not mark the schema released");
  }
  return FERRY_OK;
}

static int release_array(struct ArrowDeviceArray* array, struct FerryError* error) {
  if (array == NULL || array->array.release == NULL) return FERRY_OK;
  array->array.release(&array->array);
  if (array->array.release != NULL) {
    return it_error(error, EINVAL, "array release did not mark the array released");
  }
  return FERRY_OK;
}

int ferry_it_check_array(const char* case_spec, struct ArrowSchema* schema,
                         struct ArrowDeviceArray* array) {
  struct FerryError error = {0};
  struct it_case c;
  int rc = it_case_parse(case_spec, &c, &error);
  if (rc == FERRY_OK && (schema == NULL || array == NULL)) {
    rc = it_error(&error, EINVAL,
                  "ferry_it_check_array: schema and array must not be NULL");
  }
  if (rc == FERRY_OK) rc = it_check_schema(&c, schema, "", &error);
  if (rc == FERRY_OK) rc = it_check_array(&c, c.seed, schema, array, "", &error);
  /* Ownership was taken: release on success and on failure alike. The first
   * failure is the one reported. */
  struct FerryError release_error = {0};
  int released = release_array(array, &release_error);
  int schema_released = release_schema(schema, &release_error);
  if (rc == FERRY_OK) rc = released != FERRY_OK ? released : schema_released;
  if (rc != FERRY_OK) {
    return fail_with(rc, error.message[0] != '\0' ? &error : &release_error);
  }
  return FERRY_OK;
}

int ferry_it_check_stream(const char* case_spec, struct ArrowDeviceArrayStream* stream) {
  struct FerryError error = {0};
  struct it_case c;
  int rc = it_case_parse(case_spec, &c, &error);
  if (rc == FERRY_OK) rc = it_check_stream(&c, stream, &error);
  int released = FERRY_OK;
  if (stream != NULL && stream->release != NULL) {
    stream->release(stream);
    if (stream->release != NULL) {
      released = EINVAL;
      if (rc == FERRY_OK) {
        it_error(&error, EINVAL, "stream release did not mark the stream released");
      }
    }
  }
  if (rc == FERRY_OK) rc = released;
  return rc == FERRY_OK ? FERRY_OK : fail_with(rc, &error);
}

int64_t ferry_it_live_allocations(void) { return it_live_allocations(); }

const char* ferry_it_last_error(void) { return it_last_error(); }

/* ---- async device streams: the generic layer over the entry points above ---- */

/* The generic layer keeps its own per-thread message: copied into this
 * plugin's, so that ferry_it_last_error answers for these calls too. */
static int async_outcome(int rc) {
  return rc == 0 ? 0 : it_set_last_error(rc, ferry_it_async_last_error());
}

int ferry_it_export_async(const char* case_spec,
                          struct ArrowAsyncDeviceStreamHandler* handler) {
  /* C is thread-safe: ferry's producer thread pulls from the stream. */
  return async_outcome(ferry_it_async_export_generic(
      case_spec, handler, ferry_it_export_stream, ferry_it_last_error, 0));
}

int ferry_it_check_async(const char* case_spec,
                         struct ArrowAsyncDeviceStreamHandler* handler_out,
                         void** ticket_out) {
  return async_outcome(ferry_it_async_check_generic(
      case_spec, handler_out, ticket_out, ferry_it_check_stream, ferry_it_last_error));
}

int ferry_it_async_result(void* ticket, int64_t timeout_ms) {
  return async_outcome(ferry_it_async_result_generic(ticket, timeout_ms));
}
