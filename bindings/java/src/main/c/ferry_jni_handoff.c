/* ferry_jni_handoff.c: the one-call hot paths of the Java binding (declared
 * in ferry_jni.h, wrapped by the generated layer) and the release queue of
 * Java exports.
 *
 * Why this file exists: a JNI crossing costs ~8 ns, and the idiomatic object
 * paths used to make 10-15 of them per array (and one C->Java upcall, ~50-110
 * ns, per release of a Java export). Here each step is one crossing:
 * - import: move the producer's array into a slot (ferry_jni_slab.h) and
 *   write everything Java's accessors need (length, null count, offset,
 *   buffer addresses, device) next to it, where Java reads it through a
 *   direct ByteBuffer (layout: FERRY_JNI_INFO_* of ferry_jni.h, which Java
 *   reads as generated constants);
 * - stream pull and cursor step: get_next into a slot, same report;
 * - close: release the array and return the slot (and free the schema, when
 *   the last holder lets go);
 * - export: read the addresses of direct ByteBuffers here
 *   (GetDirectBufferAddress) and fill the consumer's struct.
 *
 * Release queue: a Java export without onRelease actions only has to keep its
 * ByteBuffers reachable until the consumer releases it. Its release hook
 * therefore does not call into Java: it pushes the export's handle onto a
 * bounded lock-free queue (any thread, no JVM attachment, no allocation);
 * Java drains the queue on its next export (in the same JNI call), when
 * asked (ArrayExporter.drainReleases, liveExports) and from a daemon thread
 * that this file wakes when a release arrives while it waits. Until Java has
 * drained a handle, its buffers stay referenced, so memory is never freed
 * early. When the queue is full the hook falls back to the synchronous
 * upcall (ferry_jni_release_hook): slower, equally correct.
 */
#include <errno.h>
#include <jni.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ferry/ferry.h"
#include "ferry_jni_slab.h"
#include "ferry_jni_support.h"

/* Writes what Java caches about `array` into `values` (FERRY_JNI_INFO_SIZE
 * entries); buffer addresses beyond the inline ones are read on demand. */
static void ferry_jni_fill_info(int64_t* values, const struct ArrowArray* array,
                                int64_t device_type, int64_t device_id, const void* sync_event,
                                const struct ArrowSchema* schema) {
  values[FERRY_JNI_INFO_LENGTH] = array->length;
  values[FERRY_JNI_INFO_NULL_COUNT] = array->null_count;
  values[FERRY_JNI_INFO_OFFSET] = array->offset;
  values[FERRY_JNI_INFO_N_BUFFERS] = array->n_buffers;
  values[FERRY_JNI_INFO_N_CHILDREN] = array->n_children;
  values[FERRY_JNI_INFO_DEVICE_TYPE] = device_type;
  values[FERRY_JNI_INFO_DEVICE_ID] = device_id;
  values[FERRY_JNI_INFO_SYNC_EVENT] = (int64_t)(intptr_t)sync_event;
  values[FERRY_JNI_INFO_DICTIONARY] = (int64_t)(intptr_t)array->dictionary;
  values[FERRY_JNI_INFO_SCHEMA] = (int64_t)(intptr_t)schema;
  int64_t inline_buffers = array->n_buffers;
  if (inline_buffers > FERRY_JNI_INFO_INLINE_BUFFERS) inline_buffers = FERRY_JNI_INFO_INLINE_BUFFERS;
  if (inline_buffers < 0 || array->buffers == NULL) inline_buffers = 0;
  for (int64_t i = 0; i < inline_buffers; i++) {
    values[FERRY_JNI_INFO_BUFFER0 + i] = (int64_t)(intptr_t)array->buffers[i];
  }
}

static void ferry_jni_fill_slot_info(struct ferry_jni_slot* slot,
                                     const struct ArrowSchema* schema) {
  const struct ArrowDeviceArray* a = &slot->array;
  ferry_jni_fill_info(slot->info, &a->array, a->device_type, a->device_id, a->sync_event,
                      schema);
}

/* ---- import ------------------------------------------------------------- */

/* Validates the array in `slot` (schema or prepared schema) at `level`;
 * on a finding releases it, frees the slot and throws the validator's
 * message. Returns 1 when the array may be handed to Java. */
