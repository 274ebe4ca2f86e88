/* Tests of core/src/stream.c (named core_stream_test to stay distinct from the
 * C plugin's tests/integration/c/test/stream_test.c): the consumer wrappers over any
 * stream, and ferry's stream producers (callbacks, and a fixed list of arrays). */
#include <errno.h>
#include <stdint.h>

#include "ferry/ferry.h"
#include "ferry_test.h"
#include "struct_fill.h"

/* A scripted producer: yields `n_batches` int32 arrays on `device_type`,
 * then end of stream; optionally fails at batch `fail_at` with `fail_code`
 * and `fail_message` (NULL: no message), leaving `out` live when
 * `leave_live_on_error`. Counts every callback and hook. */
struct Script {
  int n_batches;
  ArrowDeviceType device_type;
  ArrowDeviceType batch_device_type;
  int fail_at;
  int fail_code;
  const char* fail_message;
  int leave_live_on_error;
  int produced;
  int get_next_calls;
  int get_schema_calls;
  int stream_hook_calls;
  int batch_hook_calls;
  int32_t values[4];
};

static void batch_hook(void* user_data) {
  ((struct Script*)user_data)->batch_hook_calls++;
}
static void stream_hook(void* user_data) {
  ((struct Script*)user_data)->stream_hook_calls++;
}

static int make_batch(struct Script* script, ArrowDeviceType device_type,
                      struct ArrowDeviceArray* out, struct FerryError* error) {
  const void* buffers[2] = {NULL, script->values};
  struct ArrowArray array = {0};
  int rc = ferry_array_init(&array, 4, 0, 0, 2, buffers, 0, batch_hook, script, error);
  if (rc != FERRY_OK) return rc;
  return ferry_device_array_init(out, &array, device_type,
                                 device_type == ARROW_DEVICE_CPU ? -1 : 0, NULL, NULL,
                                 NULL, error);
}

static int script_get_schema(void* user_data, struct ArrowSchema* out,
                             struct FerryError* error) {
  struct Script* script = (struct Script*)user_data;
  script->get_schema_calls++;
  return ferry_schema_init(out, "i", "values", 0, 0, error);
}

static int script_get_next(void* user_data, struct ArrowDeviceArray* out,
                           struct FerryError* error) {
  struct Script* script = (struct Script*)user_data;
  script->get_next_calls++;
  if (script->produced == script->fail_at) {
    script->fail_at = -1; /* fail once */
    if (script->leave_live_on_error) {
      int rc = make_batch(script, script->batch_device_type, out, NULL);
      if (rc != FERRY_OK) return rc;
    }
    if (script->fail_message != NULL) {
      snprintf(error->message, sizeof(error->message), "%s", script->fail_message);
    }
    return script->fail_code;
  }
  if (script->produced >= script->n_batches)
    return FERRY_OK; /* end: out stays released */
  script->values[0] = script->produced;
  script->produced++;
  return make_batch(script, script->batch_device_type, out, error);
}

static struct Script new_script(int n_batches) {
  struct Script script;
  memset(&script, 0, sizeof(script));
  script.n_batches = n_batches;
  script.device_type = ARROW_DEVICE_CPU;
  script.batch_device_type = ARROW_DEVICE_CPU;
  script.fail_at = -1;
  return script;
}

/* A script whose get_next fails once, at batch `at`, with `code` and
 * `message` (NULL: no message). */
static struct Script failing_script(int n_batches, int at, int code, const char* message) {
  struct Script script = new_script(n_batches);
  script.fail_at = at;
  script.fail_code = code;
  script.fail_message = message;
  return script;
}

static int init_stream(struct ArrowDeviceArrayStream* stream, struct Script* script) {
  memset(stream, 0, sizeof(*stream));
  return ferry_array_stream_init(stream, script->device_type, script_get_schema,
                           script_get_next, stream_hook, script, NULL);
}

