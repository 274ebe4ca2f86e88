/* C host for the Go plugin: dlopens build/plugins/libferry_it_go.so (and, when
 * present, the C plugin libferry_it_c.so) and drives arrays and streams
 * between them in every direction, on the main thread and on new pthreads,
 * checking return codes, messages and that each plugin's live allocations
 * come back to their baseline after every cell.
 *
 * A Go c-shared library must never be loaded into a Go program (two Go
 * runtimes), which is why this test is a C program.
 *
 * Usage: host GO_PLUGIN [C_PLUGIN]   (prints "N passed, N failed") */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ferry_it.h"

struct plugin {
  const char* name;
  void* handle;
  ferry_it_export_array_fn export_array;
  ferry_it_check_array_fn check_array;
  ferry_it_export_stream_fn export_stream;
  ferry_it_check_stream_fn check_stream;
  ferry_it_live_allocations_fn live_allocations;
  ferry_it_last_error_fn last_error;
};

static int passed, failed;

#define SYM(p, field, symbol)                                               \
  do {                                                                      \
    *(void**)(&(p)->field) = dlsym((p)->handle, symbol);                    \
    if ((p)->field == NULL) {                                               \
      fprintf(stderr, "%s: missing symbol %s\n", (p)->name, symbol);        \
      return -1;                                                            \
    }                                                                       \
  } while (0)

static int load(struct plugin* p, const char* name, const char* path) {
  p->name = name;
  p->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (p->handle == NULL) {
    fprintf(stderr, "cannot load %s: %s\n", path, dlerror());
    return -1;
  }
  SYM(p, export_array, "ferry_it_export_array");
  SYM(p, check_array, "ferry_it_check_array");
  SYM(p, export_stream, "ferry_it_export_stream");
  SYM(p, check_stream, "ferry_it_check_stream");
  SYM(p, live_allocations, "ferry_it_live_allocations");
  SYM(p, last_error, "ferry_it_last_error");
  return 0;
}

static void report(int ok, const char* what, const char* detail) {
  if (ok) {
    passed++;
  } else {
    failed++;
    printf("FAIL %s: %s\n", what, detail);
  }
}

/* Producer exports the case, consumer checks it; both plugins' allocations
 * must be back at their baseline afterwards. */
static void array_cell(struct plugin* producer, struct plugin* consumer, const char* spec) {
  char what[256];
  snprintf(what, sizeof(what), "array %s -> %s [%s]", producer->name, consumer->name, spec);
  int64_t before_p = producer->live_allocations(), before_c = consumer->live_allocations();
  struct ArrowSchema schema;
  struct ArrowDeviceArray array;
  memset(&schema, 0, sizeof(schema));
  memset(&array, 0, sizeof(array));
  int rc = producer->export_array(spec, &schema, &array);
  if (rc != 0) {
    report(0, what, producer->last_error());
    return;
  }
  rc = consumer->check_array(spec, &schema, &array);
  if (rc != 0) {
    report(0, what, consumer->last_error());
    return;
  }
  char detail[128];
  snprintf(detail, sizeof(detail), "live allocations not back at baseline: %s %lld -> %lld, %s %lld -> %lld",
           producer->name, (long long)before_p, (long long)producer->live_allocations(),
           consumer->name, (long long)before_c, (long long)consumer->live_allocations());
  report(producer->live_allocations() == before_p && consumer->live_allocations() == before_c
             && schema.release == NULL && array.array.release == NULL,
         what, detail);
}

static void stream_cell(struct plugin* producer, struct plugin* consumer, const char* spec) {
  char what[256];
  snprintf(what, sizeof(what), "stream %s -> %s [%s]", producer->name, consumer->name, spec);
  int64_t before_p = producer->live_allocations(), before_c = consumer->live_allocations();
  struct ArrowDeviceArrayStream stream;
  memset(&stream, 0, sizeof(stream));
  int rc = producer->export_stream(spec, &stream);
  if (rc != 0) {
    report(0, what, producer->last_error());
    return;
  }
  rc = consumer->check_stream(spec, &stream);
  if (rc != 0) {
    report(0, what, consumer->last_error());
    return;
  }
  report(producer->live_allocations() == before_p && consumer->live_allocations() == before_c
             && stream.release == NULL,
         what, "live allocations not back at baseline, or the stream is still live");
}

