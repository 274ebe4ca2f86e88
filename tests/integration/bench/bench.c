/* ferry_it_bench: the cost of handing an array and a stream between every
 * ordered pair of runtimes, in one process and one run, against the raw
 * floor of that pair.
 *
 * Every plugin exports the entry points of ferry_it_bench.h, implemented in
 * its runtime through its binding's ordinary API: an int32 array exported
 * zero-copy from a buffer the producer allocated once, a stream of such
 * batches, and consumers that import, read the length and element 0, and
 * release. For each ordered pair P -> Q (ns per operation):
 *   array         P.export_array(256 int32 = 1 KiB) + Q.consume_array
 *   stream_batch  (t(65 batches) - t(1 batch)) / 64 for P.export_stream +
 *                 Q.consume_stream: one batch's get_next + read + release,
 *                 with the per-stream set-up cancelled
 *   floor         noop(P) + noop(Q) + the same operation C -> C with static
 *                 C callbacks (this file: fill, move, read, release; no
 *                 allocation), measured in the same round. noop(X) is one
 *                 call of X's ferry_it_bench_noop from this C host: the raw
 *                 cost of entering X and coming back (cgo for Go, a JNI
 *                 upcall for Java, lua_pcall for Lua)
 *   array_1GiB    the array operation with 2^28 int32 (1 GiB), in phase 2
 * Method: a calibration pass (which also warms the JIT) sizes every sample
 * to --sample-ms; then --rounds rounds (>= 5), each measuring every noop,
 * both static floors and every pair once, the pairs in a rotated order so
 * that slow phases of the machine spread over all of them. Phase 2: every
 * producer allocates its 1 GiB buffer once (not timed), then --rounds rounds
 * of 1 KiB and 1 GiB arrays, interleaved per pair; the size ratio compares
 * the two under the same conditions. Reported: min and median over the
 * rounds; ratios are median / median (targets: x floor <= 1.5, 1 GiB / 1 KiB
 * <= 1.1). RESULT lines carry the medians. The benchmark reports, it does
 * not gate.
 *
 * --check runs every entry point once instead (the test of tests/
 * integration/run.sh): noop, rejected lengths, and for every ordered pair an
 * array (lengths 0 and 16), a tampered array (the consumer must notice a byte
 * the host flipped in the producer's buffer) and a 3-batch stream, each
 * asserting release exactly once with the producer's buffers (the harness's
 * release watch), and every runtime's live allocations and
 * ferry_live_exports() back at their baseline. Prints "N passed, N failed".
 *
 *   ferry_it_bench [--plugin-dir DIR] [--plugins LIST] [--rounds N] [--sample-ms N]
 *                  [--tsv FILE] [--large-length N] [--no-large]
 *   ferry_it_bench --check [--plugin-dir DIR] [--plugins LIST] [--require LIST] */
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "allocations.h"
#include "ferry/ferry.h"
#include "ferry_it_bench.h"
#include "plugin.h"
#include "release_watch.h"
#include "stream_watch.h"
#include "struct_fill.h"

#define SMALL_LENGTH 256 /* 1 KiB of int32 */
#define STREAM_BATCHES 65
#define MAX_ROUNDS 50

/* The entry points of one runtime, or of the static C floor. */
struct bench_ops {
  const char* name;
  const struct it_plugin* rt; /* NULL for the static floor */
  ferry_it_bench_noop_fn noop;
  ferry_it_bench_export_array_fn export_array;
  ferry_it_bench_consume_array_fn consume_array;
  ferry_it_bench_export_stream_fn export_stream;
  ferry_it_bench_consume_stream_fn consume_stream;
  int large_ok; /* the 1 GiB buffer exists */
};

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static const char* ops_error(const struct bench_ops* ops) {
  return ops->rt != NULL ? it_plugin_error(ops->rt) : "(static floor)";
}

static void print_loadavg(const char* when) {
  char text[128] = "?";
  FILE* f = fopen("/proc/loadavg", "r");
  if (f != NULL) {
    if (fgets(text, sizeof text, f) == NULL) snprintf(text, sizeof text, "?");
    fclose(f);
  }
  text[strcspn(text, "\n")] = '\0';
  printf("load average %s: %s\n", when, text);
}

/* ---- the static C floor ------------------------------------------------------
 * The raw ABI cost of the same operations: the producer fills the structs
 * with static callbacks (release only marks them released), the consumer
 * moves them, reads the length and element 0, and releases. Called through
 * function pointers like the plugins' entry points. */

static int32_t g_static_values[SMALL_LENGTH] = {
    SMALL_LENGTH}; /* element 0 holds the length */
static const void* g_static_buffers[2] = {NULL, g_static_values};

static void static_release_schema(struct ArrowSchema* schema) { schema->release = NULL; }
static void static_release_array(struct ArrowArray* array) { array->release = NULL; }

static void static_fill_schema(struct ArrowSchema* out) {
  out->format = "i";
  out->name = "values";
  out->metadata = NULL;
  out->flags = 0;
  out->n_children = 0;
  out->children = NULL;
  out->dictionary = NULL;
  out->release = static_release_schema;
  out->private_data = NULL;
}

