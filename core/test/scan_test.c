/* Tests of the FULL validation kernels (core/src/scan.c) against plain
 * one-element-at-a-time references, on pseudo-random data of every size
 * class: the word, block and vector paths and all their edges. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ferry_test.h"
#include "scan.h"

static uint64_t g_state = 0x243F6A8885A308D3u;
static uint64_t next_random(void) {
  g_state ^= g_state << 13;
  g_state ^= g_state >> 7;
  g_state ^= g_state << 17;
  return g_state;
}

/* ---- references ------------------------------------------------------------------ */

static int64_t naive_count_set_bits(const uint8_t* bits, int64_t offset, int64_t length) {
  int64_t n = 0;
  for (int64_t i = offset; i < offset + length; i++) n += (bits[i / 8] >> (i % 8)) & 1;
  return n;
}

/* Entry `i` of an offsets buffer of `width` (4 or 8) bytes per entry. */
static int64_t entry(const uint8_t* offsets, int32_t width, int64_t i) {
  int64_t wide = 0;
  int32_t narrow = 0;
  memcpy(width == 8 ? (void*)&wide : (void*)&narrow, offsets + width * i, (size_t)width);
  return width == 8 ? wide : narrow;
}

/* Writes `value` (truncated to int32 when `width` is 4) as entry `i`. */
static void set_entry(uint8_t* offsets, int32_t width, int64_t i, int64_t value) {
  int32_t narrow = (int32_t)value;
  memcpy(offsets + width * i, width == 8 ? (const void*)&value : (const void*)&narrow,
         (size_t)width);
}

static int64_t naive_first_bad_offset(const uint8_t* offsets, int32_t width, int64_t first,
                                      int64_t last) {
  if (entry(offsets, width, first) < 0) return first;
  for (int64_t i = first + 1; i <= last; i++) {
    if (entry(offsets, width, i) < entry(offsets, width, i - 1)) return i;
  }
  return -1;
}

/* A reference UTF-8 decoder written from the definition (RFC 3629). */
static int64_t naive_utf8_prefix(const uint8_t* s, int64_t n) {
  int64_t i = 0;
  while (i < n) {
    uint32_t c = s[i];
    int need = c < 0x80 ? 0 : (c >> 5) == 6 ? 1 : (c >> 4) == 14 ? 2 : (c >> 3) == 30 ? 3 : -1;
    if (need < 0 || i + need >= n) return i; /* not a lead byte, or truncated */
    uint32_t cp = need == 0 ? c : need == 1 ? (c & 0x1F) : need == 2 ? (c & 0x0F) : (c & 0x07);
    for (int k = 1; k <= need; k++) {
      if ((s[i + k] & 0xC0) != 0x80) return i;
      cp = (cp << 6) | (s[i + k] & 0x3F);
    }
    uint32_t min = need == 0 ? 0 : need == 1 ? 0x80 : need == 2 ? 0x800 : 0x10000;
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return i;
    i += need + 1;
  }
  return n;
}

static int naive_in_range(const uint8_t* data, int32_t bytes, int is_signed, int64_t offset,
                          int64_t length, int64_t limit) {
  for (int64_t i = offset; i < offset + length; i++) {
    int64_t v;
    const uint8_t* p = data + i * bytes;
    switch (bytes) {
      case 1: v = is_signed ? (int8_t)p[0] : p[0]; break;
      case 2: {
        uint16_t u;
        memcpy(&u, p, 2);
        v = is_signed ? (int16_t)u : u;
        break;
      }
      case 4: {
        uint32_t u;
        memcpy(&u, p, 4);
        v = is_signed ? (int32_t)u : (int64_t)u;
        break;
      }
      default: {
        uint64_t u;
        memcpy(&u, p, 8);
        if (!is_signed && u > (uint64_t)INT64_MAX) return 0;
        v = (int64_t)u;
        break;
      }
    }
    if (v < 0 || v >= limit) return 0;
  }
  return 1;
}

