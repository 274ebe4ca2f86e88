/* ferry_it_host: the cross-language tests in one C process, in two modes.
 *
 *   ferry_it_host [matrix] [--plugins LIST] [--plugin-dir DIR] [--plugin NAME=PATH]...
 *                 [--cases FILE]... [--case CASE]... [--arrays-only|--streams-only]
 *                 [--require LIST] [--asan] [--no-tamper] [--go-first] [--verbose]
 *   ferry_it_host conformance PLUGIN.so [...]   (tests/conformance/README.md)
 *
 * The matrix loads the test plugins of every runtime of runtimes.def into this
 * process (in the order plugin.h explains), then runs every ordered pair
 * (producer, consumer) for arrays and for streams over a case list, plus one
 * tamper witness per pair and kind, and asserts everything handoff.h lists.
 * Around the matrix it checks what only a process holding every runtime can:
 * the VM runtime's plugin gave its SIGSEGV handler SA_ONSTACK, a call into
 * each FAST_CALLS runtime (runtimes.def) stays under a microsecond on the main
 * thread and on a thread the runtime never saw (the cost is printed for every
 * runtime), and every runtime's live allocations are back at zero at the end. Prints one
 * line per failure, "FAIL producer->consumer array|stream CASE: message", a producer x
 * consumer table, and ends with "N passed, N failed".
 *
 * Async device streams: every ordered pair whose two plugins export the
 * async entry points also runs the async case list (it_handoff_async), each
 * handoff bounded by --async-timeout-ms (default IT_ASYNC_TIMEOUT_MS): a hung
 * pair is one FAIL line and the run goes on. A runtime lacking them is
 * reported by a "SKIPPED async: NAME lacks SYMBOL" line and its async pairs
 * are not run. "FAIL producer->consumer async CASE: message".
 *
 * Without --cases/--case the default list tests/integration/cases.txt is
 * used; without --cases/--case/--async-cases/--async-case the default async
 * list tests/integration/cases_async.txt too (--no-async: none). A runtime whose plugin
 * is not built is reported as SKIPPED and its pairs are not counted; --require makes a
 * missing runtime a failure. With
 * --asan (the process runs under AddressSanitizer) the runtimes that cannot
 * run under it are skipped, loudly (runtimes.def). --go-first loads the
 * runtimes needing SA_ONSTACK (Go) before the VM (the JVM). */
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "case_list.h"
#include "conformance.h"
#include "ferry/ferry.h"
#include "handoff.h"
#include "plugin.h"

#ifndef FERRY_IT_DEFAULT_CASES
#define FERRY_IT_DEFAULT_CASES "tests/integration/cases.txt"
#endif
#ifndef FERRY_IT_DEFAULT_ASYNC_CASES
#define FERRY_IT_DEFAULT_ASYNC_CASES "tests/integration/cases_async.txt"
#endif

/* A call into a runtime and back, averaged, must stay under this. */
#define ENTRY_CALL_LIMIT_NS 1000.0

struct options {
  char plugins[256];
  char require[256];
  char plugin_dir[3072];
  char plugin_path[IT_MAX_RUNTIMES][3072]; /* --plugin NAME=PATH, by runtime index */
  int arrays;
  int streams;
  int async;
  int64_t async_timeout_ms;
  int asan;
  int tamper;
  int verbose;
  int go_first;
};

static int64_t g_passed, g_failed;

static void usage(void) {
  fprintf(
      stderr,
      "usage: ferry_it_host [matrix] [--plugins LIST] [--plugin-dir DIR] "
      "[--plugin NAME=PATH]...\n"
      "                     [--cases FILE]... [--case CASE]... "
      "[--arrays-only|--streams-only]\n"
      "                     [--require LIST] [--asan] [--no-tamper] [--go-first] "
      "[--verbose]\n"
      "                     [--async-cases FILE]... [--async-case CASE]... [--no-async] "
      "[--async-timeout-ms MS]\n"
      "       ferry_it_host conformance PLUGIN.so [--case CASE]... [--area AREA]... "
      "[--verbose]\n"
      "                     [--reference C_PLUGIN.so]\n"
      "runtimes: %s\n",
      it_runtime_names());
}

