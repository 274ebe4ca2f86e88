/* Producer helpers: filling ArrowSchema, ArrowArray and ArrowDeviceArray
 * structs whose release callbacks are ferry's, so bindings export without
 * writing C callbacks of their own.
 *
 * Live-export accounting: every struct that one of ferry's init functions
 * fills with a ferry release callback counts as one live export until that
 * callback runs: ferry_schema_init, ferry_array_init, ferry_array_stream_init (and
 * ferry_array_stream_init_from_arrays), and ferry_device_array_init when it wraps
 * the array to run an event_release hook. Children and dictionaries count
 * only if they were themselves filled by a ferry init function (the zeroed
 * slots ferry allocates do not count), so an export tree of k ferry-made
 * nodes counts k, and any leak anywhere in it shows up in the total.
 *
 * Memory: an array export costs exactly one allocation (private data, the
 * buffer pointer table, the child pointer table and the child structs in one
 * block). Blocks of the common shape (<= 3 buffers, no children) are recycled
 * through a small per-thread free list (thread_state.h, with the per-thread
 * live-export counters), which is what keeps an export + release close to
 * the cost of moving the 128-byte struct. */
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "accessors.h"
#include "internal.h"
#include "leak.h"
#include "producer.h"
#include "thread_state.h"
#include "word_copy.h"

/* ---- Schemas --------------------------------------------------------------- */

struct FerrySchemaPrivate {
  char* metadata; /* separately allocated: it grows with add_metadata */
  int64_t metadata_size;
  struct ArrowSchema* dictionary; /* allocated by allocate_dictionary */
  int64_t n_children;
  struct ArrowSchema** children; /* points into this block */
  /* Followed in the same block by: child pointers, child structs, format
   * and name strings. */
};

static void ferry_schema_release_private(struct ArrowSchema* schema) {
  struct FerrySchemaPrivate* priv = (struct FerrySchemaPrivate*)schema->private_data;
  for (int64_t i = 0; i < priv->n_children; i++) {
    struct ArrowSchema* child = priv->children[i];
    if (child->release != NULL) child->release(child);
  }
  if (priv->dictionary != NULL) {
    if (priv->dictionary->release != NULL) priv->dictionary->release(priv->dictionary);
    free(priv->dictionary);
  }
  free(priv->metadata);
  if (ferry__leak_enabled()) ferry__leak_export_remove(priv);
  free(priv);
  ferry__live_add(-1);
  schema->release = NULL;
}

static struct FerrySchemaPrivate* ferry_schema_private(const struct ArrowSchema* schema) {
  if (schema == NULL || schema->release != ferry_schema_release_private) return NULL;
  return (struct FerrySchemaPrivate*)schema->private_data;
}

/* Fills released `out` with a schema owning copies of `format` and `name`
 * and n_children zeroed child slots; the caller releases `out`. */
int ferry_schema_init(struct ArrowSchema* out, const char* format, const char* name,
                      int64_t flags, int64_t n_children, struct FerryError* error) {
  if (out == NULL)
    return ferry__set_error(error, EINVAL, "ferry_schema_init: out is NULL");
  if (out->release != NULL) {
    return ferry__set_error(error, EINVAL,
                           "ferry_schema_init: out is a live schema (release it first)");
  }
  memset(out, 0, sizeof(*out));
  if (format == NULL) {
    return ferry__set_error(error, EINVAL, "ferry_schema_init: format is NULL");
  }
  /* The bound keeps the size arithmetic below far from overflow. */
  if (n_children < 0 || n_children > (INT64_C(1) << 32)) {
    return ferry__set_error(
        error, EINVAL, "ferry_schema_init: n_children must be in [0, 2^32] (got %lld)",
        (long long)n_children);
  }
  size_t format_len = strlen(format) + 1;
  size_t name_len = name == NULL ? 0 : strlen(name) + 1;
  size_t size =
      sizeof(struct FerrySchemaPrivate) +
      (size_t)n_children * (sizeof(struct ArrowSchema*) + sizeof(struct ArrowSchema)) +
      format_len + name_len;
  struct FerrySchemaPrivate* priv = (struct FerrySchemaPrivate*)calloc(1, size);
  if (priv == NULL) {
    return ferry__set_error(error, ENOMEM, "ferry_schema_init: out of memory (%zu bytes)",
                           size);
  }
  char* cursor = (char*)(priv + 1);
  priv->n_children = n_children;
  priv->children = (struct ArrowSchema**)cursor;
  cursor += (size_t)n_children * sizeof(struct ArrowSchema*);
  struct ArrowSchema* child_structs = (struct ArrowSchema*)cursor;
  cursor += (size_t)n_children * sizeof(struct ArrowSchema);
  for (int64_t i = 0; i < n_children; i++) priv->children[i] = &child_structs[i];
  memcpy(cursor, format, format_len);
  out->format = cursor;
  cursor += format_len;
  if (name != NULL) {
    memcpy(cursor, name, name_len);
    out->name = cursor;
  }
  out->flags = flags;
  out->n_children = n_children;
  out->children = n_children > 0 ? priv->children : NULL;
  out->private_data = priv;
  out->release = ferry_schema_release_private;
  ferry__live_add(1);
  if (ferry__leak_enabled()) {
    ferry__leak_export_add(priv, "schema of format \"%s\"%s%s%s (%lld children)", format,
                           name != NULL ? " named \"" : "", name != NULL ? name : "",
                           name != NULL ? "\"" : "", (long long)n_children);
  }
  return FERRY_OK;
}

