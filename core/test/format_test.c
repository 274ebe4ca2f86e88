/* Unit tests of the format-string parser (core/src/format.c): every token of
 * the grammar with its parsed layout, and malformed strings with messages
 * that name the problem. */
#include <errno.h>

#include "ferry/ferry.h"
#include "ferry_test.h"
#include "format.h"

/* Parses `format`, failing the test with the parser's message if rejected. */
static struct FerryFormat parse_ok(const char* format) {
  struct FerryFormat parsed;
  struct FerryError error;
  ferry_error_init(&error);
  int rc = ferry__format_parse(format, &parsed, &error);
  if (rc != FERRY_OK) {
    printf("  rejected \"%s\": %s\n", format, error.message);
  }
  CHECK_EQ_INT(FERRY_OK, rc);
  CHECK_EQ_INT(FERRY_OK, ferry_format_validate(format, NULL));
  return parsed;
}

/* Parses `format` and checks its type, fixed buffer count and child count;
 * returns the parse for the checks that follow. */
static struct FerryFormat check_shape(const char* format, enum FerryTypeId type,
                                      int64_t n_fixed_buffers, int64_t n_children) {
  struct FerryFormat f = parse_ok(format);
  CHECK_EQ_INT(type, f.type);
  CHECK_EQ_INT(n_fixed_buffers, f.n_fixed_buffers);
  CHECK_EQ_INT(n_children, f.n_children);
  return f;
}

/* Checks the layout of a simple fixed-width type. */
static void check_fixed(const char* format, enum FerryTypeId type, int64_t bits) {
  struct FerryFormat f = check_shape(format, type, 2, 0);
  CHECK_EQ_INT(FERRY_BUFFER_VALIDITY, f.roles[0]);
  CHECK_EQ_INT(FERRY_BUFFER_DATA, f.roles[1]);
  CHECK_EQ_INT(bits, f.bit_width);
  CHECK_EQ_INT(0, f.is_view);
}

FERRY_TEST(primitive_tokens) {
  check_shape("n", FERRY_TYPE_NA, 0, 0);
  check_fixed("b", FERRY_TYPE_BOOL, 1);
  check_fixed("c", FERRY_TYPE_INT8, 8);
  check_fixed("C", FERRY_TYPE_UINT8, 8);
  check_fixed("s", FERRY_TYPE_INT16, 16);
  check_fixed("S", FERRY_TYPE_UINT16, 16);
  check_fixed("i", FERRY_TYPE_INT32, 32);
  check_fixed("I", FERRY_TYPE_UINT32, 32);
  check_fixed("l", FERRY_TYPE_INT64, 64);
  check_fixed("L", FERRY_TYPE_UINT64, 64);
  check_fixed("e", FERRY_TYPE_HALF_FLOAT, 16);
  check_fixed("f", FERRY_TYPE_FLOAT, 32);
  check_fixed("g", FERRY_TYPE_DOUBLE, 64);
}

FERRY_TEST(variable_and_view_tokens) {
  const char* formats[] = {"z", "Z", "u", "U"};
  enum FerryTypeId types[] = {FERRY_TYPE_BINARY, FERRY_TYPE_LARGE_BINARY,
                              FERRY_TYPE_STRING, FERRY_TYPE_LARGE_STRING};
  int32_t widths[] = {4, 8, 4, 8};
  for (int i = 0; i < 4; i++) {
    struct FerryFormat f = parse_ok(formats[i]);
    CHECK_EQ_INT(types[i], f.type);
    CHECK_EQ_INT(3, f.n_fixed_buffers);
    CHECK_EQ_INT(FERRY_BUFFER_VALIDITY, f.roles[0]);
    CHECK_EQ_INT(FERRY_BUFFER_OFFSETS, f.roles[1]);
    CHECK_EQ_INT(FERRY_BUFFER_VAR_DATA, f.roles[2]);
    CHECK_EQ_INT(widths[i], f.offset_bytes);
    CHECK_EQ_INT(0, f.is_view);
  }
  struct FerryFormat vz = parse_ok("vz");
  CHECK_EQ_INT(FERRY_TYPE_BINARY_VIEW, vz.type);
  CHECK_EQ_INT(1, vz.is_view);
  CHECK_EQ_INT(2, vz.n_fixed_buffers);
  CHECK_EQ_INT(FERRY_BUFFER_VIEWS, vz.roles[1]);
  CHECK_EQ_INT(128, vz.bit_width);
  struct FerryFormat vu = parse_ok("vu");
  CHECK_EQ_INT(FERRY_TYPE_STRING_VIEW, vu.type);
  CHECK_EQ_INT(1, vu.is_view);
}

