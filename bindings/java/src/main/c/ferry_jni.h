/* ferry_jni.h: the Java binding's own native functions and layouts, the one
 * place they are declared.
 *
 * generators/java/ferry_java.i reads this header after ferry.h, so SWIG
 * generates the Java side of everything here (gen.sh; ./dev.sh regen):
 * - every enum value below becomes a compile-time constant of
 *   io.github.ferryarrow.ferry.jni.FerryNativeConstants (the slot geometry,
 *   the info block, the DLPack description, the errno codes Java names), so
 *   Java reads the numbers C uses and never retypes one;
 * - every function becomes a static method of FerryNative, wrapped like the
 *   functions of ferry.h (pointers are `long`, jlongArray is long[], jobject
 *   results are ByteBuffers). A `JNIEnv* env` first parameter is supplied by
 *   the wrapper, not by Java: those functions throw into Java themselves
 *   (FerryException with ferry's code and message, IllegalArgumentException
 *   for a 0 address) and return a dummy value then.
 * The C side checks what Java cannot: ferry_jni_slab.h asserts at compile
 * time that struct ferry_jni_slot has exactly this geometry.
 *
 * Why these functions exist at all: a JNI crossing costs ~8 ns, and the
 * object paths of the binding would otherwise make 10-15 of them per array.
 * Each one here is a whole step (import, stream pull, close, export) in one
 * crossing; the rest of the binding calls ferry.h directly.
 */
#ifndef FERRY_JNI_H
#define FERRY_JNI_H

#include <errno.h>
#include <jni.h>
#include <stdint.h>

#include "ferry/dlpack_abi.h"
#include "ferry/ferry.h"

/* ---- slots: where an imported array lives ------------------------------- */

/* Each DeviceArray (and each stream cursor) owns one off-heap slot: the
 * ArrowDeviceArray moved in from the producer, then FERRY_JNI_INFO_* int64
 * values that the same call wrote (length, counts, device, buffer
 * addresses). Slots live in chunks; Java reads a chunk through one direct
 * ByteBuffer (ferry_jni_slab_chunk), so those accessors cost no JNI call.
 * A slot id is chunk * FERRY_JNI_SLOTS_PER_CHUNK + index. */
enum {
  FERRY_JNI_SLOT_SIZE = 256,
  FERRY_JNI_SLOT_INFO_OFFSET = 128,
  FERRY_JNI_SLOTS_PER_CHUNK = 1024,
  FERRY_JNI_SLOT_ID_BITS = 10,
  FERRY_JNI_MAX_CHUNKS = 4096
};

/* The info block: int64 values at FERRY_JNI_SLOT_INFO_OFFSET of a slot, or in
 * a long[FERRY_JNI_INFO_SIZE] for a child or dictionary. */
enum {
  FERRY_JNI_INFO_LENGTH = 0,
  FERRY_JNI_INFO_NULL_COUNT = 1,
  FERRY_JNI_INFO_OFFSET = 2,
  FERRY_JNI_INFO_N_BUFFERS = 3,
  FERRY_JNI_INFO_N_CHILDREN = 4,
  FERRY_JNI_INFO_DEVICE_TYPE = 5,
  FERRY_JNI_INFO_DEVICE_ID = 6,
  FERRY_JNI_INFO_SYNC_EVENT = 7,
  FERRY_JNI_INFO_DICTIONARY = 8,
  /* the heap ArrowSchema that ferry_jni_import_array made (0 otherwise) */
  FERRY_JNI_INFO_SCHEMA = 9,
  /* buffer i's address is at FERRY_JNI_INFO_BUFFER0 + i, i < INLINE_BUFFERS */
  FERRY_JNI_INFO_BUFFER0 = 10,
  FERRY_JNI_INFO_INLINE_BUFFERS = 5,
  FERRY_JNI_INFO_SIZE = FERRY_JNI_INFO_BUFFER0 + FERRY_JNI_INFO_INLINE_BUFFERS,
  /* a slot's own id (slots only; after the info block) */
  FERRY_JNI_INFO_SLOT_ID = FERRY_JNI_INFO_SIZE
};

/* Most buffers ferry_jni_export_array takes. */
enum { FERRY_JNI_MAX_EXPORT_BUFFERS = 16, FERRY_JNI_MAX_DRAIN = 64 };

