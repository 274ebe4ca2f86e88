/* Area 4: injected failures travel as return code plus message, and nothing
 * leaks or is released twice on the way. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "areas.h"
#include "release_watch.h"
#include "verify.h"

static void inject_export(struct suite* s, const char* case_text, int stream) {
  struct test t, te;
  char label[600];
  snprintf(label, sizeof label, "%s[%s]", case_text,
           stream ? "export_stream" : "export_array");
  test_begin(&t, s, "inject", label);
  test_begin(&te, s, "errno", label);
  struct it_allocations before;
  baseline_take(s, &before);
  int rc = export_and_discard(&t, case_text, stream, "failed", NULL);
  if (rc == 0) {
    test_fail(&t, "fail=export: the export succeeded");
  } else {
    const char* m = it_plugin_error(&s->ut);
    if (strcmp(m, "injected failure at export") != 0) {
      test_fail(
          &t,
          "fail=export: message \"%s\", expected exactly \"injected failure at export\"",
          m);
    }
    if (rc != EIO) {
      test_fail(&te,
                "fail=export returned %s (%d); ferry_it.h says EIO for injected failures",
                ferry_errno_name(rc), rc);
    }
  }
  baseline_expect(&t, &before, "after the injected failure");
  test_end(&t);
  test_end(&te);
}

static void inject_stream(struct suite* s, const char* case_text, const struct it_case* c) {
  struct test t;
  struct it_allocations before;
  test_start(&t, s, "inject", case_text, NULL, NULL, &before);
  struct ArrowDeviceArrayStream stream;
  if (export_stream_or_end(&t, case_text, &stream, " (the failure is injected later)") !=
      0)
    return;
  int group = watch_stream(&stream);
  char why[1024];
  struct ArrowSchema schema;
  int rc = stream_get_schema(&stream, &schema);
  if (c->fail == IT_FAIL_GET_SCHEMA) {
    if (rc == 0) {
      test_fail(&t, "fail=get_schema: get_schema succeeded");
      it_watch_schema(&schema, "schema");
      schema.release(&schema);
    } else {
      if (rc != EIO)
        test_fail(&t, "get_schema returned %s, expected EIO", ferry_errno_name(rc));
      const char* m = stream_last_error(&stream);
      if (strcmp(m, "injected failure at get_schema") != 0) {
        test_fail(
            &t,
            "get_last_error \"%s\", expected exactly \"injected failure at get_schema\"",
            m);
      }
      if (schema.release != NULL) {
        test_fail(&t, "get_schema failed but left its out-schema live");
        schema.release(&schema);
      }
    }
  } else {
    int have_schema = rc == 0;
    if (rc != 0) {
      test_fail(&t, "get_schema failed with %s: %s", ferry_errno_name(rc),
                stream_last_error(&stream));
    } else {
      it_watch_schema(&schema, "schema");
      if (verify_schema(c, &schema, why, sizeof why) != 0) test_fail(&t, "%s", why);
    }
    /* Calls 1 .. N-1 succeed; call N fails when a correct consumer gets
     * there (it_case_failing_get_next); a larger N makes a plain stream. */
    int64_t n = c->fail_at;
    int64_t calls = it_case_failing_get_next(c) > 0 ? n : c->batches + 1;
    for (int64_t call = 1; call <= calls && !t.failed; call++) {
      struct ArrowDeviceArray batch;
      rc = stream_get_next(&stream, &batch);
      int expect_failure = call == n;
      if (expect_failure) {
        const char* m = stream_last_error(&stream);
        char want[64];
        snprintf(want, sizeof want, "injected failure at get_next %lld", (long long)n);
        if (rc == 0) {
          test_fail(&t, "get_next call %lld succeeded, expected the injected failure",
                    (long long)call);
          if (batch.array.release != NULL) {
            it_watch_array(&batch.array, "batch");
            batch.array.release(&batch.array);
          }
        } else {
          if (rc != EIO) {
            test_fail(&t, "get_next call %lld returned %s, expected EIO", (long long)call,
                      ferry_errno_name(rc));
          }
          if (strcmp(m, want) != 0) {
            test_fail(&t, "get_last_error \"%s\", expected exactly \"%s\"", m, want);
          }
          if (batch.array.release != NULL) {
            test_fail(&t, "get_next failed but left its out-array live");
            batch.array.release(&batch.array);
          }
        }
        break;
      }
      if (rc != 0) {
        test_fail(&t, "get_next call %lld failed with %s (%s), only call %lld may fail",
                  (long long)call, ferry_errno_name(rc), stream_last_error(&stream),
                  (long long)n);
        break;
      }
      int64_t b = call - 1;
      if (b < c->batches) {
        if (batch.array.release == NULL) {
          test_fail(&t, "the stream ended after %lld batches, expected %lld",
                    (long long)b, (long long)c->batches);
          break;
        }
        it_watch_array(&batch.array, "batch");
        if (verify_device_array(c, c->seed + (uint32_t)b, have_schema ? &schema : NULL,
                                &batch, why, sizeof why) != 0) {
          test_fail(&t, "batch %lld: %s", (long long)b, why);
        }
        batch.array.release(&batch.array);
      } else if (batch.array.release != NULL) {
        test_fail(&t, "get_next call %lld returned a batch beyond batches=%lld",
                  (long long)call, (long long)c->batches);
        it_watch_array(&batch.array, "extra batch");
        batch.array.release(&batch.array);
      }
    }
    if (have_schema) schema.release(&schema);
  }
  release_stream_checked(&t, &stream);
  test_finish(&t, group, &before, "after releasing the failed stream");
}

void run_inject(struct suite* s, const char* case_text) {
  struct it_case c;
  struct test t;
  test_begin(&t, s, "inject", case_text);
  if (suite_parse(&t, case_text, &c) != 0) {
    test_end(&t);
    return;
  }
  if (c.fail == IT_FAIL_EXPORT) {
    inject_export(s, case_text, 0);
    inject_export(s, case_text, 1);
  } else if (c.fail != IT_FAIL_NONE) {
    inject_stream(s, case_text, &c);
  }
}
