/* Hostile producers against the core's walks (issue 15): shared and cyclic
 * children and dictionaries, arrays longer than their sim allocations,
 * DLPack tensors with absurd offsets, and the cases where validation and the
 * deep copy used to disagree. Each test was a reproducer that failed (or
 * never returned) before the fix.
 *
 * Nothing here measures time: a walk that is exponential simply does not
 * finish, and the counts of findings show that each problem is reported
 * once, not once per path.
 *
 * At the end, every case of tests/hostile's catalogue (the one library of
 * hostile producers, which every binding's hostile suite loads too; compiled
 * in here, against the same core) must get the finding it names. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

#include "ferry/dlpack_abi.h"
#include "ferry/ferry.h"
#include "ferry_test.h"
#include "ferry_hostile.h"
#include "findings.h"
#include "hand_made.h"

/* ---- building blocks ------------------------------------------------------ */

/* A leaf of `format` over `buffers` (borrowed) at offset 0, on `type` (the
 * CPU as device -1, an extension device as device 0); fills `schema`. */
static struct ArrowDeviceArray leaf(struct ArrowSchema* schema, const char* format,
                                    int64_t length, int64_t n_buffers, const void** buffers,
                                    ArrowDeviceType type) {
  init_schema(schema, format, 0, NULL);
  struct ArrowArray a;
  init_array(&a, length, n_buffers, buffers, 0, NULL);
  return on_device(&a, type, type == ARROW_DEVICE_CPU ? -1 : 0);
}

static struct Findings findings;
static struct FerryError error;

static int validate(const struct ArrowSchema* schema, const struct ArrowDeviceArray* array,
                    int32_t level) {
  return validate_collecting(schema, array, level, &findings, &error);
}

/* The deep copy of `d` to the CPU into `out` (zeroed first; the error in
 * `error`). */
static int copy_to_cpu(const struct ArrowSchema* schema, const struct ArrowDeviceArray* d,
                       struct ArrowDeviceArray* out) {
  memset(out, 0, sizeof *out);
  return ferry_device_array_copy(schema, d, ARROW_DEVICE_CPU, -1, out, &error);
}

#define CHECK_FINDING(rule, where, what) CHECK(has_finding(&findings, rule, where, what))

static const int32_t kInt32s[8] = {1, 2, 3, 4, 5, 6, 7, 8};

/* ---- shared children: a chain whose every level has two children that are
 * the same node. 2^levels paths, levels + 1 distinct nodes. ---------------- */

#define MAX_LEVELS 40
struct SharedChain {
  struct ArrowSchema schemas[MAX_LEVELS + 1];
  struct ArrowArray arrays[MAX_LEVELS + 1];
  struct ArrowSchema* schema_kids[MAX_LEVELS][2];
  struct ArrowArray* array_kids[MAX_LEVELS][2];
  const void* struct_buffers[1];
  const void* leaf_buffers[2];
};

/* Level 0 is the root; level `levels` is an int32 leaf of length 4. */
static void build_shared_chain(struct SharedChain* c, int levels) {
  c->struct_buffers[0] = NULL;
  c->leaf_buffers[0] = NULL;
  c->leaf_buffers[1] = kInt32s;
  for (int i = 0; i < levels; i++) {
    c->schema_kids[i][0] = c->schema_kids[i][1] = &c->schemas[i + 1];
    c->array_kids[i][0] = c->array_kids[i][1] = &c->arrays[i + 1];
    init_schema(&c->schemas[i], "+s", 2, c->schema_kids[i]);
    init_array(&c->arrays[i], 4, 1, c->struct_buffers, 2, c->array_kids[i]);
  }
  init_schema(&c->schemas[levels], "i", 0, NULL);
  init_array(&c->arrays[levels], 4, 2, c->leaf_buffers, 0, NULL);
}

static struct SharedChain g_chain;

static void check_shared_chain(int levels, int32_t level) {
  build_shared_chain(&g_chain, levels);
  struct ArrowDeviceArray d = on_device(&g_chain.arrays[0], ARROW_DEVICE_CPU, -1);
  CHECK_EQ_INT(EINVAL, validate(&g_chain.schemas[0], &d, level));
  /* One finding per shared node, for the schema tree and for the array tree:
   * not one per path (2^levels of them). */
  CHECK_EQ_INT(2 * levels, findings.n);
  CHECK_EQ_INT(2 * levels, count_rule(&findings, "shared"));
  CHECK_FINDING("shared", "root.children[1]", "also at root.children[0]");
  /* The first finding (in `error`) is the deepest level's, met first. */
  CHECK(strncmp(error.message, "shared: root.children[0].children[0]", 36) == 0);
}

FERRY_TEST(shared_children_chain_of_20_levels_is_one_finding_per_node) {
  check_shared_chain(20, FERRY_VALIDATE_DEFAULT);
  check_shared_chain(20, FERRY_VALIDATE_FULL);
}

