#include "chelper.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "_cgo_export.h"

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

struct drain_job {
  struct ArrowDeviceArrayStream* stream;
  int64_t batches, elements, ns;
  int rc;
  char message[FERRY_ERROR_MESSAGE_SIZE];
};

static void* drain(void* arg) {
  struct drain_job* job = arg;
  struct ArrowDeviceArray batch;
  struct FerryError error;
  memset(&batch, 0, sizeof(batch));
  int64_t start = now_ns();
  for (;;) {
    ferry_error_init(&error);
    int rc = ferry_array_stream_get_next(job->stream, &batch, &error);
    if (rc != 0) {
      job->rc = rc;
      snprintf(job->message, sizeof(job->message), "%s", error.message);
      break;
    }
    if (ferry_device_array_is_released(&batch)) break;
    job->batches++;
    job->elements += ferry_array_length(&batch.array);
    ferry_device_array_release(&batch);
  }
  job->ns = now_ns() - start;
  return NULL;
}

int chelper_drain_stream(struct ArrowDeviceArrayStream* stream, int new_thread,
                         int64_t* batches, int64_t* elements, int64_t* ns, char* message,
                         int64_t message_size) {
  struct drain_job job;
  memset(&job, 0, sizeof(job));
  job.stream = stream;
  if (new_thread) {
    pthread_t thread;
    if (pthread_create(&thread, NULL, drain, &job) != 0) return -1;
    pthread_join(thread, NULL);
  } else {
    drain(&job);
  }
  *batches = job.batches;
  *elements = job.elements;
  *ns = job.ns;
  snprintf(message, (size_t)message_size, "%s", job.message);
  return job.rc;
}

/* ---- a C producer at the floor ---------------------------------------- */

static int32_t endless_values[1024];
static const void* endless_buffers[2] = {NULL, endless_values};

static void static_release_array(struct ArrowArray* array) { array->release = NULL; }

/* A CPU int32 array of `length` over static `buffers` (release only marks it
 * released). */
static void fill_static_int32(struct ArrowDeviceArray* out, int64_t length,
                              const void** buffers) {
  *out = (struct ArrowDeviceArray){
      .array = {.length = length, .n_buffers = 2, .buffers = buffers,
                .release = static_release_array},
      .device_id = -1,
      .device_type = ARROW_DEVICE_CPU};
}

static int endless_get_schema(struct ArrowDeviceArrayStream* s, struct ArrowSchema* out) {
  (void)s;
  return ferry_schema_init(out, "i", "x", ARROW_FLAG_NULLABLE, 0, NULL);
}

static int endless_get_next(struct ArrowDeviceArrayStream* s, struct ArrowDeviceArray* out) {
  fill_static_int32(out, (int64_t)(intptr_t)s->private_data, endless_buffers);
  return 0;
}

static const char* endless_last_error(struct ArrowDeviceArrayStream* s) {
  (void)s;
  return NULL;
}

static void endless_release(struct ArrowDeviceArrayStream* s) { s->release = NULL; }

void chelper_endless_stream(struct ArrowDeviceArrayStream* out, int64_t length) {
  if (length > 1024) length = 1024;
  for (int i = 0; i < 1024; i++) endless_values[i] = i;
  *out = (struct ArrowDeviceArrayStream){.device_type = ARROW_DEVICE_CPU,
                                         .get_schema = endless_get_schema,
                                         .get_next = endless_get_next,
                                         .get_last_error = endless_last_error,
                                         .release = endless_release,
                                         .private_data = (void*)(intptr_t)length};
}

int32_t chelper_consume_array(struct ArrowDeviceArray* array) {
  struct ArrowDeviceArray mine;
  memcpy(&mine, array, sizeof(mine));
  array->array.release = NULL;
  const int32_t* values = mine.array.buffers[1];
  int32_t first = mine.array.length > 0 ? values[mine.array.offset] : 0;
  mine.array.release(&mine.array);
  return first;
}

static void* call_go_loop(void* arg) {
  int64_t* n_and_ns = arg;
  int64_t start = now_ns();
  int64_t acc = 0;
  for (int64_t i = 0; i < n_and_ns[0]; i++) acc = chelperNoop(acc);
  n_and_ns[1] = now_ns() - start;
  n_and_ns[2] = acc;
  return NULL;
}

