/* Zero-copy conversion between fixed-width Arrow arrays without nulls and
 * one-dimensional DLPack 1.x tensors (DLManagedTensorVersioned), on any
 * device: Arrow's device type values are DLPack's, so the mapping is the
 * identity, except that the CPU is device id -1 in Arrow and 0 in DLPack and
 * that DLPack's kDLMAIA and kDLTrn have no Arrow value.
 *
 * Events: a DLPack tensor carries none (its protocol synchronizes on the
 * consumer's stream before handing the tensor over), so exporting first
 * orders the consumer's stream after the array's event, or waits on the
 * host; importing produces an array with sync_event NULL. */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "ferry/dlpack_abi.h"
#include "internal.h"

/* ---- element types --------------------------------------------------------------- */

struct FerryDlpackType {
  const char* format; /* exact format, or a prefix ending in ':' for timestamps */
  uint8_t code;
  uint8_t bits;
};

/* Arrow formats whose single data buffer is a plain array of machine
 * numbers. Temporal types export as their integer storage. The first entry
 * of each (code, bits) pair is what an imported tensor becomes. */
static const struct FerryDlpackType kDlpackTypes[] = {
    {"c", kDLInt, 8},     {"s", kDLInt, 16},    {"i", kDLInt, 32},
    {"l", kDLInt, 64},    {"C", kDLUInt, 8},    {"S", kDLUInt, 16},
    {"I", kDLUInt, 32},   {"L", kDLUInt, 64},   {"e", kDLFloat, 16},
    {"f", kDLFloat, 32},  {"g", kDLFloat, 64},  {"tdD", kDLInt, 32},
    {"tdm", kDLInt, 64},  {"tts", kDLInt, 32},  {"ttm", kDLInt, 32},
    {"ttu", kDLInt, 64},  {"ttn", kDLInt, 64},  {"tDs", kDLInt, 64},
    {"tDm", kDLInt, 64},  {"tDu", kDLInt, 64},  {"tDn", kDLInt, 64},
    {"tss:", kDLInt, 64}, {"tsm:", kDLInt, 64}, {"tsu:", kDLInt, 64},
    {"tsn:", kDLInt, 64},
};
#define FERRY_N_DLPACK_TYPES (sizeof(kDlpackTypes) / sizeof(kDlpackTypes[0]))

static const struct FerryDlpackType* type_for_format(const char* format) {
  for (size_t i = 0; i < FERRY_N_DLPACK_TYPES; i++) {
    /* f matches when it is a prefix of format and either the whole of it
     * or a prefix entry (ending in ':'); written out, without strlen and
     * strcmp calls, as it runs on every export. Entries are never empty. */
    const char* f = kDlpackTypes[i].format;
    size_t k = 0;
    while (f[k] != '\0' && f[k] == format[k]) k++;
    if (f[k] == '\0' && (format[k] == '\0' || f[k - 1] == ':')) return &kDlpackTypes[i];
  }
  return NULL;
}

static const struct FerryDlpackType* type_for_dtype(DLDataType dtype) {
  for (size_t i = 0; i < FERRY_N_DLPACK_TYPES; i++) {
    if (kDlpackTypes[i].code == dtype.code && kDlpackTypes[i].bits == dtype.bits) {
      return &kDlpackTypes[i];
    }
  }
  return NULL;
}

/* Arrow and DLPack share these device type values. */
static int device_type_is_shared(int32_t type) {
  return (type >= ARROW_DEVICE_CPU && type <= ARROW_DEVICE_OPENCL) ||
         (type >= ARROW_DEVICE_VULKAN && type <= ARROW_DEVICE_HEXAGON);
}

/* ---- export
 * ------------------------------------------------------------------------------ */

/* One allocation: the tensor, the array it owns (moved in) or the hook
 * that gives a borrowed one back (shared), its shape and stride. */
struct FerryDlpackExport {
  DLManagedTensorVersioned tensor;
  struct ArrowDeviceArray array; /* released when shared */
  FerryReleaseHook hook;         /* shared: called once by the deleter */
  void* user_data;
  int64_t shape[1];
  int64_t strides[1];
};

static void release_exported_tensor(DLManagedTensorVersioned* self) {
  if (self == NULL) return;
  struct FerryDlpackExport* exported = (struct FerryDlpackExport*)self->manager_ctx;
  FerryReleaseHook hook = exported->hook;
  void* user_data = exported->user_data;
  if (exported->array.array.release != NULL) ferry_device_array_release(&exported->array);
  free(exported);
  if (hook != NULL) hook(user_data);
}