/* One check outside the matrix: counted, and a FAIL line when it fails. */
static void check(int ok, const char* what, const char* detail) {
  if (ok) {
    g_passed++;
  } else {
    g_failed++;
    printf("FAIL %s: %s\n", what, detail);
  }
}

/* Every word of `list` must be a runtime name. */
static int list_valid(const char* list) {
  char copy[256];
  snprintf(copy, sizeof copy, "%s", list);
  char* save = NULL;
  for (char* w = strtok_r(copy, ", ", &save); w != NULL; w = strtok_r(NULL, ", ", &save)) {
    if (it_runtime_find(w) == NULL) {
      fprintf(stderr, "ferry_it_host: unknown runtime \"%s\" (%s)\n", w, it_runtime_names());
      return 0;
    }
  }
  return 1;
}

/* BUILD/plugins next to BUILD/bin/ferry_it_host, unless FERRY_BUILD_DIR says. */
static void default_plugin_dir(char* out, size_t size) {
  const char* build = getenv("FERRY_BUILD_DIR");
  if (build != NULL && build[0] != '\0') {
    snprintf(out, size, "%s/plugins", build);
    return;
  }
  char dir[2048];
  if (it_plugin_dir_beside_exe(dir, sizeof dir) != 0) {
    snprintf(out, size, "build/plugins");
    return;
  }
  char resolved[PATH_MAX];
  if (realpath(dir, resolved) != NULL) snprintf(dir, sizeof dir, "%.2047s", resolved);
  snprintf(out, size, "%s", dir);
}

static double seconds_since(const struct timespec* start) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (double)(now.tv_sec - start->tv_sec) + (double)(now.tv_nsec - start->tv_nsec) / 1e9;
}

/* An option of the table of parse_options: a switch (no value) sets `*field`
 * to `value`; a case option (`list` not NULL) adds the cases of its value (a
 * file of cases, or one case line) to `list`, then sets `*field` too. */
struct flag_option {
  const char* flag;
  int* field;
  int value;
  struct it_case_list* list;
  int file;           /* 1: the value is a file of cases; 0: one case line */
  const char* prefix; /* before the reason of a refusal */
};

static const struct flag_option* find_flag(const struct flag_option* flags, size_t n,
                                           const char* arg) {
  for (size_t k = 0; k < n; k++) {
    if (strcmp(arg, flags[k].flag) == 0) return &flags[k];
  }
  return NULL;
}

/* Adds the cases of file `value` (or the one case line `value`) to `list`;
 * returns 0, or 2 after saying why on stderr. */
static int add_cases(struct it_case_list* list, int file, const char* value,
                     const char* prefix) {
  char why[1024];
  int rc = file ? it_case_list_add_file(list, value, why, sizeof why)
                : it_case_list_add_line(list, value, why, sizeof why);
  if (rc != 0) {
    fprintf(stderr, "ferry_it_host: %s%s\n", prefix, why);
    return 2;
  }
  return 0;
}

/* Adds the default case file `name` of tests/integration: under $FERRY_ROOT
 * when set, else at `built_in` (the path compiled in). */
static int add_default_cases(struct it_case_list* list, const char* name,
                             const char* built_in) {
  const char* root = getenv("FERRY_ROOT");
  char path[4096];
  if (root != NULL && root[0] != '\0') {
    snprintf(path, sizeof path, "%s/tests/integration/%s", root, name);
  } else {
    snprintf(path, sizeof path, "%s", built_in);
  }
  return add_cases(list, 1, path, "");
}