/* Appends copies of `key` and `value` to the metadata of ferry-made `schema`. */
int ferry_schema_add_metadata(struct ArrowSchema* schema, const char* key,
                              const char* value, struct FerryError* error) {
  struct FerrySchemaPrivate* priv = ferry_schema_private(schema);
  if (priv == NULL) {
    return ferry__set_error(error, EINVAL,
                           "ferry_schema_add_metadata: the schema was not made by "
                           "ferry_schema_init (or is released)");
  }
  if (key == NULL || value == NULL) {
    return ferry__set_error(error, EINVAL, "ferry_schema_add_metadata: %s is NULL",
                           key == NULL ? "key" : "value");
  }
  size_t key_len = strlen(key), value_len = strlen(value);
  if (key_len > INT32_MAX / 2 || value_len > INT32_MAX / 2) {
    return ferry__set_error(
        error, EINVAL, "ferry_schema_add_metadata: key or value longer than 2^30 bytes");
  }
  int64_t old_size =
      priv->metadata != NULL ? priv->metadata_size : (int64_t)sizeof(int32_t);
  int64_t new_size =
      old_size + 2 * (int64_t)sizeof(int32_t) + (int64_t)key_len + (int64_t)value_len;
  if (new_size > INT32_MAX) {
    return ferry__set_error(error, EINVAL,
                           "ferry_schema_add_metadata: metadata over 2 GiB");
  }
  /* Read before realloc: afterwards the old pointer may not even be compared. */
  int had_metadata = priv->metadata != NULL;
  char* metadata = (char*)realloc(priv->metadata, (size_t)new_size);
  if (metadata == NULL) {
    return ferry__set_error(error, ENOMEM, "ferry_schema_add_metadata: out of memory");
  }
  int32_t n_pairs = 0;
  if (had_metadata) memcpy(&n_pairs, metadata, sizeof(n_pairs));
  n_pairs++;
  memcpy(metadata, &n_pairs, sizeof(n_pairs));
  char* p = metadata + old_size;
  int32_t len32 = (int32_t)key_len;
  memcpy(p, &len32, sizeof(len32));
  p += sizeof(len32);
  memcpy(p, key, key_len);
  p += key_len;
  len32 = (int32_t)value_len;
  memcpy(p, &len32, sizeof(len32));
  p += sizeof(len32);
  memcpy(p, value, value_len);
  priv->metadata = metadata;
  priv->metadata_size = new_size;
  schema->metadata = metadata;
  return FERRY_OK;
}

int ferry__schema_set_metadata_encoded(struct ArrowSchema* schema, const char* metadata,
                                      int64_t size, struct FerryError* error) {
  struct FerrySchemaPrivate* priv = ferry_schema_private(schema);
  if (priv == NULL) {
    return ferry__set_error(error, EINVAL, "the schema was not made by ferry_schema_init");
  }
  char* copy = NULL;
  if (metadata != NULL && size > 0) {
    copy = (char*)malloc((size_t)size);
    if (copy == NULL)
      return ferry__set_error(error, ENOMEM, "out of memory copying metadata");
    memcpy(copy, metadata, (size_t)size);
  }
  free(priv->metadata);
  priv->metadata = copy;
  priv->metadata_size = copy == NULL ? 0 : size;
  schema->metadata = copy;
  return FERRY_OK;
}

