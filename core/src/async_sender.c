/* The producer side of the Async Device Stream Interface: FerryAsyncSender,
 * the one state machine every ferry producer (C, and each binding through
 * the raw layer) drives a consumer's handler with, and the pull-to-push
 * adapter from an ArrowDeviceArrayStream. docs/async.md has the design.
 *
 * Two locks, for the reason the specification gives: the consumer may call
 * request and cancel from inside its callbacks.
 * - call_lock serializes the handler callbacks (on_schema, on_next_task,
 *   on_error, release): it is held across each one.
 * - lock guards the demand counters and flags; it is never held across a
 *   callback, and request/cancel take only it and never call back, so they
 *   are safe from inside a callback and from any thread.
 *
 * Lifetime: the sender embeds the ArrowAsyncProducer the consumer holds, and
 * owns the state of every task it handed out. It is freed when the handler
 * has been released AND every task has been extracted, by whichever of
 * finish and the last extract_data comes second. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "async_internal.h"
#include "internal.h"
#include "thread_state.h"

enum { FERRY_TASK_FREE = 0, FERRY_TASK_OUTSTANDING = 1 };

/* One task handed to on_next_task. Task states are recycled through the
 * sender's free list rather than freed, so that a consumer that (wrongly)
 * extracts a task twice finds a state marked free and gets EINVAL instead of
 * touching freed memory; they are freed with the sender. */
struct FerryAsyncTaskState {
  struct ArrowAsyncTask task;
  struct FerryAsyncSender* sender;
  struct ArrowDeviceArray array;
  int status;
  struct FerryAsyncTaskState* next_free; /* free list (FIFO) */
  struct FerryAsyncTaskState* next_all;  /* every state, for the final free */
};

struct FerryAsyncSender {
  struct ArrowAsyncProducer producer; /* handler->producer points here */
  struct ArrowAsyncDeviceStreamHandler* handler;
  char* metadata; /* the producer's copy of additional_metadata */

  pthread_mutex_t call_lock; /* held across each handler callback */
  pthread_mutex_t lock;      /* everything below; never held across a callback */
  pthread_cond_t cond;       /* demand or a stop arrived */

  /* Total the consumer asked for (saturating). Atomic so that request, the
   * consumer's per-batch call, takes no lock unless a producer waits. */
  _Atomic int64_t requested;
  _Atomic int waiters; /* producers in a wait on `cond` */
  int64_t sent;        /* tasks handed out, or reserved by a send in progress */
  int64_t outstanding; /* tasks handed out and not yet extracted */
  int cancelled;       /* the consumer called cancel */
  int refused;         /* on_schema or on_next_task returned non-zero */
  int refused_code;
  int bad_request; /* the consumer called request(n <= 0) */
  int64_t bad_request_n;
  int schema_sent;
  int finished;        /* finish has run (the caller gave the sender up) */
  int released;        /* the handler's release has returned */
  int live;            /* still counted by ferry_live_exports */
  _Atomic int stopped; /* cancelled || refused || bad_request, for is_cancelled */
  _Atomic int blocked; /* refused || finished: nothing but release may be called */

  struct FerryAsyncTaskState* all;
  struct FerryAsyncTaskState* free_head;
  struct FerryAsyncTaskState* free_tail;
};

static void ferry_async_sender_destroy(struct FerryAsyncSender* s) {
  struct FerryAsyncTaskState* state = s->all;
  while (state != NULL) {
    struct FerryAsyncTaskState* next = state->next_all;
    free(state);
    state = next;
  }
  pthread_cond_destroy(&s->cond);
  pthread_mutex_destroy(&s->lock);
  pthread_mutex_destroy(&s->call_lock);
  free(s->metadata);
  free(s);
}

/* A task state from the free list or the heap, with `lock` held. */
static struct FerryAsyncTaskState* ferry_async_sender_take_state(
    struct FerryAsyncSender* s) {
  struct FerryAsyncTaskState* state = s->free_head;
  if (state != NULL) {
    s->free_head = state->next_free;
    if (s->free_head == NULL) s->free_tail = NULL;
    return state;
  }
  state = (struct FerryAsyncTaskState*)calloc(1, sizeof(*state));
  if (state == NULL) return NULL;
  state->sender = s;
  state->next_all = s->all;
  s->all = state;
  return state;
}

