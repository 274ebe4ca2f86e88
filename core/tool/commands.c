/* The commands of the ferry tool: devices, inspect, check (arrays, streams)
 * and check --plugin (a cross-language test plugin's export of a case). */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "allocations.h"
#include "case_spec.h"
#include "ferry/ferry_it.h"
#include "plugin.h"
#include "release_watch.h"
#include "tool.h"

typedef int (*array_producer_fn)(struct ArrowSchema*, struct ArrowDeviceArray*);
typedef int (*stream_producer_fn)(struct ArrowDeviceArrayStream*);

/* ---- devices ---------------------------------------------------------------- */

int tool_cmd_devices(void) {
  int64_t n = ferry_backend_count();
  for (int64_t i = 0; i < n; i++) {
    struct FerryError error;
    ferry_error_init(&error);
    int rc = ferry_backend_probe(i, &error);
    if (rc == FERRY_OK) {
      printf("%-6s available\n", ferry_backend_name(i));
    } else {
      printf("%-6s unavailable (%s): %s\n", ferry_backend_name(i), ferry_errno_name(rc),
             error.message);
    }
  }
  return TOOL_EXIT_CLEAN;
}

/* ---- inspect ---------------------------------------------------------------- */

struct target_args {
  char lib[PATH_MAX];
  char symbol[512];
  int stream;
};

static int parse_target(const char* target, struct target_args* args) {
  if (tool_split_target(target, args->lib, sizeof args->lib, args->symbol,
                        sizeof args->symbol) != 0) {
    fprintf(stderr, "ferry: \"%s\" is not LIB.so:SYMBOL\n", target);
    return -1;
  }
  return 0;
}

/* Calls the producer `fn` (named `symbol`) of the array signature into
 * zeroed structs; a non-zero return is reported as a finding and returned.
 * The caller owns what the producer filled either way. */
static int call_array_producer(void* fn, const char* symbol, struct ArrowSchema* schema,
                               struct ArrowDeviceArray* array) {
  memset(schema, 0, sizeof *schema);
  memset(array, 0, sizeof *array);
  tool_stage("the producer call %s", symbol);
  int rc = ((array_producer_fn)fn)(schema, array);
  if (rc != 0) {
    tool_fail("return_code", "root", "producer returned %d (%s)", rc, ferry_errno_name(rc));
  }
  return rc;
}

/* The same for a stream producer. */
static int call_stream_producer(void* fn, const char* symbol,
                                struct ArrowDeviceArrayStream* stream) {
  memset(stream, 0, sizeof *stream);
  tool_stage("the producer call %s", symbol);
  int rc = ((stream_producer_fn)fn)(stream);
  if (rc != 0) {
    tool_fail("return_code", "stream", "producer returned %d (%s)", rc,
              ferry_errno_name(rc));
  }
  return rc;
}

/* Waits on the array's event so that sizes read from device memory are real. */
static void wait_before_reading(const struct ArrowDeviceArray* array) {
  if (array->sync_event == NULL || array->device_type == ARROW_DEVICE_CPU) return;
  struct FerryError error;
  ferry_error_init(&error);
  tool_stage("waiting on sync_event");
  if (ferry_device_array_wait(array, NULL, &error) != FERRY_OK) {
    tool_out("(waiting on sync_event failed: %s)", error.message);
  }
}

