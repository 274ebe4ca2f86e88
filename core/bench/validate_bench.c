/* validate_bench: the consumer side's validation (issue 14) against its
 * peers, on the same CPU arrays, in one process.
 *
 *   ferry DEFAULT  ferry_validate_device_array(FERRY_VALIDATE_DEFAULT)
 *   ferry FULL     ferry_validate_device_array(FERRY_VALIDATE_FULL)
 *   ferry prepared ferry_validate_prepared (the schema prepared once)
 *   nanoarrow      ArrowArrayViewInitFromSchema + ArrowArrayViewSetArray
 *                  (+ ArrowArrayViewReset), nanoarrow 0.9.0's default level
 *   nanoarrow reused  ArrowArrayViewSetArray on a view initialised once
 *   pyarrow        pa.Array._import_from_c_device + validate(full=True),
 *                  timed by core/bench/validate_bench.py, which loads this
 *                  file built as a shared library (the same process)
 *
 * Built three ways: by CMake as build/bench/validate_bench (ferry only; its
 * `--check` runs in ctest so the benchmark cannot rot), and by
 * scripts/bench_validate.sh with -DFERRY_BENCH_NANOARROW and nanoarrow's C
 * sources (from its PyPI sdist, same flags) as an executable (for callgrind:
 * `--case W --mode M --iterations N`) and as a shared library (for the
 * Python driver, which prints the table).
 *
 *   validate_bench --check           every workload through every path once:
 *                                    all clean, and a planted error found
 *   validate_bench [--rounds R]      ferry and nanoarrow timings, interleaved
 *   validate_bench --case W --mode M --iterations N   one path only
 *
 * Workloads (all CPU, the values of each built once): int32 1k; int32 1k
 * with nulls; int32 1M with nulls; utf8 100k (ASCII); utf8 100k and 1k of
 * mixed text (5% two- and three-byte characters); struct<int32, utf8> 10k,
 * ASCII and mixed;
 * list<int32> 10k; dict<int32, utf8> 10k; 100 int32 columns x 1k rows (a
 * struct of 100 children). Nulls are about 1 in 8, scattered. */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ferry/ferry.h"

#ifdef FERRY_BENCH_NANOARROW
#include "nanoarrow/nanoarrow.h"
#endif

#define VB_EXPORT __attribute__((visibility("default")))

enum {
  VB_FERRY_DEFAULT = 0,
  VB_FERRY_FULL = 1,
  VB_PREPARED_DEFAULT = 2,
  VB_PREPARED_FULL = 3,
  VB_NANOARROW = 4,
  VB_NANOARROW_REUSED = 5,
  VB_NANOARROW_FULL = 6,
  VB_N_MODES = 7
};

static const char* const kModeNames[VB_N_MODES] = {
    "ferry_default", "ferry_full",        "prepared_default", "prepared_full",
    "nanoarrow",     "nanoarrow_reused",  "nanoarrow_full"};

/* ---- counting what a successful validation must not do ----------------------------- */

/* A clean validation allocates nothing, takes no lock and formats no
 * message (findings are built only when reported). This program defines
 * malloc, calloc, realloc, snprintf, vsnprintf and pthread_mutex_lock, so
 * libferry's calls land here (ELF interposition), counted while `counting`
 * is set, then forwarded to the C library. Not under AddressSanitizer, which
 * owns malloc (then --check says it skipped this). */
#if defined(__SANITIZE_ADDRESS__)
#define VB_COUNTS 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define VB_COUNTS 0
#endif
#endif
#ifndef VB_COUNTS
#define VB_COUNTS 1
#endif

static int g_counting;
static int64_t g_counted; /* calls made while counting */

#if VB_COUNTS
extern void* __libc_malloc(size_t size);
extern void* __libc_calloc(size_t n, size_t size);
extern void* __libc_realloc(void* ptr, size_t size);