/* Validation levels of the import functions: FERRY_JNI_VALIDATE_NONE skips
 * the validator; the others are FERRY_VALIDATE_DEFAULT and _FULL. */
enum { FERRY_JNI_VALIDATE_NONE = -1 };

/* ---- errno codes Java names ---------------------------------------------- */

/* Literal values, so that Java gets compile-time constants (usable in a
 * switch, and needing no native call while the library is still loading);
 * the C compiler checks each against this platform's <errno.h> below. */
enum {
  FERRY_JNI_EINVAL = 22,
  FERRY_JNI_EIO = 5,
  FERRY_JNI_ENOMEM = 12,
  FERRY_JNI_ENODEV = 19,
  FERRY_JNI_ENOTSUP = 95,
  FERRY_JNI_EFAULT = 14,
  FERRY_JNI_ERANGE = 34
};
#ifndef SWIG
_Static_assert(FERRY_JNI_EINVAL == EINVAL && FERRY_JNI_EIO == EIO && FERRY_JNI_ENOMEM == ENOMEM &&
                   FERRY_JNI_ENODEV == ENODEV && FERRY_JNI_ENOTSUP == ENOTSUP &&
                   FERRY_JNI_EFAULT == EFAULT && FERRY_JNI_ERANGE == ERANGE,
               "ferry_jni.h's errno values are this platform's");
#endif

/* ---- import ------------------------------------------------------------- */

/** Moves the producer's schema (into a new heap struct) and device array
 *  (into a new slot), leaving both sources released, then validates at
 *  `level` (FERRY_JNI_VALIDATE_NONE skips it). Returns the slot id; its info
 *  holds the heap schema. Throws IllegalArgumentException for 0 addresses
 *  and FerryException(EINVAL) for released sources (nothing moved then); a
 *  validation finding releases what was moved and throws FerryException with
 *  the validator's message (the import consumed the producer's structs). */
int64_t ferry_jni_import_array(JNIEnv* env, struct ArrowSchema* schema_source,
                               struct ArrowDeviceArray* array_source, int32_t level);

/** Moves a live device array (the source is left released) into a new slot
 *  and fills its info; returns the slot id. Throws, moving nothing, when the
 *  source is released or no slot can be had. */
int64_t ferry_jni_adopt(JNIEnv* env, struct ArrowDeviceArray* device_array);

/** Pulls the next batch of `stream` into a new slot and fills its info.
 *  With `on_stream` set, ferry_array_stream_get_next_on(consumer_stream)
 *  hands the batch to that native stream (0: the host waits on its event);
 *  else plain get_next. With `prepared` not 0 the batch is validated at
 *  `level` (a finding releases it and throws the validator's message).
 *  Returns the slot id, or -1 at the end of the stream; throws
 *  FerryException with the producer's code and message on failure. */
int64_t ferry_jni_stream_next(JNIEnv* env, struct ArrowDeviceArrayStream* stream,
                              int32_t on_stream, void* consumer_stream,
                              const struct FerryPreparedSchema* prepared, int32_t level);

/** The cursor's step: releases the batch in the slot at `slot` (if live),
 *  pulls the next one into it, validates it as ferry_jni_stream_next does
 *  and fills its info. Returns the batch's length, or -1 at the end (the
 *  slot then holds nothing). */
int64_t ferry_jni_cursor_advance(JNIEnv* env, struct ArrowDeviceArrayStream* stream,
                                 void* slot, const struct FerryPreparedSchema* prepared,
                                 int32_t level);

/** A new empty slot (for a cursor); its id. Throws when out of memory. */
int64_t ferry_jni_new_slot(JNIEnv* env);

/** Releases the array in the slot at `slot` and frees the slot; frees
 *  `schema` too when not 0 (the last holder of an imported schema). */
void ferry_jni_close_slot(void* slot, struct ArrowSchema* schema);

/** A direct ByteBuffer over slab chunk `chunk`, or null when it does not
 *  exist yet. */
jobject ferry_jni_slab_chunk(JNIEnv* env, int32_t chunk);

/** The size in bytes of buffer `i` of `array` (described by `schema`, on
 *  (device_type, device_id)), as ferry_array_buffer_size computes it; throws
 *  FerryException(EINVAL) naming what is wrong when it cannot. */
int64_t ferry_jni_buffer_size(JNIEnv* env, const struct ArrowSchema* schema,
                              const struct ArrowArray* array, int32_t device_type,
                              int64_t device_id, int64_t i);

