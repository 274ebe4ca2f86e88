/* `ferry check --async LIB.so:SYMBOL`: drives an async producer,
 * int SYMBOL(struct ArrowAsyncDeviceStreamHandler*), the way a demanding
 * consumer would, in six runs (one call of SYMBOL each, fresh handler):
 *
 *   window 1     request(1) from inside on_schema, each task extracted inside
 *                on_next_task and request(1) from inside it
 *   window 8     request(8) from inside on_schema, tasks copied and extracted
 *                on the tool's thread after on_next_task returned, request(1)
 *                from there per batch
 *   cancel       window 2, cancel after the first batch; the rest extracted
 *                with NULL; no on_error may follow
 *   refuse       the first task refused (extracted with NULL, EIO returned);
 *                only release may follow
 *   request(0)   on_schema calls request(0): the producer must answer with
 *   request(-1)  on_error (the specification: n <= 0 is invalid), then release
 *
 * Every rule broken is one FAIL line named by its rule (async_order,
 * async_producer, async_demand, async_serial, async_reentry,
 * async_after_release, async_release, async_batch, async_task, async_error,
 * async_cancel, async_refuse, async_request). Each run waits at
 * most --timeout seconds for the release; a producer that never releases is
 * one async_hang finding and the remaining runs are skipped. The whole check
 * runs in the tool's forked child (isolate.c), whose own limit covers every
 * run, so the tool itself never hangs. Consumers are never freed: a late
 * callback of a broken producer still finds valid memory (and is reported). */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "struct_fill.h"
#include "tool.h"

enum run_mode { RUN_INLINE, RUN_DEFERRED, RUN_CANCEL, RUN_REFUSE, RUN_REQUEST_BAD };

struct run_spec {
  const char* name;
  enum run_mode mode;
  int64_t window; /* for RUN_REQUEST_BAD: the invalid n */
};

static const struct run_spec runs[] = {
    {"window 1", RUN_INLINE, 1},        {"window 8", RUN_DEFERRED, 8},
    {"cancel", RUN_CANCEL, 2},          {"refuse", RUN_REFUSE, 1},
    {"request(0)", RUN_REQUEST_BAD, 0}, {"request(-1)", RUN_REQUEST_BAD, -1},
};
#define N_RUNS ((int)(sizeof runs / sizeof runs[0]))

typedef int (*async_producer_fn)(struct ArrowAsyncDeviceStreamHandler*);

struct copied_task {
  struct copied_task* next;
  struct ArrowAsyncTask task;
  int64_t index;
};

/* Rules reported once per run. */
enum {
  R_ORDER = 1 << 0,
  R_PRODUCER = 1 << 1,
  R_DEMAND = 1 << 2,
  R_SERIAL = 1 << 3,
  R_REENTRY = 1 << 4,
  R_AFTER_RELEASE = 1 << 5,
  R_RELEASE = 1 << 6,
  R_BATCH = 1 << 7,
  R_ERROR = 1 << 8,
  R_CANCEL = 1 << 9,
  R_REFUSE = 1 << 10,
  R_REQUEST = 1 << 11,
  R_TASK = 1 << 12
};

struct consumer {
  const struct run_spec* run;
  struct ArrowAsyncDeviceStreamHandler handler;
  atomic_int in_callback;
  atomic_int released;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  /* under mu */
  unsigned reported;
  struct ArrowAsyncProducer* producer;
  ArrowDeviceType device_type; /* the producer's, read at on_schema (it may be freed
                                  once the last task is extracted after the release) */
  struct ArrowSchema schema;
  int schema_seen;
  int64_t requested;
  int64_t tasks;
  int64_t batches_ok;
  struct copied_task* head;
  struct copied_task* tail;
  int end_seen;
  int error_seen;
  int error_code;
  char error_message[512];
  int releases;
  int cancelled;
  int refused;
  int in_flight;
  /* The producer call runs on a thread of its own, so that a producer that
   * produces on the calling thread (ferry_async_export_stream_run) works. */
  async_producer_fn produce;
  int produce_done;
  int produce_rc;
};

static _Thread_local struct consumer* tls_in_producer;

