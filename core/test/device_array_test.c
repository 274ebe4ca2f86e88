/* Tests of device_array.c: exporting with a sync event (both policies),
 * waiting on it from the host or a consumer stream, and deep copies of whole
 * array trees (children, dictionary, view-type variadic buffers) between the
 * CPU and the simulated device, with allocation counts back to baseline. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "ferry/ferry.h"
#include "ferry_test.h"

#define POISON ((unsigned char)FERRY_SIM_POISON_BYTE)

static struct FerryDevice* device_of(ArrowDeviceType type, int64_t id) {
  struct FerryDevice* device = NULL;
  struct FerryError error;
  ferry_error_init(&error);
  if (ferry_device_resolve(type, id, &device, &error) != 0) {
    printf("resolve failed: %s\n", error.message);
  }
  return device;
}

/* Sim events that no array or caller holds are in the devices' export pools
 * (device_array.c keeps released events for the next export): the events
 * in use are the others. */
static int64_t sim_events_in_use(void) {
  int64_t n = ferry__sim_live_events();
  for (int64_t id = 0; id < FERRY_SIM_DEVICE_COUNT; id++) {
    n -= ferry__device_pooled_events(device_of(ARROW_DEVICE_EXT_DEV, id));
  }
  return n;
}

/* A test on a strict sim device with a stream of its own: what was live
 * before it, to be live again at its end (sim_rig_end, which also destroys
 * the stream). */
struct SimRig {
  struct FerryDevice* sim;
  void* stream;
  int64_t allocations;
  int64_t events;
};

static struct SimRig sim_rig(int64_t device_id) {
  ferry_sim_set_strict(1);
  struct SimRig r = {.sim = device_of(ARROW_DEVICE_EXT_DEV, device_id)};
  r.allocations = ferry_device_live_allocations(r.sim);
  r.events = sim_events_in_use();
  CHECK_EQ_INT(0, ferry_device_stream_create(r.sim, &r.stream, NULL));
  return r;
}

static void sim_rig_end(const struct SimRig* r) {
  CHECK_EQ_INT(r->events, sim_events_in_use());
  CHECK_EQ_INT(r->allocations, ferry_device_live_allocations(r->sim));
  CHECK_EQ_INT(0, ferry_device_stream_destroy(r->sim, r->stream, NULL));
}

/* A live host int32 array of the two values {1, 2} (static: they outlive it). */
static int host_int32_pair(struct ArrowArray* out) {
  static const int32_t values[2] = {1, 2};
  const void* buffers[2] = {NULL, values};
  memset(out, 0, sizeof *out);
  return ferry_array_init(out, 2, 0, 0, 2, buffers, 0, NULL, NULL, NULL);
}

static int all_bytes_are(const void* ptr, int64_t size, unsigned char value) {
  const unsigned char* bytes = (const unsigned char*)ptr;
  for (int64_t i = 0; i < size; i++) {
    if (bytes[i] != value) return 0;
  }
  return 1;
}

/* ---- a sim-produced int32 array ---------------------------------------------------- */

struct SimBuffer {
  struct FerryDevice* device;
  void* ptr;
};

static void free_sim_buffer(void* user_data) {
  struct SimBuffer* buffer = (struct SimBuffer*)user_data;
  ferry_device_deallocate(buffer->device, buffer->ptr, NULL);
  free(buffer);
}

/* Allocates n int32 values on `device`, queues their upload on `stream` and
 * wraps them in an int32 ArrowArray (buffers: NULL validity, values) whose
 * release frees the device memory. */
static int make_sim_int32(struct FerryDevice* device, void* stream, const int32_t* values,
                          int64_t n, struct ArrowArray* out) {
  struct FerryDevice* host = device_of(ARROW_DEVICE_CPU, -1);
  struct SimBuffer* buffer = (struct SimBuffer*)malloc(sizeof(struct SimBuffer));
  if (buffer == NULL) return ENOMEM;
  buffer->device = device;
  int code = ferry_device_allocate(device, n * 4, &buffer->ptr, NULL);
  if (code != 0) {
    free(buffer);
    return code;
  }
  code = ferry_device_memcpy(device, buffer->ptr, host, values, n * 4, stream, NULL);
  const void* buffers[2] = {NULL, buffer->ptr};
  if (code == 0) {
    code = ferry_array_init(out, n, 0, 0, 2, buffers, 0, free_sim_buffer, buffer, NULL);
  }
  if (code != 0) free_sim_buffer(buffer);
  return code;
}

static const int32_t kValues[8] = {10, 20, 30, 40, 50, 60, 70, 80};