/* A case the entry points must refuse with `code` and a message containing
 * `needle`, leaving the outputs released. */
static void refused_cell(struct plugin* p, const char* spec, int code, const char* needle) {
  char what[256], detail[1200];
  snprintf(what, sizeof(what), "refused %s [%s]", p->name, spec);
  struct ArrowSchema schema;
  struct ArrowDeviceArray array;
  struct ArrowDeviceArrayStream stream;
  memset(&schema, 0, sizeof(schema));
  memset(&array, 0, sizeof(array));
  memset(&stream, 0, sizeof(stream));
  int64_t before = p->live_allocations();
  int rc = p->export_array(spec, &schema, &array);
  snprintf(detail, sizeof(detail), "export_array rc %d (want %d), message \"%s\" (want \"%s\")",
           rc, code, p->last_error(), needle);
  report(rc == code && strstr(p->last_error(), needle) != NULL && schema.release == NULL &&
             array.array.release == NULL && p->live_allocations() == before,
         what, detail);
  rc = p->export_stream(spec, &stream);
  snprintf(detail, sizeof(detail), "export_stream rc %d (want %d), message \"%s\"", rc, code,
           p->last_error());
  report(rc == code && strstr(p->last_error(), needle) != NULL && stream.release == NULL &&
             p->live_allocations() == before,
         what, detail);
}

/* A consumer handed an array that does not match its case must fail with a
 * message and still release what it was given. */
static void mismatch_cell(struct plugin* producer, struct plugin* consumer) {
  char what[256];
  snprintf(what, sizeof(what), "mismatch %s -> %s", producer->name, consumer->name);
  int64_t before = producer->live_allocations();
  struct ArrowSchema schema;
  struct ArrowDeviceArray array;
  memset(&schema, 0, sizeof(schema));
  memset(&array, 0, sizeof(array));
  if (producer->export_array("int32:seed=7", &schema, &array) != 0) {
    report(0, what, producer->last_error());
    return;
  }
  int rc = consumer->check_array("int32:seed=8", &schema, &array);
  report(rc != 0 && consumer->last_error()[0] != '\0' && producer->live_allocations() == before,
         what, "a wrong seed passed, gave no message, or leaked");
}

static const char* const types[] = {"int8", "int16", "int32", "int64", "uint8", "uint16",
                                    "uint32", "uint64", "float32", "float64", "bool", "utf8",
                                    "binary", "list_int32", "struct_int32_utf8",
                                    "dict_int32_utf8"};
static const char* const shapes[] = {"", ":nulls=3", ":length=0", ":length=37:nulls=1:seed=9",
                                     ":offset=3:nulls=4:length=21:seed=4294967295",
                                     ":device=sim:nulls=2:offset=1"};

static void matrix(struct plugin* a, struct plugin* b) {
  char spec[128];
  for (size_t t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
    for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
      snprintf(spec, sizeof(spec), "%s%s", types[t], shapes[s]);
      array_cell(a, b, spec);
    }
    snprintf(spec, sizeof(spec), "%s:batches=4:nulls=5", types[t]);
    stream_cell(a, b, spec);
    snprintf(spec, sizeof(spec), "%s:batches=2:device=sim", types[t]);
    stream_cell(a, b, spec);
  }
  stream_cell(a, b, "int32:batches=0");
  stream_cell(a, b, "utf8:fail=get_next@2");
  stream_cell(a, b, "int64:batches=2:fail=get_next@3");
  stream_cell(a, b, "list_int32:fail=get_next@1");
  stream_cell(a, b, "struct_int32_utf8:fail=get_schema");
  mismatch_cell(a, b);
}

struct thread_job {
  struct plugin* a;
  struct plugin* b;
};

