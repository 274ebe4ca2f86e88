/* Area 6: ferry_it_last_error is per thread, and exports cross threads. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "areas.h"
#include "release_watch.h"
#include "verify.h"

struct error_thread {
  struct suite* suite;
  pthread_barrier_t* barrier;
  const char* bad_case;
  int wait_first; /* 1: fail only after the other thread failed */
  int rc;
  char message_after_own[512];
  char message_at_end[512];
  char fresh_message[512];
  int fresh_was_null;
};

static void copy_message(char* out, size_t size, const char* m) {
  snprintf(out, size, "%s", m == NULL ? "(NULL)" : m);
}

static void* error_thread_main(void* arg) {
  struct error_thread* e = arg;
  const char* fresh = e->suite->ut.last_error();
  e->fresh_was_null = fresh == NULL;
  copy_message(e->fresh_message, sizeof e->fresh_message, fresh);
  if (e->wait_first) pthread_barrier_wait(e->barrier);
  struct ArrowSchema schema;
  struct ArrowDeviceArray array;
  memset(&schema, 0, sizeof schema);
  memset(&array, 0, sizeof array);
  e->rc = e->suite->ut.export_array(e->bad_case, &schema, &array);
  ferry_schema_release(&schema);
  ferry_device_array_release(&array);
  copy_message(e->message_after_own, sizeof e->message_after_own,
               e->suite->ut.last_error());
  if (!e->wait_first) pthread_barrier_wait(e->barrier);
  /* Both have failed now; each reads its own message again. */
  pthread_barrier_wait(e->barrier);
  copy_message(e->message_at_end, sizeof e->message_at_end, e->suite->ut.last_error());
  return NULL;
}

static void per_thread_errors(struct suite* s) {
  struct test t;
  test_begin(&t, s, "thread", "last_error per thread");
  struct test tf;
  test_begin(&tf, s, "thread", "last_error on a fresh thread is \"\"");
  /* The main thread fails first, with its own word. */
  struct ArrowSchema schema;
  struct ArrowDeviceArray array;
  memset(&schema, 0, sizeof schema);
  memset(&array, 0, sizeof array);
  int main_rc = s->ut.export_array("int32:length=abc", &schema, &array);
  ferry_schema_release(&schema);
  ferry_device_array_release(&array);
  pthread_barrier_t barrier;
  pthread_barrier_init(&barrier, NULL, 2);
  struct error_thread a = {s, &barrier, "int33", 0, 0, "", "", "", 0};
  struct error_thread b = {s, &barrier, "int32:lenght=3", 1, 0, "", "", "", 0};
  pthread_t ta, tb;
  pthread_create(&ta, NULL, error_thread_main, &a);
  pthread_create(&tb, NULL, error_thread_main, &b);
  pthread_join(ta, NULL);
  pthread_join(tb, NULL);
  pthread_barrier_destroy(&barrier);
  if (main_rc == 0 || a.rc == 0 || b.rc == 0) {
    test_fail(&t, "a bad case was accepted (main %d, A %d, B %d)", main_rc, a.rc, b.rc);
  }
  if (strstr(a.message_after_own, "int33") == NULL) {
    test_fail(&t, "thread A's message after its failure: \"%s\"", a.message_after_own);
  }
  if (strstr(a.message_at_end, "int33") == NULL) {
    test_fail(&t, "thread A's message changed after thread B failed: \"%s\"",
              a.message_at_end);
  }
  if (strstr(b.message_at_end, "lenght") == NULL) {
    test_fail(&t, "thread B's message: \"%s\"", b.message_at_end);
  }
  const char* main_message = s->ut.last_error();
  if (main_message == NULL || strstr(main_message, "abc") == NULL) {
    test_fail(&t,
              "the main thread's message changed after threads A and B failed: \"%s\"",
              main_message ? main_message : "(NULL)");
  }
  if (a.fresh_was_null || a.fresh_message[0] != '\0') {
    test_fail(
        &tf,
        "a new thread's ferry_it_last_error() is \"%s\" (ferry_it.h: \"\" when none)",
        a.fresh_message);
  }
  test_end(&t);
  test_end(&tf);
}

struct export_thread {
  struct suite* suite;
  const char* case_text;
  struct ArrowSchema schema;
  struct ArrowDeviceArray array;
  int rc;
};

static void* export_thread_main(void* arg) {
  struct export_thread* e = arg;
  e->rc = e->suite->ut.export_array(e->case_text, &e->schema, &e->array);
  return NULL;
}

