/* Reporting and baselines (see suite.h). */
#include "suite.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void test_begin(struct test* t, struct suite* s, const char* area,
                const char* case_text) {
  memset(t, 0, sizeof *t);
  t->suite = s;
  snprintf(t->area, sizeof t->area, "%s", area);
  snprintf(t->case_text, sizeof t->case_text, "%s", case_text);
}

void test_fail(struct test* t, const char* fmt, ...) {
  char what[2048];
  va_list args;
  va_start(args, fmt);
  vsnprintf(what, sizeof what, fmt, args);
  va_end(args);
  printf("FAIL %s %s %s: %s\n", t->suite->ut.runtime, t->area,
         t->case_text[0] ? t->case_text : "\"\"", what);
  fflush(stdout);
  t->failed = 1;
}

void test_end(struct test* t) {
  if (t->failed) {
    t->suite->failed++;
  } else {
    t->suite->passed++;
    if (t->suite->verbose) {
      printf("PASS %s %s %s\n", t->suite->ut.runtime, t->area,
             t->case_text[0] ? t->case_text : "\"\"");
    }
  }
}

void suite_skip(struct suite* s, const char* area, const char* case_text,
                const char* why) {
  printf("SKIPPED %s %s %s: %s\n", s->ut.runtime, area, case_text, why);
  s->skipped++;
}

void baseline_take(const struct suite* s, struct baseline* out) {
  memset(out, 0, sizeof *out);
  out->ut = s->ut.live_allocations();
  out->ref = s->ut_is_ref ? out->ut : s->ref.live_allocations();
  out->exports = ferry_live_exports();
  for (int d = 0; d < FERRY_SIM_DEVICE_COUNT; d++) {
    out->sim[d] = s->sim[d] ? ferry_device_live_allocations(s->sim[d]) : 0;
  }
}

/* A counter above its baseline is this test's leak. One below it means
 * that something an earlier test leaked was freed late (a garbage
 * collector): that earlier test already failed, so this is only a note. */
static int compare(struct test* t, const char* when, const char* counter, int64_t now,
                   int64_t before) {
  if (now > before) {
    test_fail(t, "%s: %s is %lld, was %lld", when, counter, (long long)now,
              (long long)before);
    return 1;
  }
  if (now < before) {
    printf("note %s %s %s: %s: %s fell from %lld to %lld (an earlier leak freed late)\n",
           t->suite->ut.runtime, t->area, t->case_text, when, counter, (long long)before,
           (long long)now);
  }
  return 0;
}

int baseline_expect(struct test* t, const struct baseline* before, const char* when) {
  struct baseline now;
  baseline_take(t->suite, &now);
  char counter[128];
  snprintf(counter, sizeof counter, "ferry_it_live_allocations() of %s",
           t->suite->ut.runtime);
  int differences = compare(t, when, counter, now.ut, before->ut);
  if (!t->suite->ut_is_ref) {
    differences += compare(t, when, "ferry_it_live_allocations() of the C reference",
                           now.ref, before->ref);
  }
  differences += compare(t, when, "ferry_live_exports()", now.exports, before->exports);
  for (int d = 0; d < FERRY_SIM_DEVICE_COUNT; d++) {
    snprintf(counter, sizeof counter, "live allocations of sim device %d", d);
    differences += compare(t, when, counter, now.sim[d], before->sim[d]);
  }
  return differences;
}

int suite_parse(struct test* t, const char* text, struct conf_case* out) {
  char why[256];
  if (conf_case_parse(text, out, why, sizeof why) != 0) {
    test_fail(t, "the suite's own parser rejects its case: %s", why);
    return -1;
  }
  return 0;
}
