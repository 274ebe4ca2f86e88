/* The C column of docs/features.md: one test per capability, named
 * feature_<id>, calling the C API the table names for real (on the CPU and
 * on the simulated device, whose strict mode makes a missed wait visible).
 * scripts/check_features.sh checks that every "yes" cell of the C column has
 * its test here and that no "no" cell has one. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ferry/dlpack_abi.h"
#include "ferry/ferry.h"
#include "ferry_test.h"

/* ---- helpers: one int32 column, produced on the CPU or the sim device -------- */

static int g_hooks; /* release hooks run */

static void count_hook(void* user_data) {
  free(user_data);
  g_hooks++;
}

/* An int32 array [1..n] in malloc'd memory the release hook frees. */
static void export_cpu(int64_t n, struct ArrowSchema* schema, struct ArrowDeviceArray* out) {
  int32_t* values = malloc((size_t)n * sizeof *values);
  CHECK(values != NULL);
  for (int64_t i = 0; i < n; i++) values[i] = (int32_t)(i + 1);
  const void* buffers[2] = {NULL, values};
  struct ArrowArray array = {0};
  CHECK_EQ_INT(FERRY_OK, ferry_schema_init(schema, "i", "v", 0, 0, NULL));
  CHECK_EQ_INT(FERRY_OK, ferry_array_init(&array, n, 0, 0, 2, buffers, 0, count_hook, values, NULL));
  CHECK_EQ_INT(FERRY_OK,
               ferry_device_array_init(out, &array, ARROW_DEVICE_CPU, -1, NULL, NULL, NULL, NULL));
}

static struct FerryDevice* device(ArrowDeviceType type, int64_t id) {
  struct FerryDevice* d = NULL;
  CHECK_EQ_INT(FERRY_OK, ferry_device_resolve(type, id, &d, NULL));
  return d;
}

struct sim_column {
  struct FerryDevice* sim;
  void* data;
  int32_t* staging;
  void* own_stream; /* the producer's stream, kept until release, or NULL */
};

static void free_sim_column(void* user_data) {
  struct sim_column* c = user_data;
  /* Destroying the stream completes its queued work (the copy reading
   * `staging`) before the memory goes. */
  if (c->own_stream != NULL) ferry_device_stream_destroy(c->sim, c->own_stream, NULL);
  ferry_device_deallocate(c->sim, c->data, NULL);
  free(c->staging);
  free(c);
  g_hooks++;
}

/* [1..n] copied to sim:0 on `stream` (the producer's), still pending; the
 * array is built by `init`, which records or passes the event. */
static struct sim_column* sim_column(int64_t n, void* stream) {
  struct sim_column* c = calloc(1, sizeof *c);
  CHECK(c != NULL);
  c->sim = device(ARROW_DEVICE_EXT_DEV, 0);
  c->staging = malloc((size_t)n * sizeof(int32_t));
  CHECK(c->staging != NULL);
  for (int64_t i = 0; i < n; i++) c->staging[i] = (int32_t)(i + 1);
  CHECK_EQ_INT(FERRY_OK, ferry_device_allocate(c->sim, n * 4, &c->data, NULL));
  CHECK_EQ_INT(FERRY_OK, ferry_device_memcpy(c->sim, c->data, device(ARROW_DEVICE_CPU, -1),
                                             c->staging, n * 4, stream, NULL));
  return c;
}

/* An int32 array [1..n] on sim:0 produced on a new stream, exported with
 * the event recorded on it (pending in strict mode); the stream lives until
 * the array is released. */
static void export_sim(int64_t n, struct ArrowSchema* schema, struct ArrowDeviceArray* out) {
  struct FerryDevice* sim = device(ARROW_DEVICE_EXT_DEV, 0);
  void* stream = NULL;
  CHECK_EQ_INT(FERRY_OK, ferry_device_stream_create(sim, &stream, NULL));
  struct sim_column* c = sim_column(n, stream);
  c->own_stream = stream;
  const void* buffers[2] = {NULL, c->data};
  struct ArrowArray array = {0};
  CHECK_EQ_INT(FERRY_OK, ferry_schema_init(schema, "i", "v", 0, 0, NULL));
  CHECK_EQ_INT(FERRY_OK,
               ferry_array_init(&array, n, 0, 0, 2, buffers, 0, free_sim_column, c, NULL));
  CHECK_EQ_INT(FERRY_OK, ferry_device_array_init_async(out, &array, sim, stream,
                                                       FERRY_SYNC_RECORD_EVENT, NULL));
}