/* Exports kValues from `sim`, uploaded on `stream`, with sync `policy` into
 * `out` (ferry_device_array_init_async, which moves the array in). */
static void export_sim(struct FerryDevice* sim, void* stream, int32_t policy,
                       struct ArrowDeviceArray* out) {
  struct ArrowArray array = {0};
  memset(out, 0, sizeof *out);
  CHECK_EQ_INT(0, make_sim_int32(sim, stream, kValues, 8, &array));
  CHECK_EQ_INT(0, ferry_device_array_init_async(out, &array, sim, stream, policy, NULL));
  CHECK(array.release == NULL); /* moved in */
}

FERRY_TEST(init_async_record_event_exports_an_event_tied_to_release) {
  struct SimRig r = sim_rig(1);
  struct ArrowDeviceArray exported;
  export_sim(r.sim, r.stream, FERRY_SYNC_RECORD_EVENT, &exported);
  CHECK_EQ_INT(ARROW_DEVICE_EXT_DEV, exported.device_type);
  CHECK_EQ_INT(1, exported.device_id);
  CHECK(exported.sync_event != NULL);
  CHECK_EQ_INT(1, ferry_device_array_reserved_is_zero(&exported));
  CHECK_EQ_INT(r.events + 1, sim_events_in_use());

  const int32_t* values = (const int32_t*)exported.array.buffers[1];
  /* A consumer that reads before waiting sees poison... */
  CHECK(all_bytes_are(values, 32, POISON));
  /* ...and after waiting, the data. */
  CHECK_EQ_INT(0, ferry_device_array_wait(&exported, NULL, NULL));
  for (int i = 0; i < 8; i++) CHECK_EQ_INT(kValues[i], values[i]);

  ferry_device_array_release(&exported);
  CHECK(exported.array.release == NULL);
  CHECK(ferry__device_pooled_events(r.sim) >= 1); /* kept for the next export */
  sim_rig_end(&r);
}

FERRY_TEST(init_async_released_without_waiting_is_safe) {
  struct SimRig r = sim_rig(1);
  struct ArrowDeviceArray exported;
  export_sim(r.sim, r.stream, FERRY_SYNC_RECORD_EVENT, &exported);
  /* The consumer never waits: the event and the memory go away with work
   * still queued (the sim completes it before freeing the memory). */
  ferry_device_array_release(&exported);
  sim_rig_end(&r);
}

FERRY_TEST(waiting_on_the_event_of_a_released_array_is_reported_despite_the_pool) {
  /* docs/events.md: the event is valid until the array's release returns.
   * The pool keeps released events alive for later exports; the sim must
   * still tell a consumer that waits after releasing, also once the event
   * carries a later export. */
  struct SimRig r = sim_rig(2);
  struct FerryDevice* sim = r.sim;
  void* consumer = NULL;
  CHECK_EQ_INT(0, ferry_device_stream_create(sim, &consumer, NULL));
  struct ArrowDeviceArray first;
  export_sim(sim, r.stream, FERRY_SYNC_RECORD_EVENT, &first);
  void* stale = first.sync_event;
  int64_t live = ferry__sim_live_events();
  CHECK_EQ_INT(0, ferry_device_stream_wait_event(sim, consumer, stale, NULL)); /* in time */
  ferry_device_array_release(&first);

  struct FerryError error;
  ferry_error_init(&error);
  CHECK_EQ_INT(EINVAL, ferry_device_event_synchronize(sim, stale, &error));
  CHECK_CONTAINS(error.message, "the array that carried it was released");
  ferry_error_init(&error);
  CHECK_EQ_INT(EINVAL, ferry_device_stream_wait_event(sim, consumer, stale, &error));
  CHECK_CONTAINS(error.message, "was released");

  /* The next export reuses the pooled event (no new one) under a new handle:
   * the old handle stays refused, the new one works. */
  struct ArrowDeviceArray second;
  export_sim(sim, r.stream, FERRY_SYNC_RECORD_EVENT, &second);
  CHECK_EQ_INT(live, ferry__sim_live_events());
  CHECK(second.sync_event != stale);
  CHECK_EQ_INT(EINVAL, ferry_device_event_synchronize(sim, stale, NULL));
  CHECK_EQ_INT(0, ferry_device_array_wait(&second, consumer, NULL));
  CHECK_EQ_INT(0, ferry_device_array_wait(&second, NULL, NULL));
  for (int i = 0; i < 8; i++) {
    CHECK_EQ_INT(kValues[i], ((const int32_t*)second.array.buffers[1])[i]);
  }
  ferry_device_array_release(&second);
  CHECK_EQ_INT(0, ferry_device_stream_destroy(sim, consumer, NULL));
  sim_rig_end(&r);
}