/** Fills `info` (a long[] of at least FERRY_JNI_INFO_SIZE) for a child or
 *  dictionary ArrowArray (device values 0). */
void ferry_jni_array_info(JNIEnv* env, const struct ArrowArray* array, jlongArray info);

/** Validates `array` against `schema` at `level` and returns every finding,
 *  each as "rule\037where\037what" and separated by "\036" ("" when clean).
 *  Borrows everything. */
jstring ferry_jni_validate_report(JNIEnv* env, const struct ArrowSchema* schema,
                                  const struct ArrowDeviceArray* array, int32_t level);

/** ferry_jni_validate_report for a schema alone. */
jstring ferry_jni_validate_schema_report(JNIEnv* env, const struct ArrowSchema* schema);

/* ---- export and the release queue --------------------------------------- */

/** Fills the released ArrowDeviceArray `out` with a flat array (no children,
 *  no dictionary) of `n_buffers` buffers on (device_type, device_id) without
 *  an event; its release hook is `hook(handle)`. The buffer addresses are
 *  a0..a2 when n_buffers <= 3, else `addresses`. On failure (FerryException)
 *  `out` stays released. Then pops one released handle off the release queue
 *  for Java to drop, in the same crossing: 0 when none, else the handle with
 *  bit 63 set when more are queued. */
int64_t ferry_jni_export_array(JNIEnv* env, struct ArrowDeviceArray* out, int64_t length,
                               int64_t null_count, int64_t offset, int32_t n_buffers,
                               const void* a0, const void* a1, const void* a2,
                               jlongArray addresses, int32_t device_type, int64_t device_id,
                               FerryReleaseHook hook, void* handle);

/** Pops up to min(FERRY_JNI_MAX_DRAIN, out.length) released handles into
 *  `out`; returns how many. */
int32_t ferry_jni_drain_releases(JNIEnv* env, jlongArray out);

/** Blocks until the release queue holds a handle (the drainer thread). */
void ferry_jni_await_releases(void);

/* ---- callbacks and counters --------------------------------------------- */

/* The C functions ferry calls back into Java through. */
enum {
  /* FerryReleaseHook: calls Upcalls.release(handle) on the releasing thread */
  FERRY_JNI_CALLBACK_RELEASE = 0,
  /* FerryReleaseHook: queues the handle for Java to drain (no upcall) */
  FERRY_JNI_CALLBACK_QUEUED_RELEASE = 1,
  /* FerryStreamGetSchemaFn / FerryStreamGetNextFn: Upcalls.getSchema/getNext */
  FERRY_JNI_CALLBACK_GET_SCHEMA = 2,
  FERRY_JNI_CALLBACK_GET_NEXT = 3
};

/** The address of callback `which` (0 for an unknown value). */
void* ferry_jni_callback(int32_t which);

/* Process-wide counters of the JNI layer. */
enum {
  FERRY_JNI_STAT_QUEUE_CAPACITY = 0,
  /* handles queued so far */
  FERRY_JNI_STAT_QUEUED = 1,
  /* releases that fell back to the upcall because the queue was full */
  FERRY_JNI_STAT_QUEUE_FALLBACKS = 2,
  /* threads attached by callbacks, and detached at their exit */
  FERRY_JNI_STAT_ATTACHED_THREADS = 3,
  FERRY_JNI_STAT_DETACHED_THREADS = 4
};

/** The value of counter `which` (-1 for an unknown value). */
int64_t ferry_jni_stat(int32_t which);

/* ---- memory ------------------------------------------------------------- */

/** The address of a direct ByteBuffer; 0 for a heap buffer. */
void* ferry_jni_direct_address(JNIEnv* env, jobject buffer);

/** A direct ByteBuffer over `size` bytes at `address`, no copy; the caller
 *  keeps the memory alive while the buffer is used. */
jobject ferry_jni_new_direct_buffer(JNIEnv* env, void* address, int64_t size);

/** Copies `length` bytes at `address` into a new byte[]. */
jbyteArray ferry_jni_copy_bytes(JNIEnv* env, const void* address, int32_t length);

/** Sets `size` bytes at `address` to zero (host memory). */
void ferry_jni_zero(void* address, int64_t size);

/* ---- DLPack ------------------------------------------------------------- */

