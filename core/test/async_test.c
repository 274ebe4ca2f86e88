/* Tests of the Async Device Stream Interface in the core (async_abi.c,
 * async_sender.c, async_consumer.c): the producer state machine against a
 * recording consumer, ferry's consumer against ferry's producer (cpu and
 * sim, windows 1 and 4, on threads), the pull-to-push adapter and the
 * stream adapter, readiness (fd and callback), cancel, errors both ways, and
 * hostile producers and consumers. Synchronization is by the API's own
 * blocking calls and joins, never by sleeping. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ferry/ferry.h"
#include "ferry_test.h"
#include "struct_fill.h"

/* ---- batches ------------------------------------------------------------- */

/* Live batches made by this file (made minus released), to prove every one
 * is released exactly once. */
static _Atomic int64_t live_batches;

struct BatchData {
  int32_t host[4];
  void* device_ptr; /* sim memory, or NULL on the CPU */
  struct FerryDevice* device;
};

static void batch_release(void* user_data) {
  struct BatchData* data = (struct BatchData*)user_data;
  if (data->device_ptr != NULL)
    ferry_device_deallocate(data->device, data->device_ptr, NULL);
  free(data);
  atomic_fetch_sub(&live_batches, 1);
}

/* An int32 batch [first, first+1, first+2, first+3] on the CPU or on sim
 * device 0 (written by an asynchronous copy, with a sync event). */
static int make_batch(ArrowDeviceType type, int32_t first, struct ArrowDeviceArray* out) {
  struct BatchData* data = (struct BatchData*)calloc(1, sizeof(*data));
  if (data == NULL) return ENOMEM;
  for (int i = 0; i < 4; i++) data->host[i] = first + i;
  struct FerryError error;
  ferry_error_init(&error);
  const void* buffers[2] = {NULL, data->host};
  void* stream = NULL;
  if (type == ARROW_DEVICE_EXT_DEV) {
    struct FerryDevice* cpu = NULL;
    if (ferry_device_resolve(ARROW_DEVICE_EXT_DEV, 0, &data->device, &error) != 0 ||
        ferry_device_resolve(ARROW_DEVICE_CPU, -1, &cpu, &error) != 0 ||
        ferry_device_allocate(data->device, 16, &data->device_ptr, &error) != 0 ||
        ferry_device_stream_create(data->device, &stream, &error) != 0 ||
        ferry_device_memcpy(data->device, data->device_ptr, cpu, data->host, 16, stream,
                            &error) != 0) {
      printf("sim batch: %s\n", error.message);
      return EIO;
    }
    buffers[1] = data->device_ptr;
  }
  struct ArrowArray array;
  memset(&array, 0, sizeof(array));
  int rc = ferry_array_init(&array, 4, 0, 0, 2, buffers, 0, batch_release, data, &error);
  if (rc != 0) return rc;
  atomic_fetch_add(&live_batches, 1);
  memset(out, 0, sizeof(*out));
  if (type == ARROW_DEVICE_EXT_DEV) {
    rc = ferry_device_array_init_async(out, &array, data->device, stream,
                                       FERRY_SYNC_RECORD_EVENT, &error);
    ferry_device_stream_destroy(data->device, stream, NULL);
  } else {
    rc = ferry_device_array_init(out, &array, ARROW_DEVICE_CPU, -1, NULL, NULL, NULL,
                                 &error);
  }
  if (rc != 0) {
    printf("batch: %s\n", error.message);
    array.release(&array);
  }
  return rc;
}

/* First value of a batch, after waiting on its sync event (sim memory reads
 * as poison before). */
static int32_t first_value(struct ArrowDeviceArray* batch) {
  struct FerryError error;
  if (ferry_device_array_wait(batch, NULL, &error) != 0) {
    printf("wait: %s\n", error.message);
    return -1;
  }
  const int32_t* values = (const int32_t*)ferry_array_buffer(&batch->array, 1);
  return values == NULL ? -1 : values[0];
}

static int make_schema(struct ArrowSchema* out) {
  memset(out, 0, sizeof(*out));
  return ferry_schema_init(out, "i", "values", 0, 0, NULL);
}

/* Creates a CPU sender in front of `handler` and sends it the test schema
 * (moved in whether accepted or refused); returns send_schema's result. */
static int start_sender(struct ArrowAsyncDeviceStreamHandler* handler,
                        struct FerryAsyncSender** s, struct FerryError* error) {
  *s = NULL;
  CHECK_EQ_INT(0, ferry_async_sender_create(handler, ARROW_DEVICE_CPU, NULL, s, error));
  struct ArrowSchema schema;
  make_schema(&schema);
  int rc = ferry_async_sender_send_schema(*s, &schema, error);
  CHECK(schema.release == NULL);
  return rc;
}

/* ---- a producer on a thread, over FerryAsyncSender ------------------------- */

struct Producer {
  struct ArrowAsyncDeviceStreamHandler* handler;
  ArrowDeviceType type;
  int n;
  int fail_at; /* finish with fail_code at this batch (-1: never) */
  int fail_code;
  const char* fail_message;
  int result; /* the first non-zero sender result */
  int sent;
  int finish_rc;
  pthread_t thread;
};

static void* producer_main(void* arg) {
  struct Producer* p = (struct Producer*)arg;
  struct FerryAsyncSender* s = NULL;
  struct FerryError error;
  p->result = ferry_async_sender_create(p->handler, p->type, NULL, &s, &error);
  if (p->result != 0) return NULL;
  struct ArrowSchema schema;
  make_schema(&schema);
  p->result = ferry_async_sender_send_schema(s, &schema, &error);
  for (int i = 0; p->result == 0 && i < p->n; i++) {
    if (i == p->fail_at) {
      p->finish_rc = ferry_async_sender_finish(s, p->fail_code, p->fail_message);
      return NULL;
    }
    struct ArrowDeviceArray batch;
    if (make_batch(p->type, 10 * i, &batch) != 0) {
      p->result = EIO;
      break;
    }
    p->result = ferry_async_sender_send(s, &batch, NULL, -1, &error);
    if (p->result != 0) {
      ferry_device_array_release(&batch); /* still ours when not sent */
    } else {
      p->sent++;
    }
  }
  p->finish_rc = ferry_async_sender_finish(s, 0, NULL);
  return NULL;
}

static void start_producer(struct Producer* p,
                           struct ArrowAsyncDeviceStreamHandler* handler,
                           ArrowDeviceType type, int n) {
  memset(&p->thread, 0, sizeof(p->thread));
  p->handler = handler;
  p->type = type;
  p->n = n;
  p->fail_at = -1;
  p->result = 0;
  p->sent = 0;
  p->finish_rc = 0;
  pthread_create(&p->thread, NULL, producer_main, p);
}

/* ---- ferry's consumer against ferry's producer ------------------------------ */

static void round_trip(ArrowDeviceType type, int64_t window, int n) {
  int64_t base_exports = ferry_live_exports();
  int64_t base_batches = atomic_load(&live_batches);
  struct ArrowAsyncDeviceStreamHandler handler;
  memset(&handler, 0, sizeof(handler));
  struct FerryAsyncConsumer* c = NULL;
  struct FerryError error;
  CHECK_EQ_INT(0, ferry_async_consumer_create(window, FERRY_VALIDATE_DEFAULT, &handler,
                                              &c, &error));
  struct Producer p;
  memset(&p, 0, sizeof(p));
  start_producer(&p, &handler, type, n);

  struct ArrowSchema schema;
  memset(&schema, 0, sizeof(schema));
  CHECK_EQ_INT(0, ferry_async_consumer_get_schema(c, &schema, -1, &error));
  CHECK_STR("i", schema.format);
  ferry_schema_release(&schema);
  CHECK_EQ_INT(type, ferry_async_consumer_device_type(c));
  for (int i = 0; i < n; i++) {
    struct ArrowDeviceArray batch;
    memset(&batch, 0, sizeof(batch));
    CHECK_EQ_INT(0, ferry_async_consumer_next(c, &batch, -1, &error));
    CHECK(!ferry_device_array_is_released(&batch));
    CHECK_EQ_INT(type, batch.device_type);
    CHECK_EQ_INT(10 * i, first_value(&batch));
    ferry_device_array_release(&batch);
  }
  struct ArrowDeviceArray end;
  memset(&end, 0, sizeof(end));
  CHECK_EQ_INT(0, ferry_async_consumer_next(c, &end, -1, &error));
  CHECK(ferry_device_array_is_released(&end));
  CHECK_EQ_INT(0, ferry_async_consumer_next(c, &end, 0, &error)); /* the end stays */
  CHECK(ferry_device_array_is_released(&end));
  CHECK_EQ_INT(0, ferry_async_consumer_wait_released(c, -1));
  pthread_join(p.thread, NULL);
  CHECK_EQ_INT(0, p.result);
  CHECK_EQ_INT(n, p.sent);
  CHECK_EQ_INT(0, ferry_async_consumer_violations(c));
  ferry_async_consumer_free(c);
  CHECK_EQ_INT(base_batches, atomic_load(&live_batches));
  CHECK_EQ_INT(base_exports, ferry_live_exports());
}