/* The first value of a sim array, read in place (poison until waited on). */
static unsigned char first_byte(struct ArrowDeviceArray* array) {
  return *(const unsigned char*)ferry_array_buffer(ferry_device_array_array(array), 1);
}

/* The sum of an int32 CPU array's values. */
static int64_t sum_cpu(struct ArrowDeviceArray* array) {
  struct ArrowArray* a = ferry_device_array_array(array);
  const int32_t* v = ferry_array_buffer(a, 1);
  int64_t sum = 0;
  for (int64_t i = 0; i < ferry_array_length(a); i++) sum += v[ferry_array_offset(a) + i];
  return sum;
}

/* Reads `stream` to its end, releasing each batch; returns the sum of every
 * batch's values, with the number of batches in *batches. */
static int64_t sum_stream(struct ArrowDeviceArrayStream* stream, int64_t* batches) {
  int64_t sum = 0;
  *batches = 0;
  for (;;) {
    struct ArrowDeviceArray batch = {0};
    CHECK_EQ_INT(FERRY_OK, ferry_array_stream_get_next(stream, &batch, NULL));
    if (ferry_device_array_is_released(&batch)) return sum; /* the end */
    (*batches)++;
    sum += sum_cpu(&batch);
    ferry_device_array_release(&batch);
  }
}

/* ---- the capabilities --------------------------------------------------------- */

FERRY_TEST(feature_export_array) {
  g_hooks = 0;
  struct ArrowSchema schema = {0};
  struct ArrowDeviceArray out = {0};
  export_cpu(4, &schema, &out);
  const int32_t* seen = ferry_array_buffer(ferry_device_array_array(&out), 1);
  CHECK_EQ_INT(3, seen[2]);
  CHECK_EQ_INT(0, g_hooks);
  ferry_device_array_release(&out);
  CHECK_EQ_INT(1, g_hooks); /* the release hook gave the memory back */
  ferry_schema_release(&schema);
}

FERRY_TEST(feature_import_array) {
  g_hooks = 0;
  struct ArrowSchema schema = {0};
  struct ArrowDeviceArray exported = {0}, mine = {0};
  export_sim(8, &schema, &exported);
  CHECK_EQ_INT(FERRY_OK, ferry_device_array_move(&exported, &mine));
  CHECK(ferry_device_array_is_released(&exported));
  CHECK_EQ_INT(FERRY_SIM_POISON_BYTE, first_byte(&mine)); /* not waited on yet */
  CHECK_EQ_INT(FERRY_OK, ferry_validate_device_array(&schema, &mine, FERRY_VALIDATE_DEFAULT,
                                                     NULL, NULL, NULL));
  CHECK_EQ_INT(FERRY_OK, ferry_device_array_wait(&mine, NULL, NULL));
  CHECK_EQ_INT(1, first_byte(&mine));
  ferry_device_array_release(&mine);
  ferry_schema_release(&schema);
  CHECK_EQ_INT(1, g_hooks);
}

/* A stream of three CPU batches [1..1], [1..2], [1..3]. */
static void export_three(struct ArrowDeviceArrayStream* out) {
  struct ArrowSchema schema = {0};
  struct ArrowDeviceArray batches[3];
  memset(batches, 0, sizeof batches);
  for (int b = 0; b < 3; b++) {
    struct ArrowSchema unused = {0};
    export_cpu(b + 1, b == 0 ? &schema : &unused, &batches[b]);
    ferry_schema_release(&unused);
  }
  CHECK_EQ_INT(FERRY_OK, ferry_array_stream_init_from_arrays(out, ARROW_DEVICE_CPU, &schema,
                                                             batches, 3, NULL));
}

FERRY_TEST(feature_export_stream) {
  g_hooks = 0;
  struct ArrowDeviceArrayStream stream = {0};
  export_three(&stream);
  CHECK(!ferry_array_stream_is_released(&stream));
  CHECK_EQ_INT(ARROW_DEVICE_CPU, ferry_array_stream_device_type(&stream));
  ferry_array_stream_release(&stream); /* unread batches are released with it */
  CHECK_EQ_INT(3, g_hooks);
}

