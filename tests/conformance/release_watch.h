/* release_watch: counts every release callback of an exported tree.
 *
 * Each release pointer in a schema, array (children and dictionary included)
 * or stream is replaced by a wrapper that finds the struct in a table (by
 * address, or by private_data when a consumer moved it), counts the call and
 * forwards only the first one, so a double release becomes a finding instead
 * of a double free. Thread-safe: releases may come from any thread. */
#ifndef FERRY_CONFORMANCE_RELEASE_WATCH_H
#define FERRY_CONFORMANCE_RELEASE_WATCH_H

#include <stddef.h>
#include <stdint.h>

#include "ferry/arrow_c_device_abi.h"

/* Starts a new group; structs watched from now on belong to it. */
int watch_new_group(void);
/* Wrap the release callbacks of a live tree (borrowed; released trees are ignored). */
void watch_schema(struct ArrowSchema* schema, const char* where);
void watch_array(struct ArrowArray* array, const char* where);
void watch_stream(struct ArrowDeviceArrayStream* stream, const char* where);
/* Checks that every struct of `group` was released exactly once and left
 * with release == NULL, then forgets the group. Returns the number of
 * findings, all written to `why` (joined by "; ", as far as it reaches). Structs never
 * released stay known (as orphans) so that a late release is still forwarded exactly
 * once. */
int64_t watch_verify(int group, char* why, size_t why_size);

#endif  // FERRY_CONFORMANCE_RELEASE_WATCH_H