int64_t chelper_call_go(int64_t n, int new_thread) {
  int64_t n_and_ns[3] = {n, 0, 0};
  if (new_thread) {
    pthread_t thread;
    if (pthread_create(&thread, NULL, call_go_loop, n_and_ns) != 0) return -1;
    pthread_join(thread, NULL);
  } else {
    call_go_loop(n_and_ns);
  }
  return n_and_ns[1];
}

int64_t chelper_c2c_handoffs(int64_t n) {
  struct ArrowDeviceArrayStream stream;
  chelper_endless_stream(&stream, 1024);
  struct ArrowDeviceArray batch;
  int64_t start = now_ns();
  volatile int32_t sink = 0;
  for (int64_t i = 0; i < n; i++) {
    stream.get_next(&stream, &batch);
    sink += chelper_consume_array(&batch);
  }
  (void)sink;
  stream.release(&stream);
  return now_ns() - start;
}

/* ---- a C DLPack producer ------------------------------------------------ */

static _Atomic int64_t dlpack_deleted;

struct chelper_tensor {
  DLManagedTensorVersioned managed;
  int64_t shape[2];
  int64_t values[];
};

static void chelper_tensor_delete(DLManagedTensorVersioned* self) {
  atomic_fetch_add(&dlpack_deleted, 1);
  free(self->manager_ctx);
}

DLManagedTensorVersioned* chelper_dlpack_tensor(int64_t n, int32_t ndim) {
  struct chelper_tensor* t = calloc(1, sizeof(*t) + (size_t)n * sizeof(int64_t));
  if (t == NULL) return NULL;
  for (int64_t i = 0; i < n; i++) t->values[i] = 3 * i;
  t->managed.version.major = DLPACK_MAJOR_VERSION;
  t->managed.version.minor = DLPACK_MINOR_VERSION;
  t->managed.manager_ctx = t;
  t->managed.deleter = chelper_tensor_delete;
  t->managed.dl_tensor.data = t->values;
  t->managed.dl_tensor.device.device_type = kDLCPU;
  t->managed.dl_tensor.device.device_id = 0;
  t->managed.dl_tensor.ndim = ndim;
  t->managed.dl_tensor.dtype.code = kDLInt;
  t->managed.dl_tensor.dtype.bits = 64;
  t->managed.dl_tensor.dtype.lanes = 1;
  if (ndim == 2) {
    t->shape[0] = 1;
    t->shape[1] = n;
  } else {
    t->shape[0] = n;
  }
  t->managed.dl_tensor.shape = t->shape;
  return &t->managed;
}

int64_t chelper_dlpack_deleted(void) { return atomic_load(&dlpack_deleted); }

void* chelper_alloc(int64_t size) { return malloc((size_t)size); }

void chelper_free(void* ptr) { free(ptr); }

void* chelper_move_child_out(struct ArrowDeviceArray* array, int64_t i,
                             struct ArrowDeviceArray* dst) {
  struct ArrowArray* child = ferry_array_child(&array->array, i);
  ferry_array_move(child, &dst->array);
  dst->device_type = ARROW_DEVICE_CPU;
  dst->device_id = -1;
  int64_t n = ferry_array_n_buffers(&dst->array);
  return (void*)ferry_array_buffer(&dst->array, n - 1);
}

/* ---- a static C producer for the consumer benchmarks ---------------------- */

static int32_t static_values[256];
static const void* static_buffers[2] = {NULL, static_values};

static void static_release_schema(struct ArrowSchema* schema) { schema->release = NULL; }

void chelper_fill_static(struct ArrowSchema* schema, struct ArrowDeviceArray* array) {
  static_values[0] = 256;
  *schema = (struct ArrowSchema){.format = "i", .name = "values", .release = static_release_schema};
  fill_static_int32(array, 256, static_buffers);
}

void chelper_release_pair(struct ArrowSchema* schema, struct ArrowDeviceArray* array) {
  if (schema->release != NULL) schema->release(schema);
  if (array->array.release != NULL) array->array.release(&array->array);
}
