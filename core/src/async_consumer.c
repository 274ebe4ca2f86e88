/* The consumer side of the Async Device Stream Interface: FerryAsyncConsumer,
 * a handler that queues batches for a blocking reader (next with a timeout,
 * a readiness callback and descriptor for event loops), and the adapter that
 * turns it into an ArrowDeviceArrayStream. docs/async.md has the design.
 *
 * Locking: one mutex guards the consumer's state. It is never held while
 * ferry calls into the producer (request, cancel, extract_data) nor while it
 * calls the readiness callback, so a producer that calls back synchronously
 * (a violation ferry names) cannot deadlock it. The handler's release waits
 * for a call into the producer that is in flight on another thread, because
 * the producer's struct is only valid until it calls release.
 *
 * Lifetime: two references, the reader's (dropped by
 * ferry_async_consumer_free) and the producer's (dropped by the handler's
 * release); the memory goes with the second. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "async_internal.h"
#include "internal.h"
#include "producer.h"

/* What the sticky error of the reader came from. */
enum {
  FERRY_ERR_NONE = 0,
  FERRY_ERR_EXTRACT,   /* extract_data failed: on_error should follow */
  FERRY_ERR_PRODUCER,  /* on_error */
  FERRY_ERR_INVALID,   /* a batch or the schema failed validation */
  FERRY_ERR_VIOLATION, /* the producer broke the protocol */
};

struct FerryAsyncConsumer {
  pthread_mutex_t lock;
  pthread_cond_t cond; /* any change a waiter may care about */
  struct ArrowAsyncDeviceStreamHandler* handler;
  int64_t window;
  int32_t level;
  int refs; /* the reader's and the producer's */

  _Atomic int in_callback;     /* a handler callback is running */
  _Atomic int release_pending; /* a release overlapped a callback: its leave does it */

  /* The stream. */
  int schema_seen;
  int schema_read; /* the reader has the schema: readiness is next's now */
  struct ArrowSchema schema;
  struct FerryPreparedSchema* prepared;
  struct ArrowAsyncProducer* producer;
  ArrowDeviceType device_type;
  int64_t requested;              /* total asked of the producer */
  int64_t received;               /* tasks received (the end marker not counted) */
  int64_t taken;                  /* batches the reader took */
  struct ArrowDeviceArray* queue; /* ring of received batches */
  int64_t queue_capacity, queue_head, queue_count;
  int ended;     /* the end marker came */
  int refused;   /* a callback was refused: the producer may only release */
  int released;  /* the producer released the handler */
  int cancelled; /* the reader cancelled */
  int reader_gone;
  int producer_calls;  /* calls into the producer in flight */
  int release_waiting; /* callbacks waiting for them (release, the end) */

  int error_kind;
  int error_code;
  char error_message[FERRY_ERROR_MESSAGE_SIZE];

  int64_t violations;
  FerryFindingFn on_violation;
  void* violation_user;

  FerryAsyncNotifyFn notify;
  void* notify_user;
  _Atomic int has_notify; /* notify != NULL, read without the lock */
  int notify_calls;       /* notify callbacks in flight */

  int fd_read, fd_write; /* the readiness pipe, -1 until asked for */
  int fd_signalled;
};

/* The consumer whose producer this thread is calling into (request,
 * cancel), so that a callback arriving synchronously is named. */
static _Thread_local struct FerryAsyncConsumer* ferry_async_tl_calling;
static _Thread_local int ferry_async_tl_calling_cancel;
/* The consumer whose notify callback this thread is running. */
static _Thread_local struct FerryAsyncConsumer* ferry_async_tl_notifying;

/* ---- helpers (lock held unless said otherwise) ------------------------------ */

static int ferry_async_ready_locked(const struct FerryAsyncConsumer* c) {
  if (c->cancelled || c->error_kind != FERRY_ERR_NONE || c->ended || c->released)
    return 1;
  if (c->schema_seen && !c->schema_read) return 1;
  return c->queue_count > 0;
}

/* Keeps the pipe readable exactly while the reader would not block. */
static void ferry_async_sync_fd_locked(struct FerryAsyncConsumer* c) {
  if (c->fd_read < 0) return;
  int ready = ferry_async_ready_locked(c);
  if (ready && !c->fd_signalled) {
    char byte = 1;
    if (write(c->fd_write, &byte, 1) == 1) c->fd_signalled = 1;
  } else if (!ready && c->fd_signalled) {
    char byte;
    while (read(c->fd_read, &byte, 1) == 1) {
    }
    c->fd_signalled = 0;
  }
}

/* Wakes waiters and updates the descriptor after a state change. */
static void ferry_async_changed_locked(struct FerryAsyncConsumer* c) {
  pthread_cond_broadcast(&c->cond);
  ferry_async_sync_fd_locked(c);
}

/* Calls the readiness callback, with the lock NOT held. */
static void ferry_async_notify(struct FerryAsyncConsumer* c) {
  /* The common case, no callback, costs no lock; set_notify looks at the
   * state itself after setting one, so no event is lost. */
  if (!atomic_load_explicit(&c->has_notify, memory_order_acquire)) return;
  pthread_mutex_lock(&c->lock);
  FerryAsyncNotifyFn fn = c->notify;
  void* user = c->notify_user;
  if (fn != NULL) c->notify_calls++;
  pthread_mutex_unlock(&c->lock);
  if (fn == NULL) return;
  struct FerryAsyncConsumer* outer = ferry_async_tl_notifying;
  ferry_async_tl_notifying = c;
  fn(user);
  ferry_async_tl_notifying = outer;
  pthread_mutex_lock(&c->lock);
  c->notify_calls--;
  pthread_cond_broadcast(&c->cond);
  pthread_mutex_unlock(&c->lock);
}

