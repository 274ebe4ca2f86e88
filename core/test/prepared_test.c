/* Tests of prepared schemas (ferry_prepared_schema_create,
 * ferry_validate_prepared): a clean schema prepares and then validates
 * arrays exactly as the one-shot validation does, keeps nothing of the
 * caller's schema, refuses a schema with findings, and serves several
 * threads at once. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ferry/ferry.h"
#include "ferry_test.h"
#include "findings.h"
#include "hand_made.h"


/* struct<a: int32, b: utf8, c: timestamp[us, UTC]> with format strings on
 * the heap, so a test can wipe them after preparing. */
struct Fixture {
  char* formats[4];
  struct ArrowSchema root, a, b, c;
  struct ArrowSchema* kids[3];
  int32_t values[3];
  int32_t offsets[4];
  char text[8];
  int64_t stamps[3];
  const void* a_buffers[2];
  const void* b_buffers[3];
  const void* c_buffers[2];
  const void* root_buffers[1];
  struct ArrowArray arrays[3];
  struct ArrowArray* array_kids[3];
  struct ArrowDeviceArray device;
};

static struct Fixture* make_fixture(void) {
  struct Fixture* x = (struct Fixture*)calloc(1, sizeof *x);
  const char* formats[4] = {"+s", "i", "u", "tsu:UTC"};
  for (int i = 0; i < 4; i++) {
    x->formats[i] = (char*)malloc(strlen(formats[i]) + 1);
    strcpy(x->formats[i], formats[i]);
  }
  init_schema(&x->a, x->formats[1], 0, NULL);
  init_schema(&x->b, x->formats[2], 0, NULL);
  init_schema(&x->c, x->formats[3], 0, NULL);
  x->kids[0] = &x->a;
  x->kids[1] = &x->b;
  x->kids[2] = &x->c;
  init_schema(&x->root, x->formats[0], 3, x->kids);
  x->values[0] = 1, x->values[1] = 2, x->values[2] = 3;
  x->offsets[0] = 0, x->offsets[1] = 2, x->offsets[2] = 3, x->offsets[3] = 6;
  memcpy(x->text, "abcdef", 6);
  x->a_buffers[1] = x->values;
  x->b_buffers[1] = x->offsets;
  x->b_buffers[2] = x->text;
  x->c_buffers[1] = x->stamps;
  init_array(&x->arrays[0], 3, 2, x->a_buffers, 0, NULL);
  init_array(&x->arrays[1], 3, 3, x->b_buffers, 0, NULL);
  init_array(&x->arrays[2], 3, 2, x->c_buffers, 0, NULL);
  for (int i = 0; i < 3; i++) x->array_kids[i] = &x->arrays[i];
  init_array(&x->device.array, 3, 1, x->root_buffers, 3, x->array_kids);
  x->device.device_type = ARROW_DEVICE_CPU;
  x->device.device_id = -1;
  return x;
}

static void free_fixture(struct Fixture* x) {
  for (int i = 0; i < 4; i++) free(x->formats[i]);
  free(x);
}

static struct Findings one_shot, prepared_findings;

/* Validates through both paths and checks the findings are the same, in the
 * same order, with the same text. Returns the code. */
static int validate_both(const struct FerryPreparedSchema* prepared,
                         const struct ArrowSchema* schema,
                         const struct ArrowDeviceArray* array, int32_t level) {
  struct FerryError e1, e2;
  memset(&one_shot, 0, sizeof one_shot);
  memset(&prepared_findings, 0, sizeof prepared_findings);
  int rc1 = ferry_validate_device_array(schema, array, level, collect, &one_shot, &e1);
  int rc2 = ferry_validate_prepared(prepared, array, level, collect, &prepared_findings, &e2);
  if (rc1 != rc2 || one_shot.n != prepared_findings.n) return -1;
  for (int i = 0; i < one_shot.n && i < MAX_FINDINGS; i++) {
    if (strcmp(one_shot.rule[i], prepared_findings.rule[i]) != 0 ||
        strcmp(one_shot.where[i], prepared_findings.where[i]) != 0 ||
        strcmp(one_shot.what[i], prepared_findings.what[i]) != 0) {
      return -2;
    }
  }
  if (rc1 != FERRY_OK && strcmp(e1.message, e2.message) != 0) return -3;
  return rc2;
}

