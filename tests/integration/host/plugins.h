/* Loading the runtimes' test plugins into one process, in the order the
 * runtimes require (docs/embedding.md):
 *   c, rust, lua   no signal handlers, no global runtime: any order
 *   java           creates (or joins) the JVM; its handlers lack SA_ONSTACK
 *   (fix-up)       every installed handler gets SA_ONSTACK
 *   go             last: Go saves the JVM's handlers and forwards to them
 * A plugin is never dlclosed (a Go c-shared library cannot be). */
#ifndef FERRY_IT_HOST_PLUGINS_H
#define FERRY_IT_HOST_PLUGINS_H

#include <stddef.h>
#include <stdint.h>

#include "ferry_it.h"

#define IT_MAX_RUNTIMES 5

struct it_runtime {
  const char* name; /* c, rust, go, java, lua */
  char path[4096];
  int present;      /* the file exists */
  int loaded;       /* dlopen and all six dlsym succeeded */
  char problem[4200]; /* why not loaded (missing file, dlopen error) */
  void* handle;
  ferry_it_export_array_fn export_array;
  ferry_it_check_array_fn check_array;
  ferry_it_export_stream_fn export_stream;
  ferry_it_check_stream_fn check_stream;
  ferry_it_live_allocations_fn live_allocations;
  ferry_it_last_error_fn last_error;
};

/* The runtimes in load order (c, rust, lua, java, go). */
extern const char* const it_runtime_load_order[IT_MAX_RUNTIMES];

/* Returns 1 when `name` is one of the five runtimes. */
int it_runtime_name_known(const char* name);

/* Fills `rt` for `name` with the path `plugin_dir`/libferry_it_<name>.so and
 * loads it when the file exists; sets present/loaded/problem. Does not
 * print. Returns 0 when loaded. */
int it_runtime_load(struct it_runtime* rt, const char* name, const char* plugin_dir);

/* The same from an explicit file (a --plugin NAME=PATH override). */
int it_runtime_load_path(struct it_runtime* rt, const char* name, const char* path);

/* Re-installs every signal handler that is neither SIG_DFL nor SIG_IGN with
 * SA_ONSTACK added (what Go does for handlers installed before it loads);
 * needed when the JVM was created in this process before the Go runtime.
 * Returns the number of handlers changed. */
int it_signal_add_onstack(void);

/* Makes the Java plugin create (or join) its JVM now, before Go loads: one
 * cheap export and release. 0, or -1 with the reason in `message`. */
int it_runtime_start_jvm(struct it_runtime* java, char* message, size_t size);

/* Returns the runtime's last error message, never NULL. */
const char* it_runtime_error(const struct it_runtime* rt);

#endif  // FERRY_IT_HOST_PLUGINS_H