/* ---- tests ---------------------------------------------------------------------------- */

FERRY_TEST(count_set_bits_matches_bit_by_bit_counting) {
  enum { kBytes = 5000 };
  static uint8_t bits[kBytes];
  printf("  popcount kernel of this CPU: %d (0 portable, 1 popcnt, 2 AVX2)\n",
         ferry__popcount_kernel());
  for (int round = 0; round < 3; round++) {
    /* Dense, sparse and random bitmaps. */
    for (int i = 0; i < kBytes; i++) {
      uint8_t r = (uint8_t)next_random();
      bits[i] = round == 0 ? r : round == 1 ? (uint8_t)(r & (r >> 3) & 0x11) : (uint8_t)~0u;
    }
    const int64_t lengths[] = {0, 1, 7, 8, 9, 63, 64, 65, 127, 1000, 1023, 1024, 1025,
                               8191, 8192, 8193, 20000, 39000};
    for (size_t l = 0; l < sizeof lengths / sizeof lengths[0]; l++) {
      for (int64_t offset = 0; offset < 70; offset += 3) {
        int64_t length = lengths[l];
        if (offset + length > kBytes * 8) continue;
        CHECK_EQ_INT(naive_count_set_bits(bits, offset, length),
                     ferry__count_set_bits(bits, offset, length));
        /* Every kernel up to the best this CPU runs. */
        for (int kernel = FERRY_POPCOUNT_PORTABLE; kernel <= ferry__popcount_kernel();
             kernel++) {
          CHECK_EQ_INT(naive_count_set_bits(bits, offset, length),
                       ferry__count_set_bits_with(kernel, bits, offset, length));
        }
      }
    }
    for (int k = 0; k < 300; k++) {
      int64_t offset = (int64_t)(next_random() % 4000);
      int64_t length = (int64_t)(next_random() % (kBytes * 8 - offset));
      CHECK_EQ_INT(naive_count_set_bits(bits, offset, length),
                   ferry__count_set_bits(bits, offset, length));
    }
  }
}

FERRY_TEST(first_bad_offset_finds_the_first_negative_or_decreasing_entry) {
  enum { kEntries = 3000 };
  static uint8_t buffer[kEntries * 8];
  for (int32_t width = 4; width <= 8; width += 4) {
    for (int round = 0; round < 200; round++) {
      int64_t value = (int64_t)(next_random() % 3);
      for (int64_t i = 0; i < kEntries; i++) {
        value += (int64_t)(next_random() % 5);
        set_entry(buffer, width, i, value);
      }
      int64_t first = (int64_t)(next_random() % 100);
      int64_t last = first + (int64_t)(next_random() % (kEntries - 101));
      if (round % 3 == 1) { /* a decrease somewhere (also in a block's middle) */
        int64_t at = first + 1 + (int64_t)(next_random() % (uint64_t)(last - first + 1));
        if (at <= last) {
          int64_t smaller = entry(buffer, width, at - 1) - 1 - (int64_t)(next_random() % 3);
          set_entry(buffer, width, at, smaller);
        }
      } else if (round % 3 == 2) { /* a negative first entry */
        int64_t negative = -1 - (int64_t)(next_random() % 5);
        set_entry(buffer, width, first, negative);
      }
      CHECK_EQ_INT(naive_first_bad_offset(buffer, width, first, last),
                   ferry__first_bad_offset(buffer, width, first, last));
    }
  }
}

/* Random text: mostly ASCII runs, some multi-byte characters, sometimes a
 * broken byte. */
