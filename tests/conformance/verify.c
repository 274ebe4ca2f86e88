/* The suite's independent checker (see verify.h). Every rule cites the
 * sentence of cases.md it comes from, in the comments. */
#include "verify.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(char* why, size_t size, const char* fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(char* why, size_t size, const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  vsnprintf(why, size, fmt, args);
  va_end(args);
  return -1;
}

static int bit_at(const void* bitmap, int64_t position) {
  const unsigned char* bytes = bitmap;
  return (bytes[position >> 3] >> (position & 7)) & 1;
}

static void hex(const unsigned char* bytes, int n, char* out, size_t size) {
  size_t used = 0;
  out[0] = '\0';
  for (int k = n - 1; k >= 0 && used + 3 < size; k--) {
    used += (size_t)snprintf(out + used, size - used, "%02x", bytes[k]);
  }
}

/* --- schema ------------------------------------------------------------- */

/* "every field is nullable": top level, "item", "a" and "b". */
static int check_field(const struct ArrowSchema* s, const char* where, const char* format,
                       const char* name, int64_t n_children, int has_dictionary,
                       char* why, size_t size) {
  if (s == NULL) return fail(why, size, "%s: schema is NULL", where);
  if (s->release == NULL) return fail(why, size, "%s: schema is released", where);
  if (s->format == NULL || strcmp(s->format, format) != 0) {
    return fail(why, size, "%s: format \"%s\", expected \"%s\"", where,
                s->format ? s->format : "(null)", format);
  }
  if (name != NULL && (s->name == NULL || strcmp(s->name, name) != 0)) {
    return fail(why, size, "%s: name \"%s\", expected \"%s\"", where,
                s->name ? s->name : "(null)", name);
  }
  if (name != NULL && (s->flags & ARROW_FLAG_NULLABLE) == 0) {
    return fail(why, size, "%s: flags %lld lack ARROW_FLAG_NULLABLE", where,
                (long long)s->flags);
  }
  if (s->n_children != n_children) {
    return fail(why, size, "%s: n_children %lld, expected %lld", where,
                (long long)s->n_children, (long long)n_children);
  }
  if (n_children > 0 && s->children == NULL) {
    return fail(why, size, "%s: children is NULL", where);
  }
  if (has_dictionary != (s->dictionary != NULL)) {
    return fail(
        why, size, "%s: %s", where,
        has_dictionary ? "dictionary schema missing" : "unexpected dictionary schema");
  }
  return 0;
}

int verify_schema(const struct it_case* c, const struct ArrowSchema* s, char* why,
                  size_t size) {
  enum conf_layout layout = conf_type_layout(c->type);
  int64_t n_children = layout == LAYOUT_LIST ? 1 : layout == LAYOUT_STRUCT ? 2 : 0;
  if (check_field(s, "schema", conf_type_format(c->type), it_type_name(c->type),
                  n_children, layout == LAYOUT_DICT, why, size) != 0) {
    return -1;
  }
  if (layout == LAYOUT_LIST) {
    return check_field(s->children[0], "schema.children[0]", "i", "item", 0, 0, why,
                       size);
  }
  if (layout == LAYOUT_STRUCT) {
    if (check_field(s->children[0], "schema.children[0]", "i", "a", 0, 0, why, size) !=
        0) {
      return -1;
    }
    return check_field(s->children[1], "schema.children[1]", "u", "b", 0, 0, why, size);
  }
  if (layout == LAYOUT_DICT) {
    /* The dictionary is not a field: its name and flags are not prescribed. */
    return check_field(s->dictionary, "schema.dictionary", "u", NULL, 0, 0, why, size);
  }
  return 0;
}

/* --- arrays ------------------------------------------------------------- */