FERRY_TEST(round_trip_cpu_window_1) { round_trip(ARROW_DEVICE_CPU, 1, 20); }
FERRY_TEST(round_trip_cpu_window_4) { round_trip(ARROW_DEVICE_CPU, 4, 20); }
FERRY_TEST(round_trip_sim_window_1) { round_trip(ARROW_DEVICE_EXT_DEV, 1, 10); }
FERRY_TEST(round_trip_sim_window_4) { round_trip(ARROW_DEVICE_EXT_DEV, 4, 10); }
FERRY_TEST(round_trip_many_batches_on_threads) { round_trip(ARROW_DEVICE_CPU, 3, 2000); }

struct SharedSender {
  struct FerryAsyncSender* s;
  int sent;
  int result;
};

static void* shared_sender_main(void* arg) {
  struct SharedSender* ss = (struct SharedSender*)arg;
  for (int i = 0; i < 50; i++) {
    struct ArrowDeviceArray batch;
    if (make_batch(ARROW_DEVICE_CPU, 0, &batch) != 0) break;
    int rc = ferry_async_sender_send(ss->s, &batch, NULL, -1, NULL);
    if (rc != 0) {
      ferry_device_array_release(&batch);
      ss->result = rc;
      break;
    }
    ss->sent++;
  }
  return NULL;
}

FERRY_TEST(one_sender_shared_by_four_threads_stays_serialized_and_within_demand) {
  struct ArrowAsyncDeviceStreamHandler handler = {0};
  struct FerryAsyncConsumer* c = NULL;
  struct FerryError error;
  CHECK_EQ_INT(
      0, ferry_async_consumer_create(3, FERRY_VALIDATE_DEFAULT, &handler, &c, NULL));
  struct FerryAsyncSender* s = NULL;
  CHECK_EQ_INT(0, start_sender(&handler, &s, NULL));
  struct SharedSender senders[4];
  pthread_t threads[4];
  for (int i = 0; i < 4; i++) {
    senders[i] = (struct SharedSender){s, 0, 0};
    pthread_create(&threads[i], NULL, shared_sender_main, &senders[i]);
  }
  for (int i = 0; i < 200; i++) {
    struct ArrowDeviceArray batch = {0};
    CHECK_EQ_INT(0, ferry_async_consumer_next(c, &batch, -1, &error));
    CHECK(!ferry_device_array_is_released(&batch));
    ferry_device_array_release(&batch);
  }
  for (int i = 0; i < 4; i++) {
    pthread_join(threads[i], NULL);
    CHECK_EQ_INT(0, senders[i].result);
    CHECK_EQ_INT(50, senders[i].sent);
  }
  CHECK_EQ_INT(0, ferry_async_sender_finish(s, 0, NULL));
  struct ArrowDeviceArray end = {0};
  CHECK_EQ_INT(0, ferry_async_consumer_next(c, &end, -1, &error));
  CHECK(ferry_device_array_is_released(&end));
  CHECK_EQ_INT(0, ferry_async_consumer_violations(c)); /* no overlap, no overrun */
  ferry_async_consumer_free(c);
}

FERRY_TEST(producer_error_reaches_every_later_read) {
  struct ArrowAsyncDeviceStreamHandler handler = {0};
  struct FerryAsyncConsumer* c = NULL;
  struct FerryError error;
  CHECK_EQ_INT(
      0, ferry_async_consumer_create(2, FERRY_VALIDATE_DEFAULT, &handler, &c, NULL));
  struct Producer p;
  memset(&p, 0, sizeof(p));
  p.handler = &handler;
  p.type = ARROW_DEVICE_CPU;
  p.n = 5;
  p.fail_at = 2;
  p.fail_code = EIO;
  p.fail_message = "injected failure at get_next 3";
  pthread_create(&p.thread, NULL, producer_main, &p);
  for (int i = 0; i < 2; i++) {
    struct ArrowDeviceArray batch = {0};
    CHECK_EQ_INT(0, ferry_async_consumer_next(c, &batch, -1, &error));
    ferry_device_array_release(&batch);
  }
  for (int i = 0; i < 2; i++) {
    struct ArrowDeviceArray batch = {0};
    CHECK_EQ_INT(EIO, ferry_async_consumer_next(c, &batch, -1, &error));
    CHECK_STR("injected failure at get_next 3", error.message);
    CHECK(ferry_device_array_is_released(&batch));
  }
  pthread_join(p.thread, NULL);
  CHECK_EQ_INT(0, ferry_async_consumer_wait_released(c, -1));
  CHECK_EQ_INT(0, ferry_async_consumer_violations(c));
  ferry_async_consumer_free(c);
}

FERRY_TEST(consumer_cancel_mid_stream_stops_the_producer_without_error) {
  int64_t base_batches = atomic_load(&live_batches);
  struct ArrowAsyncDeviceStreamHandler handler = {0};
  struct FerryAsyncConsumer* c = NULL;
  struct FerryError error;
  CHECK_EQ_INT(
      0, ferry_async_consumer_create(4, FERRY_VALIDATE_DEFAULT, &handler, &c, NULL));
  struct Producer p;
  start_producer(&p, &handler, ARROW_DEVICE_CPU, 1000000);
  for (int i = 0; i < 3; i++) {
    struct ArrowDeviceArray batch = {0};
    CHECK_EQ_INT(0, ferry_async_consumer_next(c, &batch, -1, &error));
    ferry_device_array_release(&batch);
  }
  ferry_async_consumer_cancel(c);
  ferry_async_consumer_cancel(c); /* idempotent */
  struct ArrowDeviceArray batch = {0};
  CHECK_EQ_INT(ECANCELED, ferry_async_consumer_next(c, &batch, -1, &error));
  CHECK_EQ_INT(0, ferry_async_consumer_wait_released(c, -1));
  pthread_join(p.thread, NULL);
  CHECK_EQ_INT(ECANCELED, p.result);
  CHECK(p.sent < 1000000);
  CHECK_EQ_INT(0, ferry_async_consumer_violations(c)); /* no on_error after cancel */
  ferry_async_consumer_free(c);
  CHECK_EQ_INT(base_batches, atomic_load(&live_batches));
}

FERRY_TEST(consumer_free_while_running_cancels_and_memory_follows_the_release) {
  int64_t base_batches = atomic_load(&live_batches);
  struct ArrowAsyncDeviceStreamHandler handler = {0};
  struct FerryAsyncConsumer* c = NULL;
  CHECK_EQ_INT(
      0, ferry_async_consumer_create(2, FERRY_VALIDATE_DEFAULT, &handler, &c, NULL));
  struct Producer p;
  start_producer(&p, &handler, ARROW_DEVICE_CPU, 1000000);
  struct ArrowSchema schema = {0};
  CHECK_EQ_INT(0, ferry_async_consumer_get_schema(c, &schema, -1, NULL));
  ferry_schema_release(&schema);
  ferry_async_consumer_free(c); /* the producer still holds the handler */
  pthread_join(p.thread, NULL); /* it stops, and its release frees the rest */
  CHECK_EQ_INT(ECANCELED, p.result);
  CHECK(ferry_async_handler_is_released(&handler));
  CHECK_EQ_INT(base_batches, atomic_load(&live_batches));
}

/* ---- a recording consumer, to judge the producer side ----------------------- */

#define MAX_TASKS 64

/* What the recording consumer does, set before the stream starts. */
struct RecOptions {
  int64_t request_in_schema; /* request from inside on_schema (0: none) */
  int request_per_task;      /* request(1) from inside each on_next_task */
  int refuse_at;             /* refuse task number refuse_at (1-based; 0 never) */
  int refuse_schema;
  int defer;     /* keep tasks to extract later, like arrow-go */
  int cancel_at; /* cancel from inside on_next_task number cancel_at */
};

