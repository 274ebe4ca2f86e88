/* libferry_it_matrix.so: the matrix host's harness as a shared library, for
 * hosts written in another language that loads C (the Python host,
 * bindings/python/tests/test_matrix.py, through ctypes). It loads the
 * runtimes with the harness's loader, in the order runtimes.def requires (the
 * JVM started before Go, the SA_ONSTACK fix-up between them), reads the case
 * list with the harness's reader and runs each handoff with handoff.c, so
 * that this host asserts exactly what ferry_it_host asserts. One session per
 * process; nothing is ever unloaded. Every function but ferry_it_matrix_run
 * is meant for one thread (the host's); run may be called from any thread,
 * one call at a time. */
#include <stdio.h>
#include <string.h>

#include "case_list.h"
#include "ferry/ferry.h"
#include "ferry/ferry_it.h"
#include "handoff.h"
#include "plugin.h"

static struct it_runtime_set g_set;
static struct it_case_list g_cases;
static struct it_handoff_stats g_stats;
static char g_report[IT_MAX_RUNTIMES * 4400];
static char g_problem[1200];
static _Thread_local char g_message[2048];

/* Loads every runtime of runtimes.def named in `wanted` (comma- or
 * space-separated; NULL or "": every one) from `plugin_dir`, and adds the
 * cases of `cases_file`. Returns NULL, or why the session cannot run (the
 * string is the library's). Runtimes that are missing or fail to load are
 * not a setup problem: ferry_it_matrix_load_report says which. */
FERRY_IT_EXPORT const char* ferry_it_matrix_open(const char* plugin_dir, const char* wanted,
                                                 const char* cases_file) {
  if (g_set.n > 0 || g_cases.n > 0) return "the matrix session is already open";
  ferry_sim_set_strict(1); /* what makes a consumer that skips the sync event fail */
  if (it_handoff_init(g_problem, sizeof g_problem) != 0) return g_problem;
  if (it_case_list_add_file(&g_cases, cases_file, g_problem, sizeof g_problem) != 0) {
    return g_problem;
  }
  struct it_load_options options;
  memset(&options, 0, sizeof options);
  options.plugin_dir = plugin_dir;
  options.wanted = wanted;
  it_runtime_set_load(&g_set, &options);
  size_t used = 0;
  for (int i = 0; i < IT_MAX_RUNTIMES; i++) {
    char line[4400];
    it_runtime_set_describe(&g_set, i, line, sizeof line);
    if (line[0] == '\0' || used >= sizeof g_report) continue;
    int n = snprintf(g_report + used, sizeof g_report - used, "%s\n", line);
    if (n > 0) used += (size_t)n;
  }
  if (g_set.onstack_fixups >= 0 && used < sizeof g_report) {
    snprintf(g_report + used, sizeof g_report - used,
             "signal fix-up after the VM, before the runtimes needing SA_ONSTACK: %d "
             "handlers got SA_ONSTACK\n",
             g_set.onstack_fixups);
  }
  return NULL;
}

/* One line per runtime of the list that was wanted: "loaded runtime ...",
 * "SKIPPED runtime ...", "FAIL load ..." (the library's string). */
FERRY_IT_EXPORT const char* ferry_it_matrix_load_report(void) { return g_report; }

/* The loaded runtimes, in load order. */
FERRY_IT_EXPORT int ferry_it_matrix_runtime_count(void) { return g_set.n; }

/* The name of loaded runtime `i` (the library's string), or NULL. */
FERRY_IT_EXPORT const char* ferry_it_matrix_runtime_name(int i) {
  return i >= 0 && i < g_set.n ? g_set.loaded[i]->name : NULL;
}

/* ferry_it_live_allocations() of loaded runtime `i` (-1 for a bad index). */
FERRY_IT_EXPORT int64_t ferry_it_matrix_live_allocations(int i) {
  return i >= 0 && i < g_set.n ? g_set.loaded[i]->live_allocations() : -1;
}

/* The number of cases read. */
FERRY_IT_EXPORT int ferry_it_matrix_case_count(void) { return (int)g_cases.n; }

static const struct it_case_entry* entry_at(int index, int stream) {
  if (index < 0) return it_handoff_tamper_entry(stream);
  return index < g_cases.n ? &g_cases.entries[index] : NULL;
}

/* "thread int32:..." : case `index` (-1: the tamper witness of the kind) as
 * the hosts print it, in a per-thread buffer. */
FERRY_IT_EXPORT const char* ferry_it_matrix_case_label(int index, int stream) {
  const struct it_case_entry* e = entry_at(index, stream);
  if (e == NULL) return "(no such case)";
  snprintf(g_message, sizeof g_message, "%s%s", it_handoff_entry_label(e, index < 0), e->spec);
  return g_message;
}

/* Runs one handoff (an array, or with `stream` a stream) of case `index`
 * (-1: the tamper witness) from loaded runtime `producer` to `consumer`.
 * NULL when every assertion of handoff.h holds, else the first problem, in
 * a per-thread buffer valid until the thread's next call. */
FERRY_IT_EXPORT const char* ferry_it_matrix_run(int producer, int consumer, int index,
                                                int stream) {
  if (producer < 0 || producer >= g_set.n || consumer < 0 || consumer >= g_set.n) {
    return "bad runtime index";
  }
  const struct it_case_entry* entry = entry_at(index, stream);
  if (entry == NULL) return "bad case index";
  g_message[0] = '\0';
  int tamper = index < 0;
  const struct it_plugin* p = g_set.loaded[producer];
  const struct it_plugin* c = g_set.loaded[consumer];
  int ok = stream ? it_handoff_stream(&g_set, p, c, entry, tamper, &g_stats, g_message,
                                      sizeof g_message)
                  : it_handoff_array(&g_set, p, c, entry, tamper, &g_stats, g_message,
                                     sizeof g_message);
  return ok ? NULL : g_message;
}

/* The witnesses so far: sim arrays/batches pending at handover, tamper runs. */
FERRY_IT_EXPORT int64_t ferry_it_matrix_witness_sim_pending(void) { return g_stats.sim_pending; }
FERRY_IT_EXPORT int64_t ferry_it_matrix_witness_tampered(void) { return g_stats.tampered; }

/* 1 when a loaded runtime requires the process to end with _exit
 * (runtimes.def: QUICK_EXIT; the JVM and Go), else 0. */
FERRY_IT_EXPORT int ferry_it_matrix_needs_quick_exit(void) {
  return it_runtime_set_needs_quick_exit(&g_set);
}
