/* A small C host for the Lua plugin: dlopens libferry_it_lua.so (and the C
 * plugin when it exists) and runs producer x consumer cases, failure
 * injection, bad case strings, a foreign-thread consumer and allocation
 * counters. Prints "N passed, N failed"; exits non-zero on any failure.
 * Usage: it_host BUILD_DIR */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ferry/ferry.h"
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

static void report(int ok, const char* what, const char* detail) {
  if (ok) {
    passed++;
  } else {
    failed++;
    printf("FAIL %s%s%s\n", what, detail && *detail ? ": " : "", detail ? detail : "");
  }
}

static int load_plugin(struct plugin* p, const char* path, const char* name) {
  p->name = name;
  p->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!p->handle) return 0;
  p->export_array = (ferry_it_export_array_fn)dlsym(p->handle, "ferry_it_export_array");
  p->check_array = (ferry_it_check_array_fn)dlsym(p->handle, "ferry_it_check_array");
  p->export_stream = (ferry_it_export_stream_fn)dlsym(p->handle, "ferry_it_export_stream");
  p->check_stream = (ferry_it_check_stream_fn)dlsym(p->handle, "ferry_it_check_stream");
  p->live_allocations = (ferry_it_live_allocations_fn)dlsym(p->handle, "ferry_it_live_allocations");
  p->last_error = (ferry_it_last_error_fn)dlsym(p->handle, "ferry_it_last_error");
  return p->export_array && p->check_array && p->export_stream && p->check_stream &&
         p->live_allocations && p->last_error;
}

static const char* const array_cases[] = {
    "int8", "int16:nulls=3", "int32", "int32:nulls=3", "int64:nulls=2:seed=4294967295",
    "uint8:length=0", "uint16:offset=3", "uint32:seed=7:nulls=4", "uint64:length=33",
    "float32:nulls=5", "float64:offset=2:nulls=3", "bool:length=19:nulls=3", "bool:offset=5",
    "utf8", "utf8:nulls=2:offset=3", "binary:length=40", "list_int32",
    "list_int32:nulls=3:offset=2", "struct_int32_utf8", "struct_int32_utf8:nulls=4:offset=1",
    "dict_int32_utf8", "dict_int32_utf8:nulls=3:offset=4", "int32:device=sim",
    "utf8:device=sim:nulls=3", "list_int32:device=sim:offset=1",
    "struct_int32_utf8:device=sim", "dict_int32_utf8:device=sim",
    "int32:length=1000:batches=9",
};

static void run_array(struct plugin* producer, struct plugin* consumer, const char* spec) {
  char what[256];
  snprintf(what, sizeof(what), "array %s -> %s [%s]", producer->name, consumer->name, spec);
  struct ArrowSchema schema;
  struct ArrowDeviceArray array;
  memset(&schema, 0, sizeof(schema));
  memset(&array, 0, sizeof(array));
  int64_t before = producer->live_allocations();
  int rc = producer->export_array(spec, &schema, &array);
  if (rc != 0) {
    report(0, what, producer->last_error());
    return;
  }
  rc = consumer->check_array(spec, &schema, &array);
  report(rc == 0, what, rc ? consumer->last_error() : "");
  report(schema.release == NULL && array.array.release == NULL, what, "checker left it live");
  char detail[128];
  snprintf(detail, sizeof(detail), "producer allocations %lld -> %lld", (long long)before,
           (long long)producer->live_allocations());
  report(producer->live_allocations() == before, what, detail);
}

static void run_stream(struct plugin* producer, struct plugin* consumer, const char* spec,
                       int expect_ok) {
  char what[256];
  snprintf(what, sizeof(what), "stream %s -> %s [%s]", producer->name, consumer->name, spec);
  struct ArrowDeviceArrayStream stream;
  memset(&stream, 0, sizeof(stream));
  int64_t before = producer->live_allocations();
  int rc = producer->export_stream(spec, &stream);
  if (rc != 0) {
    report(0, what, producer->last_error());
    return;
  }
  rc = consumer->check_stream(spec, &stream);
  /* The checker expects the injected failures itself: success means it saw
   * exactly the failure the case asks for. */
  report((rc == 0) == expect_ok, what, rc ? consumer->last_error() : "");
  report(stream.release == NULL, what, "checker left the stream live");
  report(producer->live_allocations() == before, what, "producer allocations not back");
}

struct thread_job {
  struct plugin* consumer;
  const char* spec;
  struct ArrowDeviceArrayStream* stream;
  int rc;
};

static void* consume_on_thread(void* arg) {
  struct thread_job* job = (struct thread_job*)arg;
  job->rc = job->consumer->check_stream(job->spec, job->stream);
  return NULL;
}