/* Borrows `schema` and `consumer_stream`; on success moves `array` into the
 * tensor (`move`), or borrows it and keeps `hook` for the deleter. */
static int ferry_dlpack_export(const struct ArrowSchema* schema,
                               const struct ArrowDeviceArray* array, int move,
                               FerryReleaseHook hook, void* user_data, void* consumer_stream,
                               struct DLManagedTensorVersioned** out,
                               struct FerryError* error) {
  if (schema == NULL || schema->release == NULL || schema->format == NULL) {
    return ferry__set_error(error, EINVAL,
                           "schema must be a live (not NULL, not released) schema with a "
                           "format");
  }
  if (array == NULL) return ferry__set_error(error, EINVAL, "array must not be NULL");
  if (out == NULL) return ferry__set_error(error, EINVAL, "out must not be NULL");
  *out = NULL;
  const struct ArrowArray* a = &array->array;
  if (a->release == NULL) return ferry__set_error(error, EINVAL, "array is released");
  const struct FerryDlpackType* type = type_for_format(schema->format);
  if (type == NULL) {
    return ferry__set_error(error, EINVAL,
                           "format \"%s\" is not a fixed-width number type DLPack can "
                           "describe (integers, floats, dates, times, timestamps, "
                           "durations; booleans are bit-packed in Arrow)",
                           schema->format);
  }
  if (a->dictionary != NULL || schema->dictionary != NULL) {
    return ferry__set_error(error, EINVAL,
                           "the array is dictionary-encoded: export the dictionary or "
                           "decode it first");
  }
  if (a->n_buffers != 2 || a->buffers == NULL || a->n_children != 0) {
    return ferry__set_error(
        error, EINVAL,
        "a \"%s\" array must have 2 buffers and no children (it has %" PRId64
        " buffers, %" PRId64 " children)",
        schema->format, a->n_buffers, a->n_children);
  }
  if (a->length < 0 || a->offset < 0) {
    return ferry__set_error(error, EINVAL,
                           "length (%" PRId64 ") and offset (%" PRId64
                           ") must not be negative",
                           a->length, a->offset);
  }
  int64_t element_bytes = type->bits / 8;
  /* The consumer addresses bytes up to (offset + length) * element size.
   * Overflow builtins, not a division by element_bytes: a 64-bit division
   * costs tens of cycles on every export. */
  int64_t end, end_bytes;
  if (__builtin_add_overflow(a->offset, a->length, &end) ||
      __builtin_mul_overflow(end, element_bytes, &end_bytes)) {
    return ferry__set_error(error, EINVAL,
                           "offset (%" PRId64 ") + length (%" PRId64
                           ") elements of %" PRId64 " bytes overflow int64",
                           a->offset, a->length, element_bytes);
  }
  if (a->null_count > 0 || (a->null_count < 0 && a->buffers[0] != NULL)) {
    return ferry__set_error(
        error, EINVAL, "the array has %s nulls: DLPack tensors cannot represent nulls",
        a->null_count > 0 ? "some"
                          : "an unknown number of (null_count -1 "
                            "with a validity bitmap)");
  }
  if (a->length > 0 && a->buffers[1] == NULL) {
    return ferry__set_error(error, EINVAL,
                           "buffer 1 (data) is NULL for %" PRId64 " values", a->length);
  }
  if (!device_type_is_shared(array->device_type)) {
    return ferry__set_error(error, EINVAL, "device type %d has no DLPack equivalent",
                           (int)array->device_type);
  }
  int64_t id = array->device_type == ARROW_DEVICE_CPU ? 0 : array->device_id;
  if (id < 0 || id > INT32_MAX) {
    return ferry__set_error(
        error, EINVAL, "device id %" PRId64 " does not fit DLPack's int32 device id", id);
  }
  /* The tensor has no event: order the consumer (or the host) first. */
  FERRY_RETURN_NOT_OK(ferry_device_array_wait(array, consumer_stream, error));

  /* malloc, not calloc: every field is written below, and glibc serves
   * malloc (not calloc) from its per-thread cache. */
  struct FerryDlpackExport* exported =
      (struct FerryDlpackExport*)malloc(sizeof(struct FerryDlpackExport));
  if (exported == NULL)
    return ferry__set_error(error, ENOMEM, "out of memory (DLPack tensor)");
  DLManagedTensorVersioned* tensor = &exported->tensor;
  memset(tensor, 0, sizeof(*tensor));
  exported->array.array.release = NULL; /* the move below needs a released slot */
  exported->hook = hook;
  exported->user_data = user_data;
  tensor->version.major = DLPACK_MAJOR_VERSION;
  tensor->version.minor = DLPACK_MINOR_VERSION;
  tensor->manager_ctx = exported;
  tensor->deleter = release_exported_tensor;
  /* Arrow data is immutable once exported; the buffers are the array's own. */
  tensor->flags = DLPACK_FLAG_BITMASK_READ_ONLY;
  exported->shape[0] = a->length;
  exported->strides[0] = 1;
  DLTensor* t = &tensor->dl_tensor;
  /* The allocation's own pointer plus byte_offset, as DLPack recommends. */
  t->data = a->length == 0 ? NULL : (void*)(uintptr_t)a->buffers[1];
  t->byte_offset = a->length == 0 ? 0 : (uint64_t)(a->offset * element_bytes);
  t->device.device_type = (DLDeviceType)array->device_type;
  t->device.device_id = (int32_t)id;
  t->ndim = 1;
  t->dtype.code = type->code;
  t->dtype.bits = type->bits;
  t->dtype.lanes = 1;
  t->shape = exported->shape;
  t->strides = exported->strides;
  if (move) ferry_device_array_move((struct ArrowDeviceArray*)array, &exported->array);
  *out = tensor;
  return FERRY_OK;
}