FERRY_TEST(init_async_synchronize_policy_exports_no_event_and_ready_data) {
  struct SimRig r = sim_rig(0);
  struct ArrowDeviceArray exported;
  export_sim(r.sim, r.stream, FERRY_SYNC_SYNCHRONIZE, &exported);
  CHECK(exported.sync_event == NULL);
  CHECK_EQ_INT(r.events, sim_events_in_use());
  const int32_t* values = (const int32_t*)exported.array.buffers[1];
  for (int i = 0; i < 8; i++) CHECK_EQ_INT(kValues[i], values[i]);
  CHECK_EQ_INT(0, ferry_device_array_wait(&exported, NULL, NULL)); /* returns at once */
  ferry_device_array_release(&exported);
  sim_rig_end(&r);
}

FERRY_TEST(init_async_without_stream_or_on_the_cpu_exports_no_event) {
  struct FerryDevice* sim = device_of(ARROW_DEVICE_EXT_DEV, 0);
  struct FerryDevice* cpu = device_of(ARROW_DEVICE_CPU, 0);
  struct ArrowDeviceArray exported;
  export_sim(sim, NULL, FERRY_SYNC_RECORD_EVENT, &exported);
  CHECK(exported.sync_event == NULL);
  CHECK_EQ_INT(kValues[3], ((const int32_t*)exported.array.buffers[1])[3]);
  ferry_device_array_release(&exported);

  struct ArrowArray array;
  CHECK_EQ_INT(0, host_int32_pair(&array));
  void* cpu_stream = NULL;
  CHECK_EQ_INT(0, ferry_device_stream_create(cpu, &cpu_stream, NULL));
  CHECK_EQ_INT(0, ferry_device_array_init_async(&exported, &array, cpu, cpu_stream,
                                                FERRY_SYNC_RECORD_EVENT, NULL));
  CHECK(exported.sync_event == NULL);
  CHECK_EQ_INT(ARROW_DEVICE_CPU, exported.device_type);
  CHECK_EQ_INT(-1, exported.device_id);
  ferry_device_array_release(&exported);
  CHECK_EQ_INT(0, ferry_device_stream_destroy(cpu, cpu_stream, NULL));
}

FERRY_TEST(init_async_validates_and_moves_nothing_on_failure) {
  struct FerryDevice* sim = device_of(ARROW_DEVICE_EXT_DEV, 0);
  struct FerryError error;
  ferry_error_init(&error);
  struct ArrowArray array;
  CHECK_EQ_INT(0, host_int32_pair(&array));
  struct ArrowDeviceArray exported = {0};
  CHECK_EQ_INT(EINVAL,
               ferry_device_array_init_async(&exported, &array, sim, NULL, 7, &error));
  CHECK_CONTAINS(error.message, "policy 7");
  CHECK_EQ_INT(EINVAL,
               ferry_device_array_init_async(&exported, &array, NULL, NULL, 0, &error));
  CHECK_CONTAINS(error.message, "device must not be NULL");
  CHECK_EQ_INT(EINVAL, ferry_device_array_init_async(NULL, &array, sim, NULL, 0, &error));
  CHECK_EQ_INT(EINVAL,
               ferry_device_array_init_async(&exported, NULL, sim, NULL, 0, &error));
  int garbage_stream = 0;
  CHECK_EQ_INT(EINVAL,
               ferry_device_array_init_async(&exported, &array, sim, &garbage_stream,
                                             FERRY_SYNC_RECORD_EVENT, &error));
  CHECK_CONTAINS(error.message, "not a live sim stream");
  CHECK(array.release != NULL); /* still the caller's */
  CHECK(exported.array.release == NULL);
  ferry_array_release(&array);
  CHECK_EQ_INT(EINVAL,
               ferry_device_array_init_async(&exported, &array, sim, NULL, 0, &error));
  CHECK_CONTAINS(error.message, "array is released");
}

