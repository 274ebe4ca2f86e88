/* Adapters: the C callbacks that bindings used to write themselves.
 *
 * - Shared exports: a fresh ArrowSchema / ArrowArray / ArrowDeviceArray
 *   tree over a producer's existing one (the same buffers and strings), so
 *   one object a binding holds can be exported to many consumers. Each
 *   exported tree is one allocation: a header (a count of live nodes, the
 *   producer's release hook) followed by every non-root node and every
 *   pointer array. Any node may be moved out and released on its own, as
 *   the C data interface allows; the block lives until the last node is
 *   released, and then the hook runs once. A single node (the common
 *   export) goes through ferry_array_init, whose small blocks are recycled
 *   per thread. ferry_schema_copy is the deep copy for a schema the caller
 *   cannot keep.
 * - Requested schemas: whether data answers a consumer's requested schema
 *   unchanged (ferry_schema_answers_request), and a stream handed on under
 *   another schema (ferry_array_stream_with_schema).
 * - One-call import: validate, then move (ferry_device_array_import,
 *   ferry_array_import).
 * - Stream adapters: a device stream seen as a plain ArrowArrayStream (the
 *   C stream interface, CPU data) and the reverse, so a binding can hand a
 *   ferry stream to, or take one from, an Arrow library that only knows the
 *   CPU stream interface.
 * (ferry_device_array_to_dlpack_shared, the borrowing DLPack export, lives
 * in dlpack.c beside the tensor it fills.) */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "leak.h"
#include "producer.h"
#include "thread_state.h"

/* The same bound as validation's (an exported tree mirrors a valid one). */
#define FERRY_SHARED_MAX_DEPTH 64
/* Bound on the nodes, buffers and children of one exported tree, so that
 * the block size computation cannot overflow. */
#define FERRY_SHARED_MAX_ITEMS ((int64_t)1 << 30)

/* ---- shared exports ----------------------------------------------------- */

struct FerrySharedTree {
  atomic_long live; /* nodes of the tree not released yet */
  FerryReleaseHook hook;
  void* user_data;
  void* pad; /* keeps the nodes that follow 16-byte aligned */
};

/* Drops one node; the last one frees the block and runs the hook. A count
 * of 1 is only seen by the holder of the last node, so it needs no
 * read-modify-write (the common case: one consumer releases the root). */
static void ferry_shared_tree_drop(struct FerrySharedTree* tree) {
  if (atomic_load_explicit(&tree->live, memory_order_acquire) != 1 &&
      atomic_fetch_sub_explicit(&tree->live, 1, memory_order_acq_rel) != 1) {
    return;
  }
  FerryReleaseHook hook = tree->hook;
  void* user_data = tree->user_data;
  if (ferry__leak_enabled()) ferry__leak_export_remove(tree);
  free(tree);
  ferry__live_add(-1);
  if (hook != NULL) hook(user_data);
}

static struct FerrySharedTree* ferry_shared_tree_new(size_t size, int64_t nodes,
                                                     FerryReleaseHook hook, void* user_data) {
  struct FerrySharedTree* tree = (struct FerrySharedTree*)malloc(size);
  if (tree == NULL) return NULL;
  atomic_init(&tree->live, (long)nodes);
  tree->hook = hook;
  tree->user_data = user_data;
  tree->pad = NULL;
  ferry__live_add(1);
  return tree;
}

struct FerrySharedCounts {
  int64_t nodes;    /* every node, root included */
  int64_t pointers; /* buffer pointers plus child pointers */
};

static int ferry_shared_count_add(struct FerrySharedCounts* counts, int64_t n_pointers,
                                  struct FerryError* error) {
  counts->nodes++;
  counts->pointers += n_pointers;
  if (counts->nodes > FERRY_SHARED_MAX_ITEMS || counts->pointers > FERRY_SHARED_MAX_ITEMS) {
    return ferry__set_error(error, EINVAL, "the tree to export is too large to share");
  }
  return FERRY_OK;
}

static int ferry_shared_array_count(const struct ArrowArray* a, int depth,
                                    struct FerrySharedCounts* counts, struct FerryError* error) {
  if (depth > FERRY_SHARED_MAX_DEPTH) {
    return ferry__set_error(error, EINVAL, "the array to export is nested deeper than %d levels",
                            FERRY_SHARED_MAX_DEPTH);
  }
  if (a->n_buffers < 0 || a->n_children < 0 || (a->n_buffers > 0 && a->buffers == NULL) ||
      (a->n_children > 0 && a->children == NULL)) {
    return ferry__set_error(error, EINVAL,
                            "the array to export has n_buffers %lld and n_children %lld that "
                            "its pointer arrays cannot back",
                            (long long)a->n_buffers, (long long)a->n_children);
  }
  if (a->n_buffers > FERRY_SHARED_MAX_ITEMS || a->n_children > FERRY_SHARED_MAX_ITEMS) {
    return ferry__set_error(error, EINVAL, "the tree to export is too large to share");
  }
  FERRY_RETURN_NOT_OK(ferry_shared_count_add(counts, a->n_buffers + a->n_children, error));
  for (int64_t i = 0; i < a->n_children; i++) {
    if (a->children[i] == NULL) {
      return ferry__set_error(error, EINVAL, "the array to export has a NULL child %lld",
                              (long long)i);
    }
    FERRY_RETURN_NOT_OK(ferry_shared_array_count(a->children[i], depth + 1, counts, error));
  }
  if (a->dictionary != NULL) {
    FERRY_RETURN_NOT_OK(ferry_shared_array_count(a->dictionary, depth + 1, counts, error));
  }
  return FERRY_OK;
}

