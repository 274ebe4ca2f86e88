/* ferry_jni_testing.c: C-side helpers for the Java binding's tests and
 * benchmark (io.github.ferryarrow.ferry.jni.Testing, in the test source set): a consumer on a
 * pthread the JVM has never seen, static C producers and consumers, and the
 * raw JNI call floors. Built by CMake as its own libferry_jni_testing.so, so
 * that neither libferry_jni.so nor the jar carries test code.
 *
 * The static producers use static buffers and a release callback that only
 * clears `release`: they measure the handoff itself, never malloc.
 */
#include <errno.h>
#include <jni.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "ferry/ferry.h"

/* The JVM, from the first call (JNI_OnLoad of this library). */
static JavaVM* g_vm;

JNIEXPORT jint JNICALL JNI_OnLoad(JavaVM* vm, void* reserved) {
  g_vm = vm;
  return JNI_VERSION_1_8;
}

/* The calling thread's JNIEnv, attaching it as a daemon when the JVM has
 * never seen it; NULL when no JVM is reachable. */
static JNIEnv* testing_env(void) {
  JNIEnv* env = NULL;
  if (g_vm == NULL) return NULL;
  if ((*g_vm)->GetEnv(g_vm, (void**)&env, JNI_VERSION_1_8) == JNI_OK) return env;
  if ((*g_vm)->AttachCurrentThreadAsDaemon(g_vm, (void**)&env, NULL) != JNI_OK) return NULL;
  return env;
}

/* ---- a consumer on a foreign thread ------------------------------------- */

struct ferry_jni_pull_job {
  struct ArrowDeviceArrayStream* stream;
  int rc;
  int64_t batches;
  int64_t total_length;
  struct FerryError error;
};

/* Pulls the whole stream, releasing every schema and batch, then the stream:
 * the thread is created here, so every Java callback must attach it. */
static void* ferry_jni_pull_thread(void* arg) {
  struct ferry_jni_pull_job* job = arg;
  struct ArrowSchema schema;
  memset(&schema, 0, sizeof schema);
  job->rc = ferry_array_stream_get_schema(job->stream, &schema, &job->error);
  ferry_schema_release(&schema);
  while (job->rc == FERRY_OK) {
    struct ArrowDeviceArray batch;
    memset(&batch, 0, sizeof batch);
    job->rc = ferry_array_stream_get_next(job->stream, &batch, &job->error);
    if (job->rc != FERRY_OK || ferry_device_array_is_released(&batch)) break;
    job->batches++;
    job->total_length += ferry_array_length(ferry_device_array_array(&batch));
    ferry_device_array_release(&batch);
  }
  ferry_array_stream_release(job->stream);
  return NULL;
}

/* Takes ownership of the stream's contents (the struct memory stays the
 * caller's); returns NULL on success, else the error message. stats receives
 * {rc, batches, total length}. */
JNIEXPORT jstring JNICALL Java_io_github_ferryarrow_ferry_jni_Testing_pullStreamOnForeignThread(
    JNIEnv* env, jclass cls, jlong stream, jlongArray stats) {
  struct ferry_jni_pull_job job;
  memset(&job, 0, sizeof job);
  job.stream = (struct ArrowDeviceArrayStream*)(intptr_t)stream;
  pthread_t thread;
  if (pthread_create(&thread, NULL, ferry_jni_pull_thread, &job) != 0) {
    ferry_array_stream_release(job.stream);
    return (*env)->NewStringUTF(env, "pthread_create failed");
  }
  pthread_join(thread, NULL);
  jlong values[3] = {job.rc, job.batches, job.total_length};
  (*env)->SetLongArrayRegion(env, stats, 0, 3, values);
  if (job.rc == FERRY_OK) return NULL;
  return (*env)->NewStringUTF(env, job.error.message);
}

/* ---- static C producers ------------------------------------------------- */

enum { FERRY_JNI_STATIC_LENGTH = 1024 };
static int32_t g_static_values[FERRY_JNI_STATIC_LENGTH];
static const void* g_static_buffers[2] = {NULL, g_static_values};

static pthread_once_t g_static_once = PTHREAD_ONCE_INIT;
static void ferry_jni_static_values_init(void) {
  for (int i = 0; i < FERRY_JNI_STATIC_LENGTH; i++) g_static_values[i] = i * 7;
}

static void ferry_jni_static_array_release(struct ArrowArray* array) { array->release = NULL; }
static void ferry_jni_static_schema_release(struct ArrowSchema* schema) {
  schema->release = NULL;
}

static void ferry_jni_fill_static_array(struct ArrowDeviceArray* out, int64_t length) {
  *out = (struct ArrowDeviceArray){
      .array = {.length = length, .n_buffers = 2, .buffers = g_static_buffers,
                .release = ferry_jni_static_array_release},
      .device_id = -1,
      .device_type = ARROW_DEVICE_CPU};
}

