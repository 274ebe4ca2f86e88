/* Scans of buffer contents for FULL validation (see scan.h).
 *
 * The loops work over blocks of a fixed number of elements, accumulating
 * "something is wrong" with OR instead of branching per element: compilers
 * vectorise such loops (GCC does at -O2 because the trip count is a
 * constant), and the rare block that has a problem is looked at again one
 * element at a time to say where. Unaligned loads go through memcpy. */
#include "scan.h"

#include <string.h>

#define SCAN_BLOCK 64

/* ---- popcount ------------------------------------------------------------- */

static inline uint64_t load64(const uint8_t* p) {
  uint64_t x;
  memcpy(&x, p, sizeof x);
  return x;
}

/* Set bits of n_words 64-bit words; four sums, so the popcounts overlap. */
static inline __attribute__((always_inline)) int64_t popcount_words_body(
    const uint8_t* p, int64_t n_words) {
  int64_t a = 0, b = 0, c = 0, d = 0;
  int64_t i = 0;
  for (; i + 4 <= n_words; i += 4) {
    a += __builtin_popcountll(load64(p + 8 * i));
    b += __builtin_popcountll(load64(p + 8 * i + 8));
    c += __builtin_popcountll(load64(p + 8 * i + 16));
    d += __builtin_popcountll(load64(p + 8 * i + 24));
  }
  for (; i < n_words; i++) a += __builtin_popcountll(load64(p + 8 * i));
  return a + b + c + d;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/* x86-64's baseline has no popcount instruction (without it a popcount is a
 * dozen instructions). With AVX2, 32 bytes at a time: each nibble's count
 * from a 16-entry table (vpshufb), summed per byte for up to 31 vectors
 * (at most 8 per byte each), then per 8 bytes (vpsadbw). */
__attribute__((target("avx2"))) static int64_t popcount_words_avx2(const uint8_t* p,
                                                                   int64_t n_words) {
  const __m256i table = _mm256_setr_epi8(0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4,
                                         0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4);
  const __m256i low_nibbles = _mm256_set1_epi8(0x0F);
  __m256i total = _mm256_setzero_si256();
  int64_t n_vectors = n_words / 4;
  int64_t i = 0;
  while (i < n_vectors) {
    int64_t stop = i + 31 < n_vectors ? i + 31 : n_vectors;
    __m256i bytes = _mm256_setzero_si256();
    for (; i < stop; i++) {
      __m256i v = _mm256_loadu_si256((const __m256i*)(const void*)(p + 32 * i));
      __m256i low = _mm256_and_si256(v, low_nibbles);
      __m256i high = _mm256_and_si256(_mm256_srli_epi16(v, 4), low_nibbles);
      bytes = _mm256_add_epi8(bytes, _mm256_shuffle_epi8(table, low));
      bytes = _mm256_add_epi8(bytes, _mm256_shuffle_epi8(table, high));
    }
    total = _mm256_add_epi64(total, _mm256_sad_epu8(bytes, _mm256_setzero_si256()));
  }
  int64_t count = _mm256_extract_epi64(total, 0) + _mm256_extract_epi64(total, 1) +
                  _mm256_extract_epi64(total, 2) + _mm256_extract_epi64(total, 3);
  for (int64_t w = n_vectors * 4; w < n_words; w++) {
    count += __builtin_popcountll(load64(p + 8 * w));
  }
  return count;
}

__attribute__((target("popcnt"))) static int64_t popcount_words_hw(const uint8_t* p,
                                                                   int64_t n_words) {
  return popcount_words_body(p, n_words);
}

static int64_t popcount_words_portable(const uint8_t* p, int64_t n_words) {
  return popcount_words_body(p, n_words);
}

int ferry__popcount_kernel(void) {
  static int kind = -1; /* accessed atomically; any thread may set it */
  int k = __atomic_load_n(&kind, __ATOMIC_RELAXED);
  if (k < 0) {
    __builtin_cpu_init();
    k = __builtin_cpu_supports("avx2") ? FERRY_POPCOUNT_AVX2
        : __builtin_cpu_supports("popcnt") ? FERRY_POPCOUNT_INSTRUCTION
                                           : FERRY_POPCOUNT_PORTABLE;
    __atomic_store_n(&kind, k, __ATOMIC_RELAXED);
  }
  return k;
}

static int64_t popcount_words(int kernel, const uint8_t* p, int64_t n_words) {
  switch (kernel) {
    case FERRY_POPCOUNT_AVX2:
      return n_words >= 16 ? popcount_words_avx2(p, n_words) : popcount_words_hw(p, n_words);
    case FERRY_POPCOUNT_INSTRUCTION: return popcount_words_hw(p, n_words);
    default: return popcount_words_portable(p, n_words);
  }
}
#else
int ferry__popcount_kernel(void) { return FERRY_POPCOUNT_PORTABLE; }

static int64_t popcount_words(int kernel, const uint8_t* p, int64_t n_words) {
  return popcount_words_body(p, n_words);
}
#endif

int64_t ferry__count_set_bits_with(int kernel, const uint8_t* bits, int64_t offset,
                                   int64_t length) {
  if (length <= 0) return 0;
  int64_t end = offset + length; /* exclusive */
  int64_t first_byte = offset / 8;
  int64_t last_byte = (end - 1) / 8; /* inclusive */
  unsigned head_mask = 0xFFu << (offset % 8);
  unsigned tail_mask = 0xFFu >> (7 - (end - 1) % 8);
  if (first_byte == last_byte) {
    return __builtin_popcount(bits[first_byte] & head_mask & tail_mask & 0xFFu);
  }
  int64_t count = __builtin_popcount(bits[first_byte] & head_mask & 0xFFu) +
                  __builtin_popcount(bits[last_byte] & tail_mask);
  const uint8_t* middle = bits + first_byte + 1;
  int64_t n_middle = last_byte - first_byte - 1;
  count += popcount_words(kernel, middle, n_middle / 8);
  for (int64_t i = n_middle / 8 * 8; i < n_middle; i++) count += __builtin_popcount(middle[i]);
  return count;
}

int64_t ferry__count_set_bits(const uint8_t* bits, int64_t offset, int64_t length) {
  return ferry__count_set_bits_with(ferry__popcount_kernel(), bits, offset, length);
}

/* ---- offsets ---------------------------------------------------------------- */

#define DEFINE_FIRST_DECREASE(name, type)                                          \
  static int64_t name(const uint8_t* p, int64_t first, int64_t last) {             \
    type previous, current;                                                        \
    int64_t i = first + 1;                                                         \
    for (; i + SCAN_BLOCK - 1 <= last; i += SCAN_BLOCK) {                          \
      int bad = 0;                                                                 \
      for (int k = 0; k < SCAN_BLOCK; k++) {                                       \
        memcpy(&previous, p + (i + k - 1) * (int64_t)sizeof(type), sizeof(type));  \
        memcpy(&current, p + (i + k) * (int64_t)sizeof(type), sizeof(type));       \
        bad |= current < previous;                                                 \
      }                                                                            \
      if (bad) break; /* the loop below finds which */                             \
    }                                                                              \
    for (; i <= last; i++) {                                                       \
      memcpy(&previous, p + (i - 1) * (int64_t)sizeof(type), sizeof(type));        \
      memcpy(&current, p + i * (int64_t)sizeof(type), sizeof(type));               \
      if (current < previous) return i;                                            \
    }                                                                              \
    return -1;                                                                     \
  }

DEFINE_FIRST_DECREASE(first_decrease32, int32_t)
DEFINE_FIRST_DECREASE(first_decrease64, int64_t)

static int64_t offset_at(const uint8_t* offsets, int32_t width, int64_t i) {
  if (width == 8) {
    int64_t value;
    memcpy(&value, offsets + 8 * i, 8);
    return value;
  }
  int32_t value;
  memcpy(&value, offsets + 4 * i, 4);
  return value;
}

int64_t ferry__first_bad_offset(const uint8_t* offsets, int32_t width, int64_t first,
                                int64_t last) {
  if (offset_at(offsets, width, first) < 0) return first;
  return width == 8 ? first_decrease64(offsets, first, last)
                    : first_decrease32(offsets, first, last);
}

/* ---- UTF-8 ---------------------------------------------------------------------- */

#define HIGH_BITS UINT64_C(0x8080808080808080)

/* Length of the ASCII prefix of [s, s + n), to a multiple of 8 at least:
 * blocks of 64 bytes, then words. */
static int64_t ascii_prefix(const uint8_t* s, int64_t n) {
  int64_t i = 0;
  for (; i + SCAN_BLOCK <= n; i += SCAN_BLOCK) {
    uint64_t any = 0;
    for (int k = 0; k < SCAN_BLOCK; k += 8) any |= load64(s + i + k);
    if (any & HIGH_BITS) break;
  }
  for (; i + 8 <= n; i += 8) {
    if (load64(s + i) & HIGH_BITS) break;
  }
  while (i < n && s[i] < 0x80) i++;
  return i;
}

static int64_t utf8_valid_prefix_scalar(const uint8_t* s, int64_t n) {
  int64_t i = 0;
  while (i < n) {
    uint8_t c = s[i];
    if (c < 0x80) {
      i += ascii_prefix(s + i, n - i);
      continue;
    }
    int64_t need;
    uint32_t cp;
    if (c >= 0xC2 && c <= 0xDF) {
      need = 1;
      cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
      need = 2;
      cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      need = 3;
      cp = c & 0x07;
    } else {
      return i;
    }
    if (need > n - 1 - i) return i; /* truncated sequence */
    for (int64_t k = 1; k <= need; k++) {
      if ((s[i + k] & 0xC0) != 0x80) return i;
      cp = (cp << 6) | (s[i + k] & 0x3F);
    }
    if ((need == 2 && cp < 0x800) || (need == 3 && cp < 0x10000) || cp > 0x10FFFF ||
        (cp >= 0xD800 && cp <= 0xDFFF)) {
      return i;
    }
    i += need + 1;
  }
  return n;
}

int ferry__utf8_kernel(void) {
#if defined(__x86_64__) && defined(__GNUC__)
  static int kind = -1; /* accessed atomically; any thread may set it */
  int k = __atomic_load_n(&kind, __ATOMIC_RELAXED);
  if (k < 0) {
    __builtin_cpu_init();
    k = __builtin_cpu_supports("avx2") ? FERRY_UTF8_AVX2 : FERRY_UTF8_SCALAR;
    __atomic_store_n(&kind, k, __ATOMIC_RELAXED);
  }
  return k;
#else
  return FERRY_UTF8_SCALAR;
#endif
}

int64_t ferry__utf8_valid_prefix_with(int kernel, const uint8_t* s, int64_t n) {
  /* Below 64 bytes the scalar loop (with its ASCII words) is as fast. */
  if (kernel != FERRY_UTF8_AVX2 || n < 64) return utf8_valid_prefix_scalar(s, n);
  int64_t valid = ferry__utf8_valid_prefix_avx2(s, n);
  if (valid == n) return n;
  return valid + utf8_valid_prefix_scalar(s + valid, n - valid);
}

int64_t ferry__utf8_valid_prefix(const uint8_t* s, int64_t n) {
  return ferry__utf8_valid_prefix_with(ferry__utf8_kernel(), s, n);
}

int ferry__utf8_values_valid(const uint8_t* data, int64_t start, int64_t end,
                             const uint8_t* offsets, int32_t width, int64_t n_offsets) {
  if (end <= start) return 1; /* no bytes: every value is empty */
  const uint8_t* s = data + start;
  int64_t n = end - start;
  if (ascii_prefix(s, n) == n) return 1; /* ASCII: every split is valid */
  if (ferry__utf8_valid_prefix(s, n) != n) return 0;
  /* No offset may fall inside a character (on a continuation byte). One
   * accumulated test, no branch per value: offsets equal to `end` read the
   * last byte's lead-or-ASCII stand-in instead of the byte past the end. */
  uint8_t inside = 0;
  for (int64_t i = 0; i < n_offsets; i++) {
    int64_t at = offset_at(offsets, width, i);
    uint8_t byte = at < end ? data[at] : 0;
    inside |= (uint8_t)((byte & 0xC0) == 0x80);
  }
  return !inside;
}

/* ---- integers in a range ----------------------------------------------------------- */

/* Values compare as unsigned of their own width against `limit`, which the
 * caller has made representable: a negative value becomes huge. One width
 * throughout, so the blocks vectorise. */
#define DEFINE_IN_RANGE(name, type, utype)                                         \
  static int name(const uint8_t* p, int64_t length, utype limit) {                 \
    int64_t i = 0;                                                                 \
    utype bad = 0;                                                                 \
    for (; i + SCAN_BLOCK <= length; i += SCAN_BLOCK) {                            \
      for (int k = 0; k < SCAN_BLOCK; k++) {                                       \
        type x;                                                                    \
        memcpy(&x, p + (i + k) * (int64_t)sizeof(type), sizeof(type));             \
        bad |= (utype)((utype)x >= limit);                                         \
      }                                                                            \
      if (bad) return 0;                                                           \
    }                                                                              \
    for (; i < length; i++) {                                                      \
      type x;                                                                      \
      memcpy(&x, p + i * (int64_t)sizeof(type), sizeof(type));                     \
      bad |= (utype)((utype)x >= limit);                                           \
    }                                                                              \
    return !bad;                                                                   \
  }

DEFINE_IN_RANGE(in_range_8, uint8_t, uint8_t)
DEFINE_IN_RANGE(in_range_16, uint16_t, uint16_t)
DEFINE_IN_RANGE(in_range_32, uint32_t, uint32_t)
DEFINE_IN_RANGE(in_range_64, uint64_t, uint64_t)

int ferry__integers_in_range(const uint8_t* data, int32_t bytes, int is_signed,
                             int64_t offset, int64_t length, int64_t limit) {
  if (length <= 0) return 1;
  if (limit <= 0) return 0;
  /* As unsigned values of `bytes` bytes, the valid ones are those below
   * `bound`: the limit, or when every non-negative value is below it, the
   * first negative one (signed) or nothing at all (unsigned). */
  uint64_t largest = bytes == 8 ? UINT64_MAX : (UINT64_C(1) << (8 * bytes)) - 1;
  uint64_t first_negative = UINT64_C(1) << (8 * bytes - 1);
  uint64_t bound = (uint64_t)limit;
  if (is_signed && bound > first_negative) bound = first_negative;
  if (!is_signed && bytes < 8 && bound > largest) return 1;
  const uint8_t* p = data + offset * bytes;
  switch (bytes) {
    case 1: return in_range_8(p, length, (uint8_t)bound);
    case 2: return in_range_16(p, length, (uint16_t)bound);
    case 4: return in_range_32(p, length, (uint32_t)bound);
    default: return in_range_64(p, length, bound);
  }
}