FERRY_TEST(decimal_tokens) {
  struct FerryFormat f = parse_ok("d:12,2");
  CHECK_EQ_INT(FERRY_TYPE_DECIMAL, f.type);
  CHECK_EQ_INT(12, f.decimal_precision);
  CHECK_EQ_INT(2, f.decimal_scale);
  CHECK_EQ_INT(128, f.bit_width);
  f = parse_ok("d:9,-3,32");
  CHECK_EQ_INT(32, f.bit_width);
  CHECK_EQ_INT(-3, f.decimal_scale);
  f = parse_ok("d:18,0,64");
  CHECK_EQ_INT(64, f.bit_width);
  f = parse_ok("d:38,10,128");
  CHECK_EQ_INT(128, f.bit_width);
  CHECK_EQ_INT(38, f.decimal_precision);
  f = parse_ok("d:76,5,256");
  CHECK_EQ_INT(256, f.bit_width);
  CHECK_EQ_INT(76, f.decimal_precision);
}

FERRY_TEST(fixed_size_binary_token) {
  struct FerryFormat f = parse_ok("w:16");
  CHECK_EQ_INT(FERRY_TYPE_FIXED_SIZE_BINARY, f.type);
  CHECK_EQ_INT(16, f.fixed_size);
  CHECK_EQ_INT(128, f.bit_width);
  f = parse_ok("w:0");
  CHECK_EQ_INT(0, f.fixed_size);
  f = parse_ok("w:2147483647");
  CHECK_EQ_INT(2147483647, f.fixed_size);
}

FERRY_TEST(temporal_tokens) {
  check_fixed("tdD", FERRY_TYPE_DATE32, 32);
  check_fixed("tdm", FERRY_TYPE_DATE64, 64);
  check_fixed("tts", FERRY_TYPE_TIME32, 32);
  check_fixed("ttm", FERRY_TYPE_TIME32, 32);
  check_fixed("ttu", FERRY_TYPE_TIME64, 64);
  check_fixed("ttn", FERRY_TYPE_TIME64, 64);
  CHECK_EQ_INT('m', parse_ok("ttm").time_unit);
  CHECK_EQ_INT('n', parse_ok("ttn").time_unit);
  const char units[] = {'s', 'm', 'u', 'n'};
  for (int i = 0; i < 4; i++) {
    char ts[8] = {'t', 's', units[i], ':', '\0'};
    struct FerryFormat f = parse_ok(ts);
    CHECK_EQ_INT(FERRY_TYPE_TIMESTAMP, f.type);
    CHECK_EQ_INT(units[i], f.time_unit);
    CHECK_EQ_INT(64, f.bit_width);
    CHECK(f.timezone == NULL);
    char td[8] = {'t', 'D', units[i], '\0'};
    f = parse_ok(td);
    CHECK_EQ_INT(FERRY_TYPE_DURATION, f.type);
    CHECK_EQ_INT(units[i], f.time_unit);
  }
  struct FerryFormat tz = parse_ok("tsu:Europe/Paris");
  CHECK_STR("Europe/Paris", tz.timezone);
  tz = parse_ok("tsn:+07:30");
  CHECK_STR("+07:30", tz.timezone);
  check_fixed("tiM", FERRY_TYPE_INTERVAL_MONTHS, 32);
  check_fixed("tiD", FERRY_TYPE_INTERVAL_DAY_TIME, 64);
  check_fixed("tin", FERRY_TYPE_INTERVAL_MONTH_DAY_NANO, 128);
}