static void ferry_jni_fill_static_schema(struct ArrowSchema* out) {
  *out = (struct ArrowSchema){.format = "i", .name = "static", .flags = ARROW_FLAG_NULLABLE,
                              .release = ferry_jni_static_schema_release};
}

/* Fills a CPU int32 array (values i * 7) and its schema with static memory. */
JNIEXPORT void JNICALL Java_io_github_ferryarrow_ferry_jni_Testing_cProduceStatic(JNIEnv* env, jclass cls,
                                                                jlong schema_out,
                                                                jlong array_out,
                                                                jlong length) {
  pthread_once(&g_static_once, ferry_jni_static_values_init);
  if (length > FERRY_JNI_STATIC_LENGTH) length = FERRY_JNI_STATIC_LENGTH;
  if (schema_out) ferry_jni_fill_static_schema((struct ArrowSchema*)(intptr_t)schema_out);
  ferry_jni_fill_static_array((struct ArrowDeviceArray*)(intptr_t)array_out, length);
}

static int ferry_jni_static_stream_get_schema(struct ArrowDeviceArrayStream* s,
                                              struct ArrowSchema* out) {
  ferry_jni_fill_static_schema(out);
  return 0;
}
static int ferry_jni_static_stream_get_next(struct ArrowDeviceArrayStream* s,
                                            struct ArrowDeviceArray* out) {
  ferry_jni_fill_static_array(out, (int64_t)(intptr_t)s->private_data);
  return 0;
}
static const char* ferry_jni_static_stream_last_error(struct ArrowDeviceArrayStream* s) {
  return NULL;
}
static void ferry_jni_static_stream_release(struct ArrowDeviceArrayStream* s) {
  s->release = NULL;
}

/* Fills *s as an endless CPU stream of the static schema whose batches come
 * from get_next (nothing to free: release only marks it released). */
static void ferry_jni_static_stream_init(struct ArrowDeviceArrayStream* s,
                                         int (*get_next)(struct ArrowDeviceArrayStream*,
                                                         struct ArrowDeviceArray*),
                                         void* private_data) {
  *s = (struct ArrowDeviceArrayStream){.device_type = ARROW_DEVICE_CPU,
                                       .get_schema = ferry_jni_static_stream_get_schema,
                                       .get_next = get_next,
                                       .get_last_error = ferry_jni_static_stream_last_error,
                                       .release = ferry_jni_static_stream_release,
                                       .private_data = private_data};
}

/* An endless C stream of static int32 batches of `length`. */
JNIEXPORT void JNICALL Java_io_github_ferryarrow_ferry_jni_Testing_cStaticStream(JNIEnv* env, jclass cls,
                                                               jlong stream_out,
                                                               jlong length) {
  struct ArrowDeviceArrayStream* s = (struct ArrowDeviceArrayStream*)(intptr_t)stream_out;
  pthread_once(&g_static_once, ferry_jni_static_values_init);
  if (length > FERRY_JNI_STATIC_LENGTH) length = FERRY_JNI_STATIC_LENGTH;
  ferry_jni_static_stream_init(s, ferry_jni_static_stream_get_next, (void*)(intptr_t)length);
}

/* ---- C consumers -------------------------------------------------------- */

/* Consumes a device array the way a C consumer does: move it, read length and
 * the first value of buffer 1, release. Returns length + value. */
JNIEXPORT jlong JNICALL Java_io_github_ferryarrow_ferry_jni_Testing_cConsumeArray(JNIEnv* env, jclass cls,
                                                                jlong array) {
  struct ArrowDeviceArray local;
  memset(&local, 0, sizeof local);
  if (ferry_device_array_move((struct ArrowDeviceArray*)(intptr_t)array, &local) != FERRY_OK) {
    return -1;
  }
  const int32_t* values = local.array.n_buffers > 1 ? local.array.buffers[1] : NULL;
  jlong out = local.array.length + (values && local.array.length > 0 ? values[0] : 0);
  local.array.release(&local.array);
  return out;
}

static int64_t ferry_jni_now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* Pulls n batches from `stream` in C (get_next, read, release each) and
 * returns the elapsed ns, or -1 on error or early end. Borrows the stream. */
JNIEXPORT jlong JNICALL Java_io_github_ferryarrow_ferry_jni_Testing_cPullLoop(JNIEnv* env, jclass cls,
                                                            jlong stream, jlong n) {
  struct ArrowDeviceArrayStream* s = (struct ArrowDeviceArrayStream*)(intptr_t)stream;
  volatile int64_t sink = 0;
  int64_t start = ferry_jni_now_ns();
  for (jlong i = 0; i < n; i++) {
    struct ArrowDeviceArray batch;
    memset(&batch, 0, sizeof batch);
    if (s->get_next(s, &batch) != 0 || batch.array.release == NULL) return -1;
    sink += batch.array.length;
    batch.array.release(&batch.array);
  }
  return ferry_jni_now_ns() - start;
}