static void ferry_shared_array_release(struct ArrowArray* array) {
  if (array == NULL || array->release == NULL) return;
  /* Children and the dictionary still in place are this node's to release;
   * a moved-out one was left released here. */
  for (int64_t i = 0; i < array->n_children; i++) {
    struct ArrowArray* child = array->children[i];
    if (child->release != NULL) child->release(child);
  }
  if (array->dictionary != NULL && array->dictionary->release != NULL) {
    array->dictionary->release(array->dictionary);
  }
  struct FerrySharedTree* tree = (struct FerrySharedTree*)array->private_data;
  array->release = NULL;
  ferry_shared_tree_drop(tree);
}

/* Carves the next nodes and pointer slots out of the tree's block. */
struct FerrySharedCursor {
  char* nodes;
  const void** pointers;
};

static void ferry_shared_array_fill(struct FerrySharedTree* tree, const struct ArrowArray* src,
                                    struct ArrowArray* out, struct FerrySharedCursor* cursor) {
  out->length = src->length;
  out->null_count = src->null_count;
  out->offset = src->offset;
  out->n_buffers = src->n_buffers;
  out->n_children = src->n_children;
  out->buffers = NULL;
  out->children = NULL;
  out->dictionary = NULL;
  if (src->n_buffers > 0) {
    out->buffers = cursor->pointers;
    memcpy(cursor->pointers, src->buffers, (size_t)src->n_buffers * sizeof(void*));
    cursor->pointers += src->n_buffers;
  }
  if (src->n_children > 0) {
    out->children = (struct ArrowArray**)(void*)cursor->pointers;
    cursor->pointers += src->n_children;
    for (int64_t i = 0; i < src->n_children; i++) {
      struct ArrowArray* child = (struct ArrowArray*)(void*)cursor->nodes;
      cursor->nodes += sizeof(struct ArrowArray);
      out->children[i] = child;
      ferry_shared_array_fill(tree, src->children[i], child, cursor);
    }
  }
  if (src->dictionary != NULL) {
    out->dictionary = (struct ArrowArray*)(void*)cursor->nodes;
    cursor->nodes += sizeof(struct ArrowArray);
    ferry_shared_array_fill(tree, src->dictionary, out->dictionary, cursor);
  }
  out->private_data = tree;
  out->release = ferry_shared_array_release;
}

int ferry_array_export_shared(const struct ArrowArray* src, struct ArrowArray* out,
                              FerryReleaseHook release_hook, void* user_data,
                              struct FerryError* error) {
  if (src == NULL || out == NULL) {
    return ferry__set_error(error, EINVAL, "ferry_array_export_shared: %s is NULL",
                            src == NULL ? "src" : "out");
  }
  if (src->release == NULL) {
    return ferry__set_error(error, EINVAL, "ferry_array_export_shared: src is released");
  }
  if (out->release != NULL) {
    return ferry__set_error(error, EINVAL,
                            "ferry_array_export_shared: out is a live array (release it first)");
  }
  if (src->n_children == 0 && src->dictionary == NULL && src->n_buffers >= 0 &&
      (src->n_buffers == 0 || src->buffers != NULL)) {
    /* One node (the common export): ferry_array_init has the same contract
     * (buffers borrowed, the hook once at release) and recycles its small
     * blocks per thread, which a fresh tree block cannot. */
    return ferry_array_init(out, src->length, src->null_count, src->offset, src->n_buffers,
                            src->buffers, 0, release_hook, user_data, error);
  }
  struct FerrySharedCounts counts = {0, 0};
  FERRY_RETURN_NOT_OK(ferry_shared_array_count(src, 0, &counts, error));
  size_t size = sizeof(struct FerrySharedTree) +
                (size_t)(counts.nodes - 1) * sizeof(struct ArrowArray) +
                (size_t)counts.pointers * sizeof(void*);
  struct FerrySharedTree* tree = ferry_shared_tree_new(size, counts.nodes, release_hook, user_data);
  if (tree == NULL) {
    return ferry__set_error(error, ENOMEM, "out of memory sharing an array of %lld nodes",
                            (long long)counts.nodes);
  }
  struct FerrySharedCursor cursor;
  cursor.nodes = (char*)(tree + 1);
  cursor.pointers = (const void**)(void*)(cursor.nodes +
                                          (size_t)(counts.nodes - 1) * sizeof(struct ArrowArray));
  ferry_shared_array_fill(tree, src, out, &cursor);
  if (ferry__leak_enabled()) {
    ferry__leak_export_add(tree, "shared array export of length %lld (%lld nodes)",
                           (long long)src->length, (long long)counts.nodes);
  }
  return FERRY_OK;
}