void* malloc(size_t size) {
  g_counted += g_counting;
  return __libc_malloc(size);
}

void* calloc(size_t n, size_t size) {
  g_counted += g_counting;
  return __libc_calloc(n, size);
}

void* realloc(void* ptr, size_t size) {
  g_counted += g_counting;
  return __libc_realloc(ptr, size);
}

typedef int (*VsnprintfFn)(char*, size_t, const char*, va_list);
typedef int (*LockFn)(pthread_mutex_t*);

int vsnprintf(char* out, size_t size, const char* format, va_list args) {
  static VsnprintfFn next;
  if (next == NULL) next = (VsnprintfFn)dlsym(RTLD_NEXT, "vsnprintf");
  g_counted += g_counting;
  return next(out, size, format, args);
}

int snprintf(char* out, size_t size, const char* format, ...) {
  va_list args;
  va_start(args, format);
  int n = vsnprintf(out, size, format, args);
  va_end(args);
  return n;
}

int pthread_mutex_lock(pthread_mutex_t* mutex) {
  static LockFn next;
  if (next == NULL) next = (LockFn)dlsym(RTLD_NEXT, "pthread_mutex_lock");
  g_counted += g_counting;
  return next(mutex);
}
#endif

/* ---- building the arrays ------------------------------------------------------ */

static void release_schema(struct ArrowSchema* schema) { schema->release = NULL; }
static void release_array(struct ArrowArray* array) { array->release = NULL; }

static uint64_t g_random = 0x9E3779B97F4A7C15u;
static uint64_t next_random(void) {
  g_random ^= g_random << 13;
  g_random ^= g_random >> 7;
  g_random ^= g_random << 17;
  return g_random;
}

/* Everything the workloads allocated, freed by vb_teardown. */
static void** g_owned;
static int64_t g_n_owned;
static int64_t g_owned_capacity;

static void* xcalloc(size_t n, size_t size) {
  void* p = calloc(n == 0 ? 1 : n, size == 0 ? 1 : size);
  if (p != NULL && g_n_owned == g_owned_capacity) {
    int64_t capacity = g_owned_capacity == 0 ? 256 : 2 * g_owned_capacity;
    void** grown = (void**)realloc(g_owned, (size_t)capacity * sizeof(void*));
    if (grown == NULL) {
      free(p);
      p = NULL;
    } else {
      g_owned = grown;
      g_owned_capacity = capacity;
    }
  }
  if (p == NULL) {
    fprintf(stderr, "validate_bench: out of memory\n");
    exit(2);
  }
  g_owned[g_n_owned++] = p;
  return p;
}

static struct ArrowSchema* new_schema(const char* format, int64_t n_children) {
  struct ArrowSchema* s = (struct ArrowSchema*)xcalloc(1, sizeof *s);
  s->format = format;
  s->name = "";
  s->flags = ARROW_FLAG_NULLABLE;
  s->n_children = n_children;
  if (n_children > 0) {
    s->children = (struct ArrowSchema**)xcalloc((size_t)n_children, sizeof(void*));
  }
  s->release = release_schema;
  return s;
}

static struct ArrowArray* new_array(int64_t length, int64_t n_buffers, int64_t n_children) {
  struct ArrowArray* a = (struct ArrowArray*)xcalloc(1, sizeof *a);
  a->length = length;
  a->n_buffers = n_buffers;
  a->buffers = (const void**)xcalloc((size_t)n_buffers, sizeof(void*));
  a->n_children = n_children;
  if (n_children > 0) {
    a->children = (struct ArrowArray**)xcalloc((size_t)n_children, sizeof(void*));
  }
  a->release = release_array;
  return a;
}