/* What ferry_schema_allocate_dictionary and ferry_array_allocate_dictionary
 * share: the checks (the struct is ferry-made, `dictionary_out` is given, no
 * dictionary yet) and a zeroed allocation of `size` bytes into *allocated.
 * `kind` ("schema", "array") and `init_function` name what the messages of
 * `function` speak of. */
static int ferry_allocate_dictionary(int made_by_ferry, int has_dictionary, int out_given,
                                     size_t size, const char* function, const char* kind,
                                     const char* init_function, void** allocated,
                                     struct FerryError* error) {
  if (!made_by_ferry) {
    return ferry__set_error(error, EINVAL,
                           "%s: the %s was not made by %s (or is released)", function,
                           kind, init_function);
  }
  if (!out_given) {
    return ferry__set_error(error, EINVAL, "%s: dictionary_out is NULL", function);
  }
  if (has_dictionary) {
    return ferry__set_error(error, EINVAL, "%s: the %s already has a dictionary",
                           function, kind);
  }
  *allocated = calloc(1, size);
  if (*allocated == NULL) {
    return ferry__set_error(error, ENOMEM, "%s: out of memory", function);
  }
  return FERRY_OK;
}

/* Gives ferry-made `schema` a zeroed dictionary slot it owns; the caller
 * fills it through `*dictionary_out` (borrowed). */
int ferry_schema_allocate_dictionary(struct ArrowSchema* schema,
                                     struct ArrowSchema** dictionary_out,
                                     struct FerryError* error) {
  struct FerrySchemaPrivate* priv = ferry_schema_private(schema);
  void* dictionary = NULL;
  FERRY_RETURN_NOT_OK(ferry_allocate_dictionary(
      priv != NULL, priv != NULL && priv->dictionary != NULL, dictionary_out != NULL,
      sizeof(struct ArrowSchema), "ferry_schema_allocate_dictionary", "schema",
      "ferry_schema_init", &dictionary, error));
  priv->dictionary = dictionary;
  schema->dictionary = dictionary;
  *dictionary_out = dictionary;
  return FERRY_OK;
}

/* Deepest nesting ferry__schema_deep_copy follows: far beyond any real
 * schema, it only stops a cyclic tree from exhausting the stack. */
#define FERRY_SCHEMA_COPY_MAX_DEPTH 200

static int ferry_schema_deep_copy_at(const struct ArrowSchema* src,
                                     struct ArrowSchema* out, int depth,
                                     struct FerryError* error) {
  if (depth > FERRY_SCHEMA_COPY_MAX_DEPTH) {
    return ferry__set_error(error, EINVAL,
                           "cannot copy a schema nested deeper than %d levels (a cycle?)",
                           FERRY_SCHEMA_COPY_MAX_DEPTH);
  }
  if (src == NULL || src->release == NULL) {
    return ferry__set_error(error, EINVAL, "cannot copy a NULL or released schema");
  }
  if (src->format == NULL) {
    return ferry__set_error(error, EINVAL, "cannot copy a schema whose format is NULL");
  }
  if (src->n_children < 0 || (src->n_children > 0 && src->children == NULL)) {
    return ferry__set_error(error, EINVAL,
                           "cannot copy a schema with a bad children list");
  }
  FERRY_RETURN_NOT_OK(
      ferry_schema_init(out, src->format, src->name, src->flags, src->n_children, error));
  int rc = FERRY_OK;
  if (src->metadata != NULL) {
    int64_t size = ferry__metadata_encoded_size(src->metadata);
    if (size < 0) {
      rc = ferry__set_error(error, EINVAL, "cannot copy a schema with malformed metadata");
      goto fail;
    }
    rc = ferry__schema_set_metadata_encoded(out, src->metadata, size, error);
    if (rc != FERRY_OK) goto fail;
  }
  for (int64_t i = 0; i < src->n_children; i++) {
    rc = ferry_schema_deep_copy_at(src->children[i], out->children[i], depth + 1, error);
    if (rc != FERRY_OK) goto fail;
  }
  if (src->dictionary != NULL) {
    struct ArrowSchema* dictionary;
    rc = ferry_schema_allocate_dictionary(out, &dictionary, error);
    if (rc != FERRY_OK) goto fail;
    rc = ferry_schema_deep_copy_at(src->dictionary, dictionary, depth + 1, error);
    if (rc != FERRY_OK) goto fail;
  }
  return FERRY_OK;
fail:
  out->release(out);
  return rc;
}

