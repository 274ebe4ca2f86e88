/* Deep copies of device arrays between devices (ferry_device_array_copy):
 * every buffer, child, dictionary and variadic buffer is allocated on the
 * destination and copied through the registry (device.c), after waiting on
 * the source's event. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "format.h"
#include "internal.h"
#include "node_table.h"

/* ---- deep copy ------------------------------------------------------------------------
 */

/* Deepest nesting a copy follows; far beyond any real schema, it only stops
 * a malformed (cyclic) tree from exhausting the stack. */
#define FERRY_COPY_MAX_DEPTH 200
#define FERRY_COPY_PATH_SIZE 512
#define FERRY_COPY_MAX_BUFFERS (INT64_C(1) << 32)
/* Source nodes recorded on the stack before the record moves to the heap. */
#define FERRY_COPY_INLINE_NODES 64
#define FERRY_COPY_INLINE_SLOTS 128

/* The buffers one copied node owns on the destination device; freed by the
 * node's release hook. */
struct FerryCopiedBuffers {
  struct FerryDevice* device;
  int64_t n_buffers;
  void* buffers[];
};

static void free_copied_buffers(void* user_data) {
  struct FerryCopiedBuffers* owned = (struct FerryCopiedBuffers*)user_data;
  for (int64_t i = 0; i < owned->n_buffers; i++) {
    ferry_device_deallocate(owned->device, owned->buffers[i], NULL);
  }
  free(owned);
}

/* A source array the copy has entered (node_table.h). */
struct FerryCopiedNode {
  const void* key;
  int on_path; /* an ancestor of the node being copied */
};

struct FerryCopyContext {
  struct FerryDevice* src_device;
  struct FerryDevice* dst_device;
  struct FerryError* error;
  /* Every source array entered so far: a node met twice is refused (a copy
   * of a shared node would be exponential, and the source is unreleasable). */
  struct FerryNodeTable seen;
};

/* Bytes of the offsets buffer a copy of `src` must hold when buffer `i` is
 * the offsets of a length-0 variable-size or list array (offset + 1
 * entries, for offsets below 2^16; 0 for any other buffer, whose size
 * ferry_array_buffer_size gives). List views address children per slot:
 * nothing for them. */
static int64_t empty_offsets_bytes(const struct ArrowSchema* schema,
                                   const struct ArrowArray* src, int64_t i) {
  /* Up to 2^16 entries; beyond, the copy keeps the 0 bytes the source may
   * have (accepted for length 0), never a large allocation for nothing. */
  if (src->length != 0 || src->offset < 0 || src->offset >= (INT64_C(1) << 16)) return 0;
  struct FerryFormat format;
  struct FerryError ignored;
  if (ferry__format_parse(schema->format, &format, &ignored) != FERRY_OK) return 0;
  if (format.type == FERRY_TYPE_LIST_VIEW || format.type == FERRY_TYPE_LARGE_LIST_VIEW) return 0;
  if (i >= format.n_fixed_buffers || format.roles[i] != FERRY_BUFFER_OFFSETS) return 0;
  return (src->offset + 1) * format.offset_bytes;
}

/* Allocates `bytes` on `device` holding zeros (through a host buffer: the
 * device may not be host-accessible); the caller owns `*out`. */
static int write_zero_offsets(struct FerryDevice* device, int64_t bytes, void** out,
                              struct FerryError* error) {
  void* zeros = calloc(1, (size_t)bytes);
  if (zeros == NULL) return ferry__set_error(error, ENOMEM, "out of memory for offsets");
  struct FerryDevice* host = NULL;
  int code = ferry_device_resolve(ARROW_DEVICE_CPU, -1, &host, error);
  if (code == FERRY_OK) code = ferry_device_allocate(device, bytes, out, error);
  if (code == FERRY_OK) {
    code = ferry_device_memcpy(device, *out, host, zeros, bytes, NULL, error);
    if (code != FERRY_OK) {
      ferry_device_deallocate(device, *out, NULL);
      *out = NULL;
    }
  }
  free(zeros);
  return code;
}