static const char* rule_name(unsigned rule) {
  switch (rule) {
    case R_ORDER: return "async_order";
    case R_PRODUCER: return "async_producer";
    case R_DEMAND: return "async_demand";
    case R_SERIAL: return "async_serial";
    case R_REENTRY: return "async_reentry";
    case R_AFTER_RELEASE: return "async_after_release";
    case R_RELEASE: return "async_release";
    case R_BATCH: return "async_batch";
    case R_ERROR: return "async_error";
    case R_CANCEL: return "async_cancel";
    case R_REFUSE: return "async_refuse";
    case R_TASK: return "async_task";
    default: return "async_request";
  }
}

/* One FAIL line per rule and run (call with mu held). */
static void finding_locked(struct consumer* c, unsigned rule, const char* fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void finding_locked(struct consumer* c, unsigned rule, const char* fmt, ...) {
  if (c->reported & rule) return;
  c->reported |= rule;
  char what[1024];
  va_list args;
  va_start(args, fmt);
  vsnprintf(what, sizeof what, fmt, args);
  va_end(args);
  char where[64];
  snprintf(where, sizeof where, "run \"%s\"", c->run->name);
  tool_fail(rule_name(rule), where, "%s", what);
}

static struct consumer* consumer_of(struct ArrowAsyncDeviceStreamHandler* self) {
  return (struct consumer*)self->private_data;
}

static void enter(struct consumer* c, const char* name) {
  int reentered = tls_in_producer == c;
  int overlapped = atomic_fetch_add(&c->in_callback, 1) > 0;
  int after = atomic_load(&c->released) != 0;
  if (!reentered && !overlapped && !after) return;
  pthread_mutex_lock(&c->mu);
  if (reentered) {
    finding_locked(c, R_REENTRY,
                   "%s was called synchronously from within request or cancel (the "
                   "specification forbids re-entrant callbacks)",
                   name);
  } else if (overlapped) {
    finding_locked(c, R_SERIAL,
                   "%s overlapped another handler callback (concurrent "
                   "handler calls)",
                   name);
  }
  if (after) finding_locked(c, R_AFTER_RELEASE, "%s was called after release", name);
  pthread_mutex_unlock(&c->mu);
}

static void leave(struct consumer* c) { atomic_fetch_sub(&c->in_callback, 1); }

/* producer->request(n) or cancel (n == 0 with `cancel`), never after the
 * release (the release waits for it). Call with mu held. */
static void call_producer_locked(struct consumer* c, int64_t n, int cancel) {
  if (c->releases > 0 || c->producer == NULL) return;
  struct ArrowAsyncProducer* p = c->producer;
  if (!cancel && n > 0) c->requested += n;
  c->in_flight++;
  pthread_mutex_unlock(&c->mu);
  struct consumer* outer = tls_in_producer;
  tls_in_producer = c;
  tool_stage("run \"%s\": producer %s", c->run->name, cancel ? "cancel" : "request");
  if (cancel) {
    p->cancel(p);
  } else {
    p->request(p, n);
  }
  tls_in_producer = outer;
  pthread_mutex_lock(&c->mu);
  c->in_flight--;
  pthread_cond_broadcast(&c->cv);
}

/* Validates an extracted batch against the schema and releases it. */
static void check_batch(struct consumer* c, struct ArrowDeviceArray* array,
                        int64_t index) {
  char prefix[96];
  snprintf(prefix, sizeof prefix, "run \"%s\" batch[%lld].", c->run->name,
           (long long)index);
  pthread_mutex_lock(&c->mu);
  ArrowDeviceType want = c->schema_seen ? c->device_type : array->device_type;
  if (array->array.release == NULL) {
    finding_locked(c, R_BATCH,
                   "extract_data of task %lld returned 0 but a released array",
                   (long long)index);
    pthread_mutex_unlock(&c->mu);
    return;
  }
  if (array->device_type != want) {
    finding_locked(c, R_BATCH, "batch %lld has device_type %d (%s), the producer's is %d",
                   (long long)index, (int)array->device_type,
                   ferry_device_type_name(array->device_type), (int)want);
  }
  pthread_mutex_unlock(&c->mu);
  int64_t before = tool_child_findings();
  tool_check_device_array(&c->schema, array, prefix);
  array->array.release(&array->array);
  pthread_mutex_lock(&c->mu);
  if (tool_child_findings() == before) c->batches_ok++;
  pthread_mutex_unlock(&c->mu);
}

/* Extracts a task into a batch (checked) or with NULL. */
static void extract(struct consumer* c, struct ArrowAsyncTask* task, int64_t index,
                    int want_data) {
  struct ArrowDeviceArray array;
  memset(&array, 0, sizeof array);
  tool_stage("run \"%s\": extract_data of task %lld", c->run->name, (long long)index);
  int rc = task->extract_data(task, want_data ? &array : NULL);
  if (rc != 0) {
    pthread_mutex_lock(&c->mu);
    finding_locked(c, R_BATCH, "extract_data of task %lld returned %d (%s)",
                   (long long)index, rc, ferry_errno_name(rc));
    pthread_mutex_unlock(&c->mu);
    if (array.array.release != NULL) array.array.release(&array.array);
    return;
  }
  if (want_data) check_batch(c, &array, index);
}

static int on_schema(struct ArrowAsyncDeviceStreamHandler* self,
                     struct ArrowSchema* schema) {
  struct consumer* c = consumer_of(self);
  enter(c, "on_schema");
  pthread_mutex_lock(&c->mu);
  int rc = 0;
  if (c->schema_seen) {
    finding_locked(c, R_ORDER, "on_schema was called twice");
    rc = EINVAL;
  } else if (self->producer == NULL) {
    finding_locked(c, R_PRODUCER,
                   "on_schema came with handler->producer NULL (it must be "
                   "set before on_schema)");
    rc = EINVAL;
  } else if (self->producer->request == NULL || self->producer->cancel == NULL) {
    finding_locked(c, R_PRODUCER, "the producer lacks request or cancel");
    rc = EINVAL;
  } else if (schema == NULL || schema->release == NULL) {
    finding_locked(c, R_ORDER, "on_schema came with a NULL or released schema");
    rc = EINVAL;
  }
  if (rc == 0) {
    ferry_schema_move(schema, &c->schema);
    c->schema_seen = 1;
    c->producer = self->producer;
    c->device_type = self->producer->device_type;
    if (c->run->mode == RUN_REQUEST_BAD) {
      /* Invalid on purpose: the producer must answer with on_error. */
      int64_t n = c->run->window;
      struct ArrowAsyncProducer* p = c->producer;
      c->in_flight++;
      pthread_mutex_unlock(&c->mu);
      tls_in_producer = c;
      p->request(p, n);
      tls_in_producer = NULL;
      pthread_mutex_lock(&c->mu);
      c->in_flight--;
      pthread_cond_broadcast(&c->cv);
    } else {
      call_producer_locked(c, c->run->window, 0);
    }
  } else if (schema != NULL && schema->release != NULL) {
    schema->release(schema);
  }
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
  leave(c);
  return rc;
}

static int on_next_task(struct ArrowAsyncDeviceStreamHandler* self,
                        struct ArrowAsyncTask* task, const char* metadata) {
  (void)metadata;
  struct consumer* c = consumer_of(self);
  enter(c, "on_next_task");
  pthread_mutex_lock(&c->mu);
  int64_t index = c->tasks;
  int rc = 0;
  int discard = 0;
  int keep = 0;
  if (!c->schema_seen) {
    finding_locked(c, R_ORDER, "on_next_task came before on_schema");
    rc = EINVAL;
    discard = task != NULL;
  } else if (c->end_seen) {
    finding_locked(c, R_ORDER, "on_next_task came after the end marker");
    discard = task != NULL;
  } else if (c->error_seen) {
    finding_locked(c, R_ORDER, "on_next_task came after on_error");
    discard = task != NULL;
  } else if (c->refused) {
    finding_locked(c, R_REFUSE, "on_next_task came after the consumer refused a task");
    discard = task != NULL;
  } else if (task == NULL) {
    c->end_seen = 1;
    if (c->run->mode == RUN_REQUEST_BAD) {
      finding_locked(c, R_REQUEST,
                     "request(%lld) was answered with the end marker, not "
                     "on_error",
                     (long long)c->run->window);
    }
  } else {
    c->tasks++;
    if (task->extract_data == NULL) {
      finding_locked(c, R_BATCH, "task %lld has no extract_data", (long long)index);
      rc = EINVAL;
    } else if (c->tasks > c->requested) {
      finding_locked(c, R_DEMAND,
                     "task %lld came, only %lld requested (more tasks than "
                     "requested)",
                     (long long)index, (long long)c->requested);
      discard = 1;
    } else if (c->cancelled) {
      discard = 1;
    } else if (c->run->mode == RUN_REFUSE) {
      c->refused = 1;
      discard = 1;
      rc = EIO;
    } else if (c->run->mode == RUN_INLINE) {
      keep = 1;
    } else {
      /* The same task handed out twice: its extract_data would run twice. */
      const struct copied_task* same = NULL;
      for (const struct copied_task* q = c->head; q != NULL && task->private_data != NULL;
           q = q->next) {
        if (q->task.private_data == task->private_data) same = q;
      }
      struct copied_task* copy = same != NULL ? NULL : calloc(1, sizeof *copy);
      if (same != NULL) {
        finding_locked(
            c, R_TASK,
            "task %lld is task %lld again (the same private_data, not yet "
            "extracted): one task handed out twice, its extract_data would run "
            "twice",
            (long long)index, (long long)same->index);
      } else if (copy != NULL) {
        copy->task = *task; /* extracted later, as arrow-go does */
        copy->index = index;
        if (c->tail != NULL) {
          c->tail->next = copy;
        } else {
          c->head = copy;
        }
        c->tail = copy;
      } else {
        discard = 1;
      }
    }
  }
  pthread_mutex_unlock(&c->mu);
  if (discard && task->extract_data != NULL) extract(c, task, index, 0);
  if (keep) {
    extract(c, task, index, 1);
    pthread_mutex_lock(&c->mu);
    if (!c->cancelled) call_producer_locked(c, 1, 0); /* from inside on_next_task */
    pthread_mutex_unlock(&c->mu);
  }
  pthread_mutex_lock(&c->mu);
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
  leave(c);
  return rc;
}

static void on_error(struct ArrowAsyncDeviceStreamHandler* self, int code,
                     const char* message, const char* metadata) {
  (void)metadata;
  struct consumer* c = consumer_of(self);
  enter(c, "on_error");
  pthread_mutex_lock(&c->mu);
  if (message == NULL) {
    finding_locked(c, R_ERROR, "on_error(%d, %s) came with a NULL message", code,
                   ferry_errno_name(code));
  }
  const char* m = message == NULL ? "(null)" : message;
  if (c->error_seen) {
    finding_locked(c, R_ORDER, "on_error was called twice");
  } else if (c->end_seen) {
    finding_locked(c, R_ORDER, "on_error came after the end marker");
  } else if (c->refused) {
    finding_locked(c, R_REFUSE,
                   "on_error(%s, \"%s\") came after the consumer refused a "
                   "task (only release may follow)",
                   ferry_errno_name(code), m);
  } else if (c->cancelled) {
    finding_locked(c, R_CANCEL,
                   "on_error(%s, \"%s\") came after cancel (a successful "
                   "cancel must not call on_error)",
                   ferry_errno_name(code), m);
  } else if (c->run->mode != RUN_REQUEST_BAD) {
    finding_locked(c, R_ERROR, "the producer failed: on_error(%s, \"%s\")",
                   ferry_errno_name(code), m);
  } else if (code == 0) {
    finding_locked(c, R_REQUEST, "request(%lld) was answered with on_error code 0",
                   (long long)c->run->window);
  }
  if (!c->error_seen) {
    c->error_seen = 1;
    c->error_code = code;
    snprintf(c->error_message, sizeof c->error_message, "%s", m);
  }
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
  leave(c);
}

static void on_release(struct ArrowAsyncDeviceStreamHandler* self) {
  struct consumer* c = consumer_of(self);
  enter(c, "release");
  pthread_mutex_lock(&c->mu);
  c->releases++;
  if (c->releases == 2) finding_locked(c, R_RELEASE, "the handler was released twice");
  atomic_store(&c->released, 1);
  /* A request or cancel still running elsewhere: the producer may free
   * itself once this returns. Bounded: never hang the check. */
  struct timespec deadline;
  clock_gettime(CLOCK_REALTIME, &deadline);
  deadline.tv_sec += 5;
  while (c->in_flight > 0) {
    if (pthread_cond_timedwait(&c->cv, &c->mu, &deadline) == ETIMEDOUT) break;
  }
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
  leave(c);
}

static struct consumer* consumer_new(const struct run_spec* run) {
  struct consumer* c = calloc(1, sizeof *c);
  if (c == NULL) return NULL;
  c->run = run;
  pthread_mutex_init(&c->mu, NULL);
  pthread_cond_init(&c->cv, NULL);
  it_fill_handler(&c->handler, on_schema, on_next_task, on_error, on_release, c);
  return c;
}

static void* producer_call_main(void* arg) {
  struct consumer* c = arg;
  int rc = c->produce(&c->handler);
  pthread_mutex_lock(&c->mu);
  c->produce_done = 1;
  c->produce_rc = rc;
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
  return NULL;
}

/* Waits on cv until `deadline` (CLOCK_REALTIME); 0 when it passed. */
static int wait_until(struct consumer* c, const struct timespec* deadline) {
  return pthread_cond_timedwait(&c->cv, &c->mu, deadline) != ETIMEDOUT;
}

/* One run; returns 1 when the producer hung (no release). */
static int run_one(async_producer_fn produce, const struct run_spec* run,
                   int timeout_seconds) {
  struct consumer* c = consumer_new(run);
  if (c == NULL) {
    tool_fail("async_start", "root", "out of memory for the consumer");
    return 0;
  }
  tool_stage("run \"%s\": the producer call", run->name);
  c->produce = produce;
  pthread_t caller;
  int started = pthread_create(&caller, NULL, producer_call_main, c) == 0;
  pthread_mutex_lock(&c->mu);
  if (!started) {
    finding_locked(c, R_RELEASE, "could not start the thread that calls the producer");
    pthread_mutex_unlock(&c->mu);
    return 0;
  }
  struct timespec deadline;
  clock_gettime(CLOCK_REALTIME, &deadline);
  deadline.tv_sec += timeout_seconds;
  int timed_out = 0;
  int checked = 0;
  /* Copied tasks are checked even after the release (arrow-go's consumer
   * extracts them then too). */
  while ((c->releases == 0 || c->head != NULL) && !timed_out) {
    struct copied_task* t = c->head;
    if (t != NULL) {
      c->head = t->next;
      if (c->head == NULL) c->tail = NULL;
      int want = !c->cancelled;
      pthread_mutex_unlock(&c->mu);
      extract(c, &t->task, t->index, want);
      free(t);
      pthread_mutex_lock(&c->mu);
      if (!want) continue;
      checked++;
      if (run->mode == RUN_CANCEL && checked == 1) {
        c->cancelled = 1;
        call_producer_locked(c, 0, 1);
      } else if (!c->cancelled && !c->end_seen && !c->error_seen) {
        call_producer_locked(c, 1, 0); /* from the consumer's own thread */
      }
      continue;
    }
    if (!wait_until(c, &deadline)) timed_out = 1;
  }
  /* The producer call itself must return too (a synchronous producer
   * returns once it released the handler). */
  while (!c->produce_done && wait_until(c, &deadline)) {
  }
  if (c->produce_done && c->produce_rc != 0) {
    finding_locked(c, R_ERROR, "the producer returned %d (%s)%s%s", c->produce_rc,
                   ferry_errno_name(c->produce_rc), c->error_seen ? ": " : "",
                   c->error_seen ? c->error_message : "");
  }
  int hung = 0;
  if (c->releases == 0) {
    const char* state = c->end_seen      ? "after the end marker"
                        : c->error_seen  ? "after on_error"
                        : c->schema_seen ? "while streaming"
                                         : "before on_schema";
    if (run->mode == RUN_REQUEST_BAD && c->schema_seen && !c->error_seen) {
      finding_locked(
          c, R_REQUEST,
          "request(%lld) got no on_error within %d s (the specification: n <= 0 "
          "is invalid and should be answered with on_error)",
          (long long)run->window, timeout_seconds);
    }
    /* Ask it to stop, and give it as long again. */
    if (!c->cancelled) {
      c->cancelled = 1;
      call_producer_locked(c, 0, 1);
    }
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += timeout_seconds;
    while (c->releases == 0 && wait_until(c, &deadline)) {
    }
    if (c->releases == 0) {
      finding_locked(
          c, R_RELEASE,
          "HANG: the handler was never released (%s, %lld tasks, %lld requested; "
          "waited %d s, then cancelled and waited %d s more)",
          state, (long long)c->tasks, (long long)c->requested, timeout_seconds,
          timeout_seconds);
      hung = 1;
    }
  }
  /* Tasks still copied: extracted with NULL (valid after release too). */
  while (c->head != NULL) {
    struct copied_task* t = c->head;
    c->head = t->next;
    pthread_mutex_unlock(&c->mu);
    extract(c, &t->task, t->index, 0);
    free(t);
    pthread_mutex_lock(&c->mu);
  }
  c->tail = NULL;
  if (!hung) {
    switch (run->mode) {
      case RUN_INLINE:
      case RUN_DEFERRED:
        if (!c->end_seen && !c->error_seen && c->reported == 0) {
          finding_locked(c, R_RELEASE,
                         "the handler was released after %lld tasks without "
                         "the end marker or on_error",
                         (long long)c->tasks);
        }
        break;
      case RUN_REQUEST_BAD:
        if (c->schema_seen && !c->error_seen && !(c->reported & R_REQUEST)) {
          finding_locked(c, R_REQUEST, "request(%lld) was not answered with on_error",
                         (long long)run->window);
        }
        break;
      default: break;
    }
  }
  if (!hung && !c->produce_done) {
    finding_locked(c, R_RELEASE,
                   "HANG: the producer call did not return within %d s (the handler was "
                   "released)",
                   timeout_seconds);
    hung = 1;
  }
  if (c->reported == 0) {
    tool_ok("run \"%s\": %lld tasks (%lld batches valid), %s, released once", run->name,
            (long long)c->tasks, (long long)c->batches_ok,
            c->end_seen     ? "end marker"
            : c->error_seen ? "on_error"
                            : "no end marker (cancelled or refused)");
  }
  if (c->schema.release != NULL) c->schema.release(&c->schema);
  int joinable = c->produce_done;
  pthread_mutex_unlock(&c->mu);
  if (joinable) {
    pthread_join(caller, NULL);
  } else {
    pthread_detach(caller);
  }
  /* Never freed: a broken producer may still call it (see the top). */
  return hung;
}

struct async_args {
  const char* target;
  int timeout_seconds;
};

static void check_async_child(void* arg) {
  const struct async_args* a = arg;
  char lib[4096], symbol[1024];
  if (tool_split_target(a->target, lib, sizeof lib, symbol, sizeof symbol) != 0) {
    tool_usage_error("\"%s\" is not LIB.so:SYMBOL", a->target);
    return;
  }
  async_producer_fn produce = (async_producer_fn)tool_load_symbol(lib, symbol, NULL);
  if (produce == NULL) return;
  for (int i = 0; i < N_RUNS; i++) {
    if (run_one(produce, &runs[i], a->timeout_seconds)) {
      for (int j = i + 1; j < N_RUNS; j++) {
        tool_out("SKIPPED run \"%s\": the producer hangs", runs[j].name);
      }
      break;
    }
  }
  tool_stage("end of the async check");
}

int tool_cmd_check_async(const char* target, int timeout_seconds) {
  struct async_args args = {target, timeout_seconds};
  struct tool_run_result result;
  /* The child bounds each run itself (twice the timeout at most); this is
   * the backstop for a producer that blocks the child's own thread. */
  int limit = timeout_seconds * (2 * N_RUNS + 1);
  if (tool_run_isolated(check_async_child, &args, limit, &result) != 0)
    return TOOL_EXIT_USAGE;
  char what[4200];
  snprintf(what, sizeof what, "ferry check --async %s", target);
  return tool_finish(what, &result);
}