FERRY_TEST(feature_import_stream) {
  g_hooks = 0;
  struct ArrowDeviceArrayStream stream = {0};
  struct ArrowSchema schema = {0};
  export_three(&stream);
  CHECK_EQ_INT(FERRY_OK, ferry_array_stream_get_schema(&stream, &schema, NULL));
  CHECK_STR("i", ferry_schema_format(&schema));
  int64_t batches = 0;
  CHECK_EQ_INT(1 + 3 + 6, sum_stream(&stream, &batches));
  CHECK_EQ_INT(3, batches);
  ferry_schema_release(&schema);
  ferry_array_stream_release(&stream);
  CHECK_EQ_INT(3, g_hooks);
}

/* The C stream interface (ArrowArrayStream, CPU data) in and out through the
 * core's adapters: a device stream out as a plain stream, read with the plain
 * stream's own callbacks; a plain stream in as a CPU device stream. */
FERRY_TEST(feature_export_c_stream) {
  g_hooks = 0;
  struct ArrowDeviceArrayStream device = {0};
  struct ArrowArrayStream plain = {0};
  export_three(&device);
  CHECK_EQ_INT(FERRY_OK, ferry_array_stream_to_cpu_stream(&device, FERRY_VALIDATE_DEFAULT, 0,
                                                          &plain, NULL));
  int64_t batches = 0, total = 0;
  for (;;) {
    struct ArrowArray batch = {0};
    CHECK_EQ_INT(0, plain.get_next(&plain, &batch));
    if (batch.release == NULL) break; /* the end */
    batches++;
    total += batch.length;
    batch.release(&batch);
  }
  CHECK_EQ_INT(3, batches);
  CHECK_EQ_INT(1 + 2 + 3, total);
  plain.release(&plain);
  CHECK_EQ_INT(3, g_hooks);
}

FERRY_TEST(feature_import_c_stream) {
  g_hooks = 0;
  struct ArrowDeviceArrayStream device = {0}, back = {0};
  struct ArrowArrayStream plain = {0};
  export_three(&device);
  CHECK_EQ_INT(FERRY_OK, ferry_array_stream_to_cpu_stream(&device, FERRY_VALIDATE_NONE, 0,
                                                          &plain, NULL));
  CHECK_EQ_INT(FERRY_OK, ferry_array_stream_from_cpu_stream(&plain, &back, NULL));
  CHECK_EQ_INT(ARROW_DEVICE_CPU, ferry_array_stream_device_type(&back));
  int64_t batches = 0;
  CHECK_EQ_INT(1 + 3 + 6, sum_stream(&back, &batches));
  CHECK_EQ_INT(3, batches);
  ferry_array_stream_release(&back);
  CHECK_EQ_INT(3, g_hooks);
}

FERRY_TEST(feature_to_host) {
  struct ArrowSchema schema = {0};
  struct ArrowDeviceArray on_sim = {0}, host = {0};
  export_sim(5, &schema, &on_sim);
  /* The sim device models a GPU: the host copy waits on the event first. */
  CHECK_EQ_INT(FERRY_OK, ferry_device_array_move_to_device(&schema, &on_sim, ARROW_DEVICE_CPU,
                                                           -1, &host, NULL));
  CHECK(ferry_device_array_is_released(&on_sim));
  CHECK_EQ_INT(ARROW_DEVICE_CPU, ferry_device_array_device_type(&host));
  CHECK_EQ_INT(15, sum_cpu(&host));
  ferry_device_array_release(&host);
  ferry_schema_release(&schema);
}

FERRY_TEST(feature_copy_to_device) {
  struct ArrowSchema schema = {0};
  struct ArrowDeviceArray cpu = {0}, on_sim = {0}, back = {0};
  export_cpu(6, &schema, &cpu);
  CHECK_EQ_INT(FERRY_OK,
               ferry_device_array_copy(&schema, &cpu, ARROW_DEVICE_EXT_DEV, 2, &on_sim, NULL));
  CHECK_EQ_INT(ARROW_DEVICE_EXT_DEV, ferry_device_array_device_type(&on_sim));
  CHECK_EQ_INT(2, ferry_device_array_device_id(&on_sim));
  CHECK(ferry_array_buffer(ferry_device_array_array(&on_sim), 1) !=
        ferry_array_buffer(ferry_device_array_array(&cpu), 1));
  CHECK_EQ_INT(FERRY_OK,
               ferry_device_array_copy(&schema, &on_sim, ARROW_DEVICE_CPU, -1, &back, NULL));
  CHECK_EQ_INT(21, sum_cpu(&back));
  CHECK_EQ_INT(21, sum_cpu(&cpu)); /* the source stays the caller's */
  ferry_device_array_release(&back);
  ferry_device_array_release(&on_sim);
  ferry_device_array_release(&cpu);
  ferry_schema_release(&schema);
}