/* Returns 0, 2 on a usage error. */
static int parse_options(int argc, char** argv, struct options* opt,
                         struct it_case_list* cases, struct it_case_list* async_cases) {
  memset(opt, 0, sizeof *opt);
  opt->arrays = 1;
  opt->streams = 1;
  opt->async = 1;
  opt->async_timeout_ms = IT_ASYNC_TIMEOUT_MS;
  opt->tamper = 1;
  default_plugin_dir(opt->plugin_dir, sizeof opt->plugin_dir);
  int cases_given = 0;
  int async_given = 0;
  const struct flag_option flags[] = {
      {"--no-async", &opt->async, 0, NULL, 0, NULL},
      {"--arrays-only", &opt->streams, 0, NULL, 0, NULL},
      {"--streams-only", &opt->arrays, 0, NULL, 0, NULL},
      {"--asan", &opt->asan, 1, NULL, 0, NULL},
      {"--no-tamper", &opt->tamper, 0, NULL, 0, NULL},
      {"--go-first", &opt->go_first, 1, NULL, 0, NULL},
      {"--verbose", &opt->verbose, 1, NULL, 0, NULL},
      {"--cases", &cases_given, 1, cases, 1, ""},
      {"--case", &cases_given, 1, cases, 0, "--case "},
      {"--async-cases", &async_given, 1, async_cases, 1, ""},
      {"--async-case", &async_given, 1, async_cases, 0, "--async-case "},
  };
  for (int i = 0; i < argc; i++) {
    const char* a = argv[i];
    const char* value = i + 1 < argc ? argv[i + 1] : NULL;
    const struct flag_option* f = find_flag(flags, sizeof flags / sizeof flags[0], a);
    if (f != NULL && f->list == NULL) {
      *f->field = f->value;
    } else if (f != NULL && value) {
      if (add_cases(f->list, f->file, value, f->prefix) != 0) return 2;
      *f->field = f->value;
      i++;
    } else if (strcmp(a, "--plugins") == 0 && value) {
      snprintf(opt->plugins, sizeof opt->plugins, "%s", value);
      i++;
    } else if (strcmp(a, "--require") == 0 && value) {
      snprintf(opt->require, sizeof opt->require, "%s", value);
      i++;
    } else if (strcmp(a, "--plugin-dir") == 0 && value) {
      snprintf(opt->plugin_dir, sizeof opt->plugin_dir, "%s", value);
      i++;
    } else if (strcmp(a, "--plugin") == 0 && value) {
      const char* eq = strchr(value, '=');
      int found = 0;
      for (int r = 0; eq != NULL && r < IT_MAX_RUNTIMES; r++) {
        const char* name = it_runtimes[r].name;
        if (strlen(name) == (size_t)(eq - value) && strncmp(value, name, strlen(name)) == 0) {
          snprintf(opt->plugin_path[r], sizeof opt->plugin_path[r], "%s", eq + 1);
          found = 1;
        }
      }
      if (!found) {
        fprintf(stderr, "ferry_it_host: --plugin wants NAME=PATH with a runtime name\n");
        return 2;
      }
      i++;
    } else if (strcmp(a, "--async-timeout-ms") == 0 && value) {
      char* end = NULL;
      long long ms = strtoll(value, &end, 10);
      if (end == value || *end != '\0' || ms <= 0) {
        fprintf(stderr, "ferry_it_host: --async-timeout-ms wants a positive number\n");
        return 2;
      }
      opt->async_timeout_ms = ms;
      i++;
    } else {
      usage();
      return 2;
    }
  }
  if (!list_valid(opt->plugins) || !list_valid(opt->require)) return 2;
  if (!cases_given && !async_given && opt->async &&
      add_default_cases(async_cases, "cases_async.txt", FERRY_IT_DEFAULT_ASYNC_CASES) != 0) {
    return 2;
  }
  if (!opt->async || !opt->streams) async_cases->n = 0;
  if (!cases_given && async_given) {
    /* Only async cases were asked for. */
  } else if (!cases_given && add_default_cases(cases, "cases.txt", FERRY_IT_DEFAULT_CASES) != 0) {
    return 2;
  }
  return 0;
}

/* Loads the runtimes and reports each one's state; returns the names of the
 * runtimes that were skipped because their plugin is not built. */
