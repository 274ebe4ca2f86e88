/* The conformance mode of the host: a plugin-agnostic conformance suite for
 * the contract of docs/cases.md and ferry/ferry_it.h.
 *
 *   ferry_it_host conformance PLUGIN.so [--case CASE]... [--verbose]
 *                                       [--reference C_PLUGIN.so] [--area AREA]...
 *
 * It trusts neither the plugin under test nor its checker: exports are
 * verified by the suite's own reading of the formula (oracle.c, verify.c)
 * through ferry's public C API, releases are counted by interposed callbacks,
 * and the C reference plugin (libferry_it_c.so next to PLUGIN.so unless
 * --reference says otherwise) serves only as a producer of correct data for
 * the plugin's checkers and as a second opinion on its exports. Only one
 * non-C plugin is ever loaded in a process (a Go runtime and a JVM have
 * process-level rules). Failures print as `FAIL <runtime> <area> <case>: <what>`;
 * the run ends with `N passed, N failed` and exits non-zero on any failure.
 *
 * With --case, only the given cases run (every area a case applies to);
 * --area limits a default run to some of: export stream errors inject check
 * tamper thread async. --device cuda|rocm runs the default lists with every sim
 * case on that device instead (a GPU, or ferry's driver emulations); the
 * areas tamper and thread, written for memory the host can change, do not
 * run then. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "areas.h"
#include "conformance.h"

#define MAX_FILTERS 64

struct options {
  const char* plugin;
  const char* reference;
  const char* cases[MAX_FILTERS];
  int n_cases;
  const char* areas[MAX_FILTERS];
  int n_areas;
  int verbose;
  const char* device; /* --device: where the default lists' sim cases run */
};

static void usage(void) {
  fprintf(stderr,
          "usage: ferry_it_host conformance PLUGIN.so [--case CASE]... [--area AREA]...\n"
          "                                  [--verbose] [--reference C_PLUGIN.so]\n"
          "                                  [--device cuda|rocm]\n"
          "areas: export stream errors inject check tamper thread async\n");
}

static int parse_options(int argc, char** argv, struct options* o) {
  memset(o, 0, sizeof *o);
  for (int i = 0; i < argc; i++) {
    const char* a = argv[i];
    if (strcmp(a, "--verbose") == 0) {
      o->verbose = 1;
    } else if (strcmp(a, "--case") == 0 && i + 1 < argc && o->n_cases < MAX_FILTERS) {
      o->cases[o->n_cases++] = argv[++i];
    } else if (strcmp(a, "--area") == 0 && i + 1 < argc && o->n_areas < MAX_FILTERS) {
      o->areas[o->n_areas++] = argv[++i];
    } else if (strcmp(a, "--reference") == 0 && i + 1 < argc) {
      o->reference = argv[++i];
    } else if (strcmp(a, "--device") == 0 && i + 1 < argc &&
               (strcmp(argv[i + 1], "cuda") == 0 || strcmp(argv[i + 1], "rocm") == 0)) {
      o->device = argv[++i];
    } else if (a[0] != '-' && o->plugin == NULL) {
      o->plugin = a;
    } else {
      return -1;
    }
  }
  return o->plugin == NULL ? -1 : 0;
}

static int area_on(const struct options* o, const char* area) {
  if (o->device != NULL && (strcmp(area, "tamper") == 0 || strcmp(area, "thread") == 0)) {
    return 0;
  }
  if (o->n_areas == 0) return 1;
  for (int i = 0; i < o->n_areas; i++) {
    if (strcmp(o->areas[i], area) == 0) return 1;
  }
  return 0;
}