static void run_stream_on_thread(struct plugin* producer, struct plugin* consumer) {
  const char* spec = "utf8:length=50:nulls=3:batches=4";
  struct ArrowDeviceArrayStream stream;
  memset(&stream, 0, sizeof(stream));
  int rc = producer->export_stream(spec, &stream);
  report(rc == 0, "thread: export", rc ? producer->last_error() : "");
  if (rc) return;
  struct thread_job job = {consumer, spec, &stream, -1};
  pthread_t thread;
  pthread_create(&thread, NULL, consume_on_thread, &job);
  pthread_join(thread, NULL);
  char what[128];
  snprintf(what, sizeof(what), "stream %s consumed by %s on a new thread", producer->name,
           consumer->name);
  report(job.rc == 0, what, job.rc ? "see the consumer's message on that thread" : "");
}

static void run_bad_cases(struct plugin* p) {
  static const char* const bad[][2] = {
      {"int33", "int33"},         {"int32:length=-1", "length"}, {"int32:colour=red", "colour"},
      {"int32:length=x1", "x1"},  {"int32:device=tpu", "tpu"},   {"int32:seed=4294967296", "seed"},
      {"int32:fail=export", "injected failure at export"},
  };
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    struct ArrowSchema schema;
    struct ArrowDeviceArray array;
    memset(&schema, 0, sizeof(schema));
    memset(&array, 0, sizeof(array));
    int rc = p->export_array(bad[i][0], &schema, &array);
    char what[128];
    snprintf(what, sizeof(what), "%s rejects '%s'", p->name, bad[i][0]);
    report(rc != 0 && strstr(p->last_error(), bad[i][1]) != NULL, what, p->last_error());
    report(schema.release == NULL && array.array.release == NULL, what, "left something live");
  }
}

int main(int argc, char** argv) {
  const char* build = argc > 1 ? argv[1] : getenv("FERRY_BUILD_DIR");
  if (!build) build = "build";
  char path[1024];
  struct plugin lua_plugin, c_plugin;
  snprintf(path, sizeof(path), "%s/plugins/libferry_it_lua.so", build);
  if (!load_plugin(&lua_plugin, path, "lua")) {
    printf("FAIL cannot load %s: %s\n", path, dlerror());
    return 1;
  }
  snprintf(path, sizeof(path), "%s/plugins/libferry_it_c.so", build);
  int have_c = load_plugin(&c_plugin, path, "c");
  if (!have_c) printf("SKIP: the C plugin %s is not built; only Lua <-> Lua runs\n", path);

  struct plugin* producers[2] = {&lua_plugin, have_c ? &c_plugin : NULL};
  for (int a = 0; a < 2; a++) {
    for (int b = 0; b < 2; b++) {
      struct plugin* producer = producers[a];
      struct plugin* consumer = producers[b];
      if (!producer || !consumer || (producer != &lua_plugin && consumer != &lua_plugin)) continue;
      for (size_t i = 0; i < sizeof(array_cases) / sizeof(array_cases[0]); i++)
        run_array(producer, consumer, array_cases[i]);
      run_stream(producer, consumer, "int32:nulls=3:batches=3", 1);
      run_stream(producer, consumer, "utf8:offset=2:batches=2:device=sim", 1);
      run_stream(producer, consumer, "int64:batches=0", 1);
      run_stream(producer, consumer, "int32:fail=get_next@2", 1);
      run_stream(producer, consumer, "struct_int32_utf8:fail=get_next@1", 1);
      run_stream(producer, consumer, "float64:fail=get_schema", 1);
      /* A checker told to expect no failure must report the injected one. */
      struct ArrowDeviceArrayStream stream;
      memset(&stream, 0, sizeof(stream));
      if (producer->export_stream("int32:fail=get_next@2", &stream) == 0) {
        int rc = consumer->check_stream("int32", &stream);
        char what[128];
        snprintf(what, sizeof(what), "%s -> %s unexpected failure reported", producer->name,
                 consumer->name);
        report(rc == EIO || rc == EINVAL, what, consumer->last_error());
        report(strstr(consumer->last_error(), "injected failure at get_next 2") != NULL ||
                   strstr(consumer->last_error(), "get_next") != NULL,
               what, consumer->last_error());
      }
      run_stream_on_thread(producer, consumer);
    }
  }
  run_bad_cases(&lua_plugin);
  /* A checker handed a mismatching array reports it and still releases. */
  {
    struct ArrowSchema schema;
    struct ArrowDeviceArray array;
    memset(&schema, 0, sizeof(schema));
    memset(&array, 0, sizeof(array));
    int64_t before = lua_plugin.live_allocations();
    if (lua_plugin.export_array("int32:seed=5", &schema, &array) == 0) {
      int rc = lua_plugin.check_array("int32:seed=6", &schema, &array);
      report(rc != 0 && strstr(lua_plugin.last_error(), "element 0") != NULL, "wrong seed detected",
             lua_plugin.last_error());
      report(lua_plugin.live_allocations() == before, "wrong seed: released", "");
    }
  }
  report(lua_plugin.live_allocations() == 0, "lua plugin allocations back to zero", "");
  printf("%d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