int ferry__schema_deep_copy(const struct ArrowSchema* src, struct ArrowSchema* out,
                           struct FerryError* error) {
  return ferry_schema_deep_copy_at(src, out, 0, error);
}

/* ---- Arrays ---------------------------------------------------------------- */

#define FERRY_INLINE_BUFFERS 3

/* The private block of an array. Two shapes, told apart by the release
 * callback: small (<= 3 buffers, no children; recycled through the free
 * list, released by ferry_array_release_small) and large (anything else;
 * calloc'ed, released by ferry_array_release_large). A small block on the
 * free list always has dictionary == NULL, n_children == 0 and children ==
 * NULL (release keeps it so), which lets the export fast path skip those
 * stores; its first word (`hook`) is the free-list link. */
struct FerryArrayPrivate {
  FerryReleaseHook hook;
  void* user_data;
  struct ArrowArray* dictionary; /* allocated by allocate_dictionary */
  int64_t n_children;
  struct ArrowArray** children; /* points into this block */
  const void* inline_buffers[FERRY_INLINE_BUFFERS];
  /* Larger shapes continue in the same block with the buffer pointer
   * table (when n_buffers > 3), child pointers and child structs. */
};

/* Releases and frees the dictionary slot of `priv`, leaving it NULL. */
__attribute__((noinline)) static void ferry_array_release_dictionary(
    struct FerryArrayPrivate* priv) {
  if (priv->dictionary->release != NULL) priv->dictionary->release(priv->dictionary);
  free(priv->dictionary);
  priv->dictionary = NULL;
}

static void ferry_array_release_large(struct ArrowArray* array) {
  struct FerryArrayPrivate* priv = (struct FerryArrayPrivate*)array->private_data;
  /* Children first (those the consumer moved out are released already),
   * then the dictionary, then the producer's hook: the hook may free the
   * buffers the children point into. */
  for (int64_t i = 0; i < priv->n_children; i++) {
    struct ArrowArray* child = priv->children[i];
    if (child->release != NULL) child->release(child);
  }
  if (priv->dictionary != NULL) ferry_array_release_dictionary(priv);
  if (priv->hook != NULL) priv->hook(priv->user_data);
  if (ferry__leak_enabled()) ferry__leak_export_remove(priv);
  free(priv);
  ferry__live_add(-1);
  array->release = NULL;
}

/* ferry_array_release_small when the array has a dictionary, the free list
 * is full or the thread is not registered. */
__attribute__((noinline)) static void ferry_array_release_small_slow(
    struct ArrowArray* array) {
  struct FerryArrayPrivate* priv = (struct FerryArrayPrivate*)array->private_data;
  if (priv->dictionary != NULL) ferry_array_release_dictionary(priv);
  FerryReleaseHook hook = priv->hook;
  void* user_data = priv->user_data;
  if (ferry__leak_enabled()) ferry__leak_export_remove(priv);
  struct FerryThreadState* state = &ferry__thread_state;
  if (state->free_room > 0) {
    ferry__small_block_recycle(state, priv);
  } else {
    free(priv);
    ferry__live_add(-1);
  }
  array->release = NULL;
  if (hook != NULL) hook(user_data);
}

/* The release half of every small handoff. The producer's hook runs last,
 * as a tail call, so the fast path needs no stack frame; only the hook and
 * its user_data are read from the block before it is recycled, so a hook
 * that exports again on this thread may reuse the block at once. */
static void ferry_array_release_small(struct ArrowArray* array) {
  struct FerryArrayPrivate* priv = (struct FerryArrayPrivate*)array->private_data;
  struct FerryThreadState* state = &ferry__thread_state;
  if (__builtin_expect(priv->dictionary != NULL || state->free_room <= 0, 0)) {
    ferry_array_release_small_slow(array);
    return;
  }
  FerryReleaseHook hook = priv->hook;
  void* user_data = priv->user_data;
  ferry__small_block_recycle(state, priv);
  array->release = NULL;
  if (hook != NULL) hook(user_data);
}