int ferry_device_array_to_dlpack(const struct ArrowSchema* schema,
                                 struct ArrowDeviceArray* array, void* consumer_stream,
                                 struct DLManagedTensorVersioned** out,
                                 struct FerryError* error) {
  return ferry_dlpack_export(schema, array, 1, NULL, NULL, consumer_stream, out, error);
}

/* Borrows `schema`, `array` and `consumer_stream`; the deleter calls `hook`. */
int ferry_device_array_to_dlpack_shared(const struct ArrowSchema* schema,
                                        const struct ArrowDeviceArray* array,
                                        void* consumer_stream, FerryReleaseHook release_hook,
                                        void* user_data, struct DLManagedTensorVersioned** out,
                                        struct FerryError* error) {
  return ferry_dlpack_export(schema, array, 0, release_hook, user_data, consumer_stream, out,
                             error);
}

/* ---- import
 * -------------------------------------------------------------------------------- */

/* The imported array's release hook: the tensor goes back to its producer. */
static void delete_imported_tensor(void* user_data) {
  DLManagedTensorVersioned* tensor = (DLManagedTensorVersioned*)user_data;
  if (tensor->deleter != NULL) tensor->deleter(tensor);
}

/* The imported schema's format is a string literal of kDlpackTypes: the
 * schema owns no memory, and its release only marks it released. */
static void release_static_schema(struct ArrowSchema* schema) { schema->release = NULL; }

