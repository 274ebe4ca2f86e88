/* Tests of core/src/adapters.c: shared exports (schema, array, device array)
 * and the plain ArrowArrayStream adapters in both directions. Every test
 * ends with the live-export counter at its baseline. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "ferry/dlpack_abi.h"
#include "ferry/ferry.h"
#include "ferry_test.h"

static int hook_calls;
static void hook_count(void* user_data) {
  hook_calls++;
  if (user_data != NULL) (*(int*)user_data)++;
}

/* struct<a: int32, b: dictionary<int8 -> utf8>> of length 2, every node
 * made by ferry_array_init (its hook counts the producer's release). */
static int32_t g_ints[2] = {7, 8};
static int8_t g_codes[2] = {0, 1};
static int32_t g_offsets[3] = {0, 1, 3};
static const char g_chars[] = "xyz";
static int producer_releases;
static void producer_release(void* user_data) { producer_releases++; }

static void make_array(struct ArrowArray* out) {
  memset(out, 0, sizeof(*out));
  const void* none[1] = {NULL};
  CHECK_EQ_INT(FERRY_OK, ferry_array_init(out, 2, 0, 0, 1, none, 2, producer_release, NULL, NULL));
  const void* ints[2] = {NULL, g_ints};
  CHECK_EQ_INT(FERRY_OK,
               ferry_array_init(ferry_array_child(out, 0), 2, 0, 0, 2, ints, 0, NULL, NULL, NULL));
  const void* codes[2] = {NULL, g_codes};
  struct ArrowArray* b = ferry_array_child(out, 1);
  CHECK_EQ_INT(FERRY_OK, ferry_array_init(b, 2, 0, 0, 2, codes, 0, NULL, NULL, NULL));
  struct ArrowArray* dictionary = NULL;
  CHECK_EQ_INT(FERRY_OK, ferry_array_allocate_dictionary(b, &dictionary, NULL));
  const void* strings[3] = {NULL, g_offsets, g_chars};
  CHECK_EQ_INT(FERRY_OK, ferry_array_init(dictionary, 2, 0, 0, 3, strings, 0, NULL, NULL, NULL));
}

static void make_schema(struct ArrowSchema* out) {
  memset(out, 0, sizeof(*out));
  CHECK_EQ_INT(FERRY_OK, ferry_schema_init(out, "+s", "batch", 0, 2, NULL));
  CHECK_EQ_INT(FERRY_OK, ferry_schema_add_metadata(out, "origin", "test", NULL));
  CHECK_EQ_INT(FERRY_OK, ferry_schema_init(ferry_schema_child(out, 0), "i", "a", 2, 0, NULL));
  CHECK_EQ_INT(FERRY_OK, ferry_schema_init(ferry_schema_child(out, 1), "c", "b", 2, 0, NULL));
  struct ArrowSchema* dictionary = NULL;
  CHECK_EQ_INT(FERRY_OK,
               ferry_schema_allocate_dictionary(ferry_schema_child(out, 1), &dictionary, NULL));
  CHECK_EQ_INT(FERRY_OK, ferry_schema_init(dictionary, "u", NULL, 0, 0, NULL));
}

/* ---- shared exports ---------------------------------------------------- */

FERRY_TEST(array_export_shared_mirrors_the_tree_without_copying) {
  int64_t base = ferry_live_exports();
  hook_calls = 0;
  struct ArrowArray src;
  make_array(&src);
  struct ArrowArray out = {0};
  int hooks = 0;
  struct FerryError error;
  CHECK_EQ_INT(FERRY_OK, ferry_array_export_shared(&src, &out, hook_count, &hooks, &error));
  CHECK_EQ_INT(base + 5, ferry_live_exports()); /* 4 ferry_array_init nodes + 1 export */
  CHECK_EQ_INT(2, out.length);
  CHECK_EQ_INT(2, out.n_children);
  CHECK(out.buffers != src.buffers); /* own pointer arrays ... */
  CHECK(out.children[0] != src.children[0]);
  CHECK(out.children[0]->buffers[1] == g_ints); /* ... over the same buffers */
  CHECK(out.children[1]->dictionary != NULL);
  CHECK(out.children[1]->dictionary != src.children[1]->dictionary);
  CHECK(out.children[1]->dictionary->buffers[2] == g_chars);
  CHECK_EQ_INT(3, out.children[1]->dictionary->n_buffers);
  CHECK(out.dictionary == NULL);
  /* A consumer moves child b out, releases the root, then b: the hook runs
   * once, after the last node. */
  struct ArrowArray b = *out.children[1];
  out.children[1]->release = NULL;
  out.release(&out);
  CHECK(out.release == NULL);
  CHECK_EQ_INT(0, hooks);
  CHECK(b.dictionary->buffers[1] == g_offsets); /* still readable */
  b.release(&b);
  CHECK_EQ_INT(1, hooks);
  CHECK_EQ_INT(1, hook_calls);
  CHECK_EQ_INT(base + 4, ferry_live_exports());
  /* The source is untouched and still the producer's. */
  CHECK(src.release != NULL);
  CHECK(src.children[0]->buffers[1] == g_ints);
  producer_releases = 0;
  ferry_array_release(&src);
  CHECK_EQ_INT(1, producer_releases);
  CHECK_EQ_INT(base, ferry_live_exports());
}

FERRY_TEST(array_export_shared_many_times_from_one_source) {
  int64_t base = ferry_live_exports();
  struct ArrowArray src;
  make_array(&src);
  struct ArrowArray outs[8];
  int hooks = 0;
  for (int i = 0; i < 8; i++) {
    memset(&outs[i], 0, sizeof(outs[i]));
    CHECK_EQ_INT(FERRY_OK, ferry_array_export_shared(&src, &outs[i], hook_count, &hooks, NULL));
  }
  for (int i = 7; i >= 0; i--) outs[i].release(&outs[i]);
  CHECK_EQ_INT(8, hooks);
  ferry_array_release(&src);
  CHECK_EQ_INT(base, ferry_live_exports());
}

