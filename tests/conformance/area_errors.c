/* Area 3: case strings that every entry point must refuse, with a non-zero
 * errno code, a message naming the offending part, released out-structs and
 * nothing allocated. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "areas.h"
#include "release_watch.h"

enum error_class {
  ERR_GRAMMAR,        /* ferry_it.h: EINVAL for a bad case string */
  ERR_DEVICE,         /* ferry_it.h: ENODEV/ENOTSUP for an unavailable device */
  ERR_UNKNOWN_DEVICE, /* not in the grammar's device list: any non-zero code */
};

enum entry { ENTRY_BOTH, ENTRY_STREAM };

struct bad_case {
  const char* text;
  const char* token; /* the message must contain it ("" : only non-empty) */
  enum error_class class;
  enum entry entry;
  int beyond_text; /* an error cases.md implies but does not list: area "errors-extra" */
};

static const struct bad_case k_bad_cases[] = {
    {"int33", "int33", ERR_GRAMMAR, ENTRY_BOTH, 0},
    {"INT32", "INT32", ERR_GRAMMAR, ENTRY_BOTH, 0},
    {"int32:lenght=3", "lenght", ERR_GRAMMAR, ENTRY_BOTH, 0},
    {"int32:length=abc", "abc", ERR_GRAMMAR, ENTRY_BOTH, 0},
    {"int32:length=", "length", ERR_GRAMMAR, ENTRY_BOTH, 0},
    {"int32:length=1x", "1x", ERR_GRAMMAR, ENTRY_BOTH, 0},
    {"int32:seed=4294967296", "4294967296", ERR_GRAMMAR, ENTRY_BOTH, 0},
    {"int32:seed=99999999999999999999999", "99999999999999999999999", ERR_GRAMMAR,
     ENTRY_BOTH, 0},
    {"int32:seed=-1", "-1", ERR_GRAMMAR, ENTRY_BOTH, 0},
    {"int32:nulls=-2", "-2", ERR_GRAMMAR, ENTRY_BOTH, 0},
    {"int32:nulls=abc", "abc", ERR_GRAMMAR, ENTRY_BOTH, 0},
    {"int32:offset=z9", "z9", ERR_GRAMMAR, ENTRY_BOTH, 0},
    {"int32:offset=-5", "-5", ERR_GRAMMAR, ENTRY_BOTH, 0},
    {"int32:length=-1", "-1", ERR_GRAMMAR, ENTRY_BOTH, 0},
    {"utf8:nulls=3:length=-7", "-7", ERR_GRAMMAR, ENTRY_BOTH, 0},
    {"int32:device=cuda", "cuda", ERR_DEVICE, ENTRY_BOTH, 0},
    {"int32:device=rocm", "rocm", ERR_DEVICE, ENTRY_BOTH, 0},
    {"int32:device=tpu", "tpu", ERR_UNKNOWN_DEVICE, ENTRY_BOTH, 0},
    {"", "", ERR_GRAMMAR, ENTRY_BOTH, 0},
    {"int32:length", "length", ERR_GRAMMAR, ENTRY_BOTH, 0},
    {"int32:fail=explode", "explode", ERR_GRAMMAR, ENTRY_BOTH, 1},
    {"int32:fail=get_next@zz", "zz", ERR_GRAMMAR, ENTRY_BOTH, 1},
    {"int32:length=5:", "", ERR_GRAMMAR, ENTRY_BOTH, 1},
    {"int32:batches=-1", "-1", ERR_GRAMMAR, ENTRY_STREAM, 0},
    {"int32:batches=two", "two", ERR_GRAMMAR, ENTRY_STREAM, 0},
};

static int device_unavailable(const struct suite* s, const char* text) {
  if (strstr(text, "device=cuda")) return !s->cuda_available;
  if (strstr(text, "device=rocm")) return !s->rocm_available;
  return 1;
}

