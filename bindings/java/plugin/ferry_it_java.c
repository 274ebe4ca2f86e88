/* ferry_it_java.c: the Java test plugin (libferry_it_java.so).
 *
 * A C shim exporting the entry points of core/include/ferry/ferry_it.h; each
 * one calls a static method of io.github.ferryarrow.ferry.it.Plugin, where every case of
 * docs/cases.md is produced and checked in Java. The shim joins the JVM
 * already running in the process (a JVM host) or starts one (a C host):
 *   classpath     FERRY_JAVA_CLASSPATH, else `classpath=` of the file
 *                 libferry_it_java.conf next to this library (written at build)
 *   library path  FERRY_JAVA_LIBRARY_PATH, else `library_path=` (libferry_jni.so)
 *   libjvm.so     $JAVA_HOME/lib/server, else `java_home=`, else default-java
 * Rules kept here, and why:
 * - After JNI_CreateJavaVM every non-default signal handler gets SA_ONSTACK,
 *   so that a Go runtime loaded later in the process does not abort
 *   (runtimes.md section 1: the JVM installs its handlers without it).
 * - Threads the JVM has never seen are attached as daemons once and detached
 *   by a pthread_key destructor when they exit.
 * - No Java exception survives a call: it becomes EIO plus its text.
 * - The async entry points (ferry_it_export_async, ferry_it_check_async,
 *   ferry_it_async_result) are the generic layer of the test plugins
 *   (core/harness/async/ferry_it_async.h) over this shim's stream entry
 *   points: its producer thread pulls the Java stream and its checker thread
 *   runs ferry_it_check_stream; both are threads the JVM never saw, attached
 *   on their first upcall (here, or by libferry_jni.so's trampolines) and
 *   detached by a pthread_key destructor when they exit.
 */
#include <dlfcn.h>
#include <errno.h>
#include <jni.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ferry/ferry_it.h"
#include "ferry_it_async.h"
#include "ferry_it_bench.h"

#define FERRY_IT_JAVA_TEXT 4096

typedef jint (*ferry_it_java_get_created_fn)(JavaVM**, jsize, jsize*);
typedef jint (*ferry_it_java_create_fn)(JavaVM**, void**, void*);

static pthread_once_t g_init_once = PTHREAD_ONCE_INIT;
static int g_init_rc = EIO;
static char g_init_error[FERRY_IT_JAVA_TEXT];
static JavaVM* g_vm;
static pthread_key_t g_detach_key;
static jclass g_plugin;
static jmethodID g_export_array, g_check_array, g_export_stream, g_check_stream;
static jmethodID g_live_allocations, g_last_error;
static jmethodID g_to_string;

static __thread char t_last_error[FERRY_IT_JAVA_TEXT];

static void set_last_error(const char* message) {
  snprintf(t_last_error, sizeof t_last_error, "%s", message ? message : "");
}

/* ---- configuration ------------------------------------------------------ */

/* Reads `key=` from libferry_it_java.conf next to this library into out. */
static int read_config(const char* key, char* out, size_t size) {
  Dl_info info;
  if (dladdr((void*)&read_config, &info) == 0 || info.dli_fname == NULL) return 0;
  char path[FERRY_IT_JAVA_TEXT];
  snprintf(path, sizeof path, "%s", info.dli_fname);
  char* dot = strrchr(path, '.');
  char* slash = strrchr(path, '/');
  if (dot == NULL || (slash != NULL && dot < slash)) return 0;
  snprintf(dot, sizeof path - (size_t)(dot - path), ".conf");
  FILE* f = fopen(path, "r");
  if (f == NULL) return 0;
  char line[FERRY_IT_JAVA_TEXT];
  size_t key_length = strlen(key);
  int found = 0;
  while (!found && fgets(line, sizeof line, f) != NULL) {
    line[strcspn(line, "\r\n")] = '\0';
    if (strncmp(line, key, key_length) == 0 && line[key_length] == '=') {
      snprintf(out, size, "%s", line + key_length + 1);
      found = 1;
    }
  }
  fclose(f);
  return found;
}

static int setting(const char* env, const char* key, char* out, size_t size) {
  const char* value = getenv(env);
  if (value != NULL && value[0] != '\0') {
    snprintf(out, size, "%s", value);
    return 1;
  }
  return read_config(key, out, size);
}

