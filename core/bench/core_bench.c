/* core_bench: the cost of a C -> C handoff through libferry, against the
 * physical floors (moving the 128-byte struct; a hand-written C stream), in
 * one process. A benchmark, not a test: it gates nothing by itself.
 *
 *   core_bench [--iterations N] [--reps R] [--case NAME]
 *
 * Every case does one "operation" per iteration and reads the batch's
 * `length` and first value (`buffers[1][0]`) into a checksum, so nothing is
 * dead code. Cases, in the order they run:
 *
 *   raw_move_stable  Floor, stable source. A 128-byte ArrowDeviceArray is
 *                    filled once before the loop; per operation the consumer
 *                    copies it (struct assignment, which gcc turns into
 *                    16-byte vector moves), reads, and calls the copy's
 *                    static release (it only NULLs the callback). The source
 *                    is never written in the loop. This is "moving 128
 *                    bytes" with nothing in flight: the least it can cost.
 *   raw_move_fill    Floor, fill then move: the shape of a real handoff.
 *                    Per operation the producer fills every field of the
 *                    source (8-byte stores, as a producer writes fields),
 *                    then the consumer moves it (struct assignment +
 *                    src.release = NULL), reads and releases (static). The
 *                    16-byte loads of the copy find the source still in the
 *                    store buffer as 8-byte stores, which cannot be
 *                    forwarded: a store-forwarding stall of several ns,
 *                    not work (a known x86 effect, not ferry overhead).
 *                    THE HANDOFF TARGET IS MEASURED AGAINST THIS CASE: in a
 *                    handoff the producer has always just filled the struct.
 *   raw_move_fill_words  The same, but the consumer copies with 8-byte
 *                    loads (what ferry_device_array_move does): the
 *                    best a consumer's move can do right after the fill.
 *                    Information only.
 *   c2c_static       Floor of a pull handoff in plain C, no libferry: a
 *                    hand-written ArrowDeviceArrayStream whose get_next
 *                    (called through the function pointer, as a consumer
 *                    must) fills the 128-byte struct with a static release;
 *                    the consumer moves the batch into its own struct
 *                    (struct assignment), reads, releases.
 *   handoff_1KiB     The libferry handoff of an int32 array over 1 KiB of
 *                    data. Producer: ferry_array_init (2 buffers, a release
 *                    hook) + ferry_device_array_init (CPU, no event).
 *                    Consumer: ferry_device_array_move, read,
 *                    ferry_device_array_release, which runs ferry's release
 *                    and the producer's hook (counted, checked at the end).
 *   handoff_1GiB     The same over 1 GiB of data (exported zero-copy; only
 *                    the first value is read, so one page is touched).
 *   stream_get_next  The libferry pull round trip: a ferry_array_stream_init
 *                    stream whose get_next exports the 1 KiB array as
 *                    above; the consumer calls ferry_array_stream_get_next,
 *                    ferry_device_array_move, reads, releases (hook runs):
 *                    the c2c_static shape with ferry on both sides.
 *
 * Output: min and median ns per operation over R repetitions (cases
 * interleaved within each repetition, so drift on a shared machine hits
 * every case alike; min is the figure least disturbed by other processes),
 * the load average before and after, "RESULT c <case> <ns/op>" lines
 * (medians), and the ratios:
 *   handoff_1KiB / raw_move_fill   target <= 1.5
 *   handoff_1GiB / handoff_1KiB    target <= 1.1
 * each min-based and median-based: PASS when both meet the target, "PASS
 * (min-based only ...)" when only the min-based one does (a loaded
 * machine), MISS otherwise; plus, for information only, the handoff
 * against the other floors and stream_get_next / c2c_static.
 *
 * Reading the numbers: ferry's handoff copies the struct twice (array into
 * device array, then the consumer's move), both times with 8-byte words
 * that forward from the producer's stores, and runs several times the
 * instructions of raw_move_fill (see scripts/bench_core_ir.sh). It can come
 * close to raw_move_fill because that floor's plain copy stalls; against
 * the stall-free raw_move_fill_words and raw_move_stable it is several
 * times slower, which the information ratios show.
 *
 * With --case only that case runs (once per repetition, after a warm-up of
 * N/10 + 1 operations), which is what scripts/bench_core_ir.sh uses under
 * callgrind to count instructions per operation. Run it pinned and alone:
 * `taskset -c 1 core_bench`. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ferry/ferry.h"

#define MAX_REPS 64

/* Keeps the compiler from proving a value or a store dead. */
#define KEEP(value) __asm__ volatile("" : : "r"(value) : "memory")
/* Makes `var` opaque, so each field store stays a separate 8-byte store of
 * a register (no constant folding into wider vector stores). */