static struct FerryArrayPrivate* ferry_array_private(const struct ArrowArray* array) {
  if (array == NULL || (array->release != ferry_array_release_small &&
                        array->release != ferry_array_release_large)) {
    return NULL;
  }
  return (struct FerryArrayPrivate*)array->private_data;
}

/* The argument checks of ferry_array_init, kept out of line: the hot path
 * only tests one combined condition and comes here to find the message. */
__attribute__((noinline, cold)) static int ferry_array_init_invalid(
    const struct ArrowArray* out, int64_t length, int64_t null_count, int64_t offset,
    int64_t n_buffers, int64_t n_children, struct FerryError* error) {
  if (out == NULL) return ferry__set_error(error, EINVAL, "ferry_array_init: out is NULL");
  if (out->release != NULL) {
    return ferry__set_error(error, EINVAL,
                           "ferry_array_init: out is a live array (release it first)");
  }
  if (length < 0 || offset < 0 || null_count < -1) {
    return ferry__set_error(
        error, EINVAL,
        "ferry_array_init: length (%lld) and offset (%lld) must be >= 0 "
        "and null_count (%lld) >= -1",
        (long long)length, (long long)offset, (long long)null_count);
  }
  return ferry__set_error(error, EINVAL,
                         "ferry_array_init: n_buffers (%lld) and n_children (%lld) must "
                         "be in [0, 2^32]",
                         (long long)n_buffers, (long long)n_children);
}

/* Allocates the private block of an array with more than 3 buffers or with
 * children: one zeroed block holding the buffer table, the child pointer
 * table and the child structs. */
__attribute__((noinline)) static struct FerryArrayPrivate*
ferry_array_private_alloc_large(int64_t n_buffers, int64_t n_children,
                                const void*** buffer_table) {
  size_t extra_buffers = n_buffers > FERRY_INLINE_BUFFERS ? (size_t)n_buffers : 0;
  size_t size =
      sizeof(struct FerryArrayPrivate) + extra_buffers * sizeof(void*) +
      (size_t)n_children * (sizeof(struct ArrowArray*) + sizeof(struct ArrowArray));
  struct FerryArrayPrivate* priv = (struct FerryArrayPrivate*)calloc(1, size);
  if (priv == NULL) return NULL;
  char* cursor = (char*)(priv + 1);
  *buffer_table = extra_buffers > 0 ? (const void**)cursor : priv->inline_buffers;
  cursor += extra_buffers * sizeof(void*);
  priv->n_children = n_children;
  priv->children = (struct ArrowArray**)cursor;
  cursor += (size_t)n_children * sizeof(struct ArrowArray*);
  struct ArrowArray* child_structs = (struct ArrowArray*)cursor;
  for (int64_t i = 0; i < n_children; i++) priv->children[i] = &child_structs[i];
  return priv;
}

/* The arguments of ferry_array_init, gathered for its out-of-line part. */
struct FerryArrayInitArgs {
  struct ArrowArray* out;
  int64_t length, null_count, offset, n_buffers;
  const void* const* buffers;
  int64_t n_children;
  FerryReleaseHook release_hook;
  void* user_data;
  struct FerryError* error;
};

/* ferry_array_init for every case: argument errors, any shape, a NULL
 * buffer list, an empty free list. It takes its arguments as one struct so
 * that ferry_array_init's fast path has no stack frame at all: a tail call
 * passing four stack arguments made gcc copy them to saved registers on
 * every call, fast path included. */