FERRY_TEST(a_prepared_schema_finds_what_the_one_shot_validation_finds) {
  struct Fixture* x = make_fixture();
  struct FerryPreparedSchema* prepared = NULL;
  struct FerryError error;
  CHECK_EQ_INT(FERRY_OK, ferry_prepared_schema_create(&x->root, NULL, NULL, &prepared,
                                                      &error));
  CHECK(prepared != NULL);
  CHECK_EQ_INT(FERRY_OK, validate_both(prepared, &x->root, &x->device, FERRY_VALIDATE_FULL));

  /* Broken arrays, each through both paths. */
  x->offsets[2] = 1; /* decreasing offsets in child b */
  CHECK_EQ_INT(EINVAL, validate_both(prepared, &x->root, &x->device, FERRY_VALIDATE_FULL));
  CHECK(has_finding(&prepared_findings, "offsets", "root.children[1]", "offsets[2] = 1"));
  CHECK_EQ_INT(FERRY_OK,
               validate_both(prepared, &x->root, &x->device, FERRY_VALIDATE_DEFAULT));
  x->offsets[2] = 3;
  x->arrays[0].n_buffers = 3;
  x->arrays[2].length = 1; /* shorter than the struct */
  x->device.reserved[2] = 7;
  CHECK_EQ_INT(EINVAL,
               validate_both(prepared, &x->root, &x->device, FERRY_VALIDATE_DEFAULT));
  CHECK_EQ_INT(3, prepared_findings.n);
  CHECK(has_finding(&prepared_findings, "n_buffers", "root.children[0]", "needs 2 buffers"));
  CHECK(has_finding(&prepared_findings, "length", "root", "children[2] has length 1"));
  x->arrays[0].n_buffers = 2;
  x->arrays[2].length = 3;
  x->device.reserved[2] = 0;
  /* A shared child: one finding, on both paths. */
  x->array_kids[2] = &x->arrays[0];
  CHECK_EQ_INT(EINVAL, validate_both(prepared, &x->root, &x->device, FERRY_VALIDATE_FULL));
  CHECK(has_finding(&prepared_findings, "shared", "root.children[2]",
                    "also at root.children[0]"));
  x->array_kids[2] = &x->arrays[2];
  ferry_prepared_schema_free(prepared);
  free_fixture(x);
}

FERRY_TEST(a_prepared_schema_keeps_nothing_of_the_callers_schema) {
  struct Fixture* x = make_fixture();
  struct FerryPreparedSchema* prepared = NULL;
  CHECK_EQ_INT(FERRY_OK, ferry_prepared_schema_create(&x->root, NULL, NULL, &prepared, NULL));
  /* The caller's schema goes away: its strings are overwritten and its
   * structs released. */
  for (int i = 0; i < 4; i++) memset(x->formats[i], 'q', strlen(x->formats[i]));
  x->root.release = NULL;
  x->a.release = NULL;
  struct FerryError error;
  CHECK_EQ_INT(FERRY_OK, ferry_validate_prepared(prepared, &x->device, FERRY_VALIDATE_FULL,
                                                 NULL, NULL, &error));
  x->arrays[1].n_buffers = 2;
  memset(&prepared_findings, 0, sizeof prepared_findings);
  CHECK_EQ_INT(EINVAL, ferry_validate_prepared(prepared, &x->device, FERRY_VALIDATE_DEFAULT,
                                               collect, &prepared_findings, &error));
  /* The message quotes the format the schema had when it was prepared. */
  CHECK(has_finding(&prepared_findings, "n_buffers", "root.children[1]",
                    "utf8 array needs 3 buffers"));
  ferry_prepared_schema_free(prepared);
  free_fixture(x);
}

FERRY_TEST(a_schema_with_findings_does_not_prepare) {
  struct ArrowSchema bad, loop;
  init_schema(&bad, "+s", 1, NULL); /* children NULL */
  struct FerryPreparedSchema* prepared = (struct FerryPreparedSchema*)&bad;
  struct FerryError error;
  memset(&one_shot, 0, sizeof one_shot);
  CHECK_EQ_INT(EINVAL, ferry_prepared_schema_create(&bad, collect, &one_shot, &prepared,
                                                    &error));
  CHECK(prepared == NULL);
  CHECK_EQ_INT(1, one_shot.n);
  CHECK_CONTAINS(error.message, "children: root: children is NULL but n_children is 1");
  struct ArrowSchema* self[1] = {&loop};
  init_schema(&loop, "+s", 1, self);
  CHECK_EQ_INT(EINVAL, ferry_prepared_schema_create(&loop, NULL, NULL, &prepared, &error));
  CHECK_CONTAINS(error.message, "cycle: root.children[0]");
  CHECK_EQ_INT(EINVAL, ferry_prepared_schema_create(NULL, NULL, NULL, &prepared, &error));
  CHECK_CONTAINS(error.message, "schema pointer is NULL");
  CHECK_EQ_INT(EINVAL, ferry_prepared_schema_create(&bad, NULL, NULL, NULL, &error));
  CHECK_CONTAINS(error.message, "out must not be NULL");
  CHECK_EQ_INT(EINVAL, ferry_validate_prepared(NULL, NULL, FERRY_VALIDATE_DEFAULT, NULL,
                                               NULL, &error));
  CHECK_CONTAINS(error.message, "prepared must not be NULL");
  ferry_prepared_schema_free(NULL); /* accepted, does nothing */
}