#define OPAQUE(var) __asm__("" : "+r"(var))
/* Each case is its own function, for readable profiles and disassembly. */
#define NOINLINE __attribute__((noinline))

static int64_t release_hook_calls;
static void release_hook(void* user_data) { release_hook_calls++; }

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* ---- cases: each runs `n` operations and returns a checksum ---------------- */

/* The release of the floors' static arrays: only NULLs the callback. */
static void static_release(struct ArrowArray* array) { array->release = NULL; }

static int32_t small_data[256]; /* 1 KiB */
static int32_t* huge_data;      /* 1 GiB, never written except value 0 */
static const int64_t kHugeLength = (INT64_C(1) << 30) / 4;
static const void* small_buffers[2] = {NULL, small_data};

/* Fills every field of `out` the way a producer does, one 8-byte store per
 * field (device_type and its padding as one word). */
static inline void fill_static(struct ArrowDeviceArray* out, const void** buffers) {
  int64_t length = 256, zero = 0, zero2 = 0, two = 2, device_id = -1;
  uint64_t device_type = ARROW_DEVICE_CPU;
  void (*release)(struct ArrowArray*) = static_release;
  OPAQUE(length);
  OPAQUE(zero);
  OPAQUE(zero2); /* two registers: no pairing of zeros into 16-byte stores */
  OPAQUE(two);
  OPAQUE(device_id);
  OPAQUE(device_type);
  OPAQUE(release);
  OPAQUE(buffers);
  out->array.length = length;
  out->array.null_count = zero;
  out->array.offset = zero;
  out->array.n_buffers = two;
  out->array.n_children = zero;
  out->array.buffers = buffers;
  out->array.children = (struct ArrowArray**)(uintptr_t)zero;
  out->array.dictionary = (struct ArrowArray*)(uintptr_t)zero;
  out->array.release = release;
  out->array.private_data = (void*)(uintptr_t)zero;
  out->device_id = device_id;
  memcpy(&out->device_type, &device_type, sizeof(device_type)); /* + padding */
  out->sync_event = (void*)(uintptr_t)zero;
  out->reserved[0] = zero;
  out->reserved[1] = zero2;
  out->reserved[2] = zero;
}

static inline int64_t read_batch(const struct ArrowDeviceArray* batch) {
  return batch->array.length + ((const int32_t*)batch->array.buffers[1])[0];
}

/* The consumer's side of every raw case: read the batch it owns, release it.
 * Inlined, so each case's loop stays one straight-line body. */
static inline int64_t consume(struct ArrowDeviceArray* batch) {
  KEEP(batch);
  int64_t value = read_batch(batch);
  batch->array.release(&batch->array);
  KEEP(batch);
  return value;
}

NOINLINE static int64_t run_raw_move_stable(int64_t n) {
  struct ArrowDeviceArray src = {0}, dst = {0};
  fill_static(&src, small_buffers);
  int64_t acc = 0;
  for (int64_t i = 0; i < n; i++) {
    KEEP(&src);
    dst = src;
    acc += consume(&dst);
  }
  return acc;
}

NOINLINE static int64_t run_raw_move_fill(int64_t n) {
  struct ArrowDeviceArray src = {0}, dst = {0};
  int64_t acc = 0;
  for (int64_t i = 0; i < n; i++) {
    fill_static(&src, small_buffers); /* the producer fills... */
    KEEP(&src);
    dst = src; /* ...the consumer moves, reads and releases */
    src.array.release = NULL;
    acc += consume(&dst);
  }
  return acc;
}

NOINLINE static int64_t run_raw_move_fill_words(int64_t n) {
  struct ArrowDeviceArray src = {0}, dst = {0};
  int64_t acc = 0;
  for (int64_t i = 0; i < n; i++) {
    fill_static(&src, small_buffers);
    KEEP(&src);
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC unroll 16
#endif
    for (size_t w = 0; w < sizeof(src) / sizeof(uint64_t); w++) {
      uint64_t word;
      memcpy(&word, (const char*)&src + w * sizeof(word), sizeof(word));
      OPAQUE(word); /* no merging into 16-byte moves */
      memcpy((char*)&dst + w * sizeof(word), &word, sizeof(word));
    }
    src.array.release = NULL;
    acc += consume(&dst);
  }
  return acc;
}

