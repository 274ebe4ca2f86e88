/* ferry_it_host: the cross-language matrix in one C process.
 *
 * Loads the test plugins of every runtime into this process (in the order
 * plugins.h explains), then runs every ordered pair (producer, consumer) for
 * arrays and for streams over a case list, plus one tamper witness per pair
 * and kind, and asserts everything handoff.h lists. Prints one line per
 * failure, "FAIL producer->consumer array|stream CASE: message", a
 * producer x consumer table, and ends with "N passed, N failed".
 *
 *   ferry_it_host [--plugins c,rust,go,java,lua] [--plugin-dir DIR] [--plugin NAME=PATH]...
 *                 [--cases FILE]... [--case CASE]... [--arrays-only|--streams-only]
 *                 [--require c,rust,...] [--asan] [--no-tamper] [--go-first] [--verbose]
 *
 * Without --cases/--case the default list tests/integration/cases.txt is
 * used. A runtime whose plugin is not built is reported as SKIPPED and its
 * pairs are not counted; --require makes a missing runtime a failure. With
 * --asan (the process runs under AddressSanitizer) the JVM and Go runtimes
 * are skipped, loudly: neither runs under ASan (docs/embedding.md). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "case_list.h"
#include "ferry/ferry.h"
#include "handoff.h"
#include "plugins.h"

#ifndef FERRY_IT_DEFAULT_CASES
#define FERRY_IT_DEFAULT_CASES "tests/integration/cases.txt"
#endif

struct options {
  char plugins[256];
  char require[256];
  char plugin_dir[3072];
  /* --plugin NAME=PATH overrides, indexed like it_runtime_load_order. */
  char plugin_path[IT_MAX_RUNTIMES][3072];
  int arrays;
  int streams;
  int asan;
  int tamper;
  int verbose;
  int go_first;
};

static void usage(void) {
  fprintf(stderr,
          "usage: ferry_it_host [--plugins c,rust,go,java,lua] [--plugin-dir DIR] "
          "[--plugin NAME=PATH]...\n"
          "                     [--cases FILE]... [--case CASE]... "
          "[--arrays-only|--streams-only]\n"
          "                     [--require LIST] [--asan] [--no-tamper] [--go-first] [--verbose]\n");
}

static int list_has(const char* list, const char* name) {
  char copy[256];
  snprintf(copy, sizeof copy, "%s", list);
  char* save = NULL;
  for (char* w = strtok_r(copy, ", ", &save); w != NULL; w = strtok_r(NULL, ", ", &save)) {
    if (strcmp(w, name) == 0) return 1;
  }
  return 0;
}

/* Every word of `list` must be a runtime name. */
static int list_valid(const char* list) {
  char copy[256];
  snprintf(copy, sizeof copy, "%s", list);
  char* save = NULL;
  for (char* w = strtok_r(copy, ", ", &save); w != NULL; w = strtok_r(NULL, ", ", &save)) {
    if (!it_runtime_name_known(w)) {
      fprintf(stderr, "ferry_it_host: unknown runtime \"%s\" (c, rust, go, java, lua)\n", w);
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
  char exe[2048];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) {
    snprintf(out, size, "build/plugins");
    return;
  }
  exe[n] = '\0';
  char* slash = strrchr(exe, '/');
  if (slash != NULL) *slash = '\0';
  char dir[2100];
  snprintf(dir, sizeof dir, "%s/../plugins", exe);
  if (realpath(dir, exe) != NULL) snprintf(dir, sizeof dir, "%s", exe);
  snprintf(out, size, "%s", dir);
}

static double seconds_since(const struct timespec* start) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (double)(now.tv_sec - start->tv_sec) + (double)(now.tv_nsec - start->tv_nsec) / 1e9;
}