struct Recorder {
  char log[256]; /* S schema, T task, E end, X error, R release, ! after release */
  int len;
  _Atomic int in_callback;
  int overlaps;
  struct RecOptions opt;
  struct ArrowAsyncTask tasks[MAX_TASKS];
  int n_tasks;
  int error_code;
  char error_message[256];
  int producer_was_set;
  int schema_format_ok;
  int tasks_seen;
  int values[MAX_TASKS];
};

static void rec_log(struct Recorder* r, char event) {
  if (r->len + 1 < (int)sizeof(r->log)) {
    r->log[r->len++] = event;
    r->log[r->len] = '\0';
  }
}

static struct Recorder* rec_enter(struct ArrowAsyncDeviceStreamHandler* self) {
  struct Recorder* r = (struct Recorder*)self->private_data;
  if (atomic_exchange(&r->in_callback, 1) != 0) r->overlaps++;
  if (self->release == NULL) rec_log(r, '!');
  return r;
}

static void rec_leave(struct Recorder* r) { atomic_store(&r->in_callback, 0); }

static int rec_on_schema(struct ArrowAsyncDeviceStreamHandler* self,
                         struct ArrowSchema* schema) {
  struct Recorder* r = rec_enter(self);
  rec_log(r, 'S');
  r->producer_was_set = self->producer != NULL;
  r->schema_format_ok = schema->format != NULL && strcmp(schema->format, "i") == 0;
  schema->release(schema);
  int rc = 0;
  if (r->opt.refuse_schema) {
    rc = EPERM;
  } else if (r->opt.request_in_schema != 0) {
    self->producer->request(self->producer, r->opt.request_in_schema);
  }
  rec_leave(r);
  return rc;
}

static int rec_on_next_task(struct ArrowAsyncDeviceStreamHandler* self,
                            struct ArrowAsyncTask* task, const char* metadata) {
  struct Recorder* r = rec_enter(self);
  if (task == NULL) {
    rec_log(r, 'E');
    rec_leave(r);
    return 0;
  }
  rec_log(r, 'T');
  r->tasks_seen++;
  int rc = 0;
  if (r->opt.refuse_at == r->tasks_seen) {
    rc = EIO; /* refused: the producer cleans the task up */
  } else if (r->opt.defer && r->n_tasks < MAX_TASKS) {
    r->tasks[r->n_tasks++] = *task; /* copied, extracted after release */
  } else {
    struct ArrowDeviceArray batch = {0};
    if (task->extract_data(task, &batch) == 0 && batch.array.release != NULL) {
      if (r->n_tasks < MAX_TASKS) r->values[r->n_tasks++] = first_value(&batch);
      batch.array.release(&batch.array);
    }
  }
  if (rc == 0 && r->opt.cancel_at == r->tasks_seen)
    self->producer->cancel(self->producer);
  if (rc == 0 && r->opt.request_per_task) self->producer->request(self->producer, 1);
  rec_leave(r);
  return rc;
}

static void rec_on_error(struct ArrowAsyncDeviceStreamHandler* self, int code,
                         const char* message, const char* metadata) {
  struct Recorder* r = rec_enter(self);
  rec_log(r, 'X');
  r->error_code = code;
  snprintf(r->error_message, sizeof(r->error_message), "%s",
           message ? message : "(null)");
  rec_leave(r);
}

static void rec_release(struct ArrowAsyncDeviceStreamHandler* self) {
  struct Recorder* r = rec_enter(self);
  rec_log(r, 'R');
  self->release = NULL;
  rec_leave(r);
}

static void rec_init(struct Recorder* r, struct ArrowAsyncDeviceStreamHandler* handler,
                     struct RecOptions opt) {
  memset(r, 0, sizeof(*r));
  r->opt = opt;
  it_fill_handler(handler, rec_on_schema, rec_on_next_task, rec_on_error, rec_release, r);
}

/* Sends n CPU batches with timeout 0 (demand must be there already). */
static int send_n(struct FerryAsyncSender* s, int first, int n,
                  struct FerryError* error) {
  for (int i = 0; i < n; i++) {
    struct ArrowDeviceArray batch;
    if (make_batch(ARROW_DEVICE_CPU, 10 * (first + i), &batch) != 0) return EIO;
    int rc = ferry_async_sender_send(s, &batch, NULL, 0, error);
    if (rc != 0) {
      ferry_device_array_release(&batch);
      return rc;
    }
  }
  return 0;
}

/* A recording consumer fed by a CPU sender. */
struct SenderRun {
  struct Recorder r;
  struct ArrowAsyncDeviceStreamHandler handler;
  struct FerryAsyncSender* s;
  struct FerryError error;
};

static int sender_run_start(struct SenderRun* t, struct RecOptions opt) {
  rec_init(&t->r, &t->handler, opt);
  return start_sender(&t->handler, &t->s, &t->error);
}

FERRY_TEST(sender_serializes_requests_from_inside_callbacks_and_releases_last) {
  int64_t base_exports = ferry_live_exports();
  struct SenderRun t;
  /* The schema is sent before any demand: on_schema requests. */
  CHECK_EQ_INT(0, sender_run_start(&t, (struct RecOptions){.request_in_schema = 1,
                                                           .request_per_task = 1}));
  CHECK(t.handler.producer != NULL);
  CHECK_EQ_INT(ARROW_DEVICE_CPU, ferry_async_producer_device_type(t.handler.producer));
  CHECK_EQ_INT(0, ferry_async_sender_wait_demand(t.s, 0, &t.error));
  CHECK_EQ_INT(0, send_n(t.s, 0, 5, &t.error)); /* each task requests the next */
  CHECK_EQ_INT(0, ferry_async_sender_finish(t.s, 0, NULL));
  CHECK_STR("STTTTTER", t.r.log);
  CHECK_EQ_INT(0, t.r.overlaps);
  CHECK(t.r.producer_was_set);
  CHECK(t.r.schema_format_ok);
  CHECK_EQ_INT(5, t.r.n_tasks);
  for (int i = 0; i < 5; i++) CHECK_EQ_INT(10 * i, t.r.values[i]);
  CHECK_EQ_INT(base_exports, ferry_live_exports());
}

FERRY_TEST(sender_never_sends_more_than_requested) {
  struct SenderRun t;
  CHECK_EQ_INT(0, sender_run_start(&t, (struct RecOptions){.request_in_schema = 2}));
  CHECK_EQ_INT(0, send_n(t.s, 0, 2, &t.error));
  struct ArrowDeviceArray batch;
  CHECK_EQ_INT(0, make_batch(ARROW_DEVICE_CPU, 99, &batch));
  CHECK_EQ_INT(ETIMEDOUT, ferry_async_sender_send(t.s, &batch, NULL, 0, &t.error));
  CHECK_CONTAINS(t.error.message, "no demand");
  CHECK(!ferry_device_array_is_released(&batch)); /* not moved */
  CHECK_EQ_INT(ETIMEDOUT, ferry_async_sender_wait_demand(t.s, 1, &t.error));
  ferry_async_producer_request(t.handler.producer, 1);
  CHECK_EQ_INT(0, ferry_async_sender_send(t.s, &batch, NULL, 0, &t.error));
  CHECK(ferry_device_array_is_released(&batch));
  CHECK_EQ_INT(0, ferry_async_sender_finish(t.s, 0, NULL));
  CHECK_STR("STTTER", t.r.log);
}

FERRY_TEST(sender_keeps_tasks_alive_after_release_like_arrow_go) {
  int64_t base_exports = ferry_live_exports();
  int64_t base_batches = atomic_load(&live_batches);
  struct SenderRun t;
  CHECK_EQ_INT(
      0, sender_run_start(&t, (struct RecOptions){.request_in_schema = 3, .defer = 1}));
  struct ArrowAsyncProducer* producer = t.handler.producer;
  CHECK_EQ_INT(0, send_n(t.s, 0, 3, &t.error));
  CHECK_EQ_INT(0, ferry_async_sender_finish(t.s, 0, NULL));
  CHECK_STR("STTTER", t.r.log);
  CHECK_EQ_INT(3, t.r.n_tasks);
  /* After the release: request, then extract, as arrow-go does. */
  for (int i = 0; i < 3; i++) {
    producer->request(producer, 1);
    struct ArrowDeviceArray batch = {0};
    if (i == 1) {
      CHECK_EQ_INT(0,
                   ferry_async_task_extract_data(&t.r.tasks[i], NULL)); /* cleanup only */
      CHECK(ferry_async_task_is_released(&t.r.tasks[i]));
      continue;
    }
    CHECK_EQ_INT(0, t.r.tasks[i].extract_data(&t.r.tasks[i], &batch));
    CHECK_EQ_INT(10 * i, first_value(&batch));
    ferry_device_array_release(&batch);
  }
  CHECK_EQ_INT(base_batches, atomic_load(&live_batches));
  CHECK_EQ_INT(base_exports, ferry_live_exports()); /* the sender is gone now */
}

