/* Schemas and arrays written field by field in tests (hostile_test,
 * prepared_test): the release callbacks only mark them released, so each
 * test controls every field, hostile ones included. */
#ifndef FERRY_TEST_HAND_MADE_H
#define FERRY_TEST_HAND_MADE_H

#include <string.h>

#include "ferry/ferry.h"

static inline void mark_schema_released(struct ArrowSchema* schema) {
  schema->release = NULL;
}
static inline void mark_array_released(struct ArrowArray* array) { array->release = NULL; }

static inline void init_schema(struct ArrowSchema* s, const char* format,
                               int64_t n_children, struct ArrowSchema** children) {
  memset(s, 0, sizeof *s);
  s->format = format;
  s->name = "";
  s->flags = ARROW_FLAG_NULLABLE;
  s->n_children = n_children;
  s->children = children;
  s->release = mark_schema_released;
}

static inline void init_array(struct ArrowArray* a, int64_t length, int64_t n_buffers,
                              const void** buffers, int64_t n_children,
                              struct ArrowArray** children) {
  memset(a, 0, sizeof *a);
  a->length = length;
  a->n_buffers = n_buffers;
  a->buffers = buffers;
  a->n_children = n_children;
  a->children = children;
  a->release = mark_array_released;
}

#endif  // FERRY_TEST_HAND_MADE_H