static void static_fill_array(int64_t length, struct ArrowDeviceArray* out) {
  out->array.length = length;
  out->array.null_count = 0;
  out->array.offset = 0;
  out->array.n_buffers = 2;
  out->array.n_children = 0;
  out->array.buffers = g_static_buffers;
  out->array.children = NULL;
  out->array.dictionary = NULL;
  out->array.release = static_release_array;
  out->array.private_data = NULL;
  out->device_id = -1;
  out->device_type = ARROW_DEVICE_CPU;
  out->sync_event = NULL;
  out->reserved[0] = out->reserved[1] = out->reserved[2] = 0;
}

static int static_read_first(const struct ArrowArray* array) {
  if (array->length <= 0) return 0;
  const int32_t* values = (const int32_t*)array->buffers[1];
  return values[array->offset] == (int32_t)array->length ? 0 : EINVAL;
}

__attribute__((noinline)) static int64_t static_noop(int64_t x) { return x + 1; }

__attribute__((noinline)) static int static_export_array(
    int64_t length, struct ArrowSchema* schema_out, struct ArrowDeviceArray* array_out) {
  if (length != SMALL_LENGTH) return EINVAL;
  static_fill_schema(schema_out);
  static_fill_array(length, array_out);
  return 0;
}

__attribute__((noinline)) static int static_consume_array(
    struct ArrowSchema* schema, struct ArrowDeviceArray* array) {
  struct ArrowSchema owned_schema = *schema;
  schema->release = NULL;
  struct ArrowDeviceArray owned = *array;
  array->array.release = NULL;
  int rc = static_read_first(&owned.array);
  owned.array.release(&owned.array);
  owned_schema.release(&owned_schema);
  return rc;
}

struct static_stream_state {
  int64_t length;
  int64_t remaining;
};
static struct static_stream_state g_static_stream;

static int static_get_schema(struct ArrowDeviceArrayStream* stream,
                             struct ArrowSchema* out) {
  (void)stream;
  static_fill_schema(out);
  return 0;
}

static int static_get_next(struct ArrowDeviceArrayStream* stream,
                           struct ArrowDeviceArray* out) {
  struct static_stream_state* state = (struct static_stream_state*)stream->private_data;
  if (state->remaining == 0) {
    out->array.release = NULL; /* the end */
    return 0;
  }
  state->remaining--;
  static_fill_array(state->length, out);
  return 0;
}

static const char* static_get_last_error(struct ArrowDeviceArrayStream* stream) {
  (void)stream;
  return NULL;
}

static void static_release_stream(struct ArrowDeviceArrayStream* stream) {
  stream->release = NULL;
}

__attribute__((noinline)) static int static_export_stream(
    int64_t length, int64_t batches, struct ArrowDeviceArrayStream* out) {
  if (length != SMALL_LENGTH) return EINVAL;
  g_static_stream.length = length;
  g_static_stream.remaining = batches;
  it_fill_stream(out, ARROW_DEVICE_CPU, static_get_schema, static_get_next,
                 static_get_last_error, static_release_stream, &g_static_stream);
  return 0;
}

__attribute__((noinline)) static int static_consume_stream(
    struct ArrowDeviceArrayStream* stream) {
  struct ArrowDeviceArrayStream owned = *stream;
  stream->release = NULL;
  struct ArrowSchema schema;
  int rc = owned.get_schema(&owned, &schema);
  while (rc == 0) {
    struct ArrowDeviceArray batch;
    rc = owned.get_next(&owned, &batch);
    if (rc != 0 || batch.array.release == NULL) break;
    rc = static_read_first(&batch.array);
    batch.array.release(&batch.array);
  }
  if (schema.release != NULL) schema.release(&schema);
  owned.release(&owned);
  return rc;
}

static struct bench_ops g_static_ops = {"static C",
                                        NULL,
                                        static_noop,
                                        static_export_array,
                                        static_consume_array,
                                        static_export_stream,
                                        static_consume_stream,
                                        0};

/* ---- loading ---------------------------------------------------------------- */

/* Finds the bench entry points in a loaded plugin; -1 with `why` when one
 * is missing (a plugin built before ferry_it_bench.h). */
static int bind_ops(const struct it_plugin* rt, struct bench_ops* ops, char* why,
                    size_t size) {
  memset(ops, 0, sizeof *ops);
  ops->name = rt->name;
  ops->rt = rt;
  const char* names[5] = {"ferry_it_bench_noop", "ferry_it_bench_export_array",
                          "ferry_it_bench_consume_array", "ferry_it_bench_export_stream",
                          "ferry_it_bench_consume_stream"};
  void* found[5];
  for (int i = 0; i < 5; i++) {
    found[i] = it_plugin_symbol(rt, names[i]);
    if (found[i] == NULL) {
      snprintf(why, size, "%s does not export %s (rebuild the plugin)", rt->path,
               names[i]);
      return -1;
    }
  }
  ops->noop = (ferry_it_bench_noop_fn)found[0];
  ops->export_array = (ferry_it_bench_export_array_fn)found[1];
  ops->consume_array = (ferry_it_bench_consume_array_fn)found[2];
  ops->export_stream = (ferry_it_bench_export_stream_fn)found[3];
  ops->consume_stream = (ferry_it_bench_consume_stream_fn)found[4];
  return 0;
}

