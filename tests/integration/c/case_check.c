/* The checker: compares what a producer exported with the value formula.
 *
 * It reads only what the ABI defines and trusts nothing it has not checked
 * first (buffer counts, NULL pointers, offsets order), so a broken producer
 * gets a message, not a crash. */
#include "case_check.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "case_device.h"
#include "case_values.h"
#include "plugin_state.h"

/* ---- schema ------------------------------------------------------------ */

static const char* expected_format(enum it_type type) {
  static const char* const formats[IT_TYPE_COUNT] = {
      "c", "s", "i", "l", "C", "S", "I", "L", "f", "g", "b", "u", "z", "+l", "+s", "i"};
  return formats[type];
}

static const char* or_null(const char* s) { return s == NULL ? "(null)" : s; }

static int check_field(const struct ArrowSchema* field, const char* what,
                       const char* format, const char* name, int64_t n_children,
                       const char* where, struct FerryError* error) {
  if (field == NULL || field->release == NULL) {
    return it_error(error, EINVAL, "%s%s schema is missing or released", where, what);
  }
  if (field->format == NULL || strcmp(field->format, format) != 0) {
    return it_error(error, EINVAL, "%s%s schema format: expected \"%s\", got \"%s\"",
                    where, what, format, or_null(field->format));
  }
  if (name != NULL && (field->name == NULL || strcmp(field->name, name) != 0)) {
    return it_error(error, EINVAL, "%s%s schema name: expected \"%s\", got \"%s\"", where,
                    what, name, or_null(field->name));
  }
  if (name != NULL && (field->flags & ARROW_FLAG_NULLABLE) == 0) {
    return it_error(error, EINVAL, "%s%s schema flags: field \"%s\" must be nullable",
                    where, what, name);
  }
  if (field->n_children != n_children) {
    return it_error(error, EINVAL, "%s%s schema n_children: expected %lld, got %lld",
                    where, what, (long long)n_children, (long long)field->n_children);
  }
  if (n_children > 0 && field->children == NULL) {
    return it_error(error, EINVAL, "%s%s schema children pointer is NULL", where, what);
  }
  return FERRY_OK;
}

int it_check_schema(const struct it_case* c, const struct ArrowSchema* schema,
                    const char* where, struct FerryError* error) {
  const char* type = it_type_name(c->type);
  int64_t n_children = c->type == IT_LIST_INT32          ? 1
                       : c->type == IT_STRUCT_INT32_UTF8 ? 2
                                                         : 0;
  IT_RETURN_NOT_OK(check_field(schema, type, expected_format(c->type), type, n_children,
                               where, error));
  char what[96];
  if (c->type == IT_LIST_INT32) {
    snprintf(what, sizeof(what), "%s child \"item\"", type);
    IT_RETURN_NOT_OK(
        check_field(schema->children[0], what, "i", "item", 0, where, error));
  } else if (c->type == IT_STRUCT_INT32_UTF8) {
    snprintf(what, sizeof(what), "%s child \"a\"", type);
    IT_RETURN_NOT_OK(check_field(schema->children[0], what, "i", "a", 0, where, error));
    snprintf(what, sizeof(what), "%s child \"b\"", type);
    IT_RETURN_NOT_OK(check_field(schema->children[1], what, "u", "b", 0, where, error));
  }
  if (c->type == IT_DICT_INT32_UTF8) {
    snprintf(what, sizeof(what), "%s dictionary", type);
    IT_RETURN_NOT_OK(check_field(schema->dictionary, what, "u", NULL, 0, where, error));
  } else if (schema->dictionary != NULL) {
    return it_error(error, EINVAL, "%s%s schema has a dictionary, expected none", where,
                    type);
  }
  return FERRY_OK;
}

/* ---- reading buffers ----------------------------------------------------- */

static int get_bit(const void* bitmap, int64_t i) {
  return (((const uint8_t*)bitmap)[i >> 3] >> (i & 7)) & 1;
}