/* Checks message and code class of one refusal. */
static void expect_refusal(struct test* t, struct test* te, const struct bad_case* bad,
                           int rc, const char* message) {
  if (rc == 0) {
    test_fail(t, "accepted, expected a refusal naming \"%s\"", bad->token);
    return;
  }
  if (message == NULL || message[0] == '\0') {
    test_fail(t, "refused with %s but ferry_it_last_error() is empty",
              ferry_errno_name(rc));
  } else if (strstr(message, bad->token) == NULL) {
    test_fail(t, "refused with %s but the message does not name \"%s\": %s",
              ferry_errno_name(rc), bad->token, message);
  }
  if (bad->class == ERR_GRAMMAR && rc != EINVAL) {
    test_fail(te, "refused with %s (%d); ferry_it.h says EINVAL for a bad case string",
              ferry_errno_name(rc), rc);
  }
  if (bad->class == ERR_DEVICE && rc != ENODEV && rc != ENOTSUP) {
    test_fail(te,
              "refused with %s (%d); ferry_it.h says ENODEV/ENOTSUP for an unavailable "
              "device",
              ferry_errno_name(rc), rc);
  }
}

static void refuse_export(struct suite* s, const struct bad_case* bad, int stream) {
  struct test t, te;
  char label[600];
  snprintf(label, sizeof label, "%s[%s]", bad->text,
           stream ? "export_stream" : "export_array");
  test_begin(&t, s, bad->beyond_text ? "errors-extra" : "errors", label);
  test_begin(&te, s, "errno", label);
  struct it_allocations before;
  baseline_take(s, &before);
  const char* message;
  int rc = export_and_discard(&t, bad->text, stream, "refused", &message);
  expect_refusal(&t, &te, bad, rc, message);
  baseline_expect(&t, &before, "after the refusal");
  test_end(&t);
  test_end(&te);
}

/* A checker handed valid C data with a bad case string must refuse it and
 * still take ownership (release everything). */
static void refuse_check(struct suite* s, const struct bad_case* bad, int stream) {
  struct test t, te;
  char label[600];
  snprintf(label, sizeof label, "%s[%s]", bad->text,
           stream ? "check_stream" : "check_array");
  test_begin(&t, s, "errors", label);
  test_begin(&te, s, "errno", label);
  struct it_allocations before;
  baseline_take(s, &before);
  int group = it_watch_new_group();
  int rc;
  const char* message;
  if (stream) {
    struct ArrowDeviceArrayStream data;
    memset(&data, 0, sizeof data);
    if (s->ref.export_stream("int32", &data) != 0) {
      test_fail(&t, "the C reference cannot export int32: %s",
                it_plugin_error(&s->ref));
      test_end(&t);
      return;
    }
    it_watch_stream(&data, "stream");
    rc = s->ut.check_stream(bad->text, &data);
    message = s->ut.last_error();
    if (data.release != NULL) {
      test_fail(&t, "check_stream did not take ownership: the stream is still live");
      ferry_array_stream_release(&data);
    }
  } else {
    struct ArrowSchema schema;
    struct ArrowDeviceArray array;
    memset(&schema, 0, sizeof schema);
    memset(&array, 0, sizeof array);
    if (s->ref.export_array("int32", &schema, &array) != 0) {
      test_fail(&t, "the C reference cannot export int32: %s",
                it_plugin_error(&s->ref));
      test_end(&t);
      return;
    }
    it_watch_schema(&schema, "schema");
    it_watch_array(&array.array, "array");
    rc = s->ut.check_array(bad->text, &schema, &array);
    message = s->ut.last_error();
    if (schema.release != NULL || array.array.release != NULL) {
      test_fail(&t, "check_array did not take ownership: %s still live",
                schema.release != NULL ? "the schema is" : "the array is");
      ferry_schema_release(&schema);
      ferry_device_array_release(&array);
    }
  }
  expect_refusal(&t, &te, bad, rc, message);
  test_finish(&t, group, &before, "after the refusal");
  test_end(&te);
}

void run_errors(struct suite* s) {
  for (size_t k = 0; k < sizeof k_bad_cases / sizeof k_bad_cases[0]; k++) {
    const struct bad_case* bad = &k_bad_cases[k];
    if (bad->class == ERR_DEVICE && !device_unavailable(s, bad->text)) {
      suite_skip(s, "errors", bad->text, "this device IS available on this machine");
      continue;
    }
    if (bad->entry == ENTRY_BOTH) refuse_export(s, bad, 0);
    refuse_export(s, bad, 1);
  }
  /* Checkers: a few representative bad strings (they parse like exporters). */
  static const int k_check_subset[] = {0, 2, 3, 8, 13};
  for (size_t k = 0; k < sizeof k_check_subset / sizeof k_check_subset[0]; k++) {
    refuse_check(s, &k_bad_cases[k_check_subset[k]], 0);
    refuse_check(s, &k_bad_cases[k_check_subset[k]], 1);
  }
}