/* Records the reader's sticky error, unless a more telling one is set. */
static void ferry_async_set_error_locked(struct FerryAsyncConsumer* c, int kind, int code,
                                         const char* fmt, ...) FERRY_PRINTF(4, 5);
static void ferry_async_set_error_locked(struct FerryAsyncConsumer* c, int kind, int code,
                                         const char* fmt, ...) {
  /* The producer's on_error may replace an extract_data failure (it is the
   * report the specification asks for); otherwise the first error stands. */
  if (c->error_kind != FERRY_ERR_NONE &&
      !(c->error_kind == FERRY_ERR_EXTRACT && kind == FERRY_ERR_PRODUCER)) {
    return;
  }
  c->error_kind = kind;
  c->error_code = code;
  va_list args;
  va_start(args, fmt);
  vsnprintf(c->error_message, sizeof(c->error_message), fmt, args);
  va_end(args);
  ferry_async_changed_locked(c);
}

/* A protocol violation by the producer: counted, reported, sticky EPROTO. */
static void ferry_async_violation_locked(struct FerryAsyncConsumer* c, const char* rule,
                                         const char* where, const char* what) {
  c->violations++;
  if (c->on_violation != NULL) c->on_violation(c->violation_user, rule, where, what);
  ferry_async_set_error_locked(c, FERRY_ERR_VIOLATION, EPROTO,
                               "async producer violation (%s): %s", rule, what);
}

static void ferry_async_destroy(struct FerryAsyncConsumer* c) {
  for (int64_t i = 0; i < c->queue_count; i++) {
    ferry_device_array_release(&c->queue[(c->queue_head + i) % c->queue_capacity]);
  }
  free(c->queue);
  ferry_schema_release(&c->schema);
  ferry_prepared_schema_free(c->prepared);
  if (c->fd_read >= 0) close(c->fd_read);
  if (c->fd_write >= 0) close(c->fd_write);
  pthread_cond_destroy(&c->cond);
  pthread_mutex_destroy(&c->lock);
  free(c);
}

/* Drops the queued batches into `*out` (the caller releases them without
 * the lock) and empties the queue. */
static void ferry_async_take_queue_locked(struct FerryAsyncConsumer* c,
                                          struct ArrowDeviceArray** out, int64_t* n) {
  *out = NULL;
  *n = 0;
  if (c->queue_count == 0) return;
  struct ArrowDeviceArray* arrays =
      (struct ArrowDeviceArray*)malloc((size_t)c->queue_count * sizeof(*arrays));
  for (int64_t i = 0; i < c->queue_count; i++) {
    struct ArrowDeviceArray* slot = &c->queue[(c->queue_head + i) % c->queue_capacity];
    if (arrays != NULL) {
      arrays[i] = *slot;
    } else {
      /* Out of memory: release under the lock rather than leak. */
      ferry_device_array_release(slot);
    }
    memset(slot, 0, sizeof(*slot));
  }
  *out = arrays;
  *n = arrays != NULL ? c->queue_count : 0;
  c->queue_head = 0;
  c->queue_count = 0;
}

static void ferry_async_release_arrays(struct ArrowDeviceArray* arrays, int64_t n) {
  for (int64_t i = 0; i < n; i++) ferry_device_array_release(&arrays[i]);
  free(arrays);
}

/* With the lock held: the producer to call, counted as a call in flight
 * (the handler's release waits for it), or NULL when it is gone or unknown. */
static struct ArrowAsyncProducer* ferry_async_producer_for_call_locked(
    struct FerryAsyncConsumer* c) {
  struct ArrowAsyncProducer* producer = c->released ? NULL : c->producer;
  if (producer != NULL) c->producer_calls++;
  return producer;
}

/* Calls request(n) or cancel on `producer` (from
 * ferry_async_producer_for_call_locked) with no lock held. */
static void ferry_async_call_counted(struct FerryAsyncConsumer* c,
                                     struct ArrowAsyncProducer* producer, int cancel,
                                     int64_t n) {
  if (producer == NULL) return;
  struct FerryAsyncConsumer* outer = ferry_async_tl_calling;
  int outer_cancel = ferry_async_tl_calling_cancel;
  ferry_async_tl_calling = c;
  ferry_async_tl_calling_cancel = cancel;
  if (cancel) {
    if (producer->cancel != NULL) producer->cancel(producer);
  } else if (producer->request != NULL) {
    producer->request(producer, n);
  }
  ferry_async_tl_calling = outer;
  ferry_async_tl_calling_cancel = outer_cancel;
  pthread_mutex_lock(&c->lock);
  /* Only a release waiting for this call needs waking. */
  if (--c->producer_calls == 0 && c->release_waiting) pthread_cond_broadcast(&c->cond);
  pthread_mutex_unlock(&c->lock);
}

/* Waits (lock held, released while waiting) until no request or cancel of
 * this consumer is running on another thread. The end marker and on_error
 * wait too, not only release: arrow-go's producer frees its
 * ArrowAsyncProducer as soon as its last callback returns, before it
 * releases the handler, so a request still in flight then would touch freed
 * memory. A callback arriving from inside our own request does not wait (it
 * would wait for itself). */