__attribute__((noinline)) static int ferry_array_init_general(
    const struct FerryArrayInitArgs* args) {
  struct ArrowArray* out = args->out;
  int64_t length = args->length, null_count = args->null_count, offset = args->offset;
  int64_t n_buffers = args->n_buffers, n_children = args->n_children;
  const void* const* buffers = args->buffers;
  struct FerryError* error = args->error;
  /* Unsigned compares fold "< 0 || > 2^32" into one test each. */
  if (__builtin_expect(out == NULL || out->release != NULL || length < 0 || offset < 0 ||
                           null_count < -1 || (uint64_t)n_buffers > (UINT64_C(1) << 32) ||
                           (uint64_t)n_children > (UINT64_C(1) << 32),
                       0)) {
    return ferry_array_init_invalid(out, length, null_count, offset, n_buffers,
                                    n_children, error);
  }
  struct FerryArrayPrivate* priv;
  const void** buffer_table;
  int small = n_buffers <= FERRY_INLINE_BUFFERS && n_children == 0;
  if (small) {
    priv = (struct FerryArrayPrivate*)ferry__small_block_alloc(sizeof(*priv));
    if (priv == NULL) goto out_of_memory;
    /* A recycled block has these already; a fresh one needs them. */
    priv->dictionary = NULL;
    priv->n_children = 0;
    priv->children = NULL;
    buffer_table = priv->inline_buffers;
  } else {
    priv = ferry_array_private_alloc_large(n_buffers, n_children, &buffer_table);
    if (priv == NULL) goto out_of_memory;
  }
  priv->hook = args->release_hook;
  priv->user_data = args->user_data;
  for (int64_t i = 0; i < n_buffers; i++) {
    buffer_table[i] = buffers != NULL ? buffers[i] : NULL;
  }
  out->length = length;
  out->null_count = null_count;
  out->offset = offset;
  out->n_buffers = n_buffers;
  out->n_children = n_children;
  out->buffers = buffer_table;
  out->children = n_children > 0 ? priv->children : NULL;
  out->dictionary = NULL;
  out->private_data = priv;
  out->release = small ? ferry_array_release_small : ferry_array_release_large;
  ferry__live_add(1);
  if (ferry__leak_enabled()) {
    ferry__leak_export_add(priv, "array of length %lld (offset %lld, %lld buffers, %lld children)",
                           (long long)length, (long long)offset, (long long)n_buffers,
                           (long long)n_children);
  }
  return FERRY_OK;
out_of_memory:
  return ferry__set_error(error, ENOMEM, "ferry_array_init: out of memory");
}

/* Fills released `out` with an array borrowing the caller's buffers and
 * owning n_children zeroed child slots; `release_hook(user_data)` runs once
 * when the consumer releases it. */
int ferry_array_init(struct ArrowArray* out, int64_t length, int64_t null_count,
                     int64_t offset, int64_t n_buffers, const void* const* buffers,
                     int64_t n_children, FerryReleaseHook release_hook, void* user_data,
                     struct FerryError* error) {
  /* The fast path: valid arguments, the common shape (<= 3 buffers given,
   * no children) and a recycled block at hand. It makes no calls, so it
   * needs no stack frame; everything else goes to the general version.
   * A non-empty free list implies the
   * thread is registered. Every check of the general version is made here
   * too (or implied: n_buffers <= 3 is within [0, 2^32]). */
  struct FerryThreadState* state = &ferry__thread_state;
  struct FerryArrayPrivate* priv = (struct FerryArrayPrivate*)state->free_head;
  if (__builtin_expect(priv == NULL || out == NULL || out->release != NULL ||
                           length < 0 || offset < 0 || null_count < -1 ||
                           (uint64_t)n_buffers > FERRY_INLINE_BUFFERS ||
                           n_children != 0 || buffers == NULL,
                       0)) {
    struct FerryArrayInitArgs args = {out,       length,  null_count, offset,
                                      n_buffers, buffers, n_children, release_hook,
                                      user_data, error};
    return ferry_array_init_general(&args);
  }
  state->free_head = *(void**)priv;
  state->free_room++;
  priv->hook = release_hook;
  priv->user_data = user_data;
  /* Only the slots in use are written: nothing reads past n_buffers
   * (ferry_array_set_buffer checks the index). */
  const void** table = priv->inline_buffers;
  if (n_buffers > 0) {
    table[0] = buffers[0];
    if (n_buffers > 1) {
      table[1] = buffers[1];
      if (n_buffers > 2) table[2] = buffers[2];
    }
  }
  out->length = length;
  out->null_count = null_count;
  out->offset = offset;
  out->n_buffers = n_buffers;
  out->n_children = 0;
  out->buffers = table;
  out->children = NULL;
  out->dictionary = NULL;
  out->private_data = priv;
  out->release = ferry_array_release_small;
  ferry__live_count_here(state, 1);
  return FERRY_OK;
}

