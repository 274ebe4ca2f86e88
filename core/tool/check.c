/* The checks behind `ferry check`: structure (FULL validation, which also
 * covers reserved bytes, the device and its sync event), release exactly
 * once, and the stream protocol (schema, batches, end, errors, release). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "release_watch.h"
#include "tool.h"

/* A release-watch finding as a FAIL line. */
static void report_release(void* context, const struct it_watch_finding* f) {
  (void)context;
  const char* kind = it_watch_kind_name(f->kind);
  switch (f->problem) {
    case IT_WATCH_NEVER_RELEASED:
      tool_fail("release", f->where, "%s was never released%s", kind,
                strchr(f->where, '.') != NULL ? " by its parent's release" : "");
      break;
    case IT_WATCH_RELEASED_AGAIN:
      tool_fail("release", f->where, "%s was released %lld times (exactly once is allowed)",
                kind, (long long)f->count);
      break;
    case IT_WATCH_LEFT_SET:
      tool_fail("release", f->where, "the %s's release callback did not set release to NULL",
                kind);
      break;
    default: {
      char text[1024];
      it_watch_describe(f, text, sizeof text);
      tool_fail("release", f->where[0] != '\0' ? f->where : "?", "%s", text);
      break;
    }
  }
}

int64_t tool_verify_releases(int group) { return it_watch_verify(group, report_release, NULL); }

struct forward_context {
  const char* prefix;
};

/* Validator callback: each finding becomes a FAIL line. */
static void forward_finding(void* user_data, const char* rule, const char* where,
                            const char* what) {
  const struct forward_context* ctx = (const struct forward_context*)user_data;
  char path[1024];
  snprintf(path, sizeof path, "%s%s", ctx->prefix, where);
  tool_fail(rule, path, "%s", what);
}

void tool_check_device_array(const struct ArrowSchema* schema,
                             const struct ArrowDeviceArray* array, const char* prefix) {
  struct forward_context ctx = {prefix};
  tool_stage("validation of %sroot (the validator reads the buffers)", prefix);
  ferry_validate_device_array(schema, array, FERRY_VALIDATE_FULL, forward_finding, &ctx,
                              NULL);
}

/* Reads the stream's last error right after a failed call (the only time
 * the specification allows it). */
static const char* last_error_of(struct ArrowDeviceArrayStream* stream) {
  if (stream->get_last_error == NULL) return NULL;
  tool_stage("get_last_error");
  return stream->get_last_error(stream);
}

/* A failed stream call: either the injected failure the case expects
 * (reported as OK) or a finding. Returns 1 when it was the expected one. */
static int stream_call_failed(struct ArrowDeviceArrayStream* stream, const char* call,
                              int rc, const char* expected_message) {
  const char* message = last_error_of(stream);
  if (message == NULL) {
    tool_fail("stream_error", "stream",
              "%s returned %d (%s) but get_last_error returned NULL; a failing call must "
              "leave a message",
              call, rc, ferry_errno_name(rc));
    return 0;
  }
  if (expected_message != NULL && strstr(message, expected_message) != NULL) {
    tool_ok("injected failure: %s", message);
    return 1;
  }
  tool_fail("stream_error", "stream", "%s returned %d (%s): %s", call, rc,
            ferry_errno_name(rc), message);
  return 0;
}

/* Releases a stream and verifies the releases of its group. */
static void release_stream(struct ArrowDeviceArrayStream* stream, int group) {
  tool_stage("release of the stream");
  if (stream->release != NULL) stream->release(stream);
  tool_verify_releases(group);
}

