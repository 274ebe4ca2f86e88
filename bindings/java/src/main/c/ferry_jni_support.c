/* ferry_jni_support.c: callbacks from C into Java, thread attachment and
 * exception containment for libferry_jni.so (see ferry_jni_support.h).
 *
 * Rules kept here, and why:
 * - Every upcall may arrive on a thread the JVM has never seen (a Go M, a
 *   Rust thread, a pthread of a C consumer), so each one goes through
 *   ferry_jni_env(), which attaches as a daemon (daemons never block
 *   DestroyJavaVM) and registers a pthread_key destructor that detaches when
 *   the thread exits. Attaching per call would cost ~12 us.
 * - A Java exception must never unwind into (or be left pending over) a C
 *   frame: every Call*Method is followed by ferry_jni_take_exception.
 * - Threads attached here never return to Java, so their local references
 *   would pile up: each upcall runs inside Push/PopLocalFrame.
 */
#include "ferry_jni_support.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

static JavaVM* g_vm;
static pthread_key_t g_detach_key;

static jclass g_ferry_exception;
static jmethodID g_ferry_exception_ctor;
static jmethodID g_ferry_exception_code;
static jclass g_illegal_argument;
static jmethodID g_throwable_get_message;
static jmethodID g_throwable_to_string;
static jclass g_upcalls;
static jmethodID g_upcalls_release;
static jmethodID g_upcalls_get_schema;
static jmethodID g_upcalls_get_next;

static atomic_llong g_attached_threads;
static atomic_llong g_detached_threads;

JavaVM* ferry_jni_vm(void) { return g_vm; }

/* Runs at the exit of a thread that ferry_jni_env attached. */
static void ferry_jni_detach_at_exit(void* vm) {
  (*(JavaVM*)vm)->DetachCurrentThread((JavaVM*)vm);
  atomic_fetch_add(&g_detached_threads, 1);
}

static jclass ferry_jni_global_class(JNIEnv* env, const char* name) {
  jclass local = (*env)->FindClass(env, name);
  if (local == NULL) return NULL;
  jclass global = (jclass)(*env)->NewGlobalRef(env, local);
  (*env)->DeleteLocalRef(env, local);
  return global;
}

/* Caches classes and method IDs once: looking them up per call costs more
 * than the call, and FindClass on a foreign thread would use the system
 * class loader rather than the one that loaded ferry. */
JNIEXPORT jint JNICALL JNI_OnLoad(JavaVM* vm, void* reserved) {
  JNIEnv* env = NULL;
  if ((*vm)->GetEnv(vm, (void**)&env, JNI_VERSION_1_8) != JNI_OK) return JNI_ERR;
  g_vm = vm;
  ferry_jni_release_queue_init();
  if (pthread_key_create(&g_detach_key, ferry_jni_detach_at_exit) != 0) return JNI_ERR;

  g_ferry_exception = ferry_jni_global_class(env, "org/ferry/FerryException");
  g_illegal_argument = ferry_jni_global_class(env, "java/lang/IllegalArgumentException");
  g_upcalls = ferry_jni_global_class(env, "org/ferry/Upcalls");
  jclass throwable = (*env)->FindClass(env, "java/lang/Throwable");
  if (!g_ferry_exception || !g_illegal_argument || !g_upcalls || !throwable) return JNI_ERR;

  g_ferry_exception_ctor =
      (*env)->GetMethodID(env, g_ferry_exception, "<init>", "(ILjava/lang/String;)V");
  g_ferry_exception_code = (*env)->GetMethodID(env, g_ferry_exception, "code", "()I");
  g_throwable_get_message =
      (*env)->GetMethodID(env, throwable, "getMessage", "()Ljava/lang/String;");
  g_throwable_to_string =
      (*env)->GetMethodID(env, throwable, "toString", "()Ljava/lang/String;");
  g_upcalls_release = (*env)->GetStaticMethodID(env, g_upcalls, "release", "(J)V");
  g_upcalls_get_schema = (*env)->GetStaticMethodID(env, g_upcalls, "getSchema", "(JJ)I");
  g_upcalls_get_next = (*env)->GetStaticMethodID(env, g_upcalls, "getNext", "(JJ)I");
  (*env)->DeleteLocalRef(env, throwable);
  if (!g_ferry_exception_ctor || !g_ferry_exception_code || !g_throwable_get_message ||
      !g_throwable_to_string || !g_upcalls_release || !g_upcalls_get_schema ||
      !g_upcalls_get_next) {
    return JNI_ERR;
  }
  return JNI_VERSION_1_8;
}