/* Prefixes the message already in ctx->error with the node's path. */
static int copy_fail(struct FerryCopyContext* ctx, int code, const char* path,
                     const char* what) {
  if (ctx->error != NULL) {
    char inner[FERRY_ERROR_MESSAGE_SIZE];
    memcpy(inner, ctx->error->message, sizeof(inner));
    ferry__set_error(ctx->error, code, "copying %s%s: %.900s", path, what, inner);
  }
  return code;
}

static int copy_node(struct FerryCopyContext* ctx, const struct ArrowSchema* schema,
                     const struct ArrowArray* src, struct ArrowArray* out,
                     const char* path, int depth);

static int copy_children(struct FerryCopyContext* ctx, const struct ArrowSchema* schema,
                         const struct ArrowArray* src, struct ArrowArray* out,
                         const char* path, int depth) {
  char child_path[FERRY_COPY_PATH_SIZE];
  for (int64_t i = 0; i < src->n_children; i++) {
    snprintf(child_path, sizeof(child_path), "%s.children[%" PRId64 "]", path, i);
    FERRY_RETURN_NOT_OK(copy_node(ctx, schema->children[i], src->children[i],
                                  ferry_array_child(out, i), child_path, depth + 1));
  }
  if (src->dictionary != NULL) {
    struct ArrowArray* dictionary = NULL;
    snprintf(child_path, sizeof(child_path), "%s.dictionary", path);
    int code = ferry_array_allocate_dictionary(out, &dictionary, ctx->error);
    if (code != FERRY_OK) return copy_fail(ctx, code, child_path, "");
    FERRY_RETURN_NOT_OK(copy_node(ctx, schema->dictionary, src->dictionary, dictionary,
                                  child_path, depth + 1));
  }
  return FERRY_OK;
}

/* Fills released `out` with a copy of `src` (and its subtree) whose buffers
 * are allocated on the destination device and owned by `out`. On failure
 * whatever part of `out` was filled is left for the caller's release. */