FERRY_TEST(wait_with_a_consumer_stream_orders_the_consumer_without_blocking) {
  ferry_sim_set_strict(1);
  struct FerryDevice* sim = device_of(ARROW_DEVICE_EXT_DEV, 2);
  struct FerryDevice* host = device_of(ARROW_DEVICE_CPU, -1);
  void *producer = NULL, *consumer = NULL, *y = NULL;
  CHECK_EQ_INT(0, ferry_device_stream_create(sim, &producer, NULL));
  CHECK_EQ_INT(0, ferry_device_stream_create(sim, &consumer, NULL));
  CHECK_EQ_INT(0, ferry_device_allocate(sim, 32, &y, NULL));
  struct ArrowDeviceArray exported;
  export_sim(sim, producer, FERRY_SYNC_RECORD_EVENT, &exported);
  CHECK_EQ_INT(0, ferry_device_array_wait(&exported, consumer, NULL));
  /* The host did not block: in strict mode nothing has run yet. */
  CHECK(all_bytes_are(exported.array.buffers[1], 32, POISON));
  CHECK_EQ_INT(
      0, ferry_device_memcpy(sim, y, sim, exported.array.buffers[1], 32, consumer, NULL));
  int32_t out[8];
  CHECK_EQ_INT(0, ferry_device_memcpy(host, out, sim, y, 32, consumer, NULL));
  CHECK_EQ_INT(0, ferry_device_stream_synchronize(sim, consumer, NULL));
  for (int i = 0; i < 8; i++) CHECK_EQ_INT(kValues[i], out[i]);
  ferry_device_array_release(&exported);
  CHECK_EQ_INT(0, ferry_device_deallocate(sim, y, NULL));
  CHECK_EQ_INT(0, ferry_device_stream_destroy(sim, producer, NULL));
  CHECK_EQ_INT(0, ferry_device_stream_destroy(sim, consumer, NULL));
}

FERRY_TEST(wait_validates_its_arguments) {
  struct FerryError error;
  ferry_error_init(&error);
  CHECK_EQ_INT(EINVAL, ferry_device_array_wait(NULL, NULL, &error));
  CHECK_CONTAINS(error.message, "array must not be NULL");
  struct ArrowDeviceArray released = {0};
  CHECK_EQ_INT(EINVAL, ferry_device_array_wait(&released, NULL, &error));
  CHECK_CONTAINS(error.message, "released");
}

/* ---- deep copies ----------------------------------------------------------------------
 */

/* The source tree, all on the CPU (static buffers, nothing to free):
 * struct<
 *   a: int32 (nullable, sliced: offset 1),
 *   s: utf8,
 *   l: list<int64>,
 *   d: dictionary<int8 indices, utf8 values>,
 *   v: utf8_view with two variadic data buffers
 * >, 3 rows. */
static const uint8_t kValidityA[1] = {
    0x0B}; /* bits 0,1,3: with offset 1 -> rows 0,2 valid */
static const int32_t kValuesA[4] = {-1, 111, 222, 333};
static const int32_t kOffsetsS[4] = {0, 3, 3, 9};
static const char kDataS[9] = {'o', 'n', 'e', 't', 'h', 'r', 'e', 'e', '!'};
static const int32_t kOffsetsL[4] = {0, 2, 2, 5};
static const int64_t kValuesL[5] = {1, 2, 3, 4, 5};
static const int8_t kIndicesD[3] = {1, 0, 1};
static const int32_t kOffsetsDict[3] = {0, 5, 10};
static const char kDataDict[10] = {'a', 'l', 'p', 'h', 'a', 'o', 'm', 'e', 'g', 'a'};
static const char kLong0[] = "a string longer than twelve";
static const char kLong1[] = "another long string, in buffer one";
static uint8_t g_views[3][16];
static int64_t g_variadic_sizes[2];

static void make_view(uint8_t* view, const char* text, int32_t buffer_index,
                      int32_t offset) {
  int32_t length = (int32_t)strlen(text);
  memset(view, 0, 16);
  memcpy(view, &length, 4);
  if (length <= 12) {
    memcpy(view + 4, text, (size_t)length);
  } else {
    memcpy(view + 4, text, 4);
    memcpy(view + 8, &buffer_index, 4);
    memcpy(view + 12, &offset, 4);
  }
}

static void init_child_array(struct ArrowArray* parent, int64_t i, int64_t length,
                             int64_t null_count, int64_t offset, int64_t n_buffers,
                             const void* const* buffers, int64_t n_children) {
  struct ArrowArray* child = ferry_array_child(parent, i);
  if (ferry_array_init(child, length, null_count, offset, n_buffers, buffers, n_children,
                       NULL, NULL, NULL) != 0) {
    printf("ferry_array_init of child %d failed\n", (int)i);
  }
}