static int ferry_jni_validated(JNIEnv* env, struct ferry_jni_slot* slot,
                               const struct ArrowSchema* schema,
                               const struct FerryPreparedSchema* prepared, int32_t level) {
  if (level == FERRY_JNI_VALIDATE_NONE || (schema == NULL && prepared == NULL)) return 1;
  struct FerryError error;
  error.message[0] = '\0';
  int rc = prepared != NULL
               ? ferry_validate_prepared(prepared, &slot->array, level, NULL, NULL, &error)
               : ferry_validate_device_array(schema, &slot->array, level, NULL, NULL, &error);
  if (rc == FERRY_OK) return 1;
  ferry_device_array_release(&slot->array);
  ferry_jni_slot_free(slot);
  ferry_jni_throw_ferry(env, rc, error.message, "ferry_validate_device_array");
  return 0;
}

int64_t ferry_jni_import_array(JNIEnv* env, struct ArrowSchema* schema_in,
                               struct ArrowDeviceArray* array_in, int32_t level) {
  if (schema_in == NULL || array_in == NULL) {
    ferry_jni_throw_illegal_argument(env, "null ArrowSchema or ArrowDeviceArray address");
    return -1;
  }
  if (ferry_schema_is_released(schema_in)) {
    ferry_jni_throw_ferry(env, EINVAL, "the ArrowSchema to import is released", NULL);
    return -1;
  }
  if (ferry_device_array_is_released(array_in)) {
    ferry_jni_throw_ferry(env, EINVAL, "the ArrowDeviceArray to import is released", NULL);
    return -1;
  }
  int64_t id;
  struct ArrowSchema* schema = malloc(sizeof *schema);
  struct ferry_jni_slot* slot = schema == NULL ? NULL : ferry_jni_slot_alloc(&id);
  if (slot == NULL) {
    free(schema);
    ferry_jni_throw_ferry(env, ENOMEM, "ferry: cannot allocate the imported structs", NULL);
    return -1;
  }
  /* Both sources are live and both targets fresh, so neither move fails. */
  schema->release = NULL;
  ferry_schema_move(schema_in, schema);
  ferry_device_array_move(array_in, &slot->array);
  if (!ferry_jni_validated(env, slot, schema, NULL, level)) {
    ferry_schema_free(schema);
    return -1;
  }
  ferry_jni_fill_slot_info(slot, schema);
  return id;
}

int64_t ferry_jni_adopt(JNIEnv* env, struct ArrowDeviceArray* src) {
  if (src == NULL || src->array.release == NULL) {
    ferry_jni_throw_ferry(env, EINVAL, "the ArrowDeviceArray to adopt is released", NULL);
    return -1;
  }
  int64_t id;
  struct ferry_jni_slot* slot = ferry_jni_slot_alloc(&id);
  if (slot == NULL) {
    ferry_jni_throw_ferry(env, ENOMEM, "ferry: cannot allocate a slot", NULL);
    return -1;
  }
  ferry_device_array_move(src, &slot->array);
  ferry_jni_fill_slot_info(slot, NULL);
  return id;
}

/* get_next (or get_next_on) into the released slot; 0 or the failure code
 * with the producer's message in `error`. A batch on another device type than
 * the stream's (the specification forbids it) is released and refused. */
static int ferry_jni_pull(struct ArrowDeviceArrayStream* stream, struct ferry_jni_slot* slot,
                          int32_t on_stream, void* consumer_stream, struct FerryError* error) {
  error->message[0] = '\0';
  int rc = on_stream
               ? ferry_array_stream_get_next_on(stream, &slot->array, consumer_stream, error)
               : ferry_array_stream_get_next(stream, &slot->array, error);
  if (rc != FERRY_OK || slot->array.array.release == NULL) return rc;
  ArrowDeviceType stream_type = stream->device_type; /* the ABI field: no call per batch */
  if (slot->array.device_type != stream_type) {
    snprintf(error->message, sizeof error->message,
             "the producer's batch has device type %s from a stream of device type %s",
             ferry_device_type_name(slot->array.device_type),
             ferry_device_type_name(stream_type));
    ferry_device_array_release(&slot->array);
    return EINVAL;
  }
  return FERRY_OK;
}

int64_t ferry_jni_stream_next(JNIEnv* env, struct ArrowDeviceArrayStream* stream,
                              int32_t on_stream, void* consumer_stream,
                              const struct FerryPreparedSchema* prepared, int32_t level) {
  int64_t id;
  struct ferry_jni_slot* slot = ferry_jni_slot_alloc(&id);
  if (slot == NULL) {
    ferry_jni_throw_ferry(env, ENOMEM, "ferry: cannot allocate a slot", NULL);
    return -1;
  }
  struct FerryError error;
  int rc = ferry_jni_pull(stream, slot, on_stream, consumer_stream, &error);
  if (rc != FERRY_OK || slot->array.array.release == NULL) {
    ferry_jni_slot_free(slot); /* get_next left it released */
    if (rc != FERRY_OK) ferry_jni_throw_ferry(env, rc, error.message, "ferry_array_stream_get_next");
    return -1;
  }
  if (!ferry_jni_validated(env, slot, NULL, prepared, level)) return -1;
  ferry_jni_fill_slot_info(slot, NULL);
  return id;
}