FERRY_TEST(feature_move_to_device) {
  struct ArrowSchema schema = {0};
  struct ArrowDeviceArray cpu = {0}, same = {0}, on_sim = {0};
  export_cpu(3, &schema, &cpu);
  const void* address = ferry_array_buffer(ferry_device_array_array(&cpu), 1);
  /* The same device: zero-copy. */
  CHECK_EQ_INT(FERRY_OK, ferry_device_array_move_to_device(&schema, &cpu, ARROW_DEVICE_CPU, -1,
                                                           &same, NULL));
  CHECK(ferry_array_buffer(ferry_device_array_array(&same), 1) == address);
  /* Another device: a copy, and the source is consumed. */
  CHECK_EQ_INT(FERRY_OK, ferry_device_array_move_to_device(&schema, &same, ARROW_DEVICE_EXT_DEV,
                                                           1, &on_sim, NULL));
  CHECK(ferry_device_array_is_released(&same));
  CHECK_EQ_INT(ARROW_DEVICE_EXT_DEV, ferry_device_array_device_type(&on_sim));
  ferry_device_array_release(&on_sim);
  ferry_schema_release(&schema);
}

FERRY_TEST(feature_consumer_stream_array) {
  struct ArrowSchema schema = {0};
  struct ArrowDeviceArray array = {0};
  export_sim(4, &schema, &array);
  struct FerryDevice* sim = device(ARROW_DEVICE_EXT_DEV, 0);
  void* consumer = NULL;
  CHECK_EQ_INT(FERRY_OK, ferry_device_stream_create(sim, &consumer, NULL));
  /* The consumer's stream waits; the host does not block. */
  CHECK_EQ_INT(FERRY_OK, ferry_device_array_wait(&array, consumer, NULL));
  CHECK_EQ_INT(FERRY_OK, ferry_device_stream_synchronize(sim, consumer, NULL));
  CHECK_EQ_INT(1, first_byte(&array));
  CHECK_EQ_INT(FERRY_OK, ferry_device_stream_destroy(sim, consumer, NULL));
  ferry_device_array_release(&array);
  ferry_schema_release(&schema);
}

FERRY_TEST(feature_consumer_stream_batch) {
  struct ArrowSchema schema = {0};
  struct ArrowDeviceArray batch = {0}, stream_batches[1];
  memset(stream_batches, 0, sizeof stream_batches);
  struct ArrowDeviceArrayStream stream = {0};
  export_sim(4, &schema, &stream_batches[0]);
  CHECK_EQ_INT(FERRY_OK, ferry_array_stream_init_from_arrays(&stream, ARROW_DEVICE_EXT_DEV,
                                                             &schema, stream_batches, 1, NULL));
  struct FerryDevice* sim = device(ARROW_DEVICE_EXT_DEV, 0);
  void* consumer = NULL;
  CHECK_EQ_INT(FERRY_OK, ferry_device_stream_create(sim, &consumer, NULL));
  CHECK_EQ_INT(FERRY_OK, ferry_array_stream_get_next_on(&stream, &batch, consumer, NULL));
  CHECK(!ferry_device_array_is_released(&batch));
  CHECK_EQ_INT(FERRY_OK, ferry_device_stream_synchronize(sim, consumer, NULL));
  CHECK_EQ_INT(1, first_byte(&batch));
  ferry_device_array_release(&batch);
  CHECK_EQ_INT(FERRY_OK, ferry_device_stream_destroy(sim, consumer, NULL));
  ferry_array_stream_release(&stream);
}

