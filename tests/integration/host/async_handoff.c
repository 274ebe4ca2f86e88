/* One async handoff between two runtimes (see it_handoff_async in handoff.h).
 *
 * The consumer's checking handler (ferry_it_check_async) is wrapped by the
 * host's watch before it goes to the producer (ferry_it_export_async): every
 * callback passes through the watch, which counts the releases, notes any
 * call after the release or overlapping another call, and forwards the producer's
 * ArrowAsyncProducer to the consumer's handler. The consumer's verdict
 * (ferry_it_async_result) is awaited at most the timeout: a hung pair is a failure with
 * the state the checker saw, and its handler, watch and ticket are left allocated (the
 * producer may still call them) so the run goes on. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "allocations.h"
#include "case_spec.h"
#include "ferry/ferry.h"
#include "handoff.h"
#include "struct_fill.h"

/* The producer may free its own state after it released the handler (the
 * spec lets it clean up after release, on its thread): the ledger is read
 * again until it is back at the baseline or this much time has passed. */
#define LEDGER_SETTLE_MS 3000

struct async_watch {
  struct ArrowAsyncDeviceStreamHandler outer;  /* what the producer gets */
  struct ArrowAsyncDeviceStreamHandler* inner; /* the consumer's; NULL: reject mode */
  atomic_int releases;
  atomic_int after_release; /* callbacks after the release */
  atomic_int on_errors;
  atomic_int in_callback; /* handler calls running now */
  atomic_int overlaps;    /* calls that began while another ran */
  pthread_mutex_t mu;
  char first_after[64];
  char first_overlap[64];
  int error_code;
  char error_message[512];
};

static struct async_watch* watch_of(struct ArrowAsyncDeviceStreamHandler* self) {
  return (struct async_watch*)self->private_data;
}

/* Notes a callback after the release or overlapping another one, and hands
 * the producer object on. */
static void watch_enter(struct async_watch* w, const char* name) {
  if (atomic_fetch_add(&w->in_callback, 1) > 0 &&
      atomic_fetch_add(&w->overlaps, 1) == 0) {
    pthread_mutex_lock(&w->mu);
    snprintf(w->first_overlap, sizeof w->first_overlap, "%s", name);
    pthread_mutex_unlock(&w->mu);
  }
  if (atomic_load(&w->releases) > 0) {
    if (atomic_fetch_add(&w->after_release, 1) == 0) {
      pthread_mutex_lock(&w->mu);
      snprintf(w->first_after, sizeof w->first_after, "%s", name);
      pthread_mutex_unlock(&w->mu);
    }
  }
  if (w->inner != NULL) w->inner->producer = w->outer.producer;
}

static void watch_leave(struct async_watch* w) { atomic_fetch_sub(&w->in_callback, 1); }

static int watch_on_schema(struct ArrowAsyncDeviceStreamHandler* self,
                           struct ArrowSchema* schema) {
  struct async_watch* w = watch_of(self);
  watch_enter(w, "on_schema");
  int rc = EINVAL; /* reject mode: no schema was expected */
  if (w->inner != NULL) {
    rc = w->inner->on_schema(w->inner, schema);
  } else if (schema != NULL && schema->release != NULL) {
    schema->release(schema);
  }
  watch_leave(w);
  return rc;
}

static int watch_on_next_task(struct ArrowAsyncDeviceStreamHandler* self,
                              struct ArrowAsyncTask* task, const char* metadata) {
  struct async_watch* w = watch_of(self);
  watch_enter(w, "on_next_task");
  int rc = EINVAL;
  if (w->inner != NULL) {
    rc = w->inner->on_next_task(w->inner, task, metadata);
  } else if (task != NULL && task->extract_data != NULL) {
    task->extract_data(task, NULL);
  }
  watch_leave(w);
  return rc;
}

static void watch_on_error(struct ArrowAsyncDeviceStreamHandler* self, int code,
                           const char* message, const char* metadata) {
  struct async_watch* w = watch_of(self);
  watch_enter(w, "on_error");
  if (atomic_fetch_add(&w->on_errors, 1) == 0) {
    pthread_mutex_lock(&w->mu);
    w->error_code = code;
    snprintf(w->error_message, sizeof w->error_message, "%s",
             message == NULL ? "(null)" : message);
    pthread_mutex_unlock(&w->mu);
  }
  if (w->inner != NULL) w->inner->on_error(w->inner, code, message, metadata);
  watch_leave(w);
}