/* Moves `tensor` in on success (see ferry.h). */
int ferry_device_array_from_dlpack(struct DLManagedTensorVersioned* tensor,
                                   struct ArrowSchema* schema_out,
                                   struct ArrowDeviceArray* array_out,
                                   struct FerryError* error) {
  if (tensor == NULL) return ferry__set_error(error, EINVAL, "tensor must not be NULL");
  if (schema_out == NULL || array_out == NULL) {
    return ferry__set_error(error, EINVAL, "schema_out and array_out must not be NULL");
  }
  if (schema_out->release != NULL || array_out->array.release != NULL) {
    return ferry__set_error(error, EINVAL,
                           "schema_out and array_out must be released beforehand");
  }
  if (tensor->version.major != DLPACK_MAJOR_VERSION) {
    return ferry__set_error(
        error, EINVAL,
        "DLPack major version %u is not %d: ferry cannot read this tensor "
        "(only its deleter may be called)",
        tensor->version.major, DLPACK_MAJOR_VERSION);
  }
  const DLTensor* t = &tensor->dl_tensor;
  if (t->ndim != 0 && t->ndim != 1) {
    return ferry__set_error(
        error, EINVAL,
        "the tensor has %d dimensions; only 1-D (or 0-D) tensors become "
        "Arrow arrays without a copy",
        (int)t->ndim);
  }
  int64_t length = 1;
  if (t->ndim == 1) {
    if (t->shape == NULL || t->shape[0] < 0) {
      return ferry__set_error(error, EINVAL, "the tensor's shape is missing or negative");
    }
    length = t->shape[0];
    if (t->strides != NULL && t->strides[0] != 1 && length > 1) {
      return ferry__set_error(error, EINVAL,
                             "the tensor is strided (stride %" PRId64
                             " elements): Arrow needs contiguous values",
                             t->strides[0]);
    }
  }
  if (t->dtype.lanes != 1) {
    return ferry__set_error(error, EINVAL, "vector elements (%u lanes) have no Arrow type",
                           (unsigned)t->dtype.lanes);
  }
  const struct FerryDlpackType* type = type_for_dtype(t->dtype);
  if (type == NULL) {
    return ferry__set_error(
        error, EINVAL, "DLPack type code %u with %u bits has no zero-copy Arrow type%s",
        (unsigned)t->dtype.code, (unsigned)t->dtype.bits,
        t->dtype.code == kDLBool ? " (DLPack booleans are bytes, Arrow's are bits)" : "");
  }
  int32_t device_type = (int32_t)t->device.device_type;
  if (!device_type_is_shared(device_type)) {
    return ferry__set_error(error, EINVAL,
                           "DLPack device type %d has no Arrow equivalent%s",
                           (int)device_type,
                           device_type == kDLMAIA  ? " (kDLMAIA)"
                           : device_type == kDLTrn ? " (kDLTrn)"
                                                   : "");
  }
  if (device_type != ARROW_DEVICE_CPU && t->device.device_id < 0) {
    return ferry__set_error(error, EINVAL, "DLPack device id %d of %s is negative",
                           (int)t->device.device_id, ferry_device_type_name(device_type));
  }
  int64_t device_id = device_type == ARROW_DEVICE_CPU ? -1 : t->device.device_id;
  if (t->data == NULL && length > 0) {
    return ferry__set_error(error, EINVAL,
                           "the tensor's data is NULL for %" PRId64 " values", length);
  }
  /* The values are bytes [byte_offset, byte_offset + size) after data: each
   * part is range-checked before the pointer arithmetic. */
  int64_t element_bytes = type->bits / 8;
  int64_t size; /* an overflow builtin, not a (slow) division: see the export */
  if (__builtin_mul_overflow(length, element_bytes, &size)) {
    return ferry__set_error(error, EINVAL,
                           "the tensor's %" PRId64 " elements of %" PRId64
                           " bytes overflow int64",
                           length, element_bytes);
  }
  const void* buffers[2] = {NULL, NULL};
  if (t->data != NULL) {
    uintptr_t start = (uintptr_t)t->data;
    if (t->byte_offset > (uint64_t)(UINTPTR_MAX - start)) {
      return ferry__set_error(error, EINVAL,
                             "byte_offset %" PRIu64
                             " moves the data pointer %p past the end of the address "
                             "space",
                             (uint64_t)t->byte_offset, t->data);
    }
    if (t->byte_offset > (uint64_t)(INT64_MAX - size)) {
      return ferry__set_error(error, EINVAL,
                             "byte_offset %" PRIu64 " + %" PRId64
                             " bytes of values overflow int64",
                             (uint64_t)t->byte_offset, size);
    }
    if ((uint64_t)size > (uint64_t)(UINTPTR_MAX - start - t->byte_offset)) {
      return ferry__set_error(error, EINVAL,
                             "the tensor's %" PRId64
                             " bytes at %p + byte_offset %" PRIu64
                             " run past the end of the address space",
                             size, t->data, (uint64_t)t->byte_offset);
    }
    buffers[1] = (const void*)(start + (uintptr_t)t->byte_offset);
  }

  /* The array first: it is the only step that can fail (out of memory),
   * and until it succeeds the caller still owns the tensor. */
  FERRY_RETURN_NOT_OK(ferry_array_init(&array_out->array, length, 0, 0, 2, buffers, 0,
                                       delete_imported_tensor, tensor, error));
  array_out->device_id = device_id;
  array_out->device_type = device_type;
  array_out->sync_event = NULL;
  memset(array_out->reserved, 0, sizeof(array_out->reserved));
  memset(schema_out, 0, sizeof(*schema_out));
  schema_out->format = type->format;
  schema_out->release = release_static_schema;
  return FERRY_OK;
}
