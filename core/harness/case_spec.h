/* The case grammar of docs/cases.md, parsed into a struct: THE parser of
 * the grammar in C (the C plugin, the hosts, the conformance mode and
 * `ferry check --plugin` all read cases through it; a new key is added here
 * and in each runtime's plugin):
 *
 *   CASE := TYPE ( ":" KEY "=" VALUE )*
 *
 * Decisions the grammar leaves open (documented here, tested through the C
 * plugin in tests/integration/c/test/it_c_case_spec_test.c):
 * - Matching is exact and case-sensitive; no whitespace is allowed.
 * - Numbers are plain decimal digits (leading zeros allowed, no sign, no
 *   "+"); a leading "-" is reported as a negative value.
 * - A key given twice is an error ("duplicate key").
 * - Limits: length and offset each at most IT_CASE_MAX_SLOTS and together too
 *   (so every 32-bit offsets buffer fits); nulls and batches any value up to
 *   INT64_MAX; seed 0..4294967295; fail=get_next@N and fail=consumer@N need
 *   1 <= N; window at least 1 (a consumer that requests 0 batches breaks the
 *   spec's request(n > 0) rule), cancel any value (0: never).
 * - The async keys (window, cancel, fail=consumer@N) are parsed for every
 *   entry point; the array and synchronous stream entry points ignore them
 *   (a stream case with fail=consumer@N is a plain stream for them).
 * - The parser only maps the device word (cpu, sim, cuda, rocm) to its
 *   ArrowDeviceType; whether the device is available is decided by the entry
 *   points through ferry_device_resolve.
 * Every error is EINVAL with a message naming the offending part and the
 * whole case, e.g. `unknown key "lenght" in case "int32:lenght=3"`. */
#ifndef FERRY_HARNESS_CASE_SPEC_H
#define FERRY_HARNESS_CASE_SPEC_H

#include <stdint.h>

#include "ferry/ferry.h"

enum it_type {
  IT_INT8,
  IT_INT16,
  IT_INT32,
  IT_INT64,
  IT_UINT8,
  IT_UINT16,
  IT_UINT32,
  IT_UINT64,
  IT_FLOAT32,
  IT_FLOAT64,
  IT_BOOL,
  IT_UTF8,
  IT_BINARY,
  IT_LIST_INT32,
  IT_STRUCT_INT32_UTF8,
  IT_DICT_INT32_UTF8,
  IT_TYPE_COUNT
};

enum it_fail {
  IT_FAIL_NONE,
  IT_FAIL_EXPORT,     /* the export entry point fails */
  IT_FAIL_GET_NEXT,   /* the fail_at-th get_next call (1-based) fails */
  IT_FAIL_GET_SCHEMA, /* get_schema fails */
  IT_FAIL_CONSUMER    /* async only: the checking consumer refuses the fail_at-th task */
};

/* Largest length + offset of a case: 2^28 slots keep every int32 offsets
 * buffer in range (utf8 values have at most 5 bytes, lists 3 items). */
#define IT_CASE_MAX_SLOTS ((int64_t)1 << 28)

struct it_case {
  enum it_type type;
  int64_t length;              /* default 16 */
  int64_t nulls;               /* default 0: no validity bitmap */
  uint32_t seed;               /* default 1 */
  int64_t offset;              /* default 0 */
  ArrowDeviceType device_type; /* default ARROW_DEVICE_CPU */
  const char* device_name;     /* "cpu", "sim", "cuda" or "rocm" (static) */
  int64_t batches;             /* default 3 */
  enum it_fail fail;           /* default IT_FAIL_NONE */
  int64_t fail_at;             /* N of fail=get_next@N or fail=consumer@N, else 0 */
  int64_t window;              /* async: batches requested after on_schema; default 1 */
  int64_t cancel; /* async: cancel after this many checked batches; 0 never */
};

/* Parses `spec` (borrowed) into `*out`; FERRY_OK, or EINVAL with the message
 * in `error` and `*out` unspecified. */
int it_case_parse(const char* spec, struct it_case* out, struct FerryError* error);

/* The TYPE word of `type` ("int32"), also the name of the top-level field. */
const char* it_type_name(enum it_type type);

/* The get_next call a consumer sees fail: fail_at of fail=get_next@N when
 * N <= batches + 1, else 0. A consumer stops at the end of the stream (call
 * batches + 1) and a producer keeps returning the end, so a failure
 * injected beyond it is never reached: such a case is a plain stream for
 * every checker (cases.md's "N-th call" counts the calls a consumer makes).
 * THE rule: the hosts, the conformance mode, the tool and the C plugin use
 * it. */
int64_t it_case_failing_get_next(const struct it_case* c);

/* The device id the plugin uses for a device type: -1 for the CPU, else 0. */
int64_t it_case_device_id(const struct it_case* c);

#endif  // FERRY_HARNESS_CASE_SPEC_H