FERRY_TEST(array_export_shared_of_one_node) {
  int64_t base = ferry_live_exports();
  const void* buffers[2] = {NULL, g_ints};
  struct ArrowArray src = {0};
  CHECK_EQ_INT(FERRY_OK, ferry_array_init(&src, 2, 0, 1, 2, buffers, 0, NULL, NULL, NULL));
  struct ArrowArray out = {0};
  int hooks = 0;
  CHECK_EQ_INT(FERRY_OK, ferry_array_export_shared(&src, &out, hook_count, &hooks, NULL));
  CHECK_EQ_INT(base + 2, ferry_live_exports());
  CHECK(out.buffers != src.buffers);
  CHECK(out.buffers[1] == g_ints);
  CHECK_EQ_INT(1, out.offset);
  CHECK_EQ_INT(2, out.n_buffers);
  out.release(&out);
  CHECK(out.release == NULL);
  CHECK_EQ_INT(1, hooks);
  /* A buffer count its pointer array cannot back is refused. */
  struct ArrowArray bad = src;
  bad.buffers = NULL;
  struct FerryError error;
  CHECK_EQ_INT(EINVAL, ferry_array_export_shared(&bad, &out, hook_count, &hooks, &error));
  CHECK_CONTAINS(error.message, "n_buffers 2");
  CHECK(out.release == NULL);
  ferry_array_release(&src);
  CHECK_EQ_INT(1, hooks);
  CHECK_EQ_INT(base, ferry_live_exports());
}

/* Eight threads each release one node of one shared tree (the children
 * moved out first, as consumers on other threads would), at once: the hook
 * runs exactly once, after the last. Run under TSan/ASan too. */
static atomic_int g_thread_hooks;
static void thread_hook(void* user_data) { atomic_fetch_add(&g_thread_hooks, 1); }

static void* release_node(void* node) {
  struct ArrowArray* a = (struct ArrowArray*)node;
  a->release(a);
  return NULL;
}

FERRY_TEST(array_export_shared_nodes_released_from_eight_threads) {
  int64_t base = ferry_live_exports();
  /* A struct of 7 int32 children: 8 nodes. */
  const void* none[1] = {NULL};
  struct ArrowArray src = {0};
  CHECK_EQ_INT(FERRY_OK, ferry_array_init(&src, 2, 0, 0, 1, none, 7, NULL, NULL, NULL));
  for (int i = 0; i < 7; i++) {
    const void* ints[2] = {NULL, g_ints};
    CHECK_EQ_INT(FERRY_OK, ferry_array_init(ferry_array_child(&src, i), 2, 0, 0, 2, ints, 0,
                                            NULL, NULL, NULL));
  }
  for (int round = 0; round < 50; round++) {
    atomic_store(&g_thread_hooks, 0);
    struct ArrowArray nodes[8];
    memset(&nodes[0], 0, sizeof(nodes[0]));
    CHECK_EQ_INT(FERRY_OK, ferry_array_export_shared(&src, &nodes[0], thread_hook, NULL, NULL));
    for (int i = 0; i < 7; i++) { /* move each child out */
      nodes[i + 1] = *nodes[0].children[i];
      nodes[0].children[i]->release = NULL;
    }
    pthread_t threads[8];
    for (int i = 0; i < 8; i++) {
      CHECK_EQ_INT(0, pthread_create(&threads[i], NULL, release_node, &nodes[i]));
    }
    for (int i = 0; i < 8; i++) CHECK_EQ_INT(0, pthread_join(threads[i], NULL));
    CHECK_EQ_INT(1, atomic_load(&g_thread_hooks));
    for (int i = 0; i < 8; i++) CHECK(nodes[i].release == NULL);
  }
  ferry_array_release(&src);
  CHECK_EQ_INT(base, ferry_live_exports());
}

FERRY_TEST(device_array_export_shared_copies_the_device_fields) {
  int64_t base = ferry_live_exports();
  struct ArrowArray array;
  make_array(&array);
  struct ArrowDeviceArray src;
  memset(&src, 0, sizeof(src));
  int event = 42;
  CHECK_EQ_INT(FERRY_OK, ferry_device_array_init(&src, &array, ARROW_DEVICE_CUDA, 3, &event, NULL,
                                                 NULL, NULL));
  struct ArrowDeviceArray out;
  memset(&out, 0xff, sizeof(out)); /* reserved must come back zeroed */
  out.array.release = NULL;
  int hooks = 0;
  CHECK_EQ_INT(FERRY_OK, ferry_device_array_export_shared(&src, &out, hook_count, &hooks, NULL));
  CHECK_EQ_INT(ARROW_DEVICE_CUDA, out.device_type);
  CHECK_EQ_INT(3, out.device_id);
  CHECK(out.sync_event == &event);
  CHECK(ferry_device_array_reserved_is_zero(&out));
  CHECK(out.array.children[0]->buffers[1] == g_ints);
  ferry_device_array_release(&out);
  CHECK_EQ_INT(1, hooks);
  ferry_device_array_release(&src);
  CHECK_EQ_INT(base, ferry_live_exports());
}

FERRY_TEST(schema_export_shared_borrows_the_strings) {
  int64_t base = ferry_live_exports();
  struct ArrowSchema src;
  make_schema(&src);
  struct ArrowSchema out = {0};
  int hooks = 0;
  CHECK_EQ_INT(FERRY_OK, ferry_schema_export_shared(&src, &out, hook_count, &hooks, NULL));
  CHECK(out.format == src.format);
  CHECK(out.metadata == src.metadata);
  CHECK_STR("batch", out.name);
  CHECK_EQ_INT(2, out.n_children);
  CHECK(out.children[1] != src.children[1]);
  CHECK_STR("b", out.children[1]->name);
  CHECK_EQ_INT(2, out.children[1]->flags);
  CHECK_STR("u", out.children[1]->dictionary->format);
  CHECK(out.dictionary == NULL);
  /* Move the dictionary out of child b, release everything else first. */
  struct ArrowSchema dictionary = *out.children[1]->dictionary;
  out.children[1]->dictionary->release = NULL;
  out.release(&out);
  CHECK_EQ_INT(0, hooks);
  CHECK_STR("u", dictionary.format);
  dictionary.release(&dictionary);
  CHECK_EQ_INT(1, hooks);
  ferry_schema_release(&src);
  CHECK_EQ_INT(base, ferry_live_exports());
}

