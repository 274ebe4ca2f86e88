/* ferry_it_bench: handoff cost for every ordered pair of runtimes, in one run.
 *
 * Loads every built plugin (same order as the test host) and measures, per
 * ordered pair producer -> consumer (ns per operation, median of 5 samples,
 * each a loop of at least 20 ms after a warm-up sample):
 *   array    P exports "int32:length=1", Q checks it (and releases it into P)
 *   stream   per batch of "int32:length=1": (t(65 batches) - t(1 batch)) / 64
 *            for P exporting the stream and Q checking it, which cancels the
 *            per-stream set-up
 *   floor    call(P) + call(Q) + the same operation C -> C measured in this run;
 *            call(X) is one call of X's cheapest entry point
 *            (ferry_it_live_allocations) from this C host: the raw cost of
 *            entering each runtime once, plus what a C producer and consumer
 *            need for the same work
 *   lend     the consumer side for a 1 KiB and a 1 GiB array: P exports
 *            "int32:length=L" once (not timed, it computes L values); each
 *            timed operation lends Q a shallow copy of it (same buffers, a
 *            host release that frees nothing) and Q checks it against seed 2
 *            instead of 1, so it fails at the first value it reads. This is
 *            import + first read + release: if Q copied, validated or touched
 *            the whole array, the 1 GiB / 1 KiB ratio would show it. The
 *            producer's own O(n) work (computing and freeing 1 GiB) is not a
 *            handoff cost and is excluded.
 * Prints "RESULT call <runtime> <ns>", "RESULT pair P->Q <metric> <ns>", a
 * table with the ratios and targets (array/floor and stream/floor <= 1.5,
 * 1 GiB/1 KiB <= 1.1), and with --tsv FILE the table for the plot.
 *
 *   ferry_it_bench [--plugin-dir DIR] [--plugins LIST] [--tsv FILE]
 *                  [--large-length N] [--min-ms N] [--no-large] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ferry/ferry.h"
#include "plugins.h"

#define SAMPLES 5

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int compare_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

/* One benchmarked operation; returns 0, or -1 after printing why. */
typedef int (*op_fn)(void* ctx);

static int64_t g_min_ns = 20000000;

/* Median ns per op over SAMPLES samples of at least g_min_ns each, after one
 * warm-up sample; NAN when the operation failed. */
static double measure(op_fn op, void* ctx) {
  int64_t iterations = 1;
  /* Warm-up, and the number of iterations that fills g_min_ns. */
  for (;;) {
    int64_t start = now_ns();
    for (int64_t i = 0; i < iterations; i++) {
      if (op(ctx) != 0) return NAN;
    }
    int64_t elapsed = now_ns() - start;
    if (elapsed >= g_min_ns / 4 || iterations >= (INT64_C(1) << 30)) {
      iterations = elapsed <= 0 ? iterations * 4
                                : (int64_t)((double)iterations * (double)g_min_ns /
                                            (double)elapsed) + 1;
      break;
    }
    iterations *= 4;
  }
  double samples[SAMPLES];
  for (int s = 0; s < SAMPLES; s++) {
    int64_t start = now_ns();
    for (int64_t i = 0; i < iterations; i++) {
      if (op(ctx) != 0) return NAN;
    }
    samples[s] = (double)(now_ns() - start) / (double)iterations;
  }
  qsort(samples, SAMPLES, sizeof samples[0], compare_double);
  return samples[SAMPLES / 2];
}

struct pair_ctx {
  struct it_runtime* p;
  struct it_runtime* q;
  const char* spec;       /* what P exports */
  const char* check_spec; /* what Q checks (lend: another seed) */
  struct ArrowSchema lent_schema;     /* lend: P's export, kept */
  struct ArrowDeviceArray lent_array;
};

static int op_call(void* ctx) {
  struct it_runtime* rt = (struct it_runtime*)ctx;
  return rt->live_allocations() < 0 ? -1 : 0;
}

static int op_array(void* ctx) {
  struct pair_ctx* c = (struct pair_ctx*)ctx;
  struct ArrowSchema schema;
  struct ArrowDeviceArray array;
  memset(&schema, 0, sizeof schema);
  memset(&array, 0, sizeof array);
  int rc = c->p->export_array(c->spec, &schema, &array);
  if (rc != 0) {
    printf("  %s export %s: %s\n", c->p->name, c->spec, it_runtime_error(c->p));
    return -1;
  }
  rc = c->q->check_array(c->spec, &schema, &array);
  if (rc != 0) {
    printf("  %s check %s: %s\n", c->q->name, c->spec, it_runtime_error(c->q));
    return -1;
  }
  return 0;
}

static int op_stream(void* ctx) {
  struct pair_ctx* c = (struct pair_ctx*)ctx;
  struct ArrowDeviceArrayStream stream;
  memset(&stream, 0, sizeof stream);
  int rc = c->p->export_stream(c->spec, &stream);
  if (rc != 0) {
    printf("  %s export_stream %s: %s\n", c->p->name, c->spec, it_runtime_error(c->p));
    return -1;
  }
  rc = c->q->check_stream(c->spec, &stream);
  if (rc != 0) {
    printf("  %s check_stream %s: %s\n", c->q->name, c->spec, it_runtime_error(c->q));
    return -1;
  }
  return 0;
}