void tool_check_stream(struct ArrowDeviceArrayStream* stream, const char* expect_fail) {
  int stream_group = it_watch_new_group();
  it_watch_stream(stream, "stream");
  if (stream->get_schema == NULL || stream->get_next == NULL) {
    tool_fail("stream", "stream", "get_schema or get_next is NULL");
    release_stream(stream, stream_group);
    return;
  }

  /* The messages the injection keys of cases.md promise. */
  char expected_message[128] = "";
  int64_t fail_at = -1;
  int expect_schema_failure = 0;
  if (expect_fail != NULL && strcmp(expect_fail, "get_schema") == 0) {
    expect_schema_failure = 1;
    snprintf(expected_message, sizeof expected_message, "injected failure at get_schema");
  } else if (expect_fail != NULL && strncmp(expect_fail, "get_next@", 9) == 0) {
    fail_at = strtoll(expect_fail + 9, NULL, 10);
    snprintf(expected_message, sizeof expected_message,
             "injected failure at get_next %lld", (long long)fail_at);
  }

  int schema_group = it_watch_new_group();
  struct ArrowSchema schema;
  memset(&schema, 0, sizeof schema);
  tool_stage("get_schema");
  int rc = stream->get_schema(stream, &schema);
  if (rc != 0) {
    stream_call_failed(stream, "get_schema", rc,
                       expect_schema_failure ? expected_message : NULL);
    if (schema.release != NULL) {
      tool_fail("stream_error", "schema", "get_schema failed but left a live schema");
      it_watch_schema(&schema, "schema");
      schema.release(&schema);
    }
    tool_verify_releases(schema_group);
    release_stream(stream, stream_group);
    return;
  }
  if (expect_schema_failure) {
    tool_fail("injection", "stream", "get_schema succeeded, expected \"%s\"",
              expected_message);
  }
  if (schema.release == NULL) {
    tool_fail("stream", "schema", "get_schema returned 0 but the schema is released");
    release_stream(stream, stream_group);
    return;
  }
  it_watch_schema(&schema, "schema");
  struct forward_context schema_ctx = {"schema."};
  tool_stage("validation of the stream's schema");
  ferry_validate_schema(&schema, forward_finding, &schema_ctx, NULL);

  int reached_end = 0;
  for (int64_t call = 1;; call++) {
    struct ArrowDeviceArray batch;
    memset(&batch, 0, sizeof batch);
    char call_name[64];
    snprintf(call_name, sizeof call_name, "get_next call %lld", (long long)call);
    tool_stage("%s", call_name);
    rc = stream->get_next(stream, &batch);
    if (rc != 0) {
      stream_call_failed(stream, call_name, rc,
                         call == fail_at ? expected_message : NULL);
      if (batch.array.release != NULL) {
        tool_fail("stream_error", "stream", "%s failed but left a live array", call_name);
        int group = it_watch_new_group();
        it_watch_array(&batch.array, "stream.failed_batch");
        batch.array.release(&batch.array);
        tool_verify_releases(group);
      }
      break;
    }
    if (call == fail_at) {
      tool_fail("injection", "stream", "%s succeeded, expected \"%s\"", call_name,
                expected_message);
    }
    if (batch.array.release == NULL) {
      reached_end = 1;
      break;
    }
    char prefix[64];
    snprintf(prefix, sizeof prefix, "batch[%lld].", (long long)(call - 1));
    char where[64];
    snprintf(where, sizeof where, "batch[%lld].root", (long long)(call - 1));
    int batch_group = it_watch_new_group();
    it_watch_array(&batch.array, where);
    if (batch.device_type != stream->device_type) {
      tool_fail("device", where,
                "batch device_type %d (%s) differs from the stream's device_type %d (%s)",
                (int)batch.device_type, ferry_device_type_name(batch.device_type),
                (int)stream->device_type, ferry_device_type_name(stream->device_type));
    }
    tool_check_device_array(&schema, &batch, prefix);
    tool_stage("release of batch %lld", (long long)(call - 1));
    batch.array.release(&batch.array);
    tool_verify_releases(batch_group);
  }

  if (reached_end) {
    if (fail_at > 0) {
      tool_fail("injection", "stream", "the stream ended before \"%s\"",
                expected_message);
    }
    /* The specification: once ended, a stream keeps returning the end. */
    struct ArrowDeviceArray extra;
    memset(&extra, 0, sizeof extra);
    tool_stage("get_next after the end of the stream");
    rc = stream->get_next(stream, &extra);
    if (rc != 0) {
      const char* message = last_error_of(stream);
      tool_fail("stream_end", "stream", "get_next after the end returned %d (%s): %s", rc,
                ferry_errno_name(rc), message ? message : "(no message)");
    } else if (extra.array.release != NULL) {
      tool_fail("stream_end", "stream", "get_next after the end returned another array");
      extra.array.release(&extra.array);
    }
  }

  tool_stage("release of the stream's schema");
  schema.release(&schema);
  tool_verify_releases(schema_group);
  release_stream(stream, stream_group);
}