FERRY_TEST(shared_exports_refuse_bad_arguments) {
  int64_t base = ferry_live_exports();
  struct FerryError error;
  struct ArrowArray array;
  make_array(&array);
  struct ArrowArray out = {0};
  CHECK_EQ_INT(EINVAL, ferry_array_export_shared(NULL, &out, NULL, NULL, &error));
  CHECK_CONTAINS(error.message, "src is NULL");
  CHECK_EQ_INT(EINVAL, ferry_array_export_shared(&array, NULL, NULL, NULL, &error));
  CHECK_CONTAINS(error.message, "out is NULL");
  CHECK_EQ_INT(EINVAL, ferry_array_export_shared(&out, &array, NULL, NULL, &error));
  CHECK_CONTAINS(error.message, "src is released");
  struct ArrowArray live = array; /* a live out (the same node: only the flag counts) */
  CHECK_EQ_INT(EINVAL, ferry_array_export_shared(&array, &live, NULL, NULL, &error));
  CHECK_CONTAINS(error.message, "out is a live array");
  /* n_children that its pointer array cannot back. */
  struct ArrowArray bad = array;
  bad.n_children = 3;
  bad.children = NULL;
  CHECK_EQ_INT(EINVAL, ferry_array_export_shared(&bad, &out, NULL, NULL, &error));
  CHECK_CONTAINS(error.message, "n_children 3");
  bad.n_children = -1;
  CHECK_EQ_INT(EINVAL, ferry_array_export_shared(&bad, &out, NULL, NULL, &error));
  CHECK(out.release == NULL);
  /* 70 levels of nesting. */
  struct ArrowArray chain[70];
  struct ArrowArray* links[70];
  for (int i = 0; i < 70; i++) {
    chain[i] = array;
    chain[i].n_buffers = 0;
    chain[i].buffers = NULL;
    chain[i].dictionary = NULL;
    chain[i].n_children = i + 1 < 70 ? 1 : 0;
    links[i] = i + 1 < 70 ? &chain[i + 1] : NULL;
    chain[i].children = i + 1 < 70 ? &links[i] : NULL;
  }
  CHECK_EQ_INT(EINVAL, ferry_array_export_shared(&chain[0], &out, NULL, NULL, &error));
  CHECK_CONTAINS(error.message, "deeper than 64 levels");
  CHECK(out.release == NULL);
  struct ArrowSchema schema;
  make_schema(&schema);
  struct ArrowSchema schema_out = {0};
  CHECK_EQ_INT(EINVAL, ferry_schema_export_shared(&schema_out, &schema_out, NULL, NULL, &error));
  CHECK_CONTAINS(error.message, "src is released");
  CHECK_EQ_INT(base + 8, ferry_live_exports()); /* nothing exported: 4 + 4 producer nodes */
  ferry_schema_release(&schema);
  ferry_array_release(&array);
  CHECK_EQ_INT(base, ferry_live_exports());
}

FERRY_TEST(schema_copy_is_deep_and_owned_by_ferry) {
  int64_t base = ferry_live_exports();
  struct ArrowSchema src;
  make_schema(&src);
  struct ArrowSchema copy = {0};
  struct FerryError error;
  CHECK_EQ_INT(FERRY_OK, ferry_schema_copy(&src, &copy, &error));
  CHECK(copy.format != src.format);
  CHECK(copy.metadata != src.metadata);
  ferry_schema_release(&src); /* the copy outlives its source */
  CHECK_STR("+s", copy.format);
  CHECK_STR("batch", copy.name);
  CHECK_EQ_INT(1, ferry_schema_metadata_count(&copy));
  CHECK_STR("b", copy.children[1]->name);
  CHECK_EQ_INT(2, copy.children[1]->flags);
  CHECK_STR("u", copy.children[1]->dictionary->format);
  CHECK_EQ_INT(FERRY_OK, ferry_validate_schema(&copy, NULL, NULL, &error));
  CHECK_EQ_INT(EINVAL, ferry_schema_copy(&src, &copy, &error));
  CHECK_CONTAINS(error.message, "src is released");
  struct ArrowSchema other;
  make_schema(&other);
  CHECK_EQ_INT(EINVAL, ferry_schema_copy(&other, &copy, &error));
  CHECK_CONTAINS(error.message, "out is a live schema");
  ferry_schema_release(&other);
  ferry_schema_release(&copy);
  CHECK_EQ_INT(base, ferry_live_exports());
}

FERRY_TEST(to_dlpack_shared_borrows_the_array_and_calls_the_hook_at_delete) {
  int64_t base = ferry_live_exports();
  const void* buffers[2] = {NULL, g_ints};
  struct ArrowArray array = {0};
  CHECK_EQ_INT(FERRY_OK, ferry_array_init(&array, 1, 0, 1, 2, buffers, 0, NULL, NULL, NULL));
  struct ArrowDeviceArray src;
  memset(&src, 0, sizeof(src));
  CHECK_EQ_INT(FERRY_OK,
               ferry_device_array_init(&src, &array, ARROW_DEVICE_CPU, -1, NULL, NULL, NULL, NULL));
  struct ArrowSchema schema = {0};
  CHECK_EQ_INT(FERRY_OK, ferry_schema_init(&schema, "i", NULL, 0, 0, NULL));
  int hooks = 0;
  struct DLManagedTensorVersioned* tensors[2] = {NULL, NULL};
  struct FerryError error;
  for (int i = 0; i < 2; i++) {
    CHECK_EQ_INT(FERRY_OK, ferry_device_array_to_dlpack_shared(&schema, &src, NULL, hook_count,
                                                               &hooks, &tensors[i], &error));
  }
  CHECK(src.array.release != NULL); /* borrowed, not moved */
  CHECK(tensors[0]->dl_tensor.data == (void*)g_ints);
  CHECK_EQ_INT(4, tensors[0]->dl_tensor.byte_offset);
  CHECK_EQ_INT(1, tensors[1]->dl_tensor.shape[0]);
  tensors[0]->deleter(tensors[0]);
  CHECK_EQ_INT(1, hooks);
  tensors[1]->deleter(tensors[1]);
  CHECK_EQ_INT(2, hooks);
  /* Refused (not a number type): no tensor, no hook. */
  struct ArrowSchema text = {0};
  CHECK_EQ_INT(FERRY_OK, ferry_schema_init(&text, "u", NULL, 0, 0, NULL));
  struct DLManagedTensorVersioned* none = NULL;
  CHECK_EQ_INT(EINVAL, ferry_device_array_to_dlpack_shared(&text, &src, NULL, hook_count, &hooks,
                                                           &none, &error));
  CHECK(none == NULL);
  CHECK_EQ_INT(2, hooks);
  ferry_schema_release(&text);
  ferry_schema_release(&schema);
  ferry_device_array_release(&src);
  CHECK_EQ_INT(base, ferry_live_exports());
}

/* ---- requested schemas --------------------------------------------------- */

