/* suite: shared state of one conformance run (the plugin under test, the C
 * reference), test reporting and allocation baselines. */
#ifndef FERRY_CONFORMANCE_SUITE_H
#define FERRY_CONFORMANCE_SUITE_H

#include <stddef.h>
#include <stdint.h>

#include "allocations.h"
#include "ferry/ferry.h"
#include "oracle.h"
#include "plugin.h"

struct suite {
  struct it_plugin ut;  /* the plugin under test */
  struct it_plugin ref; /* the C reference (the same handle when ut is C) */
  int ut_is_ref;
  int verbose;
  int64_t passed, failed, skipped;
  struct FerryDevice* sim[FERRY_SIM_DEVICE_COUNT];
  int cuda_available, rocm_available;
  /* How the plugin's sim exports synchronise (reported at the end). */
  int64_t sim_exports, sim_with_event, sim_poison_before_wait;
};

/* One test: any number of FAIL lines, counted once. */
struct test {
  struct suite* suite;
  char area[32];
  char case_text[512];
  int failed;
};

void test_begin(struct test* t, struct suite* s, const char* area, const char* case_text);
/* Prints `FAIL <runtime> <area> <case>: <what>` and marks the test failed. */
void test_fail(struct test* t, const char* fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Counts the test (passed unless a test_fail happened); prints PASS when verbose. */
void test_end(struct test* t);
/* Prints a loud SKIPPED line and counts it (not a pass, not a failure). */
void suite_skip(struct suite* s, const char* area, const char* case_text,
                const char* why);

/* The allocation ledger (core/harness/allocations.h) of the plugin under
 * test, the C reference, the core and the sim devices. */
void baseline_take(const struct suite* s, struct it_allocations* out);
/* The plugin under test's ferry_it_live_allocations() in a baseline. */
int64_t baseline_ut(const struct it_allocations* baseline);
/* Reports every counter above `before` as a failure of `t` (one below it is
 * an earlier test's leak freed late: a note); returns the number above. */
int baseline_expect(struct test* t, const struct it_allocations* before, const char* when);

/* Verifies the release watch's `group` (release_watch.h) and reports its
 * findings as one failure of `t`. Late releases of earlier tests' structs
 * are not this test's finding: the earlier test already failed on them. */
void suite_verify_releases(struct test* t, int group);

/* Parses a case the suite generated (a failure is a bug of the suite). */
int suite_parse(struct test* t, const char* text, struct it_case* out);

/* The start every area's test shares: test_begin(t, s, area, label), then,
 * when `c` is not NULL, `case_text` parsed into `c`, then the baseline taken
 * into `before`. Returns 0, or -1 when the case does not parse (the test has
 * failed and ended then). */
int test_start(struct test* t, struct suite* s, const char* area, const char* label,
               const char* case_text, struct it_case* c, struct it_allocations* before);

/* Watches an export (its schema as "schema", its array as "array") or a
 * stream (as "stream") in a new release-watch group; returns the group. */
int watch_export(struct ArrowSchema* schema, struct ArrowDeviceArray* array);
int watch_stream(struct ArrowDeviceArrayStream* stream);

/* Exports `case_text` from the plugin under test (a stream when `stream`,
 * else an array) and releases what it got at once, for tests that judge only
 * the outcome; returns the export's result, with the plugin's last_error()
 * just after it in *message when `message` is not NULL. A failed export that
 * left its out-structs live fails `t`: "<verb> but left the stream live" or
 * "<verb> but left its out-structs live". */
int export_and_discard(struct test* t, const char* case_text, int stream,
                       const char* verb, const char** message);

/* Exports `case_text` as an array from `plugin` (the suite's plugin under
 * test or its C reference, &suite->ref) into `schema` and `array`. On failure
 * `t` fails with "export_array failed with <errno>: <the plugin's message>"
 * (with "the C reference cannot export it (<errno>): <message>" for the
 * reference) and ends, and what the export left is released. Returns the
 * export's result. */
int export_array_or_end(struct test* t, const struct it_plugin* plugin,
                        const char* case_text, struct ArrowSchema* schema,
                        struct ArrowDeviceArray* array);

/* Starts a "ref-check" test (`area`) of `case_text`: the C reference checks
 * what the plugin under test exports. Returns -1, starting nothing, when the
 * plugin under test is the reference itself. */
int ref_check_start(struct test* t, struct suite* s, const char* area,
                    const char* case_text, struct it_allocations* before);

/* Exports `case_text` as a stream from the plugin under test into `out`.
 * On failure `t` fails with "export_stream failed with <errno>: <the
 * plugin's message><note>" and ends, and what the export left is released.
 * Returns the export's result. */
int export_stream_or_end(struct test* t, const char* case_text,
                         struct ArrowDeviceArrayStream* out, const char* note);

/* Releases the live `stream` through its own callback and fails `t` with
 * "stream release did not set release to NULL" when it did not mark itself. */
void release_stream_checked(struct test* t, struct ArrowDeviceArrayStream* stream);

/* The end they share: suite_verify_releases(t, group), baseline_expect(t,
 * before, when), test_end(t). */
void test_finish(struct test* t, int group, const struct it_allocations* before,
                 const char* when);

#endif  // FERRY_CONFORMANCE_SUITE_H