FERRY_TEST(shared_children_chain_of_40_levels_finishes) {
  check_shared_chain(40, FERRY_VALIDATE_DEFAULT);
  check_shared_chain(40, FERRY_VALIDATE_FULL);
  memset(&findings, 0, sizeof findings);
  CHECK_EQ_INT(EINVAL, ferry_validate_schema(&g_chain.schemas[0], collect, &findings,
                                             &error));
  CHECK_EQ_INT(40, findings.n);
}

FERRY_TEST(struct_whose_two_children_are_itself_is_one_cycle_finding) {
  struct ArrowSchema loop;
  struct ArrowSchema* schema_kids[2] = {&loop, &loop};
  init_schema(&loop, "+s", 2, schema_kids);
  struct ArrowDeviceArray d;
  memset(&d, 0, sizeof d);
  struct ArrowArray* array_kids[2] = {&d.array, &d.array};
  const void* buffers[1] = {NULL};
  init_array(&d.array, 1, 1, buffers, 2, array_kids);
  d.device_type = ARROW_DEVICE_CPU;
  d.device_id = -1;
  for (int32_t level = FERRY_VALIDATE_DEFAULT; level <= FERRY_VALIDATE_FULL; level++) {
    CHECK_EQ_INT(EINVAL, validate(&loop, &d, level));
    CHECK_EQ_INT(2, findings.n);
    CHECK_EQ_INT(2, count_rule(&findings, "cycle"));
    CHECK_FINDING("cycle", "root.children[0]", "is its own ancestor (root)");
  }
  memset(&findings, 0, sizeof findings);
  CHECK_EQ_INT(EINVAL, ferry_validate_schema(&loop, collect, &findings, &error));
  CHECK_EQ_INT(1, findings.n);
  CHECK_CONTAINS(error.message, "cycle: root.children[0]: ");
}

FERRY_TEST(a_dictionary_shared_with_a_child_is_a_finding) {
  /* struct<a: dictionary<int32 -> utf8>, b: utf8> where b is the dictionary. */
  struct ArrowSchema utf8, dict_a;
  init_schema(&utf8, "u", 0, NULL);
  init_schema(&dict_a, "i", 0, NULL);
  dict_a.dictionary = &utf8;
  struct ArrowSchema* schema_kids[2] = {&dict_a, &utf8};
  struct ArrowSchema root;
  init_schema(&root, "+s", 2, schema_kids);
  CHECK_EQ_INT(EINVAL, ferry_validate_schema(&root, collect,
                                             (memset(&findings, 0, sizeof findings),
                                              &findings),
                                             &error));
  CHECK_EQ_INT(1, findings.n);
  CHECK_FINDING("shared", "root.children[1]", "also at root.children[0].dictionary");
}

/* ---- the deep copy: shared children are refused, linearly ------------------- */

FERRY_TEST(copy_refuses_shared_children_and_cycles_without_walking_every_path) {
  build_shared_chain(&g_chain, 40);
  struct ArrowDeviceArray d = on_device(&g_chain.arrays[0], ARROW_DEVICE_CPU, -1);
  struct ArrowDeviceArray out;
  CHECK_EQ_INT(EINVAL, copy_to_cpu(&g_chain.schemas[0], &d, &out));
  /* The first repeat met is the deepest level's second child. */
  CHECK_CONTAINS(error.message, "copying root.children[0].children[0].children[0]");
  CHECK_CONTAINS(error.message, ".children[1]: this array is shared");
  CHECK(out.array.release == NULL);

  struct ArrowSchema loop;
  struct ArrowSchema* schema_kids[1] = {&loop};
  init_schema(&loop, "+s", 1, schema_kids);
  struct ArrowArray* array_kids[1] = {&d.array};
  const void* buffers[1] = {NULL};
  init_array(&d.array, 1, 1, buffers, 1, array_kids);
  CHECK_EQ_INT(EINVAL,
               ferry_device_array_copy(&loop, &d, ARROW_DEVICE_CPU, -1, &out, &error));
  CHECK_CONTAINS(error.message, "copying root.children[0]:");
  CHECK_CONTAINS(error.message, "cycle");
  CHECK(out.array.release == NULL);
}

/* ---- validation and the deep copy follow one rule on NULL buffers ----------- */

/* FULL validation and the copy must agree: both accept or both refuse. */
static void check_validate_and_copy_agree(const struct ArrowSchema* schema,
                                          const struct ArrowDeviceArray* d,
                                          int expect_valid) {
  int validated = validate(schema, d, FERRY_VALIDATE_FULL);
  if (validated != FERRY_OK) print_findings(&findings);
  struct ArrowDeviceArray out;
  memset(&out, 0, sizeof out);
  struct FerryError copy_error;
  int copied = ferry_device_array_copy(schema, d, ARROW_DEVICE_CPU, -1, &out, &copy_error);
  if (copied != FERRY_OK) printf("    copy: %s\n", copy_error.message);
  if (out.array.release != NULL) ferry_device_array_release(&out);
  CHECK_EQ_INT(expect_valid ? FERRY_OK : EINVAL, validated);
  CHECK_EQ_INT(expect_valid ? FERRY_OK : EINVAL, copied);
}