static int build_source(struct ArrowSchema* schema, struct ArrowArray* array) {
  struct FerryError error;
  ferry_error_init(&error);
  int code = ferry_schema_init(schema, "+s", "root", 0, 5, &error);
  if (code != 0) return code;
  ferry_schema_init(ferry_schema_child(schema, 0), "i", "a", ARROW_FLAG_NULLABLE, 0,
                    NULL);
  ferry_schema_init(ferry_schema_child(schema, 1), "u", "s", 0, 0, NULL);
  ferry_schema_init(ferry_schema_child(schema, 2), "+l", "l", 0, 1, NULL);
  ferry_schema_init(ferry_schema_child(ferry_schema_child(schema, 2), 0), "l", "item", 0,
                    0, NULL);
  struct ArrowSchema* d = ferry_schema_child(schema, 3);
  ferry_schema_init(d, "c", "d", 0, 0, NULL);
  struct ArrowSchema* dict_schema = NULL;
  code = ferry_schema_allocate_dictionary(d, &dict_schema, &error);
  if (code != 0) return code;
  ferry_schema_init(dict_schema, "u", NULL, 0, 0, NULL);
  ferry_schema_init(ferry_schema_child(schema, 4), "vu", "v", 0, 0, NULL);

  make_view(g_views[0], "short", 0, 0);
  make_view(g_views[1], kLong0, 0, 0);
  make_view(g_views[2], kLong1, 1, 0);
  g_variadic_sizes[0] = (int64_t)strlen(kLong0);
  g_variadic_sizes[1] = (int64_t)strlen(kLong1);

  const void* struct_buffers[1] = {NULL};
  code = ferry_array_init(array, 3, 0, 0, 1, struct_buffers, 5, NULL, NULL, &error);
  if (code != 0) return code;
  const void* a_buffers[2] = {kValidityA, kValuesA};
  init_child_array(array, 0, 3, 1, 1, 2, a_buffers, 0);
  const void* s_buffers[3] = {NULL, kOffsetsS, kDataS};
  init_child_array(array, 1, 3, 0, 0, 3, s_buffers, 0);
  const void* l_buffers[2] = {NULL, kOffsetsL};
  init_child_array(array, 2, 3, 0, 0, 2, l_buffers, 1);
  const void* item_buffers[2] = {NULL, kValuesL};
  init_child_array(ferry_array_child(array, 2), 0, 5, 0, 0, 2, item_buffers, 0);
  const void* d_buffers[2] = {NULL, kIndicesD};
  init_child_array(array, 3, 3, 0, 0, 2, d_buffers, 0);
  struct ArrowArray* dict = NULL;
  code = ferry_array_allocate_dictionary(ferry_array_child(array, 3), &dict, &error);
  if (code != 0) return code;
  const void* dict_buffers[3] = {NULL, kOffsetsDict, kDataDict};
  code = ferry_array_init(dict, 2, 0, 0, 3, dict_buffers, 0, NULL, NULL, &error);
  if (code != 0) return code;
  const void* v_buffers[5] = {NULL, g_views, kLong0, kLong1, g_variadic_sizes};
  init_child_array(array, 4, 3, 0, 0, 5, v_buffers, 0);
  return 0;
}

/* Compares every buffer of `copy` (on the CPU) with `original`, recursively,
 * and checks that no buffer is shared (the copy is deep). Returns the number
 * of buffers compared, or -1 on the first difference. */
static int64_t compare_trees(const struct ArrowSchema* schema,
                             const struct ArrowArray* original,
                             const struct ArrowArray* copy) {
  if (original->length != copy->length || original->offset != copy->offset ||
      original->null_count != copy->null_count ||
      original->n_buffers != copy->n_buffers ||
      original->n_children != copy->n_children) {
    printf("shape differs for format %s\n", schema->format);
    return -1;
  }
  int64_t compared = 0;
  for (int64_t i = 0; i < original->n_buffers; i++) {
    if ((original->buffers[i] == NULL) != (copy->buffers[i] == NULL)) return -1;
    if (original->buffers[i] == NULL) continue;
    if (original->buffers[i] == copy->buffers[i]) {
      printf("buffer %d of %s is shared, not copied\n", (int)i, schema->format);
      return -1;
    }
    int64_t size = 0;
    struct FerryError error;
    ferry_error_init(&error);
    if (ferry_array_buffer_size(schema, original, ARROW_DEVICE_CPU, -1, i, &size,
                                &error)) {
      printf("buffer size failed: %s\n", error.message);
      return -1;
    }
    if (memcmp(original->buffers[i], copy->buffers[i], (size_t)size) != 0) {
      printf("buffer %d of %s differs\n", (int)i, schema->format);
      return -1;
    }
    compared++;
  }
  for (int64_t i = 0; i < original->n_children; i++) {
    int64_t n =
        compare_trees(schema->children[i], original->children[i], copy->children[i]);
    if (n < 0) return -1;
    compared += n;
  }
  if ((original->dictionary == NULL) != (copy->dictionary == NULL)) return -1;
  if (original->dictionary != NULL) {
    int64_t n = compare_trees(schema->dictionary, original->dictionary, copy->dictionary);
    if (n < 0) return -1;
    compared += n;
  }
  return compared;
}