/* ---- finding or starting the JVM ---------------------------------------- */

static void* open_libjvm(void) {
  char home[FERRY_IT_JAVA_TEXT];
  char path[FERRY_IT_JAVA_TEXT + 64];
  const char* candidates[3] = {getenv("JAVA_HOME"), NULL, "/usr/lib/jvm/default-java"};
  if (read_config("java_home", home, sizeof home)) candidates[1] = home;
  for (int i = 0; i < 3; i++) {
    if (candidates[i] == NULL || candidates[i][0] == '\0') continue;
    snprintf(path, sizeof path, "%s/lib/server/libjvm.so", candidates[i]);
    void* handle = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    if (handle != NULL) return handle;
  }
  return NULL;
}

/* The JVM installs its handlers without SA_ONSTACK; Go requires it. */
static void add_sa_onstack_to_handlers(void) {
  for (int sig = 1; sig < NSIG; sig++) {
    if (sig == SIGKILL || sig == SIGSTOP) continue;
    struct sigaction action;
    if (sigaction(sig, NULL, &action) != 0) continue;
    if (action.sa_handler == SIG_DFL || action.sa_handler == SIG_IGN) continue;
    if (action.sa_flags & SA_ONSTACK) continue;
    action.sa_flags |= SA_ONSTACK;
    sigaction(sig, &action, NULL);
  }
}

static int start_jvm(ferry_it_java_create_fn create) {
  char classpath[FERRY_IT_JAVA_TEXT], library_path[FERRY_IT_JAVA_TEXT];
  if (!setting("FERRY_JAVA_CLASSPATH", "classpath", classpath, sizeof classpath)) {
    snprintf(g_init_error, sizeof g_init_error,
             "Java plugin: no classpath (set FERRY_JAVA_CLASSPATH or build "
             "libferry_it_java.conf with bindings/java/test.sh)");
    return ENOENT;
  }
  char option_classpath[FERRY_IT_JAVA_TEXT + 32], option_library[FERRY_IT_JAVA_TEXT + 32];
  snprintf(option_classpath, sizeof option_classpath, "-Djava.class.path=%s", classpath);
  enum { FERRY_IT_JAVA_EXTRA_OPTIONS = 16 };
  JavaVMOption options[4 + FERRY_IT_JAVA_EXTRA_OPTIONS];
  int n = 0;
  options[n++].optionString = option_classpath;
  if (setting("FERRY_JAVA_LIBRARY_PATH", "library_path", library_path, sizeof library_path)) {
    snprintf(option_library, sizeof option_library, "-Djava.library.path=%s", library_path);
    options[n++].optionString = option_library;
  }
  /* A small heap and one GC thread: the plugin is a test participant. */
  options[n++].optionString = "-Xmx256m";
  options[n++].optionString = "-XX:+UseSerialGC";
  /* FERRY_JAVA_OPTIONS: more options, separated by spaces, after these (so a
   * later -Xmx wins), e.g. "-XX:MaxDirectMemorySize=8m" for the test that the
   * producer's staging memory is not direct-buffer memory. */
  static char extra[FERRY_IT_JAVA_TEXT];
  const char* extra_env = getenv("FERRY_JAVA_OPTIONS");
  snprintf(extra, sizeof extra, "%s", extra_env != NULL ? extra_env : "");
  char* save = NULL;
  for (char* word = strtok_r(extra, " \t", &save); word != NULL;
       word = strtok_r(NULL, " \t", &save)) {
    if (n == (int)(sizeof options / sizeof options[0])) {
      snprintf(g_init_error, sizeof g_init_error,
               "Java plugin: more than %d options in FERRY_JAVA_OPTIONS",
               FERRY_IT_JAVA_EXTRA_OPTIONS);
      return EINVAL;
    }
    options[n++].optionString = word;
  }
  JavaVMInitArgs args;
  memset(&args, 0, sizeof args);
  args.version = JNI_VERSION_1_8;
  args.nOptions = n;
  args.options = options;
  args.ignoreUnrecognized = JNI_FALSE;
  JNIEnv* env = NULL;
  jint rc = create(&g_vm, (void**)&env, &args);
  if (rc != JNI_OK) {
    snprintf(g_init_error, sizeof g_init_error, "Java plugin: JNI_CreateJavaVM failed (%d)",
             (int)rc);
    return EIO;
  }
  add_sa_onstack_to_handlers();
  return 0;
}

