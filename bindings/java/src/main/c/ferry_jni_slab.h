/* ferry_jni_slab.h: off-heap state of Java-owned arrays (ferry_jni_slab.c).
 *
 * The layout (ferry_jni.h, FERRY_JNI_SLOT_* and FERRY_JNI_INFO_*) lets Java
 * read an accessor with a ByteBuffer.getLong instead of a JNI call, and an
 * import needs no SetLongArrayRegion (~15 ns) nor a malloc.
 */
#ifndef FERRY_JNI_SLAB_H
#define FERRY_JNI_SLAB_H

#include <stddef.h>
#include <stdint.h>

#include "ferry/ferry.h"
#include "ferry_jni.h"

/* One slot. While free, `array`'s first bytes hold the free-list link. */
struct ferry_jni_slot {
  struct ArrowDeviceArray array;
  int64_t info[FERRY_JNI_SLOT_SIZE / 8 - sizeof(struct ArrowDeviceArray) / 8];
};

/* The geometry Java reads from ferry_jni.h (through the generated
 * constants) is the geometry of this struct. */
_Static_assert(sizeof(struct ferry_jni_slot) == FERRY_JNI_SLOT_SIZE, "slot size");
_Static_assert(offsetof(struct ferry_jni_slot, info) == FERRY_JNI_SLOT_INFO_OFFSET,
               "info offset");
_Static_assert(FERRY_JNI_INFO_SLOT_ID < FERRY_JNI_SLOT_SIZE / 8 - sizeof(struct ArrowDeviceArray) / 8,
               "the slot id fits after the info block");
_Static_assert(FERRY_JNI_SLOTS_PER_CHUNK == 1 << FERRY_JNI_SLOT_ID_BITS, "slot id bits");

/** Returns a slot whose `array` is released (release == NULL) and whose
 *  id (chunk * FERRY_JNI_SLOTS_PER_CHUNK + index) is stored in *id, or NULL
 *  when out of memory. Any thread; no lock on the common path. */
struct ferry_jni_slot* ferry_jni_slot_alloc(int64_t* id);

/** Returns a slot (its array already released) to the calling thread's
 *  cache. Any thread. */
void ferry_jni_slot_free(struct ferry_jni_slot* slot);

/** Base address of chunk `chunk`, or NULL if it does not exist. */
void* ferry_jni_slab_chunk_base(int32_t chunk);

#endif  // FERRY_JNI_SLAB_H
