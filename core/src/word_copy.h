/* Copies and zeroing of ABI structs by 8-byte words, for the export and
 * handoff hot paths (producer.c, stream.c, lifecycle.c): what memcpy and
 * memset compile to there costs more than the struct. Private to the core. */
#ifndef FERRY_SRC_WORD_COPY_H
#define FERRY_SRC_WORD_COPY_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ferry/ferry.h"

/* Copies `n_words` 8-byte words from `src` to `dst` with 8-byte loads and
 * stores, never the 16-byte vector moves memcpy becomes. Why: an ABI struct
 * is usually copied right after it was filled field by field (8-byte
 * stores), and a 16-byte load spanning two pending 8-byte stores cannot be
 * forwarded from the store buffer; the CPU then waits for the stores to
 * reach the cache (a store-forwarding stall, several ns per struct). 8-byte
 * loads of 8-byte stores forward at full speed. The empty asm keeps the
 * compiler from merging the words back into vector moves. */
static inline void ferry__copy_words(void* dst, const void* src, size_t n_words) {
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC unroll 16
#endif
  for (size_t i = 0; i < n_words; i++) {
    uint64_t word;
    memcpy(&word, (const char*)src + i * sizeof(word), sizeof(word));
#if defined(__GNUC__)
    __asm__("" : "+r"(word));
#endif
    memcpy((char*)dst + i * sizeof(word), &word, sizeof(word));
  }
}

/* Zeroes `n_words` 8-byte words at `dst` with plain 8-byte stores. Why not
 * memset: for 128 bytes gcc -O2 emits `rep stos`, whose start-up costs more
 * than the stores, and it recognises a plain zeroing loop as memset; the
 * empty asm hides that the value is zero. */
static inline void ferry__zero_words(void* dst, size_t n_words) {
  uint64_t zero = 0;
#if defined(__GNUC__)
  __asm__("" : "+r"(zero));
#endif
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC unroll 16
#endif
  for (size_t i = 0; i < n_words; i++) {
    memcpy((char*)dst + i * sizeof(zero), &zero, sizeof(zero));
  }
}

/* Copies a whole ArrowDeviceArray the way ferry__copy_words does, except
 * that device_type and the padding after it are copied as two 4-byte words:
 * producers commonly write device_type with a 4-byte store and never touch
 * the padding, and a 4-byte load of that store forwards where an 8-byte one
 * would stall. (ferry's own producer writes the pair as one 8-byte store,
 * from which both 4-byte loads forward too.) */
static inline void ferry__copy_device_array(struct ArrowDeviceArray* dst,
                                           const struct ArrowDeviceArray* src) {
  enum {
    kHead = offsetof(struct ArrowDeviceArray, device_type),
    kTail = offsetof(struct ArrowDeviceArray, sync_event)
  };
  _Static_assert(
      kHead % 8 == 0 && kTail - kHead == 8 && sizeof(struct ArrowDeviceArray) % 8 == 0,
      "ArrowDeviceArray layout as the ABI defines it");
  ferry__copy_words(dst, src, kHead / 8);
  uint32_t halves[2];
  memcpy(halves, (const char*)src + kHead, sizeof(halves[0]));
  memcpy(&halves[1], (const char*)src + kHead + 4, sizeof(halves[1]));
#if defined(__GNUC__)
  __asm__("" : "+r"(halves[0]), "+r"(halves[1])); /* keep them two loads */
#endif
  memcpy((char*)dst + kHead, &halves[0], sizeof(halves[0]));
  memcpy((char*)dst + kHead + 4, &halves[1], sizeof(halves[1]));
  ferry__copy_words((char*)dst + kTail, (const char*)src + kTail,
                   (sizeof(struct ArrowDeviceArray) - kTail) / 8);
}

#endif  // FERRY_SRC_WORD_COPY_H