/* ---- timing ----------------------------------------------------------------- */

enum op_kind { OP_NOOP, OP_ARRAY, OP_STREAM };

struct op {
  enum op_kind kind;
  const struct bench_ops* p; /* producer (the runtime, for OP_NOOP) */
  const struct bench_ops* q; /* consumer */
  int64_t length;
  int64_t batches;
  int64_t iterations; /* per sample, from the calibration */
};

static int64_t g_sample_ns = 20000000;

/* Runs `op` `iterations` times; the ns per operation, or NAN after printing
 * why it failed. */
static double run_op(const struct op* op, int64_t iterations) {
  int64_t start = now_ns();
  if (op->kind == OP_NOOP) {
    ferry_it_bench_noop_fn noop = op->p->noop;
    int64_t acc = 0;
    for (int64_t i = 0; i < iterations; i++) acc = noop(acc);
    int64_t elapsed = now_ns() - start;
    if (acc != iterations) {
      printf("  %s noop returned %lld after %lld calls: %s\n", op->p->name,
             (long long)acc, (long long)iterations, ops_error(op->p));
      return NAN;
    }
    return (double)elapsed / (double)iterations;
  }
  for (int64_t i = 0; i < iterations; i++) {
    int rc;
    if (op->kind == OP_ARRAY) {
      struct ArrowSchema schema;
      struct ArrowDeviceArray array;
      schema.release = NULL;
      array.array.release = NULL;
      rc = op->p->export_array(op->length, &schema, &array);
      if (rc != 0) {
        printf("  %s export_array(%lld): %s\n", op->p->name, (long long)op->length,
               ops_error(op->p));
        return NAN;
      }
      rc = op->q->consume_array(&schema, &array);
    } else {
      struct ArrowDeviceArrayStream stream;
      stream.release = NULL;
      rc = op->p->export_stream(op->length, op->batches, &stream);
      if (rc != 0) {
        printf("  %s export_stream(%lld, %lld): %s\n", op->p->name, (long long)op->length,
               (long long)op->batches, ops_error(op->p));
        return NAN;
      }
      rc = op->q->consume_stream(&stream);
    }
    if (rc != 0) {
      printf("  %s consume (from %s): %s\n", op->q->name, op->p->name, ops_error(op->q));
      return NAN;
    }
  }
  return (double)(now_ns() - start) / (double)iterations;
}

/* Sizes one sample of `op` to about g_sample_ns (running it meanwhile,
 * which is the warm-up). -1 when the operation fails. */
static int calibrate(struct op* op) {
  /* Warm-up first: the first calls pay one-time costs (a runtime's lazy
   * start, class loading, JIT compilation, first page faults), which must
   * not size the sample. */
  int64_t warm_until = now_ns() + g_sample_ns / 2;
  int64_t iterations = 1;
  while (now_ns() < warm_until) {
    if (isnan(run_op(op, iterations))) return -1;
    if (iterations < 1024) iterations *= 2;
  }
  iterations = 1;
  for (;;) {
    int64_t start = now_ns();
    if (isnan(run_op(op, iterations))) return -1;
    int64_t elapsed = now_ns() - start;
    if (elapsed >= g_sample_ns / 4 || iterations >= (INT64_C(1) << 32)) {
      double scaled =
          (double)iterations * (double)g_sample_ns / (double)(elapsed > 0 ? elapsed : 1);
      op->iterations = scaled < 1 ? 1 : (int64_t)scaled;
      return 0;
    }
    iterations *= 2;
  }
}

static int compare_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

/* Min and median of n samples (NAN when any is NAN). */
static void min_median(const double* samples, int n, double* min, double* median) {
  double sorted[MAX_ROUNDS];
  for (int i = 0; i < n; i++) {
    if (isnan(samples[i])) {
      *min = *median = NAN;
      return;
    }
    sorted[i] = samples[i];
  }
  qsort(sorted, (size_t)n, sizeof sorted[0], compare_double);
  *min = sorted[0];
  *median = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
}

/* ---- the benchmark ---------------------------------------------------------- */

struct pair_ops {
  struct op array, stream_one, stream_many, large;
  /* phase 1 (no 1 GiB buffer exists yet) */
  double t_array[MAX_ROUNDS], t_one[MAX_ROUNDS], t_many[MAX_ROUNDS];
  /* phase 2 (every producer holds its 1 GiB buffer): 1 KiB and 1 GiB */
  double t_small_held[MAX_ROUNDS], t_large[MAX_ROUNDS];
};

struct summary {
  double min, median;
};

static struct summary summarize(const double* samples, int n) {
  struct summary s;
  min_median(samples, n, &s.min, &s.median);
  return s;
}

static const char* verdict(double ratio, double target) {
  return isnan(ratio) ? "  -" : ratio <= target ? "PASS" : "MISS";
}