FERRY_TEST(schema_answers_request_accepts_layout_aliases_only) {
  struct ArrowSchema have = {0}, want = {0};
  struct FerryError error;
  static const char* const yes[][2] = {{"l", "tsm:UTC"}, {"tsm:", "tsm:Europe/Paris"},
                                       {"i", "tdD"},     {"tts", "i"},
                                       {"u", "z"},       {"vu", "vz"},
                                       {"tDn", "l"}};
  static const char* const no[][2] = {{"l", "i"},  {"i", "I"},       {"tss:", "tsm:"},
                                      {"z", "u"},  {"tdD", "tts"},   {"l", "g"}};
  for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
    CHECK_EQ_INT(FERRY_OK, ferry_schema_init(&have, yes[i][0], NULL, ARROW_FLAG_NULLABLE, 0, NULL));
    CHECK_EQ_INT(FERRY_OK, ferry_schema_init(&want, yes[i][1], NULL, ARROW_FLAG_NULLABLE, 0, NULL));
    CHECK_EQ_INT(FERRY_OK, ferry_schema_answers_request(&have, &want, NULL, &error));
    ferry_schema_release(&have);
    ferry_schema_release(&want);
  }
  for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
    CHECK_EQ_INT(FERRY_OK, ferry_schema_init(&have, no[i][0], NULL, ARROW_FLAG_NULLABLE, 0, NULL));
    CHECK_EQ_INT(FERRY_OK, ferry_schema_init(&want, no[i][1], NULL, ARROW_FLAG_NULLABLE, 0, NULL));
    CHECK_EQ_INT(ENOTSUP, ferry_schema_answers_request(&have, &want, NULL, &error));
    CHECK_CONTAINS(error.message, "without a cast");
    ferry_schema_release(&have);
    ferry_schema_release(&want);
  }
}

FERRY_TEST(schema_answers_request_checks_children_dictionaries_and_nulls) {
  struct ArrowSchema have, want;
  make_schema(&have); /* struct<a: int32 (nullable), b: dictionary<utf8>> */
  make_schema(&want);
  struct FerryError error;
  CHECK_EQ_INT(FERRY_OK, ferry_schema_answers_request(&have, &want, NULL, &error));
  /* a as date32, not nullable: a stream is refused (its field is nullable) ... */
  struct ArrowSchema* a = ferry_schema_child(&want, 0);
  ferry_schema_release(a);
  CHECK_EQ_INT(FERRY_OK, ferry_schema_init(a, "tdD", "day", 0, 0, NULL));
  CHECK_EQ_INT(ENOTSUP, ferry_schema_answers_request(&have, &want, NULL, &error));
  CHECK_STR("the requested field \"day\" is not nullable, but the stream's \"i\" is",
            error.message);
  /* ... and an array is judged on its nulls: none here. */
  struct ArrowArray array;
  make_array(&array);
  CHECK_EQ_INT(FERRY_OK, ferry_schema_answers_request(&have, &want, &array, &error));
  array.children[0]->null_count = 1;
  CHECK_EQ_INT(ENOTSUP, ferry_schema_answers_request(&have, &want, &array, &error));
  CHECK_CONTAINS(error.message, "the array's \"i\" has nulls");
  array.children[0]->null_count = 0;
  /* b without its dictionary. */
  struct ArrowSchema* b = ferry_schema_child(&want, 1);
  ferry_schema_release(b);
  CHECK_EQ_INT(FERRY_OK, ferry_schema_init(b, "c", "b", ARROW_FLAG_NULLABLE, 0, NULL));
  CHECK_EQ_INT(ENOTSUP, ferry_schema_answers_request(&have, &want, &array, &error));
  CHECK_STR("\"c\" is dictionary-encoded, the requested field is not", error.message);
  ferry_array_release(&array);
  ferry_schema_release(&have);
  ferry_schema_release(&want);
}

/* ---- one-call import ------------------------------------------------------ */

FERRY_TEST(import_validates_then_moves_both) {
  int64_t base = ferry_live_exports();
  struct ArrowSchema schema;
  make_schema(&schema);
  struct ArrowArray array;
  make_array(&array);
  struct ArrowSchema schema_out = {0};
  struct ArrowDeviceArray array_out;
  memset(&array_out, 0, sizeof(array_out));
  struct FerryError error;
  CHECK_EQ_INT(FERRY_OK, ferry_array_import(&schema, &array, FERRY_VALIDATE_FULL, &schema_out,
                                            &array_out, &error));
  CHECK(schema.release == NULL && array.release == NULL);
  CHECK_EQ_INT(ARROW_DEVICE_CPU, array_out.device_type);
  CHECK_EQ_INT(-1, array_out.device_id);
  CHECK(ferry_device_array_reserved_is_zero(&array_out));
  CHECK_EQ_INT(2, array_out.array.n_children);
  /* Again, as a device array. */
  struct ArrowSchema schema_2 = {0};
  struct ArrowDeviceArray array_2;
  memset(&array_2, 0, sizeof(array_2));
  CHECK_EQ_INT(FERRY_OK, ferry_device_array_import(&schema_out, &array_out, FERRY_VALIDATE_DEFAULT,
                                                   &schema_2, &array_2, &error));
  CHECK(schema_out.release == NULL && array_out.array.release == NULL);
  CHECK_STR("+s", schema_2.format);
  ferry_schema_release(&schema_2);
  ferry_device_array_release(&array_2);
  CHECK_EQ_INT(base, ferry_live_exports());
}

FERRY_TEST(import_refuses_a_finding_and_moves_nothing) {
  int64_t base = ferry_live_exports();
  struct ArrowSchema schema = {0};
  CHECK_EQ_INT(FERRY_OK, ferry_schema_init(&schema, "i", NULL, 0, 0, NULL));
  const void* buffers[2] = {NULL, NULL}; /* 2 values, no data buffer */
  struct ArrowArray array = {0};
  CHECK_EQ_INT(FERRY_OK, ferry_array_init(&array, 2, 0, 0, 2, buffers, 0, NULL, NULL, NULL));
  struct ArrowSchema schema_out = {0};
  struct ArrowDeviceArray array_out;
  memset(&array_out, 0, sizeof(array_out));
  struct FerryError error;
  CHECK_EQ_INT(EINVAL, ferry_array_import(&schema, &array, FERRY_VALIDATE_DEFAULT, &schema_out,
                                          &array_out, &error));
  CHECK_CONTAINS(error.message, "buffer 1");
  CHECK(schema.release != NULL && array.release != NULL); /* still the caller's */
  CHECK(schema_out.release == NULL && array_out.array.release == NULL);
  CHECK_EQ_INT(EINVAL, ferry_array_import(&schema, &array, 5, &schema_out, &array_out, &error));
  CHECK_CONTAINS(error.message, "not 5");
  /* NONE skips validation: the caller's promise. */
  CHECK_EQ_INT(FERRY_OK, ferry_array_import(&schema, &array, FERRY_VALIDATE_NONE, &schema_out,
                                            &array_out, &error));
  CHECK_EQ_INT(EINVAL, ferry_array_import(&schema, &array, FERRY_VALIDATE_NONE, &schema_out,
                                          &array_out, &error));
  CHECK_CONTAINS(error.message, "the schema is released");
  ferry_schema_release(&schema_out);
  ferry_device_array_release(&array_out);
  CHECK_EQ_INT(base, ferry_live_exports());
}

