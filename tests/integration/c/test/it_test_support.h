/* Helpers shared by the C plugin's tests (header only; each *_test.c is its
 * own binary). */
#ifndef FERRY_IT_C_TEST_SUPPORT_H
#define FERRY_IT_C_TEST_SUPPORT_H

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "ferry/ferry.h"
#include "ferry/ferry_it.h"
#include "ferry_test.h"

/* The sixteen TYPE words of the grammar. */
static const char* const it_test_types[] = {
    "int8",           "int16",  "int32",  "int64",      "uint8",
    "uint16",         "uint32", "uint64", "float32",    "float64",
    "bool",           "utf8",   "binary", "list_int32", "struct_int32_utf8",
    "dict_int32_utf8"};
#define IT_TEST_N_TYPES ((int)(sizeof(it_test_types) / sizeof(it_test_types[0])))

/* Fails the current test with the plugin's message when `rc` is not 0. */
#define CHECK_IT_OK(rc, spec)                                                          \
  do {                                                                                 \
    int it_rc_ = (rc);                                                                 \
    if (it_rc_ != 0) {                                                                 \
      char it_msg_[1400];                                                              \
      snprintf(it_msg_, sizeof it_msg_, "case \"%s\": rc %d (%s): %s", (spec), it_rc_, \
               ferry_errno_name(it_rc_), ferry_it_last_error());                       \
      ferry_test_fail(__FILE__, __LINE__, it_msg_);                                    \
    }                                                                                  \
  } while (0)

/* Exports `spec` as an array on zeroed structs; fails the test on error. */
#define EXPORT_ARRAY_OK(spec, schema, array)                               \
  do {                                                                     \
    memset((schema), 0, sizeof(*(schema)));                                \
    memset((array), 0, sizeof(*(array)));                                  \
    CHECK_IT_OK(ferry_it_export_array((spec), (schema), (array)), (spec)); \
  } while (0)

/* Exports `spec` through both entry points expecting `code`, with a message
 * that contains `needle` (that is `needle` when `exact`); the outputs stay
 * released and no allocation or export remains. */
static inline void expect_export_fails(const char* spec, int code, const char* needle,
                                       int exact) {
  int64_t before = ferry_it_live_allocations();
  int64_t exports_before = ferry_live_exports();
  struct ArrowSchema schema = {0};
  struct ArrowDeviceArray array = {0};
  CHECK_EQ_INT(code, ferry_it_export_array(spec, &schema, &array));
  if (exact) CHECK_STR(needle, ferry_it_last_error());
  CHECK_CONTAINS(ferry_it_last_error(), needle);
  CHECK(schema.release == NULL);
  CHECK(array.array.release == NULL);
  CHECK_EQ_INT(before, ferry_it_live_allocations());
  CHECK_EQ_INT(exports_before, ferry_live_exports());
  /* The stream entry point parses the same grammar. */
  struct ArrowDeviceArrayStream stream = {0};
  CHECK_EQ_INT(code, ferry_it_export_stream(spec, &stream));
  if (exact) CHECK_STR(needle, ferry_it_last_error());
  CHECK_CONTAINS(ferry_it_last_error(), needle);
  CHECK(stream.release == NULL);
  CHECK_EQ_INT(before, ferry_it_live_allocations());
  CHECK_EQ_INT(exports_before, ferry_live_exports());
}

/* Exports `exported` and checks it as `checked`, which must refuse it with
 * EINVAL and a message that contains `needle`: the check took ownership all
 * the same (both structs released, no allocation left). */
static inline void expect_check_refused(const char* exported, const char* checked,
                                        const char* needle) {
  int64_t before = ferry_it_live_allocations();
  struct ArrowSchema schema;
  struct ArrowDeviceArray array;
  EXPORT_ARRAY_OK(exported, &schema, &array);
  CHECK_EQ_INT(EINVAL, ferry_it_check_array(checked, &schema, &array));
  CHECK_CONTAINS(ferry_it_last_error(), needle);
  CHECK(schema.release == NULL);
  CHECK(array.array.release == NULL);
  CHECK_EQ_INT(before, ferry_it_live_allocations());
}

static inline void expect_export_error(const char* spec, int code, const char* needle) {
  expect_export_fails(spec, code, needle, 0);
}

#endif  // FERRY_IT_C_TEST_SUPPORT_H