static void inspect_child(void* arg) {
  struct target_args* args = (struct target_args*)arg;
  void* fn = tool_load_symbol(args->lib, args->symbol, NULL);
  if (fn == NULL) return;
  if (!args->stream) {
    struct ArrowSchema schema;
    struct ArrowDeviceArray array;
    if (call_array_producer(fn, args->symbol, &schema, &array) != 0) return;
    tool_stage("printing");
    tool_out("schema:");
    tool_print_schema(&schema, "root", 1);
    wait_before_reading(&array);
    tool_print_device_array(&schema, &array);
    tool_stage("release");
    if (array.array.release != NULL) array.array.release(&array.array);
    if (schema.release != NULL) schema.release(&schema);
    return;
  }
  struct ArrowDeviceArrayStream stream;
  if (call_stream_producer(fn, args->symbol, &stream) != 0) return;
  tool_out("stream: device %s (device_type %d)",
           ferry_device_type_name(stream.device_type), (int)stream.device_type);
  struct ArrowSchema schema;
  memset(&schema, 0, sizeof schema);
  tool_stage("get_schema");
  int rc = stream.get_schema(&stream, &schema);
  if (rc != 0) {
    tool_stage("get_last_error");
    const char* message = stream.get_last_error ? stream.get_last_error(&stream) : NULL;
    tool_fail("stream_error", "stream", "get_schema returned %d: %s", rc,
              message ? message : "(no message)");
  } else {
    tool_out("schema:");
    tool_print_schema(&schema, "root", 1);
    for (int64_t b = 0;; b++) {
      struct ArrowDeviceArray batch;
      memset(&batch, 0, sizeof batch);
      tool_stage("get_next call %lld", (long long)(b + 1));
      rc = stream.get_next(&stream, &batch);
      if (rc != 0) {
        tool_stage("get_last_error");
        const char* message =
            stream.get_last_error ? stream.get_last_error(&stream) : NULL;
        tool_fail("stream_error", "stream", "get_next returned %d: %s", rc,
                  message ? message : "(no message)");
        break;
      }
      if (batch.array.release == NULL) {
        tool_out("end of stream after %lld batches", (long long)b);
        break;
      }
      tool_out("batch %lld:", (long long)b);
      wait_before_reading(&batch);
      tool_print_device_array(&schema, &batch);
      tool_stage("release of batch %lld", (long long)b);
      batch.array.release(&batch.array);
    }
    tool_stage("release of the schema");
    schema.release(&schema);
  }
  tool_stage("release of the stream");
  if (stream.release != NULL) stream.release(&stream);
}

int tool_cmd_inspect(const char* target, int stream, int timeout_seconds) {
  struct target_args args;
  memset(&args, 0, sizeof args);
  if (parse_target(target, &args) != 0) return TOOL_EXIT_USAGE;
  args.stream = stream;
  struct tool_run_result result;
  if (tool_run_isolated(inspect_child, &args, timeout_seconds, &result) != 0) {
    return TOOL_EXIT_USAGE;
  }
  if (result.usage_error) return TOOL_EXIT_USAGE;
  return result.n_findings == 0 ? TOOL_EXIT_CLEAN : TOOL_EXIT_FINDINGS;
}

/* ---- check LIB:SYMBOL ----------------------------------------------------------- */

/* Releases an array and its schema through the interposed callbacks and
 * verifies that every struct was released exactly once. */
static void release_and_verify(struct ArrowSchema* schema, struct ArrowDeviceArray* array,
                               int group) {
  tool_stage("release of the array");
  if (array->array.release != NULL) array->array.release(&array->array);
  tool_stage("release of the schema");
  if (schema->release != NULL) schema->release(schema);
  tool_stage("verification of the releases");
  tool_verify_releases(group);
}

/* After a failed export: nothing may have been left live. */
static void check_left_released(struct ArrowSchema* schema,
                                struct ArrowDeviceArray* array) {
  if (schema->release != NULL || array->array.release != NULL) {
    tool_fail("released", "root",
              "the export failed but left the %s live; on failure the outputs must stay "
              "released",
              schema->release != NULL ? "schema" : "array");
    int group = it_watch_new_group();
    it_watch_schema(schema, "schema");
    it_watch_array(&array->array, "root");
    release_and_verify(schema, array, group);
  }
}

