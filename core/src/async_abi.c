/* Raw accessors and callers of the Async Device Stream Interface's structs
 * (ArrowAsyncDeviceStreamHandler, ArrowAsyncProducer, ArrowAsyncTask), for
 * bindings that hold them by address. Each checks for NULL and released
 * structs instead of calling through a NULL pointer. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "async_internal.h"
#include "internal.h"

/* ---- handler --------------------------------------------------------------- */

/* Returns a zeroed handler the caller frees with ferry_async_handler_free. */
struct ArrowAsyncDeviceStreamHandler* ferry_async_handler_new(void) {
  return (struct ArrowAsyncDeviceStreamHandler*)calloc(
      1, sizeof(struct ArrowAsyncDeviceStreamHandler));
}

/* Takes ownership of `handler`; releases it first if it is still live. */
void ferry_async_handler_free(struct ArrowAsyncDeviceStreamHandler* handler) {
  ferry_async_handler_release(handler);
  free(handler);
}

/* Borrows `handler`. */
int ferry_async_handler_is_released(const struct ArrowAsyncDeviceStreamHandler* handler) {
  return handler == NULL || handler->release == NULL;
}

/* Borrows `handler`; the producer belongs to the producer. */
struct ArrowAsyncProducer* ferry_async_handler_producer(
    const struct ArrowAsyncDeviceStreamHandler* handler) {
  return handler == NULL ? NULL : handler->producer;
}

/* Hands `schema` to the consumer, which owns it after the call. */
int ferry_async_handler_on_schema(struct ArrowAsyncDeviceStreamHandler* handler,
                                  struct ArrowSchema* schema) {
  if (ferry_async_handler_is_released(handler) || handler->on_schema == NULL ||
      schema == NULL || schema->release == NULL) {
    return EINVAL;
  }
  int rc = handler->on_schema(handler, schema);
  /* The consumer must move or release the schema, never keep the pointer; a
   * schema it left live would leak, so it is released here. */
  if (schema->release != NULL) schema->release(schema);
  return rc;
}

/* Borrows everything for the call. */
int ferry_async_handler_on_next_task(struct ArrowAsyncDeviceStreamHandler* handler,
                                     struct ArrowAsyncTask* task, const char* metadata) {
  if (ferry_async_handler_is_released(handler) || handler->on_next_task == NULL) {
    return EINVAL;
  }
  return handler->on_next_task(handler, task, metadata);
}

/* Borrows everything for the call. */
void ferry_async_handler_on_error(struct ArrowAsyncDeviceStreamHandler* handler, int code,
                                  const char* message, const char* metadata) {
  if (ferry_async_handler_is_released(handler) || handler->on_error == NULL) return;
  handler->on_error(handler, code, message, metadata);
}

/* Releases a live handler; the caller keeps the struct's memory. */
void ferry_async_handler_release(struct ArrowAsyncDeviceStreamHandler* handler) {
  if (ferry_async_handler_is_released(handler)) return;
  /* Not touched afterwards: a consumer may free the handler's memory in its
   * own release. A conforming release marks the handler released. */
  handler->release(handler);
}

/* ---- producer -------------------------------------------------------------- */

/* Borrows `producer`. */
ArrowDeviceType ferry_async_producer_device_type(
    const struct ArrowAsyncProducer* producer) {
  return producer == NULL ? 0 : producer->device_type;
}

/* Borrows `producer`. */
void ferry_async_producer_request(struct ArrowAsyncProducer* producer, int64_t n) {
  if (producer == NULL || producer->request == NULL) return;
  producer->request(producer, n);
}

/* Borrows `producer`. */
void ferry_async_producer_cancel(struct ArrowAsyncProducer* producer) {
  if (producer == NULL || producer->cancel == NULL) return;
  producer->cancel(producer);
}

/* Borrows `producer`; the blob belongs to the producer. */
const char* ferry_async_producer_additional_metadata(
    const struct ArrowAsyncProducer* producer) {
  return producer == NULL ? NULL : producer->additional_metadata;
}

/* ---- task ------------------------------------------------------------------ */