FERRY_TEST(feature_wrap_native_stream) {
  g_hooks = 0;
  struct FerryDevice* sim = device(ARROW_DEVICE_EXT_DEV, 0);
  void* mine = NULL; /* the user's own stream, the producer's work queued on it */
  CHECK_EQ_INT(FERRY_OK, ferry_device_stream_create(sim, &mine, NULL));
  struct sim_column* c = sim_column(3, mine);
  const void* buffers[2] = {NULL, c->data};
  struct ArrowArray array = {0};
  struct ArrowDeviceArray out = {0};
  CHECK_EQ_INT(FERRY_OK, ferry_array_init(&array, 3, 0, 0, 2, buffers, 0, free_sim_column, c, NULL));
  CHECK_EQ_INT(FERRY_OK,
               ferry_device_array_init_async(&out, &array, sim, mine, FERRY_SYNC_RECORD_EVENT, NULL));
  CHECK(ferry_device_array_sync_event(&out) != NULL); /* recorded on the user's stream */
  CHECK_EQ_INT(FERRY_SIM_POISON_BYTE, first_byte(&out));
  CHECK_EQ_INT(FERRY_OK, ferry_device_array_wait(&out, NULL, NULL));
  CHECK_EQ_INT(1, first_byte(&out));
  ferry_device_array_release(&out);
  CHECK_EQ_INT(1, g_hooks);
  CHECK_EQ_INT(FERRY_OK, ferry_device_stream_destroy(sim, mine, NULL));
}

static int g_event_released;
static void release_event(void* user_data) {
  struct FerryDevice* sim = device(ARROW_DEVICE_EXT_DEV, 0);
  CHECK_EQ_INT(FERRY_OK, ferry_device_event_destroy(sim, user_data, NULL));
  g_event_released++;
}

FERRY_TEST(feature_wrap_native_event) {
  g_event_released = 0;
  struct FerryDevice* sim = device(ARROW_DEVICE_EXT_DEV, 0);
  void* stream = NULL;
  void* event = NULL; /* the user's own event */
  CHECK_EQ_INT(FERRY_OK, ferry_device_stream_create(sim, &stream, NULL));
  CHECK_EQ_INT(FERRY_OK, ferry_device_event_create(sim, &event, NULL));
  struct sim_column* c = sim_column(3, stream);
  CHECK_EQ_INT(FERRY_OK, ferry_device_event_record(sim, event, stream, NULL));
  const void* buffers[2] = {NULL, c->data};
  struct ArrowArray array = {0};
  struct ArrowDeviceArray out = {0};
  CHECK_EQ_INT(FERRY_OK, ferry_array_init(&array, 3, 0, 0, 2, buffers, 0, free_sim_column, c, NULL));
  CHECK_EQ_INT(FERRY_OK, ferry_device_array_init(&out, &array, ARROW_DEVICE_EXT_DEV, 0, event,
                                                 release_event, event, NULL));
  CHECK(ferry_device_array_sync_event(&out) == event);
  CHECK_EQ_INT(FERRY_OK, ferry_device_array_wait(&out, NULL, NULL));
  CHECK_EQ_INT(1, first_byte(&out));
  ferry_device_array_release(&out);
  CHECK_EQ_INT(1, g_event_released); /* the event's lifetime ends with the array */
  CHECK_EQ_INT(FERRY_OK, ferry_device_stream_destroy(sim, stream, NULL));
}

FERRY_TEST(feature_dlpack_export) {
  g_hooks = 0;
  struct ArrowSchema schema = {0};
  struct ArrowDeviceArray array = {0};
  export_cpu(4, &schema, &array);
  const void* address = ferry_array_buffer(ferry_device_array_array(&array), 1);
  struct DLManagedTensorVersioned* tensor = NULL;
  CHECK_EQ_INT(FERRY_OK, ferry_device_array_to_dlpack(&schema, &array, NULL, &tensor, NULL));
  CHECK(ferry_device_array_is_released(&array)); /* moved into the tensor */
  CHECK(tensor->dl_tensor.data == address);
  CHECK_EQ_INT(1, tensor->dl_tensor.ndim);
  CHECK_EQ_INT(4, tensor->dl_tensor.shape[0]);
  tensor->deleter(tensor);
  CHECK_EQ_INT(1, g_hooks);
  ferry_schema_release(&schema);
}

