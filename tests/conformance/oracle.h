/* oracle: the conformance mode's own reading of the value formula of
 * docs/cases.md: THE independent C oracle of the formula, written from the
 * text alone. It shares no code with any plugin (the C plugin has its own
 * formula in tests/integration/c/case_values.c), so a shared misreading of the
 * formula cannot hide. Case strings are parsed by the harness's one parser
 * (core/harness/case_spec.h); the types are its enum it_type. */
#ifndef FERRY_CONFORMANCE_ORACLE_H
#define FERRY_CONFORMANCE_ORACLE_H

#include <stddef.h>
#include <stdint.h>

#include "case_spec.h"
#include "ferry/arrow_c_device_abi.h"

/* How the values of a type are laid out in Arrow buffers. */
enum conf_layout {
  LAYOUT_FIXED,
  LAYOUT_BOOL,
  LAYOUT_VARBIN,
  LAYOUT_LIST,
  LAYOUT_STRUCT,
  LAYOUT_DICT
};

/* Top-level format strings and layouts of the types. */
const char* conf_type_format(enum it_type type);
enum conf_layout conf_type_layout(enum it_type type);
/* Bytes per value for LAYOUT_FIXED (and the int32 indices of dict), else 0. */
int conf_type_width(enum it_type type);

/* u(i) = (seed * 2654435761 + i * 40503) mod 2^32. */
uint32_t conf_u(uint32_t seed, uint64_t i);
/* 1 when logical element i is null under `nulls` (0: never). */
int conf_is_null(int64_t nulls, int64_t i);
/* The exact null_count of `length` elements under `nulls`. */
int64_t conf_null_count(int64_t nulls, int64_t length);
/* The little-endian bytes of element i of a fixed-width type (1, 2, 4 or 8
 * bytes written to `out`); returns the width. */
int conf_fixed_value(enum it_type type, uint32_t seed, int64_t i, unsigned char out[8]);
/* bool: the bit of element i. */
int conf_bool_value(uint32_t seed, int64_t i);
/* utf8/binary: writes the value of element i (not terminated) and returns
 * its byte length (at most 5). */
int conf_utf8_value(uint32_t seed, int64_t i, char out[8]);

#endif  // FERRY_CONFORMANCE_ORACLE_H