static uint64_t load_fixed(const void* base, int width, int64_t slot) {
  const uint8_t* at = (const uint8_t*)base + slot * width;
  switch (width) {
    case 1: {
      uint8_t v;
      memcpy(&v, at, 1);
      return v;
    }
    case 2: {
      uint16_t v;
      memcpy(&v, at, 2);
      return v;
    }
    case 4: {
      uint32_t v;
      memcpy(&v, at, 4);
      return v;
    }
    default: {
      uint64_t v;
      memcpy(&v, at, 8);
      return v;
    }
  }
}

static int32_t load_int32(const void* base, int64_t slot) {
  int32_t v;
  memcpy(&v, (const uint8_t*)base + slot * 4, 4);
  return v;
}

/* Quoted, escaped, shortened bytes for messages. */
static void format_bytes(const char* data, int64_t n, char* out, size_t out_size) {
  size_t used = 0;
  out[used++] = '"';
  for (int64_t k = 0; k < n && k < 24 && used + 6 < out_size; k++) {
    unsigned char ch = (unsigned char)data[k];
    if (ch >= 0x20 && ch < 0x7F && ch != '"' && ch != '\\') {
      out[used++] = (char)ch;
    } else {
      used += (size_t)snprintf(out + used, out_size - used, "\\x%02x", ch);
    }
  }
  if (n > 24 && used + 4 < out_size) {
    memcpy(out + used, "...", 3);
    used += 3;
  }
  out[used++] = '"';
  out[used] = '\0';
}

/* ---- structure ------------------------------------------------------------ */

static int check_layout(const struct ArrowArray* a, const char* what, int64_t n_buffers,
                        int64_t n_children, int has_dictionary, const char* where,
                        struct FerryError* error) {
  if (a == NULL || a->release == NULL) {
    return it_error(error, EINVAL, "%s%s array is missing or released", where, what);
  }
  if (a->n_buffers != n_buffers) {
    return it_error(error, EINVAL, "%s%s n_buffers: expected %lld, got %lld", where, what,
                    (long long)n_buffers, (long long)a->n_buffers);
  }
  if (a->buffers == NULL) {
    return it_error(error, EINVAL, "%s%s buffers pointer is NULL", where, what);
  }
  if (a->n_children != n_children) {
    return it_error(error, EINVAL, "%s%s n_children: expected %lld, got %lld", where,
                    what, (long long)n_children, (long long)a->n_children);
  }
  for (int64_t k = 0; k < n_children; k++) {
    if (a->children == NULL || a->children[k] == NULL) {
      return it_error(error, EINVAL, "%s%s child %lld is NULL", where, what,
                      (long long)k);
    }
  }
  if (has_dictionary && a->dictionary == NULL) {
    return it_error(error, EINVAL, "%s%s dictionary is NULL", where, what);
  }
  if (!has_dictionary && a->dictionary != NULL) {
    return it_error(error, EINVAL, "%s%s has a dictionary, expected none", where, what);
  }
  return FERRY_OK;
}

/* Children and dictionaries: offset 0, no nulls, long enough. */
static int check_nested_header(const struct ArrowArray* a, const char* what,
                               int64_t min_length, const char* where,
                               struct FerryError* error) {
  if (a->offset != 0) {
    return it_error(error, EINVAL, "%s%s offset: expected 0, got %lld", where, what,
                    (long long)a->offset);
  }
  if (a->null_count != 0) {
    return it_error(error, EINVAL, "%s%s null_count: expected 0, got %lld", where, what,
                    (long long)a->null_count);
  }
  if (a->length < min_length) {
    return it_error(error, EINVAL, "%s%s length: expected at least %lld, got %lld", where,
                    what, (long long)min_length, (long long)a->length);
  }
  if (a->buffers[0] != NULL) {
    for (int64_t j = 0; j < a->length; j++) {
      if (!get_bit(a->buffers[0], j)) {
        return it_error(error, EINVAL, "%s%s position %lld is null, expected no nulls",
                        where, what, (long long)j);
      }
    }
  }
  return FERRY_OK;
}

/* ---- values ------------------------------------------------------------- */

/* `position` names the kind of slot in messages: "physical" for the top
 * level, "child position" for struct children. */
