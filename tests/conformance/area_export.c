/* Areas 1 and 2: what the plugin exports, verified by the suite's own
 * checker, by ferry's validator and (second opinion) by the C reference. */
#include <stdio.h>
#include <string.h>

#include "areas.h"
#include "release_watch.h"
#include "verify.h"

int stream_get_schema(struct ArrowDeviceArrayStream* stream, struct ArrowSchema* out) {
  memset(out, 0, sizeof *out);
  return stream->get_schema(stream, out);
}

int stream_get_next(struct ArrowDeviceArrayStream* stream, struct ArrowDeviceArray* out) {
  memset(out, 0, sizeof *out);
  return stream->get_next(stream, out);
}

const char* stream_last_error(struct ArrowDeviceArrayStream* stream) {
  const char* m = stream->get_last_error(stream);
  return m == NULL ? "(NULL)" : m;
}

/* Releases through the struct's own callback, then checks it marked itself. */
static void release_schema(struct test* t, struct ArrowSchema* schema, const char* what) {
  if (schema->release == NULL) return;
  schema->release(schema);
  if (schema->release != NULL)
    test_fail(t, "%s: release did not set release to NULL", what);
}

static void release_array(struct test* t, struct ArrowDeviceArray* array,
                          const char* what) {
  if (array->array.release == NULL) return;
  array->array.release(&array->array);
  if (array->array.release != NULL) {
    test_fail(t, "%s: release did not set release to NULL", what);
  }
}

/* Peeks at a sim export BEFORE waiting: in strict mode, pending copies read
 * as FERRY_SIM_POISON_BYTE. Poison with no sync_event to wait on is a
 * producer bug (the verification after the no-op wait fails too); poison
 * with an event proves the export really is asynchronous. */
static void note_sim_export(struct suite* s, const struct it_case* c,
                            const struct ArrowDeviceArray* array) {
  s->sim_exports++;
  if (array->sync_event != NULL) s->sim_with_event++;
  if (c->length == 0 || !ferry_sim_is_strict()) return;
  const struct ArrowArray* a = &array->array;
  if (conf_type_layout(c->type) == LAYOUT_STRUCT) {
    if (a->n_children < 1 || a->children == NULL || a->children[0] == NULL) return;
    a = a->children[0];
  }
  if (a->n_buffers < 2 || a->buffers == NULL || a->buffers[1] == NULL) return;
  const unsigned char* bytes = a->buffers[1];
  for (int k = 0; k < 4; k++) {
    if (bytes[k] != FERRY_SIM_POISON_BYTE) return;
  }
  s->sim_poison_before_wait++;
}

void run_array_export(struct suite* s, const char* case_text) {
  struct test t, tv;
  test_begin(&tv, s, "validate", case_text);
  struct it_case c;
  struct it_allocations before;
  if (test_start(&t, s, "export", case_text, case_text, &c, &before) != 0) return;
  struct ArrowSchema schema;
  struct ArrowDeviceArray array;
  memset(&schema, 0, sizeof schema);
  memset(&array, 0, sizeof array);
  int rc = s->ut.export_array(case_text, &schema, &array);
  if (rc != 0) {
    test_fail(&t, "export_array failed with %s (%d): %s", ferry_errno_name(rc), rc,
              it_plugin_error(&s->ut));
    if (schema.release != NULL || array.array.release != NULL) {
      test_fail(&t, "export_array failed but left its out-structs live");
    }
    ferry_schema_release(&schema);
    ferry_device_array_release(&array);
    test_end(&t);
    return;
  }
  /* The counter must see a live export, or its return to the baseline
   * proves nothing about release. */
  int64_t during = s->ut.live_allocations();
  if (c.length > 0 && during <= baseline_ut(&before)) {
    test_fail(&t,
              "ferry_it_live_allocations() is %lld while the export is live, %lld before "
              "it: the counter does not count this export",
              (long long)during, (long long)baseline_ut(&before));
  }
  int group = watch_export(&schema, &array);
  if (c.device_type == ARROW_DEVICE_EXT_DEV &&
      array.device_type == ARROW_DEVICE_EXT_DEV) {
    note_sim_export(s, &c, &array);
  }
  char why[1024];
  int schema_ok = verify_schema(&c, &schema, why, sizeof why) == 0;
  if (!schema_ok) test_fail(&t, "%s", why);
  int array_ok = verify_device_array(&c, c.seed, &schema, &array, why, sizeof why) == 0;
  if (!array_ok) test_fail(&t, "%s", why);
  if (schema_ok && array_ok) {
    /* A third opinion: ferry's own FULL validator must agree with the suite. */
    if (verify_with_core(&schema, &array, why, sizeof why) != 0) {
      test_fail(&tv, "the suite accepts the export but %s", why);
    }
    test_end(&tv);
  }
  release_schema(&t, &schema, "schema");
  release_array(&t, &array, "array");
  test_finish(&t, group, &before, "after release");
}

void run_array_ref_check(struct suite* s, const char* case_text) {
  struct test t;
  struct it_allocations before;
  if (ref_check_start(&t, s, "ref-check", case_text, &before) != 0) return;
  struct ArrowSchema schema;
  struct ArrowDeviceArray array;
  if (export_array_or_end(&t, &s->ut, case_text, &schema, &array) != 0) return;
  int group = watch_export(&schema, &array);
  int rc = s->ref.check_array(case_text, &schema, &array);
  if (rc != 0) {
    test_fail(&t, "the C reference checker rejects the export (%s): %s",
              ferry_errno_name(rc), it_plugin_error(&s->ref));
  }
  if (schema.release != NULL || array.array.release != NULL) {
    test_fail(&t, "the C checker left the structs live (suite bug or C plugin bug)");
    ferry_schema_release(&schema);
    ferry_device_array_release(&array);
  }
  test_finish(&t, group, &before, "after the C checker released");
}