int ferry_device_array_export_shared(const struct ArrowDeviceArray* src,
                                     struct ArrowDeviceArray* out,
                                     FerryReleaseHook release_hook, void* user_data,
                                     struct FerryError* error) {
  if (src == NULL || out == NULL) {
    return ferry__set_error(error, EINVAL, "ferry_device_array_export_shared: %s is NULL",
                            src == NULL ? "src" : "out");
  }
  FERRY_RETURN_NOT_OK(
      ferry_array_export_shared(&src->array, &out->array, release_hook, user_data, error));
  out->device_id = src->device_id;
  out->device_type = src->device_type;
  out->sync_event = src->sync_event;
  memset(out->reserved, 0, sizeof(out->reserved));
  if (ferry__leak_enabled()) {
    ferry__leak_export_note_device(out->array.private_data, src->device_type, src->device_id);
  }
  return FERRY_OK;
}

static int ferry_shared_schema_count(const struct ArrowSchema* s, int depth,
                                     struct FerrySharedCounts* counts, struct FerryError* error) {
  if (depth > FERRY_SHARED_MAX_DEPTH) {
    return ferry__set_error(error, EINVAL,
                            "the schema to export is nested deeper than %d levels",
                            FERRY_SHARED_MAX_DEPTH);
  }
  if (s->n_children < 0 || (s->n_children > 0 && s->children == NULL) ||
      s->n_children > FERRY_SHARED_MAX_ITEMS) {
    return ferry__set_error(error, EINVAL,
                            "the schema to export has n_children %lld that its children "
                            "pointer cannot back",
                            (long long)s->n_children);
  }
  FERRY_RETURN_NOT_OK(ferry_shared_count_add(counts, s->n_children, error));
  for (int64_t i = 0; i < s->n_children; i++) {
    if (s->children[i] == NULL) {
      return ferry__set_error(error, EINVAL, "the schema to export has a NULL child %lld",
                              (long long)i);
    }
    FERRY_RETURN_NOT_OK(ferry_shared_schema_count(s->children[i], depth + 1, counts, error));
  }
  if (s->dictionary != NULL) {
    FERRY_RETURN_NOT_OK(ferry_shared_schema_count(s->dictionary, depth + 1, counts, error));
  }
  return FERRY_OK;
}

static void ferry_shared_schema_release(struct ArrowSchema* schema) {
  if (schema == NULL || schema->release == NULL) return;
  for (int64_t i = 0; i < schema->n_children; i++) {
    struct ArrowSchema* child = schema->children[i];
    if (child->release != NULL) child->release(child);
  }
  if (schema->dictionary != NULL && schema->dictionary->release != NULL) {
    schema->dictionary->release(schema->dictionary);
  }
  struct FerrySharedTree* tree = (struct FerrySharedTree*)schema->private_data;
  schema->release = NULL;
  ferry_shared_tree_drop(tree);
}

static void ferry_shared_schema_fill(struct FerrySharedTree* tree, const struct ArrowSchema* src,
                                     struct ArrowSchema* out, struct FerrySharedCursor* cursor) {
  out->format = src->format;
  out->name = src->name;
  out->metadata = src->metadata;
  out->flags = src->flags;
  out->n_children = src->n_children;
  out->children = NULL;
  out->dictionary = NULL;
  if (src->n_children > 0) {
    out->children = (struct ArrowSchema**)(void*)cursor->pointers;
    cursor->pointers += src->n_children;
    for (int64_t i = 0; i < src->n_children; i++) {
      struct ArrowSchema* child = (struct ArrowSchema*)(void*)cursor->nodes;
      cursor->nodes += sizeof(struct ArrowSchema);
      out->children[i] = child;
      ferry_shared_schema_fill(tree, src->children[i], child, cursor);
    }
  }
  if (src->dictionary != NULL) {
    out->dictionary = (struct ArrowSchema*)(void*)cursor->nodes;
    cursor->nodes += sizeof(struct ArrowSchema);
    ferry_shared_schema_fill(tree, src->dictionary, out->dictionary, cursor);
  }
  out->private_data = tree;
  out->release = ferry_shared_schema_release;
}

int ferry_schema_export_shared(const struct ArrowSchema* src, struct ArrowSchema* out,
                               FerryReleaseHook release_hook, void* user_data,
                               struct FerryError* error) {
  if (src == NULL || out == NULL) {
    return ferry__set_error(error, EINVAL, "ferry_schema_export_shared: %s is NULL",
                            src == NULL ? "src" : "out");
  }
  if (src->release == NULL) {
    return ferry__set_error(error, EINVAL, "ferry_schema_export_shared: src is released");
  }
  if (out->release != NULL) {
    return ferry__set_error(error, EINVAL,
                            "ferry_schema_export_shared: out is a live schema (release it first)");
  }
  struct FerrySharedCounts counts = {0, 0};
  FERRY_RETURN_NOT_OK(ferry_shared_schema_count(src, 0, &counts, error));
  size_t size = sizeof(struct FerrySharedTree) +
                (size_t)(counts.nodes - 1) * sizeof(struct ArrowSchema) +
                (size_t)counts.pointers * sizeof(void*);
  struct FerrySharedTree* tree = ferry_shared_tree_new(size, counts.nodes, release_hook, user_data);
  if (tree == NULL) {
    return ferry__set_error(error, ENOMEM, "out of memory sharing a schema of %lld nodes",
                            (long long)counts.nodes);
  }
  struct FerrySharedCursor cursor;
  cursor.nodes = (char*)(tree + 1);
  cursor.pointers = (const void**)(void*)(cursor.nodes +
                                          (size_t)(counts.nodes - 1) * sizeof(struct ArrowSchema));
  ferry_shared_schema_fill(tree, src, out, &cursor);
  if (ferry__leak_enabled()) {
    ferry__leak_export_add(tree, "shared schema export of format \"%s\" (%lld nodes)",
                           src->format != NULL ? src->format : "(null)", (long long)counts.nodes);
  }
  return FERRY_OK;
}

