/* ferry_jni_testing.c: C-side helpers for the Java binding's tests and
 * benchmark (org.ferry.jni.Testing): a consumer on a pthread the JVM has never
 * seen, static C producers and consumers, and the raw JNI call floors.
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
#include "ferry_jni_support.h"

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
  job->rc = ferry_stream_get_schema(job->stream, &schema, &job->error);
  ferry_schema_release(&schema);
  while (job->rc == FERRY_OK) {
    struct ArrowDeviceArray batch;
    memset(&batch, 0, sizeof batch);
    job->rc = ferry_stream_get_next(job->stream, &batch, &job->error);
    if (job->rc != FERRY_OK || ferry_device_array_is_released(&batch)) break;
    job->batches++;
    job->total_length += ferry_array_length(ferry_device_array_array(&batch));
    ferry_device_array_release(&batch);
  }
  ferry_stream_release(job->stream);
  return NULL;
}

/* Takes ownership of the stream's contents (the struct memory stays the
 * caller's); returns NULL on success, else the error message. stats receives
 * {rc, batches, total length}. */
JNIEXPORT jstring JNICALL Java_org_ferry_jni_Testing_pullStreamOnForeignThread(
    JNIEnv* env, jclass cls, jlong stream, jlongArray stats) {
  struct ferry_jni_pull_job job;
  memset(&job, 0, sizeof job);
  job.stream = (struct ArrowDeviceArrayStream*)(intptr_t)stream;
  pthread_t thread;
  if (pthread_create(&thread, NULL, ferry_jni_pull_thread, &job) != 0) {
    ferry_stream_release(job.stream);
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
  memset(out, 0, sizeof *out);
  out->array.length = length;
  out->array.n_buffers = 2;
  out->array.buffers = g_static_buffers;
  out->array.release = ferry_jni_static_array_release;
  out->device_id = -1;
  out->device_type = ARROW_DEVICE_CPU;
}

static void ferry_jni_fill_static_schema(struct ArrowSchema* out) {
  memset(out, 0, sizeof *out);
  out->format = "i";
  out->name = "static";
  out->flags = ARROW_FLAG_NULLABLE;
  out->release = ferry_jni_static_schema_release;
}

/* Fills a CPU int32 array (values i * 7) and its schema with static memory. */
JNIEXPORT void JNICALL Java_org_ferry_jni_Testing_cProduceStatic(JNIEnv* env, jclass cls,
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

/* An endless C stream of static int32 batches of `length`. */
JNIEXPORT void JNICALL Java_org_ferry_jni_Testing_cStaticStream(JNIEnv* env, jclass cls,
                                                               jlong stream_out,
                                                               jlong length) {
  struct ArrowDeviceArrayStream* s = (struct ArrowDeviceArrayStream*)(intptr_t)stream_out;
  pthread_once(&g_static_once, ferry_jni_static_values_init);
  if (length > FERRY_JNI_STATIC_LENGTH) length = FERRY_JNI_STATIC_LENGTH;
  memset(s, 0, sizeof *s);
  s->device_type = ARROW_DEVICE_CPU;
  s->get_schema = ferry_jni_static_stream_get_schema;
  s->get_next = ferry_jni_static_stream_get_next;
  s->get_last_error = ferry_jni_static_stream_last_error;
  s->release = ferry_jni_static_stream_release;
  s->private_data = (void*)(intptr_t)length;
}

/* ---- C consumers -------------------------------------------------------- */

/* Consumes a device array the way a C consumer does: move it, read length and
 * the first value of buffer 1, release. Returns length + value. */
JNIEXPORT jlong JNICALL Java_org_ferry_jni_Testing_cConsumeArray(JNIEnv* env, jclass cls,
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
JNIEXPORT jlong JNICALL Java_org_ferry_jni_Testing_cPullLoop(JNIEnv* env, jclass cls,
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
JNIEXPORT jlong JNICALL Java_org_ferry_jni_Testing_cToCLoop(JNIEnv* env, jclass cls, jlong n) {
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
JNIEXPORT jlong JNICALL Java_org_ferry_jni_Testing_noop(JNIEnv* env, jclass cls, jlong x) {
  return x + 1;
}

/* C -> Java: n CallStaticLongMethod calls of Upcalls.echo; elapsed ns. */
JNIEXPORT jlong JNICALL Java_org_ferry_jni_Testing_callJavaLoop(JNIEnv* env, jclass cls,
                                                               jlong n) {
  jclass upcalls = (*env)->FindClass(env, "org/ferry/Upcalls");
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
