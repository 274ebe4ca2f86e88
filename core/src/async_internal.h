/* What the async sources (async_abi.c, async_sender.c, async_consumer.c)
 * share. Private to the core. */
#ifndef FERRY_SRC_ASYNC_INTERNAL_H
#define FERRY_SRC_ASYNC_INTERNAL_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include "ferry/ferry.h"

/* Initialises a condition variable that measures timeouts on
 * CLOCK_MONOTONIC, so that a wall-clock jump neither shortens nor stretches
 * a wait. Returns 0 or an errno code. */
int ferry__async_cond_init(pthread_cond_t* cond);

/* The absolute CLOCK_MONOTONIC time `timeout_ms` from now into `*deadline`;
 * returns 0 when `timeout_ms` is negative (wait forever: no deadline),
 * 1 otherwise. */
int ferry__async_deadline(int64_t timeout_ms, struct timespec* deadline);

/* Waits on `cond` (with `mutex` held) until signalled or `deadline` (NULL:
 * forever) has passed: 0, or ETIMEDOUT once the deadline is past. Spurious
 * wake-ups return 0: callers loop on their predicate. */
int ferry__async_wait(pthread_cond_t* cond, pthread_mutex_t* mutex,
                      const struct timespec* deadline);

/* Size in bytes of binary-encoded schema metadata (0 for NULL), or -1 when
 * a count or length is negative or the total does not fit in int32. */
int64_t ferry__async_metadata_size(const char* metadata);

#endif  // FERRY_SRC_ASYNC_INTERNAL_H
