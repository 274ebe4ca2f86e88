/* ferry_jni_support.h: what the C files of libferry_jni.so share, and Java
 * does not see (Java's view is ferry_jni.h).
 *
 * SWIG generates every JNI entry point (generated/ferry_java_wrap.c) but
 * cannot implement C callbacks in Java, so ferry_jni_support.c provides the
 * trampolines that ferry calls back (release hooks, stream get_schema and
 * get_next), the thread attachment guard, and the exception helpers the
 * generated code uses.
 */
#ifndef FERRY_JNI_SUPPORT_H
#define FERRY_JNI_SUPPORT_H

#include <jni.h>

#include "ferry/ferry.h"
#include "ferry_jni.h"

/** Throws io.github.ferryarrow.ferry.FerryException(code, message) into `env`; a NULL or empty
 *  message is replaced by "<function> failed: <ERRNAME>". Borrows everything. */
void ferry_jni_throw_ferry(JNIEnv* env, int code, const char* message, const char* function);
/** A Java String of the UTF-8 text `text` (NULL gives NULL), whatever its
 *  bytes: JNI's NewStringUTF takes modified UTF-8 only and fails on anything
 *  else, and producer-supplied text (names, formats, error messages) can be
 *  any bytes. Invalid sequences become U+FFFD; characters beyond U+FFFF
 *  become their surrogate pair, as modified UTF-8 writes them. */
jstring ferry_jni_new_string(JNIEnv* env, const char* text);
/** Throws java.lang.IllegalArgumentException(message). */
void ferry_jni_throw_illegal_argument(JNIEnv* env, const char* message);

/** Returns the JNIEnv of the calling thread, attaching it as a daemon when
 *  the JVM has never seen it (it is detached when the thread exits), or
 *  NULL when no JVM is reachable (not loaded yet, or shutting down). */
JNIEnv* ferry_jni_env(void);

/** Release hook trampoline: calls io.github.ferryarrow.ferry.Upcalls.release(handle) with
 *  `user_data` as the handle. Never lets a Java exception escape. */
void ferry_jni_release_hook(void* user_data);
/** Stream trampolines: call Upcalls.getSchema/getNext(handle, out address);
 *  a Java exception becomes its FerryException code (EIO otherwise) and its
 *  message in `error`. */
int ferry_jni_stream_get_schema(void* user_data, struct ArrowSchema* out,
                                struct FerryError* error);
int ferry_jni_stream_get_next(void* user_data, struct ArrowDeviceArray* out,
                              struct FerryError* error);

/** Clears a pending Java exception, if any, and turns it into an errno code
 *  (the FerryException code, else EIO) plus its message in `error` (may be
 *  NULL). Returns FERRY_OK when nothing was pending. */
int ferry_jni_take_exception(JNIEnv* env, struct FerryError* error);

/** Release hook of Java exports without onRelease actions (ferry_jni_handoff.c):
 *  queues `user_data` (the export's handle) for Java to drain; calls
 *  ferry_jni_release_hook instead when the queue is full. Any thread. */
void ferry_jni_queued_release_hook(void* user_data);
/** Prepares the release queue; called once by JNI_OnLoad. */
void ferry_jni_release_queue_init(void);
/** The release queue's FERRY_JNI_STAT_QUEUE_* counters (-1 for others). */
int64_t ferry_jni_queue_stat(int32_t which);

/** The cached JavaVM (NULL before JNI_OnLoad). */
JavaVM* ferry_jni_vm(void);

#endif  // FERRY_JNI_SUPPORT_H