/* Puts a task state back on the free list, with `lock` held. */
static void ferry_async_sender_put_state(struct FerryAsyncSender* s,
                                         struct FerryAsyncTaskState* state) {
  state->status = FERRY_TASK_FREE;
  state->next_free = NULL;
  if (s->free_tail != NULL) {
    s->free_tail->next_free = state;
  } else {
    s->free_head = state;
  }
  s->free_tail = state;
}

/* ---- the ArrowAsyncProducer callbacks (called by the consumer) ------------- */

/* Never calls back and takes at most `lock` (never held across a callback),
 * so it is valid from inside any handler callback (the specification's
 * MUST). A stopped or finished stream ignores it. */
static void ferry_async_sender_request(struct ArrowAsyncProducer* self, int64_t n) {
  if (self == NULL || self->private_data == NULL) return;
  struct FerryAsyncSender* s = (struct FerryAsyncSender*)self->private_data;
  if (atomic_load(&s->stopped) || atomic_load(&s->blocked)) return;
  if (n <= 0) {
    pthread_mutex_lock(&s->lock);
    if (!s->cancelled && !s->refused && !s->bad_request && !s->finished) {
      /* The specification makes this a consumer error the producer reports
       * through on_error; request must not call back, so finish does. */
      s->bad_request = 1;
      s->bad_request_n = n;
      atomic_store(&s->stopped, 1);
      pthread_cond_broadcast(&s->cond);
    }
    pthread_mutex_unlock(&s->lock);
    return;
  }
  int64_t old = atomic_load(&s->requested);
  int64_t updated;
  do {
    updated = old > INT64_MAX - n ? INT64_MAX : old + n;
  } while (!atomic_compare_exchange_weak(&s->requested, &old, updated));
  /* A producer that found no demand registered as a waiter (under the lock)
   * before looking at `requested`; both sides use sequentially consistent
   * atomics, so either it sees this demand or this sees it waiting. */
  if (atomic_load(&s->waiters) > 0) {
    pthread_mutex_lock(&s->lock);
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->lock);
  }
}

/* Idempotent and thread-safe; calls nothing back. */
static void ferry_async_sender_cancel(struct ArrowAsyncProducer* self) {
  if (self == NULL || self->private_data == NULL) return;
  struct FerryAsyncSender* s = (struct FerryAsyncSender*)self->private_data;
  pthread_mutex_lock(&s->lock);
  if (!s->cancelled) {
    s->cancelled = 1;
    atomic_store(&s->stopped, 1);
    pthread_cond_broadcast(&s->cond);
  }
  pthread_mutex_unlock(&s->lock);
}

/* extract_data of every task: moves the batch out once, or releases it for
 * a NULL `out`; frees the sender when this was the last thing keeping it. */
static int ferry_async_sender_extract(struct ArrowAsyncTask* self,
                                      struct ArrowDeviceArray* out) {
  if (self == NULL || self->private_data == NULL) return EINVAL;
  struct FerryAsyncTaskState* state = (struct FerryAsyncTaskState*)self->private_data;
  struct FerryAsyncSender* s = state->sender;
  pthread_mutex_lock(&s->lock);
  if (state->status != FERRY_TASK_OUTSTANDING) {
    /* extract_data twice, or on a refused task the producer cleaned up. */
    pthread_mutex_unlock(&s->lock);
    return EINVAL;
  }
  struct ArrowDeviceArray array = state->array;
  memset(&state->array, 0, sizeof(state->array));
  ferry_async_sender_put_state(s, state);
  s->outstanding--;
  int last = s->released && s->outstanding == 0;
  /* The export is over for ferry_live_exports once it is finished and the
   * last task is out (counted down exactly once, by finish or here). */
  int count_down = s->finished && s->outstanding == 0 && s->live;
  if (count_down) s->live = 0;
  pthread_mutex_unlock(&s->lock);

  if (count_down) ferry__live_add(-1);
  if (out != NULL) {
    *out = array;
  } else if (array.array.release != NULL) {
    array.array.release(&array.array);
  }
  if (last) ferry_async_sender_destroy(s);
  return FERRY_OK;
}

/* ---- the producer's API ---------------------------------------------------- */

/* Makes a sender without touching the handler beyond setting its producer;
 * on failure the handler is untouched. */
