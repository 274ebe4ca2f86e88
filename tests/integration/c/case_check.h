/* Checking a schema and a device array against a case: everything a checker
 * verifies according to cases.md. */
#ifndef FERRY_IT_C_CASE_CHECK_H
#define FERRY_IT_C_CASE_CHECK_H

#include <stdint.h>

#include "case_spec.h"

#pragma GCC visibility push(hidden)

/* Checks that `schema` (borrowed) is the schema of case `c`: formats, names,
 * nullable flags, children and dictionary. `where` prefixes every message
 * ("" or "batch 2: "). FERRY_OK, or EINVAL naming the first difference. */
int it_check_schema(const struct it_case* c, const struct ArrowSchema* schema,
                    const char* where, struct FerryError* error);

/* Checks that `array` (borrowed; described by `schema`, already checked) holds
 * case `c` with values of `seed`: device type, reserved words, then, after
 * waiting on sync_event (and copying to the host when the device's memory is
 * not host-accessible), length, offset, exact null_count, every validity bit,
 * every non-null value (floats bit-exactly), children and dictionary.
 * FERRY_OK, or EINVAL naming the element, e.g.
 * `int32 element 5 (physical 7): expected 12345, got 0`; device failures
 * keep ferry's code. */
int it_check_array(const struct it_case* c, uint32_t seed,
                   const struct ArrowSchema* schema, struct ArrowDeviceArray* array,
                   const char* where, struct FerryError* error);

#pragma GCC visibility pop

#endif  // FERRY_IT_C_CASE_CHECK_H
