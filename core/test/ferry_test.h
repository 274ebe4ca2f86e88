/* A minimal unit-test harness for the C core: no dependencies, one binary per
 * test file, closing line "N passed, N failed" (which CI reads).
 *
 *   FERRY_TEST(array_init_sets_fields) { CHECK_EQ_INT(1, 1); }
 *   FERRY_TEST_MAIN()
 *
 * Tests register themselves through constructors; each runs once, in file
 * order. A failed CHECK records the location and ends the current test. */
#ifndef FERRY_TEST_FERRY_TEST_H
#define FERRY_TEST_FERRY_TEST_H

#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void (*ferry_test_fn)(void);

struct ferry_test_entry {
  const char* name;
  ferry_test_fn fn;
};

#define FERRY_TEST_MAX 512
static struct ferry_test_entry ferry_test_entries[FERRY_TEST_MAX];
static int ferry_test_count;
static jmp_buf ferry_test_jump;
static int ferry_test_current_failed;

static inline void ferry_test_register(const char* name, ferry_test_fn fn) {
  if (ferry_test_count < FERRY_TEST_MAX) {
    ferry_test_entries[ferry_test_count].name = name;
    ferry_test_entries[ferry_test_count].fn = fn;
    ferry_test_count++;
  }
}

#define FERRY_TEST(name)                                                      \
  static void name(void);                                                     \
  __attribute__((constructor)) static void ferry_test_register_##name(void) { \
    ferry_test_register(#name, name);                                         \
  }                                                                           \
  static void name(void)

static inline void ferry_test_fail(const char* file, int line, const char* what) {
  printf("FAIL %s:%d: %s\n", file, line, what);
  ferry_test_current_failed = 1;
  longjmp(ferry_test_jump, 1);
}

/* ferry_test_fail with a printf-formatted message (the CHECK_* macros' common tail). */
__attribute__((format(printf, 3, 4))) static inline void ferry_test_failf(
    const char* file, int line, const char* fmt, ...) {
  char msg[1400];
  va_list args;
  va_start(args, fmt);
  vsnprintf(msg, sizeof msg, fmt, args);
  va_end(args);
  ferry_test_fail(file, line, msg);
}

#define CHECK(cond)                                                       \
  do {                                                                    \
    if (!(cond)) ferry_test_fail(__FILE__, __LINE__, "CHECK(" #cond ")"); \
  } while (0)

#define CHECK_EQ_INT(expected, actual)                                          \
  do {                                                                          \
    long long ferry_e_ = (long long)(expected), ferry_a_ = (long long)(actual); \
    if (ferry_e_ != ferry_a_) {                                                 \
      ferry_test_failf(__FILE__, __LINE__, "%s == %s: expected %lld, got %lld", \
                       #expected, #actual, ferry_e_, ferry_a_);                 \
    }                                                                           \
  } while (0)

#define CHECK_STR(expected, actual)                                                    \
  do {                                                                                 \
    const char* ferry_e_ = (expected);                                                 \
    const char* ferry_a_ = (actual);                                                   \
    if (ferry_a_ == NULL || strcmp(ferry_e_, ferry_a_) != 0) {                         \
      ferry_test_failf(__FILE__, __LINE__, "%s: expected \"%s\", got \"%s\"", #actual, \
                       ferry_e_, ferry_a_ ? ferry_a_ : "(null)");                      \
    }                                                                                  \
  } while (0)

/* Checks that `haystack` contains `needle` (for error messages). */
#define CHECK_CONTAINS(haystack, needle)                                         \
  do {                                                                           \
    const char* ferry_h_ = (haystack);                                           \
    if (ferry_h_ == NULL || strstr(ferry_h_, (needle)) == NULL) {                \
      ferry_test_failf(__FILE__, __LINE__, "%s: \"%s\" does not contain \"%s\"", \
                       #haystack, ferry_h_ ? ferry_h_ : "(null)", (needle));     \
    }                                                                            \
  } while (0)

/* Allocates 100 bytes into `a` and 0 bytes into `b` (void* variables) on
 * `device` (a FerryDevice*) and checks that both are distinct pointers
 * aligned to 64 bytes, as every backend promises. */
#define CHECK_ALLOCATE_100_AND_0(device, a, b)                         \
  do {                                                                 \
    CHECK_EQ_INT(0, ferry_device_allocate((device), 100, &(a), NULL)); \
    CHECK_EQ_INT(0, ferry_device_allocate((device), 0, &(b), NULL));   \
    CHECK((a) != NULL && (b) != NULL && (a) != (b));                   \
    CHECK_EQ_INT(0, (uintptr_t)(a) % 64);                              \
    CHECK_EQ_INT(0, (uintptr_t)(b) % 64);                              \
  } while (0)

/* Runs test i; returns 1 when it failed. setjmp lives here, alone, so no
 * caller variable can be clobbered by the longjmp of a failed CHECK. */
static inline int ferry_test_run_one(int i) {
  ferry_test_current_failed = 0;
  if (setjmp(ferry_test_jump) == 0) ferry_test_entries[i].fn();
  return ferry_test_current_failed;
}

/* Runs every registered test (or those whose name contains argv[1]). */
#define FERRY_TEST_MAIN()                                                            \
  int main(int argc, char** argv) {                                                  \
    int passed = 0, failed = 0;                                                      \
    for (int i = 0; i < ferry_test_count; i++) {                                     \
      if (argc > 1 && strstr(ferry_test_entries[i].name, argv[1]) == NULL) continue; \
      if (ferry_test_run_one(i)) {                                                   \
        printf("  in test %s\n", ferry_test_entries[i].name);                        \
        failed++;                                                                    \
      } else {                                                                       \
        passed++;                                                                    \
      }                                                                              \
    }                                                                                \
    printf("%d passed, %d failed\n", passed, failed);                                \
    return failed == 0 && passed > 0 ? 0 : 1;                                        \
  }

#endif  // FERRY_TEST_FERRY_TEST_H