/* Every non-NULL buffer of the tree lives on `device` (exact for the sim). */
static int all_buffers_on(struct FerryDevice* device, const struct ArrowArray* array) {
  for (int64_t i = 0; i < array->n_buffers; i++) {
    if (array->buffers[i] != NULL &&
        ferry__device_check_pointer(device, array->buffers[i], 0, NULL) != 0) {
      return 0;
    }
  }
  for (int64_t i = 0; i < array->n_children; i++) {
    if (!all_buffers_on(device, array->children[i])) return 0;
  }
  return array->dictionary == NULL || all_buffers_on(device, array->dictionary);
}

FERRY_TEST(deep_copy_cpu_to_sim_to_cpu_keeps_every_value) {
  ferry_sim_set_strict(1);
  struct FerryDevice* sim = device_of(ARROW_DEVICE_EXT_DEV, 3);
  struct FerryDevice* cpu = device_of(ARROW_DEVICE_CPU, -1);
  int64_t sim_baseline = ferry_device_live_allocations(sim);
  int64_t cpu_baseline = ferry_device_live_allocations(cpu);
  int64_t exports_baseline = ferry_live_exports();

  struct ArrowSchema schema = {0};
  struct ArrowArray array = {0};
  CHECK_EQ_INT(0, build_source(&schema, &array));
  struct ArrowDeviceArray source = {0};
  CHECK_EQ_INT(0, ferry_device_array_init(&source, &array, ARROW_DEVICE_CPU, -1, NULL,
                                          NULL, NULL, NULL));

  struct FerryError error;
  ferry_error_init(&error);
  struct ArrowDeviceArray on_sim = {0};
  int code =
      ferry_device_array_copy(&schema, &source, ARROW_DEVICE_EXT_DEV, 3, &on_sim, &error);
  if (code != 0) printf("copy to sim: %s\n", error.message);
  CHECK_EQ_INT(0, code);
  CHECK_EQ_INT(ARROW_DEVICE_EXT_DEV, on_sim.device_type);
  CHECK_EQ_INT(3, on_sim.device_id);
  CHECK(on_sim.sync_event == NULL);
  CHECK_EQ_INT(1, ferry_device_array_reserved_is_zero(&on_sim));
  CHECK(all_buffers_on(sim, &on_sim.array));
  /* 1 (a: validity, values) ... counted below; the sim holds one
   * allocation per non-NULL source buffer. */
  CHECK(ferry_device_live_allocations(sim) > sim_baseline);

  struct ArrowDeviceArray back = {0};
  code = ferry_device_array_copy(&schema, &on_sim, ARROW_DEVICE_CPU, 0, &back, &error);
  if (code != 0) printf("copy back: %s\n", error.message);
  CHECK_EQ_INT(0, code);
  CHECK_EQ_INT(ARROW_DEVICE_CPU, back.device_type);
  CHECK_EQ_INT(-1, back.device_id);
  CHECK(back.sync_event == NULL);

  /* Buffers: a 2, s 2, l 1 + item 1, d 1 + dictionary 2, v 4 = 13. */
  int64_t compared = compare_trees(&schema, &source.array, &back.array);
  CHECK_EQ_INT(13, compared);
  CHECK_EQ_INT(sim_baseline + 13, ferry_device_live_allocations(sim));
  CHECK_EQ_INT(cpu_baseline + 13, ferry_device_live_allocations(cpu));
  /* Spot-check values through the copy. */
  const struct ArrowArray* v = back.array.children[4];
  CHECK(memcmp(v->buffers[3], kLong1, strlen(kLong1)) == 0);
  CHECK_EQ_INT(222, ((const int32_t*)back.array.children[0]->buffers[1])[2]);

  ferry_device_array_release(&on_sim);
  CHECK_EQ_INT(sim_baseline, ferry_device_live_allocations(sim));
  ferry_device_array_release(&back);
  CHECK_EQ_INT(cpu_baseline, ferry_device_live_allocations(cpu));
  /* The source is untouched and still the caller's. */
  CHECK(source.array.release != NULL);
  ferry_device_array_release(&source);
  ferry_schema_release(&schema);
  CHECK_EQ_INT(exports_baseline, ferry_live_exports());
}