static void ferry_async_wait_producer_calls_locked(struct FerryAsyncConsumer* c) {
  if (ferry_async_tl_calling == c) return;
  c->release_waiting++;
  while (c->producer_calls > 0) pthread_cond_wait(&c->cond, &c->lock);
  c->release_waiting--;
}

/* The same for the end marker and on_error, bounded (one second): a
 * producer whose request waits for the very thread now delivering its last
 * callback would otherwise never return. */
static void ferry_async_wait_producer_calls_bounded_locked(struct FerryAsyncConsumer* c) {
  if (ferry_async_tl_calling == c || c->producer_calls == 0) return;
  struct timespec deadline;
  ferry__async_deadline(1000, &deadline);
  c->release_waiting++;
  while (c->producer_calls > 0) {
    if (ferry__async_wait(&c->cond, &c->lock, &deadline) == ETIMEDOUT) break;
  }
  c->release_waiting--;
}

/* Calls request(n) or cancel on the producer with no lock held; nothing
 * when the producer is gone (released) or unknown. */
static void ferry_async_call_producer(struct FerryAsyncConsumer* c, int cancel,
                                      int64_t n) {
  pthread_mutex_lock(&c->lock);
  struct ArrowAsyncProducer* producer = ferry_async_producer_for_call_locked(c);
  pthread_mutex_unlock(&c->lock);
  ferry_async_call_counted(c, producer, cancel, n);
}

/* ---- entering and leaving a handler callback ---------------------------- */

/* Returns 1 when the callback may proceed; 0 when it overlaps another one
 * or arrives from inside request (both named violations): the callback
 * then refuses without touching the stream's state. */
static int ferry_async_enter(struct FerryAsyncConsumer* c, const char* where,
                             int is_on_error) {
  if (ferry_async_tl_calling == c && !(ferry_async_tl_calling_cancel && is_on_error)) {
    pthread_mutex_lock(&c->lock);
    ferry_async_violation_locked(c, "callback_inside_request", where,
                                 ferry_async_tl_calling_cancel
                                     ? "the producer called back from inside cancel"
                                     : "the producer called back from inside request");
    c->refused = 1;
    pthread_mutex_unlock(&c->lock);
    return 0;
  }
  int expected = 0;
  if (!atomic_compare_exchange_strong(&c->in_callback, &expected, 1)) {
    pthread_mutex_lock(&c->lock);
    ferry_async_violation_locked(c, "overlapping_callbacks", where,
                                 "the producer called a handler callback while another "
                                 "was running (calls must be serialized)");
    c->refused = 1;
    pthread_mutex_unlock(&c->lock);
    return 0;
  }
  return 1;
}

static void ferry_async_do_release(struct FerryAsyncConsumer* c);

/* Runs a release that overlapped a callback, once nothing else runs: the
 * release is never lost (nothing leaks) and never frees the consumer under
 * a running callback. */
static void ferry_async_take_pending_release(struct FerryAsyncConsumer* c) {
  while (atomic_load(&c->release_pending)) {
    int expected = 0;
    if (!atomic_compare_exchange_strong(&c->in_callback, &expected, 1)) return;
    if (atomic_exchange(&c->release_pending, 0)) {
      ferry_async_do_release(c); /* may free `c` */
      return;
    }
    atomic_store(&c->in_callback, 0);
  }
}

/* Ends a callback; its last touch of `c` (a pending release may free it). */
static void ferry_async_leave(struct FerryAsyncConsumer* c) {
  atomic_store(&c->in_callback, 0);
  ferry_async_take_pending_release(c);
}

/* With the lock held: the checks every callback but release makes. Returns
 * non-zero (the callback refuses) after naming the violation. */
static int ferry_async_check_alive_locked(struct FerryAsyncConsumer* c,
                                          const char* where) {
  if (c->released) {
    ferry_async_violation_locked(c, "call_after_release", where,
                                 "the producer called the handler after releasing it");
    return EINVAL;
  }
  if (c->refused) {
    ferry_async_violation_locked(c, "call_after_refusal", where,
                                 "the producer called the handler after a callback "
                                 "refused (only release is allowed then)");
    return EINVAL;
  }
  return 0;
}

/* ---- the handler's callbacks --------------------------------------------------- */

static struct FerryAsyncConsumer* ferry_async_of(
    struct ArrowAsyncDeviceStreamHandler* self) {
  return self == NULL ? NULL : (struct FerryAsyncConsumer*)self->private_data;
}