static int run_benchmark(struct bench_ops** ops, int n, int rounds, int64_t large,
                         const char* tsv_path) {
  /* Calibration (and warm-up) of everything. */
  struct op noop[IT_MAX_RUNTIMES];
  for (int i = 0; i < n; i++) {
    noop[i] = (struct op){.kind = OP_NOOP, .p = ops[i]};
    if (calibrate(&noop[i]) != 0) return 1;
  }
  struct op floor_array = {
      .kind = OP_ARRAY, .p = &g_static_ops, .q = &g_static_ops, .length = SMALL_LENGTH};
  struct op floor_one = {.kind = OP_STREAM,
                         .p = &g_static_ops,
                         .q = &g_static_ops,
                         .length = SMALL_LENGTH,
                         .batches = 1};
  struct op floor_many = floor_one;
  floor_many.batches = STREAM_BATCHES;
  if (calibrate(&floor_array) || calibrate(&floor_one) || calibrate(&floor_many))
    return 1;
  static struct pair_ops pairs[IT_MAX_RUNTIMES * IT_MAX_RUNTIMES];
  int n_pairs = n * n;
  for (int k = 0; k < n_pairs; k++) {
    const struct bench_ops* p = ops[k / n];
    const struct bench_ops* q = ops[k % n];
    struct pair_ops* pr = &pairs[k];
    pr->array = (struct op){.kind = OP_ARRAY, .p = p, .q = q, .length = SMALL_LENGTH};
    pr->stream_one = (struct op){
        .kind = OP_STREAM, .p = p, .q = q, .length = SMALL_LENGTH, .batches = 1};
    pr->stream_many = pr->stream_one;
    pr->stream_many.batches = STREAM_BATCHES;
    pr->large = (struct op){.kind = OP_ARRAY, .p = p, .q = q, .length = large};
    if (calibrate(&pr->array) || calibrate(&pr->stream_one) ||
        calibrate(&pr->stream_many)) {
      printf("FAIL %s->%s: the operation fails\n", p->name, q->name);
      return 1;
    }
  }
  printf("calibrated: %lld ms per sample, %d rounds\n",
         (long long)(g_sample_ns / 1000000), rounds);

  static double t_noop[IT_MAX_RUNTIMES][MAX_ROUNDS];
  static double t_floor_array[MAX_ROUNDS], t_floor_one[MAX_ROUNDS],
      t_floor_many[MAX_ROUNDS];
  for (int r = 0; r < rounds; r++) {
    for (int i = 0; i < n; i++) t_noop[i][r] = run_op(&noop[i], noop[i].iterations);
    t_floor_array[r] = run_op(&floor_array, floor_array.iterations);
    t_floor_one[r] = run_op(&floor_one, floor_one.iterations);
    t_floor_many[r] = run_op(&floor_many, floor_many.iterations);
    /* Rotated by a stride coprime with 25 (and 16, 9, 4): each round
     * visits the pairs in a different order. */
    for (int j = 0; j < n_pairs; j++) {
      struct pair_ops* pr = &pairs[(j * 7 + r * 3) % n_pairs];
      pr->t_array[r] = run_op(&pr->array, pr->array.iterations);
      pr->t_one[r] = run_op(&pr->stream_one, pr->stream_one.iterations);
      pr->t_many[r] = run_op(&pr->stream_many, pr->stream_many.iterations);
    }
    printf("round %d of %d done\n", r + 1, rounds);
  }

  /* Phase 2: the 1 GiB buffers, made once per producer outside the timing;
   * then 1 GiB and 1 KiB arrays, interleaved, with every buffer held (a
   * runtime's garbage collector paces itself by its heap, which now holds
   * 1 GiB: the size ratio compares operations under the same conditions). */
  for (int k = 0; k < n_pairs; k++) {
    for (int r = 0; r < rounds; r++) pairs[k].t_small_held[r] = pairs[k].t_large[r] = NAN;
  }
  /* The 1 GiB buffers: made once per producer, outside the timing. */
  if (large > 0) {
    printf("allocating each producer's %lld-element buffer once (not timed):\n",
           (long long)large);
    for (int i = 0; i < n; i++) {
      struct ArrowSchema schema;
      struct ArrowDeviceArray array;
      memset(&schema, 0, sizeof schema);
      memset(&array, 0, sizeof array);
      int64_t start = now_ns();
      int rc = ops[i]->export_array(large, &schema, &array);
      if (rc != 0) {
        printf("  SKIPPED 1 GiB as producer for %s: %s: %s\n", ops[i]->name,
               ferry_errno_name(rc), ops_error(ops[i]));
        continue;
      }
      ferry_schema_release(&schema);
      ferry_device_array_release(&array);
      ops[i]->large_ok = 1;
      printf("  %-5s %.2f s\n", ops[i]->name, (double)(now_ns() - start) / 1e9);
    }
  }

  for (int k = 0; k < n_pairs && large > 0; k++) {
    struct pair_ops* pr = &pairs[k];
    if (pr->array.p->large_ok && calibrate(&pr->large) != 0) {
      printf("FAIL %s->%s: the 1 GiB operation fails\n", pr->array.p->name,
             pr->array.q->name);
      return 1;
    }
  }
  for (int r = 0; r < rounds && large > 0; r++) {
    for (int j = 0; j < n_pairs; j++) {
      struct pair_ops* pr = &pairs[(j * 7 + r * 3) % n_pairs];
      if (!pr->array.p->large_ok) continue;
      pr->t_small_held[r] = run_op(&pr->array, pr->array.iterations);
      pr->t_large[r] = run_op(&pr->large, pr->large.iterations);
    }
    printf("1 GiB round %d of %d done\n", r + 1, rounds);
  }

  /* Per round: stream per batch and the floors; then min / median. */
  double floor_stream_r[MAX_ROUNDS];
  for (int r = 0; r < rounds; r++) {
    floor_stream_r[r] = (t_floor_many[r] - t_floor_one[r]) / (STREAM_BATCHES - 1);
  }
  struct summary s_noop[IT_MAX_RUNTIMES];
  for (int i = 0; i < n; i++) {
    s_noop[i] = summarize(t_noop[i], rounds);
    printf("RESULT noop %s %.1f\n", ops[i]->name, s_noop[i].median);
  }
  struct summary s_floor_array = summarize(t_floor_array, rounds);
  struct summary s_floor_stream = summarize(floor_stream_r, rounds);
  printf("RESULT static c->c array %.1f\nRESULT static c->c stream_batch %.1f\n",
         s_floor_array.median, s_floor_stream.median);

  struct row {
    char pair[32];
    struct summary array, floor, stream, stream_floor, small_held, large;
    double x_array, x_stream, x_size;
  } rows[IT_MAX_RUNTIMES * IT_MAX_RUNTIMES];
  for (int k = 0; k < n_pairs; k++) {
    struct pair_ops* pr = &pairs[k];
    int pi = k / n, qi = k % n;
    struct row* w = &rows[k];
    snprintf(w->pair, sizeof w->pair, "%s->%s", ops[pi]->name, ops[qi]->name);
    double stream_r[MAX_ROUNDS], floor_r[MAX_ROUNDS], stream_floor_r[MAX_ROUNDS];
    for (int r = 0; r < rounds; r++) {
      stream_r[r] = (pr->t_many[r] - pr->t_one[r]) / (STREAM_BATCHES - 1);
      floor_r[r] = t_noop[pi][r] + t_noop[qi][r] + t_floor_array[r];
      stream_floor_r[r] = t_noop[pi][r] + t_noop[qi][r] + floor_stream_r[r];
    }
    w->array = summarize(pr->t_array, rounds);
    w->floor = summarize(floor_r, rounds);
    w->stream = summarize(stream_r, rounds);
    w->stream_floor = summarize(stream_floor_r, rounds);
    w->small_held = summarize(pr->t_small_held, rounds);
    w->large = summarize(pr->t_large, rounds);
    w->x_array = w->array.median / w->floor.median;
    w->x_stream = w->stream.median / w->stream_floor.median;
    w->x_size = w->large.median / w->small_held.median;
    printf("RESULT pair %s array %.1f\n", w->pair, w->array.median);
    printf("RESULT pair %s stream_batch %.1f\n", w->pair, w->stream.median);
    printf("RESULT pair %s floor %.1f\n", w->pair, w->floor.median);
    printf("RESULT pair %s stream_floor %.1f\n", w->pair, w->stream_floor.median);
    printf("RESULT pair %s array_1GiB %.1f\n", w->pair, w->large.median);
    printf("RESULT pair %s array_1KiB_1GiB_held %.1f\n", w->pair, w->small_held.median);
  }

  printf(
      "\nns per operation, min / median of %d rounds; x = median / median "
      "(targets: x floor <= 1.5, 1 GiB / 1 KiB <= 1.1)\n",
      rounds);
  printf("%-11s %15s %15s %11s %15s %15s %11s %9s %9s %11s\n", "pair", "array 1 KiB",
         "floor", "x floor", "stream/batch", "floor", "x floor", "1 KiB *", "1 GiB *",
         "1G / 1K");
  int misses = 0, ratios = 0;
  for (int k = 0; k < n_pairs; k++) {
    struct row* w = &rows[k];
    printf(
        "%-11s %7.1f %7.1f %7.1f %7.1f %5.2f %s %7.1f %7.1f %7.1f %7.1f %5.2f %s %9.1f "
        "%9.1f %5.2f %s\n",
        w->pair, w->array.min, w->array.median, w->floor.min, w->floor.median, w->x_array,
        verdict(w->x_array, 1.5), w->stream.min, w->stream.median, w->stream_floor.min,
        w->stream_floor.median, w->x_stream, verdict(w->x_stream, 1.5),
        w->small_held.median, w->large.median, w->x_size, verdict(w->x_size, 1.1));
    misses +=
        (w->x_array > 1.5) + (w->x_stream > 1.5) + (!isnan(w->x_size) && w->x_size > 1.1);
    ratios += 2 + !isnan(w->x_size);
  }
  printf("noop (one call into the runtime and back), median ns:");
  for (int i = 0; i < n; i++) printf(" %s %.1f", ops[i]->name, s_noop[i].median);
  printf("\nstatic C->C floor, median ns: array %.1f, stream batch %.1f\n",
         s_floor_array.median, s_floor_stream.median);
  printf(
      "* phase 2, medians: 1 KiB and 1 GiB arrays interleaved while every producer holds "
      "its 1 GiB buffer\n");
  printf("%d of %d ratios miss their target\n", misses, ratios);

  if (tsv_path != NULL) {
    FILE* tsv = fopen(tsv_path, "w");
    if (tsv == NULL) {
      printf("cannot write %s\n", tsv_path);
      return 1;
    }
    fprintf(tsv,
            "# pair\tarray_min\tarray_median\tfloor_median\tstream_batch_min\t"
            "stream_batch_median\tstream_floor_median\tarray_1GiB_median\t"
            "x_floor_array\tx_floor_stream\tx_size\tarray_1KiB_held_median\n");
    for (int k = 0; k < n_pairs; k++) {
      struct row* w = &rows[k];
      fprintf(tsv,
              "%s\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.3f\t%.3f\t%.3f\t%.1f\n",
              w->pair, w->array.min, w->array.median, w->floor.median, w->stream.min,
              w->stream.median, w->stream_floor.median, w->large.median, w->x_array,
              w->x_stream, w->x_size, w->small_held.median);
    }
    fclose(tsv);
  }
  return 0;
}

