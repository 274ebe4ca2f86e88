/* ferry_jni_peer.c: the C side of the peer benchmark (PeerBench: ferry against
 * Arrow Java's own C Data Interface), in libferry_jni_testing.so. Every producer
 * and consumer here serves both sides alike, so that the only difference is the
 * Java path under test:
 *   - one int32 array of 1024 values with 103 nulls (and its schema), in static
 *     memory, as an ArrowDeviceArray whose first member is the plain ArrowArray;
 *   - streams of N record batches (struct<v: int32>, the same 1024 values), as
 *     an ArrowDeviceArrayStream and as a plain ArrowArrayStream;
 *   - consumers: an array + schema (read, release both) and both stream kinds
 *     (get_schema, every batch to the end, release).
 * Release callbacks only clear `release`: the producers never allocate per batch.
 */
#include <jni.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ferry/ferry.h"

enum { PEER_LENGTH = 1024, PEER_NULLS = 103 };
static int32_t g_values[PEER_LENGTH];
static uint8_t g_validity[PEER_LENGTH / 8];
static const void* g_buffers[2] = {g_validity, g_values};
static struct ArrowArray g_child;
static struct ArrowArray* g_children[1] = {&g_child};
static const void* g_struct_buffers[1] = {NULL};
static struct ArrowSchema g_child_schema;
static struct ArrowSchema* g_child_schemas[1] = {&g_child_schema};

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
/* Every tenth value is null, 103 of 1024 (indices 0, 10, ..., 1020). */
static void peer_init(void) {
  memset(g_validity, 0xff, sizeof g_validity);
  for (int i = 0; i < PEER_LENGTH; i++) {
    g_values[i] = i * 7;
    if (i % 10 == 0) g_validity[i / 8] &= (uint8_t)~(1u << (i % 8));
  }
}

static void peer_array_release(struct ArrowArray* a) { a->release = NULL; }
static void peer_schema_release(struct ArrowSchema* s) { s->release = NULL; }

static void peer_fill_int32(struct ArrowArray* out) {
  *out = (struct ArrowArray){.length = PEER_LENGTH, .null_count = PEER_NULLS, .n_buffers = 2,
                             .buffers = g_buffers, .release = peer_array_release};
}

static void peer_fill_int32_schema(struct ArrowSchema* out, const char* name) {
  *out = (struct ArrowSchema){.format = "i", .name = name, .flags = ARROW_FLAG_NULLABLE,
                              .release = peer_schema_release};
}

/* A record batch: struct<v: int32> over the static child (refilled each time:
 * identical contents, so batches still held by a consumer see no change). */
static void peer_fill_batch(struct ArrowArray* out) {
  peer_fill_int32(&g_child);
  *out = (struct ArrowArray){.length = PEER_LENGTH, .n_buffers = 1, .buffers = g_struct_buffers,
                             .n_children = 1, .children = g_children,
                             .release = peer_array_release};
}

static void peer_fill_batch_schema(struct ArrowSchema* out) {
  peer_fill_int32_schema(&g_child_schema, "v");
  *out = (struct ArrowSchema){.format = "+s", .name = "", .n_children = 1,
                              .children = g_child_schemas, .release = peer_schema_release};
}

/* The int32 array and its schema (either address may be 0). The ArrowDeviceArray
 * at arrayOut is on the CPU; its first member is the plain ArrowArray. */
JNIEXPORT void JNICALL Java_io_github_ferryarrow_ferry_jni_Testing_peerArray(JNIEnv* env,
                                                                             jclass cls,
                                                                             jlong schema_out,
                                                                             jlong array_out) {
  pthread_once(&g_once, peer_init);
  if (schema_out) peer_fill_int32_schema((struct ArrowSchema*)(intptr_t)schema_out, "peer");
  if (array_out) {
    struct ArrowDeviceArray* d = (struct ArrowDeviceArray*)(intptr_t)array_out;
    *d = (struct ArrowDeviceArray){.device_id = -1, .device_type = ARROW_DEVICE_CPU};
    peer_fill_int32(&d->array);
  }
}

/* A C consumer of an array + schema (an ArrowArray, or an ArrowDeviceArray by its
 * first member): reads length, null count and the value at 1, releases both.
 * Returns their sum, or -1 when either is released. */
JNIEXPORT jlong JNICALL Java_io_github_ferryarrow_ferry_jni_Testing_peerConsume(JNIEnv* env,
                                                                                jclass cls,
                                                                                jlong array,
                                                                                jlong schema) {
  struct ArrowArray* a = (struct ArrowArray*)(intptr_t)array;
  struct ArrowSchema* s = (struct ArrowSchema*)(intptr_t)schema;
  if (a->release == NULL || s->release == NULL) return -1;
  const int32_t* values = a->n_buffers > 1 ? a->buffers[1] : NULL;
  jlong out = a->length + a->null_count + (values && a->length > 1 ? values[1] : 0) + s->format[0];
  a->release(a);
  s->release(s);
  return out;
}