int ferry_schema_copy(const struct ArrowSchema* src, struct ArrowSchema* out,
                      struct FerryError* error) {
  if (src == NULL || out == NULL) {
    return ferry__set_error(error, EINVAL, "ferry_schema_copy: %s is NULL",
                            src == NULL ? "src" : "out");
  }
  if (src->release == NULL) {
    return ferry__set_error(error, EINVAL, "ferry_schema_copy: src is released");
  }
  if (out->release != NULL) {
    return ferry__set_error(error, EINVAL,
                            "ferry_schema_copy: out is a live schema (release it first)");
  }
  return ferry__schema_deep_copy(src, out, error); /* bounded, and checks every node */
}

/* ---- requested schemas ------------------------------------------------------ */

static int ferry_is_one_of(const char* format, const char* const* list) {
  for (; *list != NULL; list++) {
    if (strcmp(format, *list) == 0) return 1;
  }
  return 0;
}

/* 1 when data of format `have` reads as `want` unchanged (see ferry.h). */
static int ferry_layout_alias(const char* have, const char* want) {
  static const char* const kInt32Like[] = {"i", "tdD", "tts", "ttm", NULL};
  static const char* const kInt64Like[] = {"l", "tdm", "ttu", "ttn", "tDs", "tDm", "tDu", "tDn",
                                           NULL};
  if (strcmp(have, want) == 0) return 1;
  int have_ts = strncmp(have, "ts", 2) == 0, want_ts = strncmp(want, "ts", 2) == 0;
  if (have_ts && want_ts) return have[2] == want[2]; /* same unit, any time zone */
  if (ferry_is_one_of(have, kInt32Like) && ferry_is_one_of(want, kInt32Like)) {
    return strcmp(have, "i") == 0 || strcmp(want, "i") == 0;
  }
  if ((ferry_is_one_of(have, kInt64Like) || have_ts) &&
      (ferry_is_one_of(want, kInt64Like) || want_ts)) {
    return strcmp(have, "l") == 0 || strcmp(want, "l") == 0;
  }
  /* UTF-8 is valid binary; binary is not always valid UTF-8. */
  return (strcmp(have, "u") == 0 && strcmp(want, "z") == 0) ||
         (strcmp(have, "U") == 0 && strcmp(want, "Z") == 0) ||
         (strcmp(have, "vu") == 0 && strcmp(want, "vz") == 0);
}

/* One node pair, then its children and dictionary. `array` is the node's
 * data (NULL: judge the nullability on `have`'s flags, as for a stream). */
static int ferry_answers_at(const struct ArrowSchema* have, const struct ArrowSchema* want,
                            const struct ArrowArray* array, int stream, int depth,
                            struct FerryError* error) {
  if (depth > FERRY_SHARED_MAX_DEPTH) {
    return ferry__set_error(error, EINVAL, "the schemas are nested deeper than %d levels",
                            FERRY_SHARED_MAX_DEPTH);
  }
  if (have == NULL || want == NULL || have->format == NULL || want->format == NULL) {
    return ferry__set_error(error, EINVAL, "a schema node or its format is NULL");
  }
  if (!ferry_layout_alias(have->format, want->format)) {
    return ferry__set_error(error, ENOTSUP,
                            "format \"%s\" cannot be read as \"%s\" without a cast",
                            have->format, want->format);
  }
  if (have->n_children != want->n_children) {
    return ferry__set_error(error, ENOTSUP,
                            "\"%s\" has %lld children, the requested schema %lld",
                            have->format, (long long)have->n_children,
                            (long long)want->n_children);
  }
  if ((have->dictionary == NULL) != (want->dictionary == NULL)) {
    return ferry__set_error(error, ENOTSUP,
                            "\"%s\" is %sdictionary-encoded, the requested field %s",
                            have->format, have->dictionary != NULL ? "" : "not ",
                            want->dictionary != NULL ? "is" : "is not");
  }
  if (!(want->flags & ARROW_FLAG_NULLABLE)) {
    const char* name = want->name != NULL ? want->name : "";
    if (stream && (have->flags & ARROW_FLAG_NULLABLE)) {
      return ferry__set_error(error, ENOTSUP,
                              "the requested field \"%s\" is not nullable, but the stream's "
                              "\"%s\" is",
                              name, have->format);
    }
    if (array != NULL && array->null_count != 0) {
      return ferry__set_error(error, ENOTSUP,
                              "the requested field \"%s\" is not nullable, but the "
                              "array's \"%s\" %s",
                              name, have->format,
                              array->null_count > 0 ? "has nulls"
                                                    : "may have nulls (null_count -1)");
    }
  }
  for (int64_t i = 0; i < have->n_children; i++) {
    const struct ArrowArray* child = array != NULL && array->children != NULL &&
                                             i < array->n_children
                                         ? array->children[i]
                                         : NULL;
    FERRY_RETURN_NOT_OK(
        ferry_answers_at(have->children[i], want->children[i], child, stream, depth + 1, error));
  }
  if (have->dictionary != NULL) {
    return ferry_answers_at(have->dictionary, want->dictionary,
                            array != NULL ? array->dictionary : NULL, stream, depth + 1, error);
  }
  return FERRY_OK;
}