static void detach_at_exit(void* vm) { (*(JavaVM*)vm)->DetachCurrentThread((JavaVM*)vm); }

/* The calling thread's JNIEnv, attaching it as a daemon when needed. */
static JNIEnv* current_env(void) {
  JNIEnv* env = NULL;
  jint rc = (*g_vm)->GetEnv(g_vm, (void**)&env, JNI_VERSION_1_8);
  if (rc == JNI_OK) return env;
  if (rc != JNI_EDETACHED) return NULL;
  JavaVMAttachArgs args = {JNI_VERSION_1_8, "ferry-it-java", NULL};
  if ((*g_vm)->AttachCurrentThreadAsDaemon(g_vm, (void**)&env, &args) != JNI_OK) return NULL;
  pthread_setspecific(g_detach_key, g_vm);
  return env;
}

static int describe_exception(JNIEnv* env, char* out, size_t size) {
  jthrowable thrown = (*env)->ExceptionOccurred(env);
  if (thrown == NULL) return 0;
  (*env)->ExceptionClear(env);
  snprintf(out, size, "Java exception");
  if (g_to_string == NULL) return 1;
  jstring text = (jstring)(*env)->CallObjectMethod(env, thrown, g_to_string);
  if ((*env)->ExceptionCheck(env)) {
    (*env)->ExceptionClear(env);
  } else if (text != NULL) {
    const char* chars = (*env)->GetStringUTFChars(env, text, NULL);
    if (chars != NULL) {
      snprintf(out, size, "%s", chars);
      (*env)->ReleaseStringUTFChars(env, text, chars);
    }
  }
  return 1;
}

/* Writes "Java plugin: WHAT (the pending exception, or FALLBACK); HINT" to out. */
static void report_unusable(JNIEnv* env, char* out, size_t size, const char* what,
                            const char* fallback, const char* hint) {
  char why[FERRY_IT_JAVA_TEXT / 2];
  if (!describe_exception(env, why, sizeof why)) snprintf(why, sizeof why, "%s", fallback);
  snprintf(out, size, "Java plugin: %s (%s); %s", what, why, hint);
}

/* GetStaticMethodID, or NULL without calling into the JVM when an exception
 * is already pending: a class whose static initialiser failed (a jar missing
 * from the classpath) throws on the first lookup, and a JNI call with an
 * exception pending is undefined (the JVM crashes). */
static jmethodID static_method(JNIEnv* env, jclass c, const char* name, const char* sig) {
  if ((*env)->ExceptionCheck(env)) return NULL;
  return (*env)->GetStaticMethodID(env, c, name, sig);
}

