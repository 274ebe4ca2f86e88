/* Unit tests of the validator (core/src/validate.c): clean arrays of every
 * layout family pass at FULL; each rule produces its finding with the exact
 * `where` path; every finding is reported, the first one lands in `error`.
 *
 * Arrays here are hand_made.h's plain structs with a release callback that
 * only marks them released, so each test controls every field, hostile ones
 * included. */
#include <errno.h>

#include "ferry/ferry.h"
#include "ferry_test.h"
#include "findings.h"
#include "hand_made.h"

/* ---- building blocks ------------------------------------------------------ */

static struct ArrowSchema schema_of(const char* format, int64_t n_children,
                                    struct ArrowSchema** children) {
  struct ArrowSchema s;
  init_schema(&s, format, n_children, children);
  return s;
}

static struct ArrowArray array_of(int64_t length, int64_t null_count, int64_t n_buffers,
                                  const void** buffers, int64_t n_children,
                                  struct ArrowArray** children) {
  struct ArrowArray a;
  init_array(&a, length, n_buffers, buffers, n_children, children);
  a.null_count = null_count;
  return a;
}

static struct ArrowDeviceArray on_cpu(struct ArrowArray array) {
  return on_device(&array, ARROW_DEVICE_CPU, -1);
}

static struct Findings findings;
static struct FerryError error;

static int run(const struct ArrowSchema* schema, const struct ArrowDeviceArray* array,
               int32_t level) {
  int rc = validate_collecting(schema, array, level, &findings, &error);
  if (rc == FERRY_OK && findings.n != 0) return -1;
  if (rc != FERRY_OK && findings.n == 0) return -2;
  return rc;
}

static int run_schema(const struct ArrowSchema* schema) {
  memset(&findings, 0, sizeof findings);
  ferry_error_init(&error);
  return ferry_validate_schema(schema, collect, &findings, &error);
}

#define CHECK_CLEAN(schema, array)                         \
  do {                                                     \
    int rc_ = run((schema), (array), FERRY_VALIDATE_FULL); \
    if (rc_ != FERRY_OK) print_findings(&findings);        \
    CHECK_EQ_INT(FERRY_OK, rc_);                           \
    CHECK_EQ_INT(0, findings.n);                           \
    CHECK_STR("", error.message);                          \
  } while (0)

#define CHECK_FINDING(rule, where, what) CHECK(has_finding(&findings, rule, where, what))

/* Validating (schema, array) at `level` fails with EINVAL and names this
 * finding (among others). */
#define CHECK_REFUSED(schema, array, level, rule, where, what) \
  do {                                                         \
    CHECK_EQ_INT(EINVAL, run((schema), (array), (level)));     \
    CHECK_FINDING(rule, where, what);                          \
  } while (0)

/* Commonly used buffers. */
static const int32_t int32_values[8] = {1, 2, 3, 4, 5, 6, 7, 8};
static const uint8_t validity_0b1011[1] = {0x0B}; /* elements 0, 1, 3 valid of 4 */

/* ---- clean arrays ---------------------------------------------------------- */

FERRY_TEST(clean_int32_with_nulls_and_offset) {
  struct ArrowSchema s = schema_of("i", 0, NULL);
  const void* buffers[2] = {validity_0b1011, int32_values};
  struct ArrowDeviceArray d = on_cpu(array_of(4, 1, 2, buffers, 0, NULL));
  CHECK_CLEAN(&s, &d);
  /* offset 1: elements 1..3 -> bits 1,0,1 -> one null */
  d.array.offset = 1;
  d.array.length = 3;
  CHECK_CLEAN(&s, &d);
  d.array.null_count = -1; /* unknown is allowed */
  CHECK_CLEAN(&s, &d);
}

FERRY_TEST(clean_utf8_and_binary) {
  struct ArrowSchema s = schema_of("u", 0, NULL);
  const int32_t offsets[5] = {0, 3, 3, 8, 10};
  const char data[] = "abcxxh\xc3\xa9llo";
  const void* buffers[3] = {validity_0b1011, offsets, data};
  struct ArrowDeviceArray d = on_cpu(array_of(4, 1, 3, buffers, 0, NULL));
  CHECK_CLEAN(&s, &d);
  struct ArrowSchema z = schema_of("Z", 0, NULL);
  const int64_t large_offsets[3] = {0, 2, 4};
  const void* zb[3] = {NULL, large_offsets, "\xff\xfe\x00\x01"};
  struct ArrowDeviceArray dz = on_cpu(array_of(2, 0, 3, zb, 0, NULL));
  CHECK_CLEAN(&z, &dz);
  /* All-empty strings may have a NULL data buffer. */
  const int32_t zero_offsets[3] = {0, 0, 0};
  const void* eb[3] = {NULL, zero_offsets, NULL};
  struct ArrowDeviceArray de = on_cpu(array_of(2, 0, 3, eb, 0, NULL));
  CHECK_CLEAN(&s, &de);
}

FERRY_TEST(clean_empty_arrays_may_have_null_buffers) {
  struct ArrowSchema s = schema_of("l", 0, NULL);
  const void* buffers[2] = {NULL, NULL};
  struct ArrowDeviceArray d = on_cpu(array_of(0, 0, 2, buffers, 0, NULL));
  CHECK_CLEAN(&s, &d);
  struct ArrowSchema n = schema_of("n", 0, NULL);
  struct ArrowDeviceArray dn = on_cpu(array_of(5, 5, 0, NULL, 0, NULL));
  CHECK_CLEAN(&n, &dn);
}

FERRY_TEST(clean_list_struct_map) {
  struct ArrowSchema item = schema_of("i", 0, NULL);
  struct ArrowSchema* list_children[1] = {&item};
  struct ArrowSchema list = schema_of("+l", 1, list_children);
  const void* child_buffers[2] = {NULL, int32_values};
  struct ArrowArray child = array_of(8, 0, 2, child_buffers, 0, NULL);
  struct ArrowArray* children[1] = {&child};
  const int32_t offsets[4] = {0, 3, 3, 8};
  const void* buffers[2] = {NULL, offsets};
  struct ArrowDeviceArray d = on_cpu(array_of(3, 0, 2, buffers, 1, children));
  CHECK_CLEAN(&list, &d);

  struct ArrowSchema a = schema_of("i", 0, NULL);
  struct ArrowSchema b = schema_of("u", 0, NULL);
  struct ArrowSchema* struct_children[2] = {&a, &b};
  struct ArrowSchema st = schema_of("+s", 2, struct_children);
  const int32_t string_offsets[4] = {0, 1, 2, 3};
  const void* b_buffers[3] = {NULL, string_offsets, "xyz"};
  struct ArrowArray a_array = array_of(3, 0, 2, child_buffers, 0, NULL);
  struct ArrowArray b_array = array_of(3, 0, 3, b_buffers, 0, NULL);
  struct ArrowArray* st_children[2] = {&a_array, &b_array};
  const void* st_buffers[1] = {NULL};
  struct ArrowDeviceArray ds = on_cpu(array_of(3, 0, 1, st_buffers, 2, st_children));
  CHECK_CLEAN(&st, &ds);

  /* map<utf8, int32>: entries struct non-nullable */
  struct ArrowSchema key = schema_of("i", 0, NULL);
  key.flags = 0;
  struct ArrowSchema value = schema_of("u", 0, NULL);
  struct ArrowSchema* entry_fields[2] = {&key, &value};
  struct ArrowSchema entries = schema_of("+s", 2, entry_fields);
  entries.flags = 0;
  struct ArrowSchema* map_children[1] = {&entries};
  struct ArrowSchema map = schema_of("+m", 1, map_children);
  const int32_t map_offsets[3] = {0, 1, 3};
  const void* map_buffers[2] = {NULL, map_offsets};
  struct ArrowArray* map_array_children[1] = {&ds.array};
  struct ArrowDeviceArray dm =
      on_cpu(array_of(2, 0, 2, map_buffers, 1, map_array_children));
  CHECK_CLEAN(&map, &dm);
}