/* ---- device stream -> CPU stream ----------------------------------------- */

static void make_int_batches(struct ArrowDeviceArray* batches, int n, ArrowDeviceType type) {
  for (int i = 0; i < n; i++) {
    const void* buffers[2] = {NULL, &g_ints[i % 2]};
    struct ArrowArray array = {0};
    CHECK_EQ_INT(FERRY_OK, ferry_array_init(&array, 1, 0, 0, 2, buffers, 0, NULL, NULL, NULL));
    memset(&batches[i], 0, sizeof(batches[i]));
    int64_t id = type == ARROW_DEVICE_CPU ? -1 : 0;
    CHECK_EQ_INT(FERRY_OK, ferry_device_array_init(&batches[i], &array, type, id, NULL, NULL,
                                                   NULL, NULL));
  }
}

static void make_int_stream(struct ArrowDeviceArrayStream* stream, int n, ArrowDeviceType type) {
  struct ArrowSchema schema = {0};
  CHECK_EQ_INT(FERRY_OK, ferry_schema_init(&schema, "i", "x", ARROW_FLAG_NULLABLE, 0, NULL));
  struct ArrowDeviceArray batches[4];
  make_int_batches(batches, n, type);
  memset(stream, 0, sizeof(*stream));
  CHECK_EQ_INT(FERRY_OK,
               ferry_array_stream_init_from_arrays(stream, type, &schema, batches, n, NULL));
}

FERRY_TEST(to_cpu_stream_yields_the_batches_then_the_end_forever) {
  int64_t base = ferry_live_exports();
  struct ArrowDeviceArrayStream device;
  make_int_stream(&device, 2, ARROW_DEVICE_CPU);
  struct ArrowArrayStream cpu = {0};
  struct FerryError error;
  CHECK_EQ_INT(FERRY_OK,
               ferry_array_stream_to_cpu_stream(&device, FERRY_VALIDATE_NONE, 0, &cpu, &error));
  CHECK(device.release == NULL); /* moved in */
  struct ArrowSchema schema = {0};
  CHECK_EQ_INT(0, cpu.get_schema(&cpu, &schema));
  CHECK_STR("i", schema.format);
  schema.release(&schema);
  for (int i = 0; i < 2; i++) {
    struct ArrowArray batch;
    memset(&batch, 0xff, sizeof(batch));
    CHECK_EQ_INT(0, cpu.get_next(&cpu, &batch));
    CHECK(batch.release != NULL);
    CHECK_EQ_INT(1, batch.length);
    CHECK_EQ_INT(g_ints[i], ((const int32_t*)batch.buffers[1])[0]);
    batch.release(&batch);
  }
  for (int i = 0; i < 2; i++) {
    struct ArrowArray end;
    memset(&end, 0xff, sizeof(end));
    CHECK_EQ_INT(0, cpu.get_next(&cpu, &end));
    CHECK(end.release == NULL);
  }
  CHECK(cpu.get_last_error(&cpu) == NULL);
  cpu.release(&cpu);
  CHECK(cpu.release == NULL);
  CHECK_EQ_INT(base, ferry_live_exports());
}

FERRY_TEST(to_cpu_stream_refuses_a_device_stream_without_copy) {
  int64_t base = ferry_live_exports();
  struct ArrowDeviceArrayStream device;
  make_int_stream(&device, 1, ARROW_DEVICE_CUDA);
  struct ArrowArrayStream cpu = {0};
  struct FerryError error;
  CHECK_EQ_INT(EINVAL,
               ferry_array_stream_to_cpu_stream(&device, FERRY_VALIDATE_NONE, 0, &cpu, &error));
  CHECK_CONTAINS(error.message, "not on the CPU");
  CHECK_CONTAINS(error.message, "FERRY_CPU_STREAM_COPY_TO_HOST");
  CHECK(device.release != NULL); /* untouched */
  CHECK(cpu.release == NULL);
  CHECK_EQ_INT(EINVAL, ferry_array_stream_to_cpu_stream(&device, FERRY_VALIDATE_NONE,
                                                        FERRY_CPU_STREAM_COPY_TO_HOST, &cpu,
                                                        &error));
  CHECK_CONTAINS(error.message, "needs validation");
  CHECK_EQ_INT(EINVAL, ferry_array_stream_to_cpu_stream(&device, 7, 0, &cpu, &error));
  CHECK_CONTAINS(error.message, "not 7");
  CHECK_EQ_INT(EINVAL, ferry_array_stream_to_cpu_stream(&device, FERRY_VALIDATE_DEFAULT, 64,
                                                        &cpu, &error));
  CHECK_CONTAINS(error.message, "unknown flags 0x40");
  CHECK(device.release != NULL);
  ferry_array_stream_release(&device);
  struct ArrowDeviceArrayStream released = {0};
  CHECK_EQ_INT(EINVAL, ferry_array_stream_to_cpu_stream(&released, FERRY_VALIDATE_NONE, 0, &cpu,
                                                        &error));
  CHECK_CONTAINS(error.message, "the device stream is released");
  CHECK_EQ_INT(base, ferry_live_exports());
}

/* A device stream whose producer counts its calls and yields, per script
 * entry: 'g' a good int32 batch, 'b' an int32 batch without a data buffer
 * (validation refuses it), 'e' a failure with a message, 'E' one without. */
struct Scripted {
  const char* script;
  int calls;
  int released;
};

static int scripted_schema(void* user_data, struct ArrowSchema* out, struct FerryError* error) {
  return ferry_schema_init(out, "i", "x", ARROW_FLAG_NULLABLE, 0, error);
}

