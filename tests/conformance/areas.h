/* areas: the test areas of the conformance suite, one file each.
 *   area_export.c  1. exports verified by the suite's own checker (+ C checker's opinion)
 *                  2. streams
 *   area_errors.c  3. bad case strings
 *   area_inject.c  4. injected failures
 *   area_check.c   5. the plugin's checkers on C reference data, correct and tampered
 *   area_thread.c  6. per-thread last error, exports on other threads
 *   area_async.c   7. async device streams (ferry_it_export_async & co) */
#ifndef FERRY_CONFORMANCE_AREAS_H
#define FERRY_CONFORMANCE_AREAS_H

#include "suite.h"

/* area "export": export_array, own verification, ferry's validator, release. */
void run_array_export(struct suite* s, const char* case_text);
/* area "ref-check": the plugin's export handed to the C reference checker. */
void run_array_ref_check(struct suite* s, const char* case_text);
/* area "stream": export_stream read through the raw callbacks. */
void run_stream_export(struct suite* s, const char* case_text);
/* area "ref-check-stream": the plugin's stream handed to the C reference checker. */
void run_stream_ref_check(struct suite* s, const char* case_text);

/* area "errors" (and "errno" for the code class of ferry_it.h). */
void run_errors(struct suite* s);

/* area "inject": fail=export, fail=get_schema, fail=get_next@N. */
void run_inject(struct suite* s, const char* case_text);

/* area "check" / "check-stream": C reference data the plugin must accept. */
void run_check_array(struct suite* s, const char* case_text);
void run_check_stream(struct suite* s, const char* case_text);
/* area "tamper": data the plugin's checkers must reject. */
void run_tampering(struct suite* s);

/* area "thread". */
void run_threads(struct suite* s);

/* area "async" (area_async.c): the async entry points both ways with the C
 * reference, and the plugin's checking consumer against scripted producers
 * that break one rule each. `device` (NULL: none) replaces device=sim. */
void run_async(struct suite* s, const char* device);

/* Shared by the areas: the raw stream callbacks with the checks every call
 * needs. Each returns the callback's code. */
int stream_get_schema(struct ArrowDeviceArrayStream* stream, struct ArrowSchema* out);
int stream_get_next(struct ArrowDeviceArrayStream* stream, struct ArrowDeviceArray* out);
const char* stream_last_error(struct ArrowDeviceArrayStream* stream);

#endif  // FERRY_CONFORMANCE_AREAS_H