static void check_array_child(void* arg) {
  struct target_args* args = (struct target_args*)arg;
  void* fn = tool_load_symbol(args->lib, args->symbol, NULL);
  if (fn == NULL) return;
  struct ArrowSchema schema;
  struct ArrowDeviceArray array;
  if (call_array_producer(fn, args->symbol, &schema, &array) != 0) {
    check_left_released(&schema, &array);
    return;
  }
  if (schema.release == NULL)
    tool_fail("released", "schema", "the exported schema is released");
  int group = it_watch_new_group();
  it_watch_schema(&schema, "schema");
  it_watch_array(&array.array, "root");
  tool_check_device_array(&schema, &array, "");
  release_and_verify(&schema, &array, group);
}

static void check_stream_child(void* arg) {
  struct target_args* args = (struct target_args*)arg;
  void* fn = tool_load_symbol(args->lib, args->symbol, NULL);
  if (fn == NULL) return;
  struct ArrowDeviceArrayStream stream;
  if (call_stream_producer(fn, args->symbol, &stream) != 0) return;
  if (stream.release == NULL) {
    tool_fail("released", "stream", "the exported stream is released");
    return;
  }
  tool_check_stream(&stream, NULL);
}

int tool_cmd_check(const char* target, int stream, int timeout_seconds) {
  struct target_args args;
  memset(&args, 0, sizeof args);
  if (parse_target(target, &args) != 0) return TOOL_EXIT_USAGE;
  args.stream = stream;
  struct tool_run_result result;
  if (tool_run_isolated(stream ? check_stream_child : check_array_child, &args,
                        timeout_seconds, &result) != 0) {
    return TOOL_EXIT_USAGE;
  }
  char what[PATH_MAX + 600];
  snprintf(what, sizeof what, "check%s %s", stream ? " --stream" : "", target);
  return tool_finish(what, &result);
}

/* ---- check --plugin LIB --case CASE ---------------------------------------------- */

struct plugin_args {
  const char* plugin;
  const char* case_spec;
  int stream;
  int async;                        /* --async: the plugin's ferry_it_export_async */
  int timeout_seconds;              /* the child's limit */
  char checker_path[PATH_MAX + 64]; /* the binary's directory + the plugin's name */
};

/* The failure the case injects where a checker meets it ("export",
 * "get_schema", "get_next@2") as the harness's parser reads it; empty when
 * there is none, when a get_next failure lies beyond the end of the stream
 * (it_case_failing_get_next: never reached) or when the case does not parse
 * (the plugin must refuse it then). */
static void case_fail_key(const char* case_spec, char* out, size_t out_size) {
  out[0] = '\0';
  struct it_case c;
  if (it_case_parse(case_spec, &c, NULL) != FERRY_OK) return;
  switch (c.fail) {
    case IT_FAIL_NONE: break;
    case IT_FAIL_EXPORT: snprintf(out, out_size, "export"); break;
    case IT_FAIL_GET_SCHEMA: snprintf(out, out_size, "get_schema"); break;
    case IT_FAIL_GET_NEXT:
      if (it_case_failing_get_next(&c) > 0) {
        snprintf(out, out_size, "get_next@%lld", (long long)c.fail_at);
      }
      break;
    case IT_FAIL_CONSUMER: break; /* async only: a plain stream for sync checkers */
  }
}

/* The allocation ledger of the plugin under test (and of the core and the
 * sim devices): a finding when it is not back at `baseline`. */
static void check_leaks(const struct it_plugin* plugin, const struct it_allocations* baseline,
                        const char* when) {
  char why[256];
  if (it_allocations_expect(baseline, &plugin, 1, why, sizeof why) != 0) {
    tool_fail("leak", "root", "%s: %s: something was not released or freed", when, why);
  }
}

