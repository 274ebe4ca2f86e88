/* Private helpers shared by the core's source files. Never installed. */
#ifndef FERRY_SRC_INTERNAL_H
#define FERRY_SRC_INTERNAL_H

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>

#include "ferry/ferry.h"

#if defined(__GNUC__)
#define FERRY_PRINTF(fmt_index, args_index) \
  __attribute__((format(printf, fmt_index, args_index)))
#else
#define FERRY_PRINTF(fmt_index, args_index)
#endif

/* Formats a message into `error` (NULL is accepted) and returns `code`, so
 * call sites read `return ferry__set_error(error, EINVAL, "...", ...);`. */
int ferry__set_error(struct FerryError* error, int code, const char* fmt, ...)
    FERRY_PRINTF(3, 4);
int ferry__set_error_v(struct FerryError* error, int code, const char* fmt, va_list args);

/* Evaluates `expr` (an int errno-style result) and returns it when non-zero. */
/* The largest buffer ferry reads or copies whole (FULL validation, the deep
 * copy): 2^48 bytes, 256 TiB. A declaration above it (a length or an offset
 * a hostile producer made up) is refused with its size named, never read:
 * the C data interface gives no buffer sizes, so this bound is what stops a
 * walk from running through unmapped memory on the most blatant lies. The
 * bindings' value readers use the same bound. */
#define FERRY_MAX_READ_BYTES (INT64_C(1) << 48)

#define FERRY_RETURN_NOT_OK(expr)    \
  do {                               \
    int ferry_status_ = (expr);      \
    if (ferry_status_ != FERRY_OK) { \
      return ferry_status_;          \
    }                                \
  } while (0)

/* The byte count to pass to aligned_alloc for a `size`-byte request (size >=
 * 0): rounded up to a multiple of `alignment` (a power of two), and at least
 * one `alignment` so that a 0-byte request still gets a unique pointer, as
 * malloc(0) need not. 0 when that does not fit in int64 or size_t. */
static inline int64_t ferry__aligned_alloc_size(int64_t size, int64_t alignment) {
  if (size > INT64_MAX - (alignment - 1)) return 0;
  int64_t rounded = (size + alignment - 1) / alignment * alignment;
  if (rounded == 0) rounded = alignment;
  if ((uint64_t)rounded > (uint64_t)SIZE_MAX) return 0;
  return rounded;
}

/* The argument checks that copy and move_to_device share: the schema, the
 * source and the destination are given, the source is live and the
 * destination is not. `verb` ("copy", "move") names the operation in the
 * released-source message. Borrows everything; returns FERRY_OK or EINVAL. */
int ferry__check_transfer_args(const struct ArrowSchema* schema,
                               const struct ArrowDeviceArray* src,
                               const struct ArrowDeviceArray* out, const char* verb,
                               struct FerryError* error);

#endif  // FERRY_SRC_INTERNAL_H