/* Sets buffer i of ferry-made `array` to the borrowed pointer `buffer`. */
int ferry_array_set_buffer(struct ArrowArray* array, int64_t i, const void* buffer,
                           struct FerryError* error) {
  if (ferry_array_private(array) == NULL) {
    return ferry__set_error(error, EINVAL,
                           "ferry_array_set_buffer: the array was not made by "
                           "ferry_array_init (or is released)");
  }
  if (i < 0 || i >= array->n_buffers) {
    return ferry__set_error(error, EINVAL,
                           "ferry_array_set_buffer: buffer index %lld out of range "
                           "(n_buffers %lld)",
                           (long long)i, (long long)array->n_buffers);
  }
  array->buffers[i] = buffer;
  return FERRY_OK;
}

/* Gives ferry-made `array` a zeroed dictionary slot it owns; the caller
 * fills it through `*dictionary_out` (borrowed). */
int ferry_array_allocate_dictionary(struct ArrowArray* array,
                                    struct ArrowArray** dictionary_out,
                                    struct FerryError* error) {
  struct FerryArrayPrivate* priv = ferry_array_private(array);
  void* dictionary = NULL;
  FERRY_RETURN_NOT_OK(ferry_allocate_dictionary(
      priv != NULL, priv != NULL && priv->dictionary != NULL, dictionary_out != NULL,
      sizeof(struct ArrowArray), "ferry_array_allocate_dictionary", "array",
      "ferry_array_init", &dictionary, error));
  priv->dictionary = dictionary;
  array->dictionary = dictionary;
  *dictionary_out = dictionary;
  return FERRY_OK;
}

/* ---- Device arrays --------------------------------------------------------- */

/* Ties an event_release hook to the array's release: the consumer sees a
 * copy of the original array whose release releases the original (kept
 * here) and then runs the hook. */
struct FerryEventWrapper {
  struct ArrowArray inner;
  FerryReleaseHook hook;
  void* user_data;
};

static void ferry_event_wrapper_release(struct ArrowArray* array) {
  struct FerryEventWrapper* wrapper = (struct FerryEventWrapper*)array->private_data;
  if (wrapper->inner.release != NULL) wrapper->inner.release(&wrapper->inner);
  wrapper->hook(wrapper->user_data);
  if (ferry__leak_enabled()) ferry__leak_export_remove(wrapper);
  free(wrapper);
  ferry__live_add(-1);
  array->release = NULL;
}

/* The argument checks of ferry_device_array_init, out of line (see
 * ferry_array_init_invalid). */
__attribute__((noinline, cold)) static int ferry_device_array_init_invalid(
    const struct ArrowDeviceArray* out, const struct ArrowArray* array,
    ArrowDeviceType device_type, struct FerryError* error) {
  if (out == NULL || array == NULL) {
    return ferry__set_error(error, EINVAL, "ferry_device_array_init: %s is NULL",
                           out == NULL ? "out" : "array");
  }
  if (array->release == NULL) {
    return ferry__set_error(error, EINVAL,
                           "ferry_device_array_init: the array is released");
  }
  if (out->array.release != NULL && &out->array != array) {
    return ferry__set_error(error, EINVAL,
                           "ferry_device_array_init: out is a live device array (release "
                           "it first)");
  }
  return ferry__set_error(error, EINVAL, "ferry_device_array_init: invalid device type %d",
                         (int)device_type);
}

/* Moves `array` into out->array behind a wrapper that runs the event hook
 * after the array's own release. */
__attribute__((noinline)) static int ferry_device_array_wrap_event(
    struct ArrowDeviceArray* out, struct ArrowArray* array,
    FerryReleaseHook event_release, void* event_user_data, struct FerryError* error) {
  struct FerryEventWrapper* wrapper =
      (struct FerryEventWrapper*)malloc(sizeof(struct FerryEventWrapper));
  if (wrapper == NULL) {
    return ferry__set_error(error, ENOMEM, "ferry_device_array_init: out of memory");
  }
  wrapper->inner = *array;
  wrapper->hook = event_release;
  wrapper->user_data = event_user_data;
  array->release = NULL;
  /* The consumer sees the same fields; only release and private_data are
   * the wrapper's. */
  out->array = wrapper->inner;
  out->array.private_data = wrapper;
  out->array.release = ferry_event_wrapper_release;
  ferry__live_add(1);
  if (ferry__leak_enabled()) {
    ferry__leak_export_add(wrapper, "event hook of a device array of length %lld",
                           (long long)wrapper->inner.length);
  }
  return FERRY_OK;
}