/* Loads the C checker for the value checks; reports why when it cannot. */
static int load_checker(const struct plugin_args* args, struct it_plugin* checker) {
  it_plugin_load(checker, "c", args->checker_path);
  if (checker->handle == NULL) {
    tool_fail("values", "root", "cannot load the C checker plugin %s: %s (set FERRY_IT_C_PLUGIN)",
              args->checker_path, checker->problem);
    return -1;
  }
  if ((args->stream ? (void*)checker->check_stream : (void*)checker->check_array) == NULL) {
    tool_fail("values", "root", "%s does not export ferry_it_check_%s", args->checker_path,
              args->stream ? "stream" : "array");
    return -1;
  }
  const char* missing = NULL;
  if (args->async && !it_plugin_has_async(checker, &missing)) {
    tool_fail("values", "root", "%s does not export %s", args->checker_path, missing);
    return -1;
  }
  return 0;
}

/* After a failed ferry_it_export_*: whether it is the failure the case
 * injected ("fail=export"), a finding (at `where`) when it is not. The
 * plugin's message is returned through `message`. */
static int export_failure_expected(const struct it_plugin* plugin, const char* fail_key,
                                   const char* call, const char* where, int rc,
                                   const char** message) {
  *message = it_plugin_error(plugin);
  int expected = strcmp(fail_key, "export") == 0 &&
                 strstr(*message, "injected failure at export") != NULL;
  if (!expected) {
    tool_fail("return_code", where, "%s returned %d (%s): %s", call, rc,
              ferry_errno_name(rc), *message);
  }
  return expected;
}

/* After a ferry_it_export_* `call` that succeeded: a finding (at `where`)
 * when the case injected a failure at export. */
static void check_injection_happened(const char* fail_key, const char* call,
                                     const char* where) {
  if (strcmp(fail_key, "export") == 0) {
    tool_fail("injection", where, "%s succeeded, expected \"injected failure at export\"",
              call);
  }
}

static void plugin_array_child(const struct plugin_args* args,
                               const struct it_plugin* plugin, const char* fail_key,
                               const struct it_allocations* baseline) {
  struct ArrowSchema schema;
  struct ArrowDeviceArray array;
  memset(&schema, 0, sizeof schema);
  memset(&array, 0, sizeof array);
  tool_stage("ferry_it_export_array(\"%s\")", args->case_spec);
  int rc = plugin->export_array(args->case_spec, &schema, &array);
  if (rc != 0) {
    const char* message = NULL;
    int expected = export_failure_expected(plugin, fail_key, "ferry_it_export_array",
                                           "root", rc, &message);
    int64_t before = tool_child_findings();
    check_left_released(&schema, &array);
    check_leaks(plugin, baseline, "after the failed export");
    if (expected && tool_child_findings() == before) {
      tool_ok("injected failure: %s", message);
    }
    return;
  }
  check_injection_happened(fail_key, "ferry_it_export_array", "root");
  int group = it_watch_new_group();
  it_watch_schema(&schema, "schema");
  it_watch_array(&array.array, "root");
  tool_check_device_array(&schema, &array, "");

  struct it_plugin checker;
  if (load_checker(args, &checker) != 0) {
    release_and_verify(&schema, &array, group);
  } else {
    tool_stage("ferry_it_check_array (the value checks, which release the array)");
    rc = checker.check_array(args->case_spec, &schema, &array);
    if (rc != 0) {
      tool_fail("values", "root", "the C checker rejected the values: %s",
                it_plugin_error(&checker));
    }
    tool_stage("verification of the releases");
    tool_verify_releases(group);
  }
  check_leaks(plugin, baseline, "after the release");
}