static int64_t random_text(uint8_t* out, int64_t capacity, int with_errors) {
  static const char* const kPieces[] = {"\xC3\xA9", "\xE2\x82\xAC", "\xF0\x9F\x98\x80",
                                        "\xD0\x96", "\xEF\xBF\xBD"};
  static const char* const kBroken[] = {"\x80",         "\xC0\xAF", "\xED\xA0\x80",
                                        "\xF4\x90\x80\x80", "\xE2\x82", "\xFF"};
  int64_t n = 0;
  while (n + 8 < capacity) {
    uint64_t r = next_random();
    if (r % 4 != 0) {
      int64_t run = (int64_t)(r >> 8) % 90;
      for (int64_t k = 0; k < run && n < capacity - 8; k++) out[n++] = (uint8_t)('a' + k % 26);
    } else if (with_errors && (r >> 8) % 40 == 0) {
      const char* b = kBroken[(r >> 16) % 6];
      size_t len = strlen(b);
      memcpy(out + n, b, len);
      n += (int64_t)len;
    } else {
      const char* p = kPieces[(r >> 16) % 5];
      size_t len = strlen(p);
      memcpy(out + n, p, len);
      n += (int64_t)len;
    }
  }
  return n;
}

FERRY_TEST(utf8_valid_prefix_matches_a_reference_decoder) {
  static uint8_t text[6000];
  for (int round = 0; round < 400; round++) {
    int64_t n = random_text(text, 64 + (int64_t)(next_random() % 5900), round % 2);
    int64_t start = (int64_t)(next_random() % 16);
    CHECK_EQ_INT(naive_utf8_prefix(text + start, n - start),
                 ferry__utf8_valid_prefix(text + start, n - start));
  }
  /* Random bytes hit every lead and continuation byte. */
  for (int round = 0; round < 2000; round++) {
    uint8_t bytes[12];
    for (int k = 0; k < 12; k++) bytes[k] = (uint8_t)next_random();
    int64_t n = (int64_t)(next_random() % 13);
    CHECK_EQ_INT(naive_utf8_prefix(bytes, n), ferry__utf8_valid_prefix(bytes, n));
  }
}

/* Every kernel this CPU can run gives the reference's answer: dense
 * multi-byte text with one planted error at every position around the
 * 32-byte block edges, every two-byte pair after a lead, random bytes. */
FERRY_TEST(utf8_kernels_match_the_reference_at_every_block_edge) {
  int kernels[2] = {FERRY_UTF8_SCALAR, ferry__utf8_kernel()};
  static const char* const kChars[] = {"a", "\xC3\xA9", "\xE2\x82\xAC", "\xF0\x9F\x98\x80",
                                       "\xED\x9F\xBF", "\xF4\x8F\xBF\xBF"};
  static const uint8_t kBad[] = {0x80, 0xBF, 0xC0, 0xC1, 0xF5, 0xFF, 0xE0, 0xED, 0xF0, 0xF4};
  uint8_t text[300];
  for (int k = 0; k < 2; k++) {
    for (int round = 0; round < 300; round++) {
      int64_t n = 0;
      while (n < 200) {
        const char* c = kChars[next_random() % 6];
        size_t len = strlen(c);
        memcpy(text + n, c, len);
        n += (int64_t)len;
      }
      CHECK_EQ_INT(naive_utf8_prefix(text, n), ferry__utf8_valid_prefix_with(kernels[k], text, n));
      /* One byte replaced, at every position: the error lands on each
       * offset within a block and on the edges between blocks. */
      for (int64_t at = 0; at < n; at += 1 + (int64_t)(next_random() % 3)) {
        uint8_t saved = text[at];
        text[at] = kBad[next_random() % sizeof(kBad)];
        for (int64_t cut = at; cut <= n && cut <= at + 5; cut++) {
          CHECK_EQ_INT(naive_utf8_prefix(text, cut),
                       ferry__utf8_valid_prefix_with(kernels[k], text, cut));
        }
        CHECK_EQ_INT(naive_utf8_prefix(text, n), ferry__utf8_valid_prefix_with(kernels[k], text, n));
        text[at] = saved;
      }
    }
    /* Every lead byte followed by every second byte, at each place in a
     * 64-byte ASCII line (so the pair straddles the block edge too). */
    for (int lead = 0xC0; lead <= 0xFF; lead++) {
      for (int second = 0; second <= 0xFF; second += 1) {
        for (int at = 28; at <= 33; at++) {
          memset(text, 'x', 96);
          text[at] = (uint8_t)lead;
          text[at + 1] = (uint8_t)second;
          text[at + 2] = 0x80;
          text[at + 3] = 0x80;
          CHECK_EQ_INT(naive_utf8_prefix(text, 96), ferry__utf8_valid_prefix_with(kernels[k], text, 96));
        }
      }
    }
    for (int round = 0; round < 3000; round++) {
      int64_t n = 64 + (int64_t)(next_random() % 100);
      for (int64_t i = 0; i < n; i++) {
        uint64_t r = next_random();
        text[i] = r % 3 ? (uint8_t)(0x80 + r % 0x80) : (uint8_t)(r >> 8);
      }
      CHECK_EQ_INT(naive_utf8_prefix(text, n), ferry__utf8_valid_prefix_with(kernels[k], text, n));
    }
  }
}