static int scripted_next(void* user_data, struct ArrowDeviceArray* out,
                         struct FerryError* error) {
  struct Scripted* s = (struct Scripted*)user_data;
  char step = s->script[s->calls++];
  if (step == '\0') return FERRY_OK;
  if (step == 'e') {
    snprintf(error->message, sizeof(error->message), "scripted failure %d", s->calls);
    return EIO;
  }
  if (step == 'E') return EIO;
  const void* buffers[2] = {NULL, step == 'g' ? (const void*)g_ints : NULL};
  struct ArrowArray array = {0};
  int rc = ferry_array_init(&array, 2, 0, 0, 2, buffers, 0, NULL, NULL, error);
  if (rc != FERRY_OK) return rc;
  return ferry_device_array_init(out, &array, ARROW_DEVICE_CPU, -1, NULL, NULL, NULL, error);
}

static void scripted_release(void* user_data) { ((struct Scripted*)user_data)->released++; }

static void make_scripted(struct ArrowDeviceArrayStream* out, struct Scripted* s) {
  memset(out, 0, sizeof(*out));
  CHECK_EQ_INT(FERRY_OK, ferry_array_stream_init(out, ARROW_DEVICE_CPU, scripted_schema,
                                                 scripted_next, scripted_release, s, NULL));
}

FERRY_TEST(to_cpu_stream_validates_and_keeps_the_first_failure) {
  int64_t base = ferry_live_exports();
  struct Scripted script = {"gbg", 0, 0};
  struct ArrowDeviceArrayStream device;
  make_scripted(&device, &script);
  struct ArrowArrayStream cpu = {0};
  CHECK_EQ_INT(FERRY_OK,
               ferry_array_stream_to_cpu_stream(&device, FERRY_VALIDATE_DEFAULT, 0, &cpu, NULL));
  struct ArrowArray batch = {0};
  /* get_next before get_schema: the adapter fetches the schema itself. */
  CHECK_EQ_INT(0, cpu.get_next(&cpu, &batch));
  CHECK_EQ_INT(2, batch.length);
  batch.release(&batch);
  CHECK_EQ_INT(EINVAL, cpu.get_next(&cpu, &batch));
  CHECK(batch.release == NULL);
  CHECK_CONTAINS(cpu.get_last_error(&cpu), "the array fails validation: ");
  char first[FERRY_ERROR_MESSAGE_SIZE];
  snprintf(first, sizeof(first), "%s", cpu.get_last_error(&cpu));
  /* Never called again: the same code and message, the producer untouched. */
  CHECK_EQ_INT(EINVAL, cpu.get_next(&cpu, &batch));
  CHECK_EQ_INT(EINVAL, cpu.get_next(&cpu, &batch));
  struct ArrowSchema schema = {0};
  CHECK_EQ_INT(EINVAL, cpu.get_schema(&cpu, &schema));
  CHECK(schema.release == NULL);
  CHECK_STR(first, cpu.get_last_error(&cpu));
  CHECK_EQ_INT(2, script.calls);
  cpu.release(&cpu);
  CHECK_EQ_INT(1, script.released);
  CHECK_EQ_INT(base, ferry_live_exports());
}

FERRY_TEST(to_cpu_stream_passes_the_producers_message) {
  int64_t base = ferry_live_exports();
  struct Scripted script = {"ge", 0, 0};
  struct ArrowDeviceArrayStream device;
  make_scripted(&device, &script);
  struct ArrowArrayStream cpu = {0};
  CHECK_EQ_INT(FERRY_OK,
               ferry_array_stream_to_cpu_stream(&device, FERRY_VALIDATE_NONE, 0, &cpu, NULL));
  struct ArrowArray batch = {0};
  CHECK_EQ_INT(0, cpu.get_next(&cpu, &batch));
  batch.release(&batch);
  CHECK_EQ_INT(EIO, cpu.get_next(&cpu, &batch));
  CHECK_STR("scripted failure 2", cpu.get_last_error(&cpu));
  CHECK_EQ_INT(EIO, cpu.get_next(&cpu, &batch));
  CHECK_STR("scripted failure 2", cpu.get_last_error(&cpu));
  CHECK_EQ_INT(2, script.calls);
  cpu.release(&cpu);
  CHECK_EQ_INT(1, script.released);
  CHECK_EQ_INT(base, ferry_live_exports());
}

FERRY_TEST(to_cpu_stream_wraps_plain_arrays_as_record_batches) {
  int64_t base = ferry_live_exports();
  struct ArrowDeviceArrayStream device;
  make_int_stream(&device, 1, ARROW_DEVICE_CPU);
  struct ArrowArrayStream cpu = {0};
  CHECK_EQ_INT(FERRY_OK,
               ferry_array_stream_to_cpu_stream(&device, FERRY_VALIDATE_FULL,
                                                FERRY_CPU_STREAM_RECORD_BATCHES, &cpu, NULL));
  struct ArrowSchema schema = {0};
  CHECK_EQ_INT(0, cpu.get_schema(&cpu, &schema));
  CHECK_STR("+s", schema.format);
  CHECK_STR("", schema.name);
  CHECK_EQ_INT(1, schema.n_children);
  CHECK_STR("i", schema.children[0]->format);
  CHECK_STR("x", schema.children[0]->name);
  struct FerryError error;
  CHECK_EQ_INT(FERRY_OK, ferry_validate_schema(&schema, NULL, NULL, &error));
  struct ArrowArray batch = {0};
  CHECK_EQ_INT(0, cpu.get_next(&cpu, &batch));
  CHECK_EQ_INT(1, batch.length);
  CHECK_EQ_INT(1, batch.n_children);
  CHECK_EQ_INT(1, batch.children[0]->length);
  CHECK_EQ_INT(g_ints[0], ((const int32_t*)batch.children[0]->buffers[1])[0]);
  struct ArrowDeviceArray as_device;
  memset(&as_device, 0, sizeof(as_device));
  CHECK_EQ_INT(FERRY_OK, ferry_device_array_init(&as_device, &batch, ARROW_DEVICE_CPU, -1, NULL,
                                                 NULL, NULL, NULL));
  CHECK_EQ_INT(FERRY_OK, ferry_validate_device_array(&schema, &as_device, FERRY_VALIDATE_FULL,
                                                     NULL, NULL, &error));
  ferry_device_array_release(&as_device);
  schema.release(&schema);
  cpu.release(&cpu);
  CHECK_EQ_INT(base, ferry_live_exports());
}