FERRY_TEST(clean_fixed_size_list_and_list_view) {
  struct ArrowSchema item = schema_of("i", 0, NULL);
  struct ArrowSchema* kids[1] = {&item};
  struct ArrowSchema fsl = schema_of("+w:2", 1, kids);
  const void* child_buffers[2] = {NULL, int32_values};
  struct ArrowArray child = array_of(8, 0, 2, child_buffers, 0, NULL);
  struct ArrowArray* children[1] = {&child};
  const void* buffers[1] = {NULL};
  struct ArrowDeviceArray d = on_cpu(array_of(4, 0, 1, buffers, 1, children));
  CHECK_CLEAN(&fsl, &d);

  struct ArrowSchema lv = schema_of("+vl", 1, kids);
  const int32_t lv_offsets[3] = {4, 0, 7};
  const int32_t lv_sizes[3] = {4, 2, 1};
  const void* lv_buffers[3] = {NULL, lv_offsets, lv_sizes};
  struct ArrowDeviceArray dl = on_cpu(array_of(3, 0, 3, lv_buffers, 1, children));
  CHECK_CLEAN(&lv, &dl);
}

FERRY_TEST(clean_unions_ree_dictionary) {
  struct ArrowSchema i32 = schema_of("i", 0, NULL);
  struct ArrowSchema utf8 = schema_of("u", 0, NULL);
  struct ArrowSchema* union_fields[2] = {&i32, &utf8};
  struct ArrowSchema dense = schema_of("+ud:3,7", 2, union_fields);
  const void* i_buffers[2] = {NULL, int32_values};
  struct ArrowArray i_array = array_of(2, 0, 2, i_buffers, 0, NULL);
  const int32_t string_offsets[2] = {0, 2};
  const void* u_buffers[3] = {NULL, string_offsets, "ok"};
  struct ArrowArray u_array = array_of(1, 0, 3, u_buffers, 0, NULL);
  struct ArrowArray* union_children[2] = {&i_array, &u_array};
  const int8_t type_ids[3] = {3, 7, 3};
  const int32_t union_offsets[3] = {0, 0, 1};
  const void* dense_buffers[2] = {type_ids, union_offsets};
  struct ArrowDeviceArray dd =
      on_cpu(array_of(3, 0, 2, dense_buffers, 2, union_children));
  CHECK_CLEAN(&dense, &dd);

  struct ArrowSchema sparse = schema_of("+us:3,7", 2, union_fields);
  const int32_t three_offsets[4] = {0, 1, 2, 3};
  const void* u3_buffers[3] = {NULL, three_offsets, "abc"};
  struct ArrowArray u3_array = array_of(3, 0, 3, u3_buffers, 0, NULL);
  struct ArrowArray i3_array = array_of(3, 0, 2, i_buffers, 0, NULL);
  struct ArrowArray* sparse_children[2] = {&i3_array, &u3_array};
  const void* sparse_buffers[1] = {type_ids};
  struct ArrowDeviceArray ds =
      on_cpu(array_of(3, 0, 1, sparse_buffers, 2, sparse_children));
  CHECK_CLEAN(&sparse, &ds);

  struct ArrowSchema run_ends_schema = schema_of("s", 0, NULL);
  run_ends_schema.flags = 0;
  struct ArrowSchema* ree_fields[2] = {&run_ends_schema, &i32};
  struct ArrowSchema ree = schema_of("+r", 2, ree_fields);
  const int16_t run_ends[3] = {2, 5, 6};
  const void* run_end_buffers[2] = {NULL, run_ends};
  struct ArrowArray run_end_array = array_of(3, 0, 2, run_end_buffers, 0, NULL);
  struct ArrowArray values_array = array_of(3, 0, 2, i_buffers, 0, NULL);
  struct ArrowArray* ree_children[2] = {&run_end_array, &values_array};
  struct ArrowDeviceArray dr = on_cpu(array_of(6, 0, 0, NULL, 2, ree_children));
  CHECK_CLEAN(&ree, &dr);

  struct ArrowSchema dict_values = schema_of("u", 0, NULL);
  struct ArrowSchema dict = schema_of("c", 0, NULL);
  dict.dictionary = &dict_values;
  const int8_t indices[4] = {0, 2, 1, 2};
  const void* index_buffers[2] = {NULL, indices};
  const int32_t dict_offsets[4] = {0, 2, 4, 6};
  const void* dict_value_buffers[3] = {NULL, dict_offsets, "d0d1d2"};
  struct ArrowArray dict_array = array_of(3, 0, 3, dict_value_buffers, 0, NULL);
  struct ArrowDeviceArray dx = on_cpu(array_of(4, 0, 2, index_buffers, 0, NULL));
  dx.array.dictionary = &dict_array;
  CHECK_CLEAN(&dict, &dx);
}

/* A string view of 3 values: inline "short", long "a long string!" in
 * variadic buffer 0, null. */
struct ViewFixture {
  uint8_t views[3][16];
  const char* variadic;
  int64_t variadic_sizes[1];
  const void* buffers[4];
};

static void view_fixture_init(struct ViewFixture* fx) {
  memset(fx, 0, sizeof *fx);
  fx->variadic = "xxa long string!";
  int32_t length = 5;
  memcpy(fx->views[0], &length, 4);
  memcpy(fx->views[0] + 4, "short", 5);
  length = 14;
  int32_t buffer_index = 0, offset = 2;
  memcpy(fx->views[1], &length, 4);
  memcpy(fx->views[1] + 4, "a lo", 4);
  memcpy(fx->views[1] + 8, &buffer_index, 4);
  memcpy(fx->views[1] + 12, &offset, 4);
  fx->variadic_sizes[0] = 16;
  fx->buffers[0] = validity_0b1011; /* element 2 null */
  fx->buffers[1] = fx->views;
  fx->buffers[2] = fx->variadic;
  fx->buffers[3] = fx->variadic_sizes;
}

FERRY_TEST(clean_string_view) {
  struct ViewFixture fx;
  view_fixture_init(&fx);
  struct ArrowSchema s = schema_of("vu", 0, NULL);
  struct ArrowDeviceArray d = on_cpu(array_of(3, 1, 4, fx.buffers, 0, NULL));
  CHECK_CLEAN(&s, &d);
}

/* ---- schema rules ---------------------------------------------------------- */