static void initialize(void) {
  if (pthread_key_create(&g_detach_key, detach_at_exit) != 0) {
    snprintf(g_init_error, sizeof g_init_error, "Java plugin: pthread_key_create failed");
    return;
  }
  /* A JVM host already has libjvm loaded globally. */
  ferry_it_java_get_created_fn get_created =
      (ferry_it_java_get_created_fn)dlsym(RTLD_DEFAULT, "JNI_GetCreatedJavaVMs");
  ferry_it_java_create_fn create =
      (ferry_it_java_create_fn)dlsym(RTLD_DEFAULT, "JNI_CreateJavaVM");
  if (get_created == NULL || create == NULL) {
    void* libjvm = open_libjvm();
    if (libjvm == NULL) {
      snprintf(g_init_error, sizeof g_init_error,
               "Java plugin: libjvm.so not found under $JAVA_HOME/lib/server, the configured "
               "java_home or /usr/lib/jvm/default-java (%s)", dlerror());
      g_init_rc = ENOTSUP;
      return;
    }
    get_created = (ferry_it_java_get_created_fn)dlsym(libjvm, "JNI_GetCreatedJavaVMs");
    create = (ferry_it_java_create_fn)dlsym(libjvm, "JNI_CreateJavaVM");
    if (get_created == NULL || create == NULL) {
      snprintf(g_init_error, sizeof g_init_error, "Java plugin: libjvm.so lacks the JNI entry points");
      g_init_rc = ENOTSUP;
      return;
    }
  }
  jsize count = 0;
  if (get_created(&g_vm, 1, &count) != JNI_OK || count == 0) {
    g_vm = NULL;
    int rc = start_jvm(create);
    if (rc != 0) {
      g_init_rc = rc;
      return;
    }
  }
  JNIEnv* env = current_env();
  if (env == NULL) {
    snprintf(g_init_error, sizeof g_init_error, "Java plugin: cannot attach to the JVM");
    return;
  }
  jclass throwable = (*env)->FindClass(env, "java/lang/Throwable");
  /* Before any lookup that can fail: describe_exception needs it. */
  g_to_string = throwable ? (*env)->GetMethodID(env, throwable, "toString", "()Ljava/lang/String;") : NULL;
  jclass plugin = g_to_string ? (*env)->FindClass(env, "io/github/ferryarrow/ferry/it/Plugin") : NULL;
  if (plugin == NULL) {
    report_unusable(env, g_init_error, sizeof g_init_error,
                    "class io.github.ferryarrow.ferry.it.Plugin unavailable", "not found",
                    "is the ferry jar on the classpath?");
    return;
  }
  g_plugin = (jclass)(*env)->NewGlobalRef(env, plugin);
  g_export_array = static_method(env, plugin, "exportArray", "(Ljava/lang/String;JJ)I");
  g_check_array = static_method(env, plugin, "checkArray", "(Ljava/lang/String;JJ)I");
  g_export_stream = static_method(env, plugin, "exportStream", "(Ljava/lang/String;J)I");
  g_check_stream = static_method(env, plugin, "checkStream", "(Ljava/lang/String;J)I");
  g_live_allocations = static_method(env, plugin, "liveAllocations", "()J");
  g_last_error = static_method(env, plugin, "lastError", "()Ljava/lang/String;");
  if (!g_to_string || !g_export_array || !g_check_array || !g_export_stream ||
      !g_check_stream || !g_live_allocations || !g_last_error) {
    report_unusable(env, g_init_error, sizeof g_init_error,
                    "io.github.ferryarrow.ferry.it.Plugin is unusable", "a method is missing",
                    "jar out of date, or the binding's jar missing from the classpath?");
    return;
  }
  (*env)->DeleteLocalRef(env, plugin);
  (*env)->DeleteLocalRef(env, throwable);
  g_init_rc = 0;
}

/* Ready to call Java: the env of this thread inside a local frame, or NULL
 * with the last error set. Pair with leave(). */
static JNIEnv* enter(void) {
  pthread_once(&g_init_once, initialize);
  if (g_init_rc != 0) {
    set_last_error(g_init_error);
    return NULL;
  }
  JNIEnv* env = current_env();
  if (env == NULL) {
    set_last_error("Java plugin: cannot attach this thread to the JVM");
    return NULL;
  }
  if ((*env)->PushLocalFrame(env, 16) != 0) {
    (*env)->ExceptionClear(env);
    set_last_error("Java plugin: no room for JNI local references");
    return NULL;
  }
  return env;
}

static void leave(JNIEnv* env) { (*env)->PopLocalFrame(env, NULL); }

/* Turns the result of an entry point into the errno and last error. */
static int finish(JNIEnv* env, jint rc) {
  char text[FERRY_IT_JAVA_TEXT];
  if (describe_exception(env, text, sizeof text)) {
    set_last_error(text);
    return EIO;
  }
  if (rc == 0) {
    set_last_error("");
    return 0;
  }
  jstring message = (jstring)(*env)->CallStaticObjectMethod(env, g_plugin, g_last_error);
  if (describe_exception(env, text, sizeof text) || message == NULL) {
    set_last_error("Java plugin: failed, and its message is unavailable");
    return (int)rc;
  }
  const char* chars = (*env)->GetStringUTFChars(env, message, NULL);
  set_last_error(chars ? chars : "Java plugin: message unavailable");
  if (chars) (*env)->ReleaseStringUTFChars(env, message, chars);
  return (int)rc;
}

/* Entry points that take ownership release what they were given even when
 * Java cannot be reached, as ferry_it.h promises. */