/* Every area one case string applies to. */
static void run_one_case(struct suite* s, const char* case_text) {
  struct it_case c;
  struct FerryError error;
  ferry_error_init(&error);
  char why[FERRY_ERROR_MESSAGE_SIZE + 64];
  int valid = it_case_parse(case_text, &c, &error) == FERRY_OK;
  snprintf(why, sizeof why, "%s", error.message);
  if (valid && ((c.device_type == ARROW_DEVICE_CUDA && !s->cuda_available) ||
                (c.device_type == ARROW_DEVICE_ROCM && !s->rocm_available))) {
    snprintf(why, sizeof why, "device %s is not available here", c.device_name);
    valid = 0;
  }
  if (!valid) {
    /* Not valid by the suite's reading: every producer must refuse it. */
    printf("note: \"%s\" is invalid by the suite's reading (%s); expecting refusals\n",
           case_text, why);
    struct test t;
    test_begin(&t, s, "errors", case_text);
    struct ArrowSchema schema;
    struct ArrowDeviceArray array;
    memset(&schema, 0, sizeof schema);
    memset(&array, 0, sizeof array);
    int rc = s->ut.export_array(case_text, &schema, &array);
    const char* m = s->ut.last_error();
    if (rc == 0)
      test_fail(&t, "export_array accepted it");
    else if (m == NULL || m[0] == '\0')
      test_fail(&t, "export_array refused it without a message");
    ferry_schema_release(&schema);
    ferry_device_array_release(&array);
    struct ArrowDeviceArrayStream stream;
    memset(&stream, 0, sizeof stream);
    rc = s->ut.export_stream(case_text, &stream);
    m = s->ut.last_error();
    if (rc == 0)
      test_fail(&t, "export_stream accepted it");
    else if (m == NULL || m[0] == '\0')
      test_fail(&t, "export_stream refused it without a message");
    ferry_array_stream_release(&stream);
    test_end(&t);
    return;
  }
  if (c.fail == IT_FAIL_EXPORT) {
    run_inject(s, case_text);
    return;
  }
  run_array_export(s, case_text);
  run_array_ref_check(s, case_text);
  run_check_array(s, case_text);
  /* fail=consumer@N concerns async consumers: a plain stream here. */
  if (c.fail == IT_FAIL_NONE || c.fail == IT_FAIL_CONSUMER) {
    run_stream_export(s, case_text);
  } else {
    run_inject(s, case_text);
  }
  run_stream_ref_check(s, case_text);
  run_check_stream(s, case_text);
}

/* --- the default case lists ------------------------------------------------ */

/* A case of the default lists as it runs: with --device, "device=sim" becomes
 * "device=<device>" (into `out`); otherwise `text` itself. */
static const char* on_device(const struct options* o, const char* text, char* out,
                             size_t size) {
  const char* sim = strstr(text, "device=sim");
  if (o->device == NULL || sim == NULL) return text;
  snprintf(out, size, "%.*sdevice=%s%s", (int)(sim - text), text, o->device,
           sim + strlen("device=sim"));
  return out;
}

/* Grammar acceptance: every type with the defaults, then 24 combinations of
 * length x nulls, with seed, offset and device cycling through their values
 * at different strides, and the keys in varying order. */
static void run_array_matrix(struct suite* s, const struct options* o) {
  static const int64_t lengths[] = {0, 1, 16, 1000};
  static const char* const seeds[] = {"0", "1", "4294967295"};
  static const int64_t offsets[] = {0, 1, 5, 13};
  static const char* const devices[] = {"cpu", "sim"};
  for (int type = 0; type < IT_TYPE_COUNT; type++) {
    const char* word = it_type_name((enum it_type)type);
    char text[256];
    snprintf(text, sizeof text, "%s", word);
    if (area_on(o, "export")) {
      run_array_export(s, text);
      run_array_ref_check(s, text);
    }
    if (area_on(o, "check")) run_check_array(s, text);
    for (int k = 0; k < 24; k++) {
      int64_t length = lengths[k / 6];
      int64_t nulls_choices[] = {0, 1, 2, 3, 7, length + 1};
      int64_t nulls = nulls_choices[k % 6];
      const char* seed = seeds[(k + type) % 3];
      int64_t offset = offsets[(k / 2 + type) % 4];
      const char* device = devices[(k / 3 + type) % 2];
      switch (k % 4) {
        case 0:
          snprintf(text, sizeof text,
                   "%s:length=%lld:nulls=%lld:seed=%s:offset=%lld:device=%s", word,
                   (long long)length, (long long)nulls, seed, (long long)offset, device);
          break;
        case 1:
          snprintf(text, sizeof text,
                   "%s:device=%s:offset=%lld:seed=%s:nulls=%lld:length=%lld", word,
                   device, (long long)offset, seed, (long long)nulls, (long long)length);
          break;
        case 2: /* defaults left out where they apply */
          snprintf(text, sizeof text, "%s:nulls=%lld:length=%lld%s%s%s", word,
                   (long long)nulls, (long long)length, strcmp(seed, "1") ? ":seed=" : "",
                   strcmp(seed, "1") ? seed : "",
                   strcmp(device, "cpu") ? ":device=sim" : "");
          if (offset != 0) {
            size_t used = strlen(text);
            snprintf(text + used, sizeof text - used, ":offset=%lld", (long long)offset);
          }
          break;
        default:
          snprintf(text, sizeof text,
                   "%s:seed=%s:length=%lld:device=%s:nulls=%lld:offset=%lld", word, seed,
                   (long long)length, device, (long long)nulls, (long long)offset);
          break;
      }
      char moved[256];
      const char* t = on_device(o, text, moved, sizeof moved);
      if (area_on(o, "export")) {
        run_array_export(s, t);
        if (k % 3 == 0) run_array_ref_check(s, t);
      }
      if (area_on(o, "check")) run_check_array(s, t);
    }
  }
  /* Explicit defaults, and stream-only keys the array entry points ignore. */
  static const char* const extra[] = {
      "int32:length=16:nulls=0:seed=1:offset=0:device=cpu",
      "int32:batches=5",
      "utf8:nulls=3:batches=0",
      "int32:fail=get_next@2",
      "list_int32:fail=get_schema:device=sim",
      "dict_int32_utf8:fail=get_next@1:batches=1:nulls=2",
      /* Large lengths, for a few types only (time). */
      "int32:length=100000:nulls=7:offset=13",
      "utf8:length=100000:nulls=3:seed=4294967295",
      "list_int32:length=100000:nulls=2:offset=5",
      "bool:length=100000:offset=13:nulls=7",
      "struct_int32_utf8:length=100000:nulls=7:offset=1",
      "int64:length=100000:device=sim:nulls=3",
      "dict_int32_utf8:length=100000:device=sim:offset=5",
  };
  for (size_t k = 0; k < sizeof extra / sizeof extra[0]; k++) {
    char moved[256];
    const char* t = on_device(o, extra[k], moved, sizeof moved);
    if (area_on(o, "export")) {
      run_array_export(s, t);
      run_array_ref_check(s, t);
    }
    if (area_on(o, "check")) run_check_array(s, t);
  }
}