FERRY_TEST(nested_tokens) {
  struct FerryFormat f = check_shape("+l", FERRY_TYPE_LIST, 2, 1);
  CHECK_EQ_INT(FERRY_BUFFER_OFFSETS, f.roles[1]);
  CHECK_EQ_INT(4, f.offset_bytes);
  f = parse_ok("+L");
  CHECK_EQ_INT(FERRY_TYPE_LARGE_LIST, f.type);
  CHECK_EQ_INT(8, f.offset_bytes);
  f = parse_ok("+vl");
  CHECK_EQ_INT(FERRY_TYPE_LIST_VIEW, f.type);
  CHECK_EQ_INT(3, f.n_fixed_buffers);
  CHECK_EQ_INT(FERRY_BUFFER_SIZES, f.roles[2]);
  CHECK_EQ_INT(4, f.offset_bytes);
  f = parse_ok("+vL");
  CHECK_EQ_INT(FERRY_TYPE_LARGE_LIST_VIEW, f.type);
  CHECK_EQ_INT(8, f.offset_bytes);
  f = check_shape("+w:3", FERRY_TYPE_FIXED_SIZE_LIST, 1, 1);
  CHECK_EQ_INT(3, f.fixed_size);
  check_shape("+s", FERRY_TYPE_STRUCT, 1, -1);
  check_shape("+m", FERRY_TYPE_MAP, 2, 1);
  check_shape("+r", FERRY_TYPE_RUN_END_ENCODED, 0, 2);
}

FERRY_TEST(union_tokens) {
  struct FerryFormat f = parse_ok("+ud:0,5,127");
  CHECK_EQ_INT(FERRY_TYPE_DENSE_UNION, f.type);
  CHECK_EQ_INT(2, f.n_fixed_buffers);
  CHECK_EQ_INT(FERRY_BUFFER_TYPE_IDS, f.roles[0]);
  CHECK_EQ_INT(FERRY_BUFFER_UNION_OFFSETS, f.roles[1]);
  CHECK_EQ_INT(3, f.n_union_types);
  CHECK_EQ_INT(3, f.n_children);
  int8_t ids[FERRY_FORMAT_MAX_UNION_TYPES];
  ferry__format_union_type_ids(&f, ids);
  CHECK_EQ_INT(0, ids[0]);
  CHECK_EQ_INT(5, ids[1]);
  CHECK_EQ_INT(127, ids[2]);
  f = parse_ok("+us:2");
  CHECK_EQ_INT(FERRY_TYPE_SPARSE_UNION, f.type);
  CHECK_EQ_INT(1, f.n_fixed_buffers);
  CHECK_EQ_INT(1, f.n_union_types);
  ferry__format_union_type_ids(&f, ids);
  CHECK_EQ_INT(2, ids[0]);
  f = parse_ok("+us:");
  CHECK_EQ_INT(0, f.n_union_types);
  CHECK_EQ_INT(0, f.n_children);
}

FERRY_TEST(all_128_union_ids_accepted) {
  char buffer[600];
  size_t used = 0;
  used += (size_t)snprintf(buffer + used, sizeof buffer - used, "+ud:");
  for (int i = 0; i < 128; i++) {
    used +=
        (size_t)snprintf(buffer + used, sizeof buffer - used, i ? ",%d" : "%d", 127 - i);
  }
  struct FerryFormat f = parse_ok(buffer);
  CHECK_EQ_INT(128, f.n_union_types);
  int8_t ids[FERRY_FORMAT_MAX_UNION_TYPES];
  ferry__format_union_type_ids(&f, ids);
  CHECK_EQ_INT(127, ids[0]);
  CHECK_EQ_INT(0, ids[127]);
}

/* Expects `format` to be rejected with a message containing `needle`. */
static void check_rejected(const char* format, const char* needle) {
  struct FerryError error;
  ferry_error_init(&error);
  struct FerryFormat parsed;
  int rc = ferry__format_parse(format, &parsed, &error);
  if (rc != EINVAL) printf("  accepted \"%s\"\n", format ? format : "(NULL)");
  CHECK_EQ_INT(EINVAL, rc);
  CHECK_CONTAINS(error.message, needle);
  ferry_error_init(&error);
  CHECK_EQ_INT(EINVAL, ferry_format_validate(format, &error));
  CHECK_CONTAINS(error.message, needle);
}

