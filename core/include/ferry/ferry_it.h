/* ferry_it.h: the plugin contract of `ferry check --plugin` and of ferry's
 * cross-language tests: six C entry points a test plugin exports, and three
 * more for async device streams (optional for a host: a plugin without them
 * is reported as lacking async support and its async pairs are not run).
 *
 * A plugin is a shared library that produces and checks the cases of the
 * case grammar (docs/cases.md: "int32:length=100:nulls=3:device=sim") in
 * one runtime. `ferry check --plugin LIB.so --case CASE` checks a plugin's
 * exports; ferry's own tests load one plugin per runtime
 * (build/plugins/libferry_it_<runtime>.so) into one process and drive the
 * full producer x consumer matrix. Public: write a plugin for your own
 * producer and consumer and let the tool check them.
 *
 * Common rules
 * - Return value: 0 on success, an errno code otherwise (EINVAL for a bad
 *   case string, ENODEV/ENOTSUP for an unavailable device, EIO for injected
 *   and producer failures). On failure ferry_it_last_error() returns the
 *   message on the calling thread.
 * - No exception, panic or Lua error ever leaves these functions.
 * - Exported structs are consumer-allocated and must be released (or fresh)
 *   when passed in; on success they are producer-filled and owned by the
 *   caller; on failure they are left released and nothing was allocated.
 */
#ifndef FERRY_IT_H
#define FERRY_IT_H

#include <stdint.h>

#include "ferry/arrow_c_device_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define FERRY_IT_EXPORT __declspec(dllexport)
#else
#define FERRY_IT_EXPORT __attribute__((visibility("default")))
#endif

/** Exports the array described by `case_spec` into `schema_out` and
 *  `array_out` (both released or zeroed beforehand); on success the caller
 *  owns both and releases them (the plugin's allocations return when it
 *  does), on failure both stay released. */
FERRY_IT_EXPORT int ferry_it_export_array(const char* case_spec,
                                          struct ArrowSchema* schema_out,
                                          struct ArrowDeviceArray* array_out);

/** Checks that `schema` and `array` hold exactly the case `case_spec`; takes
 *  ownership of both and releases them on success and on failure alike
 *  (the caller must not touch them afterwards). */
FERRY_IT_EXPORT int ferry_it_check_array(const char* case_spec,
                                         struct ArrowSchema* schema,
                                         struct ArrowDeviceArray* array);

/** Exports the stream described by `case_spec` into `out` (released or
 *  zeroed beforehand); on success the caller owns the stream and every
 *  schema and array it yields, on failure `out` stays released. */
FERRY_IT_EXPORT int ferry_it_export_stream(const char* case_spec,
                                           struct ArrowDeviceArrayStream* out);

/** Reads `stream` to its end (or to the injected failure the case expects)
 *  and checks every schema and batch; takes ownership of `stream` and
 *  releases it on success and on failure alike. */
FERRY_IT_EXPORT int ferry_it_check_stream(const char* case_spec,
                                          struct ArrowDeviceArrayStream* stream);

/** Returns the number of allocations owned by this runtime's exports that
 *  are still live now (buffers, private data); borrows nothing. */
FERRY_IT_EXPORT int64_t ferry_it_live_allocations(void);

/** Returns the message of the last failure on the calling thread ("" when
 *  none); the string is owned by the plugin and valid until the next call
 *  of an entry point on this thread. */
FERRY_IT_EXPORT const char* ferry_it_last_error(void);

/* ---- async device streams (docs/cases.md, "Async device streams") -------- */

struct ArrowAsyncDeviceStreamHandler;

/** Starts producing the case `case_spec` into the consumer's `handler`
 *  (borrowed until the producer calls `handler->release`): sets
 *  `handler->producer` (device type of the case), calls on_schema, one
 *  on_next_task per requested batch, the end marker, then release, from any
 *  thread the plugin chooses. Returns 0 when production started. In every
 *  outcome, a non-zero return included, the producer releases the handler
 *  exactly once and last (fail=export: on_error(EIO, "injected failure at
 *  export", NULL), release, then EIO with that message). */
FERRY_IT_EXPORT int ferry_it_export_async(const char* case_spec,
                                          struct ArrowAsyncDeviceStreamHandler* handler);

/** Fills `*handler_out` (caller-owned memory that must stay valid until the
 *  ticket is consumed by ferry_it_async_result) with a checking consumer of
 *  the case and stores a ticket in `*ticket_out`; the caller hands the
 *  handler to a producer, then collects the verdict with
 *  ferry_it_async_result. On a non-zero return nothing was allocated,
 *  `*ticket_out` is NULL and the handler must not be used. */
FERRY_IT_EXPORT int ferry_it_check_async(
    const char* case_spec, struct ArrowAsyncDeviceStreamHandler* handler_out,
    void** ticket_out);

/** Waits up to `timeout_ms` (>= 0) for the producer's release of the
 *  ticket's handler and the end of the check, then returns the verdict (0,
 *  or an errno code with the message in ferry_it_last_error) and frees the
 *  ticket. Returns ETIMEDOUT, keeping the ticket (call again, or leave it:
 *  a hung producer's ticket is never freed), when the release has not come
 *  yet. Never waits longer than `timeout_ms`. */
FERRY_IT_EXPORT int ferry_it_async_result(void* ticket, int64_t timeout_ms);

/** Signatures of the entry points, for hosts that load plugins with dlsym. */
typedef int (*ferry_it_export_array_fn)(const char*, struct ArrowSchema*,
                                        struct ArrowDeviceArray*);
typedef int (*ferry_it_check_array_fn)(const char*, struct ArrowSchema*,
                                       struct ArrowDeviceArray*);
typedef int (*ferry_it_export_stream_fn)(const char*, struct ArrowDeviceArrayStream*);
typedef int (*ferry_it_check_stream_fn)(const char*, struct ArrowDeviceArrayStream*);
typedef int64_t (*ferry_it_live_allocations_fn)(void);
typedef const char* (*ferry_it_last_error_fn)(void);
typedef int (*ferry_it_export_async_fn)(const char*,
                                        struct ArrowAsyncDeviceStreamHandler*);
typedef int (*ferry_it_check_async_fn)(const char*, struct ArrowAsyncDeviceStreamHandler*,
                                       void**);
typedef int (*ferry_it_async_result_fn)(void*, int64_t);

#ifdef __cplusplus
}
#endif

#endif  // FERRY_IT_H
