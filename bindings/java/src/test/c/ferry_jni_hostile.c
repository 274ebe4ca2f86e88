/* ferry_jni_hostile.c: the JNI face of tests/hostile (libferry_hostile.so, the
 * one library of hostile producers) for io.github.ferryarrow.ferry.HostileTest,
 * through Testing's natives. Java cannot make a struct lie; these only pass
 * the catalogue and the makers through. */
#include <jni.h>
#include <stdint.h>
#include <stdio.h>

#include "ferry_hostile.h"

#define TESTING(name) Java_io_github_ferryarrow_ferry_jni_Testing_##name

JNIEXPORT jint JNICALL TESTING(hostileCaseCount)(JNIEnv* env, jclass cls) {
  return ferry_hostile_count();
}

/* "name\037kind\037flags\037where\037needle" of case k (NULL out of range). */
JNIEXPORT jstring JNICALL TESTING(hostileCase)(JNIEnv* env, jclass cls, jint k) {
  const char* name = ferry_hostile_name(k);
  if (name == NULL) return NULL;
  char text[512];
  snprintf(text, sizeof text, "%s\037%d\037%d\037%s\037%s", name, (int)ferry_hostile_kind(k),
           (int)ferry_hostile_flags(k), ferry_hostile_where(k), ferry_hostile_needle(k));
  return (*env)->NewStringUTF(env, text);
}

/* Fills the released structs with the case called `name`; 0 or an errno. */
JNIEXPORT jint JNICALL TESTING(hostileArray)(JNIEnv* env, jclass cls, jstring name,
                                             jlong schema_out, jlong array_out) {
  const char* n = (*env)->GetStringUTFChars(env, name, NULL);
  if (n == NULL) return -1;
  int rc = ferry_hostile_make(n, (struct ArrowDeviceArray*)(intptr_t)array_out,
                              (struct ArrowSchema*)(intptr_t)schema_out);
  (*env)->ReleaseStringUTFChars(env, name, n);
  return rc;
}

JNIEXPORT jint JNICALL TESTING(hostileStreamCount)(JNIEnv* env, jclass cls) {
  return ferry_hostile_stream_count();
}

/* "name\037at\037level\037code\037needle" of stream case k (NULL out of range). */
JNIEXPORT jstring JNICALL TESTING(hostileStreamCase)(JNIEnv* env, jclass cls, jint k) {
  const char* name = ferry_hostile_stream_name(k);
  if (name == NULL) return NULL;
  char text[512];
  snprintf(text, sizeof text, "%s\037%d\037%d\037%d\037%s", name,
           (int)ferry_hostile_stream_at(k), (int)ferry_hostile_stream_level(k),
           (int)ferry_hostile_stream_code(k), ferry_hostile_stream_needle(k));
  return (*env)->NewStringUTF(env, text);
}

/* Fills the released stream with stream case `name`; 0 or an errno. */
JNIEXPORT jint JNICALL TESTING(hostileStream)(JNIEnv* env, jclass cls, jstring name,
                                              jlong stream_out) {
  const char* n = (*env)->GetStringUTFChars(env, name, NULL);
  if (n == NULL) return -1;
  int rc = ferry_hostile_stream_make(n, (struct ArrowDeviceArrayStream*)(intptr_t)stream_out);
  (*env)->ReleaseStringUTFChars(env, name, n);
  return rc;
}

JNIEXPORT jlong JNICALL TESTING(hostileLive)(JNIEnv* env, jclass cls) {
  return ferry_hostile_live();
}

JNIEXPORT jlong JNICALL TESTING(hostileReleasedAgain)(JNIEnv* env, jclass cls) {
  return ferry_hostile_released_again();
}

JNIEXPORT void JNICALL TESTING(hostileReset)(JNIEnv* env, jclass cls) { ferry_hostile_reset(); }
