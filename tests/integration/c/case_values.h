/* The value formula of docs/cases.md, computed, never tabulated:
 *
 *   u(i) = (seed * 2654435761 + i * 40503) mod 2^32
 *
 * and each type's value of element i derived from it. Producers and checkers
 * of this plugin share these functions; the tests recompute them
 * independently. */
#ifndef FERRY_IT_C_CASE_VALUES_H
#define FERRY_IT_C_CASE_VALUES_H

#include <stddef.h>
#include <stdint.h>

#include "case_spec.h"

#pragma GCC visibility push(hidden)

/* u(i) of the formula; i is reduced mod 2^32 like everything else. */
uint32_t it_u(uint32_t seed, int64_t i);

/* Width in bytes of one value of a fixed-width type (int*, uint*, float*, and
 * the int32 indices of dict_int32_utf8); 0 for bool and variable layouts. */
int it_fixed_width(enum it_type type);

/* The value of element i of a fixed-width type as its raw little-endian bits
 * in the low `it_fixed_width(type)` bytes (floats as their IEEE bits, so
 * checkers compare them bit-exactly). For dict_int32_utf8 it is the index. */
uint64_t it_fixed_value_bits(enum it_type type, uint32_t seed, int64_t i);

/* bool: u(i) AND 1. */
int it_bool_value(uint32_t seed, int64_t i);

/* utf8 and binary: writes the value of element i into `out` (at least
 * IT_UTF8_MAX_BYTES bytes, not terminated) and returns its length. */
#define IT_UTF8_MAX_BYTES 5
int it_utf8_value(uint32_t seed, int64_t i, char* out);

/* list_int32: number of items of list i (u(i) mod 4). */
int it_list_length(uint32_t seed, int64_t i);

/* dict_int32_utf8: the dictionary has 7 values "d0" .. "d6". */
#define IT_DICTIONARY_SIZE 7

/* Writes a readable form of `bits` (as produced by it_fixed_value_bits) into
 * `out` for messages: decimal for integers, "%.9g (bits 0x...)" for floats. */
void it_format_fixed_value(enum it_type type, uint64_t bits, char* out, size_t out_size);

/* Null rule: element i is null iff nulls > 0 and i % nulls == nulls - 1. */
int it_is_null(int64_t nulls, int64_t i);
/* Exact null count of `length` elements under the rule above. */
int64_t it_null_count(int64_t nulls, int64_t length);

#pragma GCC visibility pop

#endif  // FERRY_IT_C_CASE_VALUES_H