FERRY_TEST(empty_utf8_with_an_offset_and_no_offsets_buffer_is_valid_for_both) {
  struct ArrowSchema s;
  const void* buffers[3] = {NULL, NULL, "abc"};
  struct ArrowDeviceArray d = leaf(&s, "u", 0, 3, buffers, ARROW_DEVICE_CPU);
  d.array.offset = 3;
  check_validate_and_copy_agree(&s, &d, 1);
}

FERRY_TEST(empty_string_view_with_variadic_data_but_no_sizes_is_refused_by_both) {
  struct ArrowSchema s;
  const void* buffers[4] = {NULL, NULL, "abc", NULL};
  struct ArrowDeviceArray d = leaf(&s, "vu", 0, 4, buffers, ARROW_DEVICE_CPU);
  check_validate_and_copy_agree(&s, &d, 0);
  CHECK_EQ_INT(EINVAL, validate(&s, &d, FERRY_VALIDATE_DEFAULT));
  CHECK_FINDING("buffers", "root",
                "buffer 3 (variadic sizes) is NULL but there are 1 variadic data buffers");
}

/* ---- sim: what the allocation sizes tell ------------------------------------ */

static struct FerryDevice* sim_device(void) {
  struct FerryDevice* device = NULL;
  ferry_device_resolve(ARROW_DEVICE_EXT_DEV, 0, &device, NULL);
  return device;
}

FERRY_TEST(full_never_reads_a_buffer_longer_than_its_sim_allocation) {
  struct FerryDevice* sim = sim_device();
  CHECK(sim != NULL);
  int32_t strict_before = ferry_sim_is_strict();
  ferry_sim_set_strict(1);
  void* validity = NULL;
  void* values = NULL;
  CHECK_EQ_INT(FERRY_OK, ferry_device_allocate(sim, 1, &validity, NULL));
  CHECK_EQ_INT(FERRY_OK, ferry_device_allocate(sim, 16, &values, NULL));
  /* 4096 int32 values with a validity bitmap: both buffers are far shorter
   * than the length says; reading them runs off the allocations. */
  struct ArrowSchema s;
  const void* buffers[2] = {validity, values};
  struct ArrowDeviceArray d = leaf(&s, "i", 4096, 2, buffers, ARROW_DEVICE_EXT_DEV);
  d.array.null_count = 7;
  for (int32_t level = FERRY_VALIDATE_DEFAULT; level <= FERRY_VALIDATE_FULL; level++) {
    CHECK_EQ_INT(EINVAL, validate(&s, &d, level));
    CHECK_EQ_INT(2, findings.n);
    CHECK_FINDING("device", "root", "buffer 0 (validity) at");
    CHECK_FINDING("device", "root", "runs past the end of a 1-byte allocation");
    CHECK_FINDING("device", "root", "buffer 1 (data) at");
  }
  /* utf8 whose offsets point past the data allocation: FULL reports the data
   * buffer and does not check (read) its UTF-8. */
  void* offsets = NULL;
  void* data = NULL;
  const int32_t host_offsets[3] = {0, 3, 300};
  CHECK_EQ_INT(FERRY_OK, ferry_device_allocate(sim, sizeof host_offsets, &offsets, NULL));
  CHECK_EQ_INT(FERRY_OK, ferry_device_allocate(sim, 3, &data, NULL));
  struct FerryDevice* cpu = NULL;
  CHECK_EQ_INT(FERRY_OK, ferry_device_resolve(ARROW_DEVICE_CPU, -1, &cpu, NULL));
  CHECK_EQ_INT(FERRY_OK, ferry_device_memcpy(sim, offsets, cpu, host_offsets,
                                             sizeof host_offsets, NULL, NULL));
  CHECK_EQ_INT(FERRY_OK, ferry_device_memcpy(sim, data, cpu, "abc", 3, NULL, NULL));
  struct ArrowSchema us;
  const void* utf8_buffers[3] = {NULL, offsets, data};
  struct ArrowDeviceArray ud = leaf(&us, "u", 2, 3, utf8_buffers, ARROW_DEVICE_EXT_DEV);
  CHECK_EQ_INT(FERRY_OK, validate(&us, &ud, FERRY_VALIDATE_DEFAULT));
  CHECK_EQ_INT(EINVAL, validate(&us, &ud, FERRY_VALIDATE_FULL));
  CHECK_EQ_INT(1, findings.n);
  CHECK_FINDING("device", "root", "buffer 2 (data) at");

  ferry_device_deallocate(sim, validity, NULL);
  ferry_device_deallocate(sim, values, NULL);
  ferry_device_deallocate(sim, offsets, NULL);
  ferry_device_deallocate(sim, data, NULL);
  ferry_sim_set_strict(strict_before);
}

