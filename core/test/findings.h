/* Collecting the validator's findings in tests (validate_test, hostile_test):
 * a FerryFindingFn that keeps the first MAX_FINDINGS findings and counts
 * all of them, and lookups by rule, path and text. */
#ifndef FERRY_TEST_FINDINGS_H
#define FERRY_TEST_FINDINGS_H

#include <stdio.h>
#include <string.h>

#include "ferry/ferry.h"

#define MAX_FINDINGS 128
struct Findings {
  int n;
  char rule[MAX_FINDINGS][32];
  char where[MAX_FINDINGS][1024];
  char what[MAX_FINDINGS][768];
};

static inline void collect(void* user_data, const char* rule, const char* where,
                    const char* what) {
  struct Findings* f = (struct Findings*)user_data;
  if (f->n < MAX_FINDINGS) {
    snprintf(f->rule[f->n], sizeof f->rule[0], "%s", rule);
    snprintf(f->where[f->n], sizeof f->where[0], "%s", where);
    snprintf(f->what[f->n], sizeof f->what[0], "%s", what);
  }
  f->n++;
}

static inline void print_findings(const struct Findings* f) {
  for (int i = 0; i < f->n && i < MAX_FINDINGS; i++) {
    printf("    finding %s: %s: %s\n", f->rule[i], f->where[i], f->what[i]);
  }
}

/* Number of kept findings with rule `rule`. */
static inline int count_rule(const struct Findings* f, const char* rule) {
  int n = 0;
  for (int i = 0; i < f->n && i < MAX_FINDINGS; i++) n += strcmp(f->rule[i], rule) == 0;
  return n;
}

/* 1 when a finding with this rule and path exists whose text contains `what`. */
static inline int has_finding(const struct Findings* f, const char* rule, const char* where,
                       const char* what) {
  for (int i = 0; i < f->n && i < MAX_FINDINGS; i++) {
    if (strcmp(f->rule[i], rule) == 0 && strcmp(f->where[i], where) == 0 &&
        strstr(f->what[i], what) != NULL) {
      return 1;
    }
  }
  print_findings(f);
  printf("    missing finding %s: %s: ...%s...\n", rule, where, what);
  return 0;
}

/* Clears `f` and `error`, then validates `array` against `schema` at `level`
 * into them; returns the validator's code. */
static inline int validate_collecting(const struct ArrowSchema* schema,
                                      const struct ArrowDeviceArray* array, int32_t level,
                                      struct Findings* f, struct FerryError* error) {
  memset(f, 0, sizeof *f);
  ferry_error_init(error);
  return ferry_validate_device_array(schema, array, level, collect, f, error);
}

#endif  // FERRY_TEST_FINDINGS_H
