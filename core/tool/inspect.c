/* `ferry inspect`: prints what a producer exported, field by field, without
 * judging it (that is `ferry check`'s job); broken fields are shown as they
 * are, NULL pointers are never followed. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "tool.h"

#define INSPECT_MAX_DEPTH 64

static const char* indent(int depth) {
  static const char spaces[] =
      "                                                                "
      "                                                                ";
  int n = depth * 2;
  if (n > (int)sizeof spaces - 1) n = (int)sizeof spaces - 1;
  return spaces + (sizeof spaces - 1 - (size_t)n);
}

static void describe_flags(int64_t flags, char* out, size_t out_size) {
  snprintf(out, out_size, "%s%s%s", (flags & ARROW_FLAG_NULLABLE) ? " nullable" : "",
           (flags & ARROW_FLAG_DICTIONARY_ORDERED) ? " dictionary_ordered" : "",
           (flags & ARROW_FLAG_MAP_KEYS_SORTED) ? " map_keys_sorted" : "");
}

/* Prints the one line that stands for a node not shown (a NULL pointer, a
 * released struct, or one past INSPECT_MAX_DEPTH) and returns 1; returns 0
 * when the node is to be printed. `kind` is "schema" or "array". */
static int print_if_not_shown(const void* node, int released, const char* kind,
                              const char* where, int depth) {
  if (node == NULL) {
    tool_out("%s%s: (NULL %s pointer)", indent(depth), where, kind);
  } else if (released) {
    tool_out("%s%s: (released %s)", indent(depth), where, kind);
  } else if (depth > INSPECT_MAX_DEPTH) {
    tool_out("%s%s: (deeper than %d levels, not shown)", indent(depth), where,
             INSPECT_MAX_DEPTH);
  } else {
    return 0;
  }
  return 1;
}

void tool_print_schema(const struct ArrowSchema* schema, const char* where, int depth) {
  if (print_if_not_shown(schema, schema != NULL && schema->release == NULL, "schema",
                         where, depth)) {
    return;
  }
  char flags[96];
  describe_flags(schema->flags, flags, sizeof flags);
  tool_out("%s%s: format \"%s\" name \"%s\" flags 0x%" PRIx64 "%s n_children %" PRId64,
           indent(depth), where, schema->format ? schema->format : "(NULL)",
           schema->name ? schema->name : "(NULL)", (uint64_t)schema->flags, flags,
           schema->n_children);
  int64_t n_metadata = ferry_schema_metadata_count(schema);
  if (n_metadata < 0) {
    tool_out("%s  metadata: (malformed encoding)", indent(depth));
  }
  for (int64_t i = 0; i < n_metadata; i++) {
    int32_t key_length = 0, value_length = 0;
    const char* key = ferry_schema_metadata_key(schema, i, &key_length);
    const char* value = ferry_schema_metadata_value(schema, i, &value_length);
    if (key == NULL || value == NULL) break;
    tool_out("%s  metadata \"%.*s\" = \"%.*s\"", indent(depth), (int)key_length, key,
             (int)value_length, value);
  }
  if (schema->n_children > 0 && schema->children == NULL) {
    tool_out("%s  (children pointer is NULL)", indent(depth));
  } else {
    for (int64_t i = 0; i < schema->n_children; i++) {
      char child_where[1024];
      snprintf(child_where, sizeof child_where, "%s.children[%" PRId64 "]", where, i);
      tool_print_schema(schema->children[i], child_where, depth + 1);
    }
  }
  if (schema->dictionary != NULL) {
    char child_where[1024];
    snprintf(child_where, sizeof child_where, "%s.dictionary", where);
    tool_print_schema(schema->dictionary, child_where, depth + 1);
  }
}

static void print_array(const struct ArrowSchema* schema, const struct ArrowArray* array,
                        const struct ArrowDeviceArray* device_array, const char* where,
                        int depth) {
  if (print_if_not_shown(array, array != NULL && array->release == NULL, "array", where,
                         depth)) {
    return;
  }
  int schema_ok = schema != NULL && schema->release != NULL;
  tool_out("%s%s: format \"%s\" length %" PRId64 " null_count %" PRId64 " offset %" PRId64
           " n_buffers %" PRId64 " n_children %" PRId64,
           indent(depth), where,
           schema_ok && schema->format != NULL ? schema->format : "?", array->length,
           array->null_count, array->offset, array->n_buffers, array->n_children);
  if (array->n_buffers > 0 && array->buffers == NULL) {
    tool_out("%s  (buffers pointer is NULL)", indent(depth));
  } else {
    for (int64_t i = 0; i < array->n_buffers; i++) {
      const void* buffer = array->buffers[i];
      int64_t size = -1;
      struct FerryError error;
      ferry_error_init(&error);
      if (buffer != NULL && schema_ok &&
          ferry_array_buffer_size(schema, array, device_array->device_type,
                                  device_array->device_id, i, &size,
                                  &error) == FERRY_OK) {
        tool_out("%s  buffer %" PRId64 ": %p (%" PRId64 " bytes)", indent(depth), i,
                 buffer, size);
      } else if (buffer != NULL) {
        tool_out("%s  buffer %" PRId64 ": %p (size unknown: %s)", indent(depth), i,
                 buffer, schema_ok ? error.message : "no schema");
      } else {
        tool_out("%s  buffer %" PRId64 ": NULL", indent(depth), i);
      }
    }
  }
  if (array->n_children > 0 && array->children == NULL) {
    tool_out("%s  (children pointer is NULL)", indent(depth));
  } else {
    for (int64_t i = 0; i < array->n_children; i++) {
      const struct ArrowSchema* child_schema = NULL;
      if (schema_ok && schema->children != NULL && i < schema->n_children) {
        child_schema = schema->children[i];
      }
      char child_where[1024];
      snprintf(child_where, sizeof child_where, "%s.children[%" PRId64 "]", where, i);
      print_array(child_schema, array->children[i], device_array, child_where, depth + 1);
    }
  }
  if (array->dictionary != NULL) {
    char child_where[1024];
    snprintf(child_where, sizeof child_where, "%s.dictionary", where);
    print_array(schema_ok ? schema->dictionary : NULL, array->dictionary, device_array,
                child_where, depth + 1);
  }
}

void tool_print_device_array(const struct ArrowSchema* schema,
                             const struct ArrowDeviceArray* array) {
  tool_out("device: %s (device_type %d) device_id %" PRId64 " sync_event %p",
           ferry_device_type_name(array->device_type), (int)array->device_type,
           array->device_id, array->sync_event);
  tool_out("reserved: 0x%" PRIx64 " 0x%" PRIx64 " 0x%" PRIx64,
           (uint64_t)array->reserved[0], (uint64_t)array->reserved[1],
           (uint64_t)array->reserved[2]);
  tool_out("array:");
  print_array(schema, &array->array, array, "root", 1);
}