static void* thread_main(void* arg) {
  struct thread_job* job = arg;
  array_cell(job->a, job->b, "dict_int32_utf8:nulls=3:offset=2");
  stream_cell(job->a, job->b, "utf8:batches=5:device=sim");
  stream_cell(job->a, job->b, "int32:fail=get_next@2");
  /* last_error is per thread: a failure here is visible here. */
  struct ArrowSchema schema;
  struct ArrowDeviceArray array;
  memset(&schema, 0, sizeof(schema));
  memset(&array, 0, sizeof(array));
  int rc = job->a->export_array("int32:fail=export", &schema, &array);
  report(rc == EIO && strcmp(job->a->last_error(), "injected failure at export") == 0,
         "fail=export on a new thread", job->a->last_error());
  return NULL;
}

static void on_new_thread(struct plugin* a, struct plugin* b) {
  struct thread_job job = {a, b};
  pthread_t thread;
  if (pthread_create(&thread, NULL, thread_main, &job) != 0) {
    report(0, "pthread_create", strerror(errno));
    return;
  }
  pthread_join(thread, NULL);
}

/* Cost of one C -> Go entry point call (ferry_it_live_allocations, which
 * itself makes one cgo call back into C) from the calling thread. */
static double entry_call_ns(struct plugin* p, int64_t n) {
  struct timespec a, b;
  int64_t sum = 0;
  clock_gettime(CLOCK_MONOTONIC, &a);
  for (int64_t i = 0; i < n; i++) sum += p->live_allocations();
  clock_gettime(CLOCK_MONOTONIC, &b);
  if (sum < 0) printf("negative live allocations\n");
  return ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) / (double)n;
}

struct timing_job {
  struct plugin* p;
  double ns;
};

static void* timing_main(void* arg) {
  struct timing_job* job = arg;
  job->ns = entry_call_ns(job->p, 200000);
  return NULL;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s GO_PLUGIN [C_PLUGIN]\n", argv[0]);
    return 2;
  }
  struct plugin go, c;
  if (load(&go, "go", argv[1]) != 0) return 1;
  int have_c = argc > 2 && load(&c, "c", argv[2]) == 0;
  if (!have_c) printf("SKIP: the C plugin is not available; only Go -> Go cells run\n");

  refused_cell(&go, "int33", EINVAL, "int33");
  refused_cell(&go, "int32:colour=red", EINVAL, "colour");
  refused_cell(&go, "int32:length=-4", EINVAL, "length");
  refused_cell(&go, "int32:length=12x", EINVAL, "12x");
  refused_cell(&go, "int32:fail=export", EIO, "injected failure at export");
  matrix(&go, &go);
  if (have_c) {
    matrix(&go, &c);
    matrix(&c, &go);
  }

  /* A failure on this thread must not be overwritten by failures on others. */
  struct ArrowSchema schema;
  struct ArrowDeviceArray array;
  memset(&schema, 0, sizeof(schema));
  memset(&array, 0, sizeof(array));
  (void)go.export_array("int99:seed=3", &schema, &array);
  char main_message[1100];
  snprintf(main_message, sizeof(main_message), "%s", go.last_error());
  on_new_thread(&go, &go);
  if (have_c) {
    on_new_thread(&go, &c);
    on_new_thread(&c, &go);
  }
  report(strstr(main_message, "int99") != NULL && strcmp(go.last_error(), main_message) == 0,
         "last_error is per thread", go.last_error());
  /* Callbacks into Go from the C host's main thread and from a new pthread
   * (golang/go#68587 made the main-thread path slow on some Go releases). */
  double main_ns = entry_call_ns(&go, 200000);
  struct timing_job job = {&go, 0};
  pthread_t thread;
  if (pthread_create(&thread, NULL, timing_main, &job) == 0) pthread_join(thread, NULL);
  printf("C -> Go entry point call: %.0f ns on the main thread, %.0f ns on a new pthread\n",
         main_ns, job.ns);
  report(main_ns < 1000 && job.ns < 1000, "C -> Go calls stay under a microsecond",
         "a C -> Go call took a microsecond or more");
  printf("%d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