FERRY_TEST(sender_refuses_a_second_extract_without_crashing) {
  struct SenderRun t;
  CHECK_EQ_INT(
      0, sender_run_start(&t, (struct RecOptions){.request_in_schema = 2, .defer = 1}));
  CHECK_EQ_INT(0, send_n(t.s, 0, 2, NULL));
  struct ArrowAsyncTask copy = t.r.tasks[0];
  struct ArrowDeviceArray batch = {0};
  CHECK_EQ_INT(0, t.r.tasks[0].extract_data(&t.r.tasks[0], &batch));
  ferry_device_array_release(&batch);
  CHECK_EQ_INT(EINVAL, copy.extract_data(&copy, &batch)); /* twice: refused */
  CHECK(ferry_device_array_is_released(&batch));
  CHECK_EQ_INT(0, ferry_async_sender_finish(t.s, 0, NULL));
  CHECK_EQ_INT(0, t.r.tasks[1].extract_data(&t.r.tasks[1], NULL)); /* frees the sender */
}

FERRY_TEST(consumer_refusing_a_task_gets_only_release) {
  int64_t base_batches = atomic_load(&live_batches);
  struct SenderRun t;
  CHECK_EQ_INT(0, sender_run_start(
                      &t, (struct RecOptions){.request_in_schema = 10, .refuse_at = 2}));
  CHECK_EQ_INT(EIO, send_n(t.s, 0, 5, &t.error));
  CHECK_CONTAINS(t.error.message, "refused the task");
  CHECK(ferry_async_sender_is_cancelled(t.s));
  CHECK_EQ_INT(ECANCELED, ferry_async_sender_wait_demand(t.s, 0, &t.error));
  CHECK_EQ_INT(ECANCELED, send_n(t.s, 5, 1, &t.error));
  CHECK_EQ_INT(0, ferry_async_sender_finish(t.s, EIO, "must not be sent"));
  CHECK_STR("STTR", t.r.log);
  CHECK_EQ_INT(base_batches, atomic_load(&live_batches)); /* the refused one too */
}

FERRY_TEST(consumer_refusing_the_schema_gets_only_release) {
  struct SenderRun t;
  CHECK_EQ_INT(EPERM, sender_run_start(&t, (struct RecOptions){.refuse_schema = 1}));
  CHECK_EQ_INT(ECANCELED, ferry_async_sender_wait_demand(t.s, -1, &t.error));
  CHECK_EQ_INT(0, ferry_async_sender_finish(t.s, 0, NULL));
  CHECK_STR("SR", t.r.log);
}

FERRY_TEST(cancel_from_inside_a_callback_ends_without_on_error) {
  struct SenderRun t;
  CHECK_EQ_INT(0, sender_run_start(
                      &t, (struct RecOptions){.request_in_schema = 10, .cancel_at = 2}));
  CHECK_EQ_INT(ECANCELED, send_n(t.s, 0, 5, &t.error));
  CHECK_CONTAINS(t.error.message, "cancelled");
  ferry_async_producer_cancel(t.handler.producer);     /* idempotent */
  ferry_async_producer_request(t.handler.producer, 3); /* a no-op after cancel */
  CHECK_EQ_INT(ECANCELED, ferry_async_sender_wait_demand(t.s, 0, &t.error));
  CHECK_EQ_INT(0, ferry_async_sender_finish(t.s, EIO, "no on_error after a cancel"));
  CHECK_STR("STTR", t.r.log);
}

static void bad_request(int64_t n) {
  struct SenderRun t;
  CHECK_EQ_INT(0, sender_run_start(&t, (struct RecOptions){0}));
  t.handler.producer->request(t.handler.producer, n);
  t.handler.producer->request(t.handler.producer, 5); /* ignored: the stream stopped */
  CHECK_EQ_INT(EINVAL, ferry_async_sender_wait_demand(t.s, -1, &t.error));
  CHECK_CONTAINS(t.error.message, "request(");
  CHECK(ferry_async_sender_is_cancelled(t.s));
  CHECK_EQ_INT(0, ferry_async_sender_finish(t.s, 0, NULL));
  CHECK_STR("SXR", t.r.log);
  CHECK_EQ_INT(EINVAL, t.r.error_code);
  CHECK_CONTAINS(t.r.error_message, "request(n) with n <= 0");
}

FERRY_TEST(request_zero_is_reported_through_on_error) { bad_request(0); }
FERRY_TEST(request_negative_is_reported_through_on_error) { bad_request(-1); }

FERRY_TEST(producer_errors_reach_on_error_with_a_message) {
  struct SenderRun t;
  CHECK_EQ_INT(0, sender_run_start(&t, (struct RecOptions){.request_in_schema = 1}));
  CHECK_EQ_INT(0, ferry_async_sender_finish(t.s, EIO, NULL)); /* NULL: named instead */
  CHECK_STR("SXR", t.r.log);
  CHECK_EQ_INT(EIO, t.r.error_code);
  CHECK_STR("producer error EIO", t.r.error_message);

  rec_init(&t.r, &t.handler, (struct RecOptions){0});
  ferry_async_handler_fail(&t.handler, EIO, "injected failure at export");
  CHECK_STR("XR", t.r.log);
  CHECK_STR("injected failure at export", t.r.error_message);
  ferry_async_handler_fail(&t.handler, EIO, "released already: nothing happens");
  CHECK_STR("XR", t.r.log);
}

FERRY_TEST(sender_refuses_bad_arguments_by_name) {
  struct Recorder r;
  struct ArrowAsyncDeviceStreamHandler handler;
  struct FerryAsyncSender* s = NULL;
  struct FerryError error;
  CHECK_EQ_INT(EINVAL,
               ferry_async_sender_create(NULL, ARROW_DEVICE_CPU, NULL, &s, &error));
  CHECK(s == NULL);
  rec_init(&r, &handler, (struct RecOptions){0});
  /* Malformed metadata (a negative count): the handler still gets on_error
   * and release, as in every outcome. */
  const char bad_metadata[4] = {(char)0xff, (char)0xff, (char)0xff, (char)0xff};
  CHECK_EQ_INT(EINVAL, ferry_async_sender_create(&handler, ARROW_DEVICE_CPU, bad_metadata,
                                                 &s, &error));
  CHECK_CONTAINS(error.message, "additional_metadata");
  CHECK_STR("XR", r.log);

  rec_init(&r, &handler, (struct RecOptions){.request_in_schema = 1});
  /* Metadata {"rows": "3"} is copied and lives with the producer. */
  char metadata[4 + 4 + 4 + 4 + 1];
  int32_t one = 1, four = 4, len1 = 1;
  memcpy(metadata, &one, 4);
  memcpy(metadata + 4, &four, 4);
  memcpy(metadata + 8, "rows", 4);
  memcpy(metadata + 12, &len1, 4);
  metadata[16] = '3';
  CHECK_EQ_INT(
      0, ferry_async_sender_create(&handler, ARROW_DEVICE_CPU, metadata, &s, &error));
  const char* copy = ferry_async_producer_additional_metadata(handler.producer);
  CHECK(copy != NULL && copy != metadata &&
        memcmp(copy, metadata, sizeof(metadata)) == 0);
  struct ArrowDeviceArray batch;
  CHECK_EQ_INT(0, make_batch(ARROW_DEVICE_CPU, 0, &batch));
  CHECK_EQ_INT(EINVAL, ferry_async_sender_send(s, &batch, NULL, 0, &error));
  CHECK_CONTAINS(error.message, "schema before");
  struct ArrowSchema schema;
  make_schema(&schema);
  CHECK_EQ_INT(0, ferry_async_sender_send_schema(s, &schema, &error));
  make_schema(&schema);
  CHECK_EQ_INT(EINVAL, ferry_async_sender_send_schema(s, &schema, &error));
  CHECK_CONTAINS(error.message, "sent already");
  ferry_schema_release(&schema);
  batch.device_type = ARROW_DEVICE_CUDA;
  CHECK_EQ_INT(EINVAL, ferry_async_sender_send(s, &batch, NULL, 0, &error));
  CHECK_CONTAINS(error.message, "producer declared cpu");
  batch.device_type = ARROW_DEVICE_CPU;
  ferry_device_array_release(&batch);
  CHECK_EQ_INT(0, ferry_async_sender_finish(s, 0, NULL));
  CHECK_STR("SER", r.log);
}

