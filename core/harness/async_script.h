/* A scripted async producer, for the tests of checking consumers (the
 * conformance suite's async-strict area, the C plugin's async tests): it
 * hands a handler the batches of a source stream exactly when the test says,
 * so that a test can break one rule of the protocol on purpose. Header-only
 * (static inline functions), so a test binary needs no other archive for it. */
#ifndef FERRY_HARNESS_ASYNC_SCRIPT_H
#define FERRY_HARNESS_ASYNC_SCRIPT_H

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ferry/ferry.h"

struct it_script {
  struct ArrowAsyncProducer producer; /* first: request and cancel cast back */
  struct ArrowAsyncDeviceStreamHandler* handler;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int64_t demand;
  int cancelled;
  int reentrant; /* the next request calls the end marker synchronously */
  struct ArrowDeviceArrayStream source; /* the batches handed out: the test's to fill */
};

struct it_script_task {
  struct ArrowDeviceArray array;
};

static inline int it_script_extract(struct ArrowAsyncTask* self,
                                    struct ArrowDeviceArray* out) {
  struct it_script_task* task = self->private_data;
  if (out != NULL) {
    *out = task->array;
  } else {
    ferry_device_array_release(&task->array);
  }
  free(task);
  return 0;
}

static inline void it_script_request(struct ArrowAsyncProducer* self, int64_t n) {
  struct it_script* s = (struct it_script*)self;
  pthread_mutex_lock(&s->mu);
  s->demand += n;
  pthread_cond_broadcast(&s->cv);
  int reentrant = s->reentrant;
  s->reentrant = 0;
  pthread_mutex_unlock(&s->mu);
  if (reentrant) s->handler->on_next_task(s->handler, NULL, NULL);
}

static inline void it_script_cancel(struct ArrowAsyncProducer* self) {
  struct it_script* s = (struct it_script*)self;
  pthread_mutex_lock(&s->mu);
  s->cancelled = 1;
  pthread_cond_broadcast(&s->cv);
  pthread_mutex_unlock(&s->mu);
}

/* Makes `s` the CPU producer of `handler` (handler->producer is set); the
 * caller then exports the batches into s->source. */
static inline void it_script_init(struct it_script* s,
                                  struct ArrowAsyncDeviceStreamHandler* handler) {
  memset(s, 0, sizeof *s);
  s->producer.device_type = ARROW_DEVICE_CPU;
  s->producer.request = it_script_request;
  s->producer.cancel = it_script_cancel;
  s->handler = handler;
  pthread_mutex_init(&s->mu, NULL);
  pthread_cond_init(&s->cv, NULL);
  handler->producer = &s->producer;
}

/* Releases the source and the lock (the handler is the test's). */
static inline void it_script_free(struct it_script* s) {
  ferry_array_stream_release(&s->source);
  pthread_cond_destroy(&s->cv);
  pthread_mutex_destroy(&s->mu);
}

/* The source's schema through on_schema: on_schema's code, or -1 when the
 * source has no schema to give. */
static inline int it_script_schema(struct it_script* s) {
  struct ArrowSchema schema;
  memset(&schema, 0, sizeof schema);
  if (s->source.get_schema(&s->source, &schema) != 0) return -1;
  int rc = s->handler->on_schema(s->handler, &schema);
  if (schema.release != NULL) schema.release(&schema);
  return rc;
}

/* Waits at most `seconds` until `wanted` holds (demand: a request; else a
 * cancel); returns whether it does, taking one demand when it was wanted.
 * A cancel ends a wait for demand too. */
static inline int it_script_wait(struct it_script* s, int demand, int seconds) {
  struct timespec deadline;
  clock_gettime(CLOCK_REALTIME, &deadline);
  deadline.tv_sec += seconds;
  pthread_mutex_lock(&s->mu);
  while (!s->cancelled && !(demand && s->demand > 0)) {
    if (pthread_cond_timedwait(&s->cv, &s->mu, &deadline) == ETIMEDOUT) break;
  }
  int got = demand ? s->demand > 0 && !s->cancelled : s->cancelled;
  if (got && demand) s->demand--;
  pthread_mutex_unlock(&s->mu);
  return got;
}

static inline int it_script_wait_demand(struct it_script* s, int seconds) {
  return it_script_wait(s, 1, seconds);
}

static inline int it_script_wait_cancel(struct it_script* s, int seconds) {
  return it_script_wait(s, 0, seconds);
}

/* The next batch of the source as a task: the consumer's code, or -1 when
 * the source has no batch to give. */
static inline int it_script_task(struct it_script* s) {
  struct it_script_task* task = calloc(1, sizeof *task);
  if (task == NULL) return -1;
  if (s->source.get_next(&s->source, &task->array) != 0 ||
      task->array.array.release == NULL) {
    free(task);
    return -1;
  }
  struct ArrowAsyncTask handed = {it_script_extract, task};
  return s->handler->on_next_task(s->handler, &handed, NULL);
}

#endif  // FERRY_HARNESS_ASYNC_SCRIPT_H
