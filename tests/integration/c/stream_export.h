/* Producing the stream of a case. */
#ifndef FERRY_IT_C_STREAM_EXPORT_H
#define FERRY_IT_C_STREAM_EXPORT_H

#include "case_spec.h"

#pragma GCC visibility push(hidden)

/* Fills `out` (released or zeroed) with a stream of case `c` on `device`
 * (NULL for the CPU, else borrowed from the registry): get_schema gives the
 * case's schema, get_next yields `batches` arrays, batch b with seed + b,
 * then the end. Injected failures:
 * - fail=get_schema: every get_schema call returns EIO with
 *   "injected failure at get_schema";
 * - fail=get_next@N: the N-th get_next call (1-based, counting every call)
 *   returns EIO with "injected failure at get_next N" and yields no batch;
 *   the failure is one-shot, later calls carry on where the stream was.
 * The caller owns `out` on success; on failure it is left released and
 * nothing stays allocated. */
int it_export_stream(const struct it_case* c, struct FerryDevice* device,
                     struct ArrowDeviceArrayStream* out, struct FerryError* error);

#pragma GCC visibility pop

#endif  // FERRY_IT_C_STREAM_EXPORT_H