static int ferry_async_sender_new(struct ArrowAsyncDeviceStreamHandler* handler,
                                  ArrowDeviceType device_type,
                                  const char* additional_metadata,
                                  struct FerryAsyncSender** out,
                                  struct FerryError* error) {
  int64_t size = ferry__async_metadata_size(additional_metadata);
  if (size < 0) {
    return ferry__set_error(
        error, EINVAL, "additional_metadata is malformed (a negative count or length)");
  }
  struct FerryAsyncSender* s = (struct FerryAsyncSender*)calloc(1, sizeof(*s));
  if (s == NULL)
    return ferry__set_error(error, ENOMEM, "out of memory for an async sender");
  if (size > 0) {
    s->metadata = (char*)malloc((size_t)size);
    if (s->metadata == NULL) {
      free(s);
      return ferry__set_error(error, ENOMEM, "out of memory for additional_metadata");
    }
    memcpy(s->metadata, additional_metadata, (size_t)size);
  }
  if (pthread_mutex_init(&s->call_lock, NULL) != 0) goto fail_call_lock;
  if (pthread_mutex_init(&s->lock, NULL) != 0) goto fail_lock;
  if (ferry__async_cond_init(&s->cond) != 0) goto fail_cond;
  s->handler = handler;
  s->producer.device_type = device_type;
  s->producer.request = ferry_async_sender_request;
  s->producer.cancel = ferry_async_sender_cancel;
  s->producer.additional_metadata = s->metadata;
  s->producer.private_data = s;
  atomic_init(&s->stopped, 0);
  atomic_init(&s->blocked, 0);
  atomic_init(&s->requested, 0);
  atomic_init(&s->waiters, 0);
  handler->producer = &s->producer;
  s->live = 1;
  ferry__live_add(1);
  *out = s;
  return FERRY_OK;

fail_cond:
  pthread_mutex_destroy(&s->lock);
fail_lock:
  pthread_mutex_destroy(&s->call_lock);
fail_call_lock:
  free(s->metadata);
  free(s);
  return ferry__set_error(error, ENOMEM, "cannot initialise the async sender's locks");
}

/* on_error then release, without a sender (the last resort when none can be
 * made): the handler may lack a producer then. */
static void ferry_async_fail_raw(struct ArrowAsyncDeviceStreamHandler* handler, int code,
                                 const char* message) {
  ferry_async_handler_on_error(handler, code, message, NULL);
  ferry_async_handler_release(handler);
}

int ferry_async_sender_create(struct ArrowAsyncDeviceStreamHandler* handler,
                              ArrowDeviceType device_type,
                              const char* additional_metadata,
                              struct FerryAsyncSender** out, struct FerryError* error) {
  if (out != NULL) *out = NULL;
  if (handler == NULL) return ferry__set_error(error, EINVAL, "the handler is NULL");
  if (handler->release == NULL) {
    return ferry__set_error(error, EINVAL, "the handler is released");
  }
  if (handler->on_schema == NULL || handler->on_next_task == NULL ||
      handler->on_error == NULL) {
    /* No way to tell the consumer: release is all that is left. */
    ferry_async_handler_release(handler);
    return ferry__set_error(error, EINVAL,
                            "the handler lacks on_schema, on_next_task or on_error");
  }
  int rc = FERRY_OK;
  if (out == NULL) {
    rc = ferry__set_error(error, EINVAL, "out is NULL");
  } else {
    rc = ferry_async_sender_new(handler, device_type, additional_metadata, out, error);
  }
  if (rc != FERRY_OK) {
    /* The handler is released in every outcome (docs/async.md). */
    struct FerryAsyncSender* s = NULL;
    if (ferry_async_sender_new(handler, device_type, NULL, &s, NULL) == FERRY_OK) {
      ferry_async_sender_finish(s, rc,
                                error != NULL ? error->message : "async sender failed");
    } else {
      ferry_async_fail_raw(handler, rc,
                           error != NULL ? error->message : "async sender failed");
    }
  }
  return rc;
}

static void ferry_async_sender_stop_refused(struct FerryAsyncSender* s, int code) {
  pthread_mutex_lock(&s->lock);
  if (!s->refused) {
    s->refused = 1;
    s->refused_code = code;
  }
  atomic_store(&s->stopped, 1);
  atomic_store(&s->blocked, 1);
  pthread_cond_broadcast(&s->cond);
  pthread_mutex_unlock(&s->lock);
}

