/* The fuzz targets' view of their input: a stream of bytes taken one at a
 * time, 0 once it is used up (so short inputs make small, mostly valid
 * structures); and the shapes both targets share. */
#ifndef FERRY_FUZZ_INPUT_H
#define FERRY_FUZZ_INPUT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct input {
  const uint8_t* data;
  size_t size;
};

static inline uint8_t take(struct input* in) {
  if (in->size == 0) return 0;
  uint8_t byte = in->data[0];
  in->data++;
  in->size--;
  return byte;
}

/* Schema metadata blobs (issue 20), chosen by `kind` % 8: 0 none; 1 a
 * well-formed blob of two pairs; then blobs of 64 bytes (allocated with
 * `alloc` at exactly that size, so a sanitizer sees any read past them)
 * whose header lies: 2 declares 1,000,000 pairs, 3 INT32_MAX pairs, 4 a key
 * of 2^24 bytes, 5 a value of INT32_MAX bytes, 6 a negative count; 7 is a
 * well-formed blob whose second key is not UTF-8. Every lie is beyond
 * FULL validation's limits: a plausible lie (10 pairs in 64 bytes) is
 * unknowable, like a CPU buffer shorter than its length (docs/validation.md),
 * so the grammar does not make one. */
static inline const char* fuzz_metadata(uint8_t kind, void* (*alloc)(int64_t size)) {
  kind %= 8;
  if (kind == 0) return NULL;
  char* blob = (char*)alloc(64);
  if (blob == NULL) return NULL;
  memset(blob, 0, 64);
  int32_t words[3] = {0, 0, 0};
  switch (kind) {
    case 1:
    case 7: {
      /* {"k": "v", "k2" or "\x80k": ""}: 4 + (4+1+4+1) + (4+2+4+0) = 24 bytes */
      const char* second = kind == 1 ? "k2" : "\x80k";
      int32_t two = 2, one = 1, len2 = 2, zero = 0;
      char* p = blob;
      memcpy(p, &two, 4), p += 4;
      memcpy(p, &one, 4), p += 4;
      *p++ = 'k';
      memcpy(p, &one, 4), p += 4;
      *p++ = 'v';
      memcpy(p, &len2, 4), p += 4;
      memcpy(p, second, 2), p += 2;
      memcpy(p, &zero, 4);
      return blob;
    }
    case 2: words[0] = 1000000; break;
    case 3: words[0] = INT32_MAX; break;
    case 4: words[0] = 1, words[1] = INT32_C(1) << 24; break;
    case 5: words[0] = 1, words[1] = 0, words[2] = INT32_MAX; break;
    default: words[0] = -5; break;
  }
  memcpy(blob, words, sizeof words);
  return blob;
}

/* Fills `p` (`capacity` bytes) with up to `n` offsets of `width` (4 or 8)
 * bytes: a running sum of small signed steps taken from the input, so they
 * may decrease or go negative but stay small. Returns the largest value (0
 * at least), the size of the data they index. */
static inline int64_t fuzz_fill_offsets(struct input* in, uint8_t* p, int64_t n,
                                        int32_t width, int64_t capacity) {
  int64_t value = (int8_t)take(in) % 4;
  int64_t max = 0;
  for (int64_t i = 0; i < n && (i + 1) * width <= capacity; i++) {
    if (i > 0) {
      uint8_t step = take(in);
      value += (step & 0x80) ? -(int64_t)(step & 0x3) : (int64_t)(step & 0x1f);
    }
    if (value > max) max = value;
    if (width == 4) {
      int32_t v = (int32_t)value;
      memcpy(p + i * 4, &v, 4);
    } else {
      memcpy(p + i * 8, &value, 8);
    }
  }
  return max;
}

#endif  // FERRY_FUZZ_INPUT_H
