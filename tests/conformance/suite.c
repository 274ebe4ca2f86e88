/* Reporting and baselines (see suite.h). */
#include "suite.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "release_watch.h"

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
  printf("FAIL %s %s %s: %s\n", t->suite->ut.name, t->area,
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
      printf("PASS %s %s %s\n", t->suite->ut.name, t->area,
             t->case_text[0] ? t->case_text : "\"\"");
    }
  }
}

void suite_skip(struct suite* s, const char* area, const char* case_text,
                const char* why) {
  printf("SKIPPED %s %s %s: %s\n", s->ut.name, area, case_text, why);
  s->skipped++;
}

void baseline_take(const struct suite* s, struct it_allocations* out) {
  const struct it_plugin* plugins[2] = {&s->ut, &s->ref};
  it_allocations_take(out, plugins, s->ut_is_ref ? 1 : 2);
}

int64_t baseline_ut(const struct it_allocations* baseline) {
  return baseline->values[0]; /* baseline_take reads the plugin under test first */
}

int baseline_expect(struct test* t, const struct it_allocations* before, const char* when) {
  struct it_allocations now;
  baseline_take(t->suite, &now);
  struct it_allocation_change changes[IT_MAX_COUNTERS];
  int n = it_allocations_compare(before, &now, changes, IT_MAX_COUNTERS);
  int above = 0;
  for (int i = 0; i < n && i < IT_MAX_COUNTERS; i++) {
    if (changes[i].after > changes[i].before) {
      test_fail(t, "%s: %s is %lld, was %lld", when, changes[i].name,
                (long long)changes[i].after, (long long)changes[i].before);
      above++;
    } else {
      printf("note %s %s %s: %s: %s fell from %lld to %lld (an earlier leak freed late)\n",
             t->suite->ut.name, t->area, t->case_text, when, changes[i].name,
             (long long)changes[i].before, (long long)changes[i].after);
    }
  }
  return above;
}

struct release_findings {
  char text[2048];
  size_t used;
};

static void collect_release_finding(void* context, const struct it_watch_finding* f) {
  struct release_findings* r = (struct release_findings*)context;
  if (f->problem == IT_WATCH_LATE_RELEASES) return;
  char one[1024];
  it_watch_describe(f, one, sizeof one);
  if (r->used + 1 >= sizeof r->text) return;
  int n = snprintf(r->text + r->used, sizeof r->text - r->used, "%s%s",
                   r->used ? "; " : "", one);
  if (n > 0) r->used += (size_t)n < sizeof r->text - r->used ? (size_t)n : sizeof r->text - r->used - 1;
}

void suite_verify_releases(struct test* t, int group) {
  struct release_findings r;
  r.text[0] = '\0';
  r.used = 0;
  it_watch_verify(group, collect_release_finding, &r);
  if (r.used > 0) test_fail(t, "%s", r.text);
}

int suite_parse(struct test* t, const char* text, struct it_case* out) {
  struct FerryError why;
  ferry_error_init(&why);
  if (it_case_parse(text, out, &why) != FERRY_OK) {
    test_fail(t, "the harness's parser rejects the suite's case: %s", why.message);
    return -1;
  }
  return 0;
}

int test_start(struct test* t, struct suite* s, const char* area, const char* label,
               const char* case_text, struct it_case* c, struct it_allocations* before) {
  test_begin(t, s, area, label);
  if (c != NULL && suite_parse(t, case_text, c) != 0) {
    test_end(t);
    return -1;
  }
  baseline_take(s, before);
  return 0;
}

int watch_export(struct ArrowSchema* schema, struct ArrowDeviceArray* array) {
  int group = it_watch_new_group();
  it_watch_schema(schema, "schema");
  it_watch_array(&array->array, "array");
  return group;
}

int watch_stream(struct ArrowDeviceArrayStream* stream) {
  int group = it_watch_new_group();
  it_watch_stream(stream, "stream");
  return group;
}

void test_finish(struct test* t, int group, const struct it_allocations* before,
                 const char* when) {
  suite_verify_releases(t, group);
  baseline_expect(t, before, when);
  test_end(t);
}

int export_and_discard(struct test* t, const char* case_text, int stream,
                       const char* verb, const char** message) {
  const struct it_plugin* ut = &t->suite->ut;
  int rc;
  if (stream) {
    struct ArrowDeviceArrayStream out = {0};
    rc = ut->export_stream(case_text, &out);
    if (message != NULL) *message = ut->last_error();
    if (rc != 0 && out.release != NULL) test_fail(t, "%s but left the stream live", verb);
    ferry_array_stream_release(&out);
  } else {
    struct ArrowSchema schema = {0};
    struct ArrowDeviceArray array = {0};
    rc = ut->export_array(case_text, &schema, &array);
    if (message != NULL) *message = ut->last_error();
    if (rc != 0 && (schema.release != NULL || array.array.release != NULL)) {
      test_fail(t, "%s but left its out-structs live", verb);
    }
    ferry_schema_release(&schema);
    ferry_device_array_release(&array);
  }
  return rc;
}

int export_array_or_end(struct test* t, const struct it_plugin* plugin,
                        const char* case_text, struct ArrowSchema* schema,
                        struct ArrowDeviceArray* array) {
  memset(schema, 0, sizeof *schema);
  memset(array, 0, sizeof *array);
  int rc = plugin->export_array(case_text, schema, array);
  if (rc != 0) {
    if (plugin == &t->suite->ref) {
      test_fail(t, "the C reference cannot export it (%s): %s", ferry_errno_name(rc),
                it_plugin_error(plugin));
    } else {
      test_fail(t, "export_array failed with %s: %s", ferry_errno_name(rc),
                it_plugin_error(plugin));
    }
    ferry_schema_release(schema);
    ferry_device_array_release(array);
    test_end(t);
  }
  return rc;
}

int ref_check_start(struct test* t, struct suite* s, const char* area,
                    const char* case_text, struct it_allocations* before) {
  if (s->ut_is_ref) return -1;
  test_start(t, s, area, case_text, NULL, NULL, before);
  return 0;
}

void release_stream_checked(struct test* t, struct ArrowDeviceArrayStream* stream) {
  stream->release(stream);
  if (stream->release != NULL) test_fail(t, "stream release did not set release to NULL");
}

int export_stream_or_end(struct test* t, const char* case_text,
                         struct ArrowDeviceArrayStream* out, const char* note) {
  const struct it_plugin* ut = &t->suite->ut;
  memset(out, 0, sizeof *out);
  int rc = ut->export_stream(case_text, out);
  if (rc != 0) {
    test_fail(t, "export_stream failed with %s: %s%s", ferry_errno_name(rc),
              it_plugin_error(ut), note);
    ferry_array_stream_release(out);
    test_end(t);
  }
  return rc;
}