JNIEnv* ferry_jni_env(void) {
  JavaVM* vm = g_vm;
  if (vm == NULL) return NULL;
  JNIEnv* env = NULL;
  jint rc = (*vm)->GetEnv(vm, (void**)&env, JNI_VERSION_1_8);
  if (rc == JNI_OK) return env;
  if (rc != JNI_EDETACHED) return NULL;
  JavaVMAttachArgs args = {JNI_VERSION_1_8, "ferry-native-callback", NULL};
  if ((*vm)->AttachCurrentThreadAsDaemon(vm, (void**)&env, &args) != JNI_OK) return NULL;
  atomic_fetch_add(&g_attached_threads, 1);
  /* Detach at thread exit; if the key cannot be set the thread stays
   * attached until the JVM ends, which is a leak but not a crash. */
  pthread_setspecific(g_detach_key, vm);
  return env;
}

static void ferry_jni_copy_java_string(JNIEnv* env, jstring text, char* out, size_t size) {
  if (size == 0) return;
  out[0] = '\0';
  if (text == NULL) return;
  const char* chars = (*env)->GetStringUTFChars(env, text, NULL);
  if (chars == NULL) {
    (*env)->ExceptionClear(env);
    return;
  }
  snprintf(out, size, "%s", chars);
  (*env)->ReleaseStringUTFChars(env, text, chars);
}

int ferry_jni_take_exception(JNIEnv* env, struct FerryError* error) {
  jthrowable thrown = (*env)->ExceptionOccurred(env);
  if (thrown == NULL) return FERRY_OK;
  (*env)->ExceptionClear(env);

  int code = EIO;
  jstring text = NULL;
  if ((*env)->IsInstanceOf(env, thrown, g_ferry_exception)) {
    /* A FerryException carries the errno meant for C and a message meant
     * for the consumer ("injected failure at get_next 2"): pass both on. */
    code = (*env)->CallIntMethod(env, thrown, g_ferry_exception_code);
    if ((*env)->ExceptionCheck(env) || code == FERRY_OK) {
      (*env)->ExceptionClear(env);
      code = EIO;
    }
    text = (jstring)(*env)->CallObjectMethod(env, thrown, g_throwable_get_message);
  } else {
    /* Anything else keeps its class name: "java.lang.IllegalStateException: ..." */
    text = (jstring)(*env)->CallObjectMethod(env, thrown, g_throwable_to_string);
  }
  if ((*env)->ExceptionCheck(env)) {
    (*env)->ExceptionClear(env);
    text = NULL;
  }
  if (error != NULL) {
    ferry_jni_copy_java_string(env, text, error->message, sizeof error->message);
    if (error->message[0] == '\0') {
      snprintf(error->message, sizeof error->message,
               "Java exception without a message (%s)", ferry_errno_name(code));
    }
  }
  if (text != NULL) (*env)->DeleteLocalRef(env, text);
  (*env)->DeleteLocalRef(env, thrown);
  return code;
}

void ferry_jni_throw_ferry(JNIEnv* env, int code, const char* message, const char* function) {
  char fallback[256];
  if (message == NULL || message[0] == '\0') {
    snprintf(fallback, sizeof fallback, "%s failed: %s", function ? function : "ferry",
             ferry_errno_name(code));
    message = fallback;
  }
  jstring text = (*env)->NewStringUTF(env, message);
  if (text == NULL) return; /* OutOfMemoryError is pending: it is thrown instead. */
  jobject thrown = (*env)->NewObject(env, g_ferry_exception, g_ferry_exception_ctor,
                                     (jint)code, text);
  if (thrown != NULL) {
    (*env)->Throw(env, (jthrowable)thrown);
    (*env)->DeleteLocalRef(env, thrown);
  }
  (*env)->DeleteLocalRef(env, text);
}

void ferry_jni_throw_illegal_argument(JNIEnv* env, const char* message) {
  (*env)->ThrowNew(env, g_illegal_argument, message);
}