static void load_runtimes(const struct options* opt, struct it_runtime_set* set,
                          char* skipped, size_t skipped_size) {
  struct it_load_options load = {0};
  load.plugin_dir = opt->plugin_dir;
  load.wanted = opt->plugins;
  for (int i = 0; i < IT_MAX_RUNTIMES; i++) load.path[i] = opt->plugin_path[i];
  load.onstack_first = opt->go_first;
  load.asan = opt->asan;
  it_runtime_set_load(set, &load);
  skipped[0] = '\0';
  for (int i = 0; i < IT_MAX_RUNTIMES; i++) {
    char line[4400];
    enum it_load_state state = it_runtime_set_describe(set, i, line, sizeof line);
    if (line[0] != '\0') printf("%s\n", line);
    if (state == IT_LOAD_FAILED) g_failed++;
    if (state == IT_SKIPPED_MISSING) {
      size_t used = strlen(skipped);
      snprintf(skipped + used, skipped_size - used, "%s%s", used ? " " : "", set->plugins[i].name);
    }
  }
  if (set->onstack_fixups >= 0) {
    printf("signal fix-up after the VM, before the runtimes needing SA_ONSTACK: %d handlers "
           "got SA_ONSTACK\n",
           set->onstack_fixups);
  }
  if (set->vm_sigsegv_onstack >= 0) {
    if (set->onstack_first) {
      printf("the runtimes needing SA_ONSTACK were loaded before the VM: the VM plugin's own "
             "SA_ONSTACK fix-up is under test\n");
    }
    /* What a host that loads Go after the JVM without a fix-up relies on. */
    check(set->vm_sigsegv_onstack == 1,
          "the VM runtime's plugin gives its SIGSEGV handler SA_ONSTACK",
          "the handler lacks SA_ONSTACK after the VM started");
  }
  for (int i = 0; i < IT_MAX_RUNTIMES; i++) {
    const char* name = it_runtimes[i].name;
    if (opt->require[0] != '\0' && it_list_has(opt->require, name) &&
        set->state[i] != IT_LOADED) {
      printf("FAIL required runtime %s is not loaded: %s\n", name,
             set->plugins[i].problem[0] ? set->plugins[i].problem : "not requested");
      g_failed++;
    }
  }
}

/* ---- the cost of one call into a runtime --------------------------------------- */

/* ns per ferry_it_live_allocations call (into the runtime and back). */
static double entry_call_ns(const struct it_plugin* p, int64_t n) {
  struct timespec a, b;
  int64_t sum = 0;
  clock_gettime(CLOCK_MONOTONIC, &a);
  for (int64_t i = 0; i < n; i++) sum += p->live_allocations();
  clock_gettime(CLOCK_MONOTONIC, &b);
  if (sum < 0) printf("note: negative live allocations\n");
  return ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) / (double)n;
}

struct timing_job {
  const struct it_plugin* plugin;
  double ns;
};

/* The cost of one call: the best of ten runs of 20,000 calls, so that a
 * loaded machine (other test steps run beside this one) preempting one run
 * does not make the runtime look slow; a runtime that is slow on every run
 * (golang/go#68587) still is. */
static double best_entry_call_ns(const struct it_plugin* p) {
  double best = -1;
  for (int run = 0; run < 10; run++) {
    double ns = entry_call_ns(p, 20000);
    if (best < 0 || ns < best) best = ns;
  }
  return best;
}

static void* timing_thread(void* arg) {
  struct timing_job* job = (struct timing_job*)arg;
  job->ns = best_entry_call_ns(job->plugin);
  return NULL;
}

/* Calls from the main thread and from a thread the runtime never saw, printed
 * for every runtime and asserted for the FAST_CALLS ones (golang/go#68587
 * made Go's main-thread path slow on some releases). */
static void check_entry_calls(const struct it_runtime_set* set) {
  for (int i = 0; i < set->n; i++) {
    const struct it_plugin* p = set->loaded[i];
    double main_ns = best_entry_call_ns(p);
    struct timing_job job = {p, 0};
    pthread_t thread;
    if (pthread_create(&thread, NULL, timing_thread, &job) == 0) {
      pthread_join(thread, NULL);
    } else {
      job.ns = -1;
    }
    printf("C -> %s entry point call: %.0f ns on the main thread, %.0f ns on a new thread\n",
           p->name, main_ns, job.ns);
    if (!(p->runtime->traits & IT_RUNTIME_FAST_CALLS)) continue;
    char what[128], detail[128];
    snprintf(what, sizeof what, "C -> %s calls stay under a microsecond", p->name);
    snprintf(detail, sizeof detail, "%.0f ns on the main thread, %.0f ns on a new thread",
             main_ns, job.ns);
    check(main_ns < ENTRY_CALL_LIMIT_NS && job.ns >= 0 && job.ns < ENTRY_CALL_LIMIT_NS, what,
          detail);
  }
}