static int copy_node(struct FerryCopyContext* ctx, const struct ArrowSchema* schema,
                     const struct ArrowArray* src, struct ArrowArray* out,
                     const char* path, int depth) {
  struct FerryError* error = ctx->error;
  if (depth > FERRY_COPY_MAX_DEPTH) {
    return ferry__set_error(error, EINVAL, "copying %s: nested deeper than %d levels",
                           path, FERRY_COPY_MAX_DEPTH);
  }
  if (schema == NULL || schema->release == NULL || schema->format == NULL) {
    return ferry__set_error(error, EINVAL,
                           "copying %s: the schema is missing, released or has no format",
                           path);
  }
  if (src == NULL || src->release == NULL) {
    return ferry__set_error(error, EINVAL, "copying %s: the array is missing or released",
                           path);
  }
  int32_t seen = ferry__node_table_find(&ctx->seen, src);
  if (seen >= 0) {
    const struct FerryCopiedNode* first =
        (const struct FerryCopiedNode*)ferry__node_table_at(&ctx->seen, seen);
    return ferry__set_error(
        error, EINVAL,
        first->on_path ? "copying %s: this array is its own ancestor (a cycle)"
                       : "copying %s: this array is shared with another place in the "
                         "tree (a child or dictionary may appear only once)",
        path);
  }
  if (src->n_children != schema->n_children) {
    return ferry__set_error(error, EINVAL,
                           "copying %s: the array has %" PRId64
                           " children but the schema "
                           "(\"%s\") has %" PRId64,
                           path, src->n_children, schema->format, schema->n_children);
  }
  if (src->n_children > 0 && (src->children == NULL || schema->children == NULL)) {
    return ferry__set_error(error, EINVAL, "copying %s: children pointer table is NULL",
                           path);
  }
  if ((src->dictionary != NULL) != (schema->dictionary != NULL)) {
    return ferry__set_error(error, EINVAL,
                           "copying %s: the array %s a dictionary but the schema %s",
                           path, src->dictionary != NULL ? "has" : "lacks",
                           schema->dictionary != NULL ? "has one" : "does not");
  }
  /* The bound is ferry_array_init's, which the copy goes through; checked
   * first because it also sizes the table of copied buffers below. */
  if (src->n_buffers < 0 || src->n_buffers > FERRY_COPY_MAX_BUFFERS) {
    return ferry__set_error(error, EINVAL,
                           "copying %s: n_buffers (%" PRId64 ") must be in [0, 2^32]",
                           path, src->n_buffers);
  }
  if (src->n_buffers > 0 && src->buffers == NULL) {
    return ferry__set_error(error, EINVAL,
                           "copying %s: buffers is NULL but n_buffers is %" PRId64, path,
                           src->n_buffers);
  }

  struct FerryCopiedBuffers* owned = (struct FerryCopiedBuffers*)calloc(
      1, sizeof(struct FerryCopiedBuffers) + (size_t)src->n_buffers * sizeof(void*));
  if (owned == NULL) {
    return ferry__set_error(error, ENOMEM, "copying %s: out of memory", path);
  }
  owned->device = ctx->dst_device;
  owned->n_buffers = src->n_buffers;
  int code = FERRY_OK;
  for (int64_t i = 0; i < src->n_buffers && code == FERRY_OK; i++) {
    if (src->buffers[i] == NULL) continue;
    char what[64];
    snprintf(what, sizeof(what), " buffer %" PRId64, i);
    int64_t size = 0;
    code = ferry_array_buffer_size(schema, src, ferry_device_type(ctx->src_device),
                                   ferry_device_id(ctx->src_device), i, &size, error);
    if (code != FERRY_OK) {
      copy_fail(ctx, code, path, what);
      break;
    }
    if (size > FERRY_MAX_READ_BYTES) {
      code = ferry__set_error(error, EINVAL,
                              "it declares %" PRId64
                              " bytes, more than any buffer ferry copies (2^48)",
                              size);
      copy_fail(ctx, code, path, what);
      break;
    }
    /* A source the backend knows is shorter than its size is refused before
     * anything that large is allocated (the CPU cannot tell: ENOTSUP). */
    struct FerryError residency;
    int resident = size > 0 ? ferry__device_check_pointer(ctx->src_device, src->buffers[i],
                                                          size, &residency)
                            : FERRY_OK;
    /* Unknown memory on a device the host reaches directly (on the sim,
     * another ext_dev producer's memory) cannot be read either: refused
     * here, before a destination of its declared size is allocated. */
    if (resident == EFAULT ||
        (resident == ENOTSUP && ferry_device_type(ctx->src_device) != ARROW_DEVICE_CPU &&
         ferry_device_is_host_accessible(ctx->src_device))) {
      code = ferry__set_error(error, resident, "%s", residency.message);
      copy_fail(ctx, code, path, what);
      break;
    }
    int64_t offsets_bytes = empty_offsets_bytes(schema, src, i);
    if (offsets_bytes > 0) {
      /* A length-0 array's offsets are not read (the source may hold none:
       * old IPC files, Arrow C++); the copy gets the entries every reader
       * expects, offset + 1 zeros, so that it is valid for any consumer. */
      code = write_zero_offsets(ctx->dst_device, offsets_bytes, &owned->buffers[i], error);
      if (code != FERRY_OK) copy_fail(ctx, code, path, what);
      continue;
    }
    code = ferry_device_allocate(ctx->dst_device, size, &owned->buffers[i], error);
    if (code == FERRY_OK) {
      code = ferry_device_memcpy(ctx->dst_device, owned->buffers[i], ctx->src_device,
                                 src->buffers[i], size, NULL, error);
    }
    if (code != FERRY_OK) copy_fail(ctx, code, path, what);
  }
  if (code == FERRY_OK) {
    code = ferry_array_init(out, src->length, src->null_count, src->offset,
                            src->n_buffers, (const void* const*)owned->buffers,
                            src->n_children, free_copied_buffers, owned, error);
    if (code != FERRY_OK) copy_fail(ctx, code, path, "");
  }
  if (code != FERRY_OK) {
    free_copied_buffers(owned); /* ferry_array_init failed: the hook never runs */
    return code;
  }
  /* From here `out` owns `owned`; a failure below is cleaned up by the
   * caller releasing the whole tree. */
  int32_t self = ferry__node_table_add(&ctx->seen, src);
  if (self < 0) return ferry__set_error(error, ENOMEM, "copying %s: out of memory", path);
  ((struct FerryCopiedNode*)ferry__node_table_at(&ctx->seen, self))->on_path = 1;
  code = copy_children(ctx, schema, src, out, path, depth);
  ((struct FerryCopiedNode*)ferry__node_table_at(&ctx->seen, self))->on_path = 0;
  return code;
}