static int ferry_async_on_schema(struct ArrowAsyncDeviceStreamHandler* self,
                                 struct ArrowSchema* schema) {
  struct FerryAsyncConsumer* c = ferry_async_of(self);
  if (c == NULL) {
    if (schema != NULL && schema->release != NULL) schema->release(schema);
    return EINVAL;
  }
  if (!ferry_async_enter(c, "on_schema", 0)) {
    if (schema != NULL && schema->release != NULL) schema->release(schema);
    return EINVAL;
  }
  int rc = 0;
  int64_t window = 0;
  pthread_mutex_lock(&c->lock);
  rc = ferry_async_check_alive_locked(c, "on_schema");
  if (rc == 0 && c->schema_seen) {
    ferry_async_violation_locked(c, "schema_twice", "on_schema",
                                 "the producer called on_schema a second time");
    rc = EINVAL;
  } else if (rc == 0 && (schema == NULL || schema->release == NULL)) {
    ferry_async_violation_locked(c, "released_schema", "on_schema",
                                 "on_schema was given a NULL or released schema");
    rc = EINVAL;
  } else if (rc == 0 && self->producer == NULL) {
    ferry_async_violation_locked(c, "no_producer", "on_schema",
                                 "handler->producer was not set before on_schema");
    rc = EINVAL;
  } else if (rc == 0 && (c->cancelled || c->reader_gone)) {
    rc = ECANCELED; /* the reader is gone: refuse the stream */
  }
  if (rc == 0) {
    c->schema = *schema;
    schema->release = NULL; /* moved */
    c->producer = self->producer;
    c->device_type = self->producer->device_type;
    c->schema_seen = 1;
    if (c->level != FERRY_VALIDATE_NONE) {
      struct FerryError error;
      ferry_error_init(&error);
      if (ferry_prepared_schema_create(&c->schema, NULL, NULL, &c->prepared, &error) !=
          FERRY_OK) {
        ferry_async_set_error_locked(c, FERRY_ERR_INVALID, EINVAL,
                                     "the stream's schema is invalid: %s", error.message);
        /* The reader gets this error, never the invalid schema. */
        ferry_schema_release(&c->schema);
        c->schema_seen = 0;
        rc = EINVAL;
      }
    }
    if (rc == 0) {
      window = c->window;
      c->requested += window;
    }
    ferry_async_changed_locked(c);
  }
  if (rc != 0) c->refused = 1;
  pthread_mutex_unlock(&c->lock);
  if (schema != NULL && schema->release != NULL) schema->release(schema);
  /* request from inside on_schema, as the specification allows. */
  if (window > 0) ferry_async_call_producer(c, 0, window);
  ferry_async_notify(c);
  ferry_async_leave(c);
  return rc;
}

/* Appends `array` to the ring, growing it; 0 or ENOMEM. */
static int ferry_async_push_locked(struct FerryAsyncConsumer* c,
                                   struct ArrowDeviceArray* array) {
  if (c->queue_count == c->queue_capacity) {
    int64_t capacity = c->queue_capacity == 0 ? 4 : 2 * c->queue_capacity;
    struct ArrowDeviceArray* ring =
        (struct ArrowDeviceArray*)malloc((size_t)capacity * sizeof(*ring));
    if (ring == NULL) return ENOMEM;
    for (int64_t i = 0; i < c->queue_count; i++) {
      ring[i] = c->queue[(c->queue_head + i) % c->queue_capacity];
    }
    free(c->queue);
    c->queue = ring;
    c->queue_capacity = capacity;
    c->queue_head = 0;
  }
  c->queue[(c->queue_head + c->queue_count) % c->queue_capacity] = *array;
  c->queue_count++;
  memset(array, 0, sizeof(*array));
  return 0;
}

static int ferry_async_on_next_task(struct ArrowAsyncDeviceStreamHandler* self,
                                    struct ArrowAsyncTask* task, const char* metadata) {
  struct FerryAsyncConsumer* c = ferry_async_of(self);
  if (c == NULL || !ferry_async_enter(c, "on_next_task", 0)) return EINVAL;
  int rc = 0;
  int discard = 0;
  pthread_mutex_lock(&c->lock);
  rc = ferry_async_check_alive_locked(c, "on_next_task");
  if (rc == 0 && !c->schema_seen) {
    ferry_async_violation_locked(c, "task_before_schema", "on_next_task",
                                 "on_next_task was called before on_schema");
    rc = EINVAL;
  } else if (rc == 0 && c->ended) {
    ferry_async_violation_locked(c, "task_after_end", "on_next_task",
                                 "on_next_task was called after the end marker");
    rc = EINVAL;
  } else if (rc == 0 && task == NULL) {
    c->ended = 1; /* from now on no request is started */
    ferry_async_changed_locked(c);
    ferry_async_wait_producer_calls_bounded_locked(c);
  } else if (rc == 0 && c->received >= c->requested) {
    char what[200];
    snprintf(what, sizeof(what),
             "the producer sent task %lld but only %lld were requested",
             (long long)(c->received + 1), (long long)c->requested);
    ferry_async_violation_locked(c, "too_many_tasks", "on_next_task", what);
    rc = EINVAL;
  } else if (rc == 0) {
    c->received++;
    /* After a cancel or an error, requested tasks may still come: take them
     * (the producer cleans up in extract_data) and drop the data. */
    discard = c->cancelled || c->reader_gone || c->error_kind != FERRY_ERR_NONE;
  }
  if (rc != 0) c->refused = 1;
  pthread_mutex_unlock(&c->lock);

  if (rc == 0 && task != NULL) {
    /* Extract on arrival, on the producer's thread: the task need not outlive
     * this call then, and the reader never calls into the producer's data
     * path. Validation waits for the reader (next). */
    struct ArrowDeviceArray array;
    memset(&array, 0, sizeof(array));
    int extracted = ferry_async_task_extract_data(task, discard ? NULL : &array);
    pthread_mutex_lock(&c->lock);
    if (extracted != 0) {
      ferry_async_set_error_locked(c, FERRY_ERR_EXTRACT, extracted,
                                   "the producer's extract_data failed with %s",
                                   ferry_errno_name(extracted));
    } else if (!discard && array.array.release == NULL) {
      ferry_async_violation_locked(c, "empty_task", "extract_data",
                                   "extract_data returned 0 but left the array released");
      rc = EINVAL;
      c->refused = 1;
    } else if (!discard) {
      if (c->cancelled || c->reader_gone) {
        discard = 1; /* cancelled while extracting */
      } else if (ferry_async_push_locked(c, &array) != 0) {
        ferry_async_set_error_locked(c, FERRY_ERR_INVALID, ENOMEM,
                                     "out of memory queueing a batch");
        discard = 1;
      } else {
        ferry_async_changed_locked(c);
      }
    }
    pthread_mutex_unlock(&c->lock);
    if (array.array.release != NULL) ferry_device_array_release(&array);
  }
  (void)metadata; /* the per-task metadata is not kept (docs/async.md) */
  ferry_async_notify(c);
  ferry_async_leave(c);
  return rc;
}