int ferry_async_sender_send_schema(struct FerryAsyncSender* s, struct ArrowSchema* schema,
                                   struct FerryError* error) {
  if (s == NULL) return ferry__set_error(error, EINVAL, "the sender is NULL");
  if (schema == NULL || schema->release == NULL) {
    return ferry__set_error(error, EINVAL, "the schema is NULL or released");
  }
  pthread_mutex_lock(&s->call_lock);
  pthread_mutex_lock(&s->lock);
  int already = s->schema_sent || s->finished;
  int stopped = s->cancelled || s->refused || s->bad_request;
  if (!already) s->schema_sent = 1;
  pthread_mutex_unlock(&s->lock);
  if (already) {
    pthread_mutex_unlock(&s->call_lock);
    return ferry__set_error(error, EINVAL, "the schema was sent already");
  }
  if (stopped) {
    pthread_mutex_unlock(&s->call_lock);
    schema->release(schema);
    return ferry__set_error(error, ECANCELED, "the consumer stopped the stream");
  }
  int rc = s->handler->on_schema(s->handler, schema);
  /* The consumer must move or release the schema and never keep the
   * pointer, so one it left live is ours to release. */
  if (schema->release != NULL) schema->release(schema);
  pthread_mutex_unlock(&s->call_lock);
  if (rc != 0) {
    ferry_async_sender_stop_refused(s, rc);
    return ferry__set_error(error, rc, "the consumer's on_schema refused the schema (%s)",
                            ferry_errno_name(rc));
  }
  return FERRY_OK;
}

/* The reason the stream stopped, with `lock` held: 0 when it runs. */
static int ferry_async_sender_stop_reason(struct FerryAsyncSender* s,
                                          struct FerryError* error) {
  if (s->bad_request) {
    return ferry__set_error(error, EINVAL,
                            "the consumer called request(%lld): n must be > 0",
                            (long long)s->bad_request_n);
  }
  if (s->refused) {
    return ferry__set_error(error, ECANCELED, "the consumer refused a callback (%s)",
                            ferry_errno_name(s->refused_code));
  }
  if (s->cancelled) return ferry__set_error(error, ECANCELED, "the consumer cancelled");
  if (s->finished) return ferry__set_error(error, EINVAL, "the sender is finished");
  return FERRY_OK;
}

/* Waits for demand; with `reserve` (not NULL) takes one unit of it and an
 * outstanding task state for it, after checking that the schema went first,
 * all under one acquisition of the lock: this is the per-batch path. */
static int ferry_async_sender_await(struct FerryAsyncSender* s, int64_t timeout_ms,
                                    struct FerryAsyncTaskState** reserve,
                                    struct FerryError* error) {
  struct timespec deadline;
  int timed = 0;
  pthread_mutex_lock(&s->lock);
  int rc;
  if (reserve && !s->schema_sent) {
    pthread_mutex_unlock(&s->lock);
    return ferry__set_error(error, EINVAL, "send the schema before any batch");
  }
  for (;;) {
    rc = ferry_async_sender_stop_reason(s, error);
    if (rc != FERRY_OK) break;
    if (atomic_load(&s->requested) > s->sent) break;
    if (timeout_ms == 0) {
      rc = ferry__set_error(error, ETIMEDOUT, "no demand from the consumer (polled)");
      break;
    }
    /* The clock is read only when a wait is needed. */
    if (!timed && timeout_ms > 0) timed = ferry__async_deadline(timeout_ms, &deadline);
    atomic_fetch_add(&s->waiters, 1);
    if (atomic_load(&s->requested) > s->sent) { /* came while registering */
      atomic_fetch_sub(&s->waiters, 1);
      break;
    }
    int waited = ferry__async_wait(&s->cond, &s->lock, timed ? &deadline : NULL);
    atomic_fetch_sub(&s->waiters, 1);
    if (waited == ETIMEDOUT) {
      /* One last look: demand may have come with the deadline. */
      rc = ferry_async_sender_stop_reason(s, error);
      if (rc == FERRY_OK && atomic_load(&s->requested) <= s->sent) {
        rc = ferry__set_error(error, ETIMEDOUT,
                              "no demand from the consumer within %lld ms",
                              (long long)timeout_ms);
      }
      break;
    }
  }
  if (rc == FERRY_OK && reserve != NULL) {
    struct FerryAsyncTaskState* state = ferry_async_sender_take_state(s);
    if (state == NULL) {
      rc = ferry__set_error(error, ENOMEM, "out of memory for an async task");
    } else {
      s->sent++;
      s->outstanding++;
      /* Outstanding already, with no array yet: the consumer sees it only
       * once on_next_task hands it out. */
      state->status = FERRY_TASK_OUTSTANDING;
      state->task.extract_data = ferry_async_sender_extract;
      state->task.private_data = state;
      *reserve = state;
    }
  }
  pthread_mutex_unlock(&s->lock);
  return rc;
}