int main(int argc, char** argv) {
  struct options opt;
  memset(&opt, 0, sizeof opt);
  snprintf(opt.plugins, sizeof opt.plugins, "c,rust,go,java,lua");
  opt.arrays = 1;
  opt.streams = 1;
  opt.tamper = 1;
  default_plugin_dir(opt.plugin_dir, sizeof opt.plugin_dir);
  struct it_case_list cases;
  memset(&cases, 0, sizeof cases);
  int cases_given = 0;
  char why[1024];

  for (int i = 1; i < argc; i++) {
    const char* a = argv[i];
    const char* value = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--plugins") == 0 && value) {
      snprintf(opt.plugins, sizeof opt.plugins, "%s", value);
      i++;
    } else if (strcmp(a, "--require") == 0 && value) {
      snprintf(opt.require, sizeof opt.require, "%s", value);
      i++;
    } else if (strcmp(a, "--plugin-dir") == 0 && value) {
      snprintf(opt.plugin_dir, sizeof opt.plugin_dir, "%s", value);
      i++;
    } else if (strcmp(a, "--plugin") == 0 && value) {
      const char* eq = strchr(value, '=');
      int found = 0;
      for (int r = 0; eq != NULL && r < IT_MAX_RUNTIMES; r++) {
        const char* name = it_runtime_load_order[r];
        if (strlen(name) == (size_t)(eq - value) && strncmp(value, name, strlen(name)) == 0) {
          snprintf(opt.plugin_path[r], sizeof opt.plugin_path[r], "%s", eq + 1);
          found = 1;
        }
      }
      if (!found) {
        fprintf(stderr, "ferry_it_host: --plugin wants NAME=PATH with a runtime name\n");
        return 2;
      }
      i++;
    } else if (strcmp(a, "--cases") == 0 && value) {
      if (it_case_list_add_file(&cases, value, why, sizeof why) != 0) {
        fprintf(stderr, "ferry_it_host: %s\n", why);
        return 2;
      }
      cases_given = 1;
      i++;
    } else if (strcmp(a, "--case") == 0 && value) {
      if (it_case_list_add_line(&cases, value, why, sizeof why) != 0) {
        fprintf(stderr, "ferry_it_host: --case %s\n", why);
        return 2;
      }
      cases_given = 1;
      i++;
    } else if (strcmp(a, "--arrays-only") == 0) {
      opt.streams = 0;
    } else if (strcmp(a, "--streams-only") == 0) {
      opt.arrays = 0;
    } else if (strcmp(a, "--asan") == 0) {
      opt.asan = 1;
    } else if (strcmp(a, "--no-tamper") == 0) {
      opt.tamper = 0;
    } else if (strcmp(a, "--go-first") == 0) {
      opt.go_first = 1;
    } else if (strcmp(a, "--verbose") == 0) {
      opt.verbose = 1;
    } else {
      usage();
      return 2;
    }
  }
  if (!list_valid(opt.plugins) || !list_valid(opt.require)) return 2;
  if (!cases_given) {
    const char* root = getenv("FERRY_ROOT");
    char path[4096];
    if (root != NULL && root[0] != '\0') {
      snprintf(path, sizeof path, "%s/tests/integration/cases.txt", root);
    } else {
      snprintf(path, sizeof path, "%s", FERRY_IT_DEFAULT_CASES);
    }
    if (it_case_list_add_file(&cases, path, why, sizeof why) != 0) {
      fprintf(stderr, "ferry_it_host: %s\n", why);
      return 2;
    }
  }
  /* Line-buffered: a crash or LeakSanitizer's exit loses no finished line. */
  setvbuf(stdout, NULL, _IOLBF, 0);
  /* Strict mode is what makes a consumer that skips the sync event fail. */
  ferry_sim_set_strict(1);

  int64_t passed = 0, failed = 0;
  static struct it_runtime runtimes[IT_MAX_RUNTIMES];
  struct it_runtime_set all;
  memset(&all, 0, sizeof all);
  char skipped[256] = "";
  int java_started = 0;
  /* --go-first swaps the last two: Go's runtime starts before the JVM, which
   * only works because the Java plugin adds SA_ONSTACK to the JVM's handlers
   * right after creating it (the order a host cannot always choose). */
  const int go_first_order[IT_MAX_RUNTIMES] = {0, 1, 2, 4, 3};
  for (int step = 0; step < IT_MAX_RUNTIMES; step++) {
    int i = opt.go_first ? go_first_order[step] : step;
    const char* name = it_runtime_load_order[i];
    if (!list_has(opt.plugins, name)) continue;
    struct it_runtime* rt = &runtimes[i];
    if (opt.asan && (strcmp(name, "java") == 0 || strcmp(name, "go") == 0)) {
      printf("SKIPPED runtime %s: not loaded under AddressSanitizer (%s); the non-ASan run "
             "covers it\n",
             name,
             strcmp(name, "java") == 0 ? "the JVM's SIGSEGV-based null checks and its "
                                         "allocator conflict with ASan"
                                       : "the Go runtime does not run under ASan in a C host");
      continue;
    }
    if (strcmp(name, "go") == 0 && java_started) {
      /* The JVM's handlers lack SA_ONSTACK; Go would refuse to run with them. */
      int changed = it_signal_add_onstack();
      printf("signal fix-up after the JVM, before Go: %d handlers got SA_ONSTACK\n", changed);
    }
    int load_rc = opt.plugin_path[i][0] != '\0'
                      ? it_runtime_load_path(rt, name, opt.plugin_path[i])
                      : it_runtime_load(rt, name, opt.plugin_dir);
    if (load_rc != 0) {
      if (!rt->present) {
        printf("SKIPPED runtime %s: %s\n", name, rt->problem);
        size_t used = strlen(skipped);
        snprintf(skipped + used, sizeof skipped - used, "%s%s", used ? " " : "", name);
      } else {
        printf("FAIL load %s: %s\n", name, rt->problem);
        failed++;
      }
      continue;
    }
    if (strcmp(name, "java") == 0) {
      if (it_runtime_start_jvm(rt, why, sizeof why) != 0) {
        printf("FAIL load java: %s\n", why);
        failed++;
        rt->loaded = 0;
        continue;
      }
      java_started = 1;
    }
    printf("loaded runtime %s: %s\n", name, rt->path);
    all.runtimes[all.n++] = rt;
    if (strcmp(name, "java") == 0 && opt.go_first) {
      printf("Go was loaded before the JVM: the Java plugin's own SA_ONSTACK fix-up is "
             "under test\n");
    }
  }
  for (int i = 0; i < IT_MAX_RUNTIMES; i++) {
    const char* name = it_runtime_load_order[i];
    if (opt.require[0] != '\0' && list_has(opt.require, name) &&
        !(runtimes[i].loaded)) {
      printf("FAIL required runtime %s is not loaded: %s\n", name,
             runtimes[i].problem[0] ? runtimes[i].problem
                                    : (opt.asan ? "skipped under ASan" : "not requested"));
      failed++;
    }
  }
  if (it_handoff_init(why, sizeof why) != 0) {
    printf("FAIL setup: %s\n", why);
    printf("%lld passed, %lld failed\n", (long long)passed, (long long)failed + 1);
    return 1;
  }

  struct it_handoff_stats stats;
  memset(&stats, 0, sizeof stats);
  int64_t cell_passed[IT_MAX_RUNTIMES][IT_MAX_RUNTIMES];
  int64_t cell_failed[IT_MAX_RUNTIMES][IT_MAX_RUNTIMES];
  memset(cell_passed, 0, sizeof cell_passed);
  memset(cell_failed, 0, sizeof cell_failed);
  struct it_case_entry tamper_array, tamper_stream;
  memset(&tamper_array, 0, sizeof tamper_array);
  memset(&tamper_stream, 0, sizeof tamper_stream);
  snprintf(tamper_array.spec, sizeof tamper_array.spec, "%s", IT_TAMPER_ARRAY_CASE);
  snprintf(tamper_stream.spec, sizeof tamper_stream.spec, "%s", IT_TAMPER_STREAM_CASE);
  struct timespec start;
  clock_gettime(CLOCK_MONOTONIC, &start);

  for (int pi = 0; pi < all.n; pi++) {
    for (int ci = 0; ci < all.n; ci++) {
      const struct it_runtime* p = all.runtimes[pi];
      const struct it_runtime* c = all.runtimes[ci];
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
            entry = kind == 0 ? &tamper_array : &tamper_stream;
          } else {
            entry = &cases.entries[k];
          }
          char message[2048] = "";
          int ok = kind == 0 ? it_handoff_array(&all, p, c, entry, tamper, &stats, message,
                                                sizeof message)
                             : it_handoff_stream(&all, p, c, entry, tamper, &stats, message,
                                                 sizeof message);
          if (ok) {
            passed++;
            cell_passed[pi][ci]++;
            if (opt.verbose) {
              printf("ok %s->%s %s %s%s%s\n", p->name, c->name, kind_name,
                     tamper ? "tamper " : "", entry->reject_word[0] ? "reject " : "",
                     entry->spec);
            }
          } else {
            failed++;
            cell_failed[pi][ci]++;
            printf("FAIL %s->%s %s %s%s%s: %s\n", p->name, c->name, kind_name,
                   tamper ? "tamper " : "", entry->reject_word[0] ? "reject " : "",
                   entry->spec, message);
          }
          fflush(stdout);
        }
      }
      if (opt.verbose) {
        printf("pair %s->%s done in %.2f s\n", p->name, c->name, seconds_since(&pair_start));
      }
    }
  }

  printf("\nproducer \\ consumer (passed/run)\n%-10s", "");
  for (int ci = 0; ci < all.n; ci++) printf(" %10s", all.runtimes[ci]->name);
  printf("\n");
  for (int pi = 0; pi < all.n; pi++) {
    printf("%-10s", all.runtimes[pi]->name);
    for (int ci = 0; ci < all.n; ci++) {
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
  printf("%lld cases x %d runtimes (%d pairs) in %.1f s\n", (long long)cases.n, all.n,
         all.n * all.n, seconds_since(&start));
  if (skipped[0] != '\0') {
    printf("SKIPPED runtimes (pairs not run, not counted): %s\n", skipped);
  }
  printf("%lld passed, %lld failed\n", (long long)passed, (long long)failed);
  it_case_list_free(&cases);
  fflush(stdout);
  return failed == 0 && passed > 0 ? 0 : 1;
}