FERRY_TEST(to_cpu_stream_copies_sim_batches_to_the_host) {
  int64_t base = ferry_live_exports();
  struct FerryDevice* sim = NULL;
  if (ferry_device_resolve(ARROW_DEVICE_EXT_DEV, 0, &sim, NULL) != FERRY_OK) {
    printf("skip: no simulated device\n");
    return;
  }
  struct FerryDevice* host = NULL;
  CHECK_EQ_INT(FERRY_OK, ferry_device_resolve(ARROW_DEVICE_CPU, -1, &host, NULL));
  void* data = NULL;
  CHECK_EQ_INT(FERRY_OK, ferry_device_allocate(sim, sizeof(g_ints), &data, NULL));
  CHECK_EQ_INT(FERRY_OK, ferry_device_memcpy(sim, data, host, g_ints, sizeof(g_ints), NULL, NULL));
  const void* buffers[2] = {NULL, data};
  struct ArrowArray array = {0};
  CHECK_EQ_INT(FERRY_OK, ferry_array_init(&array, 2, 0, 0, 2, buffers, 0, NULL, NULL, NULL));
  struct ArrowDeviceArray batch;
  memset(&batch, 0, sizeof(batch));
  CHECK_EQ_INT(FERRY_OK, ferry_device_array_init(&batch, &array, ARROW_DEVICE_EXT_DEV, 0, NULL,
                                                 NULL, NULL, NULL));
  struct ArrowSchema schema = {0};
  CHECK_EQ_INT(FERRY_OK, ferry_schema_init(&schema, "i", "x", 0, 0, NULL));
  struct ArrowDeviceArrayStream device;
  memset(&device, 0, sizeof(device));
  CHECK_EQ_INT(FERRY_OK, ferry_array_stream_init_from_arrays(&device, ARROW_DEVICE_EXT_DEV,
                                                             &schema, &batch, 1, NULL));
  struct ArrowArrayStream cpu = {0};
  struct FerryError error;
  CHECK_EQ_INT(FERRY_OK, ferry_array_stream_to_cpu_stream(&device, FERRY_VALIDATE_DEFAULT,
                                                          FERRY_CPU_STREAM_COPY_TO_HOST, &cpu,
                                                          &error));
  struct ArrowArray out = {0};
  CHECK_EQ_INT(0, cpu.get_next(&cpu, &out));
  CHECK(out.release != NULL);
  CHECK(out.buffers[1] != data); /* a host copy */
  CHECK_EQ_INT(8, ((const int32_t*)out.buffers[1])[1]);
  out.release(&out);
  CHECK_EQ_INT(0, cpu.get_next(&cpu, &out));
  CHECK(out.release == NULL);
  cpu.release(&cpu);
  CHECK_EQ_INT(FERRY_OK, ferry_device_deallocate(sim, data, NULL));
  CHECK_EQ_INT(base, ferry_live_exports());
}

FERRY_TEST(stream_with_schema_answers_the_new_schema_and_passes_batches) {
  int64_t base = ferry_live_exports();
  struct ArrowDeviceArrayStream device;
  make_int_stream(&device, 2, ARROW_DEVICE_CPU);
  struct ArrowSchema dates = {0};
  CHECK_EQ_INT(FERRY_OK, ferry_schema_init(&dates, "tdD", "day", ARROW_FLAG_NULLABLE, 0, NULL));
  struct ArrowDeviceArrayStream swapped;
  memset(&swapped, 0, sizeof(swapped));
  struct FerryError error;
  CHECK_EQ_INT(FERRY_OK, ferry_array_stream_with_schema(&device, &dates, &swapped, &error));
  CHECK(device.release == NULL && dates.release == NULL);
  CHECK_EQ_INT(ARROW_DEVICE_CPU, swapped.device_type);
  for (int round = 0; round < 2; round++) {
    struct ArrowSchema schema = {0};
    CHECK_EQ_INT(FERRY_OK, ferry_array_stream_get_schema(&swapped, &schema, &error));
    CHECK_STR("tdD", schema.format);
    CHECK_STR("day", schema.name);
    ferry_schema_release(&schema);
  }
  int n = 0;
  for (;;) {
    struct ArrowDeviceArray batch;
    memset(&batch, 0, sizeof(batch));
    CHECK_EQ_INT(FERRY_OK, ferry_array_stream_get_next(&swapped, &batch, &error));
    if (batch.array.release == NULL) break;
    CHECK_EQ_INT(g_ints[n++], ((const int32_t*)batch.array.buffers[1])[0]);
    ferry_device_array_release(&batch);
  }
  CHECK_EQ_INT(2, n);
  ferry_array_stream_release(&swapped);
  /* A released input is refused, and nothing is taken. */
  struct ArrowSchema other = {0};
  CHECK_EQ_INT(FERRY_OK, ferry_schema_init(&other, "i", NULL, 0, 0, NULL));
  CHECK_EQ_INT(EINVAL, ferry_array_stream_with_schema(&device, &other, &swapped, &error));
  CHECK_CONTAINS(error.message, "the stream is released");
  CHECK(other.release != NULL);
  ferry_schema_release(&other);
  CHECK_EQ_INT(base, ferry_live_exports());
}

/* ---- CPU stream -> device stream ----------------------------------------- */

/* A plain C stream: yields `n` int32 batches of length 1, then fails with
 * `fail_code` (and `fail_message`, which may be NULL) or ends. */
struct Plain {
  int n;
  int given;
  int fail_code;
  const char* fail_message;
  int released;
};

static int plain_get_schema(struct ArrowArrayStream* self, struct ArrowSchema* out) {
  return ferry_schema_init(out, "i", "p", 0, 0, NULL);
}

static int plain_get_next(struct ArrowArrayStream* self, struct ArrowArray* out) {
  struct Plain* p = (struct Plain*)self->private_data;
  if (p->given == p->n) {
    if (p->fail_code != 0) return p->fail_code;
    out->release = NULL;
    return 0;
  }
  const void* buffers[2] = {NULL, &g_ints[p->given++ % 2]};
  return ferry_array_init(out, 1, 0, 0, 2, buffers, 0, NULL, NULL, NULL);
}

static const char* plain_last_error(struct ArrowArrayStream* self) {
  return ((struct Plain*)self->private_data)->fail_message;
}