/* A validity bitmap with about one null in eight; returns the null count. */
static uint8_t* make_validity(int64_t length, int64_t* null_count) {
  uint8_t* bits = (uint8_t*)xcalloc((size_t)(length + 7) / 8, 1);
  int64_t nulls = 0;
  for (int64_t i = 0; i < length; i++) {
    if ((next_random() & 7) != 0) {
      bits[i / 8] |= (uint8_t)(1u << (i % 8));
    } else {
      nulls++;
    }
  }
  *null_count = nulls;
  return bits;
}

static struct ArrowArray* int32_array(int64_t length, int with_nulls, int64_t modulo,
                                      int64_t* scan_bytes) {
  struct ArrowArray* a = new_array(length, 2, 0);
  int32_t* values = (int32_t*)xcalloc((size_t)length, sizeof(int32_t));
  for (int64_t i = 0; i < length; i++) {
    values[i] = (int32_t)(modulo > 0 ? next_random() % (uint64_t)modulo : next_random());
  }
  a->buffers[1] = values;
  if (with_nulls) {
    a->buffers[0] = make_validity(length, &a->null_count);
    *scan_bytes += (length + 7) / 8;
  }
  return a;
}

/* Strings of 0 to 16 bytes: ASCII letters, or with `mixed` real text's mix,
 * about 5% of the characters two- and three-byte ones (é, €), which is where
 * a UTF-8 check that is fast only on ASCII shows. */
static struct ArrowArray* utf8_array(int64_t length, int mixed, int64_t* scan_bytes) {
  struct ArrowArray* a = new_array(length, 3, 0);
  int32_t* offsets = (int32_t*)xcalloc((size_t)length + 1, sizeof(int32_t));
  char* data = (char*)xcalloc((size_t)length * 16 + 1, 1);
  int32_t n = 0;
  for (int64_t i = 0; i < length; i++) {
    int32_t end = n + (int32_t)(next_random() % 17);
    while (n < end) {
      uint64_t r = next_random();
      if (mixed && r % 40 == 0 && n + 2 <= end) {
        memcpy(data + n, "\xC3\xA9", 2); /* é */
        n += 2;
      } else if (mixed && r % 40 == 1 && n + 3 <= end) {
        memcpy(data + n, "\xE2\x82\xAC", 3); /* € */
        n += 3;
      } else {
        data[n++] = (char)('a' + (r >> 8) % 26);
      }
    }
    offsets[i + 1] = n;
  }
  a->buffers[1] = offsets;
  a->buffers[2] = data;
  *scan_bytes += (length + 1) * 4 + offsets[length];
  return a;
}

struct Workload {
  const char* name;
  struct ArrowSchema* schema;
  struct ArrowDeviceArray array;
  int64_t scan_bytes; /* what FULL reads: bitmaps, offsets, string data, indices */
  struct FerryPreparedSchema* prepared;
#ifdef FERRY_BENCH_NANOARROW
  struct ArrowArrayView reused;
#endif
};

#define VB_N_WORKLOADS 12
static struct Workload g_workloads[VB_N_WORKLOADS];
static int g_n_workloads;

static void add_workload(const char* name, struct ArrowSchema* schema,
                         struct ArrowArray* array, int64_t scan_bytes) {
  struct Workload* w = &g_workloads[g_n_workloads++];
  w->name = name;
  w->schema = schema;
  memset(&w->array, 0, sizeof w->array);
  w->array.array = *array;
  w->array.device_type = ARROW_DEVICE_CPU;
  w->array.device_id = -1;
  w->scan_bytes = scan_bytes;
  struct FerryError error;
  if (ferry_prepared_schema_create(schema, NULL, NULL, &w->prepared, &error) != FERRY_OK) {
    fprintf(stderr, "validate_bench: preparing %s: %s\n", name, error.message);
    exit(2);
  }
#ifdef FERRY_BENCH_NANOARROW
  struct ArrowError na_error;
  if (ArrowArrayViewInitFromSchema(&w->reused, schema, &na_error) != NANOARROW_OK) {
    fprintf(stderr, "validate_bench: nanoarrow view of %s: %s\n", name, na_error.message);
    exit(2);
  }
#endif
}

