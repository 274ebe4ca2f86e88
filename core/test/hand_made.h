/* Schemas and arrays written field by field in tests (hostile_test,
 * prepared_test): the release callbacks only mark them released, so each
 * test controls every field, hostile ones included. The fills themselves are
 * core/harness/struct_fill.h's. */
#ifndef FERRY_TEST_HAND_MADE_H
#define FERRY_TEST_HAND_MADE_H

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

#endif  // FERRY_TEST_HAND_MADE_H