FERRY_TEST(utf8_values_valid_never_passes_an_invalid_value) {
  static uint8_t text[6000];
  static int32_t offsets[2001];
  for (int round = 0; round < 300; round++) {
    int64_t n = random_text(text, 200 + (int64_t)(next_random() % 5700), round % 3 == 0);
    /* Cut the text into values; on even rounds only between characters. */
    int64_t n_values = 1 + (int64_t)(next_random() % 2000);
    offsets[0] = 0;
    for (int64_t i = 1; i < n_values; i++) {
      int32_t at = offsets[i - 1] + (int32_t)(next_random() % (uint64_t)(2 * n / n_values + 1));
      if (at > n) at = (int32_t)n;
      if (round % 2 == 0) {
        while (at < n && (text[at] & 0xC0) == 0x80) at++;
      }
      offsets[i] = at;
    }
    offsets[n_values] = (int32_t)n;
    int all_valid = 1;
    for (int64_t i = 0; i < n_values; i++) {
      int64_t length = offsets[i + 1] - offsets[i];
      if (naive_utf8_prefix(text + offsets[i], length) != length) all_valid = 0;
    }
    int fast = ferry__utf8_values_valid(text, 0, n, (const uint8_t*)offsets, 4, n_values + 1);
    if (fast) CHECK(all_valid);
    /* Valid text cut between characters is recognised without a value-by-value look. */
    if (round % 6 == 2) CHECK_EQ_INT(all_valid, fast);
  }
}

FERRY_TEST(integers_in_range_matches_a_plain_loop_for_every_width) {
  static uint8_t data[8 * 700];
  const int64_t limits[] = {0,     1,      2,         100,        127,
                            128,   255,    256,       32767,      32768,
                            65535, 65536,  INT32_MAX, 1LL << 32,  INT64_MAX};
  for (int32_t bytes = 1; bytes <= 8; bytes *= 2) {
    for (int is_signed = 0; is_signed <= 1; is_signed++) {
      for (size_t l = 0; l < sizeof limits / sizeof limits[0]; l++) {
        for (int round = 0; round < 30; round++) {
          /* Values mostly below the limit, sometimes one outside or negative. */
          for (int64_t i = 0; i < 700; i++) {
            uint64_t r = next_random();
            uint64_t v = limits[l] > 0 ? r % (uint64_t)limits[l] : r;
            if (round % 5 == 1 && i == (int64_t)(r % 700)) v = (uint64_t)limits[l];
            if (round % 5 == 2 && i == (int64_t)(r % 700)) v = UINT64_MAX; /* -1 */
            if (round % 5 == 3) v = r;
            memcpy(data + i * bytes, &v, (size_t)bytes); /* little endian */
          }
          int64_t offset = (int64_t)(next_random() % 50);
          int64_t length = (int64_t)(next_random() % (700 - 50));
          CHECK_EQ_INT(naive_in_range(data, bytes, is_signed, offset, length, limits[l]),
                       ferry__integers_in_range(data, bytes, is_signed, offset, length,
                                                limits[l]));
        }
      }
    }
  }
}

FERRY_TEST_MAIN()