/* Gives back a reservation that will not be delivered. */
static void ferry_async_sender_unreserve(struct FerryAsyncSender* s,
                                         struct FerryAsyncTaskState* state) {
  pthread_mutex_lock(&s->lock);
  s->sent--;
  s->outstanding--;
  ferry_async_sender_put_state(s, state);
  pthread_mutex_unlock(&s->lock);
}

int ferry_async_sender_wait_demand(struct FerryAsyncSender* s, int64_t timeout_ms,
                                   struct FerryError* error) {
  if (s == NULL) return ferry__set_error(error, EINVAL, "the sender is NULL");
  return ferry_async_sender_await(s, timeout_ms, NULL, error);
}

/* Hands `array` (of the right device type) to the consumer in the task
 * reserved by ferry_async_sender_await. */
static int ferry_async_sender_deliver(struct FerryAsyncSender* s,
                                      struct FerryAsyncTaskState* state,
                                      struct ArrowDeviceArray* array,
                                      const char* metadata, struct FerryError* error) {
  /* The state is this thread's until on_next_task hands it out. */
  state->array = *array;
  memset(array, 0, sizeof(*array)); /* moved into the task */

  pthread_mutex_lock(&s->call_lock);
  /* A concurrent send may have been refused since the demand was reserved:
   * after a refusal nothing but release may reach the handler. (A cancel
   * does not stop a task already reserved: the specification lets requested
   * tasks arrive after a cancel.) */
  int refused = atomic_load(&s->blocked);
  int rc = 0;
  if (!refused) rc = s->handler->on_next_task(s->handler, &state->task, metadata);
  pthread_mutex_unlock(&s->call_lock);

  if (!refused && rc == 0) return FERRY_OK;

  /* The task was not taken: clean it up here, as Arrow C++'s producer does
   * (the consumer must not extract a task it refused). If the consumer did
   * extract it before refusing, the state is already free. */
  pthread_mutex_lock(&s->lock);
  struct ArrowDeviceArray left;
  memset(&left, 0, sizeof(left));
  if (state->status == FERRY_TASK_OUTSTANDING) {
    left = state->array;
    memset(&state->array, 0, sizeof(state->array));
    ferry_async_sender_put_state(s, state);
    s->outstanding--;
  }
  pthread_mutex_unlock(&s->lock);
  if (refused) {
    *array = left; /* not moved after all */
    return ferry__set_error(error, ECANCELED, "the consumer refused an earlier callback");
  }
  if (left.array.release != NULL) left.array.release(&left.array);
  ferry_async_sender_stop_refused(s, rc);
  return ferry__set_error(error, rc, "the consumer's on_next_task refused the task (%s)",
                          ferry_errno_name(rc));
}

/* Checks `array` for ferry_async_sender_send. */
static int ferry_async_sender_check_array(const struct FerryAsyncSender* s,
                                          const struct ArrowDeviceArray* array,
                                          struct FerryError* error) {
  if (array == NULL || array->array.release == NULL) {
    return ferry__set_error(error, EINVAL, "the array is NULL or released");
  }
  if (array->device_type != s->producer.device_type) {
    return ferry__set_error(error, EINVAL,
                            "the array is on %s but the producer declared %s",
                            ferry_device_type_name(array->device_type),
                            ferry_device_type_name(s->producer.device_type));
  }
  return FERRY_OK;
}

int ferry_async_sender_send(struct FerryAsyncSender* s, struct ArrowDeviceArray* array,
                            const char* metadata, int64_t timeout_ms,
                            struct FerryError* error) {
  if (s == NULL) return ferry__set_error(error, EINVAL, "the sender is NULL");
  FERRY_RETURN_NOT_OK(ferry_async_sender_check_array(s, array, error));
  struct FerryAsyncTaskState* state = NULL;
  FERRY_RETURN_NOT_OK(ferry_async_sender_await(s, timeout_ms, &state, error));
  return ferry_async_sender_deliver(s, state, array, metadata, error);
}