/* An int32 ("i": variant 1 has nulls) or utf8 ("u": variant 1 mixes in
 * multi-byte text) array of `length`. */
static void add_flat_workload(const char* name, const char* format, int64_t length,
                              int variant) {
  int64_t scan = 0;
  struct ArrowArray* array = format[0] == 'i' ? int32_array(length, variant, 0, &scan)
                                              : utf8_array(length, variant, &scan);
  add_workload(name, new_schema(format, 0), array, scan);
}

/* struct<a: int32 with nulls, b: utf8 (mixed text or ASCII)>, 10k rows, nulls. */
static void add_struct_workload(const char* name, int mixed) {
  int64_t scan = 0;
  struct ArrowSchema* schema = new_schema("+s", 2);
  schema->children[0] = new_schema("i", 0);
  schema->children[1] = new_schema("u", 0);
  struct ArrowArray* array = new_array(10000, 1, 2);
  array->children[0] = int32_array(10000, 1, 0, &scan);
  array->children[1] = utf8_array(10000, mixed, &scan);
  add_workload(name, schema, array, scan);
}

static void build_workloads(void) {
  if (g_n_workloads > 0) return;
  /* (Each array is built before add_workload reads the bytes it counted.) */
  add_flat_workload("int32 1k", "i", 1000, 0);
  add_flat_workload("int32 1k, nulls", "i", 1000, 1);
  add_flat_workload("int32 1M, nulls", "i", 1000000, 1);
  add_flat_workload("utf8 100k", "u", 100000, 0);
  add_flat_workload("utf8 100k, mixed text", "u", 100000, 1);
  add_flat_workload("utf8 1k, mixed text", "u", 1000, 1);
  add_struct_workload("struct<int32, utf8> 10k", 0);
  add_struct_workload("struct<int32, utf8> 10k, mixed text", 1);

  int64_t scan = 0;
  struct ArrowSchema* ls = new_schema("+l", 1);
  ls->children[0] = new_schema("i", 0);
  struct ArrowArray* la = new_array(10000, 2, 1);
  int32_t* list_offsets = (int32_t*)xcalloc(10001, sizeof(int32_t));
  for (int i = 0; i < 10000; i++) {
    list_offsets[i + 1] = list_offsets[i] + (int32_t)(next_random() % 10);
  }
  la->buffers[1] = list_offsets;
  la->children[0] = int32_array(list_offsets[10000], 0, 0, &scan);
  scan += 10001 * 4;
  add_workload("list<int32> 10k", ls, la, scan);

  scan = 0;
  struct ArrowSchema* ds = new_schema("i", 0);
  ds->dictionary = new_schema("u", 0);
  struct ArrowArray* da = int32_array(10000, 1, 100, &scan);
  da->dictionary = utf8_array(100, 0, &scan);
  scan += 10000 * 4;
  add_workload("dict<int32, utf8> 10k", ds, da, scan);

  scan = 0;
  struct ArrowSchema* wide = new_schema("+s", 100);
  struct ArrowArray* wa = new_array(1000, 1, 100);
  for (int c = 0; c < 100; c++) {
    wide->children[c] = new_schema("i", 0);
    wa->children[c] = int32_array(1000, 0, 0, &scan);
  }
  add_workload("100 int32 columns x 1k", wide, wa, scan);
}

/* Frees every workload (the benchmark and its check leave nothing behind). */
VB_EXPORT void vb_teardown(void) {
  for (int w = 0; w < g_n_workloads; w++) {
    ferry_prepared_schema_free(g_workloads[w].prepared);
#ifdef FERRY_BENCH_NANOARROW
    ArrowArrayViewReset(&g_workloads[w].reused);
#endif
  }
  g_n_workloads = 0;
  for (int64_t i = 0; i < g_n_owned; i++) free(g_owned[i]);
  free(g_owned);
  g_owned = NULL;
  g_n_owned = g_owned_capacity = 0;
}

