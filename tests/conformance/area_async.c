/* Area "async": the three async entry points of ferry_it.h.
 *   async-export  the plugin's ferry_it_export_async into the C reference's
 *                 strict checking consumer (ferry_it_check_async)
 *   async-check   the C reference's producer into the plugin's checking
 *                 consumer: every verdict must be 0
 *   async-strict  the plugin's checking consumer against scripted producers
 *                 that break one rule each (more tasks than requested, an
 *                 early end marker, a wrong injected message, a task after
 *                 the refusal, no release): each must be a failing verdict,
 *                 the missing release an ETIMEDOUT within the time given
 * Every handoff is bounded (ASYNC_TIMEOUT_MS); a hung one is a failure and
 * leaves its handler allocated (the producer may still call it). A plugin
 * without the async entry points is SKIPPED loudly. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "areas.h"
#include "async_script.h"
#include "case_spec.h"

#define ASYNC_TIMEOUT_MS 10000

static const char* const async_cases[] = {
    "int32",
    "utf8:nulls=3:offset=2:window=4:batches=5:seed=21",
    "list_int32:device=sim:window=2:batches=3:seed=301",
    "int8:batches=0",
    "int32:batches=6:cancel=2",
    "utf8:device=sim:batches=5:cancel=1:window=4",
    "int32:fail=export",
    "int32:fail=get_schema",
    "int64:device=sim:batches=3:fail=get_next@2",
    "int32:batches=3:fail=get_next@4:window=2",
    "int32:batches=4:fail=consumer@1",
    "dict_int32_utf8:batches=4:fail=consumer@3:window=4",
};

/* `producer`'s export_async of `text` into `consumer`'s checking handler. */
static void run_pair(struct suite* s, const char* area, const struct it_plugin* producer,
                     const struct it_plugin* consumer, const char* text) {
  struct test t;
  struct it_case c;
  struct it_allocations before;
  if (test_start(&t, s, area, text, text, &c, &before) != 0) return;
  /* Heap memory: a hung producer keeps it. */
  struct ArrowAsyncDeviceStreamHandler* handler = calloc(1, sizeof *handler);
  if (handler == NULL) {
    test_fail(&t, "out of memory");
    test_end(&t);
    return;
  }
  void* ticket = NULL;
  int rc = consumer->check_async(text, handler, &ticket);
  if (rc != 0) {
    test_fail(&t, "%s's ferry_it_check_async failed with %s: %s", consumer->name,
              ferry_errno_name(rc), it_plugin_error(consumer));
    free(handler);
    test_end(&t);
    return;
  }
  rc = producer->export_async(text, handler);
  char said[512] = "";
  if (rc != 0) snprintf(said, sizeof said, "%s", it_plugin_error(producer));
  if (c.fail == IT_FAIL_EXPORT) {
    if (rc != EIO || strstr(said, "injected failure at export") == NULL) {
      test_fail(&t, "fail=export: ferry_it_export_async returned %s \"%s\", expected EIO",
                rc == 0 ? "0" : ferry_errno_name(rc), said);
    }
  } else if (rc != 0) {
    test_fail(&t, "%s's ferry_it_export_async failed with %s: %s", producer->name,
              ferry_errno_name(rc), said);
  }
  int verdict = consumer->async_result(ticket, ASYNC_TIMEOUT_MS);
  if (verdict == ETIMEDOUT) {
    test_fail(&t, "HUNG: no verdict after %d ms: %s", ASYNC_TIMEOUT_MS,
              it_plugin_error(consumer));
    test_end(&t); /* the handler stays: the producer may still call it */
    return;
  }
  if (verdict != 0) {
    test_fail(&t, "%s's checking consumer: %s: %s", consumer->name,
              ferry_errno_name(verdict), it_plugin_error(consumer));
  }
  free(handler);
  /* A producer may free its own state after the release, on its thread. */
  struct it_allocations now;
  for (int ms = 0; ms < 3000; ms++) {
    baseline_take(s, &now);
    if (it_allocations_compare(&before, &now, NULL, 0) == 0) break;
    struct timespec pause = {0, 1000000};
    nanosleep(&pause, NULL);
  }
  baseline_expect(&t, &before, "after the async handoff");
  test_end(&t);
}

/* ---- scripted producers for async-strict (core/harness/async_script.h) ---- */

enum misdeed { OVERRUN, EARLY_END, WRONG_MESSAGE, TASK_AFTER_REFUSAL, NO_RELEASE };

static const struct {
  enum misdeed misdeed;
  const char* case_text;
  const char* what;
} misdeeds[] = {
    {OVERRUN, "int32:batches=3", "three tasks with one requested"},
    {EARLY_END, "int32:batches=3", "the end marker after one of three batches"},
    {WRONG_MESSAGE, "int32:batches=3:fail=get_next@2",
     "on_error(EIO, \"boom\") instead of \"injected failure at get_next 2\""},
    {TASK_AFTER_REFUSAL, "int32:batches=3:fail=consumer@1:window=2",
     "a task after the refused one"},
    {NO_RELEASE, "int32:batches=1", "no release"},
};

