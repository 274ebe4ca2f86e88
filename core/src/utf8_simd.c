/* UTF-8 validation 32 bytes at a time with AVX2 (private to the core; the
 * scalar validator and the dispatch are in scan.c).
 *
 * The method is the one of Keiser and Lemire, "Validating UTF-8 In Less Than
 * One Instruction Per Byte" (2021): every error of UTF-8 shows in a window of
 * at most two bytes, given the bytes one, two and three positions back. Three
 * 16-entry tables, indexed by the high nibble of the byte before, the low
 * nibble of the byte before and the high nibble of the byte itself, each
 * give the set of errors that nibble allows; a bit left in the AND of the
 * three is an error. The one rule two bytes cannot see (the 2nd and 3rd
 * continuation of a 3- and 4-byte character) is checked from the bytes two
 * and three back. Written here from the paper's description.
 *
 * ferry__utf8_valid_prefix_avx2 only answers "all valid" exactly: at the first
 * block with an error it returns a position before the error where a
 * character starts (every byte before it is valid), and the scalar validator
 * finds the exact place from there. */
#include "scan.h"

#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/* One bit per kind of error. Each table entry lists the errors still
 * possible given one nibble; only a bit set in all three is real. */
#define TOO_SHORT (1 << 0)   /* a lead byte, then no continuation */
#define TOO_LONG (1 << 1)    /* ASCII, then a continuation */
#define OVERLONG_3 (1 << 2)  /* E0 followed by 80..9F */
#define TOO_LARGE (1 << 3)   /* F4 followed by 90..BF, or F5..FF */
#define SURROGATE (1 << 4)   /* ED followed by A0..BF */
#define OVERLONG_2 (1 << 5)  /* C0 or C1 */
#define TOO_LARGE_1000 (1 << 6) /* F5..FF followed by 80..8F */
#define OVERLONG_4 (1 << 6)  /* F0 followed by 80..8F (shares the bit) */
#define TWO_CONTS (-0x80)    /* a continuation after a continuation (bit 7, as a char) */
#define CARRY (TOO_SHORT | TOO_LONG | TWO_CONTS) /* decided by high nibbles alone */

/* Bytes [-n .. 32-n) of the stream: the last n bytes of `previous`, then
 * the first 32-n bytes of `current` (n = 1, 2, 3). */
#define PREVIOUS_BYTES(current, previous, n) \
  _mm256_alignr_epi8((current), _mm256_permute2x128_si256((previous), (current), 0x21), 16 - (n))

__attribute__((target("avx2"))) static inline __m256i lookup(__m256i table, __m256i nibbles) {
  return _mm256_shuffle_epi8(table, nibbles);
}

