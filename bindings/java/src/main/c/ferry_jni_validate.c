/* ferry_jni_validate.c: every finding of the validator, for Java
 * (ferry_jni.h). The validator reports findings through a C callback
 * (FerryFindingFn); calling into Java once per finding would need a Java
 * callback object per call, so the findings are collected here into one
 * string ("rule\037where\037what", separated by "\036") that Java splits.
 */
#include <errno.h>
#include <jni.h>
#include <stdlib.h>
#include <string.h>

#include "ferry/ferry.h"
#include "ferry_jni.h"
#include "ferry_jni_support.h"

/* A growing text buffer; `failed` once an allocation failed. */
struct ferry_jni_report {
  char* text;
  size_t length;
  size_t capacity;
  int failed;
};

static void ferry_jni_report_append(struct ferry_jni_report* r, const char* part) {
  size_t n = strlen(part);
  if (r->failed) return;
  if (r->length + n + 1 > r->capacity) {
    size_t capacity = r->capacity == 0 ? 256 : r->capacity;
    while (capacity < r->length + n + 1) capacity *= 2;
    char* grown = realloc(r->text, capacity);
    if (grown == NULL) {
      r->failed = 1;
      return;
    }
    r->text = grown;
    r->capacity = capacity;
  }
  memcpy(r->text + r->length, part, n + 1);
  r->length += n;
}

static void ferry_jni_on_finding(void* user_data, const char* rule, const char* where,
                                 const char* what) {
  struct ferry_jni_report* r = user_data;
  if (r->length > 0) ferry_jni_report_append(r, "\036");
  ferry_jni_report_append(r, rule ? rule : "");
  ferry_jni_report_append(r, "\037");
  ferry_jni_report_append(r, where ? where : "");
  ferry_jni_report_append(r, "\037");
  ferry_jni_report_append(r, what ? what : "");
}

/* Hands the report to Java (or throws when it could not be built, or when
 * validation failed without reporting a finding). */
static jstring ferry_jni_report_finish(JNIEnv* env, struct ferry_jni_report* r, int rc,
                                       const struct FerryError* error) {
  jstring out = NULL;
  if (r->failed) {
    ferry_jni_throw_ferry(env, ENOMEM, "ferry: out of memory collecting findings", NULL);
  } else if (rc != FERRY_OK && r->length == 0) {
    /* Not a finding (ENOMEM, a NULL argument): the call itself failed. */
    ferry_jni_throw_ferry(env, rc, error->message, "ferry_validate_device_array");
  } else {
    out = ferry_jni_new_string(env, r->length == 0 ? "" : r->text);
  }
  free(r->text);
  return out;
}

jstring ferry_jni_validate_report(JNIEnv* env, const struct ArrowSchema* schema,
                                  const struct ArrowDeviceArray* array, int32_t level) {
  struct ferry_jni_report r = {NULL, 0, 0, 0};
  struct FerryError error;
  error.message[0] = '\0';
  int rc = ferry_validate_device_array(schema, array, level, ferry_jni_on_finding, &r, &error);
  return ferry_jni_report_finish(env, &r, rc, &error);
}

jstring ferry_jni_validate_schema_report(JNIEnv* env, const struct ArrowSchema* schema) {
  struct ferry_jni_report r = {NULL, 0, 0, 0};
  struct FerryError error;
  error.message[0] = '\0';
  int rc = ferry_validate_schema(schema, ferry_jni_on_finding, &r, &error);
  return ferry_jni_report_finish(env, &r, rc, &error);
}