static void plugin_stream_child(const struct plugin_args* args,
                                const struct it_plugin* plugin, const char* fail_key,
                                const struct it_allocations* baseline) {
  /* Pass 1: the structural stream checks consume one export of the case. */
  struct ArrowDeviceArrayStream stream;
  memset(&stream, 0, sizeof stream);
  tool_stage("ferry_it_export_stream(\"%s\")", args->case_spec);
  int rc = plugin->export_stream(args->case_spec, &stream);
  if (rc != 0) {
    const char* message = NULL;
    int expected = export_failure_expected(plugin, fail_key, "ferry_it_export_stream",
                                           "stream", rc, &message);
    int64_t before = tool_child_findings();
    if (stream.release != NULL) {
      tool_fail("released", "stream", "the export failed but left the stream live");
      stream.release(&stream);
    }
    check_leaks(plugin, baseline, "after the failed export");
    if (expected && tool_child_findings() == before)
      tool_ok("injected failure: %s", message);
    return;
  }
  check_injection_happened(fail_key, "ferry_it_export_stream", "stream");
  tool_check_stream(&stream, fail_key[0] != '\0' ? fail_key : NULL);
  check_leaks(plugin, baseline, "after the stream was released");

  /* Pass 2: a fresh export of the same case for the value checks. */
  struct it_plugin checker;
  if (load_checker(args, &checker) != 0) return;
  memset(&stream, 0, sizeof stream);
  tool_stage("ferry_it_export_stream(\"%s\") for the value checks", args->case_spec);
  rc = plugin->export_stream(args->case_spec, &stream);
  if (rc != 0) {
    tool_fail("return_code", "stream", "the second ferry_it_export_stream returned %d: %s",
              rc, it_plugin_error(plugin));
    return;
  }
  int group = it_watch_new_group();
  it_watch_stream(&stream, "stream");
  tool_stage("ferry_it_check_stream (the value checks, which release the stream)");
  rc = checker.check_stream(args->case_spec, &stream);
  if (rc != 0) {
    tool_fail("values", "stream", "the C checker rejected the stream: %s",
              it_plugin_error(&checker));
  }
  tool_verify_releases(group);
  check_leaks(plugin, baseline, "after the value checks released the stream");
}

/* --async: the plugin's ferry_it_export_async into the strict checking
 * consumer of the C checker plugin (ferry_it_check_async, the generic layer
 * of core/harness/async: protocol and values), bounded by the timeout. */
static void plugin_async_child(const struct plugin_args* args,
                               const struct it_plugin* plugin, const char* fail_key,
                               const struct it_allocations* baseline) {
  struct it_plugin checker;
  if (load_checker(args, &checker) != 0) return;
  /* Heap memory, never freed: a hung producer may still call the handler. */
  struct ArrowAsyncDeviceStreamHandler* handler = calloc(1, sizeof *handler);
  if (handler == NULL) {
    tool_fail("setup", "async", "out of memory for the handler");
    return;
  }
  void* ticket = NULL;
  tool_stage("ferry_it_check_async(\"%s\") of the C checker", args->case_spec);
  int rc = checker.check_async(args->case_spec, handler, &ticket);
  if (rc != 0) {
    tool_fail("values", "async", "the C checker refused the case: %s",
              it_plugin_error(&checker));
    return;
  }
  tool_stage("ferry_it_export_async(\"%s\")", args->case_spec);
  rc = plugin->export_async(args->case_spec, handler);
  int injected = 0;
  const char* message = NULL;
  if (rc != 0) {
    injected = export_failure_expected(plugin, fail_key, "ferry_it_export_async", "async",
                                       rc, &message);
  } else {
    check_injection_happened(fail_key, "ferry_it_export_async", "async");
  }
  char said[1024];
  snprintf(said, sizeof said, "%s", message != NULL ? message : "");
  /* The child's own limit is the timeout: leave a second to report. */
  int64_t wait_ms =
      args->timeout_seconds > 1 ? (int64_t)(args->timeout_seconds - 1) * 1000 : 500;
  tool_stage("waiting %lld ms for the release and the strict checker's verdict",
             (long long)wait_ms);
  int verdict = checker.async_result(ticket, wait_ms);
  if (verdict == ETIMEDOUT) {
    tool_fail("async_hang", "async", "no verdict within %lld ms: %s", (long long)wait_ms,
              it_plugin_error(&checker));
    return;
  }
  int64_t before = tool_child_findings();
  if (verdict != 0) {
    tool_fail("async", "async", "the strict checker: %s (%s)", it_plugin_error(&checker),
              ferry_errno_name(verdict));
  }
  free(handler);
  /* The producer may free its own state after it released the handler (the
   * spec lets it clean up then, on its thread): the ledger is read again
   * until it is back or 3 s have passed, then judged. */
  char why[256];
  for (int ms = 0; ms < 3000; ms++) {
    if (it_allocations_expect(baseline, &plugin, 1, why, sizeof why) == 0) break;
    struct timespec pause = {0, 1000000};
    nanosleep(&pause, NULL);
  }
  check_leaks(plugin, baseline, "after the handler's release");
  if (tool_child_findings() == before) {
    if (injected) {
      tool_ok("injected failure: %s", said);
    } else {
      tool_ok("async: the strict checking consumer accepted the stream");
    }
  }
}