int64_t ferry_jni_cursor_advance(JNIEnv* env, struct ArrowDeviceArrayStream* stream,
                                 void* slot_address, const struct FerryPreparedSchema* prepared,
                                 int32_t level) {
  struct ferry_jni_slot* slot = slot_address;
  ferry_device_array_release(&slot->array);
  struct FerryError error;
  int rc = ferry_jni_pull(stream, slot, 0, NULL, &error);
  if (rc != FERRY_OK) {
    ferry_jni_throw_ferry(env, rc, error.message, "ferry_array_stream_get_next");
    return -1;
  }
  if (slot->array.array.release == NULL) return -1;
  if (level != FERRY_JNI_VALIDATE_NONE && prepared != NULL) {
    rc = ferry_validate_prepared(prepared, &slot->array, level, NULL, NULL, &error);
    if (rc != FERRY_OK) {
      /* The slot stays the cursor's (empty): it is freed when the cursor closes. */
      ferry_device_array_release(&slot->array);
      ferry_jni_throw_ferry(env, rc, error.message, "ferry_validate_prepared");
      return -1;
    }
  }
  ferry_jni_fill_slot_info(slot, NULL);
  return slot->array.array.length;
}

int64_t ferry_jni_new_slot(JNIEnv* env) {
  int64_t id;
  struct ferry_jni_slot* slot = ferry_jni_slot_alloc(&id);
  if (slot == NULL) {
    ferry_jni_throw_ferry(env, ENOMEM, "ferry: cannot allocate a slot", NULL);
    return -1;
  }
  return id;
}

void ferry_jni_close_slot(void* slot_address, struct ArrowSchema* schema) {
  struct ferry_jni_slot* slot = slot_address;
  ferry_device_array_release(&slot->array);
  ferry_jni_slot_free(slot);
  if (schema != NULL) ferry_schema_free(schema);
}

jobject ferry_jni_slab_chunk(JNIEnv* env, int32_t chunk) {
  void* base = ferry_jni_slab_chunk_base(chunk);
  if (base == NULL) return NULL;
  return (*env)->NewDirectByteBuffer(
      env, base, (jlong)FERRY_JNI_SLOTS_PER_CHUNK * FERRY_JNI_SLOT_SIZE);
}

int64_t ferry_jni_buffer_size(JNIEnv* env, const struct ArrowSchema* schema,
                              const struct ArrowArray* array, int32_t device_type,
                              int64_t device_id, int64_t i) {
  struct FerryError error;
  error.message[0] = '\0';
  int64_t size = 0;
  int rc = ferry_array_buffer_size(schema, array, device_type, device_id, i, &size, &error);
  if (rc != FERRY_OK) {
    ferry_jni_throw_ferry(env, rc, error.message, "ferry_array_buffer_size");
    return -1;
  }
  return size;
}

void ferry_jni_array_info(JNIEnv* env, const struct ArrowArray* array, jlongArray info) {
  if (array == NULL) {
    ferry_jni_throw_illegal_argument(env, "null ArrowArray address");
    return;
  }
  int64_t values[FERRY_JNI_INFO_SIZE] = {0};
  ferry_jni_fill_info(values, array, 0, 0, NULL, NULL);
  (*env)->SetLongArrayRegion(env, info, 0, FERRY_JNI_INFO_SIZE, (const jlong*)values);
}

/* ---- the release queue -------------------------------------------------- */

/* A bounded multi-producer multi-consumer queue of handles (D. Vyukov's
 * design): each cell's sequence number says whether it is free for the
 * enqueue at position p (seq == p) or holds the value for the dequeue at p
 * (seq == p + 1). One CAS per operation, no allocation, no lock. */
enum { FERRY_JNI_QUEUE_SIZE = 4096 };

struct ferry_jni_queue_cell {
  atomic_size_t sequence;
  uint64_t handle;
};

static struct ferry_jni_queue_cell g_queue[FERRY_JNI_QUEUE_SIZE];
/* Head and tail on their own cache lines: producers and the drainer write
 * different ones. */
static _Alignas(64) atomic_size_t g_queue_tail;
static _Alignas(64) atomic_size_t g_queue_head;
static _Alignas(64) atomic_llong g_queue_fallbacks;

/* The drainer thread waits here while the queue is empty. */
static pthread_mutex_t g_drainer_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_drainer_wake = PTHREAD_COND_INITIALIZER;
static atomic_int g_drainer_waiting;