/* ---- the matrix --------------------------------------------------------------------- */

static int matrix_main(int argc, char** argv) {
  struct options opt;
  struct it_case_list cases = {0};
  struct it_case_list async_cases = {0};
  int rc = parse_options(argc, argv, &opt, &cases, &async_cases);
  if (rc != 0) return rc;
  /* Line-buffered: a crash or LeakSanitizer's exit loses no finished line. */
  setvbuf(stdout, NULL, _IOLBF, 0);
  /* Strict mode is what makes a consumer that skips the sync event fail. */
  ferry_sim_set_strict(1);

  static struct it_runtime_set set;
  char skipped[256];
  load_runtimes(&opt, &set, skipped, sizeof skipped);
  char why[1024];
  if (it_handoff_init(why, sizeof why) != 0) {
    printf("FAIL setup: %s\n", why);
    printf("%lld passed, %lld failed\n", (long long)g_passed, (long long)g_failed + 1);
    return 1;
  }
  check_entry_calls(&set);
  /* Which runtimes take part in the async pairs. */
  int has_async[IT_MAX_RUNTIMES];
  char async_skipped[256] = "";
  for (int i = 0; i < set.n; i++) {
    const char* missing = NULL;
    has_async[i] = it_plugin_has_async(set.loaded[i], &missing);
    if (!has_async[i] && async_cases.n > 0) {
      printf("SKIPPED async: %s lacks %s (its async pairs are not run)\n",
             set.loaded[i]->name, missing);
      size_t used = strlen(async_skipped);
      snprintf(async_skipped + used, sizeof async_skipped - used, "%s%s", used ? " " : "",
               set.loaded[i]->name);
    }
  }
  int64_t async_passed = 0, async_failed = 0, async_hung = 0;

  struct it_handoff_stats stats = {0};
  int64_t cell_passed[IT_MAX_RUNTIMES][IT_MAX_RUNTIMES];
  int64_t cell_failed[IT_MAX_RUNTIMES][IT_MAX_RUNTIMES];
  memset(cell_passed, 0, sizeof cell_passed);
  memset(cell_failed, 0, sizeof cell_failed);
  struct timespec start;
  clock_gettime(CLOCK_MONOTONIC, &start);

  for (int pi = 0; pi < set.n; pi++) {
    for (int ci = 0; ci < set.n; ci++) {
      const struct it_plugin* p = set.loaded[pi];
      const struct it_plugin* c = set.loaded[ci];
      struct timespec pair_start;
      clock_gettime(CLOCK_MONOTONIC, &pair_start);
      for (int kind = 0; kind < 2; kind++) {
        if ((kind == 0 && !opt.arrays) || (kind == 1 && !opt.streams)) continue;
        const char* kind_name = kind == 0 ? "array" : "stream";
        for (int64_t k = -1; k < cases.n; k++) {
          const struct it_case_entry* entry;
          int tamper = k < 0;
          if (tamper) {
            if (!opt.tamper) continue;
            entry = it_handoff_tamper_entry(kind);
          } else {
            entry = &cases.entries[k];
          }
          char message[2048] = "";
          int ok = kind == 0 ? it_handoff_array(&set, p, c, entry, tamper, &stats, message,
                                                sizeof message)
                             : it_handoff_stream(&set, p, c, entry, tamper, &stats, message,
                                                 sizeof message);
          const char* label = it_handoff_entry_label(entry, tamper);
          if (ok) {
            g_passed++;
            cell_passed[pi][ci]++;
            if (opt.verbose) {
              printf("ok %s->%s %s %s%s\n", p->name, c->name, kind_name, label, entry->spec);
            }
          } else {
            g_failed++;
            cell_failed[pi][ci]++;
            printf("FAIL %s->%s %s %s%s: %s\n", p->name, c->name, kind_name, label,
                   entry->spec, message);
          }
          fflush(stdout);
        }
      }
      for (int64_t k = 0; has_async[pi] && has_async[ci] && k < async_cases.n; k++) {
        const struct it_case_entry* entry = &async_cases.entries[k];
        char message[2048] = "";
        int ok = it_handoff_async(&set, p, c, entry, opt.async_timeout_ms, message,
                                  sizeof message);
        const char* label = entry->reject_word[0] ? "reject " : "";
        if (ok) {
          g_passed++;
          async_passed++;
          cell_passed[pi][ci]++;
          if (opt.verbose)
            printf("ok %s->%s async %s%s\n", p->name, c->name, label, entry->spec);
        } else {
          g_failed++;
          async_failed++;
          cell_failed[pi][ci]++;
          if (strncmp(message, "HUNG", 4) == 0) async_hung++;
          printf("FAIL %s->%s async %s%s: %s\n", p->name, c->name, label, entry->spec,
                 message);
        }
        fflush(stdout);
      }
      if (opt.verbose) {
        printf("pair %s->%s done in %.2f s\n", p->name, c->name, seconds_since(&pair_start));
      }
    }
  }
  /* Per-handoff baselines leave drift unseen: nothing may be live at the end. */
  for (int i = 0; i < set.n; i++) {
    const struct it_plugin* p = set.loaded[i];
    int64_t live = p->live_allocations();
    char what[128], detail[128];
    snprintf(what, sizeof what, "%s live allocations back to zero at the end", p->name);
    snprintf(detail, sizeof detail, "%lld live", (long long)live);
    check(live == 0, what, detail);
  }

  printf("\nproducer \\ consumer (passed/run)\n%-10s", "");
  for (int ci = 0; ci < set.n; ci++) printf(" %10s", set.loaded[ci]->name);
  printf("\n");
  for (int pi = 0; pi < set.n; pi++) {
    printf("%-10s", set.loaded[pi]->name);
    for (int ci = 0; ci < set.n; ci++) {
      char cell[32];
      snprintf(cell, sizeof cell, "%lld/%lld", (long long)cell_passed[pi][ci],
               (long long)(cell_passed[pi][ci] + cell_failed[pi][ci]));
      printf(" %10s", cell);
    }
    printf("\n");
  }
  printf("witnesses: %lld sim arrays/batches still pending at handover (the consumer had to "
         "wait), %lld already complete; %lld tamper runs; %lld structs tracked\n",
         (long long)stats.sim_pending, (long long)stats.sim_ready, (long long)stats.tampered,
         (long long)stats.structs_tracked);
  printf("%lld cases x %d runtimes (%d pairs) in %.1f s\n", (long long)cases.n, set.n,
         set.n * set.n, seconds_since(&start));
  if (async_cases.n > 0) {
    printf("async: %lld cases; %lld passed, %lld failed (%lld hung)%s%s\n",
           (long long)async_cases.n, (long long)async_passed, (long long)async_failed,
           (long long)async_hung, async_skipped[0] ? "; SKIPPED async runtimes: " : "",
           async_skipped);
  }
  if (skipped[0] != '\0') {
    printf("SKIPPED runtimes (pairs not run, not counted): %s\n", skipped);
  }
  printf("%lld passed, %lld failed\n", (long long)g_passed, (long long)g_failed);
  it_case_list_free(&cases);
  it_case_list_free(&async_cases);
  fflush(stdout);
  int code = g_failed == 0 && g_passed > 0 ? 0 : 1;
  /* A JVM or a Go runtime must not meet exit handlers (runtimes.def). */
  if (it_runtime_set_needs_quick_exit(&set)) _Exit(code);
  return code;
}

int main(int argc, char** argv) {
  if (argc > 1 && strcmp(argv[1], "conformance") == 0) {
    return conformance_main(argc - 2, argv + 2);
  }
  if (argc > 1 && strcmp(argv[1], "matrix") == 0) return matrix_main(argc - 2, argv + 2);
  return matrix_main(argc - 1, argv + 1);
}