static void plugin_child(void* arg) {
  const struct plugin_args* args = (const struct plugin_args*)arg;
  static struct it_plugin plugin; /* 8 KiB: not on the child's stack */
  tool_stage("loading %s", args->plugin);
  /* A plugin may lack entry points this check does not call. */
  it_plugin_load(&plugin, NULL, args->plugin);
  if (plugin.handle == NULL) {
    tool_usage_error("cannot load plugin %s: %s", args->plugin, plugin.problem);
    return;
  }
  if ((args->stream ? (void*)plugin.export_stream : (void*)plugin.export_array) == NULL) {
    tool_usage_error("plugin %s does not export ferry_it_export_%s", args->plugin,
                     args->stream ? "stream" : "array");
    return;
  }
  const char* missing = NULL;
  if (args->async && !it_plugin_has_async(&plugin, &missing)) {
    tool_usage_error("plugin %s does not export %s", args->plugin, missing);
    return;
  }
  char why[256];
  if (it_allocations_init(why, sizeof why) != 0) {
    tool_fail("setup", "root", "%s", why);
    return;
  }
  char fail_key[64];
  case_fail_key(args->case_spec, fail_key, sizeof fail_key);
  const struct it_plugin* plugins = &plugin;
  struct it_allocations baseline;
  it_allocations_take(&baseline, &plugins, 1);
  if (args->async) {
    plugin_async_child(args, &plugin, fail_key, &baseline);
  } else if (args->stream) {
    plugin_stream_child(args, &plugin, fail_key, &baseline);
  } else {
    plugin_array_child(args, &plugin, fail_key, &baseline);
  }
}

/* The C checker: $FERRY_IT_C_PLUGIN, else ../plugins/ next to this binary. */
static void find_checker(char* out, size_t out_size) {
  const char* env = getenv("FERRY_IT_C_PLUGIN");
  if (env != NULL && env[0] != '\0') {
    snprintf(out, out_size, "%s", env);
    return;
  }
  char dir[PATH_MAX];
  if (it_plugin_dir_beside_exe(dir, sizeof dir) != 0) {
    snprintf(out, out_size, "libferry_it_c.so");
    return;
  }
  snprintf(out, out_size, "%s/libferry_it_c.so", dir);
}

int tool_cmd_check_plugin(const char* plugin, const char* case_spec, int stream,
                          int async, int timeout_seconds) {
  struct plugin_args args;
  memset(&args, 0, sizeof args);
  args.plugin = plugin;
  args.case_spec = case_spec;
  args.stream = stream || async;
  args.async = async;
  args.timeout_seconds = timeout_seconds;
  find_checker(args.checker_path, sizeof args.checker_path);
  struct tool_run_result result;
  if (tool_run_isolated(plugin_child, &args, timeout_seconds, &result) != 0) {
    return TOOL_EXIT_USAGE;
  }
  char what[PATH_MAX + 600];
  snprintf(what, sizeof what, "check --plugin %s --case %s%s", plugin, case_spec,
           async    ? " --async"
           : stream ? " --stream"
                    : "");
  return tool_finish(what, &result);
}
