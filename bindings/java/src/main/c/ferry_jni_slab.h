/* ferry_jni_slab.h: off-heap state of Java-owned arrays (ferry_jni_slab.c).
 *
 * Each DeviceArray (and each stream cursor) owns one 256-byte slot: the
 * ArrowDeviceArray moved in from the producer, followed by the values Java's
 * accessors read (length, counts, buffer addresses, device, ...). Slots live
 * in chunks that Java sees through one direct ByteBuffer per chunk, obtained
 * once, so reading an accessor is a ByteBuffer.getLong, not a JNI call, and
 * an import needs no SetLongArrayRegion (~15 ns) nor a malloc.
 */
#ifndef FERRY_JNI_SLAB_H
#define FERRY_JNI_SLAB_H

#include <stdint.h>

#include "ferry/ferry.h"

/* Slot geometry (mirrored by org.ferry.jni.Handoff). */
enum {
  FERRY_JNI_SLOT_SIZE = 256,
  FERRY_JNI_SLOT_INFO_OFFSET = 128,
  FERRY_JNI_SLOTS_PER_CHUNK = 1024,
  FERRY_JNI_MAX_CHUNKS = 4096,
  /* info[] index of the slot's own id (the other indices: ferry_jni_handoff.c) */
  FERRY_JNI_SLOT_ID = 15
};

/* One slot. While free, `array`'s first bytes hold the free-list link. */
struct ferry_jni_slot {
  struct ArrowDeviceArray array;
  int64_t info[16];
};

/** Returns a slot whose `array` is released (release == NULL) and whose
 *  id (chunk * FERRY_JNI_SLOTS_PER_CHUNK + index) is stored in *id, or NULL
 *  when out of memory. Any thread; no lock on the common path. */
struct ferry_jni_slot* ferry_jni_slot_alloc(int64_t* id);

/** Returns a slot (its array already released) to the calling thread's
 *  cache. Any thread. */
void ferry_jni_slot_free(struct ferry_jni_slot* slot);

/** Base address of chunk `chunk`, or NULL if it does not exist. */
void* ferry_jni_slab_chunk(int32_t chunk);

#endif  // FERRY_JNI_SLAB_H
