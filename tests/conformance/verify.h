/* verify: the suite's own checker of an exported schema and device array
 * against a case (case_spec.h) by the formula of oracle.h, independent of
 * every plugin's checker. */
#ifndef FERRY_CONFORMANCE_VERIFY_H
#define FERRY_CONFORMANCE_VERIFY_H

#include <stddef.h>
#include <stdint.h>

#include "oracle.h"
#include "ferry/ferry.h"

/* 0 when `schema` is exactly the schema of `c`; else -1 and the first
 * difference in `why`. Borrows `schema`. */
int verify_schema(const struct it_case* c, const struct ArrowSchema* schema, char* why,
                  size_t why_size);

/* 0 when `array` holds case `c` with `seed` (seed + b for stream batch b):
 * device fields, then — after waiting on sync_event — length, offset,
 * null_count, every validity bit, every non-null value, children and
 * dictionary. Borrows both (a deep copy is made when the device is not
 * host-accessible). */
int verify_device_array(const struct it_case* c, uint32_t seed,
                        const struct ArrowSchema* schema, struct ArrowDeviceArray* array,
                        char* why, size_t why_size);

/* ferry's own validator (FULL level) as a third opinion: 0 when clean. */
int verify_with_core(const struct ArrowSchema* schema,
                     const struct ArrowDeviceArray* array, char* why, size_t why_size);

#endif  // FERRY_CONFORMANCE_VERIFY_H