static void watch_release(struct ArrowAsyncDeviceStreamHandler* self) {
  struct async_watch* w = watch_of(self);
  watch_enter(w, "release");
  /* Left before the consumer's release: after it the verdict may come and
   * the host free the watch. */
  watch_leave(w);
  atomic_fetch_add(&w->releases, 1);
  if (w->inner != NULL) w->inner->release(w->inner);
}

static struct async_watch* watch_new(struct ArrowAsyncDeviceStreamHandler* inner) {
  struct async_watch* w = calloc(1, sizeof *w);
  if (w == NULL) return NULL;
  pthread_mutex_init(&w->mu, NULL);
  w->inner = inner;
  it_fill_handler(&w->outer, watch_on_schema, watch_on_next_task, watch_on_error,
                  watch_release, w);
  return w;
}

static void watch_free(struct async_watch* w) {
  pthread_mutex_destroy(&w->mu);
  free(w);
}

/* The ledger back at `before`, allowing the producer LEDGER_SETTLE_MS to
 * finish its cleanup after the release. 0, or -1 with the change. */
static int ledger_settles(const struct it_runtime_set* all,
                          const struct it_allocations* before, char* why, size_t size) {
  struct timespec start, now;
  clock_gettime(CLOCK_MONOTONIC, &start);
  for (;;) {
    if (it_allocations_expect(before, (const struct it_plugin* const*)all->loaded, all->n,
                              why, size) == 0) {
      return 0;
    }
    clock_gettime(CLOCK_MONOTONIC, &now);
    int64_t ms = (int64_t)(now.tv_sec - start.tv_sec) * 1000 +
                 (now.tv_nsec - start.tv_nsec) / 1000000;
    if (ms >= LEDGER_SETTLE_MS) return -1;
    struct timespec pause = {0, 1000000}; /* re-read the counters every millisecond */
    nanosleep(&pause, NULL);
  }
}

/* The watch's own findings once the verdict is in: one release, nothing
 * after it. 1, or 0 with the problem. */
static int watch_verdict(struct async_watch* w, char* message, size_t size) {
  int releases = atomic_load(&w->releases);
  if (releases != 1) {
    return it_failf(message, size,
                    "the producer released the handler %d times, expected once",
                    releases);
  }
  if (atomic_load(&w->after_release) > 0) {
    return it_failf(message, size,
                    "the producer called %s (and %d calls in all) after release",
                    w->first_after, atomic_load(&w->after_release));
  }
  if (atomic_load(&w->overlaps) > 0) {
    return it_failf(
        message, size,
        "the producer's handler calls overlapped (%s began while another call ran; "
        "%d in all)",
        w->first_overlap, atomic_load(&w->overlaps));
  }
  return 1;
}

/* A case string every producer must refuse: on_error and release, non-zero
 * with a message containing the word. */
static int async_reject(const struct it_runtime_set* all,
                        const struct it_plugin* producer,
                        const struct it_case_entry* entry,
                        const struct it_allocations* before, char* message, size_t size) {
  struct async_watch* w = watch_new(NULL);
  if (w == NULL) return it_failf(message, size, "out of memory for the watch");
  int rc = producer->export_async(entry->spec, &w->outer);
  const char* said = it_plugin_error(producer);
  int ok = 1;
  if (rc == 0) {
    ok = it_failf(message, size,
                  "export_async accepted it, expected a failure with \"%s\"",
                  entry->reject_word);
  } else if (strstr(said, entry->reject_word) == NULL) {
    ok = it_failf(message, size,
                  "export_async failed with %s \"%s\", expected \"%s\" in it",
                  ferry_errno_name(rc), said, entry->reject_word);
  } else if (atomic_load(&w->releases) == 0) {
    /* A non-zero return promises the handler is already released. */
    ok = it_failf(message, size, "export_async returned %s without releasing the handler",
                  ferry_errno_name(rc));
    /* The producer may still release it later: the watch stays allocated. */
    return ok;
  } else if (atomic_load(&w->on_errors) != 1) {
    ok = it_failf(message, size,
                  "export_async refused the case with %d on_error calls, "
                  "expected one",
                  atomic_load(&w->on_errors));
  }
  if (ok) ok = watch_verdict(w, message, size);
  watch_free(w);
  char why[600];
  if (ok && ledger_settles(all, before, why, sizeof why) != 0) {
    return it_failf(message, size, "leak: %s before the handoff", why);
  }
  return ok;
}