/* ---- --check: every entry point once -------------------------------------- */

static int g_passed, g_failed;

static void verdict_line(int ok, const char* what, const char* why) {
  if (ok) {
    g_passed++;
  } else {
    g_failed++;
    printf("FAIL %s: %s\n", what, why);
  }
}

/* The allocation ledger over every runtime of the run. */
static void take_check_baseline(struct bench_ops** ops, int n, struct it_allocations* b) {
  const struct it_plugin* plugins[IT_MAX_RUNTIMES];
  for (int i = 0; i < n; i++) plugins[i] = ops[i]->rt;
  it_allocations_take(b, plugins, n);
}

/* 1 when the release watch of `group` is clean and every counter is back;
 * else 0 with `why`. */
static int check_after(struct bench_ops** ops, int n, int group,
                       const struct it_allocations* before, char* why, size_t size) {
  char found[768];
  if (it_watch_verify_text(group, found, sizeof found) != 0) {
    snprintf(why, size, "release: %s", found);
    return 0;
  }
  struct it_allocations after;
  take_check_baseline(ops, n, &after);
  struct it_allocation_change change;
  if (it_allocations_compare(before, &after, &change, 1) != 0) {
    snprintf(why, size, "%s is %lld, was %lld", change.name, (long long)change.after,
             (long long)change.before);
    return 0;
  }
  return 1;
}