static void release_array_pair(struct ArrowSchema* schema, struct ArrowDeviceArray* array) {
  if (schema != NULL && schema->release != NULL) schema->release(schema);
  if (array != NULL && array->array.release != NULL) array->array.release(&array->array);
}

/* Calls the plugin's static int method *m(case_spec, a[, b]) (JNI reads as
 * many arguments as its signature has) in a local frame; the errno, with the
 * last error set. m points at the method's global, read only after enter():
 * the first call of a process starts the JVM and looks the methods up. */
static int call_case(const jmethodID* m, const char* case_spec, jlong a, jlong b) {
  JNIEnv* env = enter();
  if (env == NULL) return g_init_rc ? g_init_rc : EIO;
  jstring spec = (*env)->NewStringUTF(env, case_spec);
  jvalue args[3] = {{.l = spec}, {.j = a}, {.j = b}};
  jint rc = spec ? (*env)->CallStaticIntMethodA(env, g_plugin, *m, args) : ENOMEM;
  int out = finish(env, rc);
  leave(env);
  return out;
}

FERRY_IT_EXPORT int ferry_it_export_array(const char* case_spec, struct ArrowSchema* schema_out,
                                          struct ArrowDeviceArray* array_out) {
  if (case_spec == NULL || schema_out == NULL || array_out == NULL) {
    set_last_error("ferry_it_export_array: NULL argument");
    return EINVAL;
  }
  return call_case(&g_export_array, case_spec, (jlong)(intptr_t)schema_out,
                   (jlong)(intptr_t)array_out);
}

FERRY_IT_EXPORT int ferry_it_check_array(const char* case_spec, struct ArrowSchema* schema,
                                         struct ArrowDeviceArray* array) {
  if (case_spec == NULL || schema == NULL || array == NULL) {
    release_array_pair(schema, array);
    set_last_error("ferry_it_check_array: NULL argument");
    return EINVAL;
  }
  int out = call_case(&g_check_array, case_spec, (jlong)(intptr_t)schema, (jlong)(intptr_t)array);
  release_array_pair(schema, array); /* no-op unless Java got no hold of them */
  return out;
}

FERRY_IT_EXPORT int ferry_it_export_stream(const char* case_spec,
                                           struct ArrowDeviceArrayStream* out) {
  if (case_spec == NULL || out == NULL) {
    set_last_error("ferry_it_export_stream: NULL argument");
    return EINVAL;
  }
  return call_case(&g_export_stream, case_spec, (jlong)(intptr_t)out, 0);
}

FERRY_IT_EXPORT int ferry_it_check_stream(const char* case_spec,
                                          struct ArrowDeviceArrayStream* stream) {
  if (case_spec == NULL || stream == NULL) {
    if (stream != NULL && stream->release != NULL) stream->release(stream);
    set_last_error("ferry_it_check_stream: NULL argument");
    return EINVAL;
  }
  int result = call_case(&g_check_stream, case_spec, (jlong)(intptr_t)stream, 0);
  if (stream->release != NULL) stream->release(stream); /* only when Java got no hold */
  return result;
}

FERRY_IT_EXPORT int64_t ferry_it_live_allocations(void) {
  JNIEnv* env = enter();
  if (env == NULL) return 0; /* no JVM: nothing of Java's can be live */
  jlong live = (*env)->CallStaticLongMethod(env, g_plugin, g_live_allocations);
  char text[FERRY_IT_JAVA_TEXT];
  if (describe_exception(env, text, sizeof text)) {
    set_last_error(text);
    live = -1;
  }
  leave(env);
  return (int64_t)live;
}

FERRY_IT_EXPORT const char* ferry_it_last_error(void) { return t_last_error; }

/* ---- async device streams (ferry_it.h; shared/cases.md, "Async device streams") ---- */

/* The generic layer keeps its own per-thread message: copied into this
 * shim's, so that ferry_it_last_error answers for these calls too. */
static int async_outcome(int rc) {
  set_last_error(rc ? ferry_it_async_last_error() : "");
  return rc;
}

/* Starts pushing the case's Java stream to `handler` (borrowed until it is
 * released). Not eager: the JVM is multi-threaded, so ferry's producer
 * thread calls the Java stream's get_schema/get_next itself (attached on its
 * first upcall). */