int ferry_async_sender_finish(struct FerryAsyncSender* s, int code, const char* message) {
  if (s == NULL) return EINVAL;
  pthread_mutex_lock(&s->call_lock);
  pthread_mutex_lock(&s->lock);
  if (s->finished) {
    /* A second finish: the caller broke the contract; nothing more may reach
     * the handler. The sender may be gone already, so this is best effort. */
    pthread_mutex_unlock(&s->lock);
    pthread_mutex_unlock(&s->call_lock);
    return EINVAL;
  }
  s->finished = 1;
  atomic_store(&s->blocked, 1);
  pthread_cond_broadcast(&s->cond);
  int refused = s->refused, cancelled = s->cancelled, bad_request = s->bad_request;
  int64_t bad_n = s->bad_request_n;
  int schema_sent = s->schema_sent;
  /* No task can be handed out any more: when none is outstanding, the
   * export is over before the consumer sees the release (so a consumer that
   * counts ferry_live_exports after the release sees it gone). */
  int done = s->outstanding == 0 && s->live;
  if (done) s->live = 0;
  pthread_mutex_unlock(&s->lock);
  if (done) ferry__live_add(-1);

  struct ArrowAsyncDeviceStreamHandler* handler = s->handler;
  int rc = FERRY_OK;
  if (refused || cancelled) {
    /* After a refusal only release; a cancel ends without on_error. */
  } else if (bad_request) {
    char text[160];
    snprintf(text, sizeof(text),
             "request(n) with n <= 0 (n = %lld): the consumer broke the protocol",
             (long long)bad_n);
    handler->on_error(handler, EINVAL, text, NULL);
  } else if (code != 0) {
    char fallback[64];
    if (message == NULL) {
      /* Some consumers cannot take a NULL message; give the code's name. */
      snprintf(fallback, sizeof(fallback), "producer error %s", ferry_errno_name(code));
      message = fallback;
    }
    handler->on_error(handler, code, message, NULL);
  } else if (!schema_sent) {
    handler->on_error(handler, EINVAL, "the producer ended the stream before its schema",
                      NULL);
  } else {
    rc = handler->on_next_task(handler, NULL, NULL);
  }
  handler->release(handler);
  pthread_mutex_unlock(&s->call_lock);

  pthread_mutex_lock(&s->lock);
  s->released = 1;
  int last = s->outstanding == 0;
  pthread_mutex_unlock(&s->lock);
  if (last) ferry_async_sender_destroy(s);
  return rc;
}

int ferry_async_sender_is_cancelled(const struct FerryAsyncSender* s) {
  if (s == NULL) return 1;
  return atomic_load(&((struct FerryAsyncSender*)s)->stopped) != 0;
}

void ferry_async_handler_fail(struct ArrowAsyncDeviceStreamHandler* handler, int code,
                              const char* message) {
  if (ferry_async_handler_is_released(handler)) return;
  if (code == 0) code = EINVAL; /* a failure needs a code */
  struct FerryAsyncSender* s = NULL;
  if (handler->on_error != NULL &&
      ferry_async_sender_new(handler, 0, NULL, &s, NULL) == FERRY_OK) {
    ferry_async_sender_finish(s, code, message);
  } else {
    ferry_async_fail_raw(handler, code, message);
  }
}

/* ---- pull to push ------------------------------------------------------------ */

