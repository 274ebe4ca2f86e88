/* core_bench: the cost of a C -> C handoff through libferry, against the
 * physical floor (moving the 128-byte struct), in one process.
 *
 *   core_bench [--iterations N] [--reps R] [--case NAME]
 *
 * Cases (ns per operation, min and median over R repetitions, interleaved
 * so drift on a shared machine hits every case alike):
 *   raw_move        fill a 128-byte ArrowDeviceArray, copy it, mark the
 *                   source released, read two fields: the floor
 *   handoff_1KiB    ferry_array_init (2 buffers, a release hook) +
 *                   ferry_device_array_init (no event) + ferry_device_array_move
 *                   + read + ferry_device_array_release, 1 KiB of int32 data
 *   handoff_1GiB    the same over 1 GiB of data (exported zero-copy; only the
 *                   first value is ever read, so only one page is touched)
 *   stream_get_next a ferry_stream_init producer exporting the 1 KiB array;
 *                   the consumer calls ferry_stream_get_next, reads, releases
 * then the ratios handoff/raw_move (target <= 1.5) and 1GiB/1KiB (target
 * <= 1.1), computed on medians, with PASS or MISS. Lines "RESULT c <case>
 * <ns/op>" (medians) are for scripts. With --case only that case runs (once
 * per repetition), which is what scripts/bench_core_ir.sh uses under
 * callgrind to count instructions per operation. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ferry/ferry.h"

#define MAX_REPS 64

/* Keeps the compiler from proving a value or a store dead. */
#define KEEP(value) __asm__ volatile("" : : "r"(value) : "memory")

static int64_t release_hook_calls;
static void release_hook(void* user_data) { release_hook_calls++; }

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* ---- cases: each runs `n` operations and returns a checksum ---------------- */

static void static_release(struct ArrowArray* array) { array->release = NULL; }

static int32_t small_data[256]; /* 1 KiB */
static int32_t* huge_data;      /* 1 GiB, never written except value 0 */
static const int64_t kHugeLength = (INT64_C(1) << 30) / 4;

static int64_t run_raw_move(int64_t n) {
  const void* buffers[2] = {NULL, small_data};
  struct ArrowDeviceArray src, dst;
  memset(&src, 0, sizeof(src));
  memset(&dst, 0, sizeof(dst));
  int64_t acc = 0;
  for (int64_t i = 0; i < n; i++) {
    /* The producer fills... */
    src.array.length = 256;
    src.array.n_buffers = 2;
    src.array.buffers = buffers;
    src.array.release = static_release;
    src.device_type = ARROW_DEVICE_CPU;
    src.device_id = -1;
    KEEP(&src);
    /* ...the consumer moves, reads and releases. */
    memcpy(&dst, &src, sizeof(dst));
    src.array.release = NULL;
    KEEP(&dst);
    acc += dst.array.length + ((const int32_t*)dst.array.buffers[1])[0];
    dst.array.release(&dst.array);
    KEEP(&dst);
  }
  return acc;
}

static int64_t run_handoff(int64_t n, const int32_t* data, int64_t length) {
  const void* buffers[2] = {NULL, data};
  struct ArrowArray array;
  struct ArrowDeviceArray exported, consumer;
  memset(&array, 0, sizeof(array));
  memset(&exported, 0, sizeof(exported));
  memset(&consumer, 0, sizeof(consumer));
  int64_t acc = 0;
  for (int64_t i = 0; i < n; i++) {
    if (ferry_array_init(&array, length, 0, 0, 2, buffers, 0, release_hook, NULL, NULL) !=
            0 ||
        ferry_device_array_init(&exported, &array, ARROW_DEVICE_CPU, -1, NULL, NULL, NULL,
                                NULL) != 0 ||
        ferry_device_array_move(&exported, &consumer) != 0) {
      fprintf(stderr, "core_bench: export failed\n");
      exit(1);
    }
    acc += consumer.array.length + ((const int32_t*)consumer.array.buffers[1])[0];
    ferry_device_array_release(&consumer);
  }
  KEEP(&consumer);
  return acc;
}

static int producer_get_next(void* user_data, struct ArrowDeviceArray* out,
                             struct FerryError* error) {
  static const void* buffers[2] = {NULL, small_data};
  struct ArrowArray array;
  array.release = NULL;
  int rc = ferry_array_init(&array, 256, 0, 0, 2, buffers, 0, release_hook, NULL, error);
  if (rc != 0) return rc;
  return ferry_device_array_init(out, &array, ARROW_DEVICE_CPU, -1, NULL, NULL, NULL,
                                 error);
}

static struct ArrowDeviceArrayStream bench_stream;

static int64_t run_stream(int64_t n) {
  struct ArrowDeviceArray batch;
  memset(&batch, 0, sizeof(batch));
  int64_t acc = 0;
  for (int64_t i = 0; i < n; i++) {
    if (ferry_stream_get_next(&bench_stream, &batch, NULL) != 0 ||
        batch.array.release == NULL) {
      fprintf(stderr, "core_bench: get_next failed\n");
      exit(1);
    }
    acc += batch.array.length + ((const int32_t*)batch.array.buffers[1])[0];
    ferry_device_array_release(&batch);
  }
  KEEP(&batch);
  return acc;
}

