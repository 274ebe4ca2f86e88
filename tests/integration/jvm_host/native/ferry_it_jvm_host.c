/* JNI helper of the JVM host (org.ferry.it.NativeHarness): the same handoff
 * assertions as the C host, driven from Java. Runtimes are kept in a table
 * indexed by the int returned from open(); nothing is ever unloaded. */
#include <jni.h>
#include <stdio.h>
#include <string.h>

#include "ferry/ferry.h"
#include "handoff.h"
#include "plugins.h"

static struct it_runtime g_runtimes[IT_MAX_RUNTIMES];
static struct it_runtime_set g_all;
static struct it_handoff_stats g_stats;
static char g_problem[4400];

JNIEXPORT jstring JNICALL Java_org_ferry_it_NativeHarness_init(JNIEnv* env, jclass cls) {
  char why[1024];
  ferry_sim_set_strict(1);
  if (it_handoff_init(why, sizeof why) != 0) return (*env)->NewStringUTF(env, why);
  return NULL;
}

JNIEXPORT jint JNICALL Java_org_ferry_it_NativeHarness_open(JNIEnv* env, jclass cls,
                                                           jstring jname, jstring jpath) {
  if (g_all.n >= IT_MAX_RUNTIMES) {
    snprintf(g_problem, sizeof g_problem, "more than %d runtimes", IT_MAX_RUNTIMES);
    return -1;
  }
  const char* name = (*env)->GetStringUTFChars(env, jname, NULL);
  const char* path = (*env)->GetStringUTFChars(env, jpath, NULL);
  if (name == NULL || path == NULL) return -1; /* OutOfMemoryError pending */
  /* The runtime keeps a pointer to its name: use the static one. */
  const char* static_name = NULL;
  for (int i = 0; i < IT_MAX_RUNTIMES; i++) {
    if (strcmp(name, it_runtime_load_order[i]) == 0) static_name = it_runtime_load_order[i];
  }
  jint index = -1;
  struct it_runtime* rt = &g_runtimes[g_all.n];
  if (static_name == NULL) {
    snprintf(g_problem, sizeof g_problem, "unknown runtime \"%s\"", name);
  } else if (it_runtime_load_path(rt, static_name, path) != 0) {
    snprintf(g_problem, sizeof g_problem, "%s", rt->problem);
  } else {
    index = g_all.n;
    g_all.runtimes[g_all.n++] = rt;
  }
  (*env)->ReleaseStringUTFChars(env, jname, name);
  (*env)->ReleaseStringUTFChars(env, jpath, path);
  return index;
}

JNIEXPORT jstring JNICALL Java_org_ferry_it_NativeHarness_problem(JNIEnv* env, jclass cls) {
  return (*env)->NewStringUTF(env, g_problem);
}

static jstring run(JNIEnv* env, jint p, jint c, jstring jspec, jstring jreject, jboolean tamper,
                   int stream) {
  if (p < 0 || p >= g_all.n || c < 0 || c >= g_all.n) {
    return (*env)->NewStringUTF(env, "bad runtime index");
  }
  struct it_case_entry entry;
  memset(&entry, 0, sizeof entry);
  const char* spec = (*env)->GetStringUTFChars(env, jspec, NULL);
  const char* reject = (*env)->GetStringUTFChars(env, jreject, NULL);
  if (spec == NULL || reject == NULL) return NULL;
  snprintf(entry.spec, sizeof entry.spec, "%s", spec);
  snprintf(entry.reject_word, sizeof entry.reject_word, "%s", reject);
  (*env)->ReleaseStringUTFChars(env, jspec, spec);
  (*env)->ReleaseStringUTFChars(env, jreject, reject);
  char message[2048] = "";
  int ok = stream ? it_handoff_stream(&g_all, g_all.runtimes[p], g_all.runtimes[c], &entry,
                                      tamper, &g_stats, message, sizeof message)
                  : it_handoff_array(&g_all, g_all.runtimes[p], g_all.runtimes[c], &entry,
                                     tamper, &g_stats, message, sizeof message);
  return ok ? NULL : (*env)->NewStringUTF(env, message);
}

JNIEXPORT jstring JNICALL Java_org_ferry_it_NativeHarness_runArray(JNIEnv* env, jclass cls,
                                                                  jint p, jint c, jstring spec,
                                                                  jstring reject,
                                                                  jboolean tamper) {
  return run(env, p, c, spec, reject, tamper, 0);
}

JNIEXPORT jstring JNICALL Java_org_ferry_it_NativeHarness_runStream(JNIEnv* env, jclass cls,
                                                                   jint p, jint c,
                                                                   jstring spec,
                                                                   jstring reject,
                                                                   jboolean tamper) {
  return run(env, p, c, spec, reject, tamper, 1);
}

JNIEXPORT jlongArray JNICALL Java_org_ferry_it_NativeHarness_witnesses(JNIEnv* env,
                                                                      jclass cls) {
  jlong values[4] = {g_stats.sim_pending, g_stats.sim_ready, g_stats.tampered,
                     g_stats.structs_tracked};
  jlongArray out = (*env)->NewLongArray(env, 4);
  if (out != NULL) (*env)->SetLongArrayRegion(env, out, 0, 4, values);
  return out;
}

JNIEXPORT jstring JNICALL Java_org_ferry_it_NativeHarness_tamperCase(JNIEnv* env, jclass cls,
                                                                    jboolean stream) {
  return (*env)->NewStringUTF(env, stream ? IT_TAMPER_STREAM_CASE : IT_TAMPER_ARRAY_CASE);
}