/* ---- pull to push and the stream adapter ------------------------------------- */

static void make_stream(struct ArrowDeviceArrayStream* stream, int n) {
  struct ArrowSchema schema;
  make_schema(&schema);
  struct ArrowDeviceArray arrays[8];
  for (int i = 0; i < n; i++) make_batch(ARROW_DEVICE_CPU, 10 * i, &arrays[i]);
  memset(stream, 0, sizeof(*stream));
  ferry_array_stream_init_from_arrays(stream, ARROW_DEVICE_CPU, &schema, arrays, n, NULL);
}

FERRY_TEST(export_stream_run_on_the_calling_thread) {
  int64_t base_exports = ferry_live_exports();
  struct Recorder r;
  struct ArrowAsyncDeviceStreamHandler handler;
  rec_init(&r, &handler,
           (struct RecOptions){.request_in_schema = 2, .request_per_task = 1});
  struct ArrowDeviceArrayStream source;
  make_stream(&source, 3);
  struct FerryError error;
  CHECK_EQ_INT(0, ferry_async_export_stream_run(&source, &handler, &error));
  CHECK(ferry_array_stream_is_released(&source));
  CHECK_STR("STTTER", r.log);

  /* A cancel from inside the second task stops it without on_error. */
  rec_init(&r, &handler, (struct RecOptions){.request_in_schema = 5, .cancel_at = 2});
  make_stream(&source, 6);
  CHECK_EQ_INT(ECANCELED, ferry_async_export_stream_run(&source, &handler, &error));
  CHECK_STR("STTR", r.log);
  CHECK_EQ_INT(base_exports, ferry_live_exports());
}

/* Stream failures travel through on_error with the stream's message. */
static int failing_get_schema(struct ArrowDeviceArrayStream* self,
                              struct ArrowSchema* out) {
  return EIO;
}
static int fails_at_2 = 0;
static int failing_get_next(struct ArrowDeviceArrayStream* self,
                            struct ArrowDeviceArray* out) {
  if (fails_at_2++ == 1) return EIO;
  return make_batch(ARROW_DEVICE_CPU, 0, out);
}
static int good_get_schema(struct ArrowDeviceArrayStream* self, struct ArrowSchema* out) {
  return make_schema(out);
}
static const char* failing_last_error(struct ArrowDeviceArrayStream* self) {
  return "injected failure at get_next 2";
}
static int failing_stream_releases;
static void failing_release(struct ArrowDeviceArrayStream* self) {
  failing_stream_releases++;
  self->release = NULL;
}

FERRY_TEST(export_stream_turns_stream_errors_into_on_error) {
  struct Recorder r;
  struct ArrowAsyncDeviceStreamHandler handler;
  rec_init(&r, &handler, (struct RecOptions){.request_in_schema = 5});
  struct ArrowDeviceArrayStream stream = {ARROW_DEVICE_CPU, failing_get_schema,
                                          failing_get_next, failing_last_error,
                                          failing_release,  NULL};
  failing_stream_releases = 0;
  struct FerryError error;
  CHECK_EQ_INT(EIO, ferry_async_export_stream_run(&stream, &handler, &error));
  CHECK_STR("XR", r.log);
  CHECK_EQ_INT(EIO, r.error_code);
  CHECK_CONTAINS(r.error_message, "injected failure at get_next 2");
  CHECK_EQ_INT(1, failing_stream_releases);

  rec_init(&r, &handler, (struct RecOptions){.request_in_schema = 5});
  struct ArrowDeviceArrayStream stream2 = {ARROW_DEVICE_CPU, good_get_schema,
                                           failing_get_next, failing_last_error,
                                           failing_release,  NULL};
  fails_at_2 = 0;
  CHECK_EQ_INT(EIO, ferry_async_export_stream_run(&stream2, &handler, &error));
  CHECK_STR("STXR", r.log);
  CHECK_EQ_INT(EIO, r.error_code);
  CHECK_STR("injected failure at get_next 2", r.error_message);
  CHECK_EQ_INT(2, failing_stream_releases);
}

FERRY_TEST(export_stream_refuses_bad_arguments_and_still_releases) {
  struct Recorder r;
  struct ArrowAsyncDeviceStreamHandler handler;
  rec_init(&r, &handler, (struct RecOptions){0});
  struct ArrowDeviceArrayStream source;
  make_stream(&source, 1);
  struct FerryError error;
  CHECK_EQ_INT(EINVAL, ferry_async_export_stream(&source, &handler, 7, &error));
  CHECK_CONTAINS(error.message, "flags");
  CHECK(ferry_array_stream_is_released(&source));
  CHECK_STR("XR", r.log);
  rec_init(&r, &handler, (struct RecOptions){0});
  CHECK_EQ_INT(EINVAL, ferry_async_export_stream(NULL, &handler, 0, &error));
  CHECK_STR("XR", r.log);
}

/* ---- readiness: the descriptor and the callback ------------------------------ */

static int readable(int fd) {
  struct pollfd p = {fd, POLLIN, 0};
  return poll(&p, 1, 0) == 1 && (p.revents & POLLIN) != 0;
}

static void count_notify(void* user_data) {
  atomic_fetch_add((_Atomic int*)user_data, 1);
}

FERRY_TEST(fd_is_readable_exactly_while_a_read_would_not_block) {
  struct ArrowAsyncDeviceStreamHandler handler = {0};
  struct FerryAsyncConsumer* c = NULL;
  struct FerryError error;
  CHECK_EQ_INT(
      0, ferry_async_consumer_create(2, FERRY_VALIDATE_DEFAULT, &handler, &c, NULL));
  _Atomic int notified = 0;
  ferry_async_consumer_set_notify(c, count_notify, (void*)&notified);
  int fd = ferry_async_consumer_fd(c);
  CHECK(fd >= 0);
  CHECK(!readable(fd));
  struct ArrowSchema early = {0};
  CHECK_EQ_INT(ETIMEDOUT, ferry_async_consumer_get_schema(c, &early, 0, &error));
  CHECK(!readable(fd));

  struct FerryAsyncSender* s = NULL;
  CHECK_EQ_INT(0, start_sender(&handler, &s, NULL));
  CHECK(readable(fd)); /* the schema is there */
  int after_schema = atomic_load(&notified);
  CHECK(after_schema >= 1);
  struct ArrowSchema schema = {0};
  CHECK_EQ_INT(0, ferry_async_consumer_get_schema(c, &schema, 0, &error));
  ferry_schema_release(&schema);
  CHECK(!readable(fd));                   /* next would block now */
  CHECK_EQ_INT(0, send_n(s, 0, 2, NULL)); /* the window is 2 */
  CHECK(readable(fd));
  struct ArrowDeviceArray batch = {0};
  CHECK(atomic_load(&notified) > after_schema);
  CHECK_EQ_INT(0, ferry_async_consumer_next(c, &batch, 0, &error));
  ferry_device_array_release(&batch);
  CHECK(readable(fd)); /* one more queued */
  CHECK_EQ_INT(0, ferry_async_consumer_next(c, &batch, 0, &error));
  ferry_device_array_release(&batch);
  CHECK(!readable(fd));
  CHECK_EQ_INT(0, ferry_async_sender_finish(s, 0, NULL));
  CHECK(readable(fd)); /* the end */
  CHECK_EQ_INT(0, ferry_async_consumer_next(c, &batch, 0, &error));
  CHECK(ferry_device_array_is_released(&batch));
  CHECK(readable(fd)); /* and it stays */
  ferry_async_consumer_free(c);
}

struct FreeOnNotify {
  struct FerryAsyncConsumer* c;
  int calls;
};

