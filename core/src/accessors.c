/* Read-only accessors of the ABI structs, for bindings that must not compute
 * struct offsets themselves. Every accessor borrows its argument, accepts
 * NULL (answering 0 or NULL) and never dereferences anything beyond the
 * struct itself and, for metadata, the encoded blob. */
#include <string.h>

#include "accessors.h"
#include "internal.h"
#include "scan.h"

/* ---- ArrowSchema --------------------------------------------------------- */

/* Borrows `schema`; 1 when NULL or released. */
int ferry_schema_is_released(const struct ArrowSchema* schema) {
  return schema == NULL || schema->release == NULL;
}

/* Borrows `schema`; the string belongs to the schema. */
const char* ferry_schema_format(const struct ArrowSchema* schema) {
  return schema == NULL ? NULL : schema->format;
}

/* Borrows `schema`; the string belongs to the schema. */
const char* ferry_schema_name(const struct ArrowSchema* schema) {
  return schema == NULL ? NULL : schema->name;
}

/* Borrows `schema`; the blob belongs to the schema. */
const char* ferry_schema_metadata(const struct ArrowSchema* schema) {
  return schema == NULL ? NULL : schema->metadata;
}

/* Borrows `schema`. */
int64_t ferry_schema_flags(const struct ArrowSchema* schema) {
  return schema == NULL ? 0 : schema->flags;
}

/* Borrows `schema`. */
int64_t ferry_schema_n_children(const struct ArrowSchema* schema) {
  return schema == NULL ? 0 : schema->n_children;
}

/* Borrows `schema`; the child belongs to the schema. */
struct ArrowSchema* ferry_schema_child(const struct ArrowSchema* schema, int64_t i) {
  if (schema == NULL || schema->children == NULL || i < 0 || i >= schema->n_children) {
    return NULL;
  }
  return schema->children[i];
}

/* Borrows `schema`; the dictionary belongs to the schema. */
struct ArrowSchema* ferry_schema_dictionary(const struct ArrowSchema* schema) {
  return schema == NULL ? NULL : schema->dictionary;
}

/* The encoding is native-endian int32s at arbitrary alignment, so every
 * length is read with memcpy (an unaligned int32 load is undefined in C). */
static int32_t ferry_read_int32(const char* p) {
  int32_t v;
  memcpy(&v, p, sizeof(v));
  return v;
}

/* One pair of a metadata blob, as ferry_metadata_walk hands it to a visitor;
 * a visitor returns non-zero to stop the walk there. */
struct FerryMetadataPair {
  int32_t index;
  const char* key;
  int32_t key_len;
  const char* value;
  int32_t value_len;
};
typedef int (*FerryMetadataVisitor)(void* context, const struct FerryMetadataPair* pair);

/* Walks the metadata pair by pair, calling `visit` (when not NULL) on each
 * until it returns non-zero. Returns the number of pairs, or -1 when the
 * encoding is malformed before the walk stopped; `total_size` gets the
 * blob's size after a complete walk. Reads only bytes that the encoded
 * lengths before them say exist. */
static int64_t ferry_metadata_walk_limited(const char* metadata,
                                           FerryMetadataVisitor visit, void* context,
                                           int64_t* total_size, int limited,
                                           struct FerryMetadataProblem* problem) {
  if (metadata == NULL) {
    if (total_size != NULL) *total_size = 0;
    return 0;
  }
  int32_t n_pairs = ferry_read_int32(metadata);
  if (n_pairs < 0) return -1;
  /* The limits are checked before the count or length is used, so that an
   * implausible one is never followed. */
  if (limited && n_pairs > FERRY_METADATA_MAX_PAIRS) {
    problem->what = "pair count";
    problem->index = -1;
    problem->value = n_pairs;
    problem->limit = FERRY_METADATA_MAX_PAIRS;
    return -2;
  }
  const char* p = metadata + sizeof(int32_t);
  for (int32_t i = 0; i < n_pairs; i++) {
    struct FerryMetadataPair pair;
    pair.index = i;
    pair.key_len = ferry_read_int32(p);
    if (pair.key_len < 0) return -1;
    if (limited && pair.key_len > FERRY_METADATA_MAX_KEY_LENGTH) {
      problem->what = "key length";
      problem->index = i;
      problem->value = pair.key_len;
      problem->limit = FERRY_METADATA_MAX_KEY_LENGTH;
      return -2;
    }
    pair.key = p + sizeof(int32_t);
    p = pair.key + pair.key_len;
    pair.value_len = ferry_read_int32(p);
    if (pair.value_len < 0) return -1;
    if (limited && pair.value_len > FERRY_METADATA_MAX_VALUE_LENGTH) {
      problem->what = "value length";
      problem->index = i;
      problem->value = pair.value_len;
      problem->limit = FERRY_METADATA_MAX_VALUE_LENGTH;
      return -2;
    }
    pair.value = p + sizeof(int32_t);
    p = pair.value + pair.value_len;
    if (visit != NULL && visit(context, &pair)) return n_pairs;
  }
  if (total_size != NULL) *total_size = (int64_t)(p - metadata);
  return n_pairs;
}

