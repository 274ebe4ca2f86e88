/* Checking a stream against a case. */
#ifndef FERRY_IT_C_STREAM_CHECK_H
#define FERRY_IT_C_STREAM_CHECK_H

#include "case_spec.h"

#pragma GCC visibility push(hidden)

/* Reads `stream` (borrowed; the caller releases it) through its raw
 * callbacks, as any consumer in another runtime would, and checks it against
 * case `c`:
 * - the stream's device type;
 * - fail=get_schema: get_schema must return EIO and get_last_error exactly
 *   "injected failure at get_schema"; nothing more is read.
 * - otherwise the schema, then get_next until the end: exactly `batches`
 *   batches, batch b checked with seed + b, each released and marked so.
 * - fail=get_next@N with N <= batches + 1 (a failure the stream reaches):
 *   exactly N - 1 good batches, then call N must return EIO with
 *   get_last_error exactly "injected failure at get_next N"; the checker
 *   stops there and succeeds. A larger N is never reached, so the stream is
 *   checked as a plain one.
 * - fail=export concerns the exporter only and is ignored here. */
int it_check_stream(const struct it_case* c, struct ArrowDeviceArrayStream* stream,
                    struct FerryError* error);

#pragma GCC visibility pop

#endif  // FERRY_IT_C_STREAM_CHECK_H