int it_handoff_async(const struct it_runtime_set* all, const struct it_plugin* producer,
                     const struct it_plugin* consumer, const struct it_case_entry* entry,
                     int64_t timeout_ms, char* message, size_t size) {
  struct it_allocations before;
  it_allocations_take(&before, (const struct it_plugin* const*)all->loaded, all->n);
  if (entry->reject_word[0] != '\0') {
    return async_reject(all, producer, entry, &before, message, size);
  }
  struct it_case info;
  struct FerryError error;
  ferry_error_init(&error);
  if (it_case_parse(entry->spec, &info, &error) != FERRY_OK) {
    return it_failf(message, size, "bad case: %s", error.message);
  }
  /* Heap memory: a hung producer keeps it (see the top of this file). */
  struct ArrowAsyncDeviceStreamHandler* inner = calloc(1, sizeof *inner);
  struct async_watch* w = inner == NULL ? NULL : watch_new(inner);
  if (w == NULL) {
    free(inner);
    return it_failf(message, size, "out of memory for the handler");
  }
  void* ticket = NULL;
  int rc = consumer->check_async(entry->spec, inner, &ticket);
  if (rc != 0) {
    char said[600];
    snprintf(said, sizeof said, "%s", it_plugin_error(consumer));
    watch_free(w);
    free(inner);
    return it_failf(message, size, "consumer check_async failed with %s: %s",
                    ferry_errno_name(rc), said);
  }
  rc = producer->export_async(entry->spec, &w->outer);
  char producer_said[600];
  snprintf(producer_said, sizeof producer_said, "%s",
           rc == 0 ? "" : it_plugin_error(producer));
  int verdict = consumer->async_result(ticket, timeout_ms);
  char consumer_said[1200];
  snprintf(consumer_said, sizeof consumer_said, "%s",
           verdict == 0 ? "" : it_plugin_error(consumer));
  if (verdict == ETIMEDOUT) {
    /* Leaked on purpose: the producer may still call the handler. */
    return it_failf(
        message, size,
        "HUNG: no verdict from the consumer after %lld ms (producer's export_async "
        "returned %s%s%s): %s",
        (long long)timeout_ms, rc == 0 ? "0" : ferry_errno_name(rc), rc == 0 ? "" : ": ",
        producer_said, consumer_said);
  }
  int ok = 1;
  if (info.fail == IT_FAIL_EXPORT) {
    if (rc != EIO || strstr(producer_said, "injected failure at export") == NULL) {
      ok = it_failf(
          message, size,
          "fail=export: export_async returned %s \"%s\", expected EIO \"injected "
          "failure at export\"",
          rc == 0 ? "0" : ferry_errno_name(rc), producer_said);
    }
  } else if (rc != 0) {
    ok = it_failf(message, size, "producer export_async failed with %s: %s",
                  ferry_errno_name(rc), producer_said);
  }
  /* The host's own assertions first: a consumer may name the same fault. */
  if (ok) ok = watch_verdict(w, message, size);
  if (ok && verdict != 0) {
    ok = it_failf(message, size, "consumer verdict %s: %s", ferry_errno_name(verdict),
                  consumer_said);
  }
  watch_free(w);
  free(inner);
  char why[600];
  if (ledger_settles(all, &before, why, sizeof why) != 0) {
    if (ok) return it_failf(message, size, "leak: %s before the handoff", why);
    size_t used = strlen(message);
    snprintf(message + used, size - used, "; and leak: %s", why);
  }
  return ok;
}