FERRY_TEST(stream_yields_batches_then_end_forever) {
  int64_t base = ferry_live_exports();
  struct Script script = new_script(3);
  struct ArrowDeviceArrayStream stream;
  struct FerryError error;
  CHECK_EQ_INT(FERRY_OK, init_stream(&stream, &script));
  CHECK_EQ_INT(base + 1, ferry_live_exports());
  CHECK(!ferry_array_stream_is_released(&stream));
  CHECK_EQ_INT(ARROW_DEVICE_CPU, ferry_array_stream_device_type(&stream));

  struct ArrowSchema schema = {0};
  CHECK_EQ_INT(FERRY_OK, ferry_array_stream_get_schema(&stream, &schema, &error));
  CHECK_STR("i", ferry_schema_format(&schema));
  CHECK_STR("values", ferry_schema_name(&schema));
  ferry_schema_release(&schema);

  for (int i = 0; i < 3; i++) {
    struct ArrowDeviceArray batch = {0};
    CHECK_EQ_INT(FERRY_OK, ferry_array_stream_get_next(&stream, &batch, &error));
    CHECK(!ferry_device_array_is_released(&batch));
    CHECK_EQ_INT(ARROW_DEVICE_CPU, ferry_device_array_device_type(&batch));
    const int32_t* values = (const int32_t*)ferry_array_buffer(&batch.array, 1);
    CHECK_EQ_INT(i, values[0]);
    ferry_device_array_release(&batch);
  }
  CHECK_EQ_INT(3, script.batch_hook_calls);
  for (int i = 0; i < 3; i++) {
    struct ArrowDeviceArray batch = {0};
    CHECK_EQ_INT(FERRY_OK, ferry_array_stream_get_next(&stream, &batch, &error));
    CHECK(ferry_device_array_is_released(&batch));
  }
  /* The producer saw one end-of-stream call; ferry answered the rest. */
  CHECK_EQ_INT(4, script.get_next_calls);
  CHECK(ferry_array_stream_get_last_error(&stream) == NULL);
  ferry_array_stream_release(&stream);
  ferry_array_stream_release(&stream);
  CHECK_EQ_INT(1, script.stream_hook_calls);
  CHECK(ferry_array_stream_is_released(&stream));
  CHECK_EQ_INT(base, ferry_live_exports());
}

FERRY_TEST(stream_error_message_propagates_and_clears) {
  int64_t base = ferry_live_exports();
  struct Script script = failing_script(2, 1, EIO, "disk on fire at batch 1");
  struct ArrowDeviceArrayStream stream;
  struct FerryError error;
  CHECK_EQ_INT(FERRY_OK, init_stream(&stream, &script));
  struct ArrowDeviceArray batch = {0};
  CHECK_EQ_INT(FERRY_OK, ferry_array_stream_get_next(&stream, &batch, &error));
  ferry_device_array_release(&batch);
  ferry_error_init(&error);
  CHECK_EQ_INT(EIO, ferry_array_stream_get_next(&stream, &batch, &error));
  CHECK_STR("disk on fire at batch 1", error.message);
  CHECK_STR("disk on fire at batch 1", ferry_array_stream_get_last_error(&stream));
  CHECK(ferry_device_array_is_released(&batch));
  /* The next call succeeds and clears the last error. */
  CHECK_EQ_INT(FERRY_OK, ferry_array_stream_get_next(&stream, &batch, &error));
  CHECK(!ferry_device_array_is_released(&batch));
  CHECK(ferry_array_stream_get_last_error(&stream) == NULL);
  ferry_device_array_release(&batch);
  ferry_array_stream_release(&stream);
  CHECK_EQ_INT(base, ferry_live_exports());
}

FERRY_TEST(stream_error_without_message_gets_a_generic_one) {
  int64_t base = ferry_live_exports();
  struct Script script = failing_script(1, 0, ENOMEM, NULL);
  struct ArrowDeviceArrayStream stream;
  struct FerryError error;
  CHECK_EQ_INT(FERRY_OK, init_stream(&stream, &script));
  struct ArrowDeviceArray batch = {0};
  CHECK_EQ_INT(ENOMEM, ferry_array_stream_get_next(&stream, &batch, &error));
  CHECK_STR("get_next failed with ENOMEM (no message from producer)", error.message);
  CHECK_STR("get_next failed with ENOMEM (no message from producer)",
            ferry_array_stream_get_last_error(&stream));
  ferry_array_stream_release(&stream);
  CHECK_EQ_INT(base, ferry_live_exports());
}