/* ---- one operation of each path ------------------------------------------------- */

#ifdef FERRY_BENCH_NANOARROW
/* What ferry's FULL checks and nanoarrow's FULL does not: each node's
 * null_count against the zero bits of its validity bitmap (the same work,
 * for a fair comparison). EINVAL on a mismatch. */
static int na_recount_nulls(const struct ArrowArrayView* view) {
  const uint8_t* bits = view->buffer_views[0].data.as_uint8;
  if (bits != NULL && view->null_count != -1 &&
      view->length - ArrowBitCountSet(bits, view->offset, view->length) != view->null_count) {
    return EINVAL;
  }
  for (int64_t i = 0; i < view->n_children; i++) {
    if (na_recount_nulls(view->children[i]) != 0) return EINVAL;
  }
  return view->dictionary != NULL ? na_recount_nulls(view->dictionary) : 0;
}
#endif

static int run_once(struct Workload* w, int mode) {
  struct FerryError error;
  switch (mode) {
    case VB_FERRY_DEFAULT:
      return ferry_validate_device_array(w->schema, &w->array, FERRY_VALIDATE_DEFAULT,
                                         NULL, NULL, &error);
    case VB_FERRY_FULL:
      return ferry_validate_device_array(w->schema, &w->array, FERRY_VALIDATE_FULL, NULL,
                                         NULL, &error);
    case VB_PREPARED_DEFAULT:
      return ferry_validate_prepared(w->prepared, &w->array, FERRY_VALIDATE_DEFAULT, NULL,
                                     NULL, &error);
    case VB_PREPARED_FULL:
      return ferry_validate_prepared(w->prepared, &w->array, FERRY_VALIDATE_FULL, NULL,
                                     NULL, &error);
#ifdef FERRY_BENCH_NANOARROW
    case VB_NANOARROW:
    case VB_NANOARROW_FULL: {
      struct ArrowArrayView view;
      struct ArrowError na_error;
      int rc = ArrowArrayViewInitFromSchema(&view, w->schema, &na_error);
      if (rc == NANOARROW_OK) rc = ArrowArrayViewSetArray(&view, &w->array.array, &na_error);
      if (rc == NANOARROW_OK && mode == VB_NANOARROW_FULL) {
        rc = ArrowArrayViewValidate(&view, NANOARROW_VALIDATION_LEVEL_FULL, &na_error);
        if (rc == NANOARROW_OK) rc = na_recount_nulls(&view);
      }
      ArrowArrayViewReset(&view);
      return rc;
    }
    case VB_NANOARROW_REUSED: {
      struct ArrowError na_error;
      return ArrowArrayViewSetArray(&w->reused, &w->array.array, &na_error);
    }
#endif
    default: return ENOTSUP;
  }
}

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

/* ---- the interface of the shared library (validate_bench.py) ---------------------- */

VB_EXPORT int vb_setup(void) {
  build_workloads();
  return g_n_workloads;
}

VB_EXPORT const char* vb_name(int w) { return g_workloads[w].name; }
VB_EXPORT const char* vb_mode_name(int mode) { return kModeNames[mode]; }
VB_EXPORT int64_t vb_scan_bytes(int w) { return g_workloads[w].scan_bytes; }

VB_EXPORT int vb_has_nanoarrow(void) {
#ifdef FERRY_BENCH_NANOARROW
  return 1;
#else
  return 0;
#endif
}

/* Nanoseconds per operation over `iterations` runs of one path; -1 when an
 * operation fails (the benchmark measures clean validations only). */
VB_EXPORT double vb_time(int w, int mode, int64_t iterations) {
  struct Workload* workload = &g_workloads[w];
  int failures = 0;
  double start = now_ns();
  for (int64_t i = 0; i < iterations; i++) failures |= run_once(workload, mode);
  double elapsed = now_ns() - start;
  return failures ? -1.0 : elapsed / (double)iterations;
}