FERRY_TEST(feature_dlpack_import) {
  g_hooks = 0;
  struct ArrowSchema schema = {0}, imported_schema = {0};
  struct ArrowDeviceArray array = {0}, imported = {0};
  export_cpu(5, &schema, &array); /* a DLPack producer: ferry's own export */
  struct DLManagedTensorVersioned* tensor = NULL;
  CHECK_EQ_INT(FERRY_OK, ferry_device_array_to_dlpack(&schema, &array, NULL, &tensor, NULL));
  void* data = tensor->dl_tensor.data;
  CHECK_EQ_INT(FERRY_OK, ferry_device_array_from_dlpack(tensor, &imported_schema, &imported, NULL));
  CHECK_STR("i", ferry_schema_format(&imported_schema));
  CHECK(ferry_array_buffer(ferry_device_array_array(&imported), 1) == data);
  CHECK_EQ_INT(15, sum_cpu(&imported));
  ferry_device_array_release(&imported); /* calls the tensor's deleter */
  CHECK_EQ_INT(1, g_hooks);
  ferry_schema_release(&imported_schema);
  ferry_schema_release(&schema);
}

struct findings {
  int count;
  char first_rule[64];
};

static void note_finding(void* user_data, const char* rule, const char* where, const char* what) {
  struct findings* f = user_data;
  if (f->count++ == 0) snprintf(f->first_rule, sizeof f->first_rule, "%s", rule);
}

FERRY_TEST(feature_validate) {
  struct ArrowSchema schema = {0};
  struct ArrowDeviceArray array = {0};
  /* A utf8 array whose offsets run backwards: clean for DEFAULT (it reads no
   * buffer contents), a finding for FULL. */
  static const int32_t offsets[3] = {0, 3, 1};
  static const char data[] = "abc";
  const void* buffers[3] = {NULL, offsets, data};
  struct ArrowArray raw = {0};
  CHECK_EQ_INT(FERRY_OK, ferry_schema_init(&schema, "u", "s", 0, 0, NULL));
  CHECK_EQ_INT(FERRY_OK, ferry_array_init(&raw, 2, 0, 0, 3, buffers, 0, NULL, NULL, NULL));
  CHECK_EQ_INT(FERRY_OK,
               ferry_device_array_init(&array, &raw, ARROW_DEVICE_CPU, -1, NULL, NULL, NULL, NULL));
  struct findings f = {0, ""};
  CHECK_EQ_INT(FERRY_OK, ferry_validate_device_array(&schema, &array, FERRY_VALIDATE_DEFAULT,
                                                     note_finding, &f, NULL));
  CHECK_EQ_INT(0, f.count);
  struct FerryError error;
  ferry_error_init(&error);
  CHECK_EQ_INT(EINVAL, ferry_validate_device_array(&schema, &array, FERRY_VALIDATE_FULL,
                                                   note_finding, &f, &error));
  CHECK(f.count >= 1);
  CHECK_STR("offsets", f.first_rule);
  CHECK_CONTAINS(ferry_error_message(&error), "offset");
  ferry_device_array_release(&array);
  ferry_schema_release(&schema);
}

FERRY_TEST(feature_devices) {
  int found_sim = 0;
  for (int64_t i = 0; i < ferry_backend_count(); i++) {
    struct FerryError error;
    ferry_error_init(&error);
    int rc = ferry_backend_probe(i, &error);
    if (strcmp(ferry_backend_name(i), "sim") == 0) found_sim = rc == FERRY_OK;
    if (rc != FERRY_OK) CHECK(ferry_error_message(&error)[0] != '\0'); /* the reason */
  }
  CHECK(found_sim);
  struct FerryDevice* sim = device(ARROW_DEVICE_EXT_DEV, 3);
  CHECK_EQ_INT(3, ferry_device_id(sim));
  int64_t before = ferry_device_live_allocations(sim);
  void* memory = NULL;
  CHECK_EQ_INT(FERRY_OK, ferry_device_allocate(sim, 256, &memory, NULL));
  CHECK(memory != NULL);
  CHECK_EQ_INT(before + 1, ferry_device_live_allocations(sim));
  CHECK_EQ_INT(FERRY_OK, ferry_device_deallocate(sim, memory, NULL));
  CHECK_EQ_INT(before, ferry_device_live_allocations(sim));
}

/* A producer on its own thread pushes three batches with a sender; the
 * consumer reads them with a blocking next. */
struct PushThree {
  struct ArrowAsyncDeviceStreamHandler* handler;
  int result;
};