static void free_on_notify(void* user_data) {
  struct FreeOnNotify* f = (struct FreeOnNotify*)user_data;
  if (f->calls++ == 0) ferry_async_consumer_free(f->c); /* from inside the callback */
}

FERRY_TEST(consumer_free_from_inside_its_notify_callback) {
  int64_t base_exports = ferry_live_exports();
  struct ArrowAsyncDeviceStreamHandler handler = {0};
  struct FreeOnNotify f = {NULL, 0};
  CHECK_EQ_INT(
      0, ferry_async_consumer_create(2, FERRY_VALIDATE_DEFAULT, &handler, &f.c, NULL));
  ferry_async_consumer_set_notify(f.c, free_on_notify, &f);
  struct FerryAsyncSender* s = NULL;
  CHECK_EQ_INT(0, start_sender(&handler, &s, NULL)); /* notify frees */
  CHECK_EQ_INT(1, f.calls);
  CHECK(ferry_async_sender_is_cancelled(s)); /* the free cancelled the stream */
  CHECK_EQ_INT(ECANCELED, send_n(s, 0, 1, NULL));
  CHECK_EQ_INT(0, ferry_async_sender_finish(s, 0, NULL)); /* the release frees it */
  CHECK_EQ_INT(1, f.calls);                               /* cleared by the free */
  CHECK(ferry_async_handler_is_released(&handler));
  CHECK_EQ_INT(base_exports, ferry_live_exports());
}

FERRY_TEST(window_bounds_what_is_requested) {
  struct ArrowAsyncDeviceStreamHandler handler = {0};
  struct FerryAsyncConsumer* c = NULL;
  CHECK_EQ_INT(0,
               ferry_async_consumer_create(3, FERRY_VALIDATE_NONE, &handler, &c, NULL));
  struct FerryAsyncSender* s = NULL;
  CHECK_EQ_INT(0, start_sender(&handler, &s, NULL));
  CHECK_EQ_INT(0, send_n(s, 0, 3, NULL)); /* the window */
  struct FerryError error;
  CHECK_EQ_INT(ETIMEDOUT, ferry_async_sender_wait_demand(s, 0, &error));
  struct ArrowDeviceArray batch = {0};
  CHECK_EQ_INT(0, ferry_async_consumer_next(c, &batch, 0, &error));
  CHECK_EQ_INT(0, first_value(&batch));
  ferry_device_array_release(&batch);
  CHECK_EQ_INT(0, send_n(s, 3, 1, NULL)); /* one more for the one taken */
  CHECK_EQ_INT(ETIMEDOUT, ferry_async_sender_wait_demand(s, 0, &error));
  CHECK_EQ_INT(0, ferry_async_sender_finish(s, 0, NULL));
  for (int i = 1; i <= 3; i++) {
    CHECK_EQ_INT(0, ferry_async_consumer_next(c, &batch, 0, &error));
    CHECK_EQ_INT(10 * i, first_value(&batch));
    ferry_device_array_release(&batch);
  }
  CHECK_EQ_INT(0, ferry_async_consumer_next(c, &batch, 0, &error));
  CHECK(ferry_device_array_is_released(&batch));
  CHECK_EQ_INT(0, ferry_async_consumer_violations(c));
  ferry_async_consumer_free(c);
}

/* ---- hostile producers against ferry's consumer ------------------------------ */

struct Findings {
  char rules[512];
};

static void on_violation(void* user_data, const char* rule, const char* where,
                         const char* what) {
  struct Findings* f = (struct Findings*)user_data;
  size_t len = strlen(f->rules);
  snprintf(f->rules + len, sizeof(f->rules) - len, "%s;", rule);
}

/* A hand-made producer: its request and cancel only count. */
struct Hostile {
  struct ArrowAsyncProducer producer;
  int64_t requested;
  int cancels;
  struct ArrowAsyncDeviceStreamHandler* handler; /* to call back from request */
  int call_back_from_request;
  int release_from_request;
  int extract_calls;
  int fill_mode; /* 0 good batch, 1 leave released, 2 malformed, 3 fail */
};

static void hostile_request(struct ArrowAsyncProducer* self, int64_t n) {
  struct Hostile* h = (struct Hostile*)self->private_data;
  h->requested += n;
  if (h->call_back_from_request) {
    h->call_back_from_request = 0;
    h->handler->on_next_task(h->handler, NULL, NULL); /* forbidden */
  }
  if (h->release_from_request) {
    h->release_from_request = 0;
    h->handler->release(h->handler); /* forbidden too */
  }
}
static void hostile_cancel(struct ArrowAsyncProducer* self) {
  ((struct Hostile*)self->private_data)->cancels++;
}

static int hostile_extract(struct ArrowAsyncTask* task, struct ArrowDeviceArray* out) {
  struct Hostile* h = (struct Hostile*)task->private_data;
  h->extract_calls++;
  if (out == NULL) return 0;
  switch (h->fill_mode) {
    case 1: return 0;
    case 2: {
      int rc = make_batch(ARROW_DEVICE_CPU, 0, out);
      out->array.n_buffers = 1; /* an int32 array has 2 */
      return rc;
    }
    case 3: return EIO;
    case 4: /* releases the handler from inside on_next_task */
      h->handler->release(h->handler);
      return make_batch(ARROW_DEVICE_CPU, 0, out);
    default: return make_batch(ARROW_DEVICE_CPU, 0, out);
  }
}

struct HostileRun {
  struct ArrowAsyncDeviceStreamHandler handler;
  struct FerryAsyncConsumer* c;
  struct Hostile h;
  struct Findings findings;
};

static void hostile_start(struct HostileRun* run, int64_t window) {
  memset(run, 0, sizeof(*run));
  CHECK_EQ_INT(0, ferry_async_consumer_create(window, FERRY_VALIDATE_DEFAULT,
                                              &run->handler, &run->c, NULL));
  ferry_async_consumer_set_on_violation(run->c, on_violation, &run->findings);
  run->h.producer.device_type = ARROW_DEVICE_CPU;
  run->h.producer.request = hostile_request;
  run->h.producer.cancel = hostile_cancel;
  run->h.producer.private_data = &run->h;
  run->h.handler = &run->handler;
}

static int hostile_schema(struct HostileRun* run) {
  run->handler.producer = &run->h.producer;
  struct ArrowSchema schema;
  make_schema(&schema);
  return run->handler.on_schema(&run->handler, &schema);
}

/* hostile_start, then a schema the consumer accepts; extract fills by fill_mode. */
static void hostile_open(struct HostileRun* run, int64_t window, int fill_mode) {
  hostile_start(run, window);
  CHECK_EQ_INT(0, hostile_schema(run));
  run->h.fill_mode = fill_mode;
}

static int hostile_task(struct HostileRun* run) {
  struct ArrowAsyncTask task = {hostile_extract, &run->h};
  return run->handler.on_next_task(&run->handler, &task, NULL);
}

/* The reader's view after the violation: EPROTO naming `rule`, twice. */
static void expect_protocol_error(struct HostileRun* run, const char* rule) {
  struct FerryError error;
  for (int i = 0; i < 2; i++) {
    struct ArrowDeviceArray batch = {0};
    int rc = ferry_async_consumer_next(run->c, &batch, 0, &error);
    if (rc == 0 && batch.array.release != NULL) {
      ferry_device_array_release(&batch); /* batches before the violation */
      i--;
      continue;
    }
    CHECK_EQ_INT(EPROTO, rc);
    CHECK_CONTAINS(error.message, rule);
  }
  CHECK(ferry_async_consumer_violations(run->c) >= 1);
  CHECK_CONTAINS(run->findings.rules, rule);
}

static void hostile_finish(struct HostileRun* run) {
  if (run->handler.release != NULL) run->handler.release(&run->handler);
  ferry_async_consumer_free(run->c);
}

FERRY_TEST(hostile_task_before_schema) {
  struct HostileRun run;
  hostile_start(&run, 2);
  run.handler.producer = &run.h.producer;
  CHECK(hostile_task(&run) != 0);
  CHECK_EQ_INT(0, run.h.extract_calls); /* refused, not extracted */
  expect_protocol_error(&run, "task_before_schema");
  hostile_finish(&run);
}

FERRY_TEST(hostile_no_producer_set) {
  struct HostileRun run;
  hostile_start(&run, 2);
  struct ArrowSchema schema;
  make_schema(&schema);
  CHECK(run.handler.on_schema(&run.handler, &schema) != 0);
  CHECK(schema.release == NULL); /* released, not leaked */
  expect_protocol_error(&run, "no_producer");
  hostile_finish(&run);
}