int ferry_schema_answers_request(const struct ArrowSchema* have, const struct ArrowSchema* want,
                                 const struct ArrowArray* array, struct FerryError* error) {
  return ferry_answers_at(have, want, array, array == NULL, 0, error);
}

/* ---- one-call import ------------------------------------------------------ */

static int ferry_import_check(const char* function, const struct ArrowSchema* schema,
                              const struct ArrowArray* array, int level,
                              const struct ArrowSchema* schema_out,
                              const struct ArrowDeviceArray* array_out,
                              struct FerryError* error) {
  if (schema == NULL || array == NULL || schema_out == NULL || array_out == NULL) {
    return ferry__set_error(error, EINVAL, "%s: %s is NULL", function,
                            schema == NULL ? "schema" : array == NULL ? "array"
                                                    : schema_out == NULL ? "schema_out"
                                                                         : "array_out");
  }
  if (schema->release == NULL || array->release == NULL) {
    return ferry__set_error(error, EINVAL, "%s: the %s is released (nothing to import)",
                            function, schema->release == NULL ? "schema" : "array");
  }
  if (schema_out->release != NULL || array_out->array.release != NULL) {
    return ferry__set_error(error, EINVAL, "%s: %s is live (release it first)", function,
                            schema_out->release != NULL ? "schema_out" : "array_out");
  }
  if (level != FERRY_VALIDATE_NONE && level != FERRY_VALIDATE_DEFAULT &&
      level != FERRY_VALIDATE_FULL) {
    return ferry__set_error(error, EINVAL,
                            "%s: level must be FERRY_VALIDATE_NONE, _DEFAULT or _FULL, not %d",
                            function, level);
  }
  return FERRY_OK;
}

int ferry_device_array_import(struct ArrowSchema* schema, struct ArrowDeviceArray* array,
                              int level, struct ArrowSchema* schema_out,
                              struct ArrowDeviceArray* array_out, struct FerryError* error) {
  FERRY_RETURN_NOT_OK(ferry_import_check("ferry_device_array_import", schema,
                                         array != NULL ? &array->array : NULL, level,
                                         schema_out, array_out, error));
  if (level != FERRY_VALIDATE_NONE) {
    FERRY_RETURN_NOT_OK(ferry_validate_device_array(schema, array, level, NULL, NULL, error));
  }
  *schema_out = *schema;
  schema->release = NULL;
  *array_out = *array;
  array->array.release = NULL;
  return FERRY_OK;
}

int ferry_array_import(struct ArrowSchema* schema, struct ArrowArray* array, int level,
                       struct ArrowSchema* schema_out, struct ArrowDeviceArray* array_out,
                       struct FerryError* error) {
  FERRY_RETURN_NOT_OK(ferry_import_check("ferry_array_import", schema, array, level, schema_out,
                                         array_out, error));
  /* Validated as the device array it becomes; moved only on success. */
  struct ArrowDeviceArray device;
  memset(&device, 0, sizeof(device));
  device.array = *array;
  device.device_type = ARROW_DEVICE_CPU;
  device.device_id = -1;
  if (level != FERRY_VALIDATE_NONE) {
    FERRY_RETURN_NOT_OK(ferry_validate_device_array(schema, &device, level, NULL, NULL, error));
  }
  *schema_out = *schema;
  schema->release = NULL;
  *array_out = device;
  array->release = NULL;
  return FERRY_OK;
}

/* ---- device stream -> plain ArrowArrayStream (CPU) ------------------------ */

struct FerryCpuStream {
  struct ArrowDeviceArrayStream source;  /* moved in */
  int validate;                          /* FERRY_VALIDATE_* of every batch */
  int64_t flags;                         /* FERRY_CPU_STREAM_* */
  struct ArrowSchema schema;             /* the source's, once fetched (see needs_schema) */
  struct FerryPreparedSchema* prepared;  /* from `schema`, when validating */
  int failed;                            /* the first failure's code (0: none) */
  int ended;                             /* the source reported the end */
  struct FerryError error;               /* get_last_error's text */
};

/* Whether the adapter must hold the schema itself: to validate batches, to
 * copy them to the host or to wrap them in a record batch. */
static int ferry_cpu_stream_needs_schema(const struct FerryCpuStream* s) {
  return s->validate != FERRY_VALIDATE_NONE || s->flags != 0;
}

static int ferry_cpu_stream_is_record(const struct ArrowSchema* schema) {
  return schema->format != NULL && strcmp(schema->format, "+s") == 0;
}

/* Keeps the first failure: the source is never called again, and every
 * later call reports the same code and message. */
static int ferry_cpu_stream_fail(struct FerryCpuStream* s, int rc) {
  s->failed = rc;
  if (s->error.message[0] == '\0') {
    ferry__set_error(&s->error, rc, "the stream failed with %s", ferry_errno_name(rc));
  }
  return rc;
}