int ferry__check_transfer_args(const struct ArrowSchema* schema,
                               const struct ArrowDeviceArray* src,
                               const struct ArrowDeviceArray* out, const char* verb,
                               struct FerryError* error) {
  if (schema == NULL) return ferry__set_error(error, EINVAL, "schema must not be NULL");
  if (src == NULL) return ferry__set_error(error, EINVAL, "src must not be NULL");
  if (out == NULL) return ferry__set_error(error, EINVAL, "out must not be NULL");
  if (src->array.release == NULL) {
    return ferry__set_error(error, EINVAL, "src is released (nothing to %s)", verb);
  }
  if (out->array.release != NULL) {
    return ferry__set_error(error, EINVAL,
                           "out is a live device array (release it first)");
  }
  return FERRY_OK;
}

/* Borrows `schema` and `src`; on success the caller owns `out`. */
int ferry_device_array_copy(const struct ArrowSchema* schema,
                            const struct ArrowDeviceArray* src,
                            ArrowDeviceType device_type, int64_t device_id,
                            struct ArrowDeviceArray* out, struct FerryError* error) {
  FERRY_RETURN_NOT_OK(ferry__check_transfer_args(schema, src, out, "copy", error));
  struct FerryCopyContext ctx;
  ctx.src_device = NULL;
  ctx.dst_device = NULL;
  ctx.error = error;
  struct FerryCopiedNode inline_nodes[FERRY_COPY_INLINE_NODES];
  int32_t inline_slots[FERRY_COPY_INLINE_SLOTS];
  ferry__node_table_init(&ctx.seen, sizeof(struct FerryCopiedNode), inline_nodes,
                         FERRY_COPY_INLINE_NODES, inline_slots, FERRY_COPY_INLINE_SLOTS);
  FERRY_RETURN_NOT_OK(
      ferry_device_resolve(src->device_type, src->device_id, &ctx.src_device, error));
  FERRY_RETURN_NOT_OK(
      ferry_device_resolve(device_type, device_id, &ctx.dst_device, error));
  /* The producer may still be writing: wait for its event on the host,
   * because the copies below are synchronous. */
  FERRY_RETURN_NOT_OK(ferry_device_array_wait(src, NULL, error));

  struct ArrowArray copy;
  memset(&copy, 0, sizeof(copy));
  int code = copy_node(&ctx, schema, &src->array, &copy, "root", 0);
  ferry__node_table_free(&ctx.seen);
  if (code == FERRY_OK) {
    code =
        ferry_device_array_init(out, &copy, ferry_device_type(ctx.dst_device),
                                ferry_device_id(ctx.dst_device), NULL, NULL, NULL, error);
  }
  if (code != FERRY_OK && copy.release != NULL) copy.release(&copy);
  return code;
}