static void ferry_async_on_error(struct ArrowAsyncDeviceStreamHandler* self, int code,
                                 const char* message, const char* metadata) {
  struct FerryAsyncConsumer* c = ferry_async_of(self);
  if (c == NULL || !ferry_async_enter(c, "on_error", 1)) return;
  pthread_mutex_lock(&c->lock);
  if (c->released) {
    ferry_async_violation_locked(
        c, "call_after_release", "on_error",
        "the producer called on_error after releasing the handler");
  } else if (c->refused) {
    ferry_async_violation_locked(c, "call_after_refusal", "on_error",
                                 "the producer called on_error after a callback refused");
  } else if (c->ended) {
    ferry_async_violation_locked(c, "error_after_end", "on_error",
                                 "the producer called on_error after the end marker");
  } else if (code == 0) {
    ferry_async_violation_locked(c, "error_code_zero", "on_error",
                                 "on_error was called with code 0");
  } else if (message == NULL) {
    int first = c->error_kind == FERRY_ERR_NONE || c->error_kind == FERRY_ERR_EXTRACT;
    if (first) c->error_kind = FERRY_ERR_NONE;
    ferry_async_violation_locked(c, "null_message", "on_error",
                                 "on_error was called with a NULL message");
    if (first) {
      /* The producer's code still names the failure. */
      c->error_code = code;
      snprintf(c->error_message, sizeof(c->error_message),
               "producer error %s without a message (async producer violation "
               "(null_message): on_error was called with a NULL message)",
               ferry_errno_name(code));
    }
  } else {
    ferry_async_set_error_locked(c, FERRY_ERR_PRODUCER, code, "%s", message);
  }
  c->ended = 1; /* nothing but release may follow; no request is started */
  ferry_async_changed_locked(c);
  ferry_async_wait_producer_calls_bounded_locked(c);
  pthread_mutex_unlock(&c->lock);
  (void)metadata;
  ferry_async_notify(c);
  ferry_async_leave(c);
}

/* The work of the handler's release, with `in_callback` held by this
 * thread; drops the producer's reference last (may free `c`). */
static void ferry_async_do_release(struct FerryAsyncConsumer* c) {
  pthread_mutex_lock(&c->lock);
  if (c->released) {
    ferry_async_violation_locked(c, "release_twice", "release",
                                 "the producer released the handler twice");
    pthread_mutex_unlock(&c->lock);
    atomic_store(&c->in_callback, 0);
    return;
  }
  if (ferry_async_tl_calling == c) {
    /* release from inside our own request/cancel: waiting for that call
     * below would wait for ourselves. */
    ferry_async_violation_locked(c, "release_inside_request", "release",
                                 "the producer released the handler from inside request "
                                 "or cancel");
  } else {
    /* The producer's struct is valid only until release: let a request or
     * cancel in flight on another thread return first. */
    ferry_async_wait_producer_calls_locked(c);
  }
  if (!c->ended && !c->refused && !c->cancelled && !c->reader_gone &&
      c->error_kind == FERRY_ERR_NONE) {
    ferry_async_violation_locked(c, "release_before_end", "release",
                                 "the producer released the handler without the end "
                                 "marker or on_error");
  }
  c->released = 1;
  c->producer = NULL;
  c->handler->release = NULL; /* marked released, as for every Arrow struct */
  ferry_async_changed_locked(c);
  pthread_mutex_unlock(&c->lock);
  /* Still holding the producer's reference: tell the reader first, then
   * drop the reference as the very last touch of `c`. */
  ferry_async_notify(c);
  pthread_mutex_lock(&c->lock);
  atomic_store(&c->in_callback, 0);
  int last = --c->refs == 0;
  pthread_mutex_unlock(&c->lock);
  if (last) ferry_async_destroy(c);
}

static void ferry_async_release(struct ArrowAsyncDeviceStreamHandler* self) {
  struct FerryAsyncConsumer* c = ferry_async_of(self);
  if (c == NULL) return;
  int expected = 0;
  if (atomic_compare_exchange_strong(&c->in_callback, &expected, 1)) {
    ferry_async_do_release(c);
    return;
  }
  /* Another callback is running (on another thread, or this release comes
   * from inside it): a violation, and the release is left to it. */
  pthread_mutex_lock(&c->lock);
  ferry_async_violation_locked(c, "overlapping_callbacks", "release",
                               "the producer released the handler while another "
                               "callback was running (calls must be serialized)");
  pthread_mutex_unlock(&c->lock);
  atomic_store(&c->release_pending, 1);
  ferry_async_take_pending_release(c); /* in case it ended meanwhile */
}

/* ---- the reader's API ---------------------------------------------------- */

