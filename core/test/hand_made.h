/* Schemas, arrays and DLPack tensors written field by field in tests
 * (hostile_test, prepared_test, dlpack_test): the release callbacks only mark
 * them released, so each test controls every field, hostile ones included.
 * The schema and array fills themselves are core/harness/struct_fill.h's. */
#ifndef FERRY_TEST_HAND_MADE_H
#define FERRY_TEST_HAND_MADE_H

#include <string.h>

#include "ferry/dlpack_abi.h"
#include "ferry/ferry.h"
#include "struct_fill.h"

static inline void mark_schema_released(struct ArrowSchema* schema) {
  schema->release = NULL;
}
static inline void mark_array_released(struct ArrowArray* array) { array->release = NULL; }

static inline void init_schema(struct ArrowSchema* s, const char* format,
                               int64_t n_children, struct ArrowSchema** children) {
  it_fill_schema(s, format, "", ARROW_FLAG_NULLABLE, n_children, children,
                 mark_schema_released, NULL);
}

static inline void init_array(struct ArrowArray* a, int64_t length, int64_t n_buffers,
                              const void** buffers, int64_t n_children,
                              struct ArrowArray** children) {
  it_fill_array(a, length, n_buffers, buffers, n_children, children, mark_array_released,
                NULL);
}

/* A device array over a copy of `array` (its release included), on device
 * `type`:`id`, with no sync event. */
static inline struct ArrowDeviceArray on_device(const struct ArrowArray* array,
                                                ArrowDeviceType type, int64_t id) {
  struct ArrowDeviceArray d;
  memset(&d, 0, sizeof d);
  d.array = *array;
  d.device_type = type;
  d.device_id = id;
  return d;
}

/* A one-dimensional CPU int32 tensor over `data`, of shape `shape` (borrowed,
 * one element, set by the caller) and with `deleter`. */
static inline void init_int32_tensor(struct DLManagedTensorVersioned* t, int64_t* shape,
                                     void* data,
                                     void (*deleter)(struct DLManagedTensorVersioned*)) {
  memset(t, 0, sizeof *t);
  t->version.major = DLPACK_MAJOR_VERSION;
  t->deleter = deleter;
  t->dl_tensor.data = data;
  t->dl_tensor.device.device_type = kDLCPU;
  t->dl_tensor.ndim = 1;
  t->dl_tensor.dtype.code = kDLInt;
  t->dl_tensor.dtype.bits = 32;
  t->dl_tensor.dtype.lanes = 1;
  t->dl_tensor.shape = shape;
}

#endif  // FERRY_TEST_HAND_MADE_H