/* The long[] that ferry_jni_dlpack_describe fills. */
enum {
  FERRY_JNI_DLPACK_VERSION_MAJOR = 0,
  FERRY_JNI_DLPACK_VERSION_MINOR = 1,
  FERRY_JNI_DLPACK_FLAGS = 2,
  FERRY_JNI_DLPACK_DATA = 3,
  FERRY_JNI_DLPACK_BYTE_OFFSET = 4,
  FERRY_JNI_DLPACK_DEVICE_TYPE = 5,
  FERRY_JNI_DLPACK_DEVICE_ID = 6,
  FERRY_JNI_DLPACK_NDIM = 7,
  FERRY_JNI_DLPACK_CODE = 8,
  FERRY_JNI_DLPACK_BITS = 9,
  FERRY_JNI_DLPACK_LANES = 10,
  FERRY_JNI_DLPACK_SHAPE0 = 11,
  /* 0 when strides is NULL (compact) */
  FERRY_JNI_DLPACK_STRIDE0 = 12,
  FERRY_JNI_DLPACK_SIZE = 13
};

/* DLPack's dtype codes and flags that Java names, checked against
 * dlpack_abi.h below. */
enum {
  FERRY_JNI_DLPACK_CODE_INT = 0,
  FERRY_JNI_DLPACK_CODE_UINT = 1,
  FERRY_JNI_DLPACK_CODE_FLOAT = 2,
  FERRY_JNI_DLPACK_FLAG_READ_ONLY = 1,
  FERRY_JNI_DLPACK_FLAG_IS_COPIED = 2,
  FERRY_JNI_DLPACK_MAJOR_VERSION = 1
};
#ifndef SWIG
_Static_assert((int)FERRY_JNI_DLPACK_CODE_INT == (int)kDLInt &&
                   (int)FERRY_JNI_DLPACK_CODE_UINT == (int)kDLUInt &&
                   (int)FERRY_JNI_DLPACK_CODE_FLOAT == (int)kDLFloat &&
                   FERRY_JNI_DLPACK_FLAG_READ_ONLY == DLPACK_FLAG_BITMASK_READ_ONLY &&
                   FERRY_JNI_DLPACK_FLAG_IS_COPIED == DLPACK_FLAG_BITMASK_IS_COPIED &&
                   FERRY_JNI_DLPACK_MAJOR_VERSION == DLPACK_MAJOR_VERSION,
               "ferry_jni.h's DLPack values are dlpack_abi.h's");
#endif

/** Fills `out` (length >= FERRY_JNI_DLPACK_SIZE) from the tensor (borrowed).
 *  Only the version is read when the major version is not 1 (DLPack's rule);
 *  the other values are 0 then. IllegalArgumentException for 0. */
void ferry_jni_dlpack_describe(JNIEnv* env, const struct DLManagedTensorVersioned* tensor,
                               jlongArray out);

/** Calls the tensor's deleter (takes ownership); nothing for NULL or a NULL
 *  deleter. */
void ferry_jni_dlpack_delete(struct DLManagedTensorVersioned* tensor);

/* ---- Arrow C streams (Arrow Java's Data.exportArrayStream/importArrayStream) */

/** Moves a plain ArrowArrayStream (CPU batches) into `out` (released
 *  beforehand) as an ArrowDeviceArrayStream of the CPU: each batch becomes a
 *  CPU device array without an event; a failure carries the Arrow stream's
 *  own message (ferry_array_stream_from_cpu_stream). `source` is left
 *  released on success and untouched on failure. */
int ferry_jni_stream_from_arrow(struct ArrowArrayStream* source,
                                struct ArrowDeviceArrayStream* out, struct FerryError* error);

/** Moves a device array stream into `out` (released beforehand) as a plain
 *  ArrowArrayStream for Arrow Java: each batch is validated (FULL, Arrow Java
 *  trusts offsets and UTF-8; a finding fails get_next with EINVAL and the
 *  validator's message), its event waited on, and, when the host cannot read
 *  its device, brought to the CPU (ferry_device_array_move_to_device). A
 *  stream of non-struct arrays becomes record batches of one column (Arrow
 *  streams carry record batches). The core's ferry_array_stream_to_cpu_stream
 *  with both flags. `source` is left released on success and untouched on
 *  failure. */
int ferry_jni_stream_to_arrow(struct ArrowDeviceArrayStream* source,
                              struct ArrowArrayStream* out, struct FerryError* error);

#endif  // FERRY_JNI_H