FERRY_TEST(schema_rules) {
  struct ArrowSchema bad_child = schema_of("d:12", 0, NULL);
  struct ArrowSchema ok_child = schema_of("i", 0, NULL);
  struct ArrowSchema* kids[2] = {&ok_child, &bad_child};
  struct ArrowSchema st = schema_of("+s", 2, kids);
  CHECK_EQ_INT(EINVAL, run_schema(&st));
  CHECK_EQ_INT(1, findings.n);
  CHECK_FINDING("format", "root.children[1]", "decimal needs precision and scale");
  CHECK_STR(
      "format: root.children[1]: format \"d:12\": decimal needs precision and scale",
      error.message);

  struct ArrowSchema null_format = schema_of(NULL, 0, NULL);
  CHECK_EQ_INT(EINVAL, run_schema(&null_format));
  CHECK_FINDING("format", "root", "format is NULL");

  struct ArrowSchema released = schema_of("i", 0, NULL);
  released.release = NULL;
  CHECK_EQ_INT(EINVAL, run_schema(&released));
  CHECK_FINDING("released", "root", "released");
  CHECK_EQ_INT(EINVAL, run_schema(NULL));
  CHECK_FINDING("null", "root", "NULL");

  struct ArrowSchema flags = schema_of("i", 0, NULL);
  flags.flags = 0x18;
  CHECK_EQ_INT(EINVAL, run_schema(&flags));
  CHECK_FINDING("flags", "root", "unknown bits 0x18");

  struct ArrowSchema list2 = schema_of("+l", 2, kids);
  CHECK_EQ_INT(EINVAL, run_schema(&list2));
  CHECK_FINDING("n_children", "root", "list schema needs 1 child, found n_children = 2");

  struct ArrowSchema union3 = schema_of("+ud:0,1,2", 2, kids);
  bad_child.format = "u";
  CHECK_EQ_INT(EINVAL, run_schema(&union3));
  CHECK_FINDING("n_children", "root", "dense_union schema needs 3 children");

  struct ArrowSchema null_children = schema_of("+s", 2, NULL);
  CHECK_EQ_INT(EINVAL, run_schema(&null_children));
  CHECK_FINDING("children", "root", "children is NULL but n_children is 2");

  struct ArrowSchema* null_kid[1] = {NULL};
  struct ArrowSchema list_null_kid = schema_of("+l", 1, null_kid);
  CHECK_EQ_INT(EINVAL, run_schema(&list_null_kid));
  CHECK_FINDING("null", "root.children[0]", "schema pointer is NULL");
}

/* Metadata blobs for the tests below: int32 pair count, then per pair int32
 * key length, key, int32 value length, value (native endian). */
static size_t put_metadata_pair(char* out, const char* key, int32_t key_length,
                                const char* value, int32_t value_length) {
  memcpy(out, &key_length, 4);
  memcpy(out + 4, key, (size_t)key_length);
  memcpy(out + 4 + key_length, &value_length, 4);
  memcpy(out + 8 + key_length, value, (size_t)value_length);
  return 8 + (size_t)key_length + (size_t)value_length;
}

FERRY_TEST(schema_names_and_metadata_keys_must_be_utf8) {
  /* The C data interface: names are UTF-8, metadata keys are UTF-8; arrow-rs
   * fails (or panics) on anything else, so a consumer must hear it first. */
  struct ArrowSchema child = schema_of("i", 0, NULL);
  struct ArrowSchema* kids[1] = {&child};
  struct ArrowSchema st = schema_of("+s", 1, kids);
  st.name = "caf\xc3\xa9"; /* valid: "café" */
  child.name = "bad\xff";
  CHECK_EQ_INT(EINVAL, run_schema(&st));
  CHECK_EQ_INT(1, findings.n);
  CHECK_FINDING("utf8", "root.children[0]", "name is not valid UTF-8 (bad byte 0xff at byte 3)");
  child.name = "\xed\xa0\x80"; /* a UTF-16 surrogate encoded as UTF-8 */
  CHECK_EQ_INT(EINVAL, run_schema(&st));
  CHECK_FINDING("utf8", "root.children[0]", "not valid UTF-8");
  child.name = "ok";

  /* Metadata is read at FULL only (its blob has no size: DEFAULT cannot bound
   * a walk of it, see the next test). */
  static const int32_t values[2] = {1, 2};
  const void* child_buffers[2] = {NULL, values};
  struct ArrowArray child_array = array_of(2, 0, 2, child_buffers, 0, NULL);
  struct ArrowArray* array_kids[1] = {&child_array};
  const void* struct_buffers[1] = {NULL};
  struct ArrowDeviceArray d = on_cpu(array_of(2, 0, 1, struct_buffers, 1, array_kids));
  char blob[128];
  int32_t two = 2;
  memcpy(blob, &two, 4);
  size_t used = 4 + put_metadata_pair(blob + 4, "k\xc3\xa9y", 4, "v", 1);
  used += put_metadata_pair(blob + used, "\x80key", 4, "\xff binary values are allowed", 28);
  st.metadata = blob;
  CHECK_EQ_INT(EINVAL, run(&st, &d, FERRY_VALIDATE_FULL));
  CHECK_EQ_INT(1, findings.n);
  CHECK_FINDING("utf8", "root", "metadata key 1 is not valid UTF-8 (bad byte 0x80 at byte 0)");
  CHECK_EQ_INT(FERRY_OK, run(&st, &d, FERRY_VALIDATE_DEFAULT));
  CHECK_EQ_INT(FERRY_OK, run_schema(&st));

  /* Values may be any bytes; a well-formed blob with UTF-8 keys is clean. */
  put_metadata_pair(blob + 4 + 13, "key2", 4, "\xff binary values are allowed", 28);
  CHECK_EQ_INT(FERRY_OK, run(&st, &d, FERRY_VALIDATE_FULL));
  CHECK_EQ_INT(0, findings.n);

  /* A malformed blob is a finding, not a walk past its end. */
  int32_t negative = -1;
  memcpy(blob, &negative, 4);
  CHECK_REFUSED(&st, &d, FERRY_VALIDATE_FULL, "metadata", "root", "malformed");
  memcpy(blob, &two, 4);
  memcpy(blob + 4, &negative, 4);
  CHECK_REFUSED(&st, &d, FERRY_VALIDATE_FULL, "metadata", "root", "malformed");
}

/* Issue 20: a metadata blob declaring 1,000,000 pairs in 64 bytes (a heap
 * block of exactly 64 bytes, so ASan sees any read past it). DEFAULT does
 * not read metadata at all; FULL refuses the count before following it. */
FERRY_TEST(metadata_declaring_more_pairs_than_it_holds_is_never_walked) {
  struct ArrowSchema s = schema_of("i", 0, NULL);
  static const int32_t values[2] = {1, 2};
  const void* buffers[2] = {NULL, values};
  struct ArrowDeviceArray d = on_cpu(array_of(2, 0, 2, buffers, 0, NULL));
  char* blob = (char*)calloc(1, 64);
  CHECK(blob != NULL);
  int32_t million = 1000000;
  memcpy(blob, &million, 4);
  s.metadata = blob;
  CHECK_EQ_INT(FERRY_OK, run_schema(&s));
  CHECK_EQ_INT(FERRY_OK, run(&s, &d, FERRY_VALIDATE_DEFAULT));
  struct FerryPreparedSchema* prepared = NULL;
  CHECK_EQ_INT(FERRY_OK, ferry_prepared_schema_create(&s, NULL, NULL, &prepared, NULL));
  CHECK_EQ_INT(FERRY_OK, ferry_validate_prepared(prepared, &d, FERRY_VALIDATE_DEFAULT,
                                                 NULL, NULL, NULL));
  ferry_prepared_schema_free(prepared);
  CHECK_EQ_INT(EINVAL, run(&s, &d, FERRY_VALIDATE_FULL));
  CHECK_EQ_INT(1, findings.n);
  CHECK_FINDING("metadata", "root",
                "metadata declares 1000000 pairs, more than the 65536 FULL validation walks");

  /* A plausible count with an implausible key length: refused before the
   * length is followed. */
  int32_t one = 1, huge = INT32_C(1) << 24;
  memcpy(blob, &one, 4);
  memcpy(blob + 4, &huge, 4);
  CHECK_EQ_INT(FERRY_OK, run(&s, &d, FERRY_VALIDATE_DEFAULT));
  CHECK_REFUSED(&s, &d, FERRY_VALIDATE_FULL, "metadata", "root",
                "metadata pair 0 declares a key length of 16777216 bytes, more than the "
                "1048576 FULL validation walks");
  free(blob);
}