/* Returns a zeroed task the caller frees with ferry_async_task_free. */
struct ArrowAsyncTask* ferry_async_task_new(void) {
  return (struct ArrowAsyncTask*)calloc(1, sizeof(struct ArrowAsyncTask));
}

/* Takes ownership of `task`; a task not yet extracted lets its producer
 * clean up first. */
void ferry_async_task_free(struct ArrowAsyncTask* task) {
  if (!ferry_async_task_is_released(task))
    (void)ferry_async_task_extract_data(task, NULL);
  free(task);
}

/* Borrows `task`. */
int ferry_async_task_is_released(const struct ArrowAsyncTask* task) {
  return task == NULL || task->extract_data == NULL;
}

/* Passes the right to extract from `src` to `dst`. */
int ferry_async_task_move(struct ArrowAsyncTask* src, struct ArrowAsyncTask* dst) {
  if (ferry_async_task_is_released(src) || dst == NULL || dst->extract_data != NULL) {
    return EINVAL;
  }
  *dst = *src;
  src->extract_data = NULL;
  src->private_data = NULL;
  return FERRY_OK;
}

/* Extracts once; `out` (may be NULL) is the caller's on success. */
int ferry_async_task_extract_data(struct ArrowAsyncTask* task,
                                  struct ArrowDeviceArray* out) {
  if (ferry_async_task_is_released(task)) return EINVAL;
  if (out != NULL && out->array.release != NULL) return EINVAL;
  /* The producer may free the task's memory inside extract_data, so the
   * task is marked extracted before the call and the call works on a copy
   * (the specification lets a consumer copy a task). */
  struct ArrowAsyncTask copy = *task;
  task->extract_data = NULL;
  task->private_data = NULL;
  if (out != NULL) memset(out, 0, sizeof(*out));
  int rc = copy.extract_data(&copy, out);
  if (rc != FERRY_OK && out != NULL && out->array.release != NULL) {
    out->array.release(&out->array);
    memset(out, 0, sizeof(*out));
  }
  return rc;
}

/* ---- shared helpers (async_internal.h) ------------------------------------- */

int ferry__async_cond_init(pthread_cond_t* cond) {
  pthread_condattr_t attr;
  int rc = pthread_condattr_init(&attr);
  if (rc != 0) return rc;
  rc = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
  if (rc == 0) rc = pthread_cond_init(cond, &attr);
  pthread_condattr_destroy(&attr);
  return rc;
}

int ferry__async_deadline(int64_t timeout_ms, struct timespec* deadline) {
  if (timeout_ms < 0) return 0;
  clock_gettime(CLOCK_MONOTONIC, deadline);
  /* Cap at about 30 years so the arithmetic cannot overflow time_t. */
  if (timeout_ms > (int64_t)1000 * 1000 * 1000 * 1000)
    timeout_ms = (int64_t)1000 * 1000 * 1000 * 1000;
  deadline->tv_sec += (time_t)(timeout_ms / 1000);
  deadline->tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
  if (deadline->tv_nsec >= 1000000000L) {
    deadline->tv_sec += 1;
    deadline->tv_nsec -= 1000000000L;
  }
  return 1;
}

int ferry__async_wait(pthread_cond_t* cond, pthread_mutex_t* mutex,
                      const struct timespec* deadline) {
  if (deadline == NULL) {
    pthread_cond_wait(cond, mutex);
    return 0;
  }
  int rc = pthread_cond_timedwait(cond, mutex, deadline);
  return rc == ETIMEDOUT ? ETIMEDOUT : 0;
}

static int32_t ferry_async_read_int32(const char* p) {
  int32_t v;
  memcpy(&v, p, sizeof(v));
  return v;
}

int64_t ferry__async_metadata_size(const char* metadata) {
  if (metadata == NULL) return 0;
  int32_t n = ferry_async_read_int32(metadata);
  if (n < 0) return -1;
  int64_t size = 4;
  for (int64_t i = 0; i < 2 * (int64_t)n; i++) {
    int32_t length = ferry_async_read_int32(metadata + size);
    if (length < 0) return -1;
    size += 4 + (int64_t)length;
    if (size > INT32_MAX) return -1;
  }
  return size;
}
