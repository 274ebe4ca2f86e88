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
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The Java classes this file calls (their methods are looked up below). */
#define FERRY_JNI_EXCEPTION_CLASS "io/github/ferryarrow/ferry/FerryException"
#define FERRY_JNI_UPCALLS_CLASS "io/github/ferryarrow/ferry/Upcalls"

static JavaVM* g_vm;
static pthread_key_t g_detach_key;

static jclass g_ferry_exception;
/* Looked up on first use, not in JNI_OnLoad: looking up a method initialises
 * its class, and FerryException's constants come from this very library,
 * whose natives are not registered until JNI_OnLoad returns. */
static _Atomic(jmethodID) g_ferry_exception_ctor;
static _Atomic(jmethodID) g_ferry_exception_code;
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

/* FerryException's method `name` (lazily; a race looks the same ID up twice). */
static jmethodID ferry_jni_exception_method(JNIEnv* env, _Atomic(jmethodID)* cache,
                                            const char* name, const char* signature) {
  jmethodID id = atomic_load_explicit(cache, memory_order_acquire);
  if (id == NULL) {
    id = (*env)->GetMethodID(env, g_ferry_exception, name, signature);
    if (id != NULL) atomic_store_explicit(cache, id, memory_order_release);
  }
  return id;
}

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

  g_ferry_exception = ferry_jni_global_class(env, FERRY_JNI_EXCEPTION_CLASS);
  g_illegal_argument = ferry_jni_global_class(env, "java/lang/IllegalArgumentException");
  g_upcalls = ferry_jni_global_class(env, FERRY_JNI_UPCALLS_CLASS);
  jclass throwable = (*env)->FindClass(env, "java/lang/Throwable");
  if (!g_ferry_exception || !g_illegal_argument || !g_upcalls || !throwable) return JNI_ERR;

  g_throwable_get_message =
      (*env)->GetMethodID(env, throwable, "getMessage", "()Ljava/lang/String;");
  g_throwable_to_string =
      (*env)->GetMethodID(env, throwable, "toString", "()Ljava/lang/String;");
  g_upcalls_release = (*env)->GetStaticMethodID(env, g_upcalls, "release", "(J)V");
  g_upcalls_get_schema = (*env)->GetStaticMethodID(env, g_upcalls, "getSchema", "(JJ)I");
  g_upcalls_get_next = (*env)->GetStaticMethodID(env, g_upcalls, "getNext", "(JJ)I");
  (*env)->DeleteLocalRef(env, throwable);
  if (!g_throwable_get_message ||
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
    jmethodID code_method =
        ferry_jni_exception_method(env, &g_ferry_exception_code, "code", "()I");
    code = code_method == NULL ? EIO : (*env)->CallIntMethod(env, thrown, code_method);
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

/* Length of the valid UTF-8 sequence at `s` (1-4), its code point in *cp;
 * 0 when the bytes there are not valid UTF-8 (overlong, surrogate, beyond
 * U+10FFFF, truncated). */
static int ferry_jni_utf8_sequence(const unsigned char* s, uint32_t* cp) {
  unsigned char c = s[0];
  if (c < 0x80) {
    *cp = c;
    return 1;
  }
  int n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 0;
  if (n == 0 || c > 0xF4) return 0;
  uint32_t v = c & (0x7F >> n);
  for (int i = 1; i < n; i++) {
    if ((s[i] & 0xC0) != 0x80) return 0; /* also stops at the terminator */
    v = v << 6 | (s[i] & 0x3F);
  }
  static const uint32_t min[5] = {0, 0, 0x80, 0x800, 0x10000};
  if (v < min[n] || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return 0;
  *cp = v;
  return n;
}

/* Appends code point `cp` (<= U+FFFF) in modified UTF-8. */
static size_t ferry_jni_put_modified(unsigned char* out, uint32_t cp) {
  if (cp >= 1 && cp < 0x80) {
    out[0] = (unsigned char)cp;
    return 1;
  }
  if (cp < 0x800) {
    out[0] = (unsigned char)(0xC0 | cp >> 6);
    out[1] = (unsigned char)(0x80 | (cp & 0x3F));
    return 2;
  }
  out[0] = (unsigned char)(0xE0 | cp >> 12);
  out[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
  out[2] = (unsigned char)(0x80 | (cp & 0x3F));
  return 3;
}

jstring ferry_jni_new_string(JNIEnv* env, const char* text) {
  if (text == NULL) return NULL;
  const unsigned char* s = (const unsigned char*)text;
  size_t length = 0;
  int ascii = 1;
  while (s[length] != 0) ascii &= s[length++] < 0x80;
  if (ascii) return (*env)->NewStringUTF(env, text);
  /* At most 6 output bytes (a surrogate pair) per 4 input bytes, and 3 (U+FFFD)
   * per invalid byte. */
  unsigned char* out = malloc(3 * length + 1);
  if (out == NULL) return (*env)->NewStringUTF(env, "(ferry: out of memory converting a message)");
  size_t o = 0;
  for (size_t i = 0; i < length;) {
    uint32_t cp;
    int n = ferry_jni_utf8_sequence(s + i, &cp);
    if (n == 0) {
      o += ferry_jni_put_modified(out + o, 0xFFFD);
      i++;
    } else if (cp > 0xFFFF) {
      cp -= 0x10000;
      o += ferry_jni_put_modified(out + o, 0xD800 | cp >> 10);
      o += ferry_jni_put_modified(out + o, 0xDC00 | (cp & 0x3FF));
      i += (size_t)n;
    } else {
      o += ferry_jni_put_modified(out + o, cp);
      i += (size_t)n;
    }
  }
  out[o] = 0;
  jstring result = (*env)->NewStringUTF(env, (const char*)out);
  free(out);
  return result;
}

void ferry_jni_throw_ferry(JNIEnv* env, int code, const char* message, const char* function) {
  char fallback[256];
  if (message == NULL || message[0] == '\0') {
    snprintf(fallback, sizeof fallback, "%s failed: %s", function ? function : "ferry",
             ferry_errno_name(code));
    message = fallback;
  }
  jstring text = ferry_jni_new_string(env, message);
  if (text == NULL) return; /* OutOfMemoryError is pending: it is thrown instead. */
  jmethodID ctor = ferry_jni_exception_method(env, &g_ferry_exception_ctor, "<init>",
                                              "(ILjava/lang/String;)V");
  if (ctor == NULL) { /* NoSuchMethodError (or ExceptionInInitializerError) is pending */
    (*env)->DeleteLocalRef(env, text);
    return;
  }
  jobject thrown = (*env)->NewObject(env, g_ferry_exception, ctor,
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

/* ---- callbacks, counters and memory (ferry_jni.h) ------------------------ */

void* ferry_jni_callback(int32_t which) {
  switch (which) {
    case FERRY_JNI_CALLBACK_RELEASE: return (void*)&ferry_jni_release_hook;
    case FERRY_JNI_CALLBACK_QUEUED_RELEASE: return (void*)&ferry_jni_queued_release_hook;
    case FERRY_JNI_CALLBACK_GET_SCHEMA: return (void*)&ferry_jni_stream_get_schema;
    case FERRY_JNI_CALLBACK_GET_NEXT: return (void*)&ferry_jni_stream_get_next;
    default: return NULL;
  }
}

int64_t ferry_jni_stat(int32_t which) {
  switch (which) {
    case FERRY_JNI_STAT_ATTACHED_THREADS: return atomic_load(&g_attached_threads);
    case FERRY_JNI_STAT_DETACHED_THREADS: return atomic_load(&g_detached_threads);
    default: return ferry_jni_queue_stat(which);
  }
}

void* ferry_jni_direct_address(JNIEnv* env, jobject buffer) {
  if (buffer == NULL) return NULL;
  return (*env)->GetDirectBufferAddress(env, buffer);
}

jobject ferry_jni_new_direct_buffer(JNIEnv* env, void* address, int64_t size) {
  if (address == NULL && size > 0) {
    ferry_jni_throw_illegal_argument(env, "a direct buffer over a 0 address");
    return NULL;
  }
  if (size < 0) {
    ferry_jni_throw_illegal_argument(env, "a direct buffer of negative size");
    return NULL;
  }
  return (*env)->NewDirectByteBuffer(env, address, size);
}

jbyteArray ferry_jni_copy_bytes(JNIEnv* env, const void* address, int32_t length) {
  if (length < 0 || (address == NULL && length > 0)) {
    ferry_jni_throw_illegal_argument(env, "copy_bytes: a 0 address or a negative length");
    return NULL;
  }
  jbyteArray out = (*env)->NewByteArray(env, length);
  if (out == NULL) return NULL;
  if (length > 0) (*env)->SetByteArrayRegion(env, out, 0, length, (const jbyte*)address);
  return out;
}

void ferry_jni_zero(void* address, int64_t size) {
  if (address != NULL && size > 0) memset(address, 0, (size_t)size);
}