static int check_shape(const struct ArrowArray* a, const char* where, int64_t n_buffers,
                       int64_t n_children, int has_dictionary, char* why, size_t size) {
  if (a == NULL) return fail(why, size, "%s: array is NULL", where);
  if (a->release == NULL) return fail(why, size, "%s: array is released", where);
  if (a->n_buffers != n_buffers) {
    return fail(why, size, "%s: n_buffers %lld, expected %lld", where,
                (long long)a->n_buffers, (long long)n_buffers);
  }
  if (n_buffers > 0 && a->buffers == NULL)
    return fail(why, size, "%s: buffers is NULL", where);
  if (a->n_children != n_children) {
    return fail(why, size, "%s: n_children %lld, expected %lld", where,
                (long long)a->n_children, (long long)n_children);
  }
  for (int64_t k = 0; k < n_children; k++) {
    if (a->children == NULL || a->children[k] == NULL) {
      return fail(why, size, "%s: child %lld is NULL", where, (long long)k);
    }
  }
  if (has_dictionary != (a->dictionary != NULL)) {
    return fail(why, size, "%s: %s", where,
                has_dictionary ? "dictionary missing" : "unexpected dictionary");
  }
  return 0;
}

/* "children and dictionaries never contain nulls", "have offset 0". */
static int check_child_header(const struct ArrowArray* a, const char* where,
                              int64_t min_length, char* why, size_t size) {
  if (a->offset != 0) {
    return fail(why, size, "%s: offset %lld, children and dictionaries have offset 0",
                where, (long long)a->offset);
  }
  if (a->null_count != 0) {
    return fail(why, size, "%s: null_count %lld, children never contain nulls", where,
                (long long)a->null_count);
  }
  if (a->length < min_length) {
    return fail(why, size, "%s: length %lld, needs at least %lld", where,
                (long long)a->length, (long long)min_length);
  }
  if (a->buffers[0] != NULL) {
    for (int64_t k = 0; k < a->length; k++) {
      if (!bit_at(a->buffers[0], k)) {
        return fail(why, size, "%s: validity bit %lld is 0, children never contain nulls",
                    where, (long long)k);
      }
    }
  }
  return 0;
}

/* Offsets must exist (offset + length + 1 entries) and never decrease. */
static int check_offsets(const struct ArrowArray* a, const char* where, int64_t slots,
                         char* why, size_t size) {
  const int32_t* offsets = a->buffers[1];
  if (offsets == NULL) return fail(why, size, "%s: offsets buffer is NULL", where);
  if (offsets[0] < 0) return fail(why, size, "%s: offsets[0] = %d", where, offsets[0]);
  for (int64_t k = 0; k < slots; k++) {
    if (offsets[k + 1] < offsets[k]) {
      return fail(why, size, "%s: offsets decrease at slot %lld (%d > %d)", where,
                  (long long)k, offsets[k], offsets[k + 1]);
    }
  }
  return 0;
}

/* A utf8/binary array at positions [first, first + count) holding the formula
 * with `seed` at logical index (position - shift), skipping nulls. */
static int check_varbin_values(const struct ArrowArray* a, const char* where,
                               const char* type, uint32_t seed, int64_t shift,
                               int64_t count, int64_t nulls, char* why, size_t size) {
  const int32_t* offsets = a->buffers[1];
  const char* data = a->buffers[2];
  for (int64_t i = 0; i < count; i++) {
    if (conf_is_null(nulls, i)) continue;
    int64_t p = i + shift;
    char expected[8];
    int n = conf_utf8_value(seed, i, expected);
    int64_t got_n = (int64_t)offsets[p + 1] - offsets[p];
    if (got_n != n) {
      return fail(why, size,
                  "%s: %s element %lld (physical %lld): expected %d bytes \"%.*s\", got "
                  "%lld bytes",
                  where, type, (long long)i, (long long)p, n, n, expected,
                  (long long)got_n);
    }
    if (n > 0 && data == NULL) return fail(why, size, "%s: data buffer is NULL", where);
    if (n > 0 && memcmp(data + offsets[p], expected, (size_t)n) != 0) {
      return fail(why, size,
                  "%s: %s element %lld (physical %lld): expected \"%.*s\", got \"%.*s\"",
                  where, type, (long long)i, (long long)p, n, expected, n,
                  data + offsets[p]);
    }
  }
  return 0;
}

