/* JNI helper of the JVM host (io.github.ferryarrow.ferry.it.NativeHarness): the harness of the
 * C host driven from Java. The runtimes come from the harness's list, the
 * cases from its case-list reader, each handoff from the C host's handoff.c,
 * so both hosts assert exactly the same. Runtimes are kept in a table indexed
 * by the int returned from open(); nothing is ever unloaded. */
#include <jni.h>
#include <stdio.h>
#include <string.h>

#include "case_list.h"
#include "ferry/ferry.h"
#include "handoff.h"
#include "plugin.h"

static struct it_runtime_set g_set;
static struct it_case_list g_cases;
static struct it_handoff_stats g_stats;
static char g_problem[4400];

static jstring text(JNIEnv* env, const char* s) { return (*env)->NewStringUTF(env, s); }

JNIEXPORT jstring JNICALL Java_io_github_ferryarrow_ferry_it_NativeHarness_init(JNIEnv* env, jclass cls) {
  char why[1024];
  ferry_sim_set_strict(1);
  if (it_handoff_init(why, sizeof why) != 0) return text(env, why);
  return NULL;
}

JNIEXPORT jobjectArray JNICALL Java_io_github_ferryarrow_ferry_it_NativeHarness_runtimes(JNIEnv* env,
                                                                      jclass cls) {
  jclass string = (*env)->FindClass(env, "java/lang/String");
  if (string == NULL) return NULL;
  jobjectArray out = (*env)->NewObjectArray(env, IT_MAX_RUNTIMES, string, NULL);
  for (int i = 0; out != NULL && i < IT_MAX_RUNTIMES; i++) {
    jstring name = text(env, it_runtimes[i].name);
    if (name == NULL) return NULL;
    (*env)->SetObjectArrayElement(env, out, i, name);
    (*env)->DeleteLocalRef(env, name);
  }
  return out;
}

JNIEXPORT jint JNICALL Java_io_github_ferryarrow_ferry_it_NativeHarness_open(JNIEnv* env, jclass cls,
                                                           jstring jname, jstring jpath) {
  const char* name = (*env)->GetStringUTFChars(env, jname, NULL);
  const char* path = (*env)->GetStringUTFChars(env, jpath, NULL);
  if (name == NULL || path == NULL) return -1; /* OutOfMemoryError pending */
  const struct it_runtime_info* runtime = it_runtime_find(name);
  jint index = -1;
  if (runtime == NULL) {
    snprintf(g_problem, sizeof g_problem, "unknown runtime \"%s\"", name);
  } else {
    struct it_plugin* p = &g_set.plugins[runtime - it_runtimes];
    if (it_plugin_load(p, runtime->name, path) != 0) {
      snprintf(g_problem, sizeof g_problem, "%s", p->problem);
    } else {
      index = g_set.n;
      g_set.state[runtime - it_runtimes] = IT_LOADED;
      g_set.loaded[g_set.n++] = p;
    }
  }
  (*env)->ReleaseStringUTFChars(env, jname, name);
  (*env)->ReleaseStringUTFChars(env, jpath, path);
  return index;
}

JNIEXPORT jstring JNICALL Java_io_github_ferryarrow_ferry_it_NativeHarness_problem(JNIEnv* env, jclass cls) {
  return text(env, g_problem);
}

/* Adds a case file (`file`) or one case line; null, or why it cannot. */
static jstring add_cases(JNIEnv* env, jstring jarg, int is_file) {
  const char* arg = (*env)->GetStringUTFChars(env, jarg, NULL);
  if (arg == NULL) return NULL;
  char why[1024];
  int rc = is_file ? it_case_list_add_file(&g_cases, arg, why, sizeof why)
                   : it_case_list_add_line(&g_cases, arg, why, sizeof why);
  (*env)->ReleaseStringUTFChars(env, jarg, arg);
  return rc == 0 ? NULL : text(env, why);
}

JNIEXPORT jstring JNICALL Java_io_github_ferryarrow_ferry_it_NativeHarness_addCaseFile(JNIEnv* env, jclass cls,
                                                                     jstring file) {
  return add_cases(env, file, 1);
}

JNIEXPORT jstring JNICALL Java_io_github_ferryarrow_ferry_it_NativeHarness_addCase(JNIEnv* env, jclass cls,
                                                                 jstring line) {
  return add_cases(env, line, 0);
}

JNIEXPORT jint JNICALL Java_io_github_ferryarrow_ferry_it_NativeHarness_caseCount(JNIEnv* env, jclass cls) {
  return (jint)g_cases.n;
}

/* The tamper witness (index -1) or case `index`. */
static const struct it_case_entry* entry_at(jint index, jboolean stream) {
  static struct it_case_entry tamper[2];
  if (index >= 0) return index < g_cases.n ? &g_cases.entries[index] : NULL;
  struct it_case_entry* t = &tamper[stream ? 1 : 0];
  snprintf(t->spec, sizeof t->spec, "%s", stream ? IT_TAMPER_STREAM_CASE : IT_TAMPER_ARRAY_CASE);
  return t;
}

JNIEXPORT jstring JNICALL Java_io_github_ferryarrow_ferry_it_NativeHarness_describeCase(JNIEnv* env, jclass cls,
                                                                      jint index,
                                                                      jboolean stream) {
  const struct it_case_entry* e = entry_at(index, stream);
  if (e == NULL) return text(env, "(no such case)");
  char out[700];
  snprintf(out, sizeof out, "%s%s", index < 0 ? "tamper " : e->reject_word[0] ? "reject "
                                                       : e->on_new_thread       ? "thread "
                                                                                : "",
           e->spec);
  return text(env, out);
}

JNIEXPORT jstring JNICALL Java_io_github_ferryarrow_ferry_it_NativeHarness_run(JNIEnv* env, jclass cls, jint p,
                                                             jint c, jint index,
                                                             jboolean stream) {
  if (p < 0 || p >= g_set.n || c < 0 || c >= g_set.n) return text(env, "bad runtime index");
  const struct it_case_entry* entry = entry_at(index, stream);
  if (entry == NULL) return text(env, "bad case index");
  char message[2048] = "";
  int tamper = index < 0;
  int ok = stream ? it_handoff_stream(&g_set, g_set.loaded[p], g_set.loaded[c], entry, tamper,
                                      &g_stats, message, sizeof message)
                  : it_handoff_array(&g_set, g_set.loaded[p], g_set.loaded[c], entry, tamper,
                                     &g_stats, message, sizeof message);
  return ok ? NULL : text(env, message);
}

JNIEXPORT jlongArray JNICALL Java_io_github_ferryarrow_ferry_it_NativeHarness_witnesses(JNIEnv* env,
                                                                      jclass cls) {
  jlong values[4] = {g_stats.sim_pending, g_stats.sim_ready, g_stats.tampered,
                     g_stats.structs_tracked};
  jlongArray out = (*env)->NewLongArray(env, 4);
  if (out != NULL) (*env)->SetLongArrayRegion(env, out, 0, 4, values);
  return out;
}