/* ---- streams of `remaining` record batches -------------------------------- */

struct peer_stream {
  int64_t remaining;
};

/* The next batch of p into out: a released array at the end. */
static void peer_take(struct peer_stream* p, struct ArrowArray* out) {
  memset(out, 0, sizeof *out);
  if (p->remaining == 0) return;
  p->remaining--;
  peer_fill_batch(out);
}

static int peer_dstream_schema(struct ArrowDeviceArrayStream* s, struct ArrowSchema* out) {
  peer_fill_batch_schema(out);
  return 0;
}
static int peer_dstream_next(struct ArrowDeviceArrayStream* s, struct ArrowDeviceArray* out) {
  *out = (struct ArrowDeviceArray){.device_id = -1, .device_type = ARROW_DEVICE_CPU};
  peer_take(s->private_data, &out->array);
  return 0;
}
static const char* peer_dstream_error(struct ArrowDeviceArrayStream* s) { return NULL; }
static void peer_dstream_release(struct ArrowDeviceArrayStream* s) {
  free(s->private_data);
  s->release = NULL;
}

static int peer_stream_schema(struct ArrowArrayStream* s, struct ArrowSchema* out) {
  peer_fill_batch_schema(out);
  return 0;
}
static int peer_stream_next(struct ArrowArrayStream* s, struct ArrowArray* out) {
  peer_take(s->private_data, out);
  return 0;
}
static const char* peer_stream_error(struct ArrowArrayStream* s) { return NULL; }
static void peer_stream_release(struct ArrowArrayStream* s) {
  free(s->private_data);
  s->release = NULL;
}

/* Fills an ArrowDeviceArrayStream (device != 0) or a plain ArrowArrayStream of n
 * record batches at streamOut. Returns 0, or -1 when out of memory. */
JNIEXPORT jint JNICALL Java_io_github_ferryarrow_ferry_jni_Testing_peerStream(JNIEnv* env,
                                                                              jclass cls,
                                                                              jlong stream_out,
                                                                              jboolean device,
                                                                              jlong n) {
  pthread_once(&g_once, peer_init);
  struct peer_stream* p = malloc(sizeof *p);
  if (p == NULL) return -1;
  p->remaining = n;
  if (device) {
    *(struct ArrowDeviceArrayStream*)(intptr_t)stream_out = (struct ArrowDeviceArrayStream){
        .device_type = ARROW_DEVICE_CPU, .get_schema = peer_dstream_schema,
        .get_next = peer_dstream_next, .get_last_error = peer_dstream_error,
        .release = peer_dstream_release, .private_data = p};
  } else {
    *(struct ArrowArrayStream*)(intptr_t)stream_out = (struct ArrowArrayStream){
        .get_schema = peer_stream_schema, .get_next = peer_stream_next,
        .get_last_error = peer_stream_error, .release = peer_stream_release,
        .private_data = p};
  }
  return 0;
}

/* Reads the value at 1 of a batch's first child (0 when there is none). */
static int64_t peer_read(const struct ArrowArray* a) {
  int64_t out = a->length;
  if (a->n_children > 0 && a->children[0]->n_buffers > 1 && a->children[0]->length > 1) {
    out += ((const int32_t*)a->children[0]->buffers[1])[1];
  }
  return out;
}

/* The body of peerPull for either stream kind: `Stream` the struct at
 * `stream`, `Batch` its batch type, `member` the path from a Batch to its
 * ArrowArray (empty for a plain stream). Counts into `batches` (-1 on an
 * error), reads into `sink`, releases the stream. */
#define PEER_PULL(Stream, Batch, member)                         \
  do {                                                          \
    Stream* s = (Stream*)(intptr_t)stream;                      \
    struct ArrowSchema schema;                                  \
    if (s->get_schema(s, &schema) != 0) batches = -1;           \
    else schema.release(&schema);                               \
    while (batches >= 0) {                                      \
      Batch b;                                                  \
      if (s->get_next(s, &b) != 0) { batches = -1; break; }     \
      if (b member.release == NULL) break;                      \
      sink += peer_read(&b member);                             \
      b member.release(&b member);                              \
      batches++;                                                \
    }                                                           \
    s->release(s);                                              \
  } while (0)

/* A C consumer of a whole stream: get_schema (released), every batch to the end
 * (read, released), then the stream. Returns the number of batches, or -1 on an
 * error. device says which struct is at `stream`. */
JNIEXPORT jlong JNICALL Java_io_github_ferryarrow_ferry_jni_Testing_peerPull(JNIEnv* env,
                                                                             jclass cls,
                                                                             jlong stream,
                                                                             jboolean device) {
  volatile int64_t sink = 0;
  int64_t batches = 0;
  if (device) {
    PEER_PULL(struct ArrowDeviceArrayStream, struct ArrowDeviceArray, .array);
  } else {
    PEER_PULL(struct ArrowArrayStream, struct ArrowArray, );
  }
  return batches;
}
