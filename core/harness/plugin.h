/* Loading test plugins (the entry points of ferry/ferry_it.h) into this
 * process: one plugin (`ferry check --plugin`, the conformance mode), or every
 * runtime of runtimes.def in the order the runtimes require (the matrix, the
 * demo, the benchmark):
 *   runtimes without a global runtime (c, rust, lua)   any order
 *   a runtime embedding an interpreter (python)         called once at load, so
 *                                                       that its interpreter starts
 *                                                       on the loading thread
 *   a runtime that starts a VM (java)                   started at once; its
 *                                                       handlers lack SA_ONSTACK
 *   (fix-up)                                            every installed handler
 *                                                       gets SA_ONSTACK
 *   a runtime that needs SA_ONSTACK (go)                last: Go saves the JVM's
 *                                                       handlers and forwards to them
 * A plugin is never dlclosed (a Go c-shared library cannot be). */
#ifndef FERRY_HARNESS_PLUGIN_H
#define FERRY_HARNESS_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#include "ferry/ferry_it.h"

/* ---- the runtimes (runtimes.def) ------------------------------------------ */

enum {
  IT_RUNTIME_STARTS_VM = 1u << 0,
  IT_RUNTIME_NEEDS_ONSTACK = 1u << 1,
  IT_RUNTIME_QUICK_EXIT = 1u << 2,
  IT_RUNTIME_FAST_CALLS = 1u << 3,
  IT_RUNTIME_START_ON_LOAD = 1u << 4
};

struct it_runtime_info {
  const char* name;           /* "c", "rust", ... */
  const char* builder;        /* "cmake" or the script that builds the plugin */
  unsigned traits;            /* IT_RUNTIME_* */
  const char* no_asan_reason; /* NULL, or why it is not loaded under ASan */
};

enum {
#define FERRY_IT_RUNTIME(name, builder, traits, no_asan_reason) IT_RUNTIME_INDEX_##name,
#include "runtimes.def"
#undef FERRY_IT_RUNTIME
  IT_MAX_RUNTIMES
};

/* The runtimes in load order: `it_runtimes[i]` for i < IT_MAX_RUNTIMES. */
extern const struct it_runtime_info it_runtimes[IT_MAX_RUNTIMES];

/* The runtime called `name`, or NULL. */
const struct it_runtime_info* it_runtime_find(const char* name);

/* "c, rust, lua, python, java, go": the names in load order, for messages. */
const char* it_runtime_names(void);

/* ---- one plugin --------------------------------------------------------------- */

struct it_plugin {
  char name[32];      /* the runtime's name, or taken from the file name */
  char path[4096];
  int present;        /* the file exists */
  int loaded;         /* dlopen and all six dlsym succeeded */
  char problem[4200]; /* why not loaded (missing file, dlopen error, missing symbol) */
  void* handle;       /* set when dlopen succeeded, even with a symbol missing */
  const struct it_runtime_info* runtime; /* NULL when `name` is no runtime of the list */
  ferry_it_export_array_fn export_array;
  ferry_it_check_array_fn check_array;
  ferry_it_export_stream_fn export_stream;
  ferry_it_check_stream_fn check_stream;
  ferry_it_live_allocations_fn live_allocations;
  ferry_it_last_error_fn last_error;
  /* The async entry points: optional (NULL when the plugin lacks them; the
   * hosts then report the runtime's async pairs as SKIPPED). */
  ferry_it_export_async_fn export_async;
  ferry_it_check_async_fn check_async;
  ferry_it_async_result_fn async_result;
};

/* 1 when the plugin exports all three async entry points; else 0 with the
 * first missing symbol's name in `*missing` (static). */
int it_plugin_has_async(const struct it_plugin* plugin, const char** missing);