/* One array handoff P -> Q of `length` elements; with `tamper` the host
 * flips a byte of element 0 in P's buffer and Q must refuse the array. */
static void check_array(struct bench_ops** ops, int n, const struct bench_ops* p,
                        const struct bench_ops* q, int64_t length, int tamper) {
  char what[128], why[1024];
  snprintf(what, sizeof what, "%s->%s array length %lld%s", p->name, q->name,
           (long long)length, tamper ? " (tampered)" : "");
  int group = it_watch_new_group();
  struct it_allocations before;
  take_check_baseline(ops, n, &before);
  struct ArrowSchema exported_schema, schema;
  struct ArrowDeviceArray exported, handed;
  memset(&exported_schema, 0, sizeof exported_schema);
  memset(&exported, 0, sizeof exported);
  memset(&schema, 0, sizeof schema);
  memset(&handed, 0, sizeof handed);
  int rc = p->export_array(length, &exported_schema, &exported);
  if (rc != 0) {
    snprintf(why, sizeof why, "export failed with %s: %s", ferry_errno_name(rc),
             ops_error(p));
    verdict_line(0, what, why);
    return;
  }
  /* The host moves the structs bitwise (nothing in between copies them) and
   * interposes on every release. */
  if (ferry_schema_move(&exported_schema, &schema) != 0 ||
      ferry_device_array_move(&exported, &handed) != 0 ||
      it_watch_schema(&schema, "schema") != 0 ||
      it_watch_array(&handed.array, "array") != 0) {
    ferry_schema_release(&exported_schema);
    ferry_device_array_release(&exported);
    ferry_schema_release(&schema);
    ferry_device_array_release(&handed);
    verdict_line(0, what, "the host could not take the export (released? release watch out of memory?)");
    return;
  }
  int tampered = tamper && it_tamper_int32(&handed) == 0;
  unsigned char* first = tampered ? (unsigned char*)handed.array.buffers[1] : NULL;
  rc = q->consume_array(&schema, &handed);
  if (tampered) *first ^= 0x5A; /* restore P's cached buffer */
  char said[512];
  snprintf(said, sizeof said, "%s", ops_error(q));
  if (schema.release != NULL || handed.array.release != NULL) {
    snprintf(why, sizeof why, "the consumer returned with the host's structs still live");
    ferry_schema_release(&schema);
    ferry_device_array_release(&handed);
    verdict_line(0, what, why);
    return;
  }
  if (tamper && !tampered) {
    verdict_line(0, what, "the array has no int32 element to tamper with");
  } else if (tamper && rc == 0) {
    verdict_line(0, what,
                 "the consumer accepted a first value the host had changed: it did "
                 "not read the producer's buffer");
  } else if (tamper && (said[0] == '\0' || strstr(said, "element 0") == NULL)) {
    snprintf(why, sizeof why,
             "the consumer refused the tampered array (%s) without naming "
             "element 0: \"%s\"",
             ferry_errno_name(rc), said);
    verdict_line(0, what, why);
  } else if (!tamper && rc != 0) {
    snprintf(why, sizeof why, "consume failed with %s: %s", ferry_errno_name(rc), said);
    verdict_line(0, what, why);
  } else if (it_watch_count(group) < 2) {
    verdict_line(0, what, "the release watch saw nothing");
  } else {
    int ok = check_after(ops, n, group, &before, why, sizeof why);
    verdict_line(ok, what, why);
  }
}