FERRY_TEST(producer_leaving_out_live_on_error_does_not_leak) {
  int64_t base = ferry_live_exports();
  struct Script script = failing_script(1, 0, EIO, "half-built batch");
  script.leave_live_on_error = 1;
  struct ArrowDeviceArrayStream stream;
  struct FerryError error;
  CHECK_EQ_INT(FERRY_OK, init_stream(&stream, &script));
  struct ArrowDeviceArray batch = {0};
  CHECK_EQ_INT(EIO, ferry_array_stream_get_next(&stream, &batch, &error));
  CHECK_STR("half-built batch", error.message);
  CHECK(ferry_device_array_is_released(&batch));
  CHECK_EQ_INT(1, script.batch_hook_calls); /* the stray batch was released */
  ferry_array_stream_release(&stream);
  CHECK_EQ_INT(base, ferry_live_exports());
}

FERRY_TEST(device_type_mismatch_is_rejected_and_the_batch_released) {
  int64_t base = ferry_live_exports();
  struct Script script = new_script(2);
  script.device_type = ARROW_DEVICE_EXT_DEV;
  script.batch_device_type = ARROW_DEVICE_CPU;
  struct ArrowDeviceArrayStream stream;
  struct FerryError error;
  CHECK_EQ_INT(FERRY_OK, init_stream(&stream, &script));
  CHECK_EQ_INT(ARROW_DEVICE_EXT_DEV, ferry_array_stream_device_type(&stream));
  struct ArrowDeviceArray batch = {0};
  CHECK_EQ_INT(EINVAL, ferry_array_stream_get_next(&stream, &batch, &error));
  CHECK_CONTAINS(error.message, "device type 1 (cpu)");
  CHECK_CONTAINS(error.message, "stream's device type is 12 (ext_dev)");
  CHECK(ferry_device_array_is_released(&batch));
  CHECK_EQ_INT(1, script.batch_hook_calls);
  ferry_array_stream_release(&stream);
  CHECK_EQ_INT(base, ferry_live_exports());
}

FERRY_TEST(consumer_calls_on_null_or_released_streams_are_einval) {
  struct FerryError error;
  struct ArrowSchema schema = {0};
  struct ArrowDeviceArray batch = {0};
  CHECK_EQ_INT(EINVAL, ferry_array_stream_get_schema(NULL, &schema, &error));
  CHECK_CONTAINS(error.message, "NULL");
  CHECK_EQ_INT(EINVAL, ferry_array_stream_get_next(NULL, &batch, &error));
  CHECK(ferry_array_stream_get_last_error(NULL) == NULL);
  CHECK_EQ_INT(1, ferry_array_stream_is_released(NULL));
  CHECK_EQ_INT(0, ferry_array_stream_device_type(NULL));

  struct Script script = new_script(1);
  struct ArrowDeviceArrayStream stream;
  CHECK_EQ_INT(FERRY_OK, init_stream(&stream, &script));
  ferry_array_stream_release(&stream);
  CHECK_EQ_INT(EINVAL, ferry_array_stream_get_schema(&stream, &schema, &error));
  CHECK_CONTAINS(error.message, "released");
  CHECK_EQ_INT(EINVAL, ferry_array_stream_get_next(&stream, &batch, &error));
  CHECK_CONTAINS(error.message, "released");
  CHECK(ferry_array_stream_get_last_error(&stream) == NULL);
  CHECK_EQ_INT(0, script.get_next_calls);
}

FERRY_TEST(consumer_refuses_live_out_and_null_out) {
  int64_t base = ferry_live_exports();
  struct Script script = new_script(2);
  struct ArrowDeviceArrayStream stream;
  struct FerryError error;
  CHECK_EQ_INT(FERRY_OK, init_stream(&stream, &script));
  struct ArrowDeviceArray batch = {0};
  CHECK_EQ_INT(FERRY_OK, ferry_array_stream_get_next(&stream, &batch, &error));
  CHECK_EQ_INT(EINVAL, ferry_array_stream_get_next(&stream, &batch, &error));
  CHECK_CONTAINS(error.message, "live array");
  CHECK_EQ_INT(EINVAL, ferry_array_stream_get_next(&stream, NULL, &error));
  struct ArrowSchema schema = {0};
  CHECK_EQ_INT(FERRY_OK, ferry_array_stream_get_schema(&stream, &schema, &error));
  CHECK_EQ_INT(EINVAL, ferry_array_stream_get_schema(&stream, &schema, &error));
  CHECK_CONTAINS(error.message, "live schema");
  CHECK_EQ_INT(EINVAL, ferry_array_stream_get_schema(&stream, NULL, &error));
  CHECK_EQ_INT(1, script.get_next_calls);
  ferry_schema_release(&schema);
  ferry_device_array_release(&batch);
  ferry_array_stream_release(&stream);
  CHECK_EQ_INT(base, ferry_live_exports());
}

