/* Parser of the case grammar (see case_spec.h for the decisions it makes). */
#include "case_spec.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Formats a message into `error` (NULL is accepted) and returns `code`. */
static int it_error(struct FerryError* error, int code, const char* fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int it_error(struct FerryError* error, int code, const char* fmt, ...) {
  if (error != NULL) {
    va_list args;
    va_start(args, fmt);
    vsnprintf(error->message, sizeof error->message, fmt, args);
    va_end(args);
  }
  return code;
}

static const char* const type_names[IT_TYPE_COUNT] = {
    "int8",           "int16",  "int32",  "int64",      "uint8",
    "uint16",         "uint32", "uint64", "float32",    "float64",
    "bool",           "utf8",   "binary", "list_int32", "struct_int32_utf8",
    "dict_int32_utf8"};

const char* it_type_name(enum it_type type) {
  return type >= 0 && type < IT_TYPE_COUNT ? type_names[type] : "unknown";
}

int64_t it_case_device_id(const struct it_case* c) {
  return c->device_type == ARROW_DEVICE_CPU ? -1 : 0;
}

/* A (pointer, length) view into the case string: keys and values are not
 * terminated, so they are compared and printed with their lengths. */
struct it_token {
  const char* start;
  int length;
};

static int token_equals(struct it_token token, const char* word) {
  return (size_t)token.length == strlen(word) &&
         memcmp(token.start, word, token.length) == 0;
}

/* Parses decimal digits into [0, max]; a leading '-' is reported as a
 * negative value, anything else that is not a digit as malformed. */
static int parse_number(struct it_token key, struct it_token value, uint64_t max,
                        const char* spec, uint64_t* out, struct FerryError* error) {
  if (value.length > 1 && value.start[0] == '-') {
    int digits_only = 1;
    for (int i = 1; i < value.length; i++) {
      if (value.start[i] < '0' || value.start[i] > '9') digits_only = 0;
    }
    if (digits_only) {
      return it_error(error, EINVAL, "negative %.*s \"%.*s\" in case \"%s\"", key.length,
                      key.start, value.length, value.start, spec);
    }
  }
  if (value.length == 0) {
    return it_error(error, EINVAL,
                    "malformed number \"\" for key \"%.*s\" in case \"%s\"", key.length,
                    key.start, spec);
  }
  uint64_t result = 0;
  for (int i = 0; i < value.length; i++) {
    char digit = value.start[i];
    if (digit < '0' || digit > '9') {
      return it_error(error, EINVAL,
                      "malformed number \"%.*s\" for key \"%.*s\" in case \"%s\"",
                      value.length, value.start, key.length, key.start, spec);
    }
    uint64_t d = (uint64_t)(digit - '0');
    if (result > (max - d) / 10) {
      return it_error(error, EINVAL,
                      "%.*s \"%.*s\" out of range (0 to %llu) in case \"%s\"", key.length,
                      key.start, value.length, value.start, (unsigned long long)max,
                      spec);
    }
    result = result * 10 + d;
  }
  *out = result;
  return FERRY_OK;
}

static int parse_device(struct it_token value, const char* spec, struct it_case* out,
                        struct FerryError* error) {
  static const struct {
    const char* name;
    ArrowDeviceType type;
  } devices[] = {{"cpu", ARROW_DEVICE_CPU},
                 {"sim", ARROW_DEVICE_EXT_DEV},
                 {"cuda", ARROW_DEVICE_CUDA},
                 {"rocm", ARROW_DEVICE_ROCM}};
  for (size_t i = 0; i < sizeof(devices) / sizeof(devices[0]); i++) {
    if (token_equals(value, devices[i].name)) {
      out->device_type = devices[i].type;
      out->device_name = devices[i].name;
      return FERRY_OK;
    }
  }
  return it_error(
      error, EINVAL,
      "unknown device \"%.*s\" in case \"%s\" (expected cpu, sim, cuda or rocm)",
      value.length, value.start, spec);
}

/* fail=PREFIX@N with PREFIX "get_next@" or "consumer@": parses N (>= 1). */
static int parse_fail_at(struct it_token value, const char* prefix, const char* key_name,
                         const char* spec, int64_t* out, struct FerryError* error) {
  const int prefix_length = (int)strlen(prefix);
  struct it_token key = {key_name, (int)strlen(key_name)};
  struct it_token number = {value.start + prefix_length, value.length - prefix_length};
  uint64_t n = 0;
  int rc = parse_number(key, number, INT64_MAX, spec, &n, error);
  if (rc != FERRY_OK) return rc;
  if (n == 0) {
    return it_error(error, EINVAL, "fail=%.*s0 in case \"%s\": N counts from 1",
                    prefix_length, prefix, spec);
  }
  *out = (int64_t)n;
  return FERRY_OK;
}

static int has_prefix(struct it_token value, const char* prefix) {
  size_t n = strlen(prefix);
  return (size_t)value.length >= n && memcmp(value.start, prefix, n) == 0;
}

static int parse_fail(struct it_token value, const char* spec, struct it_case* out,
                      struct FerryError* error) {
  if (token_equals(value, "export")) {
    out->fail = IT_FAIL_EXPORT;
    return FERRY_OK;
  }
  if (token_equals(value, "get_schema")) {
    out->fail = IT_FAIL_GET_SCHEMA;
    return FERRY_OK;
  }
  if (has_prefix(value, "get_next@")) {
    out->fail = IT_FAIL_GET_NEXT;
    return parse_fail_at(value, "get_next@", "fail=get_next@N", spec, &out->fail_at,
                         error);
  }
  if (has_prefix(value, "consumer@")) {
    out->fail = IT_FAIL_CONSUMER;
    return parse_fail_at(value, "consumer@", "fail=consumer@N", spec, &out->fail_at,
                         error);
  }
  return it_error(error, EINVAL,
                  "unknown fail mode \"%.*s\" in case \"%s\" (expected export, "
                  "get_next@N, get_schema or consumer@N)",
                  value.length, value.start, spec);
}

/* Keys in the order of cases.md; the index is also the bit of `seen`. */
static const char* const key_names[] = {"length",  "nulls", "seed",   "offset", "device",
                                        "batches", "fail",  "window", "cancel"};
enum {
  KEY_LENGTH,
  KEY_NULLS,
  KEY_SEED,
  KEY_OFFSET,
  KEY_DEVICE,
  KEY_BATCHES,
  KEY_FAIL,
  KEY_WINDOW,
  KEY_CANCEL,
  KEY_COUNT
};

static int parse_pair(struct it_token key, struct it_token value, const char* spec,
                      unsigned* seen, struct it_case* out, struct FerryError* error) {
  int which = -1;
  for (int k = 0; k < KEY_COUNT; k++) {
    if (token_equals(key, key_names[k])) which = k;
  }
  if (which < 0) {
    return it_error(error, EINVAL, "unknown key \"%.*s\" in case \"%s\"", key.length,
                    key.start, spec);
  }
  if (*seen & (1u << which)) {
    return it_error(error, EINVAL, "duplicate key \"%.*s\" in case \"%s\"", key.length,
                    key.start, spec);
  }
  *seen |= 1u << which;

  if (which == KEY_DEVICE) return parse_device(value, spec, out, error);
  if (which == KEY_FAIL) return parse_fail(value, spec, out, error);

  /* Every other key is a number up to its limit, stored in its field (seed:
   * a uint32, the others int64). */
  static const uint64_t limits[KEY_COUNT] = {[KEY_LENGTH] = (uint64_t)IT_CASE_MAX_SLOTS,
                                             [KEY_NULLS] = INT64_MAX,
                                             [KEY_SEED] = UINT32_MAX,
                                             [KEY_OFFSET] = (uint64_t)IT_CASE_MAX_SLOTS,
                                             [KEY_BATCHES] = INT64_MAX,
                                             [KEY_WINDOW] = INT64_MAX,
                                             [KEY_CANCEL] = INT64_MAX};
  int64_t* const fields[KEY_COUNT] = {
      [KEY_LENGTH] = &out->length, [KEY_NULLS] = &out->nulls,
      [KEY_OFFSET] = &out->offset, [KEY_BATCHES] = &out->batches,
      [KEY_WINDOW] = &out->window, [KEY_CANCEL] = &out->cancel};
  uint64_t number = 0;
  int rc = parse_number(key, value, limits[which], spec, &number, error);
  if (which == KEY_SEED) {
    out->seed = (uint32_t)number;
  } else {
    *fields[which] = (int64_t)number;
  }
  if (rc == FERRY_OK && which == KEY_WINDOW && number == 0) {
    rc = it_error(error, EINVAL,
                  "window=0 in case \"%s\": a consumer must request at least 1 batch",
                  spec);
  }
  return rc;
}

int it_case_parse(const char* spec, struct it_case* out, struct FerryError* error) {
  if (spec == NULL) return it_error(error, EINVAL, "case string is NULL");
  if (out == NULL) return it_error(error, EINVAL, "case output is NULL");
  *out = (struct it_case){.type = IT_INT32,
                          .length = 16,
                          .nulls = 0,
                          .seed = 1,
                          .offset = 0,
                          .device_type = ARROW_DEVICE_CPU,
                          .device_name = "cpu",
                          .batches = 3,
                          .fail = IT_FAIL_NONE,
                          .fail_at = 0,
                          .window = 1,
                          .cancel = 0};

  const char* colon = strchr(spec, ':');
  struct it_token type = {spec, colon == NULL ? (int)strlen(spec) : (int)(colon - spec)};
  int found = 0;
  for (int t = 0; t < IT_TYPE_COUNT; t++) {
    if (token_equals(type, type_names[t])) {
      out->type = (enum it_type)t;
      found = 1;
    }
  }
  if (!found) {
    return it_error(error, EINVAL, "unknown type \"%.*s\" in case \"%s\"", type.length,
                    type.start, spec);
  }

  unsigned seen = 0;
  while (colon != NULL) {
    const char* pair = colon + 1;
    colon = strchr(pair, ':');
    int pair_length = colon == NULL ? (int)strlen(pair) : (int)(colon - pair);
    const char* equals = memchr(pair, '=', (size_t)pair_length);
    if (equals == NULL || equals == pair) {
      return it_error(error, EINVAL, "malformed KEY=VALUE \"%.*s\" in case \"%s\"",
                      pair_length, pair, spec);
    }
    struct it_token key = {pair, (int)(equals - pair)};
    struct it_token value = {equals + 1, pair_length - key.length - 1};
    int rc = parse_pair(key, value, spec, &seen, out, error);
    if (rc != FERRY_OK) return rc;
  }

  if (out->length + out->offset > IT_CASE_MAX_SLOTS) {
    return it_error(error, EINVAL,
                    "length %lld plus offset %lld exceeds %lld slots in case \"%s\"",
                    (long long)out->length, (long long)out->offset,
                    (long long)IT_CASE_MAX_SLOTS, spec);
  }
  return FERRY_OK;
}

int64_t it_case_failing_get_next(const struct it_case* c) {
  return c->fail == IT_FAIL_GET_NEXT && c->fail_at <= c->batches + 1 ? c->fail_at : 0;
}
