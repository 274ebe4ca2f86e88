/* A test plugin that misbehaves on purpose, so that the host's self-test
 * can show that every assertion of ferry_it_host fails when it should.
 *
 * It forwards the six entry points to the real C plugin (the path in
 * FERRY_IT_WRAPPED_PLUGIN) and breaks one rule chosen by FERRY_IT_MISBEHAVE:
 *   double_release   the checker calls the array's release a second time
 *   keep_array       the checker returns 0 without releasing the array
 *   skip_wait        the checker drops the sync event before checking
 *   swap_buffers     the checker releases the array with another buffers list
 *   ignore_data      the checker never reads the buffers (always "fine")
 *   leak_export      every export leaves one allocation counted as live
 *   wrong_message    fail=export reports another message
 *   stop_early       the stream checker releases the stream after one batch
 *   swallow_failure  the stream checker hides the injected get_next failure
 *                    by releasing the stream and claiming success at once */
#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ferry/ferry.h"
#include "ferry/ferry_it.h"

static void* g_wrapped;
static _Atomic int64_t g_extra_live;
static _Thread_local char g_message[512];

static const char* mode(void) {
  const char* m = getenv("FERRY_IT_MISBEHAVE");
  return m == NULL ? "" : m;
}

static int is(const char* name) { return strcmp(mode(), name) == 0; }

static void* wrapped(const char* symbol) {
  if (g_wrapped == NULL) {
    const char* path = getenv("FERRY_IT_WRAPPED_PLUGIN");
    g_wrapped = path == NULL ? NULL : dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (g_wrapped == NULL) {
      fprintf(stderr, "misbehaving_plugin: cannot load FERRY_IT_WRAPPED_PLUGIN\n");
      abort();
    }
  }
  return dlsym(g_wrapped, symbol);
}

FERRY_IT_EXPORT const char* ferry_it_last_error(void) {
  if (g_message[0] != '\0') return g_message;
  return ((ferry_it_last_error_fn)wrapped("ferry_it_last_error"))();
}

FERRY_IT_EXPORT int64_t ferry_it_live_allocations(void) {
  return ((ferry_it_live_allocations_fn)wrapped("ferry_it_live_allocations"))() +
         atomic_load(&g_extra_live);
}

static int exported(int rc, const char* case_spec) {
  g_message[0] = '\0';
  if (rc == 0 && is("leak_export")) atomic_fetch_add(&g_extra_live, 1);
  if (rc != 0 && is("wrong_message") && strstr(case_spec, "fail=export") != NULL) {
    snprintf(g_message, sizeof g_message, "something else went wrong");
  }
  return rc;
}

FERRY_IT_EXPORT int ferry_it_export_array(const char* case_spec, struct ArrowSchema* schema,
                                          struct ArrowDeviceArray* array) {
  int rc = ((ferry_it_export_array_fn)wrapped("ferry_it_export_array"))(case_spec, schema,
                                                                        array);
  return exported(rc, case_spec);
}

FERRY_IT_EXPORT int ferry_it_export_stream(const char* case_spec,
                                           struct ArrowDeviceArrayStream* out) {
  int rc = ((ferry_it_export_stream_fn)wrapped("ferry_it_export_stream"))(case_spec, out);
  return exported(rc, case_spec);
}

FERRY_IT_EXPORT int ferry_it_check_array(const char* case_spec, struct ArrowSchema* schema,
                                         struct ArrowDeviceArray* array) {
  g_message[0] = '\0';
  ferry_it_check_array_fn check = (ferry_it_check_array_fn)wrapped("ferry_it_check_array");
  if (is("keep_array")) {
    ferry_schema_release(schema);
    return 0;
  }
  if (is("ignore_data")) {
    ferry_schema_release(schema);
    ferry_device_array_release(array);
    return 0;
  }
  if (is("skip_wait")) array->sync_event = NULL;
  if (is("double_release")) {
    void (*release)(struct ArrowArray*) = array->array.release;
    struct ArrowDeviceArray moved = *array;
    array->array.release = NULL;
    int rc = check(case_spec, schema, &moved);
    /* `moved` is released now; calling the saved callback again is the bug. */
    if (rc == 0) release(&moved.array);
    return rc;
  }
  if (is("swap_buffers")) {
    /* A consumer that hands back another buffers list than it received. */
    int64_t n = array->array.n_buffers;
    const void** own = (const void**)calloc((size_t)n + 1, sizeof *own);
    if (own == NULL) return ENOMEM;
    if (n > 0) memcpy(own, array->array.buffers, (size_t)n * sizeof *own);
    own[n > 1 ? 1 : 0] = g_message;
    array->array.buffers = own;
    ferry_schema_release(schema);
    ferry_device_array_release(array);
    free(own);
    return 0;
  }
  return check(case_spec, schema, array);
}

FERRY_IT_EXPORT int ferry_it_check_stream(const char* case_spec,
                                          struct ArrowDeviceArrayStream* stream) {
  g_message[0] = '\0';
  ferry_it_check_stream_fn check = (ferry_it_check_stream_fn)wrapped("ferry_it_check_stream");
  if (is("stop_early") || is("swallow_failure")) {
    struct ArrowSchema schema;
    struct ArrowDeviceArray batch;
    memset(&schema, 0, sizeof schema);
    memset(&batch, 0, sizeof batch);
    if (stream->get_schema(stream, &schema) == 0) ferry_schema_release(&schema);
    if (is("stop_early") && stream->get_next(stream, &batch) == 0) {
      ferry_device_array_release(&batch);
    }
    stream->release(stream);
    return 0;
  }
  return check(case_spec, stream);
}