static void* push_three(void* arg) {
  struct PushThree* p = (struct PushThree*)arg;
  struct FerryAsyncSender* sender = NULL;
  p->result = ferry_async_sender_create(p->handler, ARROW_DEVICE_CPU, NULL, &sender, NULL);
  if (p->result != FERRY_OK) return NULL;
  struct ArrowSchema schema = {0};
  for (int b = 0; b < 3 && p->result == FERRY_OK; b++) {
    struct ArrowSchema unused = {0};
    struct ArrowDeviceArray batch = {0};
    export_cpu(b + 1, b == 0 ? &schema : &unused, &batch);
    if (b == 0) p->result = ferry_async_sender_send_schema(sender, &schema, NULL);
    else ferry_schema_release(&unused);
    if (p->result == FERRY_OK) p->result = ferry_async_sender_send(sender, &batch, NULL, -1, NULL);
    if (!ferry_device_array_is_released(&batch)) ferry_device_array_release(&batch);
  }
  int finished = ferry_async_sender_finish(sender, p->result, "the producer failed");
  if (p->result == FERRY_OK) p->result = finished;
  return NULL;
}

FERRY_TEST(feature_export_async) {
  g_hooks = 0;
  struct ArrowAsyncDeviceStreamHandler handler;
  memset(&handler, 0, sizeof handler);
  struct FerryAsyncConsumer* consumer = NULL;
  CHECK_EQ_INT(FERRY_OK, ferry_async_consumer_create(1, FERRY_VALIDATE_DEFAULT, &handler,
                                                     &consumer, NULL));
  struct PushThree push = {&handler, -1};
  pthread_t thread;
  CHECK_EQ_INT(0, pthread_create(&thread, NULL, push_three, &push));
  int64_t batches = 0, sum = 0;
  for (;;) {
    struct ArrowDeviceArray batch = {0};
    CHECK_EQ_INT(FERRY_OK, ferry_async_consumer_next(consumer, &batch, 10000, NULL));
    if (ferry_device_array_is_released(&batch)) break;
    batches++;
    sum += sum_cpu(&batch);
    ferry_device_array_release(&batch);
  }
  pthread_join(thread, NULL);
  CHECK_EQ_INT(FERRY_OK, push.result);
  CHECK_EQ_INT(3, batches);
  CHECK_EQ_INT(1 + 3 + 6, sum);
  CHECK_EQ_INT(FERRY_OK, ferry_async_consumer_wait_released(consumer, 10000));
  CHECK_EQ_INT(0, ferry_async_consumer_violations(consumer));
  ferry_async_consumer_free(consumer);
  CHECK_EQ_INT(3, g_hooks);
}

FERRY_TEST(feature_import_async) {
  g_hooks = 0;
  /* Any device stream pushed by ferry's thread, read as a device stream
   * again through the consumer's adapter. */
  struct ArrowDeviceArrayStream pull = {0}, adapted = {0};
  export_three(&pull);
  struct ArrowAsyncDeviceStreamHandler handler;
  memset(&handler, 0, sizeof handler);
  struct FerryAsyncConsumer* consumer = NULL;
  CHECK_EQ_INT(FERRY_OK, ferry_async_consumer_create(4, FERRY_VALIDATE_DEFAULT, &handler,
                                                     &consumer, NULL));
  CHECK(ferry_async_consumer_fd(consumer) >= 0);
  CHECK_EQ_INT(FERRY_OK, ferry_async_export_stream(&pull, &handler, FERRY_ASYNC_EXPORT_DEFAULT,
                                                   NULL));
  CHECK_EQ_INT(FERRY_OK, ferry_async_consumer_to_stream(consumer, 10000, &adapted, NULL));
  struct ArrowSchema schema = {0};
  CHECK_EQ_INT(FERRY_OK, ferry_array_stream_get_schema(&adapted, &schema, NULL));
  CHECK_STR("i", ferry_schema_format(&schema));
  int64_t batches = 0;
  CHECK_EQ_INT(1 + 3 + 6, sum_stream(&adapted, &batches));
  CHECK_EQ_INT(3, batches);
  /* `handler` lives on this stack: the exporting thread may touch it until it
   * released it, after the end marker this test has already read. */
  CHECK_EQ_INT(FERRY_OK, ferry_async_consumer_wait_released(consumer, 10000));
  ferry_schema_release(&schema);
  ferry_array_stream_release(&adapted);
  CHECK_EQ_INT(3, g_hooks);
}

FERRY_TEST_MAIN()