static int check_fixed(const char* what, enum it_type type, uint32_t seed,
                       const void* values, int64_t length, int64_t offset, int64_t nulls,
                       const char* position, const char* where,
                       struct FerryError* error) {
  if (values == NULL && length > 0) {
    return it_error(error, EINVAL, "%s%s values buffer is NULL", where, what);
  }
  int width = it_fixed_width(type);
  for (int64_t i = 0; i < length; i++) {
    if (it_is_null(nulls, i)) continue;
    uint64_t expected = it_fixed_value_bits(type, seed, i);
    uint64_t got = load_fixed(values, width, offset + i);
    if (got != expected) {
      char expected_text[64], got_text[64];
      it_format_fixed_value(type, expected, expected_text, sizeof(expected_text));
      it_format_fixed_value(type, got, got_text, sizeof(got_text));
      return it_error(error, EINVAL, "%s%s element %lld (%s %lld): expected %s, got %s",
                      where, what, (long long)i, position, (long long)(offset + i),
                      expected_text, got_text);
    }
  }
  return FERRY_OK;
}

static int check_bool(const char* what, uint32_t seed, const void* values, int64_t length,
                      int64_t offset, int64_t nulls, const char* where,
                      struct FerryError* error) {
  if (values == NULL && length > 0) {
    return it_error(error, EINVAL, "%s%s values buffer is NULL", where, what);
  }
  for (int64_t i = 0; i < length; i++) {
    if (it_is_null(nulls, i)) continue;
    int expected = it_bool_value(seed, i);
    int got = get_bit(values, offset + i);
    if (got != expected) {
      return it_error(error, EINVAL,
                      "%s%s element %lld (physical %lld): expected %s, got %s", where,
                      what, (long long)i, (long long)(offset + i),
                      expected ? "true" : "false", got ? "true" : "false");
    }
  }
  return FERRY_OK;
}

static int check_utf8(const char* what, uint32_t seed, const void* offsets_buffer,
                      const void* data_buffer, int64_t length, int64_t offset,
                      int64_t nulls, const char* position, const char* where,
                      struct FerryError* error) {
  if (offsets_buffer == NULL && length > 0) {
    return it_error(error, EINVAL, "%s%s offsets buffer is NULL", where, what);
  }
  const char* data = data_buffer;
  for (int64_t i = 0; i < length; i++) {
    if (it_is_null(nulls, i)) continue;
    int64_t p = offset + i;
    int32_t start = load_int32(offsets_buffer, p),
            end = load_int32(offsets_buffer, p + 1);
    if (start < 0 || end < start) {
      return it_error(
          error, EINVAL, "%s%s element %lld (%s %lld): offsets %d..%d are not ascending",
          where, what, (long long)i, position, (long long)p, (int)start, (int)end);
    }
    char expected[IT_UTF8_MAX_BYTES];
    int n = it_utf8_value(seed, i, expected);
    if (end - start != n ||
        (n > 0 && (data == NULL || memcmp(data + start, expected, n) != 0))) {
      char expected_text[32], got_text[128];
      format_bytes(expected, n, expected_text, sizeof(expected_text));
      if (data == NULL && end > start) {
        snprintf(got_text, sizeof(got_text), "%d bytes and no data buffer",
                 (int)(end - start));
      } else {
        format_bytes(data == NULL ? "" : data + start, end - start, got_text,
                     sizeof(got_text));
      }
      return it_error(error, EINVAL, "%s%s element %lld (%s %lld): expected %s, got %s",
                      where, what, (long long)i, position, (long long)p, expected_text,
                      got_text);
    }
  }
  return FERRY_OK;
}