static int check_int32_at(const int32_t* values, const char* where, int64_t i, int64_t p,
                          int32_t expected, char* why, size_t size) {
  if (values[p] != expected) {
    return fail(why, size, "%s: element %lld (physical %lld): expected %d, got %d", where,
                (long long)i, (long long)p, expected, values[p]);
  }
  return 0;
}

static int verify_host_array(const struct it_case* c, uint32_t seed,
                             const struct ArrowArray* a, char* why, size_t size) {
  enum conf_layout layout = conf_type_layout(c->type);
  const char* type = it_type_name(c->type);
  int64_t n_buffers = layout == LAYOUT_VARBIN ? 3 : layout == LAYOUT_STRUCT ? 1 : 2;
  int64_t n_children = layout == LAYOUT_LIST ? 1 : layout == LAYOUT_STRUCT ? 2 : 0;
  if (check_shape(a, "array", n_buffers, n_children, layout == LAYOUT_DICT, why, size) !=
      0) {
    return -1;
  }
  int64_t length = c->length, offset = c->offset;
  int64_t expected_nulls = conf_null_count(c->nulls, length);
  if (a->length != length) {
    return fail(why, size, "array: length %lld, expected %lld", (long long)a->length,
                (long long)length);
  }
  if (a->offset != offset) {
    return fail(why, size, "array: offset %lld, expected %lld", (long long)a->offset,
                (long long)offset);
  }
  if (a->null_count != expected_nulls) {
    return fail(why, size, "array: null_count %lld, expected %lld",
                (long long)a->null_count, (long long)expected_nulls);
  }
  /* "nulls 0: no validity bitmap (buffer 0 is NULL, null_count 0)". */
  const void* validity = a->buffers[0];
  if (c->nulls == 0 && validity != NULL) {
    return fail(why, size, "array: nulls=0 but buffer 0 (validity) is not NULL");
  }
  if (expected_nulls > 0 && validity == NULL) {
    return fail(why, size, "array: %lld nulls expected but buffer 0 (validity) is NULL",
                (long long)expected_nulls);
  }
  if (validity != NULL) {
    for (int64_t i = 0; i < length; i++) {
      int valid = bit_at(validity, i + offset);
      if (valid == conf_is_null(c->nulls, i)) {
        return fail(
            why, size,
            "array: validity bit of element %lld (physical %lld) is %d, expected %d",
            (long long)i, (long long)(i + offset), valid, !valid);
      }
    }
  }
  int64_t slots = offset + length;
  switch (layout) {
    case LAYOUT_FIXED: {
      int width = conf_type_width(c->type);
      const unsigned char* values = a->buffers[1];
      if (values == NULL && slots > 0)
        return fail(why, size, "array: data buffer is NULL");
      for (int64_t i = 0; i < length; i++) {
        if (conf_is_null(c->nulls, i)) continue;
        unsigned char expected[8];
        conf_fixed_value(c->type, seed, i, expected);
        const unsigned char* got = values + (i + offset) * width;
        if (memcmp(got, expected, (size_t)width) != 0) {
          char e[24], g[24];
          hex(expected, width, e, sizeof e);
          hex(got, width, g, sizeof g);
          return fail(why, size,
                      "%s element %lld (physical %lld): expected 0x%s, got 0x%s", type,
                      (long long)i, (long long)(i + offset), e, g);
        }
      }
      return 0;
    }
    case LAYOUT_BOOL: {
      const void* bits = a->buffers[1];
      if (bits == NULL && slots > 0) return fail(why, size, "array: data buffer is NULL");
      for (int64_t i = 0; i < length; i++) {
        if (conf_is_null(c->nulls, i)) continue;
        int got = bit_at(bits, i + offset);
        if (got != conf_bool_value(seed, i)) {
          return fail(why, size, "bool element %lld (physical %lld): expected %d, got %d",
                      (long long)i, (long long)(i + offset), !got, got);
        }
      }
      return 0;
    }
    case LAYOUT_VARBIN:
      if (check_offsets(a, "array", slots, why, size) != 0) return -1;
      return check_varbin_values(a, "array", type, seed, offset, length, c->nulls, why,
                                 size);
    case LAYOUT_LIST: {
      if (check_offsets(a, "array", slots, why, size) != 0) return -1;
      const int32_t* offsets = a->buffers[1];
      const struct ArrowArray* child = a->children[0];
      if (check_shape(child, "array.children[0]", 2, 0, 0, why, size) != 0) return -1;
      if (check_child_header(child, "array.children[0]", offsets[slots], why, size) !=
          0) {
        return -1;
      }
      const int32_t* items = child->buffers[1];
      if (items == NULL && child->length > 0) {
        return fail(why, size, "array.children[0]: data buffer is NULL");
      }
      for (int64_t i = 0; i < length; i++) {
        if (conf_is_null(c->nulls, i)) continue;
        int64_t p = i + offset;
        int64_t n = conf_u(seed, (uint64_t)i) % 4u;
        if ((int64_t)offsets[p + 1] - offsets[p] != n) {
          return fail(
              why, size,
              "list_int32 element %lld (physical %lld): expected %lld items, got %lld",
              (long long)i, (long long)p, (long long)n,
              (long long)offsets[p + 1] - offsets[p]);
        }
        for (int64_t j = offsets[p]; j < offsets[p + 1]; j++) {
          /* "the child ... indexed by its own position j (values u(j))" */
          if (check_int32_at(items, "array.children[0]", j, j,
                             (int32_t)conf_u(seed, (uint64_t)j), why, size) != 0) {
            return -1;
          }
        }
      }
      return 0;
    }
    case LAYOUT_STRUCT: {
      const struct ArrowArray* ca = a->children[0];
      const struct ArrowArray* cb = a->children[1];
      if (check_shape(ca, "array.children[0]", 2, 0, 0, why, size) != 0) return -1;
      if (check_child_header(ca, "array.children[0]", slots, why, size) != 0) return -1;
      if (check_shape(cb, "array.children[1]", 3, 0, 0, why, size) != 0) return -1;
      if (check_child_header(cb, "array.children[1]", slots, why, size) != 0) return -1;
      if (check_offsets(cb, "array.children[1]", cb->length, why, size) != 0) return -1;
      const int32_t* values = ca->buffers[1];
      if (values == NULL && slots > 0) {
        return fail(why, size, "array.children[0]: data buffer is NULL");
      }
      /* "the fields of struct element i are the child formulas at index i;
       * a producer with offset o stores them at child position i + o". */
      for (int64_t i = 0; i < length; i++) {
        if (conf_is_null(c->nulls, i)) continue;
        if (check_int32_at(values, "array.children[0] (a)", i, i + offset,
                           (int32_t)conf_u(seed, (uint64_t)i), why, size) != 0) {
          return -1;
        }
      }
      return check_varbin_values(cb, "array.children[1] (b)", "utf8", seed + 1u, offset,
                                 length, c->nulls, why, size);
    }
    case LAYOUT_DICT: {
      const int32_t* indices = a->buffers[1];
      if (indices == NULL && slots > 0)
        return fail(why, size, "array: indices buffer is NULL");
      for (int64_t i = 0; i < length; i++) {
        if (conf_is_null(c->nulls, i)) continue;
        if (check_int32_at(indices, "dict_int32_utf8 index", i, i + offset,
                           (int32_t)(conf_u(seed, (uint64_t)i) % 7u), why, size) != 0) {
          return -1;
        }
      }
      const struct ArrowArray* d = a->dictionary;
      if (check_shape(d, "array.dictionary", 3, 0, 0, why, size) != 0) return -1;
      if (check_child_header(d, "array.dictionary", 7, why, size) != 0) return -1;
      if (d->length != 7) {
        return fail(why, size, "array.dictionary: length %lld, expected 7",
                    (long long)d->length);
      }
      if (check_offsets(d, "array.dictionary", 7, why, size) != 0) return -1;
      const int32_t* offsets = d->buffers[1];
      const char* data = d->buffers[2];
      for (int k = 0; k < 7; k++) {
        char expected[3] = {'d', (char)('0' + k), 0};
        if (offsets[k + 1] - offsets[k] != 2 || data == NULL ||
            memcmp(data + offsets[k], expected, 2) != 0) {
          return fail(why, size,
                      "array.dictionary element %d: expected \"%s\", got \"%.*s\"", k,
                      expected, data ? (int)(offsets[k + 1] - offsets[k]) : 0,
                      data ? data + offsets[k] : "");
        }
      }
      return 0;
    }
  }
  return fail(why, size, "internal: unknown layout");
}