static void plain_release(struct ArrowArrayStream* self) {
  ((struct Plain*)self->private_data)->released++;
  self->release = NULL;
}

static void make_plain(struct ArrowArrayStream* out, struct Plain* p) {
  out->get_schema = plain_get_schema;
  out->get_next = plain_get_next;
  out->get_last_error = plain_last_error;
  out->release = plain_release;
  out->private_data = p;
}

FERRY_TEST(from_cpu_stream_reads_a_plain_stream_as_a_cpu_device_stream) {
  int64_t base = ferry_live_exports();
  struct Plain p = {2, 0, 0, NULL, 0};
  struct ArrowArrayStream plain;
  make_plain(&plain, &p);
  struct ArrowDeviceArrayStream device;
  memset(&device, 0, sizeof(device));
  struct FerryError error;
  CHECK_EQ_INT(FERRY_OK, ferry_array_stream_from_cpu_stream(&plain, &device, &error));
  CHECK(plain.release == NULL);
  CHECK_EQ_INT(ARROW_DEVICE_CPU, device.device_type);
  struct ArrowSchema schema = {0};
  CHECK_EQ_INT(FERRY_OK, ferry_array_stream_get_schema(&device, &schema, &error));
  CHECK_STR("p", schema.name);
  for (int i = 0; i < 2; i++) {
    struct ArrowDeviceArray batch;
    memset(&batch, 0, sizeof(batch));
    CHECK_EQ_INT(FERRY_OK, ferry_array_stream_get_next(&device, &batch, &error));
    CHECK_EQ_INT(ARROW_DEVICE_CPU, batch.device_type);
    CHECK_EQ_INT(-1, batch.device_id);
    CHECK(batch.sync_event == NULL);
    CHECK_EQ_INT(FERRY_OK, ferry_validate_device_array(&schema, &batch, FERRY_VALIDATE_FULL, NULL,
                                                       NULL, &error));
    CHECK_EQ_INT(g_ints[i], ((const int32_t*)batch.array.buffers[1])[0]);
    ferry_device_array_release(&batch);
  }
  struct ArrowDeviceArray end;
  memset(&end, 0, sizeof(end));
  CHECK_EQ_INT(FERRY_OK, ferry_array_stream_get_next(&device, &end, &error));
  CHECK(end.array.release == NULL);
  ferry_schema_release(&schema);
  CHECK_EQ_INT(0, p.released);
  ferry_array_stream_release(&device);
  CHECK_EQ_INT(1, p.released);
  CHECK_EQ_INT(base, ferry_live_exports());
}

FERRY_TEST(from_cpu_stream_reports_the_plain_streams_failure) {
  int64_t base = ferry_live_exports();
  struct Plain p = {1, 0, EIO, "disk on fire", 0};
  struct ArrowArrayStream plain;
  make_plain(&plain, &p);
  struct ArrowDeviceArrayStream device;
  memset(&device, 0, sizeof(device));
  CHECK_EQ_INT(FERRY_OK, ferry_array_stream_from_cpu_stream(&plain, &device, NULL));
  struct ArrowDeviceArray batch;
  memset(&batch, 0, sizeof(batch));
  struct FerryError error;
  CHECK_EQ_INT(FERRY_OK, ferry_array_stream_get_next(&device, &batch, &error));
  ferry_device_array_release(&batch);
  CHECK_EQ_INT(EIO, ferry_array_stream_get_next(&device, &batch, &error));
  CHECK_STR("disk on fire", error.message);
  ferry_array_stream_release(&device);
  /* Without a message: the operation and the code are named. */
  struct Plain q = {0, 0, ENOMEM, NULL, 0};
  make_plain(&plain, &q);
  CHECK_EQ_INT(FERRY_OK, ferry_array_stream_from_cpu_stream(&plain, &device, NULL));
  CHECK_EQ_INT(ENOMEM, ferry_array_stream_get_next(&device, &batch, &error));
  CHECK_CONTAINS(error.message, "get_next failed with ENOMEM");
  ferry_array_stream_release(&device);
  CHECK_EQ_INT(1, q.released);
  CHECK_EQ_INT(base, ferry_live_exports());
}

FERRY_TEST(from_cpu_stream_refuses_bad_arguments) {
  struct FerryError error;
  struct ArrowDeviceArrayStream device;
  memset(&device, 0, sizeof(device));
  struct ArrowArrayStream plain = {0};
  CHECK_EQ_INT(EINVAL, ferry_array_stream_from_cpu_stream(&plain, &device, &error));
  CHECK_CONTAINS(error.message, "the CPU stream is released");
  CHECK_EQ_INT(EINVAL, ferry_array_stream_from_cpu_stream(NULL, &device, &error));
  CHECK_CONTAINS(error.message, "the CPU stream is NULL");
  struct Plain p = {0, 0, 0, NULL, 0};
  make_plain(&plain, &p);
  plain.get_next = NULL;
  CHECK_EQ_INT(EINVAL, ferry_array_stream_from_cpu_stream(&plain, &device, &error));
  CHECK_CONTAINS(error.message, "no get_next callback");
  CHECK(plain.release != NULL); /* untouched */
  plain.release(&plain);
}

FERRY_TEST(round_trip_device_to_cpu_to_device) {
  int64_t base = ferry_live_exports();
  struct ArrowDeviceArrayStream device;
  make_int_stream(&device, 2, ARROW_DEVICE_CPU);
  struct ArrowArrayStream cpu = {0};
  CHECK_EQ_INT(FERRY_OK,
               ferry_array_stream_to_cpu_stream(&device, FERRY_VALIDATE_NONE, 0, &cpu, NULL));
  struct ArrowDeviceArrayStream back;
  memset(&back, 0, sizeof(back));
  CHECK_EQ_INT(FERRY_OK, ferry_array_stream_from_cpu_stream(&cpu, &back, NULL));
  int n = 0;
  for (;;) {
    struct ArrowDeviceArray batch;
    memset(&batch, 0, sizeof(batch));
    CHECK_EQ_INT(FERRY_OK, ferry_array_stream_get_next(&back, &batch, NULL));
    if (batch.array.release == NULL) break;
    CHECK_EQ_INT(g_ints[n], ((const int32_t*)batch.array.buffers[1])[0]);
    n++;
    ferry_device_array_release(&batch);
  }
  CHECK_EQ_INT(2, n);
  ferry_array_stream_release(&back);
  CHECK_EQ_INT(base, ferry_live_exports());
}

FERRY_TEST_MAIN()