void run_stream_export(struct suite* s, const char* case_text) {
  struct test t;
  struct it_case c;
  struct it_allocations before;
  if (test_start(&t, s, "stream", case_text, case_text, &c, &before) != 0) return;
  struct ArrowDeviceArrayStream stream;
  memset(&stream, 0, sizeof stream);
  int rc = s->ut.export_stream(case_text, &stream);
  if (rc != 0) {
    test_fail(&t, "export_stream failed with %s (%d): %s", ferry_errno_name(rc), rc,
              it_plugin_error(&s->ut));
    if (stream.release != NULL)
      test_fail(&t, "export_stream failed but left the stream live");
    ferry_array_stream_release(&stream);
    test_end(&t);
    return;
  }
  int group = watch_stream(&stream);
  char why[1024];
  if (stream.device_type != c.device_type) {
    test_fail(&t, "stream device_type %d, the case says %s", (int)stream.device_type,
              c.device_name);
  }
  /* get_schema twice: each call hands out an independent schema. */
  for (int k = 0; k < 2 && !t.failed; k++) {
    struct ArrowSchema schema;
    rc = stream_get_schema(&stream, &schema);
    if (rc != 0) {
      test_fail(&t, "get_schema call %d failed with %s: %s", k + 1, ferry_errno_name(rc),
                stream_last_error(&stream));
      break;
    }
    it_watch_schema(&schema, k == 0 ? "schema" : "schema(2nd)");
    if (verify_schema(&c, &schema, why, sizeof why) != 0) test_fail(&t, "%s", why);
    release_schema(&t, &schema, "schema");
  }
  struct ArrowSchema schema;
  int have_schema = stream_get_schema(&stream, &schema) == 0;
  if (have_schema) it_watch_schema(&schema, "schema(3rd)");
  int64_t b = 0;
  for (; b < c.batches && !t.failed; b++) {
    struct ArrowDeviceArray batch;
    rc = stream_get_next(&stream, &batch);
    if (rc != 0) {
      test_fail(&t, "get_next for batch %lld failed with %s: %s", (long long)b,
                ferry_errno_name(rc), stream_last_error(&stream));
      break;
    }
    if (batch.array.release == NULL) {
      test_fail(&t, "the stream ended after %lld batches, expected %lld", (long long)b,
                (long long)c.batches);
      break;
    }
    char where[32];
    snprintf(where, sizeof where, "batch %lld", (long long)b);
    it_watch_array(&batch.array, where);
    if (c.length > 0 && s->ut.live_allocations() <= baseline_ut(&before)) {
      test_fail(&t, "ferry_it_live_allocations() does not grow while batch %lld is live",
                (long long)b);
    }
    if (verify_device_array(&c, c.seed + (uint32_t)b, have_schema ? &schema : NULL,
                            &batch, why, sizeof why) != 0) {
      test_fail(&t, "batch %lld (seed %u): %s", (long long)b,
                (unsigned)(c.seed + (uint32_t)b), why);
    }
    if (batch.device_type != stream.device_type) {
      test_fail(&t, "batch %lld has device_type %d, the stream %d", (long long)b,
                (int)batch.device_type, (int)stream.device_type);
    }
    release_array(&t, &batch, where);
  }
  if (!t.failed) {
    /* The end is a released array; ferry's stream helper (and the Arrow
     * spec's spirit) keep returning the end once it was reached. */
    for (int k = 0; k < 2; k++) {
      struct ArrowDeviceArray end;
      rc = stream_get_next(&stream, &end);
      if (rc != 0) {
        test_fail(&t,
                  "get_next after the last batch (call %d after it) failed with %s: %s",
                  k + 1, ferry_errno_name(rc), stream_last_error(&stream));
        break;
      }
      if (end.array.release != NULL) {
        test_fail(&t,
                  "get_next call %d after the last batch returned a live array (%lld "
                  "batches expected)",
                  k + 1, (long long)c.batches);
        it_watch_array(&end.array, "extra batch");
        release_array(&t, &end, "extra batch");
        break;
      }
    }
  }
  if (have_schema) release_schema(&t, &schema, "schema");
  release_stream_checked(&t, &stream);
  test_finish(&t, group, &before, "after releasing the stream");
}

void run_stream_ref_check(struct suite* s, const char* case_text) {
  struct test t;
  struct it_allocations before;
  if (ref_check_start(&t, s, "ref-check-stream", case_text, &before) != 0) return;
  struct ArrowDeviceArrayStream stream;
  if (export_stream_or_end(&t, case_text, &stream, "") != 0) return;
  int group = watch_stream(&stream);
  int rc = s->ref.check_stream(case_text, &stream);
  if (rc != 0) {
    test_fail(&t, "the C reference checker rejects the stream (%s): %s",
              ferry_errno_name(rc), it_plugin_error(&s->ref));
  }
  if (stream.release != NULL) {
    test_fail(&t, "the C checker left the stream live");
    ferry_array_stream_release(&stream);
  }
  test_finish(&t, group, &before, "after the C checker released");
}
