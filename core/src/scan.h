/* Scans of buffer contents at memory speed, for FULL validation (private to
 * the core): counting validity bits, checking offsets and dictionary
 * indices, validating UTF-8.
 *
 * Each answers the common case (everything is fine) with word-wide,
 * branch-free loops over fixed-size blocks, which compilers vectorise, and
 * hardware popcount where the CPU has it. They only say whether and where
 * something is wrong; the validator words the finding. All take host memory
 * that the caller has checked holds what they read. */
#ifndef FERRY_SRC_SCAN_H
#define FERRY_SRC_SCAN_H

#include <stdint.h>

/* Number of set bits among bits [offset, offset + length) of `bits`. */
int64_t ferry__count_set_bits(const uint8_t* bits, int64_t offset, int64_t length);

/* The popcount kernels: the best this CPU has is chosen once; tests run
 * each one that the CPU can run through ferry__count_set_bits_with. */
#define FERRY_POPCOUNT_PORTABLE 0
#define FERRY_POPCOUNT_INSTRUCTION 1 /* x86-64 popcnt */
#define FERRY_POPCOUNT_AVX2 2
int ferry__popcount_kernel(void);
int64_t ferry__count_set_bits_with(int kernel, const uint8_t* bits, int64_t offset,
                                   int64_t length);

/* Offsets entries [first, last] of an offsets buffer of `width` bytes (4 or
 * 8): the index of the first entry that is negative (only `first` can be,
 * when none decreases) or less than the one before, or -1 when they are all
 * non-negative and non-decreasing. */
int64_t ferry__first_bad_offset(const uint8_t* offsets, int32_t width, int64_t first,
                                int64_t last);

/* Length of the valid UTF-8 prefix of [s, s + n): n when all is valid.
 * Overlong forms, surrogates and values beyond U+10FFFF are invalid. */
int64_t ferry__utf8_valid_prefix(const uint8_t* s, int64_t n);

/* The UTF-8 kernels: the best this CPU has is chosen once; tests run each
 * one the CPU can run through ferry__utf8_valid_prefix_with. */
#define FERRY_UTF8_SCALAR 0
#define FERRY_UTF8_AVX2 1
int ferry__utf8_kernel(void);
int64_t ferry__utf8_valid_prefix_with(int kernel, const uint8_t* s, int64_t n);
/* utf8_simd.c: a character start p such that [s, s + p) is valid UTF-8,
 * p == n when all of it is (the AVX2 kernel; x86-64 only). */
int64_t ferry__utf8_valid_prefix_avx2(const uint8_t* s, int64_t n);

/* 1 when bytes [start, end) of `data` are valid UTF-8 and every one of the
 * `n_offsets` offsets (`width` bytes each, positions in `data`, all within
 * [start, end]) falls on the start of a character or on `end`: then every
 * value the offsets delimit is valid UTF-8 on its own. 0 means "not known to
 * be": check each value. */
int ferry__utf8_values_valid(const uint8_t* data, int64_t start, int64_t end,
                             const uint8_t* offsets, int32_t width, int64_t n_offsets);

/* Integer values [offset, offset + length) of a buffer of `bytes`-wide
 * integers (signed when `is_signed`): 1 when every one is in [0, limit),
 * 0 when some is not (uint64 values above INT64_MAX count as out of range). */
int ferry__integers_in_range(const uint8_t* data, int32_t bytes, int is_signed,
                             int64_t offset, int64_t length, int64_t limit);

#endif  // FERRY_SRC_SCAN_H