void ferry_jni_release_hook(void* user_data) {
  JNIEnv* env = ferry_jni_env();
  /* No JVM (shutting down): the Java objects die with it; nothing to free. */
  if (env == NULL) return;
  if ((*env)->PushLocalFrame(env, 8) != 0) {
    (*env)->ExceptionClear(env);
    return;
  }
  (*env)->CallStaticVoidMethod(env, g_upcalls, g_upcalls_release, (jlong)(intptr_t)user_data);
  struct FerryError ignored;
  if (ferry_jni_take_exception(env, &ignored) != FERRY_OK) {
    /* Upcalls.release catches everything itself; reaching this means an
     * Error such as OutOfMemoryError. Release hooks cannot fail: report. */
    fprintf(stderr, "ferry_jni: release hook failed: %s\n", ignored.message);
  }
  (*env)->PopLocalFrame(env, NULL);
}

/* Calls a stream upcall (int method(long handle, long out)). */
static int ferry_jni_stream_upcall(jmethodID method, void* user_data, void* out,
                                   struct FerryError* error) {
  JNIEnv* env = ferry_jni_env();
  if (env == NULL) {
    if (error) snprintf(error->message, sizeof error->message,
                        "Java stream producer unreachable: no JVM attached to this thread");
    return EIO;
  }
  /* No local frame: the call creates no local reference (long arguments,
   * int result) and ferry_jni_take_exception deletes the ones it makes, so
   * attached threads accumulate nothing; a frame would cost two more JNI
   * functions per batch. */
  jint rc = (*env)->CallStaticIntMethod(env, g_upcalls, method, (jlong)(intptr_t)user_data,
                                        (jlong)(intptr_t)out);
  int code = ferry_jni_take_exception(env, error);
  if (code != FERRY_OK) return code;
  if (rc != FERRY_OK && error != NULL && error->message[0] == '\0') {
    snprintf(error->message, sizeof error->message, "Java stream producer failed: %s",
             ferry_errno_name(rc));
  }
  return rc;
}

int ferry_jni_stream_get_schema(void* user_data, struct ArrowSchema* out,
                                struct FerryError* error) {
  return ferry_jni_stream_upcall(g_upcalls_get_schema, user_data, out, error);
}

int ferry_jni_stream_get_next(void* user_data, struct ArrowDeviceArray* out,
                              struct FerryError* error) {
  return ferry_jni_stream_upcall(g_upcalls_get_next, user_data, out, error);
}

/* ---- org.ferry.jni.Support natives -------------------------------------- */

JNIEXPORT jlong JNICALL Java_org_ferry_jni_Support_releaseHookAddress(JNIEnv* env, jclass cls) {
  return (jlong)(intptr_t)&ferry_jni_release_hook;
}

JNIEXPORT jlong JNICALL Java_org_ferry_jni_Support_getSchemaAddress(JNIEnv* env, jclass cls) {
  return (jlong)(intptr_t)&ferry_jni_stream_get_schema;
}

JNIEXPORT jlong JNICALL Java_org_ferry_jni_Support_getNextAddress(JNIEnv* env, jclass cls) {
  return (jlong)(intptr_t)&ferry_jni_stream_get_next;
}

JNIEXPORT jobject JNICALL Java_org_ferry_jni_Support_newDirectBuffer(JNIEnv* env, jclass cls,
                                                                    jlong address,
                                                                    jlong size) {
  return (*env)->NewDirectByteBuffer(env, (void*)(intptr_t)address, size);
}

JNIEXPORT jlong JNICALL Java_org_ferry_jni_Support_directBufferAddress(JNIEnv* env,
                                                                      jclass cls,
                                                                      jobject buffer) {
  return (jlong)(intptr_t)(*env)->GetDirectBufferAddress(env, buffer);
}

JNIEXPORT jbyteArray JNICALL Java_org_ferry_jni_Support_copyBytes(JNIEnv* env, jclass cls,
                                                                 jlong address, jint length) {
  jbyteArray out = (*env)->NewByteArray(env, length);
  if (out == NULL) return NULL;
  if (length > 0) {
    (*env)->SetByteArrayRegion(env, out, 0, length, (const jbyte*)(intptr_t)address);
  }
  return out;
}

JNIEXPORT jlongArray JNICALL Java_org_ferry_jni_Support_attachCounts(JNIEnv* env, jclass cls) {
  jlong counts[2] = {(jlong)atomic_load(&g_attached_threads),
                     (jlong)atomic_load(&g_detached_threads)};
  jlongArray out = (*env)->NewLongArray(env, 2);
  if (out != NULL) (*env)->SetLongArrayRegion(env, out, 0, 2, counts);
  return out;
}