/* The source's schema for this adapter's own use (fetched once). */
static int ferry_cpu_stream_prepare(struct FerryCpuStream* s) {
  if (s->schema.release == NULL) {
    int rc = ferry_array_stream_get_schema(&s->source, &s->schema, &s->error);
    if (rc != FERRY_OK) return rc;
  }
  if (s->validate != FERRY_VALIDATE_NONE && s->prepared == NULL) {
    return ferry_prepared_schema_create(&s->schema, NULL, NULL, &s->prepared, &s->error);
  }
  return FERRY_OK;
}

/* Replaces live `schema` by a struct schema ("+s", name "") whose only child it is. */
static int ferry_cpu_stream_wrap_schema(struct ArrowSchema* schema, struct FerryError* error) {
  struct ArrowSchema column = *schema;
  schema->release = NULL;
  int rc = ferry_schema_init(schema, "+s", "", 0, 1, error);
  if (rc != FERRY_OK) {
    *schema = column;
    return rc;
  }
  return ferry_schema_move(&column, ferry_schema_child(schema, 0));
}

/* Replaces live `array` by a struct array of its length whose only child it is. */
static int ferry_cpu_stream_wrap_array(struct ArrowArray* array, struct FerryError* error) {
  struct ArrowArray column = *array;
  array->release = NULL;
  const void* no_validity[1] = {NULL};
  int rc = ferry_array_init(array, column.length, 0, 0, 1, no_validity, 1, NULL, NULL, error);
  if (rc != FERRY_OK) {
    *array = column;
    return rc;
  }
  return ferry_array_move(&column, ferry_array_child(array, 0));
}

static int ferry_cpu_stream_get_schema(struct ArrowArrayStream* self, struct ArrowSchema* out) {
  struct FerryCpuStream* s = (struct FerryCpuStream*)self->private_data;
  if (s->failed != 0) return s->failed;
  s->error.message[0] = '\0';
  int rc;
  if (!ferry_cpu_stream_needs_schema(s)) {
    rc = ferry_array_stream_get_schema(&s->source, out, &s->error);
  } else {
    rc = ferry_cpu_stream_prepare(s);
    if (rc == FERRY_OK) rc = ferry__schema_deep_copy(&s->schema, out, &s->error);
    if (rc == FERRY_OK && (s->flags & FERRY_CPU_STREAM_RECORD_BATCHES) &&
        !ferry_cpu_stream_is_record(out)) {
      rc = ferry_cpu_stream_wrap_schema(out, &s->error);
      if (rc != FERRY_OK) ferry_schema_release(out);
    }
  }
  return rc == FERRY_OK ? FERRY_OK : ferry_cpu_stream_fail(s, rc);
}

static int ferry_cpu_stream_get_next(struct ArrowArrayStream* self, struct ArrowArray* out) {
  struct FerryCpuStream* s = (struct FerryCpuStream*)self->private_data;
  out->release = NULL;
  if (s->failed != 0) return s->failed;
  if (s->ended) return FERRY_OK;
  s->error.message[0] = '\0';
  int rc = FERRY_OK;
  if (ferry_cpu_stream_needs_schema(s)) {
    rc = ferry_cpu_stream_prepare(s);
    if (rc != FERRY_OK) return ferry_cpu_stream_fail(s, rc);
  }
  struct ArrowDeviceArray batch;
  memset(&batch, 0, sizeof(batch));
  rc = ferry_array_stream_get_next(&s->source, &batch, &s->error);
  if (rc != FERRY_OK) return ferry_cpu_stream_fail(s, rc);
  if (batch.array.release == NULL) {
    s->ended = 1;
    return FERRY_OK;
  }
  if (s->validate != FERRY_VALIDATE_NONE) {
    struct FerryError finding;
    finding.message[0] = '\0';
    rc = ferry_validate_prepared(s->prepared, &batch, s->validate, NULL, NULL, &finding);
    if (rc != FERRY_OK) {
      static const char prefix[] = "the array fails validation: ";
      ferry__set_error(&s->error, rc, "%s%.*s", prefix,
                       (int)(sizeof(s->error.message) - sizeof(prefix)), finding.message);
      ferry_device_array_release(&batch);
      return ferry_cpu_stream_fail(s, rc);
    }
  }
  if (batch.device_type != ARROW_DEVICE_CPU) {
    /* Only a COPY_TO_HOST adapter reads a non-CPU stream (checked when made). */
    struct ArrowDeviceArray host;
    memset(&host, 0, sizeof(host));
    rc = ferry_device_array_move_to_device(&s->schema, &batch, ARROW_DEVICE_CPU, -1, &host,
                                           &s->error);
    if (rc != FERRY_OK) {
      ferry_device_array_release(&batch);
      return ferry_cpu_stream_fail(s, rc);
    }
    batch = host;
  }
  if ((s->flags & FERRY_CPU_STREAM_RECORD_BATCHES) && !ferry_cpu_stream_is_record(&s->schema)) {
    rc = ferry_cpu_stream_wrap_array(&batch.array, &s->error);
    if (rc != FERRY_OK) {
      ferry_array_release(&batch.array);
      return ferry_cpu_stream_fail(s, rc);
    }
  }
  *out = batch.array; /* a CPU batch carries no event */
  return FERRY_OK;
}

