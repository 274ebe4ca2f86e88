/* Producing the schema and the device array of a case. */
#ifndef FERRY_IT_C_CASE_EXPORT_H
#define FERRY_IT_C_CASE_EXPORT_H

#include <stdint.h>

#include "case_spec.h"

#pragma GCC visibility push(hidden)

/* Fills `out` (released or zeroed) with the schema of case `c`: the field is
 * named by the TYPE word, list child "item", struct children "a" and "b",
 * every field nullable; the dictionary of dict_int32_utf8 is utf8. The caller
 * owns `out` on success; on failure it is left released. */
int it_export_schema(const struct it_case* c, struct ArrowSchema* out,
                     struct FerryError* error);

/* Fills `out` (released or zeroed) with the array of case `c` whose values
 * use `seed` (the case's seed, or seed + b for batch b of a stream), on
 * `device` (NULL for the CPU, else borrowed from the registry). Physical
 * slots before the offset and null slots hold deterministic garbage that
 * never equals the formula, so a checker that ignores either fails. On a
 * device the data is still in flight: the consumer must wait on sync_event.
 * The caller owns `out` on success (its release frees every buffer); on
 * failure nothing stays allocated. */
int it_export_array(const struct it_case* c, uint32_t seed, struct FerryDevice* device,
                    struct ArrowDeviceArray* out, struct FerryError* error);

#pragma GCC visibility pop

#endif  // FERRY_IT_C_CASE_EXPORT_H