FERRY_TEST(an_empty_buffer_one_past_the_end_of_a_sim_allocation_is_valid) {
  struct FerryDevice* sim = sim_device();
  void* values = NULL;
  CHECK_EQ_INT(FERRY_OK, ferry_device_allocate(sim, 16, &values, NULL));
  struct ArrowSchema s;
  /* A length-0 slice at the end of a 4-value buffer: offset 4, pointer at the
   * start; and a length-0 array whose pointer is one past the end. */
  const void* buffers[2] = {NULL, values};
  struct ArrowDeviceArray d = leaf(&s, "i", 0, 2, buffers, ARROW_DEVICE_EXT_DEV);
  d.array.offset = 4;
  CHECK_EQ_INT(FERRY_OK, validate(&s, &d, FERRY_VALIDATE_FULL));
  buffers[1] = (const char*)values + 16;
  d.array.offset = 0;
  int rc = validate(&s, &d, FERRY_VALIDATE_FULL);
  if (rc != FERRY_OK) print_findings(&findings);
  CHECK_EQ_INT(FERRY_OK, rc);
  /* One more value does not fit. */
  d.array.length = 1;
  CHECK_EQ_INT(EINVAL, validate(&s, &d, FERRY_VALIDATE_DEFAULT));
  CHECK_FINDING("device", "root", "buffer 1 (data) at");
  ferry_device_deallocate(sim, values, NULL);
}

/* ---- DLPack: offsets and sizes are range-checked ------------------------------ */

static int g_deleter_calls;
static void count_deleter(struct DLManagedTensorVersioned* self) { g_deleter_calls++; }

static int import_tensor(struct DLManagedTensorVersioned* t) {
  struct ArrowSchema schema;
  struct ArrowDeviceArray array;
  memset(&schema, 0, sizeof schema);
  memset(&array, 0, sizeof array);
  int rc = ferry_device_array_from_dlpack(t, &schema, &array, &error);
  if (rc == FERRY_OK) {
    ferry_device_array_release(&array);
    ferry_schema_release(&schema);
  } else if (schema.release != NULL || array.array.release != NULL) {
    return -1; /* a refusal must fill nothing */
  }
  return rc;
}

FERRY_TEST(dlpack_import_refuses_a_byte_offset_that_wraps_the_address_space) {
  static int32_t values[16];
  int64_t shape[1] = {4};
  struct DLManagedTensorVersioned t;
  g_deleter_calls = 0;
  init_int32_tensor(&t, shape, values + 8, count_deleter);
  t.dl_tensor.byte_offset = UINT64_MAX - 63; /* 2^64 - 64: 64 bytes before data */
  CHECK_EQ_INT(EINVAL, import_tensor(&t));
  CHECK_CONTAINS(error.message, "byte_offset 18446744073709551552");
  CHECK_CONTAINS(error.message, "address");
  CHECK_EQ_INT(0, g_deleter_calls);

  /* An offset that keeps the address valid but not int64-sized. */
  t.dl_tensor.byte_offset = (uint64_t)INT64_MAX + 1;
  CHECK_EQ_INT(EINVAL, import_tensor(&t));
  CHECK_CONTAINS(error.message, "byte_offset");

  /* shape * itemsize beyond int64, and beyond the address space. */
  t.dl_tensor.byte_offset = 0;
  shape[0] = INT64_MAX / 2;
  CHECK_EQ_INT(EINVAL, import_tensor(&t));
  CHECK_CONTAINS(error.message, "elements of 4 bytes");
  shape[0] = INT64_MAX / 4;
  t.dl_tensor.byte_offset = 16;
  CHECK_EQ_INT(EINVAL, import_tensor(&t));
  CHECK_CONTAINS(error.message, "byte_offset 16 + 9223372036854775804 bytes");
  CHECK_EQ_INT(0, g_deleter_calls);

  /* A sane offset still imports, and the deleter runs once on release. */
  shape[0] = 4;
  t.dl_tensor.byte_offset = 8;
  CHECK_EQ_INT(FERRY_OK, import_tensor(&t));
  CHECK_EQ_INT(1, g_deleter_calls);
}

/* ---- the catalogue of tests/hostile: every case gets its finding ------------ */

/* Case `i` (fresh structs) validated at `level`: `rc` and, on a refusal,
 * the first finding in the message (what every binding reports). */
static int validate_case(int32_t i, int32_t level) {
  struct ArrowDeviceArray d;
  struct ArrowSchema s;
  CHECK_EQ_INT(0, ferry_hostile_make(ferry_hostile_name(i), &d, &s));
  int rc = validate(&s, &d, level);
  if (rc != FERRY_OK) {
    CHECK_CONTAINS(error.message, ferry_hostile_where(i));
    CHECK_CONTAINS(error.message, ferry_hostile_needle(i));
  }
  /* A content lie that DEFAULT accepted: the deep copy copies it or refuses
   * it by name, never reading past what the buffers hold (ASan). (A READER
   * case's copy would only ask for more memory than exists.) */
  if (rc == FERRY_OK && ferry_hostile_kind(i) == FERRY_HOSTILE_FULL) {
    struct ArrowDeviceArray out;
    memset(&out, 0, sizeof out);
    struct FerryError copy_error;
    if (ferry_device_array_copy(&s, &d, ARROW_DEVICE_CPU, -1, &out, &copy_error) == FERRY_OK) {
      ferry_device_array_release(&out);
    }
  }
  ferry_device_array_release(&d);
  ferry_schema_release(&s);
  return rc;
}