int ferry_async_consumer_create(int64_t window, int32_t validate_level,
                                struct ArrowAsyncDeviceStreamHandler* handler_out,
                                struct FerryAsyncConsumer** out,
                                struct FerryError* error) {
  if (out != NULL) *out = NULL;
  if (out == NULL || handler_out == NULL) {
    return ferry__set_error(error, EINVAL, "handler_out and out must not be NULL");
  }
  if (handler_out->release != NULL) {
    return ferry__set_error(error, EINVAL,
                            "handler_out is live: pass a released handler");
  }
  if (window < 1) {
    return ferry__set_error(error, EINVAL, "window must be >= 1 (got %lld)",
                            (long long)window);
  }
  if (validate_level != FERRY_VALIDATE_NONE && validate_level != FERRY_VALIDATE_DEFAULT &&
      validate_level != FERRY_VALIDATE_FULL) {
    return ferry__set_error(error, EINVAL, "unknown validation level %d",
                            (int)validate_level);
  }
  struct FerryAsyncConsumer* c = (struct FerryAsyncConsumer*)calloc(1, sizeof(*c));
  if (c == NULL) return ferry__set_error(error, ENOMEM, "out of memory for a consumer");
  if (pthread_mutex_init(&c->lock, NULL) != 0) {
    free(c);
    return ferry__set_error(error, ENOMEM, "cannot initialise the consumer's lock");
  }
  if (ferry__async_cond_init(&c->cond) != 0) {
    pthread_mutex_destroy(&c->lock);
    free(c);
    return ferry__set_error(error, ENOMEM, "cannot initialise the consumer's condition");
  }
  c->handler = handler_out;
  c->window = window;
  c->level = validate_level;
  c->refs = 2;
  c->fd_read = -1;
  c->fd_write = -1;
  atomic_init(&c->in_callback, 0);
  atomic_init(&c->release_pending, 0);
  atomic_init(&c->has_notify, 0);
  /* In the order of the fields, which the async ABI fixes: on_schema,
   * on_next_task, on_error, release, producer (the producer sets it when it
   * calls on_schema), private_data. */
  *handler_out = (struct ArrowAsyncDeviceStreamHandler){ferry_async_on_schema,
                                                        ferry_async_on_next_task,
                                                        ferry_async_on_error,
                                                        ferry_async_release,
                                                        NULL,
                                                        c};
  *out = c;
  return FERRY_OK;
}

/* The reader's error after the stream stopped, with the lock held. */
static int ferry_async_reader_error_locked(struct FerryAsyncConsumer* c,
                                           struct FerryError* error) {
  if (c->cancelled)
    return ferry__set_error(error, ECANCELED, "the consumer was cancelled");
  if (c->error_kind != FERRY_ERR_NONE) {
    return ferry__set_error(error, c->error_code, "%s", c->error_message);
  }
  return FERRY_OK;
}

/* Waits, with the lock held, until the producer's schema has come (FERRY_OK),
 * the reader has an error to report (that error), the producer ended without
 * a schema (EPROTO) or the deadline (NULL: none) passed (ETIMEDOUT, naming
 * `timeout_ms`). */
static int ferry_async_wait_schema_locked(struct FerryAsyncConsumer* c,
                                          const struct timespec* deadline,
                                          int64_t timeout_ms, struct FerryError* error) {
  while (!c->schema_seen) {
    int rc = ferry_async_reader_error_locked(c, error);
    if (rc != FERRY_OK) return rc;
    if (c->released || c->ended) {
      return ferry__set_error(error, EPROTO, "the producer ended without a schema");
    }
    if (ferry__async_wait(&c->cond, &c->lock, deadline) == ETIMEDOUT && !c->schema_seen) {
      rc = ferry_async_reader_error_locked(c, error);
      if (rc != FERRY_OK) return rc;
      return ferry__set_error(error, ETIMEDOUT,
                              "no schema from the producer within %lld ms",
                              (long long)timeout_ms);
    }
  }
  return FERRY_OK;
}

/* Locks `c` and waits for the producer's schema, for at most `timeout_ms`
 * (negative: no limit); returns as ferry_async_wait_schema_locked does, with
 * the lock held either way. */
static int ferry_async_lock_after_schema(struct FerryAsyncConsumer* c, int64_t timeout_ms,
                                         struct FerryError* error) {
  struct timespec deadline;
  int timed = ferry__async_deadline(timeout_ms, &deadline);
  pthread_mutex_lock(&c->lock);
  return ferry_async_wait_schema_locked(c, timed ? &deadline : NULL, timeout_ms, error);
}

int ferry_async_consumer_get_schema(struct FerryAsyncConsumer* c, struct ArrowSchema* out,
                                    int64_t timeout_ms, struct FerryError* error) {
  if (c == NULL || out == NULL) {
    return ferry__set_error(error, EINVAL, "the consumer and out must not be NULL");
  }
  if (out->release != NULL) return ferry__set_error(error, EINVAL, "out is live");
  int rc = ferry_async_lock_after_schema(c, timeout_ms, error);
  /* Once cancelled, the schema that came before is not handed out either. */
  if (rc == FERRY_OK && c->cancelled) rc = ferry_async_reader_error_locked(c, error);
  if (rc == FERRY_OK) {
    rc = ferry__schema_deep_copy(&c->schema, out, error);
    if (rc == FERRY_OK) {
      c->schema_read = 1;
      ferry_async_sync_fd_locked(c);
    }
  }
  pthread_mutex_unlock(&c->lock);
  return rc;
}