/* The hand-written C stream of c2c_static. */
static int c2c_get_schema(struct ArrowDeviceArrayStream* stream,
                          struct ArrowSchema* out) {
  return ENOSYS;
}
NOINLINE static int c2c_get_next(struct ArrowDeviceArrayStream* stream,
                                 struct ArrowDeviceArray* out) {
  fill_static(out, small_buffers);
  return 0;
}
static const char* c2c_get_last_error(struct ArrowDeviceArrayStream* stream) {
  return NULL;
}
static void c2c_release(struct ArrowDeviceArrayStream* stream) { stream->release = NULL; }
static struct ArrowDeviceArrayStream c2c_stream = {ARROW_DEVICE_CPU, c2c_get_schema,
                                                   c2c_get_next,     c2c_get_last_error,
                                                   c2c_release,      NULL};

NOINLINE static int64_t run_c2c_static(int64_t n) {
  struct ArrowDeviceArrayStream* stream = &c2c_stream;
  struct ArrowDeviceArray batch = {0}, consumer = {0};
  int64_t acc = 0;
  for (int64_t i = 0; i < n; i++) {
    KEEP(stream); /* an indirect call, as for any foreign stream */
    if (stream->get_next(stream, &batch) != 0 || batch.array.release == NULL) {
      fprintf(stderr, "core_bench: c2c get_next failed\n");
      exit(1);
    }
    consumer = batch;
    batch.array.release = NULL;
    acc += consume(&consumer);
  }
  return acc;
}

NOINLINE static int64_t run_handoff(int64_t n, const int32_t* data, int64_t length) {
  const void* buffers[2] = {NULL, data};
  struct ArrowArray array = {0};
  struct ArrowDeviceArray exported = {0}, consumer = {0};
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
    acc += read_batch(&consumer);
    ferry_device_array_release(&consumer);
  }
  KEEP(&consumer);
  return acc;
}

static int producer_get_next(void* user_data, struct ArrowDeviceArray* out,
                             struct FerryError* error) {
  struct ArrowArray array;
  array.release = NULL;
  int rc =
      ferry_array_init(&array, 256, 0, 0, 2, small_buffers, 0, release_hook, NULL, error);
  if (rc != 0) return rc;
  return ferry_device_array_init(out, &array, ARROW_DEVICE_CPU, -1, NULL, NULL, NULL,
                                 error);
}

static struct ArrowDeviceArrayStream bench_stream;

NOINLINE static int64_t run_stream(int64_t n) {
  struct ArrowDeviceArray batch = {0}, consumer = {0};
  int64_t acc = 0;
  for (int64_t i = 0; i < n; i++) {
    if (ferry_array_stream_get_next(&bench_stream, &batch, NULL) != 0 ||
        ferry_device_array_move(&batch, &consumer) != 0) {
      fprintf(stderr, "core_bench: get_next failed\n");
      exit(1);
    }
    acc += read_batch(&consumer);
    ferry_device_array_release(&consumer);
  }
  KEEP(&consumer);
  return acc;
}

/* ---- driver ------------------------------------------------------------------ */

enum {
  CASE_STABLE,
  CASE_FILL,
  CASE_FILL_WORDS,
  CASE_C2C,
  CASE_1K,
  CASE_1G,
  CASE_STREAM,
  N_CASES
};
static const char* const kCaseNames[N_CASES] = {
    "raw_move_stable", "raw_move_fill", "raw_move_fill_words", "c2c_static",
    "handoff_1KiB",    "handoff_1GiB",  "stream_get_next"};

NOINLINE static int64_t run_case(int c, int64_t n) {
  switch (c) {
    case CASE_STABLE: return run_raw_move_stable(n);
    case CASE_FILL: return run_raw_move_fill(n);
    case CASE_FILL_WORDS: return run_raw_move_fill_words(n);
    case CASE_C2C: return run_c2c_static(n);
    case CASE_1K: return run_handoff(n, small_data, 256);
    case CASE_1G: return run_handoff(n, huge_data, kHugeLength);
    default: return run_stream(n);
  }
}

/* Hooks each case's operations run (each ferry export calls one). */
static int64_t hooks_per_op(int c) { return c >= CASE_1K ? 1 : 0; }

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

static void print_loadavg(const char* when) {
  char line[128] = "unknown";
  FILE* f = fopen("/proc/loadavg", "r");
  if (f != NULL) {
    if (fgets(line, sizeof(line), f) == NULL) strcpy(line, "unknown\n");
    fclose(f);
  }
  printf("load average %s: %s", when, line);
  if (strchr(line, '\n') == NULL) printf("\n");
}

