/* host.c: a C host for the Java test plugin. It dlopens libferry_it_java.so
 * (which starts a JVM inside this process) and, when given, another runtime's
 * plugin (the C one), then runs arrays and streams of shared/cases.md in every
 * direction, error cases, a consumer on a thread the JVM has never seen, and
 * checks that every plugin's live allocations return to zero.
 *
 * Usage: host JAVA_PLUGIN [OTHER_PLUGIN...]   Prints "N passed, N failed".
 * The JVM starts before the other plugins are loaded, as runtimes.md requires
 * when one of them is Go.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "ferry_it.h"

struct plugin {
  const char* name;
  ferry_it_export_array_fn export_array;
  ferry_it_check_array_fn check_array;
  ferry_it_export_stream_fn export_stream;
  ferry_it_check_stream_fn check_stream;
  ferry_it_live_allocations_fn live_allocations;
  ferry_it_last_error_fn last_error;
};

static int g_passed, g_failed;

static void report(int ok, const char* what, const char* detail) {
  if (ok) {
    g_passed++;
  } else {
    g_failed++;
    printf("FAIL %s: %s\n", what, detail);
  }
}

enum { MAX_PLUGINS = 8 };

static int load(const char* path, const char* name, struct plugin* p) {
  void* handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (handle == NULL) {
    printf("cannot load %s: %s\n", path, dlerror());
    return 0;
  }
  p->name = name;
  p->export_array = (ferry_it_export_array_fn)dlsym(handle, "ferry_it_export_array");
  p->check_array = (ferry_it_check_array_fn)dlsym(handle, "ferry_it_check_array");
  p->export_stream = (ferry_it_export_stream_fn)dlsym(handle, "ferry_it_export_stream");
  p->check_stream = (ferry_it_check_stream_fn)dlsym(handle, "ferry_it_check_stream");
  p->live_allocations =
      (ferry_it_live_allocations_fn)dlsym(handle, "ferry_it_live_allocations");
  p->last_error = (ferry_it_last_error_fn)dlsym(handle, "ferry_it_last_error");
  if (!p->export_array || !p->check_array || !p->export_stream || !p->check_stream ||
      !p->live_allocations || !p->last_error) {
    printf("%s lacks an entry point\n", path);
    return 0;
  }
  return 1;
}

static void array_case(struct plugin* producer, struct plugin* consumer, const char* spec) {
  char what[256], detail[4200];
  snprintf(what, sizeof what, "array %s -> %s %s", producer->name, consumer->name, spec);
  struct ArrowSchema schema;
  struct ArrowDeviceArray array;
  memset(&schema, 0, sizeof schema);
  memset(&array, 0, sizeof array);
  int rc = producer->export_array(spec, &schema, &array);
  if (rc != 0) {
    snprintf(detail, sizeof detail, "export: %d %s", rc, producer->last_error());
    report(0, what, detail);
    return;
  }
  rc = consumer->check_array(spec, &schema, &array);
  snprintf(detail, sizeof detail, "check: %d %s", rc, consumer->last_error());
  report(rc == 0 && schema.release == NULL && array.array.release == NULL, what, detail);
}

static void stream_case(struct plugin* producer, struct plugin* consumer, const char* spec) {
  char what[256], detail[4200];
  snprintf(what, sizeof what, "stream %s -> %s %s", producer->name, consumer->name, spec);
  struct ArrowDeviceArrayStream stream;
  memset(&stream, 0, sizeof stream);
  int rc = producer->export_stream(spec, &stream);
  if (rc != 0) {
    snprintf(detail, sizeof detail, "export: %d %s", rc, producer->last_error());
    report(0, what, detail);
    return;
  }
  rc = consumer->check_stream(spec, &stream);
  snprintf(detail, sizeof detail, "check: %d %s", rc, consumer->last_error());
  report(rc == 0 && stream.release == NULL, what, detail);
}

static void expect_error(struct plugin* p, const char* spec, int code, const char* message) {
  char what[256], detail[4200];
  snprintf(what, sizeof what, "%s rejects %s", p->name, spec);
  struct ArrowSchema schema;
  struct ArrowDeviceArray array;
  memset(&schema, 0, sizeof schema);
  memset(&array, 0, sizeof array);
  int rc = p->export_array(spec, &schema, &array);
  const char* error = p->last_error();
  snprintf(detail, sizeof detail, "rc %d, message \"%s\"", rc, error);
  report(rc == code && strstr(error, message) != NULL && schema.release == NULL &&
             array.array.release == NULL,
         what, detail);
}

static const char* const kArrayCases[] = {
    "int8", "int16:nulls=2", "int32:length=100:nulls=3:offset=7", "int64:seed=4294967295",
    "uint8:length=0", "uint16:offset=1", "uint32:nulls=1", "uint64:length=33:nulls=5",
    "float32:seed=9", "float64:nulls=4:offset=2", "bool:length=77:nulls=3:offset=3",
    "utf8:length=50:nulls=7:offset=4", "binary:nulls=2", "list_int32:length=40:nulls=3:offset=2",
    "struct_int32_utf8:length=25:nulls=4:offset=3", "dict_int32_utf8:length=30:nulls=5",
    "int32:device=sim", "utf8:nulls=3:offset=2:device=sim",
    "list_int32:nulls=2:device=sim", "struct_int32_utf8:offset=1:device=sim",
    "dict_int32_utf8:device=sim:nulls=3",
};

static const char* const kStreamCases[] = {
    "int32", "utf8:batches=0", "int64:batches=5:nulls=3:offset=1",
    "list_int32:device=sim:batches=2", "float64:fail=get_next@2", "bool:fail=get_next@4",
    "binary:fail=get_schema", "dict_int32_utf8:device=sim:fail=get_next@1",
};

struct thread_job {
  struct plugin* producer;
  struct plugin* consumer;
};

/* Runs on a pthread the JVM has never seen. */
static void* foreign_thread(void* arg) {
  struct thread_job* job = arg;
  stream_case(job->producer, job->consumer, "struct_int32_utf8:batches=4:nulls=2");
  array_case(job->producer, job->consumer, "utf8:nulls=3");
  return NULL;
}