/* Writes everything of `out` after the embedded array, padding included, so
 * that out is fully defined whatever it held before (the spec wants
 * reserved zero; tools compare and hash whole structs). Each store is a
 * whole aligned 8-byte word, device_type and its padding included, so that
 * a consumer's copy (8-byte or 4-byte loads) forwards from the store
 * buffer instead of stalling. */
static inline void ferry_device_array_set_device(struct ArrowDeviceArray* out,
                                                 ArrowDeviceType device_type,
                                                 int64_t device_id, void* sync_event) {
  _Static_assert(offsetof(struct ArrowDeviceArray, sync_event) -
                         offsetof(struct ArrowDeviceArray, device_type) ==
                     sizeof(uint64_t),
                 "device_type plus padding is one 8-byte word");
  out->device_id = device_id;
  uint64_t word = (uint64_t)(uint32_t)device_type;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  word <<= 32; /* device_type is the first 4 bytes of the word */
#endif
  memcpy((char*)out + offsetof(struct ArrowDeviceArray, device_type), &word,
         sizeof(word));
  out->sync_event = sync_event;
  out->reserved[0] = 0;
  out->reserved[1] = 0;
  out->reserved[2] = 0;
}

/* ferry_device_array_init for argument errors and for an event_release
 * hook; the same arguments as the public function (a plain tail call). */
__attribute__((noinline)) static int ferry_device_array_init_general(
    struct ArrowDeviceArray* out, struct ArrowArray* array, ArrowDeviceType device_type,
    int64_t device_id, void* sync_event, FerryReleaseHook event_release,
    void* event_user_data, struct FerryError* error) {
  if (out == NULL || array == NULL || array->release == NULL ||
      (out->array.release != NULL && &out->array != array) || device_type <= 0) {
    return ferry_device_array_init_invalid(out, array, device_type, error);
  }
  if (event_release != NULL) {
    FERRY_RETURN_NOT_OK(
        ferry_device_array_wrap_event(out, array, event_release, event_user_data, error));
  } else if (array != &out->array) {
    ferry__copy_words(&out->array, array, sizeof(*array) / sizeof(uint64_t));
    array->release = NULL;
  }
  ferry_device_array_set_device(out, device_type, device_id, sync_event);
  if (ferry__leak_enabled()) {
    ferry__leak_export_note_device(out->array.private_data, device_type, device_id);
  }
  return FERRY_OK;
}

/* Moves live `array` into released `out` on (device_type, device_id) with
 * `sync_event` (owned by the producer); the caller releases `out`. */
int ferry_device_array_init(struct ArrowDeviceArray* out, struct ArrowArray* array,
                            ArrowDeviceType device_type, int64_t device_id,
                            void* sync_event, FerryReleaseHook event_release,
                            void* event_user_data, struct FerryError* error) {
  /* The fast path makes no calls (no stack frame): valid arguments and no
   * event hook. Everything else is a tail call with the same arguments.
   * `array` may be out's own embedded array (an in-place upgrade). */
  if (__builtin_expect(out == NULL || array == NULL || array->release == NULL ||
                           (out->array.release != NULL && &out->array != array) ||
                           device_type <= 0 || event_release != NULL ||
                           /* -1 (not read yet) or 1: the report notes the device */
                           atomic_load_explicit(&ferry__leak_flag, memory_order_relaxed) != 0,
                       0)) {
    return ferry_device_array_init_general(out, array, device_type, device_id, sync_event,
                                           event_release, event_user_data, error);
  }
  if (array != &out->array) {
    /* One copy, straight into out (no temporary), with 8-byte words: the
     * producer has usually just written `array` field by field. */
    ferry__copy_words(&out->array, array, sizeof(*array) / sizeof(uint64_t));
    array->release = NULL;
  }
  ferry_device_array_set_device(out, device_type, device_id, sync_event);
  return FERRY_OK;
}