FERRY_TEST(schema_map_and_ree_rules) {
  struct ArrowSchema key = schema_of("u", 0, NULL);
  struct ArrowSchema* one_field[1] = {&key};
  struct ArrowSchema entries = schema_of("+s", 1, one_field); /* nullable and 1 field */
  struct ArrowSchema* map_children[1] = {&entries};
  struct ArrowSchema map = schema_of("+m", 1, map_children);
  CHECK_EQ_INT(EINVAL, run_schema(&map));
  CHECK_FINDING("map", "root.children[0]", "must be a struct of 2 children");
  CHECK_FINDING("map", "root.children[0]", "must not be nullable");

  struct ArrowSchema run_ends = schema_of("u", 0, NULL);
  struct ArrowSchema values = schema_of("i", 0, NULL);
  struct ArrowSchema* ree_children[2] = {&run_ends, &values};
  struct ArrowSchema ree = schema_of("+r", 2, ree_children);
  CHECK_EQ_INT(EINVAL, run_schema(&ree));
  CHECK_FINDING("run_ends", "root.children[0]", "run ends must be int16, int32 or int64");
  struct ArrowSchema ree1 = schema_of("+r", 1, ree_children);
  CHECK_EQ_INT(EINVAL, run_schema(&ree1));
  CHECK_FINDING("n_children", "root", "run_end_encoded schema needs 2 children");
}

FERRY_TEST(schema_dictionary_rules_and_paths) {
  struct ArrowSchema values = schema_of("q", 0, NULL);
  struct ArrowSchema index = schema_of("g", 0, NULL);
  index.dictionary = &values;
  struct ArrowSchema* kids[1] = {&index};
  struct ArrowSchema st = schema_of("+s", 1, kids);
  CHECK_EQ_INT(EINVAL, run_schema(&st));
  CHECK_EQ_INT(2, findings.n);
  CHECK_FINDING("dictionary", "root.children[0]", "needs an integer index format");
  CHECK_FINDING("format", "root.children[0].dictionary", "unknown type 'q'");
}

FERRY_TEST(schema_cycle_is_one_finding) {
  struct ArrowSchema loop = schema_of("+s", 1, NULL);
  struct ArrowSchema* self[1] = {&loop};
  loop.children = self;
  CHECK_EQ_INT(EINVAL, run_schema(&loop));
  CHECK_EQ_INT(1, findings.n);
  CHECK_FINDING("cycle", "root.children[0]", "this schema is its own ancestor (root)");
}

FERRY_TEST(deep_distinct_nesting_is_cut_by_depth) {
  enum { kLevels = 70 };
  struct ArrowSchema nested[kLevels];
  struct ArrowSchema* kids[kLevels];
  for (int i = 0; i < kLevels; i++) {
    kids[i] = i + 1 < kLevels ? &nested[i + 1] : NULL;
    nested[i] = schema_of(i + 1 < kLevels ? "+s" : "i", i + 1 < kLevels ? 1 : 0,
                          i + 1 < kLevels ? &kids[i] : NULL);
  }
  CHECK_EQ_INT(EINVAL, run_schema(&nested[0]));
  CHECK_EQ_INT(1, findings.n);
  CHECK_EQ_INT(0, strcmp(findings.rule[0], "depth"));
  CHECK_CONTAINS(findings.what[0], "deeper than 64 levels");
  CHECK_EQ_INT(65 * strlen(".children[0]") + strlen("root"), strlen(findings.where[0]));
}

/* ---- array structure rules ------------------------------------------------- */

FERRY_TEST(array_counts_and_lengths) {
  struct ArrowSchema s = schema_of("i", 0, NULL);
  const void* three[3] = {NULL, int32_values, NULL};
  struct ArrowDeviceArray d = on_cpu(array_of(2, 0, 3, three, 0, NULL));
  CHECK_REFUSED(&s, &d, FERRY_VALIDATE_DEFAULT, "n_buffers", "root",
                "int32 array needs 2 buffers, found n_buffers = 3");
  CHECK_CONTAINS(error.message, "n_buffers: root: int32 array needs 2 buffers");

  const void* two[2] = {NULL, int32_values};
  d = on_cpu(array_of(-1, -2, 2, two, 0, NULL));
  d.array.offset = -3;
  CHECK_REFUSED(&s, &d, FERRY_VALIDATE_FULL, "length", "root", "length is negative (-1)");
  CHECK_FINDING("offset", "root", "offset is negative (-3)");
  CHECK_FINDING("null_count", "root", "null_count is -2");
  if (findings.n != 3) print_findings(&findings);
  CHECK_EQ_INT(3, findings.n);

  d = on_cpu(array_of(2, 3, 2, two, 0, NULL));
  CHECK_REFUSED(&s, &d, FERRY_VALIDATE_DEFAULT, "null_count", "root",
                "null_count 3 exceeds length 2");

  d = on_cpu(array_of(INT64_MAX, 0, 2, two, 0, NULL));
  d.array.offset = 5;
  CHECK_REFUSED(&s, &d, FERRY_VALIDATE_FULL, "length", "root", "overflows");

  d = on_cpu(array_of(2, 0, 2, NULL, 0, NULL));
  CHECK_REFUSED(&s, &d, FERRY_VALIDATE_DEFAULT, "buffers", "root",
                "buffers is NULL but n_buffers is 2");

  struct ArrowSchema sv = schema_of("vz", 0, NULL);
  d = on_cpu(array_of(0, 0, 2, two, 0, NULL));
  CHECK_REFUSED(&sv, &d, FERRY_VALIDATE_DEFAULT, "n_buffers", "root",
                "binary_view array needs at least 3 buffers");
}