FERRY_IT_EXPORT int ferry_it_export_async(const char* case_spec,
                                          struct ArrowAsyncDeviceStreamHandler* handler) {
  return async_outcome(ferry_it_async_export_generic(case_spec, handler, ferry_it_export_stream,
                                                     ferry_it_last_error, 0));
}

/* Fills *handler_out with a checking consumer of the case; the batches reach
 * Java's checker (ferry_it_check_stream) on a thread of the generic layer.
 * The ticket is the generic layer's until ferry_it_async_result. */
FERRY_IT_EXPORT int ferry_it_check_async(const char* case_spec,
                                         struct ArrowAsyncDeviceStreamHandler* handler_out,
                                         void** ticket_out) {
  return async_outcome(ferry_it_async_check_generic(case_spec, handler_out, ticket_out,
                                                    ferry_it_check_stream,
                                                    ferry_it_last_error));
}

/* The verdict of a ticket (consumed unless ETIMEDOUT). */
FERRY_IT_EXPORT int ferry_it_async_result(void* ticket, int64_t timeout_ms) {
  return async_outcome(ferry_it_async_result_generic(ticket, timeout_ms));
}

/* ---- benchmark entry points (ferry_it_bench.h) ---------------------------- */

/* Each is one JNI upcall into io.github.ferryarrow.ferry.it.Bench, found on first use (so an
 * out-of-date jar breaks only these). The upcalls take and return
 * primitives, so they create no local reference and need no local frame;
 * the failure path, which does, runs inside one. */
static pthread_once_t g_bench_once = PTHREAD_ONCE_INIT;
static int g_bench_rc = EIO;
static char g_bench_error[FERRY_IT_JAVA_TEXT];
static jclass g_bench;
static jmethodID g_bench_noop, g_bench_export_array, g_bench_consume_array;
static jmethodID g_bench_export_stream, g_bench_consume_stream, g_bench_last_error;

static void bench_initialize(void) {
  JNIEnv* env = current_env();
  if (env == NULL || (*env)->PushLocalFrame(env, 8) != 0) {
    snprintf(g_bench_error, sizeof g_bench_error, "Java plugin: cannot attach to the JVM");
    return;
  }
  jclass bench = (*env)->FindClass(env, "io/github/ferryarrow/ferry/it/Bench");
  if (bench == NULL) {
    report_unusable(env, g_bench_error, sizeof g_bench_error,
                    "class io.github.ferryarrow.ferry.it.Bench unavailable", "not found",
                    "jar out of date?");
    (*env)->PopLocalFrame(env, NULL);
    return;
  }
  g_bench_noop = static_method(env, bench, "noop", "(J)J");
  g_bench_export_array = static_method(env, bench, "exportArray", "(JJJ)I");
  g_bench_consume_array = static_method(env, bench, "consumeArray", "(JJ)I");
  g_bench_export_stream = static_method(env, bench, "exportStream", "(JJJ)I");
  g_bench_consume_stream = static_method(env, bench, "consumeStream", "(J)I");
  g_bench_last_error = static_method(env, bench, "lastError", "()Ljava/lang/String;");
  if (!g_bench_noop || !g_bench_export_array || !g_bench_consume_array ||
      !g_bench_export_stream || !g_bench_consume_stream || !g_bench_last_error) {
    report_unusable(env, g_bench_error, sizeof g_bench_error,
                    "io.github.ferryarrow.ferry.it.Bench is unusable", "a method is missing",
                    "jar out of date?");
  } else {
    g_bench = (jclass)(*env)->NewGlobalRef(env, bench);
    g_bench_rc = g_bench == NULL ? ENOMEM : 0;
  }
  (*env)->PopLocalFrame(env, NULL);
}

/* This thread's env, ready for a bench upcall; NULL with the last error set. */
static JNIEnv* bench_enter(void) {
  pthread_once(&g_init_once, initialize);
  if (g_init_rc != 0) {
    set_last_error(g_init_error);
    return NULL;
  }
  pthread_once(&g_bench_once, bench_initialize);
  if (g_bench_rc != 0) {
    set_last_error(g_bench_error);
    return NULL;
  }
  JNIEnv* env = current_env();
  if (env == NULL) set_last_error("Java plugin: cannot attach this thread to the JVM");
  return env;
}