FERRY_TEST(hostile_more_tasks_than_requested) {
  struct HostileRun run;
  hostile_open(&run, 2, 0);
  CHECK_EQ_INT(2, run.h.requested); /* the window, from inside on_schema */
  CHECK_EQ_INT(0, hostile_task(&run));
  CHECK_EQ_INT(0, hostile_task(&run));
  CHECK(hostile_task(&run) != 0);
  CHECK_EQ_INT(2, run.h.extract_calls);
  expect_protocol_error(&run, "too_many_tasks");
  hostile_finish(&run);
}

FERRY_TEST(hostile_callback_from_inside_request) {
  /* A producer whose request calls on_next_task synchronously (the
   * specification forbids it): request is called from next. */
  struct HostileRun run;
  hostile_open(&run, 4, 0);
  CHECK_EQ_INT(0, hostile_task(&run));
  run.h.call_back_from_request = 1;
  struct ArrowDeviceArray batch = {0};
  struct FerryError error;
  CHECK_EQ_INT(0, ferry_async_consumer_next(run.c, &batch, 0, &error));
  ferry_device_array_release(&batch);
  expect_protocol_error(&run, "callback_inside_request");
  hostile_finish(&run);
}

static void* overlap_thread(void* arg) {
  struct HostileRun* run = (struct HostileRun*)arg;
  struct ArrowAsyncTask task = {hostile_extract, &run->h};
  run->handler.on_next_task(&run->handler, &task, NULL);
  return NULL;
}

/* A producer whose extract_data, running inside on_next_task, lets another
 * thread call the handler: the two calls truly overlap. */
static struct HostileRun* overlap_run;
static int overlap_extract(struct ArrowAsyncTask* task, struct ArrowDeviceArray* out) {
  pthread_t thread;
  pthread_create(&thread, NULL, overlap_thread, overlap_run);
  pthread_join(thread, NULL); /* the nested call has run to completion */
  return make_batch(ARROW_DEVICE_CPU, 0, out);
}

FERRY_TEST(hostile_concurrent_handler_calls) {
  struct HostileRun run;
  hostile_open(&run, 4, 0);
  overlap_run = &run;
  struct ArrowAsyncTask task = {overlap_extract, &run.h};
  CHECK_EQ_INT(0, run.handler.on_next_task(&run.handler, &task, NULL));
  expect_protocol_error(&run, "overlapping_callbacks");
  hostile_finish(&run);
}

FERRY_TEST(hostile_calls_after_release_and_release_twice) {
  struct HostileRun run;
  hostile_open(&run, 2, 0);
  CHECK_EQ_INT(0, run.handler.on_next_task(&run.handler, NULL, NULL)); /* end */
  void (*release)(struct ArrowAsyncDeviceStreamHandler*) = run.handler.release;
  release(&run.handler);
  CHECK(run.handler.release == NULL);
  CHECK(hostile_task(&run) != 0);
  run.handler.on_error(&run.handler, EIO, "late", NULL);
  release(&run.handler);
  CHECK_EQ_INT(3, ferry_async_consumer_violations(run.c));
  CHECK_CONTAINS(run.findings.rules, "call_after_release");
  CHECK_CONTAINS(run.findings.rules, "release_twice");
  expect_protocol_error(&run, "call_after_release");
  ferry_async_consumer_free(run.c);
}

FERRY_TEST(hostile_release_without_end) {
  struct HostileRun run;
  hostile_open(&run, 2, 0);
  CHECK_EQ_INT(0, hostile_task(&run));
  run.handler.release(&run.handler);
  expect_protocol_error(&run, "release_before_end");
  ferry_async_consumer_free(run.c);
}

FERRY_TEST(hostile_release_inside_a_callback_is_done_after_it) {
  int64_t base_batches = atomic_load(&live_batches);
  struct HostileRun run;
  hostile_open(&run, 2, 4);
  CHECK_EQ_INT(0, hostile_task(&run));
  /* Not lost (nothing leaks), and not run under the callback. */
  CHECK_EQ_INT(0, ferry_async_consumer_wait_released(run.c, 0));
  CHECK(run.handler.release == NULL);
  CHECK_CONTAINS(run.findings.rules, "overlapping_callbacks");
  expect_protocol_error(&run, "overlapping_callbacks");
  ferry_async_consumer_free(run.c);
  CHECK_EQ_INT(base_batches, atomic_load(&live_batches));
}

FERRY_TEST(hostile_release_inside_request) {
  struct HostileRun run;
  hostile_open(&run, 2, 0);
  CHECK_EQ_INT(0, hostile_task(&run));
  run.h.release_from_request = 1;
  struct ArrowDeviceArray batch = {0};
  struct FerryError error;
  CHECK_EQ_INT(0, ferry_async_consumer_next(run.c, &batch, 0, &error)); /* requests */
  ferry_device_array_release(&batch);
  CHECK_EQ_INT(0, ferry_async_consumer_wait_released(run.c, 0));
  CHECK_CONTAINS(run.findings.rules, "release_inside_request");
  CHECK_EQ_INT(EPROTO, ferry_async_consumer_next(run.c, &batch, 0, &error));
  ferry_async_consumer_free(run.c);
}

FERRY_TEST(hostile_extract_leaves_the_array_released) {
  struct HostileRun run;
  hostile_open(&run, 2, 1);
  CHECK(hostile_task(&run) != 0);
  expect_protocol_error(&run, "empty_task");
  hostile_finish(&run);
}

FERRY_TEST(hostile_malformed_batch_is_refused_by_validation) {
  int64_t base_batches = atomic_load(&live_batches);
  struct HostileRun run;
  hostile_open(&run, 2, 2);
  CHECK_EQ_INT(0, hostile_task(&run));
  struct ArrowDeviceArray batch = {0};
  struct FerryError error;
  for (int i = 0; i < 2; i++) {
    CHECK_EQ_INT(EINVAL, ferry_async_consumer_next(run.c, &batch, 0, &error));
    CHECK_CONTAINS(error.message, "batch 0 is invalid");
    CHECK(ferry_device_array_is_released(&batch));
  }
  CHECK_EQ_INT(1, run.h.cancels); /* no more data wanted */
  hostile_finish(&run);
  CHECK_EQ_INT(base_batches, atomic_load(&live_batches));
}

FERRY_TEST(hostile_extract_failure_then_on_error) {
  struct HostileRun run;
  hostile_open(&run, 2, 3);
  CHECK_EQ_INT(0, hostile_task(&run));
  struct ArrowDeviceArray batch = {0};
  struct FerryError error;
  CHECK_EQ_INT(EIO, ferry_async_consumer_next(run.c, &batch, 0, &error));
  CHECK_CONTAINS(error.message, "extract_data failed");
  /* The producer's on_error, which the specification asks for, wins. */
  run.handler.on_error(&run.handler, EIO, "decoding failed", NULL);
  CHECK_EQ_INT(EIO, ferry_async_consumer_next(run.c, &batch, 0, &error));
  CHECK_STR("decoding failed", error.message);
  hostile_finish(&run);
}

FERRY_TEST(hostile_on_error_with_null_message) {
  struct HostileRun run;
  hostile_start(&run, 2);
  run.handler.on_error(&run.handler, EIO, NULL, NULL);
  struct ArrowDeviceArray batch = {0};
  struct FerryError error;
  CHECK_EQ_INT(EIO, ferry_async_consumer_next(run.c, &batch, 0, &error));
  CHECK_CONTAINS(error.message, "null_message");
  CHECK_EQ_INT(1, ferry_async_consumer_violations(run.c));
  struct ArrowSchema schema = {0};
  CHECK_EQ_INT(EIO, ferry_async_consumer_get_schema(run.c, &schema, 0, &error));
  hostile_finish(&run);
}