/* The lent structs' release: the host owns nothing to free in them. */
static void release_lent_schema(struct ArrowSchema* schema) { schema->release = NULL; }
static void release_lent_array(struct ArrowArray* array) { array->release = NULL; }

static int op_lend(void* ctx) {
  struct pair_ctx* c = (struct pair_ctx*)ctx;
  struct ArrowSchema schema = c->lent_schema;
  struct ArrowDeviceArray array = c->lent_array;
  schema.release = release_lent_schema;
  schema.private_data = NULL;
  array.array.release = release_lent_array;
  array.array.private_data = NULL;
  int rc = c->q->check_array(c->check_spec, &schema, &array);
  if (rc == 0) {
    printf("  %s accepted %s for data exported as %s: the lend measurement is invalid\n",
           c->q->name, c->check_spec, c->spec);
    return -1;
  }
  if (schema.release != NULL || array.array.release != NULL) {
    printf("  %s did not release the lent array\n", c->q->name);
    return -1;
  }
  return 0;
}

static double stream_per_batch(struct it_runtime* p, struct it_runtime* q) {
  struct pair_ctx one = {.p = p, .q = q, .spec = "int32:length=1:batches=1"};
  struct pair_ctx many = {.p = p, .q = q, .spec = "int32:length=1:batches=65"};
  double t1 = measure(op_stream, &one);
  double t65 = measure(op_stream, &many);
  return (t65 - t1) / 64.0;
}

/* Measures lending P's export of `length` int32 to Q; NAN when P cannot
 * export it. Prints the (untimed) export time. */
static double lend(struct it_runtime* p, struct it_runtime* q, int64_t length,
                   struct pair_ctx* kept) {
  if (kept->lent_array.array.release == NULL) {
    static char spec[128];
    snprintf(spec, sizeof spec, "int32:length=%lld:seed=1", (long long)length);
    kept->p = p;
    kept->spec = spec;
    memset(&kept->lent_schema, 0, sizeof kept->lent_schema);
    int64_t start = now_ns();
    int rc = p->export_array(spec, &kept->lent_schema, &kept->lent_array);
    if (rc != 0) {
      printf("  %s cannot export %s: %s\n", p->name, spec, it_runtime_error(p));
      return NAN;
    }
    if (length > 1000000) {
      printf("  (%s exported %s once in %.2f s, not timed)\n", p->name, spec,
             (double)(now_ns() - start) / 1e9);
    }
  }
  static char check_spec[128];
  snprintf(check_spec, sizeof check_spec, "int32:length=%lld:seed=2", (long long)length);
  kept->q = q;
  kept->check_spec = check_spec;
  return measure(op_lend, kept);
}

static void drop_lent(struct pair_ctx* kept) {
  ferry_schema_release(&kept->lent_schema);
  ferry_device_array_release(&kept->lent_array);
  memset(kept, 0, sizeof *kept);
}