FERRY_TEST(abi_callbacks_accept_uninitialised_out_and_guard_released_streams) {
  int64_t base = ferry_live_exports();
  struct Script script = new_script(1);
  struct ArrowDeviceArrayStream stream;
  CHECK_EQ_INT(FERRY_OK, init_stream(&stream, &script));
  struct ArrowDeviceArray batch;
  memset(&batch, 0xAB, sizeof(batch)); /* a consumer's uninitialised stack */
  CHECK_EQ_INT(FERRY_OK, stream.get_next(&stream, &batch));
  CHECK(batch.array.release != NULL);
  CHECK_EQ_INT(1, ferry_device_array_reserved_is_zero(&batch));
  batch.array.release(&batch.array);
  struct ArrowSchema schema;
  memset(&schema, 0xCD, sizeof(schema));
  CHECK_EQ_INT(FERRY_OK, stream.get_schema(&stream, &schema));
  schema.release(&schema);
  CHECK(stream.get_last_error(&stream) == NULL);
  /* After release the callbacks are still reachable through a stale copy
   * of the struct; they must refuse rather than touch freed memory. */
  struct ArrowDeviceArrayStream stale = stream;
  stream.release(&stream);
  CHECK(stream.release == NULL && stream.private_data == NULL);
  CHECK_EQ_INT(EINVAL, stream.get_next(&stream, &batch));
  CHECK_EQ_INT(EINVAL, stream.get_schema(&stream, &schema));
  CHECK(stream.get_last_error(&stream) == NULL);
  CHECK_EQ_INT(EINVAL, stale.get_next(NULL, &batch));
  CHECK_EQ_INT(base, ferry_live_exports());
}

/* A producer that writes only some fields, trusting ferry's zeroing. */
static int sparse_get_next(void* user_data, struct ArrowDeviceArray* out,
                           struct FerryError* error) {
  int* calls = (int*)user_data;
  if (++*calls > 1) return FERRY_OK; /* end of stream */
  static int32_t values[1] = {9};
  const void* buffers[2] = {NULL, values};
  int rc = ferry_array_init(&out->array, 1, 0, 0, 2, buffers, 0, NULL, NULL, error);
  out->device_type = ARROW_DEVICE_CPU;
  return rc;
}

FERRY_TEST(get_next_hands_the_producer_a_zeroed_struct_and_ends_zeroed) {
  int64_t base = ferry_live_exports();
  int calls = 0;
  struct ArrowDeviceArrayStream stream;
  memset(&stream, 0, sizeof(stream));
  CHECK_EQ_INT(FERRY_OK, ferry_array_stream_init(&stream, ARROW_DEVICE_CPU, NULL,
                                           sparse_get_next, NULL, &calls, NULL));
  struct ArrowDeviceArray batch, zero;
  memset(&zero, 0, sizeof(zero));
  memset(&batch, 0xAB, sizeof(batch)); /* a consumer's uninitialised stack */
  CHECK_EQ_INT(FERRY_OK, stream.get_next(&stream, &batch));
  CHECK(batch.array.release != NULL);
  /* Everything the producer did not write is zero, padding included. */
  struct ArrowDeviceArray expected;
  memset(&expected, 0, sizeof(expected));
  expected.array = batch.array;
  expected.device_type = ARROW_DEVICE_CPU;
  CHECK_EQ_INT(0, memcmp(&batch, &expected, sizeof(batch)));
  CHECK_EQ_INT(1, ferry_device_array_reserved_is_zero(&batch));
  ferry_device_array_release(&batch);
  /* End of stream on garbage memory: an all-zero struct, every time. */
  memset(&batch, 0xAB, sizeof(batch));
  CHECK_EQ_INT(FERRY_OK, stream.get_next(&stream, &batch));
  CHECK_EQ_INT(0, memcmp(&batch, &zero, sizeof(batch)));
  memset(&batch, 0xAB, sizeof(batch));
  batch.array.release = NULL; /* the wrapper wants a released struct */
  CHECK_EQ_INT(FERRY_OK, ferry_array_stream_get_next(&stream, &batch, NULL));
  CHECK_EQ_INT(0, memcmp(&batch, &zero, sizeof(batch)));
  ferry_array_stream_release(&stream);
  CHECK_EQ_INT(base, ferry_live_exports());
}