FERRY_TEST(deep_copy_waits_on_the_source_event) {
  ferry_sim_set_strict(1);
  struct FerryDevice* sim = device_of(ARROW_DEVICE_EXT_DEV, 0);
  int64_t baseline = ferry_device_live_allocations(sim);
  void* stream = NULL;
  CHECK_EQ_INT(0, ferry_device_stream_create(sim, &stream, NULL));
  struct ArrowSchema schema = {0};
  CHECK_EQ_INT(0, ferry_schema_init(&schema, "i", NULL, 0, 0, NULL));
  for (int round = 0; round < 20; round++) {
    struct ArrowArray array = {0};
    CHECK_EQ_INT(0, make_sim_int32(sim, stream, kValues, 8, &array));
    struct ArrowDeviceArray exported = {0}, copy = {0};
    CHECK_EQ_INT(0, ferry_device_array_init_async(&exported, &array, sim, stream,
                                                  FERRY_SYNC_RECORD_EVENT, NULL));
    CHECK_EQ_INT(0, ferry_device_array_copy(&schema, &exported, ARROW_DEVICE_CPU, -1,
                                            &copy, NULL));
    const int32_t* values = (const int32_t*)copy.array.buffers[1];
    for (int i = 0; i < 8; i++) CHECK_EQ_INT(kValues[i], values[i]);
    ferry_device_array_release(&copy);
    ferry_device_array_release(&exported);
  }
  ferry_schema_release(&schema);
  CHECK_EQ_INT(0, ferry_device_stream_destroy(sim, stream, NULL));
  CHECK_EQ_INT(baseline, ferry_device_live_allocations(sim));
}

FERRY_TEST(deep_copy_between_two_sim_devices) {
  struct FerryDevice* sim0 = device_of(ARROW_DEVICE_EXT_DEV, 0);
  struct FerryDevice* sim2 = device_of(ARROW_DEVICE_EXT_DEV, 2);
  int64_t baseline2 = ferry_device_live_allocations(sim2);
  struct ArrowSchema schema = {0};
  CHECK_EQ_INT(0, ferry_schema_init(&schema, "i", NULL, 0, 0, NULL));
  struct ArrowArray array = {0};
  CHECK_EQ_INT(0, make_sim_int32(sim0, NULL, kValues, 8, &array));
  struct ArrowDeviceArray source = {0}, copy = {0};
  CHECK_EQ_INT(0, ferry_device_array_init(&source, &array, ARROW_DEVICE_EXT_DEV, 0, NULL,
                                          NULL, NULL, NULL));
  CHECK_EQ_INT(
      0, ferry_device_array_copy(&schema, &source, ARROW_DEVICE_EXT_DEV, 2, &copy, NULL));
  CHECK(all_buffers_on(sim2, &copy.array));
  CHECK(memcmp(copy.array.buffers[1], kValues, sizeof kValues) == 0);
  ferry_device_array_release(&copy);
  ferry_device_array_release(&source);
  ferry_schema_release(&schema);
  CHECK_EQ_INT(baseline2, ferry_device_live_allocations(sim2));
}

