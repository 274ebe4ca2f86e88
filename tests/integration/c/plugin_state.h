/* Process-wide state of the C test plugin: the count of live allocations its
 * exports own, and the per-thread message of the last failure.
 *
 * Everything declared here is private to libferry_it_c.so (hidden), so the
 * plugin exports exactly the six entry points of ferry_it.h. */
#ifndef FERRY_IT_C_PLUGIN_STATE_H
#define FERRY_IT_C_PLUGIN_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "ferry/ferry.h"

#pragma GCC visibility push(hidden)

#if defined(__GNUC__)
#define IT_PRINTF(fmt_index, args_index) \
  __attribute__((format(printf, fmt_index, args_index)))
#else
#define IT_PRINTF(fmt_index, args_index)
#endif

/* Allocates `size` zeroed host bytes (at least one) on behalf of an export and
 * counts them as live; the caller frees them with it_free. NULL when out of
 * memory. */
void* it_alloc(size_t size);
/* Frees memory from it_alloc (NULL is accepted) and uncounts it. */
void it_free(void* ptr);
/* Adds `delta` to the live count, for allocations made elsewhere (device
 * buffers made through ferry_device_allocate on behalf of an export). */
void it_count_allocations(int64_t delta);
/* Current number of live allocations owned by this plugin's exports. */
int64_t it_live_allocations(void);

/* Evaluates `expr` (an errno-style int) and returns it when non-zero. */
#define IT_RETURN_NOT_OK(expr)                     \
  do {                                             \
    int it_status_ = (expr);                       \
    if (it_status_ != FERRY_OK) return it_status_; \
  } while (0)

/* Formats a message into `error` (NULL is accepted) and returns `code`, so
 * call sites read `return it_error(error, EINVAL, "...", ...);`. */
int it_error(struct FerryError* error, int code, const char* fmt, ...) IT_PRINTF(3, 4);
/* Prepends "<prefix>: " to the message already in `error` and returns `code`. */
int it_error_prefix(struct FerryError* error, int code, const char* prefix);

/* Stores `message` as this thread's last error (truncated to
 * FERRY_ERROR_MESSAGE_SIZE - 1 bytes) and returns `code`. */
int it_set_last_error(int code, const char* message);
/* This thread's last error ("" when none); the buffer is thread-local. */
const char* it_last_error(void);

#pragma GCC visibility pop

#endif  // FERRY_IT_C_PLUGIN_STATE_H