int ferry_async_consumer_next(struct FerryAsyncConsumer* c, struct ArrowDeviceArray* out,
                              int64_t timeout_ms, struct FerryError* error) {
  if (c == NULL || out == NULL) {
    return ferry__set_error(error, EINVAL, "the consumer and out must not be NULL");
  }
  if (out->array.release != NULL) return ferry__set_error(error, EINVAL, "out is live");
  memset(out, 0, sizeof(*out));
  struct timespec deadline;
  int timed = ferry__async_deadline(timeout_ms, &deadline);
  struct ArrowDeviceArray batch;
  memset(&batch, 0, sizeof(batch));
  int64_t index = 0;
  struct ArrowAsyncProducer* request_from = NULL;
  pthread_mutex_lock(&c->lock);
  c->schema_read = 1; /* from now on the descriptor follows next */
  int rc;
  for (;;) {
    if (c->cancelled) {
      rc = ferry__set_error(error, ECANCELED, "the consumer was cancelled");
      break;
    }
    if (c->queue_count > 0) {
      batch = c->queue[c->queue_head];
      memset(&c->queue[c->queue_head], 0, sizeof(batch));
      c->queue_head = (c->queue_head + 1) % c->queue_capacity;
      c->queue_count--;
      index = c->taken++;
      /* One more for the one taken, so the window stays full. */
      if (!c->ended && !c->released && !c->refused && c->error_kind == FERRY_ERR_NONE) {
        request_from = ferry_async_producer_for_call_locked(c);
        if (request_from != NULL) c->requested++;
      }
      rc = FERRY_OK;
      break;
    }
    rc = ferry_async_reader_error_locked(c, error);
    if (rc != FERRY_OK) break;
    if (c->ended) break; /* the end: out stays released */
    if (c->released) {
      rc = ferry__set_error(error, EPROTO, "the producer released the handler early");
      break;
    }
    if (ferry__async_wait(&c->cond, &c->lock, timed ? &deadline : NULL) == ETIMEDOUT &&
        c->queue_count == 0 && !c->ended && !c->cancelled &&
        c->error_kind == FERRY_ERR_NONE && !c->released) {
      rc = ferry__set_error(error, ETIMEDOUT, "no batch from the producer within %lld ms",
                            (long long)timeout_ms);
      break;
    }
  }
  ferry_async_sync_fd_locked(c);
  ArrowDeviceType device_type = c->device_type;
  pthread_mutex_unlock(&c->lock);
  if (rc != FERRY_OK || batch.array.release == NULL) return rc;

  ferry_async_call_counted(c, request_from, 0, 1);

  if (c->level != FERRY_VALIDATE_NONE) {
    struct FerryError finding;
    ferry_error_init(&finding);
    int invalid = FERRY_OK;
    if (batch.device_type != device_type) {
      invalid = ferry__set_error(
          &finding, EINVAL, "the batch is on %s but the producer declared %s",
          ferry_device_type_name(batch.device_type), ferry_device_type_name(device_type));
    } else {
      invalid =
          ferry_validate_prepared(c->prepared, &batch, c->level, NULL, NULL, &finding);
    }
    if (invalid != FERRY_OK) {
      ferry_device_array_release(&batch);
      pthread_mutex_lock(&c->lock);
      ferry_async_set_error_locked(c, FERRY_ERR_INVALID, EINVAL,
                                   "batch %lld is invalid: %s", (long long)index,
                                   finding.message);
      rc = ferry_async_reader_error_locked(c, error);
      pthread_mutex_unlock(&c->lock);
      /* No more data is wanted from a producer that sent a bad batch. */
      ferry_async_call_producer(c, 1, 0);
      ferry_async_notify(c);
      return rc;
    }
  }
  *out = batch;
  return FERRY_OK;
}

ArrowDeviceType ferry_async_consumer_device_type(struct FerryAsyncConsumer* c) {
  if (c == NULL) return 0;
  pthread_mutex_lock(&c->lock);
  ArrowDeviceType type = c->device_type;
  pthread_mutex_unlock(&c->lock);
  return type;
}

int ferry_async_consumer_fd(struct FerryAsyncConsumer* c) {
  if (c == NULL) return -1;
  pthread_mutex_lock(&c->lock);
  if (c->fd_read < 0) {
    int fds[2];
    if (pipe2(fds, O_NONBLOCK | O_CLOEXEC) == 0) {
      c->fd_read = fds[0];
      c->fd_write = fds[1];
      c->fd_signalled = 0;
      ferry_async_sync_fd_locked(c);
    }
  }
  int fd = c->fd_read;
  pthread_mutex_unlock(&c->lock);
  return fd;
}

/* Waits, lock held, until no notify callback runs on another thread. */
static void ferry_async_wait_notify_locked(struct FerryAsyncConsumer* c) {
  if (ferry_async_tl_notifying == c) return; /* called from inside the callback */
  while (c->notify_calls > 0) pthread_cond_wait(&c->cond, &c->lock);
}

void ferry_async_consumer_set_notify(struct FerryAsyncConsumer* c, FerryAsyncNotifyFn fn,
                                     void* user_data) {
  if (c == NULL) return;
  pthread_mutex_lock(&c->lock);
  c->notify = fn;
  c->notify_user = user_data;
  atomic_store_explicit(&c->has_notify, fn != NULL, memory_order_release);
  if (fn == NULL) ferry_async_wait_notify_locked(c);
  int ready = fn != NULL && ferry_async_ready_locked(c);
  pthread_mutex_unlock(&c->lock);
  /* Whatever happened before the callback was set is not lost. */
  if (ready) ferry_async_notify(c);
}