/* A READER case (a length or an offset declaring more than 2^48 bytes):
 * FULL validation and the deep copy both refuse it with the size named. */
static void check_declared_size_refused(int32_t i) {
  struct ArrowDeviceArray d;
  struct ArrowSchema s;
  CHECK_EQ_INT(0, ferry_hostile_make(ferry_hostile_name(i), &d, &s));
  CHECK_EQ_INT(EINVAL, validate(&s, &d, FERRY_VALIDATE_FULL));
  CHECK_CONTAINS(error.message, "buffer_size");
  CHECK_CONTAINS(error.message, "more than any buffer ferry reads (2^48)");
  struct ArrowDeviceArray out;
  CHECK_EQ_INT(EINVAL, copy_to_cpu(&s, &d, &out));
  CHECK_CONTAINS(error.message, "more than any buffer ferry copies (2^48)");
  CHECK(out.array.release == NULL);
  ferry_device_array_release(&d);
  ferry_schema_release(&s);
}

FERRY_TEST(every_hostile_catalogue_case_is_refused_with_its_finding) {
  struct FerryDevice* sim = sim_device();
  int32_t strict_before = ferry_sim_is_strict();
  ferry_sim_set_strict(1);
  int64_t sim_live_before = ferry_device_live_allocations(sim);
  CHECK(ferry_hostile_count() > 30);
  for (int32_t i = 0; i < ferry_hostile_count(); i++) {
    const char* name = ferry_hostile_name(i);
    CHECK_EQ_INT(i, ferry_hostile_find(name));
    int32_t code = ferry_hostile_code(i);
    switch (ferry_hostile_kind(i)) {
      case FERRY_HOSTILE_REFUSED:
        CHECK_EQ_INT(code, validate_case(i, FERRY_VALIDATE_DEFAULT));
        CHECK_EQ_INT(code, validate_case(i, FERRY_VALIDATE_FULL));
        break;
      case FERRY_HOSTILE_FULL:
        CHECK_EQ_INT(FERRY_OK, validate_case(i, FERRY_VALIDATE_DEFAULT));
        CHECK_EQ_INT(code, validate_case(i, FERRY_VALIDATE_FULL));
        break;
      case FERRY_HOSTILE_READER:
        /* DEFAULT reads no buffer, so it cannot tell; FULL and the deep
         * copy refuse the size the lengths declare (over 2^48 bytes) by
         * name instead of reading or allocating it. */
        CHECK_EQ_INT(FERRY_OK, validate_case(i, FERRY_VALIDATE_DEFAULT));
        check_declared_size_refused(i);
        break;
      default:
        CHECK(0);
    }
  }
  CHECK(ferry_hostile_name(ferry_hostile_count()) == NULL);
  CHECK_EQ_INT(0, ferry_hostile_live());
  CHECK_EQ_INT(0, ferry_hostile_released_again());
  CHECK_EQ_INT(sim_live_before, ferry_device_live_allocations(sim));
  ferry_hostile_reset();
  ferry_sim_set_strict(strict_before);
}

/* Every stream case through the core's consumer wrappers: the lie is met at
 * get_schema or at its get_next with the catalogue's code and message, and
 * everything is released once. */
FERRY_TEST(every_hostile_stream_case_fails_where_the_catalogue_says) {
  for (int32_t i = 0; i < ferry_hostile_stream_count(); i++) {
    const char* name = ferry_hostile_stream_name(i);
    struct ArrowDeviceArrayStream stream;
    CHECK_EQ_INT(0, ferry_hostile_stream_make(name, &stream));
    struct ArrowSchema schema;
    memset(&schema, 0, sizeof schema);
    int32_t at = ferry_hostile_stream_at(i);
    int32_t level = ferry_hostile_stream_level(i);
    int rc = ferry_array_stream_get_schema(&stream, &schema, &error);
    if (rc == FERRY_OK) rc = ferry_validate_schema(&schema, NULL, NULL, &error);
    int32_t met = 0;
    for (int32_t call = 1; rc == FERRY_OK && call <= at; call++) {
      struct ArrowDeviceArray batch;
      memset(&batch, 0, sizeof batch);
      rc = ferry_array_stream_get_next(&stream, &batch, &error);
      if (rc == FERRY_OK) {
        CHECK(batch.array.release != NULL);
        rc = validate(&schema, &batch, level);
        ferry_device_array_release(&batch);
      }
      met = call;
    }
    CHECK_EQ_INT(at, met);
    CHECK_EQ_INT(ferry_hostile_stream_code(i), rc);
    CHECK_CONTAINS(error.message, ferry_hostile_stream_needle(i));
    if (schema.release != NULL) ferry_schema_release(&schema);
    stream.release(&stream);
    CHECK_EQ_INT(0, ferry_hostile_live());
  }
  CHECK_EQ_INT(0, ferry_hostile_live());
  CHECK_EQ_INT(0, ferry_hostile_released_again());
  ferry_hostile_reset();
}