static const char* ferry_cpu_stream_get_last_error(struct ArrowArrayStream* self) {
  struct FerryCpuStream* s = (struct FerryCpuStream*)self->private_data;
  return s->error.message[0] != '\0' ? s->error.message : NULL;
}

static void ferry_cpu_stream_release(struct ArrowArrayStream* self) {
  if (self == NULL || self->release == NULL) return;
  struct FerryCpuStream* s = (struct FerryCpuStream*)self->private_data;
  ferry_array_stream_release(&s->source);
  ferry_prepared_schema_free(s->prepared);
  ferry_schema_release(&s->schema);
  if (ferry__leak_enabled()) ferry__leak_export_remove(s);
  free(s);
  ferry__live_add(-1);
  self->release = NULL;
  self->private_data = NULL;
}

int ferry_array_stream_to_cpu_stream(struct ArrowDeviceArrayStream* src, int validate,
                                     int64_t flags, struct ArrowArrayStream* out,
                                     struct FerryError* error) {
  if (src == NULL || out == NULL) {
    return ferry__set_error(error, EINVAL, "ferry_array_stream_to_cpu_stream: %s is NULL",
                            src == NULL ? "the device stream" : "out");
  }
  if (src->release == NULL) {
    return ferry__set_error(error, EINVAL,
                            "ferry_array_stream_to_cpu_stream: the device stream is released");
  }
  if (out->release != NULL) {
    return ferry__set_error(error, EINVAL,
                            "ferry_array_stream_to_cpu_stream: out is a live stream (release it "
                            "first)");
  }
  if (validate != FERRY_VALIDATE_NONE && validate != FERRY_VALIDATE_DEFAULT &&
      validate != FERRY_VALIDATE_FULL) {
    return ferry__set_error(error, EINVAL,
                            "ferry_array_stream_to_cpu_stream: validate must be "
                            "FERRY_VALIDATE_NONE, _DEFAULT or _FULL, not %d",
                            validate);
  }
  if ((flags & ~(int64_t)(FERRY_CPU_STREAM_COPY_TO_HOST | FERRY_CPU_STREAM_RECORD_BATCHES)) != 0) {
    return ferry__set_error(error, EINVAL,
                            "ferry_array_stream_to_cpu_stream: unknown flags 0x%llx",
                            (unsigned long long)flags);
  }
  if (src->device_type != ARROW_DEVICE_CPU && !(flags & FERRY_CPU_STREAM_COPY_TO_HOST)) {
    return ferry__set_error(error, EINVAL,
                            "the stream's batches live on device type %s (%d), not on the CPU: "
                            "pass FERRY_CPU_STREAM_COPY_TO_HOST to copy them to the host",
                            ferry_device_type_name(src->device_type), (int)src->device_type);
  }
  if (src->device_type != ARROW_DEVICE_CPU && validate == FERRY_VALIDATE_NONE) {
    /* The copy sizes its buffers from the array: never from an unchecked one. */
    return ferry__set_error(error, EINVAL,
                            "ferry_array_stream_to_cpu_stream: copying batches to the host needs "
                            "validation (FERRY_VALIDATE_DEFAULT or _FULL), not "
                            "FERRY_VALIDATE_NONE");
  }
  struct FerryCpuStream* s = (struct FerryCpuStream*)calloc(1, sizeof(*s));
  if (s == NULL) {
    return ferry__set_error(error, ENOMEM, "out of memory adapting a device stream");
  }
  s->validate = validate;
  s->flags = flags;
  s->source = *src;
  src->release = NULL;
  ferry__live_add(1);
  if (ferry__leak_enabled()) {
    ferry__leak_export_add(s, "CPU stream over a device stream of device type %s",
                           ferry_device_type_name(s->source.device_type));
  }
  out->get_schema = ferry_cpu_stream_get_schema;
  out->get_next = ferry_cpu_stream_get_next;
  out->get_last_error = ferry_cpu_stream_get_last_error;
  out->release = ferry_cpu_stream_release;
  out->private_data = s;
  return FERRY_OK;
}

/* ---- a device stream under another schema ------------------------------- */

struct FerrySchemaSwap {
  struct ArrowDeviceArrayStream source; /* moved in */
  struct ArrowSchema schema;            /* moved in */
};

static int ferry_swap_get_schema(void* user_data, struct ArrowSchema* out,
                                 struct FerryError* error) {
  struct FerrySchemaSwap* swap = (struct FerrySchemaSwap*)user_data;
  return ferry__schema_deep_copy(&swap->schema, out, error);
}

static int ferry_swap_get_next(void* user_data, struct ArrowDeviceArray* out,
                               struct FerryError* error) {
  struct FerrySchemaSwap* swap = (struct FerrySchemaSwap*)user_data;
  return ferry_array_stream_get_next(&swap->source, out, error);
}

static void ferry_swap_release(void* user_data) {
  struct FerrySchemaSwap* swap = (struct FerrySchemaSwap*)user_data;
  ferry_array_stream_release(&swap->source);
  ferry_schema_release(&swap->schema);
  free(swap);
}