/* One stream handoff P -> Q of 3 batches of 16 elements. */
static void check_stream(struct bench_ops** ops, int n, const struct bench_ops* p,
                         const struct bench_ops* q) {
  char what[128], why[1024];
  snprintf(what, sizeof what, "%s->%s stream", p->name, q->name);
  int group = it_watch_new_group();
  struct it_allocations before;
  take_check_baseline(ops, n, &before);
  struct ArrowDeviceArrayStream exported, handed;
  memset(&exported, 0, sizeof exported);
  memset(&handed, 0, sizeof handed);
  int rc = p->export_stream(16, 3, &exported);
  if (rc != 0) {
    snprintf(why, sizeof why, "export failed with %s: %s", ferry_errno_name(rc),
             ops_error(p));
    verdict_line(0, what, why);
    return;
  }
  if (exported.device_type != ARROW_DEVICE_CPU ||
      ferry_array_stream_move(&exported, &handed) != 0 ||
      it_watch_stream(&handed, "stream") != 0) {
    ferry_array_stream_release(&exported);
    ferry_array_stream_release(&handed);
    verdict_line(0, what, "the host could not take the stream (not CPU? release watch out of memory?)");
    return;
  }
  it_stream_watch_begin(&handed, 0);
  rc = q->consume_stream(&handed);
  const struct it_stream_observed* seen = it_stream_watch_observed();
  if (handed.release != NULL) {
    ferry_array_stream_release(&handed);
    verdict_line(0, what, "the consumer returned with the host's stream still live");
  } else if (rc != 0) {
    snprintf(why, sizeof why, "consume failed with %s: %s", ferry_errno_name(rc),
             ops_error(q));
    verdict_line(0, what, why);
  } else if (seen->batches != 3 || seen->end_seen < 1 || seen->track_failures != 0) {
    snprintf(why, sizeof why,
             "%lld batches crossed, end of stream seen %lld times (3 and >= 1 "
             "expected)",
             (long long)seen->batches, (long long)seen->end_seen);
    verdict_line(0, what, why);
  } else {
    int ok = check_after(ops, n, group, &before, why, sizeof why);
    verdict_line(ok, what, why);
  }
}

/* Rejected arguments: a clear EINVAL, a message, nothing exported. */
static void check_rejects(const struct bench_ops* p) {
  char what[128], why[1024];
  const int64_t bad[2] = {-1, FERRY_IT_BENCH_MAX_LENGTH + 1};
  for (int i = 0; i < 2; i++) {
    snprintf(what, sizeof what, "%s export_array(%lld) is refused", p->name,
             (long long)bad[i]);
    struct ArrowSchema schema;
    struct ArrowDeviceArray array;
    memset(&schema, 0, sizeof schema);
    memset(&array, 0, sizeof array);
    int rc = p->export_array(bad[i], &schema, &array);
    const char* said = ops_error(p);
    int left_live = schema.release != NULL || array.array.release != NULL;
    ferry_schema_release(&schema);
    ferry_device_array_release(&array);
    snprintf(why, sizeof why, "returned %s with \"%s\"%s", ferry_errno_name(rc), said,
             left_live ? " and left a struct live" : "");
    verdict_line(rc == EINVAL && strstr(said, "length") != NULL && !left_live, what, why);
  }
  snprintf(what, sizeof what, "%s export_stream(16, -1) is refused", p->name);
  struct ArrowDeviceArrayStream stream;
  memset(&stream, 0, sizeof stream);
  int rc = p->export_stream(16, -1, &stream);
  int left_live = stream.release != NULL;
  ferry_array_stream_release(&stream);
  snprintf(why, sizeof why, "returned %s with \"%s\"", ferry_errno_name(rc),
           ops_error(p));
  verdict_line(rc == EINVAL && !left_live, what, why);
}

