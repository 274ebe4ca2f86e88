/* The C data interface format-string parser (private to the core).
 *
 * One parse gives everything layout code needs: which buffers an array of
 * this type has, their element widths, and how many children to expect. */
#ifndef FERRY_SRC_FORMAT_H
#define FERRY_SRC_FORMAT_H

#include <stdint.h>

#include "ferry/ferry.h"

enum FerryTypeId {
  FERRY_TYPE_NA = 0,                  /* "n" */
  FERRY_TYPE_BOOL,                    /* "b" */
  FERRY_TYPE_INT8,                    /* "c" */
  FERRY_TYPE_UINT8,                   /* "C" */
  FERRY_TYPE_INT16,                   /* "s" */
  FERRY_TYPE_UINT16,                  /* "S" */
  FERRY_TYPE_INT32,                   /* "i" */
  FERRY_TYPE_UINT32,                  /* "I" */
  FERRY_TYPE_INT64,                   /* "l" */
  FERRY_TYPE_UINT64,                  /* "L" */
  FERRY_TYPE_HALF_FLOAT,              /* "e" */
  FERRY_TYPE_FLOAT,                   /* "f" */
  FERRY_TYPE_DOUBLE,                  /* "g" */
  FERRY_TYPE_BINARY,                  /* "z" */
  FERRY_TYPE_LARGE_BINARY,            /* "Z" */
  FERRY_TYPE_BINARY_VIEW,             /* "vz" */
  FERRY_TYPE_STRING,                  /* "u" */
  FERRY_TYPE_LARGE_STRING,            /* "U" */
  FERRY_TYPE_STRING_VIEW,             /* "vu" */
  FERRY_TYPE_DECIMAL,                 /* "d:P,S[,B]" (bits 32, 64, 128, 256) */
  FERRY_TYPE_FIXED_SIZE_BINARY,       /* "w:N" */
  FERRY_TYPE_DATE32,                  /* "tdD" */
  FERRY_TYPE_DATE64,                  /* "tdm" */
  FERRY_TYPE_TIME32,                  /* "tts" "ttm" */
  FERRY_TYPE_TIME64,                  /* "ttu" "ttn" */
  FERRY_TYPE_TIMESTAMP,               /* "ts{s,m,u,n}:TZ" */
  FERRY_TYPE_DURATION,                /* "tD{s,m,u,n}" */
  FERRY_TYPE_INTERVAL_MONTHS,         /* "tiM" */
  FERRY_TYPE_INTERVAL_DAY_TIME,       /* "tiD" */
  FERRY_TYPE_INTERVAL_MONTH_DAY_NANO, /* "tin" */
  FERRY_TYPE_LIST,                    /* "+l" */
  FERRY_TYPE_LARGE_LIST,              /* "+L" */
  FERRY_TYPE_LIST_VIEW,               /* "+vl" */
  FERRY_TYPE_LARGE_LIST_VIEW,         /* "+vL" */
  FERRY_TYPE_FIXED_SIZE_LIST,         /* "+w:N" */
  FERRY_TYPE_STRUCT,                  /* "+s" */
  FERRY_TYPE_MAP,                     /* "+m" */
  FERRY_TYPE_DENSE_UNION,             /* "+ud:I,J,..." */
  FERRY_TYPE_SPARSE_UNION,            /* "+us:I,J,..." */
  FERRY_TYPE_RUN_END_ENCODED          /* "+r" */
};

/* Physical role of one buffer slot. */
enum FerryBufferRole {
  FERRY_BUFFER_VALIDITY = 0,
  FERRY_BUFFER_DATA,     /* fixed-width values; bit_width gives the width */
  FERRY_BUFFER_OFFSETS,  /* offset_bytes wide, length + offset + 1 entries */
  FERRY_BUFFER_SIZES,    /* list-view sizes, offset_bytes wide, length + offset entries */
  FERRY_BUFFER_VAR_DATA, /* bytes addressed by the offsets */
  FERRY_BUFFER_TYPE_IDS, /* int8 union type ids */
  FERRY_BUFFER_UNION_OFFSETS, /* int32 dense-union offsets */
  FERRY_BUFFER_VIEWS          /* 16-byte views */
};

#define FERRY_FORMAT_MAX_FIXED_BUFFERS 3
#define FERRY_FORMAT_MAX_UNION_TYPES 128

struct FerryFormat {
  enum FerryTypeId type;
  /* Buffers of the layout, excluding the variadic data buffers and the
   * trailing variadic sizes buffer of view types. */
  int32_t n_fixed_buffers;
  enum FerryBufferRole roles[FERRY_FORMAT_MAX_FIXED_BUFFERS];
  /* 1 for view types: n_buffers = n_fixed_buffers + n_variadic + 1. */
  int32_t is_view;
  /* Width in bits of one value in the DATA buffer (1 for bool, 128 for
   * decimal128, 8 * N for fixed_size_binary), 0 when there is none. */
  int64_t bit_width;
  /* Width in bytes of one OFFSETS/SIZES entry (4 or 8), 0 when none. */
  int32_t offset_bytes;
  int32_t n_union_types;
  /* N of fixed_size_binary / fixed_size_list, else 0. */
  int64_t fixed_size;
  /* Exact number of children the layout requires, or -1 for "any"
   * (struct; unions must match n_union_types). */
  int64_t n_children;
  int32_t decimal_precision;
  int32_t decimal_scale;
  char time_unit;       /* 's', 'm', 'u', 'n' or 0 */
  const char* timezone; /* points into the parsed string; NULL when absent */
  /* Unions: the checked list of type ids ("0,5,127"), pointing into the parsed
   * string; ferry__format_union_type_ids reads it. NULL for other types. */
  const char* union_type_list;
};

/* Parses `format` into `out`. EINVAL naming the offending part on failure.
 * Borrows `format`; out->timezone and out->union_type_list point into it. */
int ferry__format_parse(const char* format, struct FerryFormat* out,
                       struct FerryError* error);

/* The type ids of a union layout, in child order, into ids[0..n_union_types).
 * `format` must come from a successful parse whose string is still alive. */
void ferry__format_union_type_ids(const struct FerryFormat* format,
                                  int8_t ids[FERRY_FORMAT_MAX_UNION_TYPES]);

#endif  // FERRY_SRC_FORMAT_H