/* Loads the plugin at `path` (RTLD_NOW | RTLD_LOCAL, never unloaded) and
 * resolves every entry point it exports. `name` NULL takes the name from the
 * file name (libferry_it_<name>.so). Returns 0 when all six required entry
 * points are there (the three async ones are looked up, not required); else -1 with
 * `problem` set (`handle` and the entry points found stay set when only symbols are
 * missing). Does not print. */
int it_plugin_load(struct it_plugin* plugin, const char* name, const char* path);

/* The same for `dir`/libferry_it_<name>.so. */
int it_plugin_load_from_dir(struct it_plugin* plugin, const char* name, const char* dir);

/* Writes "<the running executable's folder>/../plugins" into `out` (the
 * layout of a build tree and of the GPU bundle: bin/ beside plugins/), not
 * resolved; -1 when the executable's path cannot be read. */
int it_plugin_dir_beside_exe(char* out, size_t size);

/* The plugin's last error message, never NULL ("(no message)" when the plugin
 * gives none). Borrowed until the plugin's next call on this thread. */
const char* it_plugin_error(const struct it_plugin* plugin);

/* Another symbol of the plugin (the benchmark entry points), or NULL. */
void* it_plugin_symbol(const struct it_plugin* plugin, const char* symbol);

/* ---- every runtime, in order ---------------------------------------------- */

enum it_load_state {
  IT_NOT_WANTED,   /* not in the wanted list */
  IT_SKIPPED_MISSING, /* its plugin is not built */
  IT_SKIPPED_ASAN, /* not loaded under AddressSanitizer (no_asan_reason) */
  IT_LOAD_FAILED,  /* present but dlopen, a symbol or the VM start failed */
  IT_LOADED
};

struct it_load_options {
  const char* plugin_dir;
  const char* wanted;  /* comma- or space-separated names; NULL or "": every runtime */
  const char* path[IT_MAX_RUNTIMES]; /* per runtime index: a plugin file instead of the dir's */
  int onstack_first;   /* load NEEDS_ONSTACK runtimes before the VM (--go-first) */
  int asan;            /* the process runs under AddressSanitizer */
};

struct it_runtime_set {
  struct it_plugin plugins[IT_MAX_RUNTIMES]; /* indexed like it_runtimes */
  enum it_load_state state[IT_MAX_RUNTIMES];
  char vm_problem[1024];                     /* why the last runtime start failed */
  struct it_plugin* loaded[IT_MAX_RUNTIMES]; /* in load order */
  int n;
  int onstack_fixups;   /* handlers changed by the fix-up; -1 when it did not run */
  int vm_sigsegv_onstack; /* after a VM started: its SIGSEGV handler had SA_ONSTACK
                             (1/0); -1 when no VM was started */
  int onstack_first;    /* the runtimes needing SA_ONSTACK came before the VM */
};

/* Loads every wanted runtime of the list into `set` (zeroed first), in load
 * order: starts a VM runtime right after loading it, and runs the SA_ONSTACK
 * fix-up before the first NEEDS_ONSTACK runtime that comes after a VM. Does
 * not print: the caller reports `state` and `problem`. */
void it_runtime_set_load(struct it_runtime_set* set, const struct it_load_options* options);

/* The line a host prints for runtime `index` of the list after loading:
 * "loaded runtime NAME: PATH", "SKIPPED runtime NAME: why", "FAIL load NAME:
 * why"; "" when it was not wanted. Returns the state. */
enum it_load_state it_runtime_set_describe(const struct it_runtime_set* set, int index,
                                           char* out, size_t size);

/* Whether any loaded runtime has the QUICK_EXIT trait. */
int it_runtime_set_needs_quick_exit(const struct it_runtime_set* set);

/* 1 when `name` is a word of the comma- or space-separated `list`. */
int it_list_has(const char* list, const char* name);

/* Re-installs every signal handler that is neither SIG_DFL nor SIG_IGN with
 * SA_ONSTACK added (what Go does for handlers installed before it loads).
 * Returns the number of handlers changed. */
int it_signal_add_onstack(void);

#endif  // FERRY_HARNESS_PLUGIN_H