FERRY_TEST(buffer_sizes_that_overflow_int64_are_one_rule_with_buffer_size) {
  /* 2^62 int32 values need 2^64 bytes: ferry_array_buffer_size refuses the
   * array, so validation must too (it accepted it at DEFAULT and FULL). */
  struct ArrowSchema s = schema_of("i", 0, NULL);
  const void* two[2] = {NULL, int32_values};
  struct ArrowDeviceArray d = on_cpu(array_of(INT64_C(1) << 62, 0, 2, two, 0, NULL));
  int64_t size = 0;
  struct FerryError size_error;
  ferry_error_init(&size_error);
  CHECK_EQ_INT(EINVAL, ferry_array_buffer_size(&s, &d.array, ARROW_DEVICE_CPU, -1, 1, &size,
                                               &size_error));
  CHECK_CONTAINS(size_error.message, "overflow int64");
  CHECK_REFUSED(&s, &d, FERRY_VALIDATE_DEFAULT, "length", "root", "overflow int64");
  CHECK_EQ_INT(1, findings.n);
  CHECK_REFUSED(&s, &d, FERRY_VALIDATE_FULL, "length", "root", "overflow int64");
  /* The same through an offset, and for an offsets buffer (2^61 + 1 int64
   * offsets of a large list, where 2^61 values would still fit). */
  d = on_cpu(array_of(16, 0, 2, two, 0, NULL));
  d.array.offset = (INT64_C(1) << 62) - 16;
  CHECK_REFUSED(&s, &d, FERRY_VALIDATE_DEFAULT, "length", "root", "overflow int64");
  struct ArrowSchema item = schema_of("i", 0, NULL);
  struct ArrowSchema* items[1] = {&item};
  struct ArrowSchema large_list = schema_of("+L", 1, items);
  struct ArrowArray child = array_of(0, 0, 2, two, 0, NULL);
  struct ArrowArray* kids[1] = {&child};
  d = on_cpu(array_of(INT64_C(1) << 60, 0, 2, two, 1, kids));
  CHECK_REFUSED(&large_list, &d, FERRY_VALIDATE_DEFAULT, "length", "root",
                "overflow int64");
  /* Below the limit: 2^59 int32 values need 2^61 bytes, no finding. */
  d = on_cpu(array_of(INT64_C(1) << 59, 0, 2, two, 0, NULL));
  CHECK_EQ_INT(FERRY_OK, run(&s, &d, FERRY_VALIDATE_DEFAULT));
}

FERRY_TEST(array_required_buffers) {
  struct ArrowSchema s = schema_of("u", 0, NULL);
  const int32_t offsets[3] = {0, 1, 2};
  const void* no_validity[3] = {NULL, offsets, "ab"};
  struct ArrowDeviceArray d = on_cpu(array_of(2, 1, 3, no_validity, 0, NULL));
  CHECK_REFUSED(&s, &d, FERRY_VALIDATE_DEFAULT, "buffers", "root",
                "buffer 0 (validity) is NULL but null_count is 1");

  const void* no_offsets[3] = {NULL, NULL, "ab"};
  d = on_cpu(array_of(2, 0, 3, no_offsets, 0, NULL));
  CHECK_REFUSED(&s, &d, FERRY_VALIDATE_DEFAULT, "buffers", "root",
                "buffer 1 (offsets) is NULL but length is 2");

  const void* no_data[3] = {NULL, offsets, NULL};
  d = on_cpu(array_of(2, 0, 3, no_data, 0, NULL));
  CHECK_REFUSED(&s, &d, FERRY_VALIDATE_FULL, "buffers", "root",
                "buffer 2 (data) is NULL but the offsets reach 2 bytes");
}

FERRY_TEST(array_children_and_dictionary_presence) {
  /* Every child is its own struct: shared ones are a finding of their own. */
  struct ArrowSchema a = schema_of("i", 0, NULL);
  struct ArrowSchema b = schema_of("i", 0, NULL);
  struct ArrowSchema* kids[2] = {&a, &b};
  struct ArrowSchema st = schema_of("+s", 2, kids);
  const void* child_buffers[2] = {NULL, int32_values};
  struct ArrowArray child = array_of(2, 0, 2, child_buffers, 0, NULL);
  struct ArrowArray child2 = array_of(2, 0, 2, child_buffers, 0, NULL);
  struct ArrowArray child3 = array_of(2, 0, 2, child_buffers, 0, NULL);
  struct ArrowArray released_child = array_of(2, 0, 2, child_buffers, 0, NULL);
  released_child.release = NULL;
  struct ArrowArray* array_kids[2] = {&child, &released_child};
  const void* st_buffers[1] = {NULL};
  struct ArrowDeviceArray d = on_cpu(array_of(2, 0, 1, st_buffers, 2, array_kids));
  CHECK_EQ_INT(EINVAL, run(&st, &d, FERRY_VALIDATE_DEFAULT));
  CHECK_EQ_INT(1, findings.n);
  CHECK_FINDING("released", "root.children[1]", "array is released");

  array_kids[1] = NULL;
  CHECK_REFUSED(&st, &d, FERRY_VALIDATE_DEFAULT, "null", "root.children[1]",
                "array pointer is NULL");

  d = on_cpu(array_of(2, 0, 1, st_buffers, 1, array_kids));
  CHECK_REFUSED(&st, &d, FERRY_VALIDATE_DEFAULT, "n_children", "root",
                "array has 1 children but its schema has 2");

  /* More array children than schema children: the extra child has no schema
   * (found by fuzz_validate: this used to dereference the NULL schema). */
  struct ArrowArray* three_kids[3] = {&child, &child2, &child3};
  d = on_cpu(array_of(2, 0, 1, st_buffers, 3, three_kids));
  CHECK_REFUSED(&st, &d, FERRY_VALIDATE_FULL, "n_children", "root",
                "array has 3 children but its schema has 2");

  /* struct child shorter than the parent */
  struct ArrowArray short_child = array_of(1, 0, 2, child_buffers, 0, NULL);
  struct ArrowArray* short_kids[2] = {&child, &short_child};
  d = on_cpu(array_of(2, 0, 1, st_buffers, 2, short_kids));
  CHECK_REFUSED(&st, &d, FERRY_VALIDATE_DEFAULT, "length", "root",
                "children[1] has length 1, less than");

  /* dictionary on one side only, nested so the path shows */
  struct ArrowSchema values = schema_of("u", 0, NULL);
  struct ArrowSchema encoded = schema_of("i", 0, NULL);
  encoded.dictionary = &values;
  struct ArrowSchema* dict_kids[2] = {&encoded, &b};
  struct ArrowSchema st2 = schema_of("+s", 2, dict_kids);
  struct ArrowArray* plain_kids[2] = {&child, &child2};
  d = on_cpu(array_of(2, 0, 1, st_buffers, 2, plain_kids));
  CHECK_REFUSED(&st2, &d, FERRY_VALIDATE_DEFAULT, "dictionary", "root.children[0]",
                "the schema has a dictionary but the array has none");

  /* a broken dictionary array is reported under .dictionary */
  struct ArrowArray bad_dictionary = array_of(-4, 0, 3, NULL, 0, NULL);
  struct ArrowArray encoded_child = array_of(2, 0, 2, child_buffers, 0, NULL);
  encoded_child.dictionary = &bad_dictionary;
  struct ArrowArray* encoded_kids[2] = {&encoded_child, &child};
  d = on_cpu(array_of(2, 0, 1, st_buffers, 2, encoded_kids));
  CHECK_REFUSED(&st2, &d, FERRY_VALIDATE_DEFAULT, "length", "root.children[0].dictionary",
                "length is negative (-4)");
  CHECK_FINDING("buffers", "root.children[0].dictionary", "buffers is NULL");
}

FERRY_TEST(fixed_size_list_child_too_short) {
  struct ArrowSchema item = schema_of("i", 0, NULL);
  struct ArrowSchema* kids[1] = {&item};
  struct ArrowSchema fsl = schema_of("+w:3", 1, kids);
  const void* child_buffers[2] = {NULL, int32_values};
  struct ArrowArray child = array_of(8, 0, 2, child_buffers, 0, NULL);
  struct ArrowArray* children[1] = {&child};
  const void* buffers[1] = {NULL};
  struct ArrowDeviceArray d = on_cpu(array_of(3, 0, 1, buffers, 1, children));
  CHECK_REFUSED(&fsl, &d, FERRY_VALIDATE_DEFAULT, "length", "root",
                "children[0] has length 8, less than (offset + length) * "
                "list size = 9");
}