static void run_stream_matrix(struct suite* s, const struct options* o) {
  for (int type = 0; type < IT_TYPE_COUNT; type++) {
    const char* word = it_type_name((enum it_type)type);
    char texts[5][256];
    snprintf(texts[0], sizeof texts[0], "%s", word);
    snprintf(texts[1], sizeof texts[1], "%s:batches=0", word);
    snprintf(texts[2], sizeof texts[2], "%s:batches=1:device=sim:nulls=2:length=5", word);
    /* seed + b wraps around 2^32 inside this stream. */
    snprintf(texts[3], sizeof texts[3],
             "%s:batches=5:offset=5:nulls=3:seed=4294967294:length=100", word);
    snprintf(texts[4], sizeof texts[4], "%s:length=0:batches=3:device=sim", word);
    for (int k = 0; k < 5; k++) {
      char moved[256];
      const char* t = on_device(o, texts[k], moved, sizeof moved);
      if (area_on(o, "stream")) {
        run_stream_export(s, t);
        if (k % 2 == 1 || type % 4 == 0) run_stream_ref_check(s, t);
      }
      if (area_on(o, "check")) run_check_stream(s, t);
    }
  }
}

static void run_inject_matrix(struct suite* s, const struct options* o) {
  static const char* const cases[] = {
      "int32:fail=export",
      "utf8:device=sim:nulls=3:fail=export",
      "struct_int32_utf8:length=0:fail=export",
      "int32:fail=get_schema",
      "dict_int32_utf8:fail=get_schema:device=sim",
      "int32:fail=get_next@1",
      "int32:fail=get_next@2",
      "int32:fail=get_next@3",
      "int32:fail=get_next@4",
      "utf8:batches=5:fail=get_next@5:nulls=3",
      "utf8:batches=5:fail=get_next@6:nulls=3",
      "list_int32:batches=1:fail=get_next@2:device=sim",
      "int64:batches=0:fail=get_next@1",
      "bool:batches=2:fail=get_next@7",
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    char moved[256];
    const char* t = on_device(o, cases[k], moved, sizeof moved);
    if (area_on(o, "inject")) {
      run_inject(s, t);
      if (strstr(t, "fail=export") == NULL) run_stream_ref_check(s, t);
    }
    if (area_on(o, "check") && strstr(t, "fail=export") == NULL) {
      run_check_stream(s, t);
    }
  }
}