FERRY_TEST(stream_without_get_schema_reports_enosys) {
  int64_t base = ferry_live_exports();
  struct Script script = new_script(0);
  struct ArrowDeviceArrayStream stream = {0};
  struct FerryError error;
  CHECK_EQ_INT(FERRY_OK, ferry_array_stream_init(&stream, ARROW_DEVICE_CPU, NULL,
                                           script_get_next, NULL, &script, &error));
  struct ArrowSchema schema = {0};
  CHECK_EQ_INT(ENOSYS, ferry_array_stream_get_schema(&stream, &schema, &error));
  CHECK_CONTAINS(error.message, "no schema");
  CHECK(ferry_schema_is_released(&schema));
  ferry_array_stream_release(&stream);
  CHECK_EQ_INT(base, ferry_live_exports());
}

FERRY_TEST(stream_init_errors) {
  int64_t base = ferry_live_exports();
  struct Script script = new_script(0);
  struct FerryError error;
  struct ArrowDeviceArrayStream stream = {0};
  CHECK_EQ_INT(EINVAL, ferry_array_stream_init(NULL, ARROW_DEVICE_CPU, NULL, script_get_next,
                                         stream_hook, &script, &error));
  CHECK_EQ_INT(EINVAL, ferry_array_stream_init(&stream, ARROW_DEVICE_CPU, NULL, NULL,
                                         stream_hook, &script, &error));
  CHECK_CONTAINS(error.message, "get_next is NULL");
  CHECK_EQ_INT(EINVAL, ferry_array_stream_init(&stream, 0, NULL, script_get_next, stream_hook,
                                         &script, &error));
  CHECK_CONTAINS(error.message, "device type");
  CHECK_EQ_INT(FERRY_OK, init_stream(&stream, &script));
  CHECK_EQ_INT(EINVAL, ferry_array_stream_init(&stream, ARROW_DEVICE_CPU, NULL, script_get_next,
                                         stream_hook, &script, &error));
  CHECK_CONTAINS(error.message, "live stream");
  CHECK_EQ_INT(0, script.stream_hook_calls);
  ferry_array_stream_release(&stream);
  CHECK_EQ_INT(1, script.stream_hook_calls);
  CHECK_EQ_INT(base, ferry_live_exports());
}

/* ---- A foreign (hand-written) stream ------------------------------------ */

static int foreign_batch_releases;
static void foreign_batch_release(struct ArrowArray* array) {
  foreign_batch_releases++;
  array->release = NULL;
}
static int foreign_get_next_fails_live(struct ArrowDeviceArrayStream* stream,
                                       struct ArrowDeviceArray* out) {
  memset(out, 0, sizeof(*out));
  out->array.release = foreign_batch_release;
  return EAGAIN;
}
static int foreign_get_schema_fails(struct ArrowDeviceArrayStream* stream,
                                    struct ArrowSchema* out) {
  return EPROTO;
}
static const char* foreign_get_last_error(struct ArrowDeviceArrayStream* stream) {
  return (const char*)stream->private_data;
}
static void foreign_stream_release(struct ArrowDeviceArrayStream* stream) {
  stream->release = NULL;
}

FERRY_TEST(consumer_wrappers_work_on_foreign_streams) {
  struct ArrowDeviceArrayStream stream;
  it_fill_stream(&stream, ARROW_DEVICE_CPU, foreign_get_schema_fails,
                 foreign_get_next_fails_live, NULL, foreign_stream_release, NULL);
  struct FerryError error;
  struct ArrowDeviceArray batch = {0};
  /* No get_last_error at all: generic message. */
  CHECK_EQ_INT(EAGAIN, ferry_array_stream_get_next(&stream, &batch, &error));
  CHECK_STR("get_next failed with EAGAIN (no message from producer)", error.message);
  CHECK(ferry_device_array_is_released(&batch));
  CHECK_EQ_INT(1, foreign_batch_releases);
  CHECK(ferry_array_stream_get_last_error(&stream) == NULL);
  /* get_last_error returning NULL: generic message too. */
  stream.get_last_error = foreign_get_last_error;
  struct ArrowSchema schema = {0};
  CHECK_EQ_INT(EPROTO, ferry_array_stream_get_schema(&stream, &schema, &error));
  CHECK_STR("get_schema failed with EPROTO (no message from producer)", error.message);
  /* With a message: it is copied. */
  stream.private_data = (void*)"foreign producer says no";
  CHECK_EQ_INT(EPROTO, ferry_array_stream_get_schema(&stream, &schema, &error));
  CHECK_STR("foreign producer says no", error.message);
  CHECK_STR("foreign producer says no", ferry_array_stream_get_last_error(&stream));
  /* A stream without callbacks. */
  stream.get_next = NULL;
  CHECK_EQ_INT(EINVAL, ferry_array_stream_get_next(&stream, &batch, &error));
  CHECK_CONTAINS(error.message, "no get_next callback");
  ferry_array_stream_release(&stream);
}

