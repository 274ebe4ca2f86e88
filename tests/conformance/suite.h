/* suite: shared state of one conformance run (the plugin under test, the C
 * reference), test reporting and allocation baselines. */
#ifndef FERRY_CONFORMANCE_SUITE_H
#define FERRY_CONFORMANCE_SUITE_H

#include <stddef.h>
#include <stdint.h>

#include "conf_case.h"
#include "ferry/ferry.h"
#include "plugin.h"

struct suite {
  struct conf_plugin ut;  /* the plugin under test */
  struct conf_plugin ref; /* the C reference (the same handle when ut is C) */
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

/* Every allocation counter the suite can see. */
struct baseline {
  int64_t ut, ref, exports, sim[FERRY_SIM_DEVICE_COUNT];
};
void baseline_take(const struct suite* s, struct baseline* out);
/* Reports every counter that differs from `before` as a failure of `t`;
 * returns the number of differences. */
int baseline_expect(struct test* t, const struct baseline* before, const char* when);

/* Parses a case the suite generated (a failure is a bug of the suite). */
int suite_parse(struct test* t, const char* text, struct conf_case* out);

#endif  // FERRY_CONFORMANCE_SUITE_H