static void run_pair(struct plugin* producer, struct plugin* consumer) {
  for (size_t i = 0; i < sizeof kArrayCases / sizeof kArrayCases[0]; i++) {
    array_case(producer, consumer, kArrayCases[i]);
  }
  for (size_t i = 0; i < sizeof kStreamCases / sizeof kStreamCases[0]; i++) {
    stream_case(producer, consumer, kStreamCases[i]);
  }
  struct thread_job job = {producer, consumer};
  pthread_t thread;
  if (pthread_create(&thread, NULL, foreign_thread, &job) == 0) {
    pthread_join(thread, NULL);
  } else {
    report(0, "foreign thread", "pthread_create failed");
  }
}

int main(int argc, char** argv) {
  if (argc < 2 || argc - 2 > MAX_PLUGINS) {
    fprintf(stderr, "usage: %s JAVA_PLUGIN [OTHER_PLUGIN...] (at most %d others)\n", argv[0],
            MAX_PLUGINS);
    return 2;
  }
  struct plugin java, others[MAX_PLUGINS];
  if (!load(argv[1], "java", &java)) return 1;
  run_pair(&java, &java); /* starts the JVM before any other runtime is loaded */

  /* The plugin started the JVM: its handlers must now carry SA_ONSTACK so that
   * a Go runtime loaded after it can run (runtimes.md section 1). */
  struct sigaction segv;
  sigaction(SIGSEGV, NULL, &segv);
  report(segv.sa_handler != SIG_DFL && (segv.sa_flags & SA_ONSTACK) != 0,
         "JVM SIGSEGV handler installed with SA_ONSTACK", "missing SA_ONSTACK");

  int n_others = 0;
  for (int i = 2; i < argc; i++) {
    const char* base = strrchr(argv[i], '/');
    if (!load(argv[i], base ? base + 1 : argv[i], &others[n_others])) return 1;
    n_others++;
  }
  for (int i = 0; i < n_others; i++) {
    run_pair(&java, &others[i]);
    run_pair(&others[i], &java);
  }
  expect_error(&java, "int33", EINVAL, "unknown type \"int33\"");
  expect_error(&java, "int32:length=-4", EINVAL, "malformed number \"-4\"");
  expect_error(&java, "int32:colour=red", EINVAL, "unknown key \"colour\"");
  expect_error(&java, "int32:fail=export", EIO, "injected failure at export");

  char detail[160];
  snprintf(detail, sizeof detail, "%lld live", (long long)java.live_allocations());
  report(java.live_allocations() == 0, "java live allocations back to zero", detail);
  for (int i = 0; i < n_others; i++) {
    snprintf(detail, sizeof detail, "%s: %lld live", others[i].name,
             (long long)others[i].live_allocations());
    report(others[i].live_allocations() == 0, "other live allocations back to zero", detail);
  }
  printf("%d passed, %d failed\n", g_passed, g_failed);
  return g_failed == 0 ? 0 : 1;
}
