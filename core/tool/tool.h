/* Shared declarations of the `ferry` command-line tool (the sources in core/tool).
 *
 * Every command that calls foreign code (a producer, its release callbacks,
 * a plugin) runs that code in a forked child; the child reports through a
 * pipe, line by line, so a crash, a hang or an exit of the child loses
 * nothing already reported and becomes a finding in the parent. */
#ifndef FERRY_TOOL_TOOL_H
#define FERRY_TOOL_TOOL_H

#include <stdint.h>

#include "ferry/ferry.h"

/* Exit codes of the tool. */
#define TOOL_EXIT_CLEAN 0
#define TOOL_EXIT_FINDINGS 1
#define TOOL_EXIT_USAGE 2

/* Default limit for one isolated run, in seconds (--timeout changes it). */
#define TOOL_DEFAULT_TIMEOUT_SECONDS 20

/* ---- isolate.c: the forked child and its report channel -------------------- */

/* The work done inside the child; returns normally when finished. */
typedef void (*tool_child_fn)(void* arg);

/* Summary of one isolated run, as seen by the parent. */
struct tool_run_result {
  int64_t n_findings; /* FAIL lines, including crash/timeout/exit findings */
  int64_t n_ok;       /* OK lines */
  int usage_error;    /* the child reported a usage error (bad library, symbol) */
};

/* Runs `fn(arg)` in a forked child, printing what it reports (FAIL lines,
 * OK lines, plain output) as it arrives, and turns a crash, a timeout of
 * `timeout_seconds` or an unexpected exit into a FAIL line naming the stage
 * the child was in. Returns 0, or -1 when the child could not be started. */
int tool_run_isolated(tool_child_fn fn, void* arg, int timeout_seconds,
                      struct tool_run_result* result);

/* In the child: report a finding / an OK line / plain output / the stage. */
void tool_fail(const char* rule, const char* where, const char* fmt, ...)
    __attribute__((format(printf, 3, 4)));
void tool_ok(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void tool_out(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void tool_stage(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
/* In the child: report a usage error (the parent exits 2). */
void tool_usage_error(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
/* Number of FAIL lines this child has reported so far. */
int64_t tool_child_findings(void);

/* Splits "LIB.so:SYMBOL" at its last ':'; 0 on success, -1 when malformed. */
int tool_split_target(const char* target, char* lib, size_t lib_size, char* symbol,
                      size_t symbol_size);
/* In the child: dlopen `lib` and dlsym `symbol`; reports a usage error and
 * returns NULL on failure. */
void* tool_load_symbol(const char* lib, const char* symbol, void** handle_out);

/* ---- check.c: the checks of `ferry check` ----------------------------------- */

/* Release counting is the harness's release watch (core/harness/release_watch.h):
 * structs are watched with it_watch_*; this reports every finding of `group`
 * as a FAIL line of rule "release" and returns how many there were. */
int64_t tool_verify_releases(int group);

/* Validates (FULL) an exported array, waits on its event, and reports each
 * finding prefixed by `prefix` ("" or "batch[2]."). */
void tool_check_device_array(const struct ArrowSchema* schema,
                             const struct ArrowDeviceArray* array, const char* prefix);
/* Reads a whole stream with the stream checks; takes ownership of it.
 * `expect_fail` is NULL or the injected failure expected ("get_schema",
 * "get_next@N"). */
void tool_check_stream(struct ArrowDeviceArrayStream* stream, const char* expect_fail);

/* ---- inspect.c ----------------------------------------------------------------- */

void tool_print_schema(const struct ArrowSchema* schema, const char* where, int depth);
void tool_print_device_array(const struct ArrowSchema* schema,
                             const struct ArrowDeviceArray* array);

/* ---- commands (one file each) ------------------------------------------------ */

int tool_cmd_devices(void);
int tool_cmd_inspect(const char* target, int stream, int timeout_seconds);
int tool_cmd_check(const char* target, int stream, int timeout_seconds);
int tool_cmd_check_plugin(const char* plugin, const char* case_spec, int stream,
                          int async, int timeout_seconds);
/* check_async.c: `ferry check --async LIB.so:SYMBOL`. */
int tool_cmd_check_async(const char* target, int timeout_seconds);

/* Default limit of one async run (`ferry check --async`), in seconds. */
#define TOOL_DEFAULT_ASYNC_TIMEOUT_SECONDS 10

/* Prints the summary line and maps a run to the exit code. */
int tool_finish(const char* what, const struct tool_run_result* result);

#endif  // FERRY_TOOL_TOOL_H