FERRY_TEST(a_wide_and_deep_schema_prepares_beyond_the_stack_storage) {
  /* 300 int32 columns and a 40-deep list chain: more nodes than the walks
   * keep on the stack. */
  enum { kColumns = 300, kDepth = 40 };
  static struct ArrowSchema columns[kColumns], lists[kDepth], leaf, root;
  static struct ArrowSchema* kids[kColumns + 1];
  static struct ArrowSchema* list_kids[kDepth];
  for (int i = 0; i < kColumns; i++) {
    init_schema(&columns[i], "i", 0, NULL);
    kids[i] = &columns[i];
  }
  init_schema(&leaf, "l", 0, NULL);
  for (int d = kDepth - 1; d >= 0; d--) {
    list_kids[d] = d + 1 < kDepth ? &lists[d + 1] : &leaf;
    init_schema(&lists[d], "+l", 1, &list_kids[d]);
  }
  kids[kColumns] = &lists[0];
  init_schema(&root, "+s", kColumns + 1, kids);
  struct FerryPreparedSchema* prepared = NULL;
  CHECK_EQ_INT(FERRY_OK, ferry_prepared_schema_create(&root, NULL, NULL, &prepared, NULL));

  static int32_t values[4];
  static const void* int_buffers[2] = {NULL, values};
  static struct ArrowArray arrays[kColumns], list_arrays[kDepth], leaf_array;
  static struct ArrowArray* array_kids[kColumns + 1];
  static struct ArrowArray* list_array_kids[kDepth];
  static int32_t list_offsets[2] = {0, 0};
  static const void* list_buffers[2] = {NULL, list_offsets};
  static const void* leaf_buffers[2] = {NULL, NULL};
  for (int i = 0; i < kColumns; i++) {
    init_array(&arrays[i], 4, 2, int_buffers, 0, NULL);
    array_kids[i] = &arrays[i];
  }
  init_array(&leaf_array, 0, 2, leaf_buffers, 0, NULL);
  for (int d = kDepth - 1; d >= 0; d--) {
    list_array_kids[d] = d + 1 < kDepth ? &list_arrays[d + 1] : &leaf_array;
    init_array(&list_arrays[d], d == 0 ? 4 : 0, 2, list_buffers, 1, &list_array_kids[d]);
  }
  array_kids[kColumns] = &list_arrays[0];
  struct ArrowDeviceArray device;
  memset(&device, 0, sizeof device);
  static const void* root_buffers[1] = {NULL};
  init_array(&device.array, 4, 1, root_buffers, kColumns + 1, array_kids);
  device.device_type = ARROW_DEVICE_CPU;
  device.device_id = -1;
  /* The first list has 4 empty lists: offsets [0, 0, 0, 0, 0]. */
  static int32_t first_offsets[5];
  static const void* first_buffers[2] = {NULL, first_offsets};
  list_arrays[0].buffers = first_buffers;
  int rc = validate_both(prepared, &root, &device, FERRY_VALIDATE_FULL);
  if (rc != FERRY_OK) print_findings(&one_shot);
  CHECK_EQ_INT(FERRY_OK, rc);
  arrays[299].n_children = 1; /* a finding deep in the tree, same on both paths */
  CHECK_EQ_INT(EINVAL, validate_both(prepared, &root, &device, FERRY_VALIDATE_DEFAULT));
  CHECK(has_finding(&prepared_findings, "n_children", "root.children[299]",
                    "array has 1 children but its schema has 0"));
  arrays[299].n_children = 0;
  ferry_prepared_schema_free(prepared);
}

struct ThreadJob {
  const struct FerryPreparedSchema* prepared;
  struct Fixture* fixture;
  int failures;
};

static void* validate_many(void* arg) {
  struct ThreadJob* job = (struct ThreadJob*)arg;
  for (int i = 0; i < 2000; i++) {
    struct FerryError error;
    if (ferry_validate_prepared(job->prepared, &job->fixture->device, FERRY_VALIDATE_FULL,
                                NULL, NULL, &error) != FERRY_OK) {
      job->failures++;
    }
  }
  return NULL;
}

FERRY_TEST(one_prepared_schema_serves_several_threads) {
  struct Fixture* x = make_fixture();
  struct FerryPreparedSchema* prepared = NULL;
  CHECK_EQ_INT(FERRY_OK, ferry_prepared_schema_create(&x->root, NULL, NULL, &prepared, NULL));
  enum { kThreads = 4 };
  pthread_t threads[kThreads];
  struct ThreadJob jobs[kThreads];
  struct Fixture* fixtures[kThreads];
  for (int t = 0; t < kThreads; t++) {
    fixtures[t] = make_fixture();
    jobs[t] = (struct ThreadJob){prepared, fixtures[t], 0};
    CHECK_EQ_INT(0, pthread_create(&threads[t], NULL, validate_many, &jobs[t]));
  }
  for (int t = 0; t < kThreads; t++) pthread_join(threads[t], NULL);
  for (int t = 0; t < kThreads; t++) {
    CHECK_EQ_INT(0, jobs[t].failures);
    free_fixture(fixtures[t]);
  }
  ferry_prepared_schema_free(prepared);
  free_fixture(x);
}

FERRY_TEST_MAIN()
