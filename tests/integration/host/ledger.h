/* The release ledger: the host's own proof of release-exactly-once and of
 * unchanged buffer addresses, independent of what any plugin reports.
 *
 * Tracking a struct replaces its release callback (and those of every child
 * and dictionary below it) with a counting wrapper that forwards the first
 * call to the producer's original callback and only counts any further call,
 * so a double release becomes a finding instead of a double free. For arrays
 * the ledger also records every buffer address at tracking time and compares
 * them when the struct is released: the consumer must hand back exactly the
 * producer's buffers.
 *
 * The host runs one handoff at a time, so the ledger is one process-wide
 * table (guarded by a mutex: consumers may release on their own threads). A
 * consumer may move a struct before releasing it: the wrapper then finds the
 * entry by the struct's private_data, which moves with it. */
#ifndef FERRY_IT_HOST_LEDGER_H
#define FERRY_IT_HOST_LEDGER_H

#include <stddef.h>
#include <stdint.h>

#include "ferry/ferry.h"

/* Forgets every entry (call between handoffs, after verifying). */
void it_ledger_reset(void);

/* Interposes on `schema` and everything below it; `where` names the root
 * ("schema", "batch[1].schema"). Borrows `schema`, which stays owned by
 * whoever owns it; 0 on success, -1 when the table is full. */
int it_ledger_track_schema(struct ArrowSchema* schema, const char* where);

/* Same for an array tree, recording every buffer address as well. */
int it_ledger_track_array(struct ArrowArray* array, const char* where);

/* Same for a stream struct (only its release is interposed here; the stream
 * watch wraps the other callbacks). */
int it_ledger_track_stream(struct ArrowDeviceArrayStream* stream, const char* where);

/* Checks every entry: released exactly once, release set to NULL by the
 * original callback, buffers unchanged at release. Writes the first finding
 * (and how many there are) into `message`; returns the number of findings. */
int64_t it_ledger_verify(char* message, size_t size);

/* Number of entries tracked since the last reset. */
int64_t it_ledger_count(void);

/* Nanoseconds spent inside the producers' original release callbacks since
 * the last reset (the benchmark subtracts this from a handoff). */
int64_t it_ledger_release_ns(void);

/* Writes "array: - 0x..; array.children[0]: - 0x.." listing the buffer
 * addresses recorded at tracking time for the array entries whose path
 * starts with `prefix` ("" for all), for the demo's hop lines. */
void it_ledger_describe_buffers(const char* prefix, char* out, size_t size);

/* Same for the addresses the consumer handed back at release. */
void it_ledger_describe_released_buffers(const char* prefix, char* out, size_t size);

#endif  // FERRY_IT_HOST_LEDGER_H
