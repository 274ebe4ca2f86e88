/* conf_case: the conformance suite's own reading of /work/shared/cases.md —
 * the case grammar and the value formula, written from the text alone (it
 * shares no code with any plugin, so a shared misreading cannot hide). */
#ifndef FERRY_CONFORMANCE_CASE_H
#define FERRY_CONFORMANCE_CASE_H

#include <stddef.h>
#include <stdint.h>

#include "ferry/arrow_c_device_abi.h"

enum conf_type {
  CONF_INT8,
  CONF_INT16,
  CONF_INT32,
  CONF_INT64,
  CONF_UINT8,
  CONF_UINT16,
  CONF_UINT32,
  CONF_UINT64,
  CONF_FLOAT32,
  CONF_FLOAT64,
  CONF_BOOL,
  CONF_UTF8,
  CONF_BINARY,
  CONF_LIST_INT32,
  CONF_STRUCT_INT32_UTF8,
  CONF_DICT_INT32_UTF8,
  CONF_TYPE_COUNT
};

/* How the values of a type are laid out in Arrow buffers. */
enum conf_layout {
  LAYOUT_FIXED,
  LAYOUT_BOOL,
  LAYOUT_VARBIN,
  LAYOUT_LIST,
  LAYOUT_STRUCT,
  LAYOUT_DICT
};

enum conf_fail {
  CONF_FAIL_NONE,
  CONF_FAIL_EXPORT,
  CONF_FAIL_GET_NEXT,
  CONF_FAIL_GET_SCHEMA
};

struct conf_case {
  char text[512]; /* the case string as given */
  enum conf_type type;
  int64_t length;  /* default 16 */
  int64_t nulls;   /* default 0 */
  uint32_t seed;   /* default 1 */
  int64_t offset;  /* default 0 */
  char device[16]; /* default "cpu" */
  ArrowDeviceType device_type;
  int64_t batches; /* default 3 */
  enum conf_fail fail;
  int64_t fail_n; /* N of fail=get_next@N */
};

/* Type names (the TYPE words), their top-level format strings and layouts. */
const char* conf_type_name(enum conf_type type);
const char* conf_type_format(enum conf_type type);
enum conf_layout conf_type_layout(enum conf_type type);
/* Bytes per value for LAYOUT_FIXED (and the int32 indices of dict), else 0. */
int conf_type_width(enum conf_type type);

/* Parses `text` strictly by the grammar; 0 on success, else -1 with the
 * reason in `why`. The suite only parses cases it means to be valid. */
int conf_case_parse(const char* text, struct conf_case* out, char* why, size_t why_size);

/* u(i) = (seed * 2654435761 + i * 40503) mod 2^32. */
uint32_t conf_u(uint32_t seed, uint64_t i);
/* 1 when logical element i is null under `nulls` (0: never). */
int conf_is_null(int64_t nulls, int64_t i);
/* The exact null_count of `length` elements under `nulls`. */
int64_t conf_null_count(int64_t nulls, int64_t length);
/* The little-endian bytes of element i of a fixed-width type (1, 2, 4 or 8
 * bytes written to `out`); returns the width. */
int conf_fixed_value(enum conf_type type, uint32_t seed, int64_t i, unsigned char out[8]);
/* bool: the bit of element i. */
int conf_bool_value(uint32_t seed, int64_t i);
/* utf8/binary: writes the value of element i (not terminated) and returns
 * its byte length (at most 5). */
int conf_utf8_value(uint32_t seed, int64_t i, char out[8]);

#endif  // FERRY_CONFORMANCE_CASE_H
