/* Hand-built async producers for the tests of `ferry check --async`
 * (core/test/producers/{good,bad}_async*.c): one threaded producer of three batches of
 * producer_util.h's struct<a: int32, b: utf8>, written from the
 * specification's text without ferry's async helpers, that breaks exactly
 * the rule its `struct au_defects` names. The good one (good_async.c) sets
 * none.
 *
 * Lifetime: the producer (its ArrowAsyncProducer first) is reference
 * counted: one reference for its thread, one per task handed out and not yet
 * extracted, so request, cancel and extract_data stay valid after the
 * handler's release, as shared/cases.md requires. */
#ifndef FERRY_TEST_PRODUCERS_ASYNC_UTIL_H
#define FERRY_TEST_PRODUCERS_ASYNC_UTIL_H

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ferry/arrow_c_device_abi.h"
#include "producer_util.h"

#define AU_BATCHES 3
/* The ignore_demand defect sends this many at once: far more than a checker
 * can request by checking batches meanwhile, so the overrun always shows. */
#define AU_BURST 64

struct au_defects {
  int task_before_schema; /* a task before on_schema */
  int no_producer;        /* handler->producer left NULL */
  int ignore_demand;      /* every batch at once, whatever was requested */
  int overlap;            /* the first request runs on_next_task on another thread
                             and waits for it (overlapping the consumer's on_schema) */
  int call_after_release; /* on_error after the handler's release */
  int no_release;         /* never releases the handler */
  int double_release;     /* releases the handler twice */
  int malformed;          /* batch 1's int32 child has 3 buffers */
  int null_message;       /* request(n <= 0) answered with on_error(EINVAL, NULL) */
  int ignore_bad_request; /* request(n <= 0) ignored */
  int reentrant;          /* request calls on_next_task synchronously */
  int error_after_cancel; /* cancel answered with on_error */
  int task_twice;  /* with two batches requested, the first task handed out twice */
  int synchronous; /* not a defect: produces on the calling thread, returning
                      after the release */
};

struct au_producer {
  struct ArrowAsyncProducer producer; /* first: the consumer's pointer is ours */
  struct ArrowAsyncDeviceStreamHandler* handler;
  struct au_defects d;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int refs;
  int64_t demand;
  int64_t sent;
  int cancelled;
  int bad_request;
  int overlapped;
};

struct au_task {
  struct au_producer* p;
  struct ArrowDeviceArray array;
  int handed_twice; /* the task_twice defect: this state is handed out twice */
  int extracted;
};

static inline void au_unref(struct au_producer* p) {
  pthread_mutex_lock(&p->mu);
  int left = --p->refs;
  pthread_mutex_unlock(&p->mu);
  if (left == 0) {
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
    free(p);
  }
}

static inline int au_extract(struct ArrowAsyncTask* self, struct ArrowDeviceArray* out) {
  struct au_task* task = (struct au_task*)self->private_data;
  if (task->handed_twice) {
    /* The task_twice defect: the state outlives its first extraction (a
     * consumer holding the second copy may still call), and the second
     * extraction is refused instead of moving the batch out again. */
    if (task->extracted) return EINVAL;
    task->extracted = 1;
    if (out != NULL) {
      *out = task->array;
    } else {
      task->array.array.release(&task->array.array);
    }
    memset(&task->array, 0, sizeof(task->array));
    return 0; /* the state is leaked on purpose: this producer is broken */
  }
  if (out != NULL) {
    *out = task->array;
  } else {
    task->array.array.release(&task->array.array);
  }
  struct au_producer* p = task->p;
  free(task);
  self->private_data = NULL;
  au_unref(p);
  return 0;
}

/* Builds batch `index` and calls on_next_task with it; the consumer's code. */
static inline int au_send_batch(struct au_producer* p, int64_t index) {
  struct au_task* task = (struct au_task*)calloc(1, sizeof *task);
  if (task == NULL) return ENOMEM;
  struct pu_options options = {0};
  if (p->d.malformed && index == 1) options.a_n_buffers = 3;
  if (pu_make_array(&task->array, &options, (int32_t)index) != 0) {
    free(task);
    return ENOMEM;
  }
  task->p = p;
  pthread_mutex_lock(&p->mu);
  p->refs++;
  pthread_mutex_unlock(&p->mu);
  /* task_twice: only with a second batch already requested (then the
   * consumer cannot have extracted the first inside its callback). */
  pthread_mutex_lock(&p->mu);
  int twice = p->d.task_twice && p->demand > 0 && !p->cancelled;
  if (twice) p->demand--;
  pthread_mutex_unlock(&p->mu);
  /* Marked before the first hand-out: the consumer may extract that copy on
   * its own thread before the second one is handed out. */
  task->handed_twice = twice;
  struct ArrowAsyncTask handed = {au_extract, task};
  int rc = p->handler->on_next_task(p->handler, &handed, NULL);
  twice = twice && rc == 0;
  if (twice) {
    struct ArrowAsyncTask again = {au_extract, task}; /* the same task state */
    p->d.task_twice = 0;
    rc = p->handler->on_next_task(p->handler, &again, NULL);
  }
  return rc;
}