void ferry_async_consumer_set_on_violation(struct FerryAsyncConsumer* c,
                                           FerryFindingFn fn, void* user_data) {
  if (c == NULL) return;
  pthread_mutex_lock(&c->lock);
  c->on_violation = fn;
  c->violation_user = user_data;
  pthread_mutex_unlock(&c->lock);
}

int64_t ferry_async_consumer_violations(struct FerryAsyncConsumer* c) {
  if (c == NULL) return 0;
  pthread_mutex_lock(&c->lock);
  int64_t n = c->violations;
  pthread_mutex_unlock(&c->lock);
  return n;
}

int ferry_async_consumer_wait_released(struct FerryAsyncConsumer* c, int64_t timeout_ms) {
  if (c == NULL) return EINVAL;
  struct timespec deadline;
  int timed = ferry__async_deadline(timeout_ms, &deadline);
  pthread_mutex_lock(&c->lock);
  int rc = FERRY_OK;
  while (!c->released) {
    if (ferry__async_wait(&c->cond, &c->lock, timed ? &deadline : NULL) == ETIMEDOUT &&
        !c->released) {
      rc = ETIMEDOUT;
      break;
    }
  }
  pthread_mutex_unlock(&c->lock);
  return rc;
}

/* Stops the stream for the reader: `gone` when the reader is giving the
 * consumer up. Returns 1 when the producer should be told (cancel). */
static int ferry_async_stop_locked(struct FerryAsyncConsumer* c, int gone,
                                   struct ArrowDeviceArray** dropped,
                                   int64_t* n_dropped) {
  int was_running = !c->cancelled && !c->reader_gone && !c->ended && !c->released &&
                    !c->refused && c->error_kind == FERRY_ERR_NONE;
  if (gone) {
    c->reader_gone = 1;
  } else {
    c->cancelled = 1;
  }
  ferry_async_take_queue_locked(c, dropped, n_dropped);
  ferry_async_changed_locked(c);
  return was_running && c->schema_seen;
}

void ferry_async_consumer_cancel(struct FerryAsyncConsumer* c) {
  if (c == NULL) return;
  struct ArrowDeviceArray* dropped;
  int64_t n;
  pthread_mutex_lock(&c->lock);
  if (c->cancelled) {
    pthread_mutex_unlock(&c->lock);
    return;
  }
  int tell = ferry_async_stop_locked(c, 0, &dropped, &n);
  pthread_mutex_unlock(&c->lock);
  ferry_async_release_arrays(dropped, n);
  if (tell) ferry_async_call_producer(c, 1, 0);
  ferry_async_notify(c);
}

void ferry_async_consumer_free(struct FerryAsyncConsumer* c) {
  if (c == NULL) return;
  struct ArrowDeviceArray* dropped;
  int64_t n;
  pthread_mutex_lock(&c->lock);
  int tell = ferry_async_stop_locked(c, 1, &dropped, &n);
  c->notify = NULL;
  c->notify_user = NULL;
  atomic_store_explicit(&c->has_notify, 0, memory_order_release);
  c->on_violation = NULL;
  ferry_async_wait_notify_locked(c);
  /* The schema and its prepared form serve the reader only: give them back
   * now, not when the producer's reference goes (that may come later, on
   * its thread), so the producer's exports are released when free returns. */
  struct ArrowSchema schema = c->schema;
  memset(&c->schema, 0, sizeof(c->schema));
  struct FerryPreparedSchema* prepared = c->prepared;
  c->prepared = NULL;
  pthread_mutex_unlock(&c->lock);
  ferry_async_release_arrays(dropped, n);
  ferry_prepared_schema_free(prepared);
  if (schema.release != NULL) ferry_schema_release(&schema);
  if (tell) ferry_async_call_producer(c, 1, 0);
  pthread_mutex_lock(&c->lock);
  int last = --c->refs == 0;
  pthread_mutex_unlock(&c->lock);
  if (last) ferry_async_destroy(c);
}

/* ---- the stream adapter ------------------------------------------------------ */

static int ferry_async_stream_get_schema(void* user_data, struct ArrowSchema* out,
                                         struct FerryError* error) {
  return ferry_async_consumer_get_schema((struct FerryAsyncConsumer*)user_data, out, -1,
                                         error);
}

static int ferry_async_stream_get_next(void* user_data, struct ArrowDeviceArray* out,
                                       struct FerryError* error) {
  return ferry_async_consumer_next((struct FerryAsyncConsumer*)user_data, out, -1, error);
}

static void ferry_async_stream_release(void* user_data) {
  ferry_async_consumer_free((struct FerryAsyncConsumer*)user_data);
}

int ferry_async_consumer_to_stream(struct FerryAsyncConsumer* c, int64_t timeout_ms,
                                   struct ArrowDeviceArrayStream* out,
                                   struct FerryError* error) {
  if (c == NULL || out == NULL) {
    return ferry__set_error(error, EINVAL, "the consumer and out must not be NULL");
  }
  if (out->release != NULL) return ferry__set_error(error, EINVAL, "out is live");
  /* The stream's device type is a field consumers read at any time, so the
   * producer's must be known first: wait for on_schema. */
  int rc = ferry_async_lock_after_schema(c, timeout_ms, error);
  ArrowDeviceType device_type = c->device_type;
  pthread_mutex_unlock(&c->lock);
  if (rc != FERRY_OK) return rc;
  return ferry_array_stream_init(out, device_type, ferry_async_stream_get_schema,
                                 ferry_async_stream_get_next, ferry_async_stream_release,
                                 c, error);
}