/* Fills n copies of workload w's schema and array (roots copied, the rest
 * shared; releasing a copy only marks it released), for importers that
 * take ownership of what they import. */
VB_EXPORT void vb_export(int w, int64_t n, struct ArrowSchema* schemas,
                         struct ArrowDeviceArray* arrays) {
  for (int64_t i = 0; i < n; i++) {
    schemas[i] = *g_workloads[w].schema;
    arrays[i] = g_workloads[w].array;
  }
}

/* Nanoseconds per memcpy of `bytes` (the floor for a scan of as many). */
VB_EXPORT double vb_memcpy_ns(int64_t bytes, int64_t iterations) {
  static uint8_t* source;
  static uint8_t* target;
  static int64_t capacity;
  if (bytes > capacity) {
    free(source);
    free(target);
    source = (uint8_t*)xcalloc((size_t)bytes, 1);
    target = (uint8_t*)xcalloc((size_t)bytes, 1);
    memset(source, 1, (size_t)bytes);
    capacity = bytes;
  }
  double start = now_ns();
  for (int64_t i = 0; i < iterations; i++) {
    memcpy(target, source, (size_t)bytes);
    __asm__ volatile("" : : "r"(target) : "memory");
  }
  return (now_ns() - start) / (double)iterations;
}

/* Every workload through every path once, all clean; then a planted error
 * (a decreasing utf8 offset) must be found at FULL by both ferry paths.
 * Returns the number of failures, each printed. */
VB_EXPORT int vb_check(void) {
  build_workloads();
  int failures = 0;
  for (int w = 0; w < g_n_workloads; w++) {
    for (int mode = 0; mode < VB_N_MODES; mode++) {
      if (!vb_has_nanoarrow() && mode >= VB_NANOARROW) continue;
      int rc = run_once(&g_workloads[w], mode);
      if (rc != 0) {
        printf("FAIL %s %s: %d\n", g_workloads[w].name, kModeNames[mode], rc);
        failures++;
      }
    }
  }
  /* Clean validations, counted: no allocation, lock or formatting. */
  if (VB_COUNTS) {
    for (int w = 0; w < g_n_workloads; w++) {
      for (int mode = VB_FERRY_DEFAULT; mode <= VB_PREPARED_FULL; mode++) {
        run_once(&g_workloads[w], mode); /* once first: lazy set-ups are not counted */
        g_counted = 0;
        g_counting = 1;
        for (int k = 0; k < 3; k++) run_once(&g_workloads[w], mode);
        g_counting = 0;
        if (g_counted != 0) {
          printf("FAIL %s %s: %lld allocations, locks or formatted messages\n",
                 g_workloads[w].name, kModeNames[mode], (long long)g_counted);
          failures++;
        }
      }
    }
  } else {
    printf("validate_bench --check: SKIP counting allocations, locks and formatting "
           "(AddressSanitizer owns malloc)\n");
  }
  struct Workload* utf8 = &g_workloads[3];
  int32_t* offsets = (int32_t*)(uintptr_t)utf8->array.array.buffers[1];
  int32_t saved = offsets[500];
  offsets[500] = offsets[499] - 1;
  for (int mode = VB_FERRY_FULL; mode <= VB_PREPARED_FULL; mode += 2) {
    struct FerryError error;
    int rc = mode == VB_FERRY_FULL
                 ? ferry_validate_device_array(utf8->schema, &utf8->array,
                                               FERRY_VALIDATE_FULL, NULL, NULL, &error)
                 : ferry_validate_prepared(utf8->prepared, &utf8->array,
                                           FERRY_VALIDATE_FULL, NULL, NULL, &error);
    if (rc != EINVAL || strstr(error.message, "offsets[500]") == NULL) {
      printf("FAIL %s: the planted decreasing offset was not found (%d: %s)\n",
             kModeNames[mode], rc, rc == 0 ? "" : error.message);
      failures++;
    }
  }
  offsets[500] = saved;
  printf("validate_bench --check: %d workloads, %d failures\n", g_n_workloads, failures);
  return failures;
}