/* ---- device rules ---------------------------------------------------------- */

FERRY_TEST(device_rules) {
  struct ArrowSchema s = schema_of("i", 0, NULL);
  const void* two[2] = {NULL, int32_values};
  struct ArrowDeviceArray d = on_cpu(array_of(2, 0, 2, two, 0, NULL));
  d.reserved[2] = 7;
  int event = 0;
  d.sync_event = &event;
  d.device_id = 3;
  CHECK_EQ_INT(EINVAL, run(&s, &d, FERRY_VALIDATE_FULL));
  CHECK_EQ_INT(3, findings.n);
  CHECK_FINDING("reserved", "root", "reserved[2] is 0x7");
  CHECK_FINDING("sync_event", "root", "must be NULL");
  CHECK_FINDING("device", "root", "device_id 3 on the CPU");

  d = on_cpu(array_of(2, 0, 2, two, 0, NULL));
  d.device_id = 0; /* accepted for the CPU */
  CHECK_CLEAN(&s, &d);
  d.device_type = 99;
  CHECK_REFUSED(&s, &d, FERRY_VALIDATE_FULL, "device", "root",
                "device_type 99 is not a known ArrowDeviceType");

  d = on_cpu(array_of(2, 0, 2, two, 0, NULL));
  d.array.release = NULL;
  CHECK_REFUSED(&s, &d, FERRY_VALIDATE_FULL, "released", "root",
                "device array is released");
  CHECK_REFUSED(&s, NULL, FERRY_VALIDATE_FULL, "null", "root",
                "device array pointer is NULL");
  CHECK_EQ_INT(EINVAL, ferry_validate_device_array(&s, &d, 7, NULL, NULL, &error));
  CHECK_CONTAINS(error.message, "validation level 7");
}

/* ---- FULL content rules ---------------------------------------------------- */

FERRY_TEST(full_offsets_rules_name_the_child) {
  /* struct<a: int32, b: utf8> with b's offsets decreasing */
  struct ArrowSchema a = schema_of("i", 0, NULL);
  struct ArrowSchema b = schema_of("u", 0, NULL);
  struct ArrowSchema* kids[2] = {&a, &b};
  struct ArrowSchema st = schema_of("+s", 2, kids);
  const void* a_buffers[2] = {NULL, int32_values};
  struct ArrowArray a_array = array_of(3, 0, 2, a_buffers, 0, NULL);
  const int32_t bad_offsets[4] = {0, 2, 1, 3};
  const void* b_buffers[3] = {NULL, bad_offsets, "xyz"};
  struct ArrowArray b_array = array_of(3, 0, 3, b_buffers, 0, NULL);
  struct ArrowArray* array_kids[2] = {&a_array, &b_array};
  const void* st_buffers[1] = {NULL};
  struct ArrowDeviceArray d = on_cpu(array_of(3, 0, 1, st_buffers, 2, array_kids));
  CHECK_EQ_INT(FERRY_OK,
               run(&st, &d, FERRY_VALIDATE_DEFAULT)); /* DEFAULT reads nothing */
  CHECK_EQ_INT(EINVAL, run(&st, &d, FERRY_VALIDATE_FULL));
  CHECK_EQ_INT(1, findings.n);
  CHECK_FINDING("offsets", "root.children[1]",
                "offsets[2] = 1 is less than offsets[1] = 2");

  const int32_t negative_first[4] = {-1, 0, 1, 2};
  b_buffers[1] = negative_first;
  CHECK_REFUSED(&st, &d, FERRY_VALIDATE_FULL, "offsets", "root.children[1]",
                "offsets[0] = -1 is negative");

  /* list offsets beyond the child */
  struct ArrowSchema item = schema_of("i", 0, NULL);
  struct ArrowSchema* list_kids[1] = {&item};
  struct ArrowSchema list = schema_of("+l", 1, list_kids);
  struct ArrowArray child = array_of(4, 0, 2, a_buffers, 0, NULL);
  struct ArrowArray* children[1] = {&child};
  const int32_t offsets[3] = {0, 2, 5};
  const void* list_buffers[2] = {NULL, offsets};
  struct ArrowDeviceArray dl = on_cpu(array_of(2, 0, 2, list_buffers, 1, children));
  CHECK_REFUSED(&list, &dl, FERRY_VALIDATE_FULL, "offsets", "root",
                "last offset offsets[2] = 5 exceeds the child length 4");

  /* list view out of range */
  struct ArrowSchema lv = schema_of("+vl", 1, list_kids);
  const int32_t lv_offsets[2] = {1, 3};
  const int32_t lv_sizes[2] = {2, 2};
  const void* lv_buffers[3] = {NULL, lv_offsets, lv_sizes};
  struct ArrowDeviceArray dv = on_cpu(array_of(2, 0, 3, lv_buffers, 1, children));
  CHECK_REFUSED(&lv, &dv, FERRY_VALIDATE_FULL, "offsets", "root",
                "list view [1]: offset 3 and size 2");
}

FERRY_TEST(full_utf8_rules) {
  struct ArrowSchema s = schema_of("u", 0, NULL);
  const int32_t offsets[4] = {0, 2, 4, 6};
  /* value 1 is an overlong encoding of '/', value 2 a lone continuation byte,
   * but value 2 is null so only value 1 is reported. */
  const void* buffers[3] = {validity_0b1011, offsets, "ok\xc0\xaf\x80z"};
  struct ArrowDeviceArray d = on_cpu(array_of(3, 1, 3, buffers, 0, NULL));
  CHECK_EQ_INT(EINVAL, run(&s, &d, FERRY_VALIDATE_FULL));
  CHECK_EQ_INT(1, findings.n);
  CHECK_FINDING("utf8", "root", "value[1] is not valid UTF-8 (bad byte 0xc0 at byte 0");

  const char* cases[] = {"\xed\xa0\x80", "\xf4\x90\x80\x80", "\xe2\x82", "\xff"};
  for (int i = 0; i < 4; i++) {
    int32_t one_offsets[2] = {0, (int32_t)strlen(cases[i])};
    const void* one[3] = {NULL, one_offsets, cases[i]};
    struct ArrowDeviceArray d1 = on_cpu(array_of(1, 0, 3, one, 0, NULL));
    CHECK_EQ_INT(EINVAL, run(&s, &d1, FERRY_VALIDATE_FULL));
    CHECK_FINDING("utf8", "root", "value[0] is not valid UTF-8");
  }
  const char* good = "\xf0\x9f\x98\x80\xe2\x82\xac\xc3\xa9";
  int32_t good_offsets[2] = {0, (int32_t)strlen(good)};
  const void* gb[3] = {NULL, good_offsets, good};
  struct ArrowDeviceArray dg = on_cpu(array_of(1, 0, 3, gb, 0, NULL));
  CHECK_CLEAN(&s, &dg);
}

