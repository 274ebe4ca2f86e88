/* Buffer sizes and the rule on NULL buffers (private to the core).
 *
 * Validation and the deep copy both go through these two functions, so they
 * cannot disagree about which buffer may be NULL or how large one is. */
#ifndef FERRY_SRC_BUFFER_SIZE_H
#define FERRY_SRC_BUFFER_SIZE_H

#include <stdint.h>

#include "ferry/ferry.h"
#include "format.h"

/* 1 when buffer `i` of `array` (layout `format`, n_buffers already matching
 * it) may be NULL: the validity bitmap when null_count is 0 or -1; a
 * variable-size data buffer always (its size follows the offsets, and FULL
 * validation checks they address nothing); a view's variadic data buffers
 * always (FULL checks their sizes are 0); a view's variadic sizes buffer when
 * there are no variadic data buffers; every other buffer when length is 0. */
static inline int ferry__buffer_may_be_null(const struct FerryFormat* format,
                                            const struct ArrowArray* array, int64_t i) {
  if (i >= format->n_fixed_buffers) {
    /* View types: variadic data buffers are sized by the sizes buffer (FULL
     * validation checks a NULL one has size 0); the sizes buffer itself, the
     * last one, holds one int64 per variadic data buffer. */
    return i < array->n_buffers - 1 || array->n_buffers == format->n_fixed_buffers + 1;
  }
  switch (format->roles[i]) {
    case FERRY_BUFFER_VALIDITY: return array->null_count <= 0;
    case FERRY_BUFFER_VAR_DATA: return 1; /* FULL checks the offsets address nothing */
    default: return array->length <= 0; /* a negative length is its own finding */
  }
}

/* The largest offset + length for which no buffer size of the layout can
 * overflow int64 (a little less than the exact limit: the widest slot of any
 * fixed buffer, one more slot for offsets). Beyond it ferry__buffer_size may
 * refuse the array; validation then asks it buffer by buffer, so that both
 * follow one rule. */
static inline int64_t ferry__max_slots(const struct FerryFormat* format) {
  int64_t widest = 1;
  for (int32_t i = 0; i < format->n_fixed_buffers; i++) {
    int64_t bytes = 1;
    switch (format->roles[i]) {
      case FERRY_BUFFER_DATA: bytes = format->bit_width / 8; break;
      case FERRY_BUFFER_OFFSETS:
      case FERRY_BUFFER_SIZES: bytes = format->offset_bytes; break;
      case FERRY_BUFFER_UNION_OFFSETS: bytes = 4; break;
      case FERRY_BUFFER_VIEWS: bytes = 16; break;
      default: break; /* validity bits, type ids: at most one byte a slot */
    }
    if (bytes > widest) widest = bytes;
  }
  return INT64_MAX / widest - 1;
}

/* ferry_array_buffer_size with the format already parsed: `format_text` is
 * the schema's format string, for messages. Borrows everything. */
int ferry__buffer_size(const struct FerryFormat* format, const char* format_text,
                       const struct ArrowArray* array, ArrowDeviceType device_type,
                       int64_t device_id, int64_t i, int64_t* size_out,
                       struct FerryError* error);

#endif  // FERRY_SRC_BUFFER_SIZE_H