static int bench_error_code(void) { return g_init_rc ? g_init_rc : g_bench_rc ? g_bench_rc : EIO; }

/* Turns a bench upcall's result into the errno and, on failure, the last error. */
static int bench_finish(JNIEnv* env, jint rc) {
  if (rc == 0 && !(*env)->ExceptionCheck(env)) return 0;
  char text[FERRY_IT_JAVA_TEXT];
  if ((*env)->PushLocalFrame(env, 8) != 0) {
    (*env)->ExceptionClear(env);
    set_last_error("Java plugin: failed, and no room for its message");
    return rc ? (int)rc : EIO;
  }
  if (describe_exception(env, text, sizeof text)) {
    set_last_error(text);
    rc = EIO;
  } else {
    jstring message = (jstring)(*env)->CallStaticObjectMethod(env, g_bench, g_bench_last_error);
    const char* chars = NULL;
    if (describe_exception(env, text, sizeof text) || message == NULL ||
        (chars = (*env)->GetStringUTFChars(env, message, NULL)) == NULL) {
      set_last_error("Java plugin: failed, and its message is unavailable");
    } else {
      set_last_error(chars);
      (*env)->ReleaseStringUTFChars(env, message, chars);
    }
  }
  (*env)->PopLocalFrame(env, NULL);
  return (int)rc;
}

/* One bench upcall m(a[, b[, c]]) (JNI reads as many arguments as m's signature
 * has); the errno, with the last error set on failure. */
static int bench_call(const jmethodID* m, jlong a, jlong b, jlong c) {
  JNIEnv* env = bench_enter(); /* looks the methods up on first use: *m read after */
  if (env == NULL) return bench_error_code();
  jvalue args[3] = {{.j = a}, {.j = b}, {.j = c}};
  return bench_finish(env, (*env)->CallStaticIntMethodA(env, g_bench, *m, args));
}

FERRY_IT_EXPORT int64_t ferry_it_bench_noop(int64_t x) {
  JNIEnv* env = bench_enter();
  if (env == NULL) return INT64_MIN;
  jlong y = (*env)->CallStaticLongMethod(env, g_bench, g_bench_noop, (jlong)x);
  if ((*env)->ExceptionCheck(env)) {
    bench_finish(env, EIO);
    return INT64_MIN;
  }
  return (int64_t)y;
}

FERRY_IT_EXPORT int ferry_it_bench_export_array(int64_t length, struct ArrowSchema* schema_out,
                                                struct ArrowDeviceArray* array_out) {
  if (schema_out == NULL || array_out == NULL) {
    set_last_error("ferry_it_bench_export_array: NULL argument");
    return EINVAL;
  }
  return bench_call(&g_bench_export_array, (jlong)length, (jlong)(intptr_t)schema_out,
                    (jlong)(intptr_t)array_out);
}

FERRY_IT_EXPORT int ferry_it_bench_consume_array(struct ArrowSchema* schema,
                                                 struct ArrowDeviceArray* array) {
  if (schema == NULL || array == NULL) {
    release_array_pair(schema, array);
    set_last_error("ferry_it_bench_consume_array: NULL argument");
    return EINVAL;
  }
  int result =
      bench_call(&g_bench_consume_array, (jlong)(intptr_t)schema, (jlong)(intptr_t)array, 0);
  release_array_pair(schema, array); /* no-op unless Java never moved them in */
  return result;
}

FERRY_IT_EXPORT int ferry_it_bench_export_stream(int64_t length, int64_t batches,
                                                 struct ArrowDeviceArrayStream* out) {
  if (out == NULL) {
    set_last_error("ferry_it_bench_export_stream: NULL argument");
    return EINVAL;
  }
  return bench_call(&g_bench_export_stream, (jlong)length, (jlong)batches, (jlong)(intptr_t)out);
}

FERRY_IT_EXPORT int ferry_it_bench_consume_stream(struct ArrowDeviceArrayStream* stream) {
  if (stream == NULL) {
    set_last_error("ferry_it_bench_consume_stream: NULL argument");
    return EINVAL;
  }
  int result = bench_call(&g_bench_consume_stream, (jlong)(intptr_t)stream, 0, 0);
  if (stream->release != NULL) stream->release(stream); /* only when never moved in */
  return result;
}