FERRY_TEST_MAIN()

/* ---- issue 20: counts the producer declares but its tables cannot back ------ */

/* A 2-row struct array declaring `n_children` children over a table holding
 * only one int32 child (heap-allocated to its exact size, so that ASan sees
 * any read of the extra slots: free(d.array.children) after). */
struct OneChildTable {
  const void* child_buffers[2];
  const void* struct_buffers[1];
  struct ArrowArray child;
};

static struct ArrowDeviceArray over_one_child_table(struct OneChildTable* t,
                                                    int64_t n_children) {
  t->child_buffers[0] = NULL;
  t->child_buffers[1] = kInt32s;
  t->struct_buffers[0] = NULL;
  init_array(&t->child, 2, 2, t->child_buffers, 0, NULL);
  struct ArrowArray** table = (struct ArrowArray**)malloc(sizeof(struct ArrowArray*));
  CHECK(table != NULL);
  table[0] = &t->child;
  struct ArrowArray a;
  init_array(&a, 2, 1, t->struct_buffers, n_children, table);
  return on_device(&a, ARROW_DEVICE_CPU, -1);
}

/* Such an array whose schema has one child. Validation (one-shot and
 * prepared, both levels) reports the mismatch and never reads past the
 * schema's count; the copy refuses it. */
static void check_more_array_children_than_schema_children(int64_t n_children) {
  struct ArrowSchema child_schema;
  init_schema(&child_schema, "i", 0, NULL);
  struct ArrowSchema* schema_kids[1] = {&child_schema};
  struct ArrowSchema s;
  init_schema(&s, "+s", 1, schema_kids);
  struct OneChildTable t;
  struct ArrowDeviceArray d = over_one_child_table(&t, n_children);
  char expected[128];
  snprintf(expected, sizeof expected, "array has %lld children but its schema has 1",
           (long long)n_children);
  struct FerryPreparedSchema* prepared = NULL;
  CHECK_EQ_INT(FERRY_OK, ferry_prepared_schema_create(&s, NULL, NULL, &prepared, NULL));
  int32_t levels[2] = {FERRY_VALIDATE_DEFAULT, FERRY_VALIDATE_FULL};
  for (int i = 0; i < 2; i++) {
    CHECK_EQ_INT(EINVAL, validate(&s, &d, levels[i]));
    CHECK_EQ_INT(1, findings.n);
    CHECK_FINDING("n_children", "root", expected);
    memset(&findings, 0, sizeof findings);
    CHECK_EQ_INT(EINVAL,
                 ferry_validate_prepared(prepared, &d, levels[i], collect, &findings, NULL));
    CHECK_EQ_INT(1, findings.n);
    CHECK_FINDING("n_children", "root", expected);
  }
  ferry_prepared_schema_free(prepared);
  struct ArrowDeviceArray out;
  CHECK_EQ_INT(EINVAL, copy_to_cpu(&s, &d, &out));
  CHECK(out.array.release == NULL);
  free(d.array.children);
}

FERRY_TEST(two_array_children_over_a_table_of_one_are_never_read_past_the_schema) {
  check_more_array_children_than_schema_children(2);
}

FERRY_TEST(two_to_the_40_array_children_are_reported_not_walked) {
  check_more_array_children_than_schema_children(INT64_C(1) << 40);
}

/* Length-0 variable-size arrays whose offsets buffer is NULL or has 0 bytes
 * (Arrow C++ writes such arrays in old IPC files): both levels accept them,
 * buffer sizes are 0, the copy reads nothing and is itself valid. The
 * buffers are heap blocks of their exact size, so ASan sees any read of
 * offsets[0]. */
struct EmptyVariableCase {
  const char* format;
  int64_t n_buffers; /* validity, offsets[, sizes | data] */
  int has_child;
};