/* A foreign producer whose batch is on the CPU while its stream says sim:
 * ferry's own producer refuses that itself, a foreign one must be caught by
 * the consumer wrappers (the one place every consumer goes through). */
static int foreign_get_next_wrong_device(struct ArrowDeviceArrayStream* stream,
                                         struct ArrowDeviceArray* out) {
  memset(out, 0, sizeof(*out));
  out->device_type = ARROW_DEVICE_CPU;
  out->device_id = -1;
  out->array.length = 0;
  out->array.release = foreign_batch_release;
  return 0;
}

FERRY_TEST(foreign_batch_on_another_device_type_is_refused_and_released) {
  struct ArrowDeviceArrayStream stream;
  it_fill_stream(&stream, ARROW_DEVICE_EXT_DEV, NULL, foreign_get_next_wrong_device, NULL,
                 foreign_stream_release, NULL);
  struct FerryError error;
  ferry_error_init(&error);
  struct ArrowDeviceArray batch = {0};
  int releases = foreign_batch_releases;
  CHECK_EQ_INT(EINVAL, ferry_array_stream_get_next(&stream, &batch, &error));
  CHECK_CONTAINS(error.message,
                 "get_next: the producer returned a batch on device type cpu from a stream of "
                 "device type ext_dev (1 and 12); the batch was released");
  CHECK(ferry_device_array_is_released(&batch));
  CHECK_EQ_INT(releases + 1, foreign_batch_releases);
  /* The same through the consumer-stream handoff. */
  ferry_error_init(&error);
  CHECK_EQ_INT(EINVAL, ferry_array_stream_get_next_on(&stream, &batch, NULL, &error));
  CHECK_CONTAINS(error.message, "device type cpu from a stream of device type ext_dev");
  CHECK(ferry_device_array_is_released(&batch));
  CHECK_EQ_INT(releases + 2, foreign_batch_releases);
  ferry_array_stream_release(&stream);
}

/* ---- ferry_array_stream_init_from_arrays --------------------------------------- */

static int list_hooks;
static void list_hook(void* user_data) { list_hooks++; }

static void make_arrays(struct ArrowDeviceArray* arrays, int n,
                        ArrowDeviceType device_type, int32_t* storage) {
  for (int i = 0; i < n; i++) {
    const void* buffers[2] = {NULL, &storage[i]};
    struct ArrowArray array = {0};
    ferry_array_init(&array, 1, 0, 0, 2, buffers, 0, list_hook, NULL, NULL);
    memset(&arrays[i], 0, sizeof(arrays[i]));
    ferry_device_array_init(&arrays[i], &array, device_type, 0, NULL, NULL, NULL, NULL);
  }
}

static int make_schema(struct ArrowSchema* schema) {
  memset(schema, 0, sizeof(*schema));
  int rc = ferry_schema_init(schema, "+s", "batch", 0, 2, NULL);
  if (rc == FERRY_OK) rc = ferry_schema_add_metadata(schema, "origin", "test", NULL);
  if (rc == FERRY_OK) rc = ferry_schema_init(schema->children[0], "i", "a", 2, 0, NULL);
  if (rc == FERRY_OK) rc = ferry_schema_init(schema->children[1], "c", "b", 0, 0, NULL);
  struct ArrowSchema* dictionary = NULL;
  if (rc == FERRY_OK)
    rc = ferry_schema_allocate_dictionary(schema->children[1], &dictionary, NULL);
  if (rc == FERRY_OK) rc = ferry_schema_init(dictionary, "u", NULL, 0, 0, NULL);
  return rc;
}