void ferry_jni_release_queue_init(void) {
  for (size_t i = 0; i < FERRY_JNI_QUEUE_SIZE; i++) {
    atomic_store_explicit(&g_queue[i].sequence, i, memory_order_relaxed);
  }
  atomic_store(&g_queue_tail, 0);
  atomic_store(&g_queue_head, 0);
}

/* Returns 0 when the queue is full. */
static int ferry_jni_queue_push(uint64_t handle) {
  size_t position = atomic_load_explicit(&g_queue_tail, memory_order_relaxed);
  for (;;) {
    struct ferry_jni_queue_cell* cell = &g_queue[position & (FERRY_JNI_QUEUE_SIZE - 1)];
    size_t sequence = atomic_load_explicit(&cell->sequence, memory_order_acquire);
    intptr_t diff = (intptr_t)sequence - (intptr_t)position;
    if (diff == 0) {
      /* seq_cst: ordered before the load of g_drainer_waiting in the hook
       * (a locked instruction on x86 either way, so it costs nothing). */
      if (atomic_compare_exchange_weak_explicit(&g_queue_tail, &position, position + 1,
                                                memory_order_seq_cst, memory_order_relaxed)) {
        cell->handle = handle;
        atomic_store_explicit(&cell->sequence, position + 1, memory_order_release);
        return 1;
      }
    } else if (diff < 0) {
      return 0;
    } else {
      position = atomic_load_explicit(&g_queue_tail, memory_order_relaxed);
    }
  }
}

/* Returns 0 when the queue is empty. */
static int ferry_jni_queue_pop(uint64_t* handle) {
  size_t position = atomic_load_explicit(&g_queue_head, memory_order_relaxed);
  for (;;) {
    struct ferry_jni_queue_cell* cell = &g_queue[position & (FERRY_JNI_QUEUE_SIZE - 1)];
    size_t sequence = atomic_load_explicit(&cell->sequence, memory_order_acquire);
    intptr_t diff = (intptr_t)sequence - (intptr_t)(position + 1);
    if (diff == 0) {
      if (atomic_compare_exchange_weak_explicit(&g_queue_head, &position, position + 1,
                                                memory_order_relaxed, memory_order_relaxed)) {
        *handle = cell->handle;
        atomic_store_explicit(&cell->sequence, position + FERRY_JNI_QUEUE_SIZE,
                              memory_order_release);
        return 1;
      }
    } else if (diff < 0) {
      return 0;
    } else {
      position = atomic_load_explicit(&g_queue_head, memory_order_relaxed);
    }
  }
}

static int ferry_jni_queue_is_empty(void) {
  size_t position = atomic_load_explicit(&g_queue_head, memory_order_acquire);
  struct ferry_jni_queue_cell* cell = &g_queue[position & (FERRY_JNI_QUEUE_SIZE - 1)];
  return atomic_load_explicit(&cell->sequence, memory_order_acquire) != position + 1;
}

/* True when some release claimed a cell the drainer has not popped (the
 * value may still be being written; the drainer then simply comes back). */
static int ferry_jni_queue_has_claims(void) {
  return atomic_load_explicit(&g_queue_tail, memory_order_seq_cst) !=
         atomic_load_explicit(&g_queue_head, memory_order_seq_cst);
}

/* Release hook of queued Java exports: never calls into Java unless the queue
 * is full; one CAS and one plain load on the common path. Wakes the drainer
 * only when it is waiting (at most once per drain round).
 * No lost wake-up: the push's CAS on the tail and the drainer's store of
 * g_drainer_waiting are both seq_cst, and each side then reads the other's
 * variable, so either this thread sees the drainer waiting and signals (under
 * the mutex, so the signal cannot fall between its check and its wait) or the
 * drainer sees the claimed cell and does not sleep. */
void ferry_jni_queued_release_hook(void* user_data) {
  if (!ferry_jni_queue_push((uint64_t)(uintptr_t)user_data)) {
    atomic_fetch_add_explicit(&g_queue_fallbacks, 1, memory_order_relaxed);
    ferry_jni_release_hook(user_data);
    return;
  }
  if (atomic_load_explicit(&g_drainer_waiting, memory_order_seq_cst)) {
    pthread_mutex_lock(&g_drainer_mutex);
    pthread_cond_signal(&g_drainer_wake);
    pthread_mutex_unlock(&g_drainer_mutex);
  }
}

/* Pops up to out.length (at most FERRY_JNI_MAX_DRAIN) handles into `out`;
 * returns how many. */