int verify_device_array(const struct it_case* c, uint32_t seed,
                        const struct ArrowSchema* schema, struct ArrowDeviceArray* array,
                        char* why, size_t size) {
  if (array->array.release == NULL) return fail(why, size, "device array is released");
  if (array->device_type != c->device_type) {
    return fail(why, size, "device_type %d (%s), the case says %s",
                (int)array->device_type, ferry_device_type_name(array->device_type),
                c->device_name);
  }
  if (!ferry_device_array_reserved_is_zero(array)) {
    return fail(why, size, "reserved words are not zero");
  }
  if (c->device_type == ARROW_DEVICE_CPU) {
    if (array->device_id != -1 && array->device_id != 0) {
      return fail(why, size, "CPU device_id %lld (expected -1 or 0)",
                  (long long)array->device_id);
    }
    if (array->sync_event != NULL)
      return fail(why, size, "CPU array with a non-NULL sync_event");
  }
  struct FerryError error;
  ferry_error_init(&error);
  struct FerryDevice* device = NULL;
  if (ferry_device_resolve(array->device_type, array->device_id, &device, &error) != 0) {
    return fail(why, size, "device (%d, %lld) does not resolve: %s",
                (int)array->device_type, (long long)array->device_id,
                ferry_error_message(&error));
  }
  /* "the device type of the array (and that sync_event was waited on
   * before the buffers were read)". */
  if (ferry_device_array_wait(array, NULL, &error) != 0) {
    return fail(why, size, "ferry_device_array_wait failed: %s",
                ferry_error_message(&error));
  }
  /* FERRY_CONFORMANCE_FORCE_COPY=1 reads every export through ferry's deep
   * copy to the CPU, the path a GPU needs, on host-accessible devices too. */
  const char* force = getenv("FERRY_CONFORMANCE_FORCE_COPY");
  int force_copy = force != NULL && strcmp(force, "1") == 0;
  if (ferry_device_is_host_accessible(device) && !(force_copy && schema != NULL)) {
    return verify_host_array(c, seed, &array->array, why, size);
  }
  struct ArrowDeviceArray copy;
  memset(&copy, 0, sizeof copy);
  if (ferry_device_array_copy(schema, array, ARROW_DEVICE_CPU, -1, &copy, &error) != 0) {
    return fail(why, size, "copy to the host failed: %s", ferry_error_message(&error));
  }
  if (copy.device_type != ARROW_DEVICE_CPU || copy.sync_event != NULL) {
    ferry_device_array_release(&copy);
    return fail(why, size, "ferry_device_array_copy made device_type %d, sync_event %p",
                (int)copy.device_type, copy.sync_event);
  }
  int rc = verify_host_array(c, seed, &copy.array, why, size);
  if (rc != 0) {
    size_t used = strlen(why);
    snprintf(why + used, size - used, " (read through ferry_device_array_copy)");
  }
  ferry_device_array_release(&copy);
  return rc;
}

int verify_with_core(const struct ArrowSchema* schema,
                     const struct ArrowDeviceArray* array, char* why, size_t size) {
  struct FerryError error;
  ferry_error_init(&error);
  if (ferry_validate_device_array(schema, array, FERRY_VALIDATE_FULL, NULL, NULL,
                                  &error) != 0) {
    return fail(why, size, "ferry_validate_device_array(FULL): %s",
                ferry_error_message(&error));
  }
  return 0;
}