/* The C-to-C floor: static producer, move, read, release; elapsed ns for n. */
JNIEXPORT jlong JNICALL Java_io_github_ferryarrow_ferry_jni_Testing_cToCLoop(JNIEnv* env, jclass cls, jlong n) {
  struct ArrowDeviceArray produced, consumed;
  pthread_once(&g_static_once, ferry_jni_static_values_init);
  volatile int64_t sink = 0;
  int64_t start = ferry_jni_now_ns();
  for (jlong i = 0; i < n; i++) {
    ferry_jni_fill_static_array(&produced, 1024);
    memcpy(&consumed, &produced, sizeof consumed);
    produced.array.release = NULL;
    sink += consumed.array.length + ((const int32_t*)consumed.array.buffers[1])[0];
    consumed.array.release(&consumed.array);
  }
  return ferry_jni_now_ns() - start;
}

/* ---- raw JNI floors ----------------------------------------------------- */

/* Java -> C: the cheapest native call taking and returning a long. */
JNIEXPORT jlong JNICALL Java_io_github_ferryarrow_ferry_jni_Testing_noop(JNIEnv* env, jclass cls, jlong x) {
  return x + 1;
}

/* C -> Java: n CallStaticLongMethod calls of Upcalls.echo; elapsed ns. */
JNIEXPORT jlong JNICALL Java_io_github_ferryarrow_ferry_jni_Testing_callJavaLoop(JNIEnv* env, jclass cls,
                                                               jlong n) {
  jclass upcalls = (*env)->FindClass(env, "io/github/ferryarrow/ferry/Upcalls");
  if (upcalls == NULL) return -1;
  jmethodID echo = (*env)->GetStaticMethodID(env, upcalls, "echo", "(J)J");
  if (echo == NULL) return -1;
  jlong acc = 0;
  int64_t start = ferry_jni_now_ns();
  for (jlong i = 0; i < n; i++) {
    acc = (*env)->CallStaticLongMethod(env, upcalls, echo, acc + 1);
  }
  int64_t elapsed = ferry_jni_now_ns() - start;
  (*env)->DeleteLocalRef(env, upcalls);
  return acc == n ? elapsed : -1;
}

/* ---- release helpers for the release-queue tests ------------------------ */

static void* ferry_jni_release_thread(void* arg) {
  ferry_device_array_release((struct ArrowDeviceArray*)arg);
  return NULL;
}

/* Releases the device array (the struct memory stays the caller's) on a new
 * pthread the JVM has never seen; returns 0, or -1 if no thread started. */
JNIEXPORT jint JNICALL Java_io_github_ferryarrow_ferry_jni_Testing_releaseOnForeignThread(JNIEnv* env,
                                                                         jclass cls,
                                                                         jlong array) {
  pthread_t thread;
  if (pthread_create(&thread, NULL, ferry_jni_release_thread,
                     (void*)(intptr_t)array) != 0) {
    return -1;
  }
  pthread_join(thread, NULL);
  return 0;
}

/* Releases every device array of `arrays` back to back, in C. */
JNIEXPORT void JNICALL Java_io_github_ferryarrow_ferry_jni_Testing_releaseAll(JNIEnv* env, jclass cls,
                                                            jlongArray arrays) {
  jsize n = (*env)->GetArrayLength(env, arrays);
  jlong* values = (*env)->GetLongArrayElements(env, arrays, NULL);
  if (values == NULL) return;
  for (jsize i = 0; i < n; i++) {
    ferry_device_array_release((struct ArrowDeviceArray*)(intptr_t)values[i]);
  }
  (*env)->ReleaseLongArrayElements(env, arrays, values, JNI_ABORT);
}

/* ---- per-case floors of the benchmark ------------------------------------
 * Each floor makes the same boundary crossings as its case and the same C
 * handoff (static producer, 128-byte move, read length and one value,
 * release), and nothing else: no heap struct, no ferry bookkeeping, no Java
 * object. */

/* Moves a device array (and the schema when both addresses are given) from
 * the producer's structs into the consumer's and reads it: the take half of
 * an owning handoff. Returns length + first value. */
JNIEXPORT jlong JNICALL Java_io_github_ferryarrow_ferry_jni_Testing_floorTake(JNIEnv* env, jclass cls,
                                                            jlong schema_src, jlong array_src,
                                                            jlong schema_dst,
                                                            jlong array_dst) {
  if (schema_src != 0 && schema_dst != 0) {
    struct ArrowSchema* from = (struct ArrowSchema*)(intptr_t)schema_src;
    memcpy((void*)(intptr_t)schema_dst, from, sizeof *from);
    from->release = NULL;
  }
  struct ArrowDeviceArray* from = (struct ArrowDeviceArray*)(intptr_t)array_src;
  struct ArrowDeviceArray* to = (struct ArrowDeviceArray*)(intptr_t)array_dst;
  memcpy(to, from, sizeof *to);
  from->array.release = NULL;
  return to->array.length + ((const int32_t*)to->array.buffers[1])[0];
}