static void check_empty_variable_size(const struct EmptyVariableCase* c, int64_t offset,
                                      const void* offsets, const void* data) {
  struct ArrowSchema key, value, entries, item;
  init_schema(&key, "u", 0, NULL);
  key.flags = 0;
  init_schema(&value, "i", 0, NULL);
  struct ArrowSchema* entry_kids[2] = {&key, &value};
  init_schema(&entries, "+s", 2, entry_kids);
  entries.flags = 0;
  init_schema(&item, "i", 0, NULL);
  struct ArrowSchema* schema_kids[1] = {strcmp(c->format, "+m") == 0 ? &entries : &item};
  struct ArrowSchema s;
  init_schema(&s, c->format, c->has_child ? 1 : 0, c->has_child ? schema_kids : NULL);

  /* The child of a list or map: empty, with 0-byte buffers of its own. */
  const void* leaf_buffers[3] = {NULL, NULL, NULL};
  struct ArrowArray key_array, value_array, entries_array, item_array;
  init_array(&key_array, 0, 3, leaf_buffers, 0, NULL);
  init_array(&value_array, 0, 2, leaf_buffers, 0, NULL);
  struct ArrowArray* entry_array_kids[2] = {&key_array, &value_array};
  init_array(&entries_array, 0, 1, leaf_buffers, 2, entry_array_kids);
  init_array(&item_array, 0, 2, leaf_buffers, 0, NULL);
  struct ArrowArray* array_kids[1] = {strcmp(c->format, "+m") == 0 ? &entries_array
                                                                    : &item_array};
  const void* buffers[3] = {NULL, offsets, data};
  struct ArrowArray a;
  init_array(&a, 0, c->n_buffers, buffers, c->has_child ? 1 : 0,
             c->has_child ? array_kids : NULL);
  a.offset = offset;
  struct ArrowDeviceArray d = on_device(&a, ARROW_DEVICE_CPU, -1);

  CHECK_EQ_INT(FERRY_OK, validate(&s, &d, FERRY_VALIDATE_DEFAULT));
  CHECK_EQ_INT(FERRY_OK, validate(&s, &d, FERRY_VALIDATE_FULL));
  for (int64_t i = 1; i < c->n_buffers; i++) {
    int64_t size = -1;
    CHECK_EQ_INT(FERRY_OK,
                 ferry_array_buffer_size(&s, &a, ARROW_DEVICE_CPU, -1, i, &size, &error));
    CHECK_EQ_INT(0, size);
  }
  struct ArrowDeviceArray out;
  CHECK_EQ_INT(FERRY_OK, copy_to_cpu(&s, &d, &out));
  memset(&findings, 0, sizeof findings);
  int copy_valid =
      ferry_validate_device_array(&s, &out, FERRY_VALIDATE_FULL, collect, &findings, NULL);
  ferry_device_array_release(&out);
  CHECK_EQ_INT(FERRY_OK, copy_valid);
}

static const struct EmptyVariableCase kEmptyVariableCases[] = {
    {"u", 3, 0},   {"z", 3, 0},   {"U", 3, 0},   {"Z", 3, 0},   {"+l", 2, 1},
    {"+L", 2, 1},  {"+m", 2, 1},  {"+vl", 3, 1}, {"+vL", 3, 1},
};

FERRY_TEST(empty_variable_size_arrays_with_0_byte_offsets_are_valid_and_never_read) {
  for (size_t k = 0; k < sizeof kEmptyVariableCases / sizeof kEmptyVariableCases[0]; k++) {
    const struct EmptyVariableCase* c = &kEmptyVariableCases[k];
    int64_t offsets_for[2] = {0, 3};
    for (int o = 0; o < 2; o++) {
      /* A 0-byte block (a unique pointer that ASan lets nobody read). */
      void* empty_offsets = malloc(0);
      void* empty_third = malloc(0);
      if (empty_offsets == NULL) empty_offsets = malloc(1);
      if (empty_third == NULL) empty_third = malloc(1);
      check_empty_variable_size(c, offsets_for[o], empty_offsets, empty_third);
      check_empty_variable_size(c, offsets_for[o], NULL, NULL);
      free(empty_offsets);
      free(empty_third);
    }
  }
}

/* The reproducer of the 256 MB read: an empty utf8 array whose offsets
 * "buffer" holds a crafted 2^28 where offsets[0] would be. DEFAULT accepted
 * it and the copy then read offsets[0] bytes of data; now nothing reads it. */
FERRY_TEST(copy_of_an_empty_utf8_never_trusts_a_crafted_offset) {
  int32_t* offsets = (int32_t*)malloc(sizeof(int32_t));
  CHECK(offsets != NULL);
  offsets[0] = INT32_C(1) << 28;
  char* data = (char*)malloc(1);
  CHECK(data != NULL);
  struct ArrowSchema s;
  const void* buffers[3] = {NULL, offsets, data};
  struct ArrowDeviceArray d = leaf(&s, "u", 0, 3, buffers, ARROW_DEVICE_CPU);
  CHECK_EQ_INT(FERRY_OK, validate(&s, &d, FERRY_VALIDATE_DEFAULT));
  CHECK_EQ_INT(FERRY_OK, validate(&s, &d, FERRY_VALIDATE_FULL));
  struct ArrowDeviceArray out;
  CHECK_EQ_INT(FERRY_OK, copy_to_cpu(&s, &d, &out));
  CHECK_EQ_INT(0, out.array.length);
  ferry_device_array_release(&out);
  free(offsets);
  free(data);
}

/* Issue 20, item 12: the sim shares ARROW_DEVICE_EXT_DEV with every other
 * extension device. An ext_dev array whose memory the sim did not allocate
 * is accepted as unknown device memory is, on any device id (the sim's ids
 * included), and never dereferenced: its buffers here are unmapped
 * addresses, so any read would crash. Memory the sim did allocate keeps the
 * strict checks. */