FERRY_TEST(full_view_rules) {
  struct ArrowSchema s = schema_of("vu", 0, NULL);
  struct ViewFixture fx;

  view_fixture_init(&fx);
  fx.views[0][4] = 0xff; /* inline bytes invalid */
  struct ArrowDeviceArray d = on_cpu(array_of(3, 1, 4, fx.buffers, 0, NULL));
  CHECK_REFUSED(&s, &d, FERRY_VALIDATE_FULL, "utf8", "root",
                "value[0] is not valid UTF-8");

  view_fixture_init(&fx);
  int32_t bad_index = 1;
  memcpy(fx.views[1] + 8, &bad_index, 4);
  d = on_cpu(array_of(3, 1, 4, fx.buffers, 0, NULL));
  CHECK_REFUSED(&s, &d, FERRY_VALIDATE_FULL, "views", "root",
                "view[1] refers to variadic buffer 1, but there are 1");

  view_fixture_init(&fx);
  fx.variadic_sizes[0] = 10;
  d = on_cpu(array_of(3, 1, 4, fx.buffers, 0, NULL));
  CHECK_REFUSED(&s, &d, FERRY_VALIDATE_FULL, "views", "root",
                "view[1] bytes [2, 16) are outside variadic buffer 0");

  view_fixture_init(&fx);
  fx.views[1][4] = 'X';
  d = on_cpu(array_of(3, 1, 4, fx.buffers, 0, NULL));
  CHECK_REFUSED(&s, &d, FERRY_VALIDATE_FULL, "views", "root",
                "view[1] prefix does not match");

  view_fixture_init(&fx);
  int32_t negative = -3;
  memcpy(fx.views[0], &negative, 4);
  d = on_cpu(array_of(3, 1, 4, fx.buffers, 0, NULL));
  CHECK_REFUSED(&s, &d, FERRY_VALIDATE_FULL, "views", "root",
                "view[0] has negative length -3");
}

FERRY_TEST(absurd_variadic_buffer_count_is_a_finding_not_a_walk) {
  /* A view array's n_buffers is open-ended: 2^61 + 3 made DEFAULT walk the
   * buffer table far past its end, and FULL overflow n_variadic * 8. */
  struct ArrowSchema s = schema_of("vu", 0, NULL);
  struct ViewFixture fx;
  view_fixture_init(&fx);
  struct ArrowDeviceArray d =
      on_cpu(array_of(3, 1, (INT64_C(1) << 61) + 3, fx.buffers, 0, NULL));
  CHECK_REFUSED(&s, &d, FERRY_VALIDATE_DEFAULT, "n_buffers", "root",
                "utf8_view array has n_buffers = 2305843009213693955, more than 2^32");
  CHECK_REFUSED(&s, &d, FERRY_VALIDATE_FULL, "n_buffers", "root", "more than 2^32");
  CHECK_EQ_INT(1, findings.n);
}

FERRY_TEST(full_null_count_matches_bitmap) {
  struct ArrowSchema s = schema_of("i", 0, NULL);
  const void* buffers[2] = {validity_0b1011, int32_values};
  struct ArrowDeviceArray d = on_cpu(array_of(4, 2, 2, buffers, 0, NULL));
  CHECK_EQ_INT(FERRY_OK, run(&s, &d, FERRY_VALIDATE_DEFAULT));
  CHECK_REFUSED(&s, &d, FERRY_VALIDATE_FULL, "null_count", "root",
                "null_count is 2 but the validity bitmap has 1 zero bits");
}

FERRY_TEST(full_union_rules) {
  struct ArrowSchema i32 = schema_of("i", 0, NULL);
  struct ArrowSchema other_i32 = schema_of("i", 0, NULL);
  struct ArrowSchema* fields[2] = {&i32, &other_i32};
  struct ArrowSchema dense = schema_of("+ud:3,7", 2, fields);
  const void* i_buffers[2] = {NULL, int32_values};
  struct ArrowArray c0 = array_of(2, 0, 2, i_buffers, 0, NULL);
  struct ArrowArray c1 = array_of(1, 0, 2, i_buffers, 0, NULL);
  struct ArrowArray* kids[2] = {&c0, &c1};
  const int8_t type_ids[3] = {3, 5, 7};
  const int32_t offsets[3] = {0, 0, 1};
  const void* buffers[2] = {type_ids, offsets};
  struct ArrowDeviceArray d = on_cpu(array_of(3, 0, 2, buffers, 2, kids));
  CHECK_EQ_INT(EINVAL, run(&dense, &d, FERRY_VALIDATE_FULL));
  CHECK_EQ_INT(2, findings.n);
  CHECK_FINDING("union", "root", "type_ids[1] = 5 is not one of the union's type ids");
  CHECK_FINDING("union", "root", "offsets[2] = 1 is outside child 1 of length 1");
}

FERRY_TEST(full_run_end_rules) {
  struct ArrowSchema run_ends_schema = schema_of("i", 0, NULL);
  struct ArrowSchema values_schema = schema_of("i", 0, NULL);
  struct ArrowSchema* fields[2] = {&run_ends_schema, &values_schema};
  struct ArrowSchema ree = schema_of("+r", 2, fields);
  const int32_t run_ends[3] = {2, 2, 6};
  const void* re_buffers[2] = {NULL, run_ends};
  const void* v_buffers[2] = {NULL, int32_values};
  struct ArrowArray re = array_of(3, 0, 2, re_buffers, 0, NULL);
  struct ArrowArray values = array_of(3, 0, 2, v_buffers, 0, NULL);
  struct ArrowArray* kids[2] = {&re, &values};
  struct ArrowDeviceArray d = on_cpu(array_of(6, 0, 0, NULL, 2, kids));
  CHECK_REFUSED(&ree, &d, FERRY_VALIDATE_FULL, "run_ends", "root",
                "value[1] = 2 is not greater than the previous run end 2");

  const int32_t short_run_ends[3] = {1, 2, 3};
  re_buffers[1] = short_run_ends;
  CHECK_REFUSED(&ree, &d, FERRY_VALIDATE_FULL, "run_ends", "root",
                "the last run end 3 does not cover");

  struct ArrowArray values2 = array_of(2, 0, 2, v_buffers, 0, NULL);
  kids[1] = &values2;
  CHECK_REFUSED(&ree, &d, FERRY_VALIDATE_DEFAULT, "run_ends", "root",
                "children[0] (run ends) has length 3 but children[1]");
}

FERRY_TEST(full_dictionary_index_range) {
  struct ArrowSchema dict_values = schema_of("u", 0, NULL);
  struct ArrowSchema index_schema = schema_of("i", 0, NULL);
  index_schema.dictionary = &dict_values;
  struct ArrowSchema* kids[1] = {&index_schema};
  struct ArrowSchema list = schema_of("+l", 1, kids);
  const int32_t indices[3] = {0, 3, -1};
  const void* index_buffers[2] = {NULL, indices};
  const int32_t dict_offsets[4] = {0, 1, 2, 3};
  const void* dict_buffers[3] = {NULL, dict_offsets, "abc"};
  struct ArrowArray dictionary = array_of(3, 0, 3, dict_buffers, 0, NULL);
  struct ArrowArray child = array_of(3, 0, 2, index_buffers, 0, NULL);
  child.dictionary = &dictionary;
  struct ArrowArray* children[1] = {&child};
  const int32_t offsets[2] = {0, 3};
  const void* list_buffers[2] = {NULL, offsets};
  struct ArrowDeviceArray d = on_cpu(array_of(1, 0, 2, list_buffers, 1, children));
  CHECK_EQ_INT(EINVAL, run(&list, &d, FERRY_VALIDATE_FULL));
  CHECK_EQ_INT(2, findings.n);
  CHECK_FINDING("dictionary", "root.children[0]",
                "index[1] = 3 is outside the dictionary of length 3");
  CHECK_FINDING("dictionary", "root.children[0]", "index[2] = -1");
}

