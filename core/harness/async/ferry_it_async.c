/* The generic async layer of the test plugins (see ferry_it_async.h). */
#include "ferry_it_async.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "case_spec.h"
#include "ferry/ferry.h"
#include "struct_fill.h"

/* ---- the per-thread last error ---------------------------------------------------- */

static _Thread_local char last_error[1536];

const char* ferry_it_async_last_error(void) { return last_error; }

static int set_error(int code, const char* fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int set_error(int code, const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  vsnprintf(last_error, sizeof last_error, fmt, args);
  va_end(args);
  return code;
}

static const char* nonnull(const char* s) { return s == NULL ? "(null)" : s; }

/* ---- the producer ------------------------------------------------------------------ */

/* Eager mode: everything the runtime's stream yields, read on the calling
 * thread, replayed by a stream that never calls the runtime again. */
struct eager_stream {
  struct ArrowSchema schema;
  int schema_rc;
  struct ArrowDeviceArray* batches;
  int64_t n;
  int64_t next;
  int end_rc; /* the failure that ends the stream, 0: a plain end */
  char message[FERRY_ERROR_MESSAGE_SIZE];
};

static int eager_get_schema(void* user_data, struct ArrowSchema* out,
                            struct FerryError* error) {
  struct eager_stream* s = user_data;
  if (s->schema_rc != 0) {
    snprintf(error->message, sizeof error->message, "%s", s->message);
    return s->schema_rc;
  }
  if (s->schema.release == NULL) {
    snprintf(error->message, sizeof error->message, "the schema was already taken");
    return EINVAL;
  }
  return ferry_schema_move(&s->schema, out);
}

static int eager_get_next(void* user_data, struct ArrowDeviceArray* out,
                          struct FerryError* error) {
  struct eager_stream* s = user_data;
  if (s->next < s->n) return ferry_device_array_move(&s->batches[s->next++], out);
  if (s->end_rc != 0) {
    snprintf(error->message, sizeof error->message, "%s", s->message);
    return s->end_rc;
  }
  return 0; /* end: `out` stays released */
}

static void eager_release(void* user_data) {
  struct eager_stream* s = user_data;
  /* Batches never pushed (a cancel, a refused task) go back to the runtime. */
  for (int64_t i = s->next; i < s->n; i++) ferry_device_array_release(&s->batches[i]);
  ferry_schema_release(&s->schema);
  free(s->batches);
  free(s);
}

static const char* stream_message(struct ArrowDeviceArrayStream* stream) {
  const char* m = stream->get_last_error != NULL ? stream->get_last_error(stream) : NULL;
  return m == NULL ? "(no message)" : m;
}

/* Reads `source` to its end or failure, releases it, and fills `out` with the
 * replay. 0, or an errno code with the message in `error`. */
static int eager_read(struct ArrowDeviceArrayStream* source,
                      struct ArrowDeviceArrayStream* out, struct FerryError* error) {
  struct eager_stream* s = calloc(1, sizeof *s);
  if (s == NULL) {
    ferry_array_stream_release(source);
    snprintf(error->message, sizeof error->message, "out of memory for the eager stream");
    return ENOMEM;
  }
  ArrowDeviceType device_type = source->device_type;
  s->schema_rc = source->get_schema(source, &s->schema);
  if (s->schema_rc != 0) {
    snprintf(s->message, sizeof s->message, "%s", stream_message(source));
  } else {
    int64_t capacity = 0;
    for (;;) {
      if (s->n == capacity) {
        int64_t grown = capacity == 0 ? 8 : capacity * 2;
        struct ArrowDeviceArray* more = realloc(s->batches, (size_t)grown * sizeof *more);
        if (more == NULL) {
          s->end_rc = ENOMEM;
          snprintf(s->message, sizeof s->message,
                   "out of memory reading the stream eagerly");
          break;
        }
        s->batches = more;
        capacity = grown;
      }
      struct ArrowDeviceArray* batch = &s->batches[s->n];
      memset(batch, 0, sizeof *batch);
      int rc = source->get_next(source, batch);
      if (rc != 0) {
        s->end_rc = rc;
        snprintf(s->message, sizeof s->message, "%s", stream_message(source));
        break;
      }
      if (batch->array.release == NULL) break;
      s->n++;
    }
  }
  ferry_array_stream_release(source);
  int rc = ferry_array_stream_init(out, device_type, eager_get_schema, eager_get_next,
                                   eager_release, s, error);
  if (rc != 0) eager_release(s);
  return rc;
}

int ferry_it_async_export_generic(const char* case_spec,
                                  struct ArrowAsyncDeviceStreamHandler* handler,
                                  ferry_it_export_stream_fn export_stream,
                                  ferry_it_last_error_fn last_error_fn, int eager) {
  last_error[0] = '\0';
  if (handler == NULL) {
    return set_error(EINVAL, "ferry_it_export_async: handler is NULL");
  }
  if (export_stream == NULL || last_error_fn == NULL) {
    ferry_async_handler_fail(handler, EINVAL,
                             "ferry_it_async_export_generic: export_stream or last_error "
                             "is NULL");
    return set_error(
        EINVAL, "ferry_it_async_export_generic: export_stream or last_error is NULL");
  }
  struct ArrowDeviceArrayStream stream;
  memset(&stream, 0, sizeof stream);
  int rc = export_stream(case_spec, &stream);
  if (rc != 0) {
    /* Copied first: the runtime's message lives until its next call. */
    const char* said = last_error_fn();
    set_error(rc, "%s", said == NULL ? "(no message)" : said);
    ferry_async_handler_fail(handler, rc, last_error);
    return rc;
  }
  struct FerryError error;
  ferry_error_init(&error);
  if (eager) {
    struct ArrowDeviceArrayStream replay;
    memset(&replay, 0, sizeof replay);
    rc = eager_read(&stream, &replay, &error);
    if (rc != 0) {
      set_error(rc, "%s", error.message);
      ferry_async_handler_fail(handler, rc, last_error);
      return rc;
    }
    stream = replay;
  }
  rc = ferry_async_export_stream(&stream, handler, 0, &error);
  if (rc != 0) return set_error(rc, "%s", error.message);
  return 0;
}

/* ---- the checking consumer ------------------------------------------------------- */

/* A task the handler received: extracted inside on_next_task (`array`), or
 * copied to be extracted later (`task`). */
struct slot {
  struct slot* next;
  int64_t index;
  int extracted;
  int extract_rc;
  struct ArrowAsyncTask task;
  struct ArrowDeviceArray array;
};

struct ticket {
  struct ArrowAsyncDeviceStreamHandler* handler; /* the caller's */
  char spec[512];
  char runtime_spec[600];
  struct it_case c;
  ferry_it_check_stream_fn check_stream;
  ferry_it_last_error_fn last_error;

  /* What the case says should happen. */
  int64_t expect_tasks;     /* tasks the producer delivers before its end or failure */
  int expect_error;         /* 0, or the failure: export, get_schema, get_next */
  char expect_message[128]; /* its exact message */
  int64_t refuse_at;        /* fail=consumer@N when the N-th task comes, else 0 */
  int64_t cancel_after;     /* cancel=N when it cuts the stream, else 0 */
  int64_t runtime_batches;  /* the batches the runtime's checker sees */

  atomic_int in_callback;
  atomic_int released_flag;

  pthread_mutex_t mu;
  pthread_cond_t cv;
  /* under mu */
  struct ArrowAsyncProducer* producer;
  struct ArrowSchema schema;
  int schema_seen;
  int schema_taken;
  int64_t requested;
  int64_t tasks;
  struct slot* head;
  struct slot* tail;
  int end_seen;
  int error_seen;
  int error_code;
  char error_message[512];
  int release_count;
  int release_done; /* the (first) release callback has finished waiting */
  int refused;
  int cancelled;
  int64_t pending_credits;
  int requests_in_flight;
  int64_t delivered; /* batches handed to the runtime's checker */
  char violation[768];
  int checker_done;
  int runtime_rc; /* the runtime's check_stream */
  char runtime_said[1200];
  pthread_t thread;
};

/* The ticket whose producer this thread is inside `request` or `cancel` of. */
static _Thread_local struct ticket* tls_in_producer_call;

static void lock(struct ticket* t) { pthread_mutex_lock(&t->mu); }
static void unlock(struct ticket* t) { pthread_mutex_unlock(&t->mu); }

/* Records the first violation (call with mu held). */
static void violation_locked(struct ticket* t, const char* fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void violation_locked(struct ticket* t, const char* fmt, ...) {
  if (t->violation[0] != '\0') return;
  va_list args;
  va_start(args, fmt);
  vsnprintf(t->violation, sizeof t->violation, fmt, args);
  va_end(args);
}

/* Entering and leaving a handler callback: re-entry from request/cancel,
 * overlap with another callback, a call after release. */
static void enter_callback(struct ticket* t, const char* name) {
  int reentered = tls_in_producer_call == t;
  int overlapped = atomic_fetch_add(&t->in_callback, 1) > 0;
  int after_release = atomic_load(&t->released_flag) != 0;
  if (!reentered && !overlapped && !after_release) return;
  lock(t);
  if (reentered) {
    violation_locked(t,
                     "%s was called from within the producer's request or cancel (a "
                     "synchronous, re-entrant callback)",
                     name);
  }
  if (overlapped && !reentered) {
    violation_locked(t, "%s overlapped another handler callback (calls not serialized)",
                     name);
  }
  if (after_release)
    violation_locked(t, "%s was called after the handler's release", name);
  unlock(t);
}

static void leave_callback(struct ticket* t) { atomic_fetch_sub(&t->in_callback, 1); }

/* Calls producer->request(n) or cancel (n == 0) unless the handler was
 * released, keeping the release callback waiting until it returns (the
 * producer may free itself once released). Call with mu held; it is dropped
 * around the call. Returns 1 when the call was made. */
static int call_producer_locked(struct ticket* t, int64_t n) {
  if (t->release_count > 0 || t->producer == NULL) return 0;
  struct ArrowAsyncProducer* producer = t->producer;
  if (n > 0) t->requested = t->requested > INT64_MAX - n ? INT64_MAX : t->requested + n;
  t->requests_in_flight++;
  unlock(t);
  struct ticket* outer = tls_in_producer_call;
  tls_in_producer_call = t;
  if (n > 0) {
    producer->request(producer, n);
  } else {
    producer->cancel(producer);
  }
  tls_in_producer_call = outer;
  lock(t);
  t->requests_in_flight--;
  pthread_cond_broadcast(&t->cv);
  return 1;
}

static struct ticket* ticket_of(struct ArrowAsyncDeviceStreamHandler* self) {
  return self == NULL ? NULL : (struct ticket*)self->private_data;
}

static int on_schema(struct ArrowAsyncDeviceStreamHandler* self,
                     struct ArrowSchema* schema) {
  struct ticket* t = ticket_of(self);
  enter_callback(t, "on_schema");
  lock(t);
  int rc = 0;
  if (t->schema_seen) {
    violation_locked(t, "on_schema was called twice");
    rc = EINVAL;
  } else if (t->error_seen) {
    violation_locked(t, "on_schema came after on_error");
    rc = EINVAL;
  } else if (self->producer == NULL) {
    violation_locked(t,
                     "on_schema came with handler->producer NULL (the producer must set "
                     "it before on_schema)");
    rc = EINVAL;
  } else if (self->producer->request == NULL || self->producer->cancel == NULL) {
    violation_locked(t, "on_schema came with a producer lacking request or cancel");
    rc = EINVAL;
  } else if (self->producer->device_type != t->c.device_type) {
    violation_locked(t, "the producer's device_type is %d (%s), the case says %s",
                     (int)self->producer->device_type,
                     ferry_device_type_name(self->producer->device_type),
                     t->c.device_name);
    rc = EINVAL;
  } else if (schema == NULL || schema->release == NULL) {
    violation_locked(t, "on_schema came with a NULL or released schema");
    rc = EINVAL;
  } else if (t->expect_error == IT_FAIL_EXPORT || t->expect_error == IT_FAIL_GET_SCHEMA) {
    violation_locked(t, "on_schema came where the case expects on_error(EIO, \"%s\")",
                     t->expect_message);
    rc = EINVAL;
  }
  if (schema != NULL && schema->release != NULL) {
    if (rc == 0) {
      ferry_schema_move(schema, &t->schema);
    } else {
      schema->release(schema); /* ownership came with the call */
    }
  }
  if (rc == 0) {
    t->schema_seen = 1;
    t->producer = self->producer;
    /* request(window) from inside on_schema, as the spec allows. */
    call_producer_locked(t, t->c.window);
  }
  /* Left under the lock: once the release is seen and the lock dropped, the
   * result may free the ticket. */
  leave_callback(t);
  pthread_cond_broadcast(&t->cv);
  unlock(t);
  return rc;
}

/* Extracts `task` with NULL (the consumer does not want it) and records a
 * failing extract_data. Call without mu. */
static void discard_task(struct ticket* t, struct ArrowAsyncTask* task, int64_t index) {
  int rc = task->extract_data(task, NULL);
  if (rc != 0) {
    lock(t);
    violation_locked(t, "extract_data(NULL) of task %lld returned %s", (long long)index,
                     ferry_errno_name(rc));
    unlock(t);
  }
}

static int on_next_task(struct ArrowAsyncDeviceStreamHandler* self,
                        struct ArrowAsyncTask* task, const char* metadata) {
  (void)metadata;
  struct ticket* t = ticket_of(self);
  enter_callback(t, "on_next_task");
  lock(t);
  int rc = 0;
  int discard = 0;
  int64_t index = t->tasks;
  if (!t->schema_seen) {
    violation_locked(t, "on_next_task came before on_schema");
    rc = EINVAL;
    discard = task != NULL;
  } else if (t->end_seen) {
    violation_locked(t, "on_next_task came after the end marker");
    rc = EINVAL;
    discard = task != NULL;
  } else if (t->error_seen) {
    violation_locked(t, "on_next_task came after on_error");
    rc = EINVAL;
    discard = task != NULL;
  } else if (t->refused) {
    violation_locked(t, "on_next_task came after the consumer refused task %lld",
                     (long long)t->refuse_at);
    rc = EINVAL;
    discard = task != NULL;
  } else if (task == NULL) {
    /* The end marker. */
    if (!t->cancelled && t->tasks != t->expect_tasks) {
      violation_locked(t, "the end marker came after %lld tasks, the case has %lld",
                       (long long)t->tasks, (long long)t->expect_tasks);
    } else if (!t->cancelled && t->expect_error == IT_FAIL_GET_NEXT) {
      violation_locked(t,
                       "the end marker came where the case expects on_error(EIO, \"%s\")",
                       t->expect_message);
    }
    t->end_seen = 1;
    t->pending_credits = 0;
  } else {
    t->tasks++;
    if (task->extract_data == NULL) {
      violation_locked(t, "task %lld has no extract_data", (long long)index);
      rc = EINVAL;
    } else if (t->tasks > t->requested) {
      violation_locked(t, "task %lld came beyond the %lld batches requested",
                       (long long)index, (long long)t->requested);
      discard = 1;
    } else if (!t->cancelled && t->tasks > t->expect_tasks) {
      if (t->expect_error == IT_FAIL_GET_NEXT) {
        violation_locked(t, "task %lld came where the case expects on_error(EIO, \"%s\")",
                         (long long)index, t->expect_message);
      } else {
        violation_locked(t, "task %lld came, the case has %lld batches", (long long)index,
                         (long long)t->expect_tasks);
      }
      discard = 1;
    } else if (t->cancelled) {
      discard = 1; /* still requested before the cancel: extracted with NULL */
    } else if (t->refuse_at == t->tasks) {
      /* fail=consumer@N: extract with NULL so the producer cleans up, refuse. */
      t->refused = 1;
      t->pending_credits = 0;
      discard = 1;
      rc = EIO;
    }
  }
  int keep = rc == 0 && !discard && task != NULL;
  struct slot* slot = NULL;
  if (keep) {
    slot = calloc(1, sizeof *slot);
    if (slot == NULL) {
      violation_locked(t, "out of memory for task %lld", (long long)index);
      keep = 0;
      discard = 1;
    }
  }
  unlock(t);
  if (discard && task->extract_data != NULL) discard_task(t, task, index);
  if (keep) {
    slot->index = index;
    if (index % 2 == 0) {
      /* Even tasks are extracted here, inside the callback... */
      slot->extracted = 1;
      slot->extract_rc = task->extract_data(task, &slot->array);
    } else {
      /* ...odd ones copied and extracted later by the checker's thread. */
      slot->task = *task;
    }
  }
  lock(t);
  if (keep) {
    if (t->tail != NULL) {
      t->tail->next = slot;
    } else {
      t->head = slot;
    }
    t->tail = slot;
  }
  /* A credit the checker left for this callback: request(1) from inside it. */
  if (keep && t->pending_credits > 0) {
    t->pending_credits--;
    call_producer_locked(t, 1);
  }
  /* Left under the lock: once the release is seen and the lock dropped, the
   * result may free the ticket. */
  leave_callback(t);
  pthread_cond_broadcast(&t->cv);
  unlock(t);
  return rc;
}

static void on_error(struct ArrowAsyncDeviceStreamHandler* self, int code,
                     const char* message, const char* metadata) {
  (void)metadata;
  struct ticket* t = ticket_of(self);
  enter_callback(t, "on_error");
  lock(t);
  if (message == NULL) violation_locked(t, "on_error(%d) came with a NULL message", code);
  if (t->error_seen) {
    violation_locked(t, "on_error was called twice (then: %s \"%s\")",
                     ferry_errno_name(code), nonnull(message));
  } else if (t->end_seen) {
    violation_locked(t, "on_error(%s, \"%s\") came after the end marker",
                     ferry_errno_name(code), nonnull(message));
  } else if (t->refused) {
    violation_locked(
        t,
        "on_error(%s, \"%s\") came after the consumer refused task %lld (the "
        "producer must only release)",
        ferry_errno_name(code), nonnull(message), (long long)t->refuse_at);
  } else if (t->cancelled && t->expect_error == 0) {
    violation_locked(
        t,
        "on_error(%s, \"%s\") came after cancel (a successful cancel must not "
        "call on_error)",
        ferry_errno_name(code), nonnull(message));
  } else if (t->expect_error == 0) {
    violation_locked(t, "unexpected on_error(%s, \"%s\") after %lld tasks",
                     ferry_errno_name(code), nonnull(message), (long long)t->tasks);
  } else if (code != EIO || message == NULL || strcmp(message, t->expect_message) != 0) {
    violation_locked(t, "on_error(%s, \"%s\"), the case expects on_error(EIO, \"%s\")",
                     ferry_errno_name(code), nonnull(message), t->expect_message);
  } else if (t->expect_error == IT_FAIL_GET_NEXT ? t->tasks != t->expect_tasks
                                                 : t->schema_seen) {
    violation_locked(t,
                     "on_error(EIO, \"%s\") came after %s%lld tasks, the case puts it "
                     "after %lld",
                     message, t->schema_seen ? "on_schema and " : "", (long long)t->tasks,
                     (long long)t->expect_tasks);
  }
  if (!t->error_seen) {
    t->error_seen = 1;
    t->error_code = code;
    snprintf(t->error_message, sizeof t->error_message, "%s", nonnull(message));
  }
  t->pending_credits = 0;
  /* Left under the lock: once the release is seen and the lock dropped, the
   * result may free the ticket. */
  leave_callback(t);
  pthread_cond_broadcast(&t->cv);
  unlock(t);
}

/* How long the release callback waits for a request or cancel in flight on
 * another thread (a producer must not hold, across release, a lock its
 * request needs). */
#define RELEASE_WAIT_SECONDS 10

static void deadline_in(struct timespec* out, int64_t ms) {
  clock_gettime(CLOCK_REALTIME, out);
  out->tv_sec += (time_t)(ms / 1000);
  out->tv_nsec += (long)(ms % 1000) * 1000000L;
  if (out->tv_nsec >= 1000000000L) {
    out->tv_sec++;
    out->tv_nsec -= 1000000000L;
  }
}

static void on_release(struct ArrowAsyncDeviceStreamHandler* self) {
  struct ticket* t = ticket_of(self);
  enter_callback(t, "release");
  lock(t);
  t->release_count++;
  if (t->release_count > 1) {
    violation_locked(t, "the handler was released twice");
  } else if (!t->end_seen && !t->error_seen && !t->refused && !t->cancelled &&
             t->violation[0] == '\0') {
    violation_locked(t,
                     "the handler was released after %lld tasks without the end marker, "
                     "on_error, a cancel or a refused task",
                     (long long)t->tasks);
  }
  atomic_store(&t->released_flag, 1);
  struct timespec deadline;
  deadline_in(&deadline, RELEASE_WAIT_SECONDS * 1000);
  while (t->requests_in_flight > 0) {
    if (pthread_cond_timedwait(&t->cv, &t->mu, &deadline) == ETIMEDOUT) {
      violation_locked(t,
                       "release waited %d s for a request or cancel still running on "
                       "another thread",
                       RELEASE_WAIT_SECONDS);
      break;
    }
  }
  /* Left under the lock: once release_done is seen and the lock dropped,
   * the result may free the ticket. */
  t->release_done = 1;
  leave_callback(t);
  pthread_cond_broadcast(&t->cv);
  unlock(t);
}

/* ---- the device stream over the queue, for the runtime's checker ---------------- */

static int queue_get_schema(void* user_data, struct ArrowSchema* out,
                            struct FerryError* error) {
  struct ticket* t = user_data;
  lock(t);
  while (!t->schema_seen && !t->error_seen && t->release_count == 0) {
    pthread_cond_wait(&t->cv, &t->mu);
  }
  int rc = 0;
  if (t->schema_seen && !t->schema_taken) {
    t->schema_taken = 1;
    rc = ferry_schema_move(&t->schema, out);
  } else if (t->schema_taken) {
    rc = EINVAL;
    snprintf(error->message, sizeof error->message, "get_schema called twice");
  } else if (t->error_seen) {
    rc = t->error_code != 0 ? t->error_code : EIO;
    snprintf(error->message, sizeof error->message, "%s", t->error_message);
  } else {
    rc = EIO;
    snprintf(error->message, sizeof error->message,
             "the producer released the handler without on_schema or on_error");
  }
  unlock(t);
  return rc;
}

static int queue_get_next(void* user_data, struct ArrowDeviceArray* out,
                          struct FerryError* error) {
  struct ticket* t = user_data;
  lock(t);
  int64_t checked = t->delivered; /* the runtime asks again: the last one is checked */
  if (t->cancel_after > 0 && checked >= t->cancel_after) {
    if (!t->cancelled) {
      t->cancelled = 1;
      t->pending_credits = 0;
      call_producer_locked(t, 0);
    }
    unlock(t);
    return 0; /* the runtime's case ends here */
  }
  if (checked > 0 && !t->end_seen && !t->error_seen && !t->refused) {
    /* One more request per checked batch; every other one is left to the
     * next on_next_task (from inside it) when there is demand for one. */
    if (checked % 2 == 1 && t->requested - t->tasks > 0) {
      t->pending_credits++;
    } else {
      call_producer_locked(t, 1);
    }
  }
  while (t->head == NULL && !t->end_seen && !t->error_seen && !t->refused &&
         t->release_count == 0) {
    pthread_cond_wait(&t->cv, &t->mu);
  }
  int rc = 0;
  struct slot* slot = t->head;
  if (slot != NULL) {
    t->head = slot->next;
    if (t->head == NULL) t->tail = NULL;
    t->delivered++;
    unlock(t);
    if (slot->extracted) {
      rc = slot->extract_rc;
    } else {
      rc = slot->task.extract_data(&slot->task, &slot->array);
    }
    if (rc != 0) {
      snprintf(error->message, sizeof error->message,
               "extract_data of task %lld returned %s", (long long)slot->index,
               ferry_errno_name(rc));
    } else if (slot->array.array.release == NULL) {
      rc = EINVAL;
      snprintf(error->message, sizeof error->message,
               "extract_data of task %lld returned 0 with the array released",
               (long long)slot->index);
    } else {
      rc = ferry_device_array_move(&slot->array, out);
    }
    ferry_device_array_release(&slot->array);
    free(slot);
    if (rc != 0) {
      lock(t);
      violation_locked(t, "%s", error->message);
      unlock(t);
    }
    return rc;
  }
  if (t->error_seen) {
    rc = t->error_code != 0 ? t->error_code : EIO;
    snprintf(error->message, sizeof error->message, "%s", t->error_message);
  } else if (t->end_seen || t->refused) {
    rc = 0;
  } else {
    rc = EIO;
    snprintf(error->message, sizeof error->message,
             "the producer released the handler after %lld tasks without the end marker "
             "or on_error",
             (long long)t->tasks);
  }
  unlock(t);
  return rc;
}

static void queue_release(void* user_data) { (void)user_data; }

/* ---- the checker's thread -------------------------------------------------------- */

static void* checker_main(void* arg) {
  struct ticket* t = arg;
  char runtime_said[sizeof t->runtime_said] = "";
  int runtime_rc = 0;
  if (t->expect_error == IT_FAIL_EXPORT || t->expect_error == IT_FAIL_GET_SCHEMA) {
    /* Judged here alone: on_error with the exact message, then release. */
  } else {
    struct ArrowDeviceArrayStream stream;
    memset(&stream, 0, sizeof stream);
    struct FerryError error;
    ferry_error_init(&error);
    runtime_rc = ferry_array_stream_init(&stream, t->c.device_type, queue_get_schema,
                                         queue_get_next, queue_release, t, &error);
    if (runtime_rc != 0) {
      snprintf(runtime_said, sizeof runtime_said, "ferry_array_stream_init: %s",
               error.message);
    } else {
      runtime_rc = t->check_stream(t->runtime_spec, &stream);
      if (runtime_rc != 0) {
        const char* m = t->last_error();
        snprintf(runtime_said, sizeof runtime_said, "%s", m == NULL ? "(no message)" : m);
      }
      /* The checker took ownership; released here if it did not. */
      ferry_array_stream_release(&stream);
    }
  }
  lock(t);
  /* A runtime checker that stopped after its last batch without asking for
   * the end: the request for that checked batch is still owed (the end
   * marker may wait for demand). */
  if (runtime_rc == 0 && t->delivered > 0 && !t->end_seen && !t->error_seen &&
      !t->cancelled && !t->refused && t->requested - t->tasks <= 0) {
    call_producer_locked(t, 1);
  }
  /* The runtime stopped early (a failure): cancel so the producer ends. */
  if (runtime_rc != 0 && !t->cancelled && !t->end_seen && !t->error_seen && !t->refused) {
    t->cancelled = 1;
    call_producer_locked(t, 0);
  }
  /* Every task handed out is extracted (NULL: not wanted), then the release. */
  for (;;) {
    struct slot* slot = t->head;
    if (slot != NULL) {
      t->head = slot->next;
      if (t->head == NULL) t->tail = NULL;
      unlock(t);
      if (!slot->extracted) discard_task(t, &slot->task, slot->index);
      ferry_device_array_release(&slot->array);
      free(slot);
      lock(t);
      continue;
    }
    if (t->release_done) break;
    pthread_cond_wait(&t->cv, &t->mu);
  }
  if (t->violation[0] == '\0') {
    if (t->expect_error != 0 && !t->error_seen && !t->cancelled) {
      violation_locked(t, "no on_error came: the case expects on_error(EIO, \"%s\")",
                       t->expect_message);
    } else if (t->cancel_after > 0 && !t->cancelled) {
      violation_locked(t, "the stream ended before cancel=%lld",
                       (long long)t->cancel_after);
    } else if (t->refuse_at > 0 && !t->refused) {
      violation_locked(t, "task %lld to refuse never came", (long long)t->refuse_at);
    }
  }
  /* The verdict is made by the result, so that a late call (after the
   * release) still counts. */
  t->runtime_rc = runtime_rc;
  memcpy(t->runtime_said, runtime_said, sizeof runtime_said);
  if (t->schema.release != NULL) ferry_schema_release(&t->schema);
  t->checker_done = 1;
  pthread_cond_broadcast(&t->cv);
  unlock(t);
  return NULL;
}

/* ---- check and result ---------------------------------------------------------------
 */

/* The case the runtime's stream checker gets: the case without the async
 * keys and with exactly the batches that reach it (and fail=get_next@N when
 * the failure does). */
static int runtime_case(struct ticket* t) {
  char rest[512] = "";
  size_t used = 0;
  const char* p = t->spec;
  size_t type_length = strcspn(p, ":");
  for (const char* pair = p + type_length; *pair == ':';) {
    const char* start = pair + 1;
    size_t length = strcspn(start, ":");
    int drop = strncmp(start, "batches=", 8) == 0 || strncmp(start, "fail=", 5) == 0 ||
               strncmp(start, "window=", 7) == 0 || strncmp(start, "cancel=", 7) == 0;
    if (!drop && used + length + 2 < sizeof rest) {
      rest[used++] = ':';
      memcpy(rest + used, start, length);
      used += length;
      rest[used] = '\0';
    }
    pair = start + length;
  }
  int n = snprintf(t->runtime_spec, sizeof t->runtime_spec, "%.*s%s:batches=%lld",
                   (int)type_length, p, rest, (long long)t->runtime_batches);
  if (t->expect_error == IT_FAIL_GET_NEXT && t->runtime_batches == t->expect_tasks) {
    n = snprintf(t->runtime_spec + n, sizeof t->runtime_spec - (size_t)n,
                 ":fail=get_next@%lld", (long long)t->c.fail_at);
  }
  return n < 0 ? -1 : 0;
}

/* What the case says should happen (see struct ticket). */
static void plan(struct ticket* t) {
  const struct it_case* c = &t->c;
  t->expect_tasks = c->batches;
  if (c->fail == IT_FAIL_EXPORT) {
    t->expect_error = IT_FAIL_EXPORT;
    t->expect_tasks = 0;
    snprintf(t->expect_message, sizeof t->expect_message, "injected failure at export");
  } else if (c->fail == IT_FAIL_GET_SCHEMA) {
    t->expect_error = IT_FAIL_GET_SCHEMA;
    t->expect_tasks = 0;
    snprintf(t->expect_message, sizeof t->expect_message,
             "injected failure at get_schema");
  } else if (it_case_failing_get_next(c) > 0) {
    t->expect_error = IT_FAIL_GET_NEXT;
    t->expect_tasks = c->fail_at - 1;
    snprintf(t->expect_message, sizeof t->expect_message,
             "injected failure at get_next %lld", (long long)c->fail_at);
  }
  t->runtime_batches = t->expect_tasks;
  if (c->fail == IT_FAIL_CONSUMER && c->fail_at <= t->expect_tasks) {
    t->refuse_at = c->fail_at;
    t->runtime_batches = c->fail_at - 1;
  }
  if (c->cancel > 0 && c->cancel < t->runtime_batches) {
    t->cancel_after = c->cancel;
    t->runtime_batches = c->cancel;
    t->refuse_at = 0; /* the cancel comes first */
  }
  /* A cut before an injected get_next failure hides it from the runtime's
   * checker (runtime_case); the producer may still reach it, judged here. */
}

int ferry_it_async_check_generic(const char* case_spec,
                                 struct ArrowAsyncDeviceStreamHandler* handler_out,
                                 void** ticket_out, ferry_it_check_stream_fn check_stream,
                                 ferry_it_last_error_fn last_error_fn) {
  last_error[0] = '\0';
  if (ticket_out != NULL) *ticket_out = NULL;
  if (handler_out == NULL || ticket_out == NULL || check_stream == NULL ||
      last_error_fn == NULL) {
    return set_error(EINVAL,
                     "ferry_it_check_async: handler_out, ticket_out, check_stream and "
                     "last_error must not be NULL");
  }
  struct it_case c;
  struct FerryError error;
  ferry_error_init(&error);
  int rc = it_case_parse(case_spec, &c, &error);
  if (rc != 0) return set_error(rc, "%s", error.message);
  if (strlen(case_spec) >= sizeof(((struct ticket*)0)->spec)) {
    return set_error(EINVAL, "case \"%.64s...\" is too long for the async checker",
                     case_spec);
  }
  struct ticket* t = calloc(1, sizeof *t);
  if (t == NULL) return set_error(ENOMEM, "out of memory for the async checker");
  snprintf(t->spec, sizeof t->spec, "%s", case_spec);
  t->c = c;
  t->handler = handler_out;
  t->check_stream = check_stream;
  t->last_error = last_error_fn;
  plan(t);
  if (runtime_case(t) != 0) {
    free(t);
    return set_error(EINVAL, "could not rewrite case \"%s\"", case_spec);
  }
  pthread_mutex_init(&t->mu, NULL);
  pthread_condattr_t attr;
  pthread_condattr_init(&attr);
  pthread_cond_init(&t->cv, &attr);
  pthread_condattr_destroy(&attr);
  it_fill_handler(handler_out, on_schema, on_next_task, on_error, on_release, t);
  rc = pthread_create(&t->thread, NULL, checker_main, t);
  if (rc != 0) {
    memset(handler_out, 0, sizeof *handler_out);
    pthread_cond_destroy(&t->cv);
    pthread_mutex_destroy(&t->mu);
    free(t);
    return set_error(rc, "could not start the async checker's thread: %s", strerror(rc));
  }
  *ticket_out = t;
  return 0;
}

int ferry_it_async_result_generic(void* ticket, int64_t timeout_ms) {
  last_error[0] = '\0';
  struct ticket* t = ticket;
  if (t == NULL) return set_error(EINVAL, "ferry_it_async_result: ticket is NULL");
  if (timeout_ms < 0) timeout_ms = 0;
  struct timespec deadline;
  deadline_in(&deadline, timeout_ms);
  lock(t);
  while (!t->checker_done) {
    if (pthread_cond_timedwait(&t->cv, &t->mu, &deadline) == ETIMEDOUT) break;
  }
  if (!t->checker_done) {
    set_error(ETIMEDOUT,
              "no verdict after %lld ms: %s; %lld of %lld tasks came, %lld requested; "
              "%s%s%shandler %sreleased",
              (long long)timeout_ms, t->schema_seen ? "on_schema came" : "no on_schema",
              (long long)t->tasks, (long long)t->expect_tasks, (long long)t->requested,
              t->end_seen ? "end marker seen, " : "",
              t->error_seen ? "on_error seen, " : "", t->cancelled ? "cancelled, " : "",
              t->release_count > 0 ? "" : "not ");
    unlock(t);
    return ETIMEDOUT;
  }
  int verdict = 0;
  if (t->violation[0] != '\0') {
    verdict = set_error(EINVAL, "async consumer: %s", t->violation);
  } else if (t->runtime_rc != 0) {
    verdict = set_error(t->runtime_rc, "%s", t->runtime_said);
  }
  unlock(t);
  pthread_join(t->thread, NULL);
  pthread_cond_destroy(&t->cv);
  pthread_mutex_destroy(&t->mu);
  free(t);
  return verdict;
}