static void run_misdeed(struct suite* s, int index) {
  const char* text = misdeeds[index].case_text;
  char label[256];
  snprintf(label, sizeof label, "%s (%s)", text, misdeeds[index].what);
  struct test t;
  test_begin(&t, s, "async-strict", label);
  struct it_script* p = calloc(1, sizeof *p);
  struct ArrowAsyncDeviceStreamHandler* handler = calloc(1, sizeof *handler);
  void* ticket = NULL;
  int rc =
      p == NULL || handler == NULL ? ENOMEM : s->ut.check_async(text, handler, &ticket);
  if (rc != 0) {
    test_fail(&t, "ferry_it_check_async failed with %s: %s", ferry_errno_name(rc),
              rc == ENOMEM ? "out of memory" : it_plugin_error(&s->ut));
    free(p);
    free(handler);
    test_end(&t);
    return;
  }
  it_script_init(p, handler);
  /* The batches themselves are right: the C reference's stream of the case. */
  char source_case[128];
  snprintf(source_case, sizeof source_case, "int32:batches=3");
  if (s->ref.export_stream(source_case, &p->source) != 0) {
    test_fail(&t, "the C reference could not export %s", source_case);
    test_end(&t); /* the ticket waits for a release that never comes: leaked */
    return;
  }
  rc = it_script_schema(p);
  if (rc != 0)
    test_fail(&t, "on_schema refused a correct schema (%s)", ferry_errno_name(rc));
  switch (misdeeds[index].misdeed) {
    case OVERRUN:
      for (int i = 0; i < 3; i++) it_script_task(p);
      handler->on_next_task(handler, NULL, NULL);
      break;
    case EARLY_END:
      if (it_script_wait_demand(p, 5)) it_script_task(p);
      handler->on_next_task(handler, NULL, NULL);
      break;
    case WRONG_MESSAGE:
      if (it_script_wait_demand(p, 5)) it_script_task(p);
      handler->on_error(handler, EIO, "boom", NULL);
      break;
    case TASK_AFTER_REFUSAL:
      if (it_script_wait_demand(p, 5) && it_script_task(p) == 0) {
        test_fail(&t, "on_next_task accepted task 1 of a fail=consumer@1 case");
      }
      it_script_task(p);
      break;
    case NO_RELEASE:
      if (it_script_wait_demand(p, 5)) it_script_task(p);
      handler->on_next_task(handler, NULL, NULL);
      break;
  }
  if (misdeeds[index].misdeed == NO_RELEASE) {
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    rc = s->ut.async_result(ticket, 100);
    clock_gettime(CLOCK_MONOTONIC, &b);
    double waited = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
    if (rc != ETIMEDOUT) {
      test_fail(&t,
                "ferry_it_async_result(ticket, 100) returned %s before the release, "
                "expected ETIMEDOUT",
                rc == 0 ? "0" : ferry_errno_name(rc));
    } else if (waited > 5.0) {
      test_fail(&t, "ferry_it_async_result(ticket, 100) waited %.1f s", waited);
    }
    if (rc != ETIMEDOUT) {
      test_end(&t); /* the ticket is gone: the handler must not be released now */
      return;
    }
    handler->release(handler); /* late: the verdict of a correct stream follows */
    rc = s->ut.async_result(ticket, ASYNC_TIMEOUT_MS);
    if (rc != 0) {
      test_fail(&t, "after the late release the verdict is %s: %s", ferry_errno_name(rc),
                it_plugin_error(&s->ut));
    }
  } else {
    handler->release(handler);
    rc = s->ut.async_result(ticket, ASYNC_TIMEOUT_MS);
    if (rc == 0) {
      test_fail(&t, "the checking consumer accepted a producer that broke the rule");
    } else if (rc == ETIMEDOUT) {
      test_fail(&t, "HUNG: no verdict after %d ms", ASYNC_TIMEOUT_MS);
      test_end(&t);
      return;
    }
  }
  it_script_free(p);
  free(p);
  free(handler);
  test_end(&t);
}

void run_async(struct suite* s, const char* device) {
  const char* missing = NULL;
  if (!it_plugin_has_async(&s->ut, &missing)) {
    char why[160];
    snprintf(why, sizeof why, "%s lacks %s", s->ut.name, missing);
    suite_skip(s, "async", "(every async case)", why);
    return;
  }
  if (!it_plugin_has_async(&s->ref, &missing)) {
    char why[160];
    snprintf(why, sizeof why, "the C reference lacks %s", missing);
    suite_skip(s, "async", "(every async case)", why);
    return;
  }
  for (size_t i = 0; i < sizeof async_cases / sizeof async_cases[0]; i++) {
    char text[256];
    const char* sim = strstr(async_cases[i], "device=sim");
    if (device != NULL && sim != NULL) {
      snprintf(text, sizeof text, "%.*sdevice=%s%s", (int)(sim - async_cases[i]),
               async_cases[i], device, sim + strlen("device=sim"));
    } else {
      snprintf(text, sizeof text, "%s", async_cases[i]);
    }
    run_pair(s, "async-export", &s->ut, &s->ref, text);
    run_pair(s, "async-check", &s->ref, &s->ut, text);
  }
  for (size_t i = 0; i < sizeof misdeeds / sizeof misdeeds[0]; i++)
    run_misdeed(s, (int)i);
}