static int check_list(const struct it_case* c, uint32_t seed, const struct ArrowArray* a,
                      const char* where, struct FerryError* error) {
  const char* type = it_type_name(c->type);
  char what[96];
  snprintf(what, sizeof(what), "%s child \"item\"", type);
  const struct ArrowArray* child = a->children[0];
  IT_RETURN_NOT_OK(check_layout(child, what, 2, 0, 0, where, error));
  IT_RETURN_NOT_OK(check_nested_header(child, what, 0, where, error));
  const void* offsets = a->buffers[1];
  const void* items = child->buffers[1];
  if (offsets == NULL && c->length > 0) {
    return it_error(error, EINVAL, "%s%s offsets buffer is NULL", where, type);
  }
  for (int64_t i = 0; i < c->length; i++) {
    if (it_is_null(c->nulls, i)) continue;
    int64_t p = a->offset + i;
    int32_t start = load_int32(offsets, p), end = load_int32(offsets, p + 1);
    if (start < 0 || end < start) {
      return it_error(
          error, EINVAL,
          "%s%s element %lld (physical %lld): offsets %d..%d are not ascending", where,
          type, (long long)i, (long long)p, (int)start, (int)end);
    }
    int expected_items = it_list_length(seed, i);
    if (end - start != expected_items) {
      return it_error(
          error, EINVAL, "%s%s element %lld (physical %lld): expected %d items, got %d",
          where, type, (long long)i, (long long)p, expected_items, (int)(end - start));
    }
    if (end > child->length) {
      return it_error(
          error, EINVAL,
          "%s%s element %lld (physical %lld): items %d..%d pass the child length %lld",
          where, type, (long long)i, (long long)p, (int)start, (int)end,
          (long long)child->length);
    }
    if (end > start && items == NULL) {
      return it_error(error, EINVAL, "%s%s values buffer is NULL", where, what);
    }
    /* Child values follow the child position, whatever the parent offset. */
    for (int32_t j = start; j < end; j++) {
      int32_t expected = (int32_t)it_u(seed, j);
      int32_t got = load_int32(items, j);
      if (got != expected) {
        return it_error(error, EINVAL,
                        "%s%s element %lld (physical %lld) item %d (child position %d): "
                        "expected %d, got %d",
                        where, type, (long long)i, (long long)p, (int)(j - start), (int)j,
                        (int)expected, (int)got);
      }
    }
  }
  return FERRY_OK;
}

static int check_struct(const struct it_case* c, uint32_t seed,
                        const struct ArrowArray* a, const char* where,
                        struct FerryError* error) {
  const char* type = it_type_name(c->type);
  char what_a[96], what_b[96];
  snprintf(what_a, sizeof(what_a), "%s child \"a\"", type);
  snprintf(what_b, sizeof(what_b), "%s child \"b\"", type);
  const struct ArrowArray* child_a = a->children[0];
  const struct ArrowArray* child_b = a->children[1];
  /* Struct element i lives at child position i + offset. */
  int64_t slots = a->offset + c->length;
  IT_RETURN_NOT_OK(check_layout(child_a, what_a, 2, 0, 0, where, error));
  IT_RETURN_NOT_OK(check_nested_header(child_a, what_a, slots, where, error));
  IT_RETURN_NOT_OK(check_layout(child_b, what_b, 3, 0, 0, where, error));
  IT_RETURN_NOT_OK(check_nested_header(child_b, what_b, slots, where, error));
  IT_RETURN_NOT_OK(check_fixed(what_a, IT_INT32, seed, child_a->buffers[1], c->length,
                               a->offset, c->nulls, "child position", where, error));
  return check_utf8(what_b, seed + 1, child_b->buffers[1], child_b->buffers[2], c->length,
                    a->offset, c->nulls, "child position", where, error);
}