/* The errors of one 32-byte block, given the block before it. */
__attribute__((target("avx2"))) static inline __m256i block_errors(__m256i input,
                                                                    __m256i previous) {
  const __m256i low_nibble = _mm256_set1_epi8(0x0F);
  const __m256i byte_1_high_table = _mm256_setr_epi8(
      /* 0xxx: ASCII */
      TOO_LONG, TOO_LONG, TOO_LONG, TOO_LONG, TOO_LONG, TOO_LONG, TOO_LONG, TOO_LONG,
      /* 10xx: continuation */
      TWO_CONTS, TWO_CONTS, TWO_CONTS, TWO_CONTS,
      /* 1100: C0..CF */
      TOO_SHORT | OVERLONG_2,
      /* 1101: D0..DF */
      TOO_SHORT,
      /* 1110: E0..EF */
      TOO_SHORT | OVERLONG_3 | SURROGATE,
      /* 1111: F0..FF */
      TOO_SHORT | TOO_LARGE | TOO_LARGE_1000 | OVERLONG_4,
      /* the same for the high 128 bits */
      TOO_LONG, TOO_LONG, TOO_LONG, TOO_LONG, TOO_LONG, TOO_LONG, TOO_LONG, TOO_LONG,
      TWO_CONTS, TWO_CONTS, TWO_CONTS, TWO_CONTS, TOO_SHORT | OVERLONG_2, TOO_SHORT,
      TOO_SHORT | OVERLONG_3 | SURROGATE, TOO_SHORT | TOO_LARGE | TOO_LARGE_1000 | OVERLONG_4);
#define LOW_1 CARRY | TOO_LARGE | TOO_LARGE_1000
  const __m256i byte_1_low_table = _mm256_setr_epi8(
      /* x0: C0, E0, F0 */
      CARRY | OVERLONG_3 | OVERLONG_2 | OVERLONG_4,
      /* x1: C1 */
      CARRY | OVERLONG_2,
      /* x2, x3 */
      CARRY, CARRY,
      /* x4: F4 */
      CARRY | TOO_LARGE,
      /* x5..x7: F5..F7 */
      LOW_1, LOW_1, LOW_1,
      /* x8..xC */
      LOW_1, LOW_1, LOW_1, LOW_1, LOW_1,
      /* xD: ED */
      LOW_1 | SURROGATE,
      /* xE, xF */
      LOW_1, LOW_1,
      /* the same for the high 128 bits */
      CARRY | OVERLONG_3 | OVERLONG_2 | OVERLONG_4, CARRY | OVERLONG_2, CARRY, CARRY,
      CARRY | TOO_LARGE, LOW_1, LOW_1, LOW_1, LOW_1, LOW_1, LOW_1, LOW_1, LOW_1,
      LOW_1 | SURROGATE, LOW_1, LOW_1);
#undef LOW_1
#define CONT_80 TOO_LONG | OVERLONG_2 | TWO_CONTS | OVERLONG_3 | TOO_LARGE_1000 | OVERLONG_4
#define CONT_90 TOO_LONG | OVERLONG_2 | TWO_CONTS | OVERLONG_3 | TOO_LARGE
#define CONT_A0 TOO_LONG | OVERLONG_2 | TWO_CONTS | SURROGATE | TOO_LARGE
  const __m256i byte_2_high_table = _mm256_setr_epi8(
      /* 0xxx: ASCII after the byte before */
      TOO_SHORT, TOO_SHORT, TOO_SHORT, TOO_SHORT, TOO_SHORT, TOO_SHORT, TOO_SHORT, TOO_SHORT,
      /* 1000, 1001, 101x: continuations */
      CONT_80, CONT_90, CONT_A0, CONT_A0,
      /* 11xx: a lead */
      TOO_SHORT, TOO_SHORT, TOO_SHORT, TOO_SHORT,
      /* the same for the high 128 bits */
      TOO_SHORT, TOO_SHORT, TOO_SHORT, TOO_SHORT, TOO_SHORT, TOO_SHORT, TOO_SHORT, TOO_SHORT,
      CONT_80, CONT_90, CONT_A0, CONT_A0, TOO_SHORT, TOO_SHORT, TOO_SHORT, TOO_SHORT);
#undef CONT_80
#undef CONT_90
#undef CONT_A0

  __m256i prev1 = PREVIOUS_BYTES(input, previous, 1);
  __m256i byte_1_high =
      lookup(byte_1_high_table, _mm256_and_si256(_mm256_srli_epi16(prev1, 4), low_nibble));
  __m256i byte_1_low = lookup(byte_1_low_table, _mm256_and_si256(prev1, low_nibble));
  __m256i byte_2_high =
      lookup(byte_2_high_table, _mm256_and_si256(_mm256_srli_epi16(input, 4), low_nibble));
  __m256i special = _mm256_and_si256(_mm256_and_si256(byte_1_high, byte_1_low), byte_2_high);

  /* Two and three bytes after a 3- or 4-byte lead a continuation must come,
   * and TWO_CONTS is then expected, not an error: E0..FF two back or F0..FF
   * three back give 0x80 here, which cancels TWO_CONTS (or stands alone as
   * an error when the continuation is missing). */
  __m256i prev2 = PREVIOUS_BYTES(input, previous, 2);
  __m256i prev3 = PREVIOUS_BYTES(input, previous, 3);
  __m256i third = _mm256_subs_epu8(prev2, _mm256_set1_epi8((char)(0xE0 - 0x80)));
  __m256i fourth = _mm256_subs_epu8(prev3, _mm256_set1_epi8((char)(0xF0 - 0x80)));
  __m256i must_continue =
      _mm256_and_si256(_mm256_or_si256(third, fourth), _mm256_set1_epi8((char)0x80));
  return _mm256_xor_si256(must_continue, special);
}

/* Nonzero where the block's last three bytes start a character that needs
 * more bytes than the block has left. */
__attribute__((target("avx2"))) static inline __m256i unfinished(__m256i input) {
  const __m256i last_leads = _mm256_setr_epi8(
      -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
      -1, -1, -1, -1, -1, -1, -1, (char)(0xF0 - 1), (char)(0xE0 - 1), (char)(0xC0 - 1));
  return _mm256_subs_epu8(input, last_leads);
}

/* Where the scalar validator takes over when the block at `block` has an
 * error: the start of the last character before the block (bytes before it
 * are valid: every earlier block was), since an error found in this block
 * may belong to a character that began up to three bytes before it. */
static int64_t restart_before(const uint8_t* s, int64_t block) {
  if (block == 0) return 0;
  int64_t at = block - 1;
  for (int k = 0; k < 3 && at > 0 && (s[at] & 0xC0) == 0x80; k++) at--;
  return at;
}

__attribute__((target("avx2"))) int64_t ferry__utf8_valid_prefix_avx2(const uint8_t* s,
                                                                       int64_t n) {
  __m256i previous = _mm256_setzero_si256();
  __m256i carried = _mm256_setzero_si256(); /* unfinished character of the block before */
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    __m256i input = _mm256_loadu_si256((const __m256i*)(const void*)(s + i));
    __m256i errors;
    if (_mm256_movemask_epi8(input) == 0) {
      /* ASCII: only a character left unfinished before can be wrong. */
      errors = carried;
    } else {
      errors = block_errors(input, previous);
    }
    if (!_mm256_testz_si256(errors, errors)) return restart_before(s, i);
    carried = unfinished(input);
    previous = input;
  }
  /* The tail, padded with zeros: a character cut short by the end meets an
   * ASCII zero, which is an error of the tables already. */
  if (i < n || !_mm256_testz_si256(carried, carried)) {
    uint8_t tail[32];
    memset(tail, 0, sizeof(tail));
    memcpy(tail, s + i, (size_t)(n - i));
    __m256i input = _mm256_loadu_si256((const __m256i*)(const void*)tail);
    __m256i errors = block_errors(input, previous);
    if (!_mm256_testz_si256(errors, errors)) return restart_before(s, i);
  }
  return n;
}

#else
int64_t ferry__utf8_valid_prefix_avx2(const uint8_t* s, int64_t n) {
  (void)s;
  return n > 0 ? 0 : n; /* never chosen: scan.c dispatches only on x86-64 */
}
#endif