int ferry_array_stream_with_schema(struct ArrowDeviceArrayStream* src,
                                   struct ArrowSchema* schema,
                                   struct ArrowDeviceArrayStream* out,
                                   struct FerryError* error) {
  if (src == NULL || schema == NULL || out == NULL) {
    return ferry__set_error(error, EINVAL, "ferry_array_stream_with_schema: %s is NULL",
                            src == NULL ? "src" : schema == NULL ? "schema" : "out");
  }
  if (src->release == NULL || schema->release == NULL) {
    return ferry__set_error(error, EINVAL, "ferry_array_stream_with_schema: the %s is released",
                            src->release == NULL ? "stream" : "schema");
  }
  if (out->release != NULL) {
    return ferry__set_error(error, EINVAL,
                            "ferry_array_stream_with_schema: out is a live stream (release it "
                            "first)");
  }
  struct FerrySchemaSwap* swap = (struct FerrySchemaSwap*)malloc(sizeof(*swap));
  if (swap == NULL) {
    return ferry__set_error(error, ENOMEM, "out of memory giving a stream another schema");
  }
  swap->source = *src;
  swap->schema = *schema;
  int rc = ferry_array_stream_init(out, src->device_type, ferry_swap_get_schema,
                                   ferry_swap_get_next, ferry_swap_release, swap, error);
  if (rc != FERRY_OK) {
    free(swap); /* nothing was taken */
    return rc;
  }
  src->release = NULL;
  schema->release = NULL;
  return FERRY_OK;
}

/* ---- plain ArrowArrayStream (CPU) -> device stream ------------------------ */

/* The CPU stream's own message, or a generic one naming the operation. */
static int ferry_from_cpu_fail(struct ArrowArrayStream* s, const char* op, int rc,
                               struct FerryError* error) {
  const char* message = s->get_last_error != NULL ? s->get_last_error(s) : NULL;
  if (message != NULL && message[0] != '\0') return ferry__set_error(error, rc, "%s", message);
  return ferry__set_error(error, rc, "%s failed with %s (no message from producer)", op,
                          ferry_errno_name(rc));
}

static int ferry_from_cpu_get_schema(void* user_data, struct ArrowSchema* out,
                                     struct FerryError* error) {
  struct ArrowArrayStream* s = (struct ArrowArrayStream*)user_data;
  int rc = s->get_schema(s, out);
  if (rc == 0) return FERRY_OK;
  if (out->release != NULL) out->release(out); /* a producer that failed must not hand out */
  return ferry_from_cpu_fail(s, "get_schema", rc, error);
}

static int ferry_from_cpu_get_next(void* user_data, struct ArrowDeviceArray* out,
                                   struct FerryError* error) {
  struct ArrowArrayStream* s = (struct ArrowArrayStream*)user_data;
  struct ArrowArray batch;
  memset(&batch, 0, sizeof(batch));
  int rc = s->get_next(s, &batch);
  if (rc != 0) {
    if (batch.release != NULL) batch.release(&batch);
    return ferry_from_cpu_fail(s, "get_next", rc, error);
  }
  if (batch.release == NULL) return FERRY_OK; /* the end: `out` stays released */
  rc = ferry_device_array_init(out, &batch, ARROW_DEVICE_CPU, -1, NULL, NULL, NULL, error);
  if (rc != FERRY_OK && batch.release != NULL) batch.release(&batch);
  return rc;
}

static void ferry_from_cpu_release(void* user_data) {
  struct ArrowArrayStream* s = (struct ArrowArrayStream*)user_data;
  if (s->release != NULL) s->release(s);
  free(s);
}

int ferry_array_stream_from_cpu_stream(struct ArrowArrayStream* src,
                                       struct ArrowDeviceArrayStream* out,
                                       struct FerryError* error) {
  if (src == NULL || out == NULL) {
    return ferry__set_error(error, EINVAL, "ferry_array_stream_from_cpu_stream: %s is NULL",
                            src == NULL ? "the CPU stream" : "out");
  }
  if (src->release == NULL) {
    return ferry__set_error(error, EINVAL,
                            "ferry_array_stream_from_cpu_stream: the CPU stream is released");
  }
  if (src->get_schema == NULL || src->get_next == NULL) {
    return ferry__set_error(error, EINVAL,
                            "ferry_array_stream_from_cpu_stream: the CPU stream has no %s "
                            "callback",
                            src->get_schema == NULL ? "get_schema" : "get_next");
  }
  if (out->release != NULL) {
    return ferry__set_error(error, EINVAL,
                            "ferry_array_stream_from_cpu_stream: out is a live stream (release "
                            "it first)");
  }
  struct ArrowArrayStream* moved = (struct ArrowArrayStream*)malloc(sizeof(*moved));
  if (moved == NULL) {
    return ferry__set_error(error, ENOMEM, "out of memory adapting a CPU stream");
  }
  *moved = *src;
  int rc = ferry_array_stream_init(out, ARROW_DEVICE_CPU, ferry_from_cpu_get_schema,
                                   ferry_from_cpu_get_next, ferry_from_cpu_release, moved, error);
  if (rc != FERRY_OK) {
    free(moved); /* nothing was taken: the source is untouched */
    return rc;
  }
  src->release = NULL;
  return FERRY_OK;
}