static void print_ratio(const char* name, double median_ratio, double min_ratio,
                        double target) {
  printf("%-34s min-based %5.2f  median-based %5.2f  target <= %.1f  %s\n", name,
         min_ratio, median_ratio, target,
         min_ratio <= target && median_ratio <= target ? "PASS"
         : min_ratio <= target ? "PASS (min-based only; medians disturbed by load?)"
                               : "MISS");
}

static void print_info_ratio(const char* name, double median_ratio, double min_ratio) {
  printf("%-34s min-based %5.2f  median-based %5.2f  (information)\n", name, min_ratio,
         median_ratio);
}

int main(int argc, char** argv) {
  /* Short repetitions, many of them: on a loaded machine some repetitions
   * then run undisturbed, and the minimum finds them. */
  int64_t iterations = 200000;
  int reps = 31;
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
  if (ferry_array_stream_init(&bench_stream, ARROW_DEVICE_CPU, NULL, producer_get_next, NULL,
                        NULL, &error) != 0) {
    fprintf(stderr, "core_bench: ferry_array_stream_init: %s\n", error.message);
    return 1;
  }
  int64_t live_before = ferry_live_exports();
  if (only < 0) print_loadavg("before");

  double ns[N_CASES][MAX_REPS];
  int64_t checksum = 0, expected_hooks = 0;
  /* Warm-up: page in code, fill the free lists, settle the frequency. */
  for (int c = 0; c < N_CASES; c++) {
    if (only >= 0 && only != c) continue;
    checksum += run_case(c, iterations / 10 + 1);
    expected_hooks += hooks_per_op(c) * (iterations / 10 + 1);
  }
  for (int r = 0; r < reps; r++) {
    for (int c = 0; c < N_CASES; c++) {
      if (only >= 0 && only != c) continue;
      double start = now_ns();
      checksum += run_case(c, iterations);
      ns[c][r] = (now_ns() - start) / (double)iterations;
      expected_hooks += hooks_per_op(c) * iterations;
    }
  }
  ferry_array_stream_release(&bench_stream);
  if (ferry_live_exports() != live_before - 1) {
    fprintf(stderr, "core_bench: live exports did not return to baseline\n");
    return 1;
  }
  if (release_hook_calls != expected_hooks) {
    fprintf(stderr, "core_bench: %lld release hooks ran, expected %lld\n",
            (long long)release_hook_calls, (long long)expected_hooks);
    return 1;
  }

  printf("core_bench: %lld iterations x %d repetitions (checksum %lld, hooks %lld)\n",
         (long long)iterations, reps, (long long)checksum, (long long)release_hook_calls);
  printf("%-20s %10s %10s\n", "case", "min ns", "median ns");
  double med[N_CASES], mins[N_CASES];
  for (int c = 0; c < N_CASES; c++) {
    if (only >= 0 && only != c) continue;
    med[c] = median_of(ns[c], reps);
    mins[c] = min_of(ns[c], reps);
    printf("%-20s %10.2f %10.2f\n", kCaseNames[c], mins[c], med[c]);
  }
  for (int c = 0; c < N_CASES; c++) {
    if (only >= 0 && only != c) continue;
    printf("RESULT c %s %.2f\n", kCaseNames[c], med[c]);
  }
  if (only < 0) {
    print_loadavg("after");
    printf(
        "Targets (the handoff includes the producer's export, the consumer's move\n"
        "and release with the hook; it is compared with the fill-then-move floor\n"
        "because a handoff's move always follows the producer's fill):\n");
    print_ratio("handoff_1KiB / raw_move_fill", med[CASE_1K] / med[CASE_FILL],
                mins[CASE_1K] / mins[CASE_FILL], 1.5);
    print_ratio("handoff_1GiB / handoff_1KiB", med[CASE_1G] / med[CASE_1K],
                mins[CASE_1G] / mins[CASE_1K], 1.1);
    print_info_ratio("handoff_1KiB / raw_move_stable", med[CASE_1K] / med[CASE_STABLE],
                     mins[CASE_1K] / mins[CASE_STABLE]);
    print_info_ratio("handoff_1KiB / raw_move_fill_words",
                     med[CASE_1K] / med[CASE_FILL_WORDS],
                     mins[CASE_1K] / mins[CASE_FILL_WORDS]);
    print_info_ratio("handoff_1KiB / c2c_static", med[CASE_1K] / med[CASE_C2C],
                     mins[CASE_1K] / mins[CASE_C2C]);
    print_info_ratio("stream_get_next / c2c_static", med[CASE_STREAM] / med[CASE_C2C],
                     mins[CASE_STREAM] / mins[CASE_C2C]);
  }
  free(huge_data);
  return 0;
}