static int check_dictionary(const struct it_case* c, const struct ArrowArray* a,
                            const char* where, struct FerryError* error) {
  char what[96];
  snprintf(what, sizeof(what), "%s dictionary", it_type_name(c->type));
  const struct ArrowArray* dictionary = a->dictionary;
  IT_RETURN_NOT_OK(check_layout(dictionary, what, 3, 0, 0, where, error));
  IT_RETURN_NOT_OK(
      check_nested_header(dictionary, what, IT_DICTIONARY_SIZE, where, error));
  if (dictionary->length != IT_DICTIONARY_SIZE) {
    return it_error(error, EINVAL, "%s%s length: expected %d, got %lld", where, what,
                    IT_DICTIONARY_SIZE, (long long)dictionary->length);
  }
  const void* offsets = dictionary->buffers[1];
  const char* data = dictionary->buffers[2];
  if (offsets == NULL || data == NULL) {
    return it_error(error, EINVAL, "%s%s offsets or data buffer is NULL", where, what);
  }
  for (int k = 0; k < IT_DICTIONARY_SIZE; k++) {
    char expected[4] = {'d', (char)('0' + k), '\0', '\0'};
    int32_t start = load_int32(offsets, k), end = load_int32(offsets, k + 1);
    if (start < 0 || end < start) {
      return it_error(error, EINVAL, "%s%s element %d: offsets %d..%d are not ascending",
                      where, what, k, (int)start, (int)end);
    }
    if (end - start != 2 || memcmp(data + start, expected, 2) != 0) {
      char got_text[128];
      format_bytes(data + start, end - start, got_text, sizeof(got_text));
      return it_error(error, EINVAL, "%s%s element %d: expected \"%s\", got %s", where,
                      what, k, expected, got_text);
    }
  }
  return FERRY_OK;
}

/* ---- the whole array --------------------------------------------------- */

static int expected_n_buffers(enum it_type type) {
  switch (type) {
    case IT_UTF8:
    case IT_BINARY:
      return 3;
    case IT_STRUCT_INT32_UTF8:
      return 1;
    default:
      return 2;
  }
}

/* check_layout with the counts the case's type has. */
static int check_case_layout(const struct it_case* c, const struct ArrowArray* a,
                             const char* where, struct FerryError* error) {
  int64_t n_children = c->type == IT_LIST_INT32          ? 1
                       : c->type == IT_STRUCT_INT32_UTF8 ? 2
                                                         : 0;
  return check_layout(a, it_type_name(c->type), expected_n_buffers(c->type), n_children,
                      c->type == IT_DICT_INT32_UTF8, where, error);
}

/* Fields that live in host memory whatever the device: checked on the
 * array as exported, before any copy could renormalise them. */
static int check_header(const struct it_case* c, const struct ArrowArray* a,
                        const char* where, struct FerryError* error) {
  const char* type = it_type_name(c->type);
  IT_RETURN_NOT_OK(check_case_layout(c, a, where, error));
  if (a->length != c->length) {
    return it_error(error, EINVAL, "%s%s length: expected %lld, got %lld", where, type,
                    (long long)c->length, (long long)a->length);
  }
  if (a->offset != c->offset) {
    return it_error(error, EINVAL, "%s%s offset: expected %lld, got %lld", where, type,
                    (long long)c->offset, (long long)a->offset);
  }
  int64_t null_count = it_null_count(c->nulls, c->length);
  if (a->null_count != null_count) {
    return it_error(error, EINVAL, "%s%s null_count: expected %lld, got %lld", where,
                    type, (long long)null_count, (long long)a->null_count);
  }
  return FERRY_OK;
}

/* Everything read from buffers; `a` is host-readable (the exported array or
 * its host copy) and slots are found through its own offset. */
static int check_values(const struct it_case* c, uint32_t seed,
                        const struct ArrowArray* a, const char* where,
                        struct FerryError* error) {
  const char* type = it_type_name(c->type);
  IT_RETURN_NOT_OK(check_case_layout(c, a, where, error));
  const void* validity = a->buffers[0];
  if (validity == NULL) {
    /* nulls=0 gives no bitmap; an all-valid bitmap would say the same, so
     * only a missing bitmap that should mark nulls is wrong. */
    if (it_null_count(c->nulls, c->length) > 0) {
      return it_error(error, EINVAL,
                      "%s%s validity buffer is NULL, but %lld elements are null", where,
                      type, (long long)it_null_count(c->nulls, c->length));
    }
  } else {
    for (int64_t i = 0; i < c->length; i++) {
      int expected = !it_is_null(c->nulls, i);
      if (get_bit(validity, a->offset + i) != expected) {
        return it_error(
            error, EINVAL,
            "%s%s validity of element %lld (physical %lld): expected %s, got %s", where,
            type, (long long)i, (long long)(a->offset + i), expected ? "valid" : "null",
            expected ? "null" : "valid");
      }
    }
  }

  switch (c->type) {
    case IT_BOOL:
      return check_bool(type, seed, a->buffers[1], c->length, a->offset, c->nulls, where,
                        error);
    case IT_UTF8:
    case IT_BINARY:
      return check_utf8(type, seed, a->buffers[1], a->buffers[2], c->length, a->offset,
                        c->nulls, "physical", where, error);
    case IT_LIST_INT32:
      return check_list(c, seed, a, where, error);
    case IT_STRUCT_INT32_UTF8:
      return check_struct(c, seed, a, where, error);
    case IT_DICT_INT32_UTF8:
      IT_RETURN_NOT_OK(check_fixed(type, IT_DICT_INT32_UTF8, seed, a->buffers[1],
                                   c->length, a->offset, c->nulls, "physical", where,
                                   error));
      return check_dictionary(c, a, where, error);
    default:
      return check_fixed(type, c->type, seed, a->buffers[1], c->length, a->offset,
                         c->nulls, "physical", where, error);
  }
}