int main(int argc, char** argv) {
  char plugin_dir[2048];
  const char* build = getenv("FERRY_BUILD_DIR");
  snprintf(plugin_dir, sizeof plugin_dir, "%s/plugins", build ? build : "build");
  const char* tsv_path = NULL;
  const char* wanted = "c,rust,go,java,lua";
  int64_t large = INT64_C(1) << 28; /* 1 GiB of int32 */
  int do_large = 1;
  for (int i = 1; i < argc; i++) {
    const char* v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(argv[i], "--plugin-dir") == 0 && v) {
      snprintf(plugin_dir, sizeof plugin_dir, "%s", v);
      i++;
    } else if (strcmp(argv[i], "--tsv") == 0 && v) {
      tsv_path = v;
      i++;
    } else if (strcmp(argv[i], "--plugins") == 0 && v) {
      wanted = v;
      i++;
    } else if (strcmp(argv[i], "--large-length") == 0 && v) {
      large = atoll(v);
      i++;
    } else if (strcmp(argv[i], "--min-ms") == 0 && v) {
      g_min_ns = atoll(v) * 1000000;
      i++;
    } else if (strcmp(argv[i], "--no-large") == 0) {
      do_large = 0;
    } else {
      fprintf(stderr, "usage: ferry_it_bench [--plugin-dir DIR] [--plugins LIST] [--tsv FILE] "
                      "[--large-length N] [--min-ms N] [--no-large]\n");
      return 2;
    }
  }

  static struct it_runtime runtimes[IT_MAX_RUNTIMES];
  struct it_runtime* loaded[IT_MAX_RUNTIMES];
  int n = 0, java_started = 0;
  for (int i = 0; i < IT_MAX_RUNTIMES; i++) {
    const char* name = it_runtime_load_order[i];
    if (strstr(wanted, name) == NULL) continue;
    if (strcmp(name, "go") == 0 && java_started) it_signal_add_onstack();
    if (it_runtime_load(&runtimes[i], name, plugin_dir) != 0) {
      printf("SKIPPED runtime %s: %s\n", name, runtimes[i].problem);
      continue;
    }
    if (strcmp(name, "java") == 0) {
      char why[1024];
      if (it_runtime_start_jvm(&runtimes[i], why, sizeof why) != 0) {
        printf("SKIPPED runtime java: %s\n", why);
        continue;
      }
      java_started = 1;
    }
    loaded[n++] = &runtimes[i];
  }
  struct it_runtime* c_runtime = NULL;
  for (int i = 0; i < n; i++) {
    if (strcmp(loaded[i]->name, "c") == 0) c_runtime = loaded[i];
  }
  if (c_runtime == NULL) {
    printf("the C plugin is needed for the floors\n");
    return 1;
  }

  double call[IT_MAX_RUNTIMES];
  for (int i = 0; i < n; i++) {
    call[i] = measure(op_call, loaded[i]);
    printf("RESULT call %s %.1f\n", loaded[i]->name, call[i]);
  }
  struct pair_ctx c2c = {.p = c_runtime, .q = c_runtime, .spec = "int32:length=1"};
  double c2c_array = measure(op_array, &c2c);
  double c2c_stream = stream_per_batch(c_runtime, c_runtime);
  printf("RESULT pair c->c array %.1f\nRESULT pair c->c stream_batch %.1f\n", c2c_array,
         c2c_stream);

  struct row {
    char pair[32];
    double array, stream, floor_array, floor_stream, lend_small, lend_large;
  } rows[IT_MAX_RUNTIMES * IT_MAX_RUNTIMES];
  int n_rows = 0;
  for (int pi = 0; pi < n; pi++) {
    struct pair_ctx small_kept, large_kept;
    memset(&small_kept, 0, sizeof small_kept);
    memset(&large_kept, 0, sizeof large_kept);
    for (int qi = 0; qi < n; qi++) {
      struct it_runtime* p = loaded[pi];
      struct it_runtime* q = loaded[qi];
      struct row* r = &rows[n_rows++];
      snprintf(r->pair, sizeof r->pair, "%s->%s", p->name, q->name);
      struct pair_ctx ctx = {.p = p, .q = q, .spec = "int32:length=1"};
      r->array = measure(op_array, &ctx);
      r->stream = stream_per_batch(p, q);
      r->floor_array = call[pi] + call[qi] + c2c_array;
      r->floor_stream = call[pi] + call[qi] + c2c_stream;
      r->lend_small = lend(p, q, 256, &small_kept);
      r->lend_large = do_large ? lend(p, q, large, &large_kept) : NAN;
      printf("RESULT pair %s array %.1f\n", r->pair, r->array);
      printf("RESULT pair %s stream_batch %.1f\n", r->pair, r->stream);
      printf("RESULT pair %s floor %.1f\n", r->pair, r->floor_array);
      printf("RESULT pair %s lend_1KiB %.1f\n", r->pair, r->lend_small);
      printf("RESULT pair %s lend_1GiB %.1f\n", r->pair, r->lend_large);
      fflush(stdout);
    }
    drop_lent(&small_kept);
    drop_lent(&large_kept);
  }

  printf("\nns per operation, median of %d samples (targets: x floor <= 1.5, 1 GiB / 1 KiB "
         "<= 1.1)\n",
         SAMPLES);
  printf("%-12s %10s %10s %8s %10s %10s %8s %10s %10s %8s\n", "pair", "array", "floor",
         "x floor", "stream", "floor", "x floor", "lend 1KiB", "lend 1GiB", "size x");
  FILE* tsv = tsv_path ? fopen(tsv_path, "w") : NULL;
  if (tsv != NULL) {
    fprintf(tsv, "# pair\tarray\tarray_floor\tstream\tstream_floor\tlend_1KiB\tlend_1GiB\n");
  }
  int misses = 0;
  for (int i = 0; i < n_rows; i++) {
    struct row* r = &rows[i];
    double ra = r->array / r->floor_array, rs = r->stream / r->floor_stream;
    double size = r->lend_large / r->lend_small;
    printf("%-12s %10.1f %10.1f %7.2f%s %10.1f %10.1f %7.2f%s %10.1f %10.1f %7.2f%s\n", r->pair,
           r->array, r->floor_array, ra, ra <= 1.5 ? " " : "!", r->stream, r->floor_stream, rs,
           rs <= 1.5 ? " " : "!", r->lend_small, r->lend_large, size,
           isnan(size) || size <= 1.1 ? " " : "!");
    misses += (ra > 1.5) + (rs > 1.5) + (!isnan(size) && size > 1.1);
    if (tsv != NULL) {
      fprintf(tsv, "%s\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\n", r->pair, r->array,
              r->floor_array, r->stream, r->floor_stream, r->lend_small, r->lend_large);
    }
  }
  if (tsv != NULL) fclose(tsv);
  printf("%d of %d ratios miss their target (marked !); the benchmark reports, it does not "
         "gate\n",
         misses, n_rows * 3);
  return 0;
}