FERRY_TEST(malformed_formats_rejected_with_named_problem) {
  check_rejected(NULL, "format is NULL");
  check_rejected("", "empty");
  check_rejected("q", "format \"q\": unknown type 'q'");
  check_rejected("ii", "unexpected trailing characters \"i\"");
  check_rejected("d:12", "format \"d:12\": decimal needs precision and scale");
  check_rejected("d", "decimal needs ':'");
  check_rejected("d:", "decimal precision is not a number");
  check_rejected("d:12,", "decimal scale is not a number");
  check_rejected("d:12,2,", "decimal bit width is not a number");
  check_rejected("d:12,2,48", "decimal bit width must be 32, 64, 128 or 256");
  check_rejected("d:0,0", "precision 0 is outside 1..38");
  check_rejected("d:39,0", "precision 39 is outside 1..38");
  check_rejected("d:10,0,32", "decimal32 precision 10 is outside 1..9");
  check_rejected("d:99999999999999999999,1", "decimal precision is out of range");
  check_rejected("d:5,99999999999", "decimal scale is out of range");
  check_rejected("d:5,2,128x", "trailing characters \"x\"");
  check_rejected("d:-5,2", "decimal precision is not a number");
  check_rejected("w", "fixed-size binary needs ':N'");
  check_rejected("w:", "fixed-size binary size is not a number");
  check_rejected("w:-1", "fixed-size binary size is not a number");
  check_rejected("w:2147483648", "fixed-size binary size is out of range");
  check_rejected("w:4a", "trailing characters \"a\"");
  check_rejected("+w", "fixed-size list needs ':N'");
  check_rejected("+w:x", "fixed-size list size is not a number");
  check_rejected("v", "view type must be");
  check_rejected("vx", "view type must be");
  check_rejected("t", "unknown temporal type");
  check_rejected("tx", "unknown temporal type");
  check_rejected("td", "date unit");
  check_rejected("tdX", "date unit");
  check_rejected("tt", "time unit");
  check_rejected("ttx", "time unit");
  check_rejected("tts:", "trailing characters \":\"");
  check_rejected("ts", "timestamp unit");
  check_rejected("tsx:", "timestamp unit");
  check_rejected("tss", "timestamp needs ':'");
  check_rejected("tD", "duration unit");
  check_rejected("tDx", "duration unit");
  check_rejected("tDs:", "trailing characters");
  check_rejected("ti", "interval unit");
  check_rejected("tix", "interval unit");
  check_rejected("+", "unknown nested type");
  check_rejected("+x", "unknown nested type");
  check_rejected("+v", "list view must be");
  check_rejected("+lx", "trailing characters \"x\"");
  check_rejected("+u", "union must be");
  check_rejected("+ud", "union needs ':'");
  check_rejected("+ud:1,", "union type id 1 is not a number");
  check_rejected("+ud:,1", "union type id 0 is not a number");
  check_rejected("+ud:128", "union type id 0 is outside 0..127");
  check_rejected("+ud:-1", "union type id 0 is not a number");
  check_rejected("+us:1,2,1", "union type id 1 appears twice");
  check_rejected("+us:1;2", "trailing characters \";2\"");
  check_rejected("+us:99999999999999999999999", "outside 0..127");
  check_rejected("+r:", "trailing characters \":\"");
  check_rejected("\x01\xff", "unknown type '?'");
}

FERRY_TEST(hostile_strings_are_quoted_and_bounded) {
  char long_format[2000];
  memset(long_format, 'x', sizeof long_format - 1);
  long_format[0] = 'i';
  long_format[sizeof long_format - 1] = '\0';
  struct FerryError error;
  ferry_error_init(&error);
  CHECK_EQ_INT(EINVAL, ferry_format_validate(long_format, &error));
  CHECK_CONTAINS(error.message, "...");
  CHECK(strlen(error.message) < 600);
  ferry_error_init(&error);
  CHECK_EQ_INT(EINVAL, ferry_format_validate("i\n\"", &error));
  CHECK_CONTAINS(error.message, "\\x0a\\\"");
}

FERRY_TEST(failure_leaves_out_untouched) {
  struct FerryFormat parsed;
  memset(&parsed, 0x5a, sizeof parsed);
  CHECK_EQ_INT(EINVAL, ferry__format_parse("+ud:1,1", &parsed, NULL));
  CHECK_EQ_INT(0x5a5a5a5a, (int32_t)parsed.n_union_types);
}

FERRY_TEST_MAIN()