/* The release half: releases the consumer's array (and schema, when given). */
JNIEXPORT void JNICALL Java_io_github_ferryarrow_ferry_jni_Testing_floorRelease(JNIEnv* env, jclass cls,
                                                              jlong schema, jlong array) {
  struct ArrowDeviceArray* a = (struct ArrowDeviceArray*)(intptr_t)array;
  a->array.release(&a->array);
  if (schema != 0) {
    struct ArrowSchema* s = (struct ArrowSchema*)(intptr_t)schema;
    s->release(s);
  }
}

/* get_next of a stream into the consumer's struct, then read: the take half
 * of a stream pull. Returns length + first value. */
JNIEXPORT jlong JNICALL Java_io_github_ferryarrow_ferry_jni_Testing_floorStreamTake(JNIEnv* env, jclass cls,
                                                                  jlong stream, jlong dst) {
  struct ArrowDeviceArrayStream* s = (struct ArrowDeviceArrayStream*)(intptr_t)stream;
  struct ArrowDeviceArray* to = (struct ArrowDeviceArray*)(intptr_t)dst;
  if (s->get_next(s, to) != 0 || to->array.release == NULL) return -1;
  return to->array.length + ((const int32_t*)to->array.buffers[1])[0];
}

/* Releases the previous batch in `dst` (if live), pulls the next into it and
 * reads it: a cursor advance in one crossing. */
JNIEXPORT jlong JNICALL Java_io_github_ferryarrow_ferry_jni_Testing_floorStreamAdvance(JNIEnv* env, jclass cls,
                                                                     jlong stream, jlong dst) {
  struct ArrowDeviceArray* to = (struct ArrowDeviceArray*)(intptr_t)dst;
  if (to->array.release != NULL) to->array.release(&to->array);
  return Java_io_github_ferryarrow_ferry_jni_Testing_floorStreamTake(env, cls, stream, dst);
}

/* A producer filling a static array into `out`: the export half. */
JNIEXPORT void JNICALL Java_io_github_ferryarrow_ferry_jni_Testing_floorFill(JNIEnv* env, jclass cls,
                                                           jlong out) {
  pthread_once(&g_static_once, ferry_jni_static_values_init);
  ferry_jni_fill_static_array((struct ArrowDeviceArray*)(intptr_t)out, 1024);
}

/* A stream whose get_next calls the Java method Testing.floorGetNext(out),
 * which calls floorFill: a Java producer's pull in its cheapest form. */
static jclass g_testing_class;
static jmethodID g_testing_floor_get_next;

static int ferry_jni_floor_stream_get_next(struct ArrowDeviceArrayStream* s,
                                           struct ArrowDeviceArray* out) {
  JNIEnv* env = testing_env();
  if (env == NULL) return EIO;
  (*env)->CallStaticVoidMethod(env, g_testing_class, g_testing_floor_get_next,
                               (jlong)(intptr_t)out);
  if ((*env)->ExceptionCheck(env)) {
    (*env)->ExceptionClear(env);
    return EIO;
  }
  return 0;
}

JNIEXPORT jint JNICALL Java_io_github_ferryarrow_ferry_jni_Testing_floorJavaStream(JNIEnv* env, jclass cls,
                                                                 jlong stream_out) {
  if (g_testing_class == NULL) {
    g_testing_class = (jclass)(*env)->NewGlobalRef(env, cls);
    g_testing_floor_get_next = (*env)->GetStaticMethodID(env, cls, "floorGetNext", "(J)V");
    if (g_testing_floor_get_next == NULL) return -1;
  }
  struct ArrowDeviceArrayStream* s = (struct ArrowDeviceArrayStream*)(intptr_t)stream_out;
  ferry_jni_static_stream_init(s, ferry_jni_floor_stream_get_next, NULL);
  return 0;
}

/* One Java->C crossing plus the C->C handoff: the floor of the cursor. */
JNIEXPORT jlong JNICALL Java_io_github_ferryarrow_ferry_jni_Testing_floorJniC2c(JNIEnv* env, jclass cls) {
  struct ArrowDeviceArray produced, consumed;
  pthread_once(&g_static_once, ferry_jni_static_values_init);
  ferry_jni_fill_static_array(&produced, 1024);
  memcpy(&consumed, &produced, sizeof consumed);
  produced.array.release = NULL;
  jlong out = consumed.array.length + ((const int32_t*)consumed.array.buffers[1])[0];
  consumed.array.release(&consumed.array);
  return out;
}