static inline void* au_overlap_main(void* arg) {
  struct au_producer* p = (struct au_producer*)arg;
  au_send_batch(p, 0);
  return NULL;
}

static inline void au_request(struct ArrowAsyncProducer* self, int64_t n) {
  struct au_producer* p = (struct au_producer*)self;
  pthread_mutex_lock(&p->mu);
  if (n <= 0) {
    if (!p->d.ignore_bad_request) p->bad_request = 1;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    return;
  }
  p->demand += n;
  int overlap = p->d.overlap && !p->overlapped && p->sent < AU_BATCHES;
  int reentrant = p->d.reentrant && p->sent < AU_BATCHES;
  int64_t index = p->sent;
  if (overlap || reentrant) {
    p->overlapped = 1;
    p->demand--;
    p->sent++;
  }
  pthread_cond_broadcast(&p->cv);
  pthread_mutex_unlock(&p->mu);
  if (overlap) {
    /* Another thread calls on_next_task while the consumer is still inside
     * the callback that called request. */
    pthread_t thread;
    if (pthread_create(&thread, NULL, au_overlap_main, p) == 0)
      pthread_join(thread, NULL);
  } else if (reentrant) {
    au_send_batch(p, index); /* on the consumer's stack: forbidden */
  }
}

static inline void au_cancel(struct ArrowAsyncProducer* self) {
  struct au_producer* p = (struct au_producer*)self;
  pthread_mutex_lock(&p->mu);
  p->cancelled = 1;
  pthread_cond_broadcast(&p->cv);
  pthread_mutex_unlock(&p->mu);
}

static inline void* au_main(void* arg) {
  struct au_producer* p = (struct au_producer*)arg;
  struct ArrowAsyncDeviceStreamHandler* h = p->handler;
  if (p->d.task_before_schema) {
    pthread_mutex_lock(&p->mu);
    p->sent++;
    pthread_mutex_unlock(&p->mu);
    au_send_batch(p, 0);
  }
  if (!p->d.no_producer) h->producer = &p->producer;
  struct ArrowSchema schema;
  int rc = pu_make_schema(&schema);
  if (rc == 0) rc = h->on_schema(h, &schema);
  if (schema.release != NULL) schema.release(&schema);
  while (rc == 0) {
    pthread_mutex_lock(&p->mu);
    int64_t batches = p->d.ignore_demand ? AU_BURST : AU_BATCHES;
    while (!p->cancelled && !p->bad_request && p->sent < batches && p->demand == 0 &&
           !p->d.ignore_demand) {
      pthread_cond_wait(&p->cv, &p->mu);
    }
    if (p->bad_request) {
      pthread_mutex_unlock(&p->mu);
      h->on_error(h, EINVAL, p->d.null_message ? NULL : "request(n <= 0) is invalid",
                  NULL);
      break;
    }
    if (p->cancelled) {
      pthread_mutex_unlock(&p->mu);
      if (p->d.error_after_cancel) h->on_error(h, ECANCELED, "cancelled", NULL);
      break;
    }
    if (p->sent >= batches) {
      pthread_mutex_unlock(&p->mu);
      h->on_next_task(h, NULL, NULL); /* the end marker */
      break;
    }
    if (p->demand > 0) p->demand--;
    int64_t index = p->sent++;
    pthread_mutex_unlock(&p->mu);
    rc = au_send_batch(p, index);
  }
  if (!p->d.no_release) {
    h->release(h);
    if (p->d.double_release) h->release(h);
    if (p->d.call_after_release) h->on_error(h, EIO, "an error after release", NULL);
  } else {
    /* Never released: the consumer may still call request or cancel, so the
     * producer's memory stays (this fixture leaks it on purpose). */
    return NULL;
  }
  au_unref(p);
  return NULL;
}

/* Starts the producer on its own thread; 0, or an errno code after failing
 * the handler (on_error, release). */
static inline int au_produce(struct ArrowAsyncDeviceStreamHandler* handler,
                             const struct au_defects* defects) {
  struct au_producer* p = (struct au_producer*)calloc(1, sizeof *p);
  if (p == NULL) return ENOMEM;
  p->producer.device_type = ARROW_DEVICE_CPU;
  p->producer.request = au_request;
  p->producer.cancel = au_cancel;
  p->producer.private_data = p;
  p->handler = handler;
  p->d = *defects;
  p->refs = 1;
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->cv, NULL);
  if (defects->synchronous) {
    au_main(p);
    return 0;
  }
  pthread_t thread;
  int rc = pthread_create(&thread, NULL, au_main, p);
  if (rc != 0) {
    handler->producer = &p->producer;
    handler->on_error(handler, rc, "could not start the producer thread", NULL);
    handler->release(handler);
    au_unref(p);
    return rc;
  }
  pthread_detach(thread);
  return 0;
}

#endif  // FERRY_TEST_PRODUCERS_ASYNC_UTIL_H
