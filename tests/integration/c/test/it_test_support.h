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

#endif  // FERRY_IT_C_TEST_SUPPORT_H