FERRY_TEST(invalid_schema_is_refused_and_never_handed_out) {
  struct HostileRun run;
  hostile_start(&run, 2);
  run.handler.producer = &run.h.producer;
  struct ArrowSchema schema = {0};
  CHECK_EQ_INT(0, ferry_schema_init(&schema, "+s", "bad", 0, 0, NULL));
  schema.format = "zz"; /* not a format */
  CHECK_EQ_INT(EINVAL, run.handler.on_schema(&run.handler, &schema));
  CHECK(schema.release == NULL);
  CHECK_EQ_INT(0, run.h.requested); /* nothing asked of a bad stream */
  struct ArrowSchema out = {0};
  struct FerryError error;
  CHECK_EQ_INT(EINVAL, ferry_async_consumer_get_schema(run.c, &out, 0, &error));
  CHECK_CONTAINS(error.message, "schema is invalid");
  CHECK(out.release == NULL);
  run.handler.release(&run.handler);
  CHECK_EQ_INT(0, ferry_async_consumer_violations(run.c));
  ferry_async_consumer_free(run.c);
}

FERRY_TEST(consumer_refuses_bad_arguments_by_name) {
  struct ArrowAsyncDeviceStreamHandler handler = {0};
  struct FerryAsyncConsumer* c = NULL;
  struct FerryError error;
  CHECK_EQ_INT(EINVAL, ferry_async_consumer_create(0, FERRY_VALIDATE_DEFAULT, &handler,
                                                   &c, &error));
  CHECK_CONTAINS(error.message, "window must be >= 1");
  CHECK_EQ_INT(EINVAL, ferry_async_consumer_create(1, 7, &handler, &c, &error));
  CHECK_CONTAINS(error.message, "validation level");
  CHECK_EQ_INT(0,
               ferry_async_consumer_create(1, FERRY_VALIDATE_NONE, &handler, &c, &error));
  struct ArrowAsyncDeviceStreamHandler again = handler;
  struct FerryAsyncConsumer* c2 = NULL;
  CHECK_EQ_INT(EINVAL, ferry_async_consumer_create(1, FERRY_VALIDATE_DEFAULT, &again, &c2,
                                                   &error));
  CHECK_CONTAINS(error.message, "live");
  struct ArrowSchema schema = {0};
  CHECK_EQ_INT(ETIMEDOUT, ferry_async_consumer_get_schema(c, &schema, 1, &error));
  struct ArrowDeviceArrayStream stream = {0};
  CHECK_EQ_INT(ETIMEDOUT, ferry_async_consumer_to_stream(c, 0, &stream, &error));
  CHECK_EQ_INT(ETIMEDOUT, ferry_async_consumer_wait_released(c, 0));
  /* A producer that cannot start: on_error then release. */
  ferry_async_handler_fail(&handler, EIO, "injected failure at export");
  CHECK_EQ_INT(EIO, ferry_async_consumer_to_stream(c, 0, &stream, &error));
  CHECK_STR("injected failure at export", error.message);
  CHECK_EQ_INT(0, ferry_async_consumer_wait_released(c, 0));
  ferry_async_consumer_free(c);
}

/* ---- the raw accessors ----------------------------------------------------- */

FERRY_TEST(accessors_accept_null_and_released_structs) {
  CHECK(ferry_async_handler_is_released(NULL));
  CHECK(ferry_async_handler_producer(NULL) == NULL);
  CHECK_EQ_INT(EINVAL, ferry_async_handler_on_schema(NULL, NULL));
  CHECK_EQ_INT(EINVAL, ferry_async_handler_on_next_task(NULL, NULL, NULL));
  ferry_async_handler_on_error(NULL, EIO, "x", NULL);
  ferry_async_handler_release(NULL);
  CHECK_EQ_INT(0, ferry_async_producer_device_type(NULL));
  ferry_async_producer_request(NULL, 1);
  ferry_async_producer_cancel(NULL);
  CHECK(ferry_async_producer_additional_metadata(NULL) == NULL);
  CHECK(ferry_async_task_is_released(NULL));
  CHECK_EQ_INT(EINVAL, ferry_async_task_extract_data(NULL, NULL));
  struct ArrowAsyncDeviceStreamHandler* handler = ferry_async_handler_new();
  CHECK(ferry_async_handler_is_released(handler));
  ferry_async_handler_free(handler);
  ferry_async_handler_free(NULL);
  ferry_async_task_free(NULL);
  CHECK_EQ_INT(1, ferry_async_sender_is_cancelled(NULL));
  ferry_async_consumer_free(NULL);
  ferry_async_consumer_cancel(NULL);
  CHECK_EQ_INT(-1, ferry_async_consumer_fd(NULL));
}

FERRY_TEST(task_move_and_free_extract_exactly_once) {
  int64_t base_batches = atomic_load(&live_batches);
  struct SenderRun t;
  CHECK_EQ_INT(
      0, sender_run_start(&t, (struct RecOptions){.request_in_schema = 2, .defer = 1}));
  CHECK_EQ_INT(0, send_n(t.s, 0, 2, NULL));
  CHECK_EQ_INT(0, ferry_async_sender_finish(t.s, 0, NULL));
  struct ArrowAsyncTask* heap = ferry_async_task_new();
  CHECK(ferry_async_task_is_released(heap));
  CHECK_EQ_INT(0, ferry_async_task_move(&t.r.tasks[0], heap));
  CHECK(ferry_async_task_is_released(&t.r.tasks[0]));
  CHECK_EQ_INT(EINVAL, ferry_async_task_move(&t.r.tasks[0], heap));
  struct ArrowDeviceArray batch = {0};
  CHECK_EQ_INT(0, ferry_async_task_extract_data(heap, &batch));
  CHECK_EQ_INT(0, first_value(&batch));
  ferry_device_array_release(&batch);
  CHECK_EQ_INT(EINVAL, ferry_async_task_extract_data(heap, &batch));
  ferry_async_task_free(heap);
  heap = ferry_async_task_new();
  CHECK_EQ_INT(0, ferry_async_task_move(&t.r.tasks[1], heap));
  ferry_async_task_free(heap); /* extracts with NULL: the producer cleans up */
  CHECK_EQ_INT(base_batches, atomic_load(&live_batches));
}

/* Last in the file: its detached export thread may still be exiting when
 * the test ends, and a thread's exit moves its ferry_live_exports count
 * (docs of ferry_live_exports: exact only when no other thread exports or
 * releases), which would disturb the counts of a later test. */
FERRY_TEST(export_stream_feeds_a_consumer_read_as_a_stream) {
  int64_t base_batches = atomic_load(&live_batches);
  for (int window = 1; window <= 4; window += 3) {
    struct ArrowAsyncDeviceStreamHandler* handler = ferry_async_handler_new();
    struct FerryAsyncConsumer* c = NULL;
    struct FerryError error;
    CHECK_EQ_INT(
        0, ferry_async_consumer_create(window, FERRY_VALIDATE_FULL, handler, &c, &error));
    struct ArrowDeviceArrayStream source;
    make_stream(&source, 6);
    CHECK_EQ_INT(0, ferry_async_export_stream(&source, handler,
                                              FERRY_ASYNC_EXPORT_DEFAULT, &error));
    CHECK(ferry_array_stream_is_released(&source));
    struct ArrowDeviceArrayStream stream = {0};
    CHECK_EQ_INT(0, ferry_async_consumer_to_stream(c, -1, &stream, &error));
    CHECK_EQ_INT(ARROW_DEVICE_CPU, ferry_array_stream_device_type(&stream));
    struct ArrowSchema schema = {0};
    CHECK_EQ_INT(0, ferry_array_stream_get_schema(&stream, &schema, &error));
    CHECK_STR("i", schema.format);
    ferry_schema_release(&schema);
    for (int i = 0; i < 6; i++) {
      struct ArrowDeviceArray batch = {0};
      CHECK_EQ_INT(0, ferry_array_stream_get_next(&stream, &batch, &error));
      CHECK_EQ_INT(10 * i, first_value(&batch));
      ferry_device_array_release(&batch);
    }
    struct ArrowDeviceArray end = {0};
    CHECK_EQ_INT(0, ferry_array_stream_get_next(&stream, &end, &error));
    CHECK(ferry_device_array_is_released(&end));
    /* The export thread releases the handler just after the end marker:
     * wait for it before freeing the handler's memory. The stream's
     * release frees the consumer. */
    CHECK_EQ_INT(0, ferry_async_consumer_wait_released(c, -1));
    ferry_array_stream_release(&stream);
    CHECK(ferry_async_handler_is_released(handler));
    ferry_async_handler_free(handler);
  }
  /* Not ferry_live_exports: the detached export thread may still be
   * finishing its own bookkeeping; export_stream_run's test counts it. */
  CHECK_EQ_INT(base_batches, atomic_load(&live_batches));
}

FERRY_TEST_MAIN()