/* The inputs of a test: n one-value int32 arrays over `storage` on
 * `device_type` whose releases count in list_hooks (from 0), and make_schema's
 * schema; FERRY_OK or the schema's error. */
static int make_inputs(struct ArrowDeviceArray* arrays, int n, ArrowDeviceType device_type,
                       int32_t* storage, struct ArrowSchema* schema) {
  list_hooks = 0;
  make_arrays(arrays, n, device_type, storage);
  return make_schema(schema);
}

FERRY_TEST(stream_from_arrays_yields_them_in_order) {
  int64_t base = ferry_live_exports();
  int32_t storage[3] = {10, 20, 30};
  struct ArrowDeviceArray arrays[3];
  struct ArrowSchema schema;
  CHECK_EQ_INT(FERRY_OK, make_inputs(arrays, 3, ARROW_DEVICE_EXT_DEV, storage, &schema));
  struct ArrowDeviceArrayStream stream = {0};
  struct FerryError error;
  CHECK_EQ_INT(FERRY_OK, ferry_array_stream_init_from_arrays(&stream, ARROW_DEVICE_EXT_DEV,
                                                       &schema, arrays, 3, &error));
  CHECK(ferry_schema_is_released(&schema));
  for (int i = 0; i < 3; i++) CHECK(ferry_device_array_is_released(&arrays[i]));
  /* get_schema twice: independent deep copies. */
  for (int round = 0; round < 2; round++) {
    struct ArrowSchema copy = {0};
    CHECK_EQ_INT(FERRY_OK, ferry_array_stream_get_schema(&stream, &copy, &error));
    CHECK_STR("+s", ferry_schema_format(&copy));
    CHECK_STR("batch", ferry_schema_name(&copy));
    CHECK_EQ_INT(1, ferry_schema_metadata_count(&copy));
    int32_t len;
    const char* value = ferry_schema_metadata_value(&copy, 0, &len);
    CHECK_EQ_INT(4, len);
    CHECK(memcmp(value, "test", 4) == 0);
    CHECK_EQ_INT(2, ferry_schema_n_children(&copy));
    CHECK_STR("a", ferry_schema_name(ferry_schema_child(&copy, 0)));
    CHECK_EQ_INT(2, ferry_schema_flags(ferry_schema_child(&copy, 0)));
    CHECK_STR("u",
              ferry_schema_format(ferry_schema_dictionary(ferry_schema_child(&copy, 1))));
    ferry_schema_release(&copy);
  }
  for (int i = 0; i < 3; i++) {
    struct ArrowDeviceArray batch = {0};
    CHECK_EQ_INT(FERRY_OK, ferry_array_stream_get_next(&stream, &batch, &error));
    CHECK(!ferry_device_array_is_released(&batch));
    CHECK_EQ_INT(storage[i], *(const int32_t*)ferry_array_buffer(&batch.array, 1));
    ferry_device_array_release(&batch);
  }
  struct ArrowDeviceArray end = {0};
  CHECK_EQ_INT(FERRY_OK, ferry_array_stream_get_next(&stream, &end, &error));
  CHECK(ferry_device_array_is_released(&end));
  CHECK_EQ_INT(3, list_hooks);
  ferry_array_stream_release(&stream);
  CHECK_EQ_INT(base, ferry_live_exports());
}

FERRY_TEST(stream_from_arrays_releases_unconsumed_arrays) {
  int64_t base = ferry_live_exports();
  int32_t storage[3] = {1, 2, 3};
  struct ArrowDeviceArray arrays[3];
  struct ArrowSchema schema;
  CHECK_EQ_INT(FERRY_OK, make_inputs(arrays, 3, ARROW_DEVICE_CPU, storage, &schema));
  struct ArrowDeviceArrayStream stream = {0};
  CHECK_EQ_INT(FERRY_OK, ferry_array_stream_init_from_arrays(&stream, ARROW_DEVICE_CPU, &schema,
                                                       arrays, 3, NULL));
  struct ArrowDeviceArray batch = {0};
  CHECK_EQ_INT(FERRY_OK, ferry_array_stream_get_next(&stream, &batch, NULL));
  ferry_device_array_release(&batch);
  CHECK_EQ_INT(1, list_hooks);
  ferry_array_stream_release(&stream);
  CHECK_EQ_INT(3, list_hooks);
  CHECK_EQ_INT(base, ferry_live_exports());
}