static int run_check(struct bench_ops** ops, int n) {
  for (int i = 0; i < n; i++) {
    char what[64], why[256];
    snprintf(what, sizeof what, "%s noop", ops[i]->name);
    int64_t got = ops[i]->noop(41);
    snprintf(why, sizeof why, "noop(41) returned %lld: %s", (long long)got,
             ops_error(ops[i]));
    verdict_line(got == 42, what, why);
    check_rejects(ops[i]);
  }
  for (int pi = 0; pi < n; pi++) {
    for (int qi = 0; qi < n; qi++) {
      check_array(ops, n, ops[pi], ops[qi], 0, 0);
      check_array(ops, n, ops[pi], ops[qi], 16, 0);
      check_array(ops, n, ops[pi], ops[qi], 16, 1);
      check_stream(ops, n, ops[pi], ops[qi]);
    }
  }
  printf("bench entry points: %d runtimes, %d ordered pairs\n", n, n * n);
  printf("%d passed, %d failed\n", g_passed, g_failed);
  return g_failed == 0 && g_passed > 0 ? 0 : 1;
}

/* ---- main ------------------------------------------------------------------- */

int main(int argc, char** argv) {
  char plugin_dir[2048];
  const char* build = getenv("FERRY_BUILD_DIR");
  snprintf(plugin_dir, sizeof plugin_dir, "%s/plugins", build ? build : "build");
  const char* tsv_path = NULL;
  const char* wanted = "";
  const char* require = "";
  int64_t large = FERRY_IT_BENCH_MAX_LENGTH; /* 1 GiB of int32 */
  int rounds = 7, check = 0;
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
    } else if (strcmp(argv[i], "--require") == 0 && v) {
      require = v;
      i++;
    } else if (strcmp(argv[i], "--rounds") == 0 && v) {
      rounds = atoi(v);
      i++;
    } else if (strcmp(argv[i], "--sample-ms") == 0 && v) {
      g_sample_ns = atoll(v) * 1000000;
      i++;
    } else if (strcmp(argv[i], "--large-length") == 0 && v) {
      large = atoll(v);
      i++;
    } else if (strcmp(argv[i], "--no-large") == 0) {
      large = 0;
    } else if (strcmp(argv[i], "--check") == 0) {
      check = 1;
    } else {
      fprintf(stderr,
              "usage: ferry_it_bench [--plugin-dir DIR] [--plugins LIST] [--rounds N] "
              "[--sample-ms N] [--tsv FILE] [--large-length N] [--no-large]\n"
              "       ferry_it_bench --check [--plugin-dir DIR] [--plugins LIST] "
              "[--require LIST]\n");
      return 2;
    }
  }
  if (rounds < 5 || rounds > MAX_ROUNDS || g_sample_ns <= 0 || large < 0 ||
      large > FERRY_IT_BENCH_MAX_LENGTH) {
    fprintf(stderr,
            "ferry_it_bench: --rounds must be 5..%d, --sample-ms positive, "
            "--large-length 0..%lld\n",
            MAX_ROUNDS, (long long)FERRY_IT_BENCH_MAX_LENGTH);
    return 2;
  }
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (!check) print_loadavg("before");

  /* The load order of plugin.h: the JVM is created before Go loads, and every
   * handler it installed gets SA_ONSTACK first. */
  static struct it_runtime_set set;
  struct it_load_options load;
  memset(&load, 0, sizeof load);
  load.plugin_dir = plugin_dir;
  load.wanted = wanted;
  it_runtime_set_load(&set, &load);
  static struct bench_ops bound[IT_MAX_RUNTIMES];
  struct bench_ops* ops[IT_MAX_RUNTIMES];
  int n = 0, missing_required = 0;
  for (int i = 0; i < IT_MAX_RUNTIMES; i++) {
    const struct it_plugin* p = &set.plugins[i];
    if (set.state[i] == IT_NOT_WANTED) continue;
    char why[4400];
    int ok = set.state[i] == IT_LOADED;
    snprintf(why, sizeof why, "%s", p->problem);
    if (ok) ok = bind_ops(p, &bound[i], why, sizeof why) == 0;
    if (!ok) {
      int required = it_list_has(require, p->name);
      printf("%s runtime %s: %s\n", required ? "FAIL required" : "SKIPPED", p->name, why);
      missing_required += required;
      continue;
    }
    ops[n++] = &bound[i];
  }
  char setup[256];
  if (check && it_allocations_init(setup, sizeof setup) != 0) {
    printf("FAIL setup: %s\n0 passed, 1 failed\n", setup);
    return 1;
  }
  printf("runtimes:");
  for (int i = 0; i < n; i++) printf(" %s", ops[i]->name);
  printf("\n");
  if (n == 0) {
    printf("no runtime loaded\n0 passed, %d failed\n", missing_required + 1);
    return 1;
  }
  int rc;
  if (check) {
    g_failed += missing_required;
    rc = run_check(ops, n);
  } else {
    rc = run_benchmark(ops, n, rounds, large, tsv_path);
    print_loadavg("after");
  }
  return rc;
}