static int64_t ferry_metadata_walk(const char* metadata, FerryMetadataVisitor visit,
                                   void* context, int64_t* total_size) {
  return ferry_metadata_walk_limited(metadata, visit, context, total_size, 0, NULL);
}

int64_t ferry__metadata_encoded_size(const char* metadata) {
  int64_t size = 0;
  if (ferry_metadata_walk(metadata, NULL, NULL, &size) < 0) return -1;
  return size;
}

/* Visitor: stops at the first key that is not valid UTF-8. */
static int ferry_metadata_find_bad_key(void* context, const struct FerryMetadataPair* pair) {
  struct FerryMetadataBadKey* bad = (struct FerryMetadataBadKey*)context;
  int64_t good = ferry__utf8_valid_prefix((const uint8_t*)pair->key, pair->key_len);
  if (good == pair->key_len) return 0;
  bad->index = pair->index;
  bad->byte_offset = good;
  bad->byte = (uint8_t)pair->key[good];
  return 1;
}

int ferry__metadata_check_keys(const char* metadata, struct FerryMetadataBadKey* bad,
                               struct FerryMetadataProblem* problem) {
  bad->index = -1;
  /* A complete walk first: a malformed pair after a bad key makes the whole
   * blob bad, and is the more basic finding. */
  int64_t n = ferry_metadata_walk_limited(metadata, NULL, NULL, NULL, 1, problem);
  if (n < 0) return (int)n;
  ferry_metadata_walk(metadata, ferry_metadata_find_bad_key, bad, NULL);
  return bad->index >= 0;
}

/* Borrows `schema`; -1 when the encoding is malformed. */
int64_t ferry_schema_metadata_count(const struct ArrowSchema* schema) {
  if (schema == NULL) return 0;
  return ferry_metadata_walk(schema->metadata, NULL, NULL, NULL);
}

/* Visitor: keeps pair `index` of the walk (context: a FerryMetadataPair
 * whose index says which). */
static int ferry_metadata_take_pair(void* context, const struct FerryMetadataPair* pair) {
  struct FerryMetadataPair* wanted = (struct FerryMetadataPair*)context;
  if (pair->index != wanted->index) return 0;
  *wanted = *pair;
  return 1;
}

/* Looks up pair i; 0 when out of range or malformed. */
static int ferry_metadata_pair(const struct ArrowSchema* schema, int64_t i,
                               const char** key, int32_t* key_len, const char** value,
                               int32_t* value_len) {
  if (schema == NULL || schema->metadata == NULL || i < 0) return 0;
  /* A full walk first: a malformed pair after i makes the whole blob bad. */
  int64_t n = ferry_metadata_walk(schema->metadata, NULL, NULL, NULL);
  if (n < 0 || i >= n) return 0;
  struct FerryMetadataPair pair;
  memset(&pair, 0, sizeof(pair));
  pair.index = (int32_t)i;
  ferry_metadata_walk(schema->metadata, ferry_metadata_take_pair, &pair, NULL);
  *key = pair.key;
  *key_len = pair.key_len;
  *value = pair.value;
  *value_len = pair.value_len;
  return 1;
}

