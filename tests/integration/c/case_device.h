/* Finding the device a case names. */
#ifndef FERRY_IT_C_CASE_DEVICE_H
#define FERRY_IT_C_CASE_DEVICE_H

#include "case_spec.h"

#pragma GCC visibility push(hidden)

/* Resolves the device of case `c` (whose text is `spec`, for the message):
 * `*out` is NULL for the CPU (plain host memory, no registry needed), else
 * the registry's device, borrowed for the life of the process. When the
 * device is unavailable returns ferry's code (ENODEV/ENOTSUP) with a
 * message naming the device and ferry's reason. */
int it_case_device_resolve(const struct it_case* c, const char* spec,
                           struct FerryDevice** out, struct FerryError* error);

#pragma GCC visibility pop

#endif  // FERRY_IT_C_CASE_DEVICE_H