FERRY_TEST(deep_copy_errors_name_the_problem_and_leak_nothing) {
  struct FerryDevice* sim = device_of(ARROW_DEVICE_EXT_DEV, 1);
  int64_t baseline = ferry_device_live_allocations(sim);
  int64_t exports_baseline = ferry_live_exports();
  struct FerryError error;
  ferry_error_init(&error);
  struct ArrowSchema schema = {0};
  struct ArrowArray array = {0};
  CHECK_EQ_INT(0, build_source(&schema, &array));
  struct ArrowDeviceArray source = {0}, out = {0};
  CHECK_EQ_INT(0, ferry_device_array_init(&source, &array, ARROW_DEVICE_CPU, -1, NULL,
                                          NULL, NULL, NULL));

  CHECK_EQ_INT(
      EINVAL, ferry_device_array_copy(NULL, &source, ARROW_DEVICE_CPU, -1, &out, &error));
  CHECK_CONTAINS(error.message, "schema must not be NULL");
  CHECK_EQ_INT(ENODEV, ferry_device_array_copy(&schema, &source, ARROW_DEVICE_VULKAN, 0,
                                               &out, &error));
  CHECK_STR("no backend for device type 7 (vulkan)", error.message);

  /* A schema that disagrees with the array about the list's children fails
   * half-way through the tree (after a and s were copied): the error names
   * the place and the partial copy on the sim is freed. */
  struct ArrowSchema* list_schema = ferry_schema_child(&schema, 2);
  list_schema->n_children = 0;
  CHECK_EQ_INT(EINVAL, ferry_device_array_copy(&schema, &source, ARROW_DEVICE_EXT_DEV, 1,
                                               &out, &error));
  CHECK_CONTAINS(error.message, "copying root.children[2]: the array has 1 children");
  list_schema->n_children = 1;
  CHECK(out.array.release == NULL);
  CHECK_EQ_INT(baseline, ferry_device_live_allocations(sim));

  /* out must be released beforehand. */
  CHECK_EQ_INT(0, ferry_device_array_copy(&schema, &source, ARROW_DEVICE_EXT_DEV, 1, &out,
                                          &error));
  CHECK_EQ_INT(EINVAL, ferry_device_array_copy(&schema, &source, ARROW_DEVICE_EXT_DEV, 1,
                                               &out, &error));
  CHECK_CONTAINS(error.message, "out is a live device array");
  ferry_device_array_release(&out);

  ferry_device_array_release(&source);
  CHECK_EQ_INT(EINVAL, ferry_device_array_copy(&schema, &source, ARROW_DEVICE_CPU, -1,
                                               &out, &error));
  CHECK_CONTAINS(error.message, "src is released");
  ferry_schema_release(&schema);
  CHECK_EQ_INT(baseline, ferry_device_live_allocations(sim));
  CHECK_EQ_INT(exports_baseline, ferry_live_exports());
}

static void noop_schema_release(struct ArrowSchema* schema) { schema->release = NULL; }
static void noop_array_release(struct ArrowArray* array) { array->release = NULL; }

FERRY_TEST(deep_copy_refuses_absurd_buffer_counts_and_released_schemas) {
  struct FerryDevice* sim = device_of(ARROW_DEVICE_EXT_DEV, 1);
  int64_t baseline = ferry_device_live_allocations(sim);
  struct FerryError error;
  static const int32_t values[2] = {1, 2};
  const void* buffers[2] = {NULL, values};
  struct ArrowSchema schema = {.format = "i", .release = noop_schema_release};
  struct ArrowDeviceArray source = {0}, out = {0};
  source.array.length = 2;
  source.array.buffers = buffers;
  source.array.release = noop_array_release;
  source.device_type = ARROW_DEVICE_CPU;
  source.device_id = -1;
  /* 2^61 buffers: sizing the table of copied buffers by it overflowed to a
   * 16-byte block, which the cleanup then read far past its end. */
  source.array.n_buffers = INT64_C(1) << 61;
  CHECK_EQ_INT(EINVAL, ferry_device_array_copy(&schema, &source, ARROW_DEVICE_EXT_DEV, 1,
                                               &out, &error));
  CHECK_CONTAINS(error.message,
                 "copying root: n_buffers (2305843009213693952) must be in [0, 2^32]");
  source.array.n_buffers = 2;
  source.array.buffers = NULL;
  CHECK_EQ_INT(EINVAL, ferry_device_array_copy(&schema, &source, ARROW_DEVICE_EXT_DEV, 1,
                                               &out, &error));
  CHECK_CONTAINS(error.message, "copying root: buffers is NULL but n_buffers is 2");
  source.array.buffers = buffers;

  /* A released ferry schema's format is freed memory: never read. */
  struct ArrowSchema released = {0};
  CHECK_EQ_INT(0, ferry_schema_init(&released, "i", NULL, 0, 0, NULL));
  ferry_schema_release(&released);
  CHECK_EQ_INT(EINVAL, ferry_device_array_copy(&released, &source, ARROW_DEVICE_EXT_DEV,
                                               1, &out, &error));
  CHECK_CONTAINS(error.message,
                 "copying root: the schema is missing, released or has no "
                 "format");
  CHECK(out.array.release == NULL);
  CHECK_EQ_INT(baseline, ferry_device_live_allocations(sim));
}

FERRY_TEST(nothing_is_left_behind) {
  CHECK_EQ_INT(0, ferry__sim_live_streams());
  CHECK_EQ_INT(0, sim_events_in_use()); /* pooled ones excepted */
  for (int64_t id = 0; id < FERRY_SIM_DEVICE_COUNT; id++) {
    CHECK_EQ_INT(0, ferry_device_live_allocations(device_of(ARROW_DEVICE_EXT_DEV, id)));
  }
}

FERRY_TEST_MAIN()