/* Borrows `schema`; the key points into its metadata (not terminated). */
const char* ferry_schema_metadata_key(const struct ArrowSchema* schema, int64_t i,
                                      int32_t* length) {
  const char *key = NULL, *value = NULL;
  int32_t key_len = 0, value_len = 0;
  if (!ferry_metadata_pair(schema, i, &key, &key_len, &value, &value_len)) {
    if (length != NULL) *length = 0;
    return NULL;
  }
  if (length != NULL) *length = key_len;
  return key;
}

/* Borrows `schema`; the value points into its metadata (not terminated). */
const char* ferry_schema_metadata_value(const struct ArrowSchema* schema, int64_t i,
                                        int32_t* length) {
  const char *key = NULL, *value = NULL;
  int32_t key_len = 0, value_len = 0;
  if (!ferry_metadata_pair(schema, i, &key, &key_len, &value, &value_len)) {
    if (length != NULL) *length = 0;
    return NULL;
  }
  if (length != NULL) *length = value_len;
  return value;
}

/* ---- ArrowArray ---------------------------------------------------------- */

/* Borrows `array`; 1 when NULL or released. */
int ferry_array_is_released(const struct ArrowArray* array) {
  return array == NULL || array->release == NULL;
}

/* Borrows `array`. */
int64_t ferry_array_length(const struct ArrowArray* array) {
  return array == NULL ? 0 : array->length;
}

/* Borrows `array`. */
int64_t ferry_array_null_count(const struct ArrowArray* array) {
  return array == NULL ? 0 : array->null_count;
}

/* Borrows `array`. */
int64_t ferry_array_offset(const struct ArrowArray* array) {
  return array == NULL ? 0 : array->offset;
}

/* Borrows `array`. */
int64_t ferry_array_n_buffers(const struct ArrowArray* array) {
  return array == NULL ? 0 : array->n_buffers;
}

/* Borrows `array`. */
int64_t ferry_array_n_children(const struct ArrowArray* array) {
  return array == NULL ? 0 : array->n_children;
}

/* Borrows `array`; the buffer belongs to the array's producer. */
const void* ferry_array_buffer(const struct ArrowArray* array, int64_t i) {
  if (array == NULL || array->buffers == NULL || i < 0 || i >= array->n_buffers) {
    return NULL;
  }
  return array->buffers[i];
}

/* Borrows `array`; the child belongs to the array. */
struct ArrowArray* ferry_array_child(const struct ArrowArray* array, int64_t i) {
  if (array == NULL || array->children == NULL || i < 0 || i >= array->n_children) {
    return NULL;
  }
  return array->children[i];
}

/* Borrows `array`; the dictionary belongs to the array. */
struct ArrowArray* ferry_array_dictionary(const struct ArrowArray* array) {
  return array == NULL ? NULL : array->dictionary;
}

/* ---- ArrowDeviceArray ---------------------------------------------------- */

/* Borrows `array`; the embedded array is the same memory. */
struct ArrowArray* ferry_device_array_array(struct ArrowDeviceArray* array) {
  return array == NULL ? NULL : &array->array;
}

/* Borrows `array`; 1 when NULL or released. */
int ferry_device_array_is_released(const struct ArrowDeviceArray* array) {
  return array == NULL || array->array.release == NULL;
}

/* Borrows `array`. */
int64_t ferry_device_array_device_id(const struct ArrowDeviceArray* array) {
  return array == NULL ? 0 : array->device_id;
}

/* Borrows `array`. */
ArrowDeviceType ferry_device_array_device_type(const struct ArrowDeviceArray* array) {
  return array == NULL ? 0 : array->device_type;
}

/* Borrows `array`; the event belongs to the array's producer. */
void* ferry_device_array_sync_event(const struct ArrowDeviceArray* array) {
  return array == NULL ? NULL : array->sync_event;
}

/* Borrows `array`; 0 for NULL (there is nothing to vouch for). */
int ferry_device_array_reserved_is_zero(const struct ArrowDeviceArray* array) {
  if (array == NULL) return 0;
  return array->reserved[0] == 0 && array->reserved[1] == 0 && array->reserved[2] == 0;
}