int conformance_main(int argc, char** argv) {
  struct options o;
  if (parse_options(argc, argv, &o) != 0) {
    usage();
    return 2;
  }
  setvbuf(stdout, NULL, _IOLBF, 0);
  static struct suite s;
  memset(&s, 0, sizeof s);
  s.verbose = o.verbose;
  char why[1024];
  if (it_plugin_load(&s.ut, NULL, o.plugin) != 0) {
    printf("FAIL %s load %s: %s\n", s.ut.name[0] ? s.ut.name : "?", o.plugin, s.ut.problem);
    printf("0 passed, 1 failed\n");
    return 1;
  }
  char reference[1024];
  if (o.reference != NULL) {
    snprintf(reference, sizeof reference, "%s", o.reference);
  } else {
    const char* slash = strrchr(o.plugin, '/');
    int dir = slash ? (int)(slash - o.plugin) : 1;
    snprintf(reference, sizeof reference, "%.*s/libferry_it_c.so", dir,
             slash ? o.plugin : ".");
  }
  if (it_plugin_load(&s.ref, "c", reference) != 0) {
    printf("FAIL %s load reference: %s\n", s.ut.name, s.ref.problem);
    printf("0 passed, 1 failed\n");
    return 1;
  }
  s.ut_is_ref = s.ut.handle == s.ref.handle;
  for (int d = 0; d < FERRY_SIM_DEVICE_COUNT; d++) {
    if (ferry_device_resolve(ARROW_DEVICE_EXT_DEV, d, &s.sim[d], NULL) != 0)
      s.sim[d] = NULL;
  }
  if (it_allocations_init(why, sizeof why) != 0) {
    printf("FAIL %s setup: %s\n0 passed, 1 failed\n", s.ut.name, why);
    return 1;
  }
  struct FerryDevice* gpu = NULL;
  s.cuda_available = ferry_device_resolve(ARROW_DEVICE_CUDA, 0, &gpu, NULL) == 0;
  s.rocm_available = ferry_device_resolve(ARROW_DEVICE_ROCM, 0, &gpu, NULL) == 0;
  printf("conformance of %s (%s), reference %s%s; sim strict mode %s\n", s.ut.name,
         s.ut.path, s.ref.path, s.ut_is_ref ? " (the plugin itself)" : "",
         ferry_sim_is_strict() ? "on" : "OFF");
  if (o.device != NULL) {
    int available = strcmp(o.device, "cuda") == 0 ? s.cuda_available : s.rocm_available;
    printf("--device %s: the default lists' sim cases run on %s (%s); areas tamper and "
           "thread do not run\n",
           o.device, o.device, available ? "available" : "NOT available: they must be refused");
  }
  if (!ferry_sim_is_strict()) {
    printf(
        "WARNING: FERRY_SIM_STRICT=0: a checker that reads before waiting is not "
        "caught\n");
  }

  struct timespec start;
  clock_gettime(CLOCK_MONOTONIC, &start);
  if (o.n_cases > 0) {
    for (int i = 0; i < o.n_cases; i++) run_one_case(&s, o.cases[i]);
  } else {
    run_array_matrix(&s, &o);
    run_stream_matrix(&s, &o);
    run_inject_matrix(&s, &o);
    if (area_on(&o, "errors")) run_errors(&s);
    if (area_on(&o, "tamper")) run_tampering(&s);
    if (area_on(&o, "thread")) run_threads(&s);
    if (area_on(&o, "async")) {
      int available =
          o.device == NULL ||
          (strcmp(o.device, "cuda") == 0 ? s.cuda_available : s.rocm_available);
      if (available) {
        run_async(&s, o.device);
      } else {
        suite_skip(&s, "async", "(every async case)", "the device is not available");
      }
    }
  }
  struct timespec end;
  clock_gettime(CLOCK_MONOTONIC, &end);
  double seconds =
      (double)(end.tv_sec - start.tv_sec) + (double)(end.tv_nsec - start.tv_nsec) / 1e9;
  printf(
      "%s sim exports: %lld, %lld with a sync_event, %lld read as poison before the wait "
      "(asynchronous)\n",
      s.ut.name, (long long)s.sim_exports, (long long)s.sim_with_event,
      (long long)s.sim_poison_before_wait);
  printf("%s: %.1f s, %lld skipped\n", s.ut.name, seconds, (long long)s.skipped);
  printf("%lld passed, %lld failed\n", (long long)s.passed, (long long)s.failed);
  fflush(stdout);
  int code = s.failed == 0 ? 0 : 1;
  /* A JVM or a Go runtime must not run exit machinery against its threads
   * still inside it (runtimes.def: QUICK_EXIT): _Exit (everything is
   * flushed). Otherwise exit(), so that LeakSanitizer runs in sanitizer builds. */
  if (s.ut.runtime != NULL && (s.ut.runtime->traits & IT_RUNTIME_QUICK_EXIT)) _Exit(code);
  exit(code);
}