/* ---- the executable --------------------------------------------------------------- */

static int compare_doubles(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

/* Iterations that take about 2 ms for this path (at least 1). */
static int64_t calibrate(int w, int mode) {
  int64_t n = 1;
  for (;;) {
    double ns = vb_time(w, mode, n) * (double)n;
    if (ns > 2e6 || n > (INT64_C(1) << 24)) return n;
    n *= 4;
  }
}

#ifndef FERRY_BENCH_LIBRARY
int main(int argc, char** argv) {
  int rounds = 11;
  const char* only_case = NULL;
  int only_mode = -1;
  int64_t only_iterations = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--check") == 0) {
      int failures = vb_check();
      vb_teardown();
      return failures == 0 ? 0 : 1;
    }
    if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) {
      rounds = atoi(argv[++i]);
    } else if (strcmp(argv[i], "--case") == 0 && i + 1 < argc) {
      only_case = argv[++i];
    } else if (strcmp(argv[i], "--mode") == 0 && i + 1 < argc) {
      const char* name = argv[++i];
      for (int m = 0; m < VB_N_MODES; m++) {
        if (strcmp(name, kModeNames[m]) == 0) only_mode = m;
      }
    } else if (strcmp(argv[i], "--iterations") == 0 && i + 1 < argc) {
      only_iterations = atoll(argv[++i]);
    } else {
      fprintf(stderr,
              "usage: validate_bench [--check | --rounds R | --case NAME --mode MODE "
              "--iterations N]\n");
      return 2;
    }
  }
  build_workloads();
  if (only_case != NULL) {
    /* One path alone (for callgrind): N operations, nothing printed. */
    for (int w = 0; w < g_n_workloads; w++) {
      if (strcmp(g_workloads[w].name, only_case) == 0 && only_mode >= 0) {
        int failed = vb_time(w, only_mode, only_iterations) < 0;
        vb_teardown();
        return failed ? 1 : 0;
      }
    }
    fprintf(stderr, "validate_bench: no case \"%s\" or mode\n", only_case);
    return 2;
  }
  /* Interleaved rounds of every path: ns per operation, median and spread. */
  int n_modes = vb_has_nanoarrow() ? VB_N_MODES : VB_NANOARROW;
  int64_t iterations[VB_N_WORKLOADS][VB_N_MODES];
  for (int w = 0; w < g_n_workloads; w++) {
    for (int m = 0; m < n_modes; m++) iterations[w][m] = calibrate(w, m);
  }
  double* samples = (double*)xcalloc((size_t)rounds, sizeof(double));
  static double results[VB_N_WORKLOADS][VB_N_MODES][64];
  if (rounds > 64) rounds = 64;
  for (int r = 0; r < rounds; r++) {
    for (int w = 0; w < g_n_workloads; w++) {
      for (int m = 0; m < n_modes; m++) results[w][m][r] = vb_time(w, m, iterations[w][m]);
    }
  }
  printf("%-26s", "ns per operation (median)");
  for (int m = 0; m < n_modes; m++) printf(" %16s", kModeNames[m]);
  printf("\n");
  for (int w = 0; w < g_n_workloads; w++) {
    printf("%-26s", g_workloads[w].name);
    for (int m = 0; m < n_modes; m++) {
      for (int r = 0; r < rounds; r++) samples[r] = results[w][m][r];
      qsort(samples, (size_t)rounds, sizeof(double), compare_doubles);
      printf(" %16.1f", samples[rounds / 2]);
    }
    printf("\n");
  }
  vb_teardown(); /* frees samples too: xcalloc's allocations are the workloads' */
  return 0;
}
#endif