/* Starts the "thread" test of `case_text` labelled "<case_text>[<what>]";
 * returns test_start's result. */
static int thread_test_start(struct test* t, struct suite* s, const char* case_text,
                             const char* what, struct it_case* c,
                             struct it_allocations* before) {
  char label[256];
  snprintf(label, sizeof label, "%s[%s]", case_text, what);
  return test_start(t, s, "thread", label, case_text, c, before);
}

/* Runs `body(arg)` on a new thread and waits for it. */
static void run_on_a_thread(void* (*body)(void*), void* arg) {
  pthread_t thread;
  pthread_create(&thread, NULL, body, arg);
  pthread_join(thread, NULL);
}

/* Exported on one thread, read and released on another. */
static void cross_thread_export(struct suite* s, const char* case_text) {
  struct test t;
  struct it_case c;
  struct it_allocations before;
  if (thread_test_start(&t, s, case_text, "exported on a thread, released on main", &c,
                        &before) != 0)
    return;
  struct export_thread e;
  memset(&e, 0, sizeof e);
  e.suite = s;
  e.case_text = case_text;
  run_on_a_thread(export_thread_main, &e);
  if (e.rc != 0) {
    test_fail(&t, "export on a new thread failed with %s", ferry_errno_name(e.rc));
    test_end(&t);
    return;
  }
  int group = watch_export(&e.schema, &e.array);
  char why[1024];
  if (verify_schema(&c, &e.schema, why, sizeof why) != 0) test_fail(&t, "%s", why);
  if (verify_device_array(&c, c.seed, &e.schema, &e.array, why, sizeof why) != 0) {
    test_fail(&t, "%s", why);
  }
  e.schema.release(&e.schema);
  e.array.array.release(&e.array.array);
  test_finish(&t, group, &before, "after release on the main thread");
}

struct reader_thread {
  struct ArrowDeviceArrayStream* stream;
  const struct it_case* c;
  char why[1024];
  int failed;
};

static void* reader_thread_main(void* arg) {
  struct reader_thread* r = arg;
  for (int64_t b = 0; b <= r->c->batches; b++) {
    struct ArrowDeviceArray batch;
    int rc = stream_get_next(r->stream, &batch);
    if (rc != 0) {
      snprintf(r->why, sizeof r->why, "get_next on another thread failed: %s",
               stream_last_error(r->stream));
      r->failed = 1;
      return NULL;
    }
    if (b == r->c->batches) {
      if (batch.array.release != NULL) {
        snprintf(r->why, sizeof r->why, "more batches than %lld",
                 (long long)r->c->batches);
        r->failed = 1;
        batch.array.release(&batch.array);
      }
      return NULL;
    }
    if (batch.array.release == NULL) {
      snprintf(r->why, sizeof r->why, "the stream ended after %lld batches",
               (long long)b);
      r->failed = 1;
      return NULL;
    }
    it_watch_array(&batch.array, "batch");
    if (verify_device_array(r->c, r->c->seed + (uint32_t)b, NULL, &batch, r->why,
                            sizeof r->why) != 0) {
      r->failed = 1;
    }
    batch.array.release(&batch.array);
    if (r->failed) return NULL;
  }
  return NULL;
}

/* A stream exported on the main thread and consumed on another one. */
static void cross_thread_stream(struct suite* s, const char* case_text) {
  struct test t;
  struct it_case c;
  struct it_allocations before;
  if (thread_test_start(&t, s, case_text, "stream read on another thread", &c, &before) !=
      0)
    return;
  struct ArrowDeviceArrayStream stream;
  if (export_stream_or_end(&t, case_text, &stream, "") != 0) return;
  int group = watch_stream(&stream);
  struct reader_thread r;
  memset(&r, 0, sizeof r);
  r.stream = &stream;
  r.c = &c;
  run_on_a_thread(reader_thread_main, &r);
  if (r.failed) test_fail(&t, "%s", r.why);
  stream.release(&stream);
  test_finish(&t, group, &before, "after releasing the stream");
}

void run_threads(struct suite* s) {
  per_thread_errors(s);
  cross_thread_export(s, "utf8:nulls=3:offset=5");
  cross_thread_export(s, "struct_int32_utf8:nulls=2:device=sim");
  cross_thread_stream(s, "int64:batches=4:nulls=3");
  cross_thread_stream(s, "list_int32:batches=2:device=sim");
}