FERRY_TEST(ext_dev_memory_the_sim_did_not_allocate_is_unknown_not_refused) {
  struct ArrowSchema s;
  init_schema(&s, "u", 0, NULL);
  const void* foreign_offsets = (const void*)(uintptr_t)0x1000;
  const void* foreign_data = (const void*)(uintptr_t)0x2000;
  const void* buffers[3] = {NULL, foreign_offsets, foreign_data};
  struct ArrowArray a;
  init_array(&a, 3, 3, buffers, 0, NULL);
  int64_t ids[3] = {0, 3, 7};
  for (int k = 0; k < 3; k++) {
    struct ArrowDeviceArray d = on_device(&a, ARROW_DEVICE_EXT_DEV, ids[k]);
    int rc = validate(&s, &d, FERRY_VALIDATE_DEFAULT);
    if (rc != FERRY_OK) print_findings(&findings);
    CHECK_EQ_INT(FERRY_OK, rc);
    rc = validate(&s, &d, FERRY_VALIDATE_FULL);
    if (rc != FERRY_OK) print_findings(&findings);
    CHECK_EQ_INT(FERRY_OK, rc);
    /* What needs the contents refuses with a message instead of reading. */
    int64_t size = 0;
    CHECK(ferry_array_buffer_size(&s, &a, ARROW_DEVICE_EXT_DEV, ids[k], 2, &size, &error) !=
          FERRY_OK);
    struct ArrowDeviceArray out;
    CHECK(copy_to_cpu(&s, &d, &out) != FERRY_OK);
    CHECK(out.array.release == NULL);
  }

  /* The sim's own memory, claimed by another sim device or read past its
   * end, is still refused. */
  struct FerryDevice* sim1 = NULL;
  CHECK_EQ_INT(FERRY_OK, ferry_device_resolve(ARROW_DEVICE_EXT_DEV, 1, &sim1, NULL));
  void* values = NULL;
  CHECK_EQ_INT(FERRY_OK, ferry_device_allocate(sim1, 8, &values, NULL));
  struct ArrowSchema ints;
  const void* int_buffers[2] = {NULL, values};
  struct ArrowDeviceArray d = leaf(&ints, "i", 2, 2, int_buffers, ARROW_DEVICE_EXT_DEV);
  CHECK_EQ_INT(EINVAL, validate(&ints, &d, FERRY_VALIDATE_DEFAULT));
  CHECK_FINDING("device", "root", "is not sim device 0 memory (it is sim device 1 memory)");
  d.device_id = 1;
  CHECK_EQ_INT(FERRY_OK, validate(&ints, &d, FERRY_VALIDATE_FULL));
  d.array.length = 3;
  CHECK_EQ_INT(EINVAL, validate(&ints, &d, FERRY_VALIDATE_DEFAULT));
  CHECK_FINDING("device", "root", "runs past the end of a 8-byte allocation");
  CHECK_EQ_INT(FERRY_OK, ferry_device_deallocate(sim1, values, NULL));
}

/* The copy sizes a utf8 data buffer by its offsets, which a DEFAULT import
 * never read: offsets whose ends are out of order are refused by name
 * instead of sizing a copy (the rest is FULL's: no consumer can tell a CPU
 * data buffer's size). */
FERRY_TEST(copy_refuses_unvalidated_offsets_whose_ends_are_out_of_order) {
  struct ArrowSchema s;
  static const int32_t offsets[3] = {5, 9, 3};
  const void* buffers[3] = {NULL, offsets, "abcdefghij"};
  struct ArrowDeviceArray d = leaf(&s, "u", 2, 3, buffers, ARROW_DEVICE_CPU);
  CHECK_EQ_INT(FERRY_OK, validate(&s, &d, FERRY_VALIDATE_DEFAULT));
  CHECK_EQ_INT(EINVAL, validate(&s, &d, FERRY_VALIDATE_FULL));
  struct ArrowDeviceArray out;
  CHECK_EQ_INT(EINVAL, copy_to_cpu(&s, &d, &out));
  CHECK_CONTAINS(error.message,
                 "the offsets do not address a range: offsets[0] = 5, offsets[2] = 3");
  CHECK(out.array.release == NULL);
}

/* Found by fuzz_hostile: an array declaring 3 children over a table of one,
 * whose schema has 2. Neither count bounds the table, so none of it is
 * read (the mismatch is the finding). */
FERRY_TEST(children_are_not_walked_when_the_array_and_schema_counts_differ) {
  struct ArrowSchema a_schema, b_schema;
  init_schema(&a_schema, "i", 0, NULL);
  init_schema(&b_schema, "i", 0, NULL);
  struct ArrowSchema* schema_kids[2] = {&a_schema, &b_schema};
  struct ArrowSchema s;
  init_schema(&s, "+s", 2, schema_kids);
  struct OneChildTable t;
  struct ArrowDeviceArray d = over_one_child_table(&t, 3);
  CHECK_EQ_INT(EINVAL, validate(&s, &d, FERRY_VALIDATE_FULL));
  CHECK_EQ_INT(1, findings.n);
  CHECK_FINDING("n_children", "root", "array has 3 children but its schema has 2");
  free(d.array.children);
}