FERRY_TEST(stream_from_arrays_errors_move_nothing) {
  int64_t base = ferry_live_exports();
  int32_t storage[2] = {1, 2};
  struct ArrowDeviceArray arrays[2];
  struct ArrowSchema schema;
  CHECK_EQ_INT(FERRY_OK, make_inputs(arrays, 2, ARROW_DEVICE_CPU, storage, &schema));
  arrays[1].device_type = ARROW_DEVICE_EXT_DEV;
  struct ArrowDeviceArrayStream stream = {0};
  struct FerryError error;
  CHECK_EQ_INT(EINVAL, ferry_array_stream_init_from_arrays(&stream, ARROW_DEVICE_CPU, &schema,
                                                     arrays, 2, &error));
  CHECK_CONTAINS(error.message, "arrays[1] is on device type 12");
  CHECK(!ferry_schema_is_released(&schema));
  CHECK(!ferry_device_array_is_released(&arrays[0]));
  CHECK(ferry_array_stream_is_released(&stream));
  arrays[1].device_type = ARROW_DEVICE_CPU;
  CHECK_EQ_INT(EINVAL, ferry_array_stream_init_from_arrays(&stream, ARROW_DEVICE_CPU, &schema,
                                                     NULL, 2, &error));
  CHECK_EQ_INT(EINVAL, ferry_array_stream_init_from_arrays(&stream, ARROW_DEVICE_CPU, &schema,
                                                     arrays, -1, &error));
  CHECK_EQ_INT(EINVAL, ferry_array_stream_init_from_arrays(&stream, ARROW_DEVICE_CPU, NULL,
                                                     arrays, 2, &error));
  CHECK_CONTAINS(error.message, "schema is NULL or released");
  ferry_device_array_release(&arrays[1]);
  CHECK_EQ_INT(EINVAL, ferry_array_stream_init_from_arrays(&stream, ARROW_DEVICE_CPU, &schema,
                                                     arrays, 2, &error));
  CHECK_CONTAINS(error.message, "arrays[1] is released");
  CHECK(!ferry_device_array_is_released(&arrays[0]));
  /* Zero arrays is a valid, immediately-ending stream. */
  CHECK_EQ_INT(FERRY_OK, ferry_array_stream_init_from_arrays(&stream, ARROW_DEVICE_CPU, &schema,
                                                       NULL, 0, &error));
  struct ArrowDeviceArray batch = {0};
  CHECK_EQ_INT(FERRY_OK, ferry_array_stream_get_next(&stream, &batch, &error));
  CHECK(ferry_device_array_is_released(&batch));
  ferry_array_stream_release(&stream);
  ferry_device_array_release(&arrays[0]);
  CHECK_EQ_INT(2, list_hooks);
  CHECK_EQ_INT(base, ferry_live_exports());
}

static void noop_schema_release(struct ArrowSchema* schema) { schema->release = NULL; }

FERRY_TEST(stream_from_arrays_get_schema_of_a_cyclic_schema_fails_cleanly) {
  /* get_schema deep-copies the stream's schema: a child pointing back at its
   * parent recursed until the stack overflowed. */
  int64_t base = ferry_live_exports();
  struct ArrowSchema* children[1];
  struct ArrowSchema cyclic = {.format = "+s",
                               .n_children = 1,
                               .children = children,
                               .release = noop_schema_release};
  children[0] = &cyclic;
  /* The root is moved into the stream; its child is the cycle. */
  struct ArrowSchema root = cyclic;
  struct ArrowDeviceArrayStream stream = {0};
  CHECK_EQ_INT(FERRY_OK, ferry_array_stream_init_from_arrays(&stream, ARROW_DEVICE_CPU, &root,
                                                       NULL, 0, NULL));
  struct ArrowSchema copy = {0};
  struct FerryError error;
  CHECK_EQ_INT(EINVAL, ferry_array_stream_get_schema(&stream, &copy, &error));
  CHECK_CONTAINS(error.message, "nested deeper than 200 levels");
  CHECK(ferry_schema_is_released(&copy));
  ferry_array_stream_release(&stream);
  CHECK_EQ_INT(base, ferry_live_exports());
}

FERRY_TEST_MAIN()