FERRY_TEST(every_finding_is_reported_first_one_in_error) {
  struct ArrowSchema a = schema_of("i", 0, NULL);
  struct ArrowSchema b = schema_of("u", 0, NULL);
  struct ArrowSchema* kids[2] = {&a, &b};
  struct ArrowSchema st = schema_of("+s", 2, kids);
  const void* wrong_count[1] = {int32_values};
  struct ArrowArray a_array = array_of(3, 0, 1, wrong_count, 0, NULL);
  const int32_t offsets[4] = {0, 1, 0, 1};
  const void* b_buffers[3] = {NULL, offsets, "x"};
  struct ArrowArray b_array = array_of(3, 0, 3, b_buffers, 0, NULL);
  struct ArrowArray* array_kids[2] = {&a_array, &b_array};
  const void* st_buffers[1] = {NULL};
  struct ArrowDeviceArray d = on_cpu(array_of(3, 0, 1, st_buffers, 2, array_kids));
  d.reserved[0] = 1;
  CHECK_EQ_INT(EINVAL, run(&st, &d, FERRY_VALIDATE_FULL));
  CHECK_EQ_INT(3, findings.n);
  CHECK_FINDING("reserved", "root", "reserved[0]");
  CHECK_FINDING("n_buffers", "root.children[0]", "int32 array needs 2 buffers");
  CHECK_FINDING("offsets", "root.children[1]", "offsets[2] = 0 is less than");
  CHECK_CONTAINS(error.message, "reserved: root: reserved[0]");
  /* A NULL callback still validates. */
  CHECK_EQ_INT(EINVAL, ferry_validate_device_array(&st, &d, FERRY_VALIDATE_FULL, NULL,
                                                   NULL, NULL));
}

/* ---- the simulated device ---------------------------------------------------- */

FERRY_TEST(sim_residency_and_full_reads_through_the_device) {
  struct FerryDevice* sim = NULL;
  struct FerryDevice* cpu = NULL;
  CHECK_EQ_INT(FERRY_OK, ferry_device_resolve(ARROW_DEVICE_EXT_DEV, 1, &sim, NULL));
  CHECK_EQ_INT(FERRY_OK, ferry_device_resolve(ARROW_DEVICE_CPU, -1, &cpu, NULL));
  /* utf8 of 3 values with decreasing offsets, everything in sim memory. */
  const int32_t offsets[4] = {0, 2, 1, 3};
  void* sim_offsets = NULL;
  void* sim_data = NULL;
  CHECK_EQ_INT(FERRY_OK, ferry_device_allocate(sim, sizeof offsets, &sim_offsets, NULL));
  CHECK_EQ_INT(FERRY_OK, ferry_device_allocate(sim, 3, &sim_data, NULL));
  CHECK_EQ_INT(FERRY_OK, ferry_device_memcpy(sim, sim_offsets, cpu, offsets,
                                             sizeof offsets, NULL, NULL));
  CHECK_EQ_INT(FERRY_OK, ferry_device_memcpy(sim, sim_data, cpu, "abc", 3, NULL, NULL));
  struct ArrowSchema s = schema_of("u", 0, NULL);
  const void* buffers[3] = {NULL, sim_offsets, sim_data};
  struct ArrowDeviceArray d = on_cpu(array_of(3, 0, 3, buffers, 0, NULL));
  d.device_type = ARROW_DEVICE_EXT_DEV;
  d.device_id = 1;
  CHECK_EQ_INT(EINVAL, run(&s, &d, FERRY_VALIDATE_FULL));
  CHECK_EQ_INT(1, findings.n);
  CHECK_FINDING("offsets", "root", "offsets[2] = 1 is less than offsets[1] = 2");

  /* Memory the sim did not allocate in an ext_dev array is another ext_dev
   * producer's (issue 20): accepted as unknown device memory is, and never
   * read (its decreasing offsets go unseen). The sim's own buffers claimed
   * by another sim device id are not on it. */
  buffers[1] = offsets;
  CHECK_EQ_INT(FERRY_OK, run(&s, &d, FERRY_VALIDATE_DEFAULT));
  CHECK_EQ_INT(FERRY_OK, run(&s, &d, FERRY_VALIDATE_FULL));
  buffers[1] = sim_offsets;
  d.device_id = 2;
  CHECK_REFUSED(&s, &d, FERRY_VALIDATE_DEFAULT, "device", "root", "buffer 2 (data) at");
  d.device_id = -1;
  CHECK_REFUSED(&s, &d, FERRY_VALIDATE_DEFAULT, "device", "root",
                "device_id -1 is negative for device type ext_dev");

  CHECK_EQ_INT(FERRY_OK, ferry_device_deallocate(sim, sim_offsets, NULL));
  CHECK_EQ_INT(FERRY_OK, ferry_device_deallocate(sim, sim_data, NULL));
}

FERRY_TEST(full_waits_on_the_sync_event_before_reading) {
  struct FerryDevice* sim = NULL;
  struct FerryDevice* cpu = NULL;
  CHECK_EQ_INT(FERRY_OK, ferry_device_resolve(ARROW_DEVICE_EXT_DEV, 0, &sim, NULL));
  CHECK_EQ_INT(FERRY_OK, ferry_device_resolve(ARROW_DEVICE_CPU, -1, &cpu, NULL));
  int32_t strict_before = ferry_sim_is_strict();
  ferry_sim_set_strict(1);
  /* The offsets arrive through an asynchronous copy: in strict mode they read
   * as poison (negative offsets) until somebody waits on the event. */
  const int32_t offsets[4] = {0, 1, 2, 3};
  void* sim_offsets = NULL;
  void* sim_data = NULL;
  void* stream = NULL;
  void* event = NULL;
  CHECK_EQ_INT(FERRY_OK, ferry_device_allocate(sim, sizeof offsets, &sim_offsets, NULL));
  CHECK_EQ_INT(FERRY_OK, ferry_device_allocate(sim, 3, &sim_data, NULL));
  CHECK_EQ_INT(FERRY_OK, ferry_device_memcpy(sim, sim_data, cpu, "abc", 3, NULL, NULL));
  CHECK_EQ_INT(FERRY_OK, ferry_device_stream_create(sim, &stream, NULL));
  CHECK_EQ_INT(FERRY_OK, ferry_device_event_create(sim, &event, NULL));
  CHECK_EQ_INT(FERRY_OK, ferry_device_memcpy(sim, sim_offsets, cpu, offsets,
                                             sizeof offsets, stream, NULL));
  CHECK_EQ_INT(FERRY_OK, ferry_device_event_record(sim, event, stream, NULL));
  struct ArrowSchema s = schema_of("u", 0, NULL);
  const void* buffers[3] = {NULL, sim_offsets, sim_data};
  struct ArrowDeviceArray d = on_cpu(array_of(3, 0, 3, buffers, 0, NULL));
  d.device_type = ARROW_DEVICE_EXT_DEV;
  d.device_id = 0;
  d.sync_event = event;
  int rc = run(&s, &d, FERRY_VALIDATE_FULL);
  if (rc != FERRY_OK) print_findings(&findings);
  ferry_device_event_destroy(sim, event, NULL);
  ferry_device_stream_destroy(sim, stream, NULL);
  ferry_device_deallocate(sim, sim_offsets, NULL);
  ferry_device_deallocate(sim, sim_data, NULL);
  ferry_sim_set_strict(strict_before);
  CHECK_EQ_INT(FERRY_OK, rc);
}

FERRY_TEST_MAIN()