/* FERRY_IT_C_FORCE_HOST_COPY=1 makes the checker copy host-accessible
 * device arrays to the host as it must for GPU memory, so that path is
 * tested on the sim device on machines without a GPU. */
static int force_host_copy(void) {
  const char* value = getenv("FERRY_IT_C_FORCE_HOST_COPY");
  return value != NULL && strcmp(value, "1") == 0;
}

int it_check_array(const struct it_case* c, uint32_t seed,
                   const struct ArrowSchema* schema, struct ArrowDeviceArray* array,
                   const char* where, struct FerryError* error) {
  if (array == NULL || array->array.release == NULL) {
    return it_error(error, EINVAL, "%sarray is NULL or released", where);
  }
  if (array->device_type != c->device_type) {
    return it_error(error, EINVAL, "%sdevice type: expected %s (%d), got %s (%d)", where,
                    c->device_name, (int)c->device_type,
                    ferry_device_type_name(array->device_type), (int)array->device_type);
  }
  for (int k = 0; k < 3; k++) {
    if (array->reserved[k] != 0) {
      return it_error(error, EINVAL, "%sreserved word %d is not zero", where, k);
    }
  }
  IT_RETURN_NOT_OK(check_header(c, &array->array, where, error));

  const struct ArrowArray* readable = &array->array;
  struct ArrowDeviceArray host_copy;
  memset(&host_copy, 0, sizeof(host_copy));
  if (c->device_type == ARROW_DEVICE_CPU) {
    if (array->sync_event != NULL) {
      return it_error(error, EINVAL, "%ssync_event must be NULL for a cpu array", where);
    }
  } else {
    struct FerryDevice* device = NULL;
    int rc = ferry_device_resolve(array->device_type, array->device_id, &device, error);
    if (rc != FERRY_OK) {
      char prefix[96];
      snprintf(prefix, sizeof(prefix), "%sdevice %s id %lld", where,
               ferry_device_type_name(array->device_type), (long long)array->device_id);
      return it_error_prefix(error, rc, prefix);
    }
    /* Before any buffer is read: the producer's writes may still be in
     * flight, and the sim's strict mode serves poison until this wait. */
    rc = ferry_device_array_wait(array, NULL, error);
    if (rc != FERRY_OK) {
      char prefix[96];
      snprintf(prefix, sizeof(prefix), "%swaiting on sync_event", where);
      return it_error_prefix(error, rc, prefix);
    }
    if (!ferry_device_is_host_accessible(device) || force_host_copy()) {
      rc =
          ferry_device_array_copy(schema, array, ARROW_DEVICE_CPU, -1, &host_copy, error);
      if (rc != FERRY_OK) {
        char prefix[96];
        snprintf(prefix, sizeof(prefix), "%scopying to the host", where);
        return it_error_prefix(error, rc, prefix);
      }
      readable = &host_copy.array;
    }
  }
  int rc = check_values(c, seed, readable, where, error);
  if (host_copy.array.release != NULL) host_copy.array.release(&host_copy.array);
  return rc;
}