int ferry_async_export_stream_run(struct ArrowDeviceArrayStream* stream,
                                  struct ArrowAsyncDeviceStreamHandler* handler,
                                  struct FerryError* error) {
  if (ferry_async_handler_is_released(handler)) {
    ferry_array_stream_release(stream);
    return ferry__set_error(error, EINVAL, "the handler is NULL or released");
  }
  if (stream == NULL || stream->release == NULL) {
    ferry_async_handler_fail(handler, EINVAL, "the stream is NULL or released");
    return ferry__set_error(error, EINVAL, "the stream is NULL or released");
  }
  struct FerryAsyncSender* s = NULL;
  int rc = ferry_async_sender_create(handler, stream->device_type, NULL, &s, error);
  if (rc != FERRY_OK) {
    ferry_array_stream_release(stream);
    return rc;
  }
  struct FerryError local;
  struct FerryError* err = error != NULL ? error : &local;
  ferry_error_init(err);

  struct ArrowSchema schema;
  memset(&schema, 0, sizeof(schema));
  rc = ferry_array_stream_get_schema(stream, &schema, err);
  if (rc != FERRY_OK) {
    ferry_array_stream_release(stream);
    ferry_async_sender_finish(s, rc, err->message);
    return rc;
  }
  rc = ferry_async_sender_send_schema(s, &schema, err);
  int code = 0; /* what finish tells the consumer */
  while (rc == FERRY_OK) {
    /* Pull only what the consumer asked for: reserve demand first (the
     * reservation is simply dropped when the stream ends or fails). */
    struct FerryAsyncTaskState* state = NULL;
    rc = ferry_async_sender_await(s, -1, &state, err);
    if (rc != FERRY_OK) break;
    struct ArrowDeviceArray array;
    memset(&array, 0, sizeof(array));
    rc = ferry_array_stream_get_next(stream, &array, err);
    if (rc != FERRY_OK || array.array.release == NULL) {
      ferry_async_sender_unreserve(s, state);
      if (rc != FERRY_OK) code = rc;
      break; /* a failure, or the end */
    }
    rc = ferry_async_sender_deliver(s, state, &array, NULL, err);
    ferry_device_array_release(&array); /* live only when not delivered */
  }
  ferry_array_stream_release(stream);
  if (code == 0 && rc != FERRY_OK) {
    /* Stopped by the consumer: say how, before finish gives the sender up. */
    pthread_mutex_lock(&s->lock);
    rc = ferry_async_sender_stop_reason(s, err);
    pthread_mutex_unlock(&s->lock);
    if (rc == FERRY_OK)
      rc = ferry__set_error(err, ECANCELED, "the consumer stopped the stream");
  }
  /* A stop by the consumer (a cancel, a refusal, a request(n <= 0)) is
   * reported by finish itself; only the stream's own error is passed on. */
  ferry_async_sender_finish(s, code, code != 0 ? err->message : NULL);
  if (rc == FERRY_OK) ferry_error_init(err);
  return rc;
}

struct FerryAsyncExportJob {
  struct ArrowDeviceArrayStream stream;
  struct ArrowAsyncDeviceStreamHandler* handler;
};

static void* ferry_async_export_thread(void* arg) {
  struct FerryAsyncExportJob* job = (struct FerryAsyncExportJob*)arg;
  struct ArrowDeviceArrayStream stream = job->stream;
  struct ArrowAsyncDeviceStreamHandler* handler = job->handler;
  free(job);
  (void)ferry_async_export_stream_run(&stream, handler, NULL);
  return NULL;
}

int ferry_async_export_stream(struct ArrowDeviceArrayStream* stream,
                              struct ArrowAsyncDeviceStreamHandler* handler,
                              int32_t flags, struct FerryError* error) {
  if (ferry_async_handler_is_released(handler)) {
    ferry_array_stream_release(stream);
    return ferry__set_error(error, EINVAL, "the handler is NULL or released");
  }
  int rc = FERRY_OK;
  if (stream == NULL || stream->release == NULL) {
    rc = ferry__set_error(error, EINVAL, "the stream is NULL or released");
  } else if (flags != FERRY_ASYNC_EXPORT_DEFAULT) {
    rc = ferry__set_error(error, EINVAL, "unknown flags %d for ferry_async_export_stream",
                          (int)flags);
  }
  struct FerryAsyncExportJob* job = NULL;
  if (rc == FERRY_OK) {
    job = (struct FerryAsyncExportJob*)malloc(sizeof(*job));
    if (job == NULL) rc = ferry__set_error(error, ENOMEM, "out of memory for the export");
  }
  if (rc == FERRY_OK) {
    job->stream = *stream;
    job->handler = handler;
    pthread_attr_t attr;
    pthread_t thread;
    int started = pthread_attr_init(&attr);
    if (started == 0) {
      /* Detached: the thread owns the stream and the handler until it has
       * released both, and nothing waits for it. */
      pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
      started = pthread_create(&thread, &attr, ferry_async_export_thread, job);
      pthread_attr_destroy(&attr);
    }
    if (started == 0) {
      memset(stream, 0, sizeof(*stream)); /* moved into the thread */
      return FERRY_OK;
    }
    free(job);
    rc = ferry__set_error(error, started, "cannot start the export thread (%s)",
                          ferry_errno_name(started));
  }
  ferry_array_stream_release(stream);
  ferry_async_handler_fail(handler, rc, error != NULL ? error->message : NULL);
  return rc;
}