/* ---- driver ------------------------------------------------------------------ */

enum { CASE_RAW, CASE_1K, CASE_1G, CASE_STREAM, N_CASES };
static const char* const kCaseNames[N_CASES] = {"raw_move", "handoff_1KiB",
                                                "handoff_1GiB", "stream_get_next"};

static int64_t run_case(int c, int64_t n) {
  switch (c) {
    case CASE_RAW:
      return run_raw_move(n);
    case CASE_1K:
      return run_handoff(n, small_data, 256);
    case CASE_1G:
      return run_handoff(n, huge_data, kHugeLength);
    default:
      return run_stream(n);
  }
}

static int compare_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

static double median_of(const double* values, int n) {
  double sorted[MAX_REPS];
  memcpy(sorted, values, (size_t)n * sizeof(double));
  qsort(sorted, (size_t)n, sizeof(double), compare_double);
  return n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
}

static double min_of(const double* values, int n) {
  double m = values[0];
  for (int i = 1; i < n; i++) m = values[i] < m ? values[i] : m;
  return m;
}

static void print_ratio(const char* name, double ratio, double min_ratio, double target) {
  printf("%-28s %6.2f (min-based %.2f)  target <= %.1f  %s\n", name, ratio, min_ratio,
         target, ratio <= target ? "PASS" : "MISS");
}

int main(int argc, char** argv) {
  int64_t iterations = 2000000;
  int reps = 7;
  int only = -1;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--iterations") == 0 && i + 1 < argc) {
      iterations = strtoll(argv[++i], NULL, 10);
    } else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
      reps = atoi(argv[++i]);
    } else if (strcmp(argv[i], "--case") == 0 && i + 1 < argc) {
      const char* name = argv[++i];
      for (int c = 0; c < N_CASES; c++) {
        if (strcmp(name, kCaseNames[c]) == 0) only = c;
      }
      if (only < 0) {
        fprintf(stderr, "core_bench: unknown case \"%s\"\n", name);
        return 2;
      }
    } else {
      fprintf(stderr, "usage: core_bench [--iterations N] [--reps R] [--case NAME]\n");
      return 2;
    }
  }
  if (iterations < 1 || reps < 1 || reps > MAX_REPS) {
    fprintf(stderr, "core_bench: need iterations >= 1 and 1 <= reps <= %d\n", MAX_REPS);
    return 2;
  }

  /* malloc maps the 1 GiB lazily; only the first page is ever touched. */
  huge_data = (int32_t*)malloc((size_t)kHugeLength * sizeof(int32_t));
  if (huge_data == NULL) {
    fprintf(stderr, "core_bench: cannot allocate 1 GiB for handoff_1GiB\n");
    return 1;
  }
  huge_data[0] = 7;
  for (int i = 0; i < 256; i++) small_data[i] = i;
  struct FerryError error;
  if (ferry_stream_init(&bench_stream, ARROW_DEVICE_CPU, NULL, producer_get_next, NULL,
                        NULL, &error) != 0) {
    fprintf(stderr, "core_bench: ferry_stream_init: %s\n", error.message);
    return 1;
  }
  int64_t live_before = ferry_live_exports();

  double ns[N_CASES][MAX_REPS];
  int64_t checksum = 0;
  /* Warm-up: page in code, fill the free lists, settle the frequency. */
  for (int c = 0; c < N_CASES; c++) {
    if (only < 0 || only == c) checksum += run_case(c, iterations / 10 + 1);
  }
  for (int r = 0; r < reps; r++) {
    for (int c = 0; c < N_CASES; c++) {
      if (only >= 0 && only != c) continue;
      double start = now_ns();
      checksum += run_case(c, iterations);
      ns[c][r] = (now_ns() - start) / (double)iterations;
    }
  }
  ferry_stream_release(&bench_stream);
  if (ferry_live_exports() != live_before - 1) {
    fprintf(stderr, "core_bench: live exports did not return to baseline\n");
    return 1;
  }

  printf("core_bench: %lld iterations x %d repetitions (checksum %lld, hooks %lld)\n",
         (long long)iterations, reps, (long long)checksum, (long long)release_hook_calls);
  printf("%-18s %10s %10s\n", "case", "min ns", "median ns");
  double med[N_CASES], mins[N_CASES];
  for (int c = 0; c < N_CASES; c++) {
    if (only >= 0 && only != c) continue;
    med[c] = median_of(ns[c], reps);
    mins[c] = min_of(ns[c], reps);
    printf("%-18s %10.2f %10.2f\n", kCaseNames[c], mins[c], med[c]);
  }
  for (int c = 0; c < N_CASES; c++) {
    if (only >= 0 && only != c) continue;
    printf("RESULT c %s %.2f\n", kCaseNames[c], med[c]);
  }
  if (only < 0) {
    print_ratio("handoff(1KiB) / raw_move", med[CASE_1K] / med[CASE_RAW],
                mins[CASE_1K] / mins[CASE_RAW], 1.5);
    print_ratio("handoff(1GiB) / handoff(1KiB)", med[CASE_1G] / med[CASE_1K],
                mins[CASE_1G] / mins[CASE_1K], 1.1);
  }
  free(huge_data);
  return 0;
}