int32_t ferry_jni_drain_releases(JNIEnv* env, jlongArray out) {
  jlong handles[FERRY_JNI_MAX_DRAIN];
  jsize capacity = (*env)->GetArrayLength(env, out);
  if (capacity > FERRY_JNI_MAX_DRAIN) capacity = FERRY_JNI_MAX_DRAIN;
  jint n = 0;
  uint64_t handle;
  while (n < capacity && ferry_jni_queue_pop(&handle)) handles[n++] = (jlong)handle;
  if (n > 0) (*env)->SetLongArrayRegion(env, out, 0, n, handles);
  return n;
}

/* Pops one handle for the export path: 0 when the queue is empty, else the
 * handle, with bit 63 set when more are queued. Handles are below 2^63 (a
 * 31-bit generation above a 32-bit slot, see HandleTable). */
static jlong ferry_jni_pop_one(void) {
  uint64_t handle;
  if (!ferry_jni_queue_pop(&handle)) return 0;
  if (!ferry_jni_queue_is_empty()) handle |= UINT64_C(1) << 63;
  return (jlong)handle;
}

/* Blocks the calling (drainer) thread until a release claimed a cell. */
void ferry_jni_await_releases(void) {
  pthread_mutex_lock(&g_drainer_mutex);
  atomic_store_explicit(&g_drainer_waiting, 1, memory_order_seq_cst);
  while (!ferry_jni_queue_has_claims()) pthread_cond_wait(&g_drainer_wake, &g_drainer_mutex);
  atomic_store_explicit(&g_drainer_waiting, 0, memory_order_relaxed);
  pthread_mutex_unlock(&g_drainer_mutex);
}

int64_t ferry_jni_queue_stat(int32_t which) {
  switch (which) {
    case FERRY_JNI_STAT_QUEUE_CAPACITY: return FERRY_JNI_QUEUE_SIZE;
    case FERRY_JNI_STAT_QUEUED: return (int64_t)atomic_load(&g_queue_tail);
    case FERRY_JNI_STAT_QUEUE_FALLBACKS: return atomic_load(&g_queue_fallbacks);
    default: return -1;
  }
}

/* ---- export ------------------------------------------------------------- */

/* The common case (n_buffers <= 3) reads no Java array: a0..a2 arrive as
 * arguments, so the export costs no JNI function call. */
int64_t ferry_jni_export_array(JNIEnv* env, struct ArrowDeviceArray* out, int64_t length,
                               int64_t null_count, int64_t offset, int32_t n_buffers,
                               const void* a0, const void* a1, const void* a2,
                               jlongArray addresses, int32_t device_type, int64_t device_id,
                               FerryReleaseHook hook, void* handle) {
  if (out == NULL) {
    ferry_jni_throw_illegal_argument(env, "null ArrowDeviceArray address");
    return 0;
  }
  const void* table[FERRY_JNI_MAX_EXPORT_BUFFERS];
  if (n_buffers < 0 || n_buffers > FERRY_JNI_MAX_EXPORT_BUFFERS) {
    ferry_jni_throw_illegal_argument(env, "buffer count out of range for the one-call export");
    return 0;
  }
  if (n_buffers <= 3) {
    table[0] = a0;
    table[1] = a1;
    table[2] = a2;
  } else {
    jlong values[FERRY_JNI_MAX_EXPORT_BUFFERS];
    if (addresses == NULL || (*env)->GetArrayLength(env, addresses) < n_buffers) {
      ferry_jni_throw_illegal_argument(env, "fewer buffer addresses than n_buffers");
      return 0;
    }
    (*env)->GetLongArrayRegion(env, addresses, 0, n_buffers, values);
    if ((*env)->ExceptionCheck(env)) return 0;
    for (jint i = 0; i < n_buffers; i++) table[i] = (const void*)(intptr_t)values[i];
  }
  struct FerryError error;
  error.message[0] = '\0';
  int rc = ferry_array_init(&out->array, length, null_count, offset, n_buffers, table, 0, hook,
                            handle, &error);
  if (rc != FERRY_OK) {
    ferry_jni_throw_ferry(env, rc, error.message, "ferry_array_init");
    return 0;
  }
  rc = ferry_device_array_init(out, &out->array, (ArrowDeviceType)device_type, device_id, NULL,
                               NULL, NULL, &error);
  if (rc != FERRY_OK) {
    /* The hook must not reach Java's table as a release: Java drops the entry
     * when this throws, and the handle is never reused. */
    ferry_array_release(&out->array);
    ferry_jni_throw_ferry(env, rc, error.message, "ferry_device_array_init");
    return 0;
  }
  return ferry_jni_pop_one();
}
