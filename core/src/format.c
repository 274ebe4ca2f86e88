/* The C data interface format-string parser: the whole grammar of
 * https://arrow.apache.org/docs/format/CDataInterface.html#data-type-description-format-strings
 * turned into the buffer layout the rest of the core works from. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "format.h"
#include "internal.h"

/* Longest part of a hostile format string quoted in a message; the rest is
 * elided so the message stays readable and fits FerryError. */
#define FERRY_FORMAT_QUOTE_MAX 64

/* Writes `format` into `out` as a printable, bounded, escaped string, so a
 * message about garbage bytes never carries the garbage itself. */
static void quote_format(const char* format, char* out, size_t out_size) {
  size_t used = 0;
  size_t i = 0;
  for (; format[i] != '\0' && i < FERRY_FORMAT_QUOTE_MAX; i++) {
    unsigned char c = (unsigned char)format[i];
    char piece[8];
    if (c == '"' || c == '\\') {
      snprintf(piece, sizeof piece, "\\%c", c);
    } else if (c < 0x20 || c >= 0x7f) {
      snprintf(piece, sizeof piece, "\\x%02x", c);
    } else {
      piece[0] = (char)c;
      piece[1] = '\0';
    }
    size_t n = strlen(piece);
    if (used + n + 4 >= out_size) break;
    memcpy(out + used, piece, n);
    used += n;
  }
  if (format[i] != '\0' && used + 4 < out_size) {
    memcpy(out + used, "...", 3);
    used += 3;
  }
  out[used] = '\0';
}

/* Sets `error` to `format "<quoted>": <problem>` and returns EINVAL. */
static int format_error(struct FerryError* error, const char* format, const char* fmt,
                        ...) FERRY_PRINTF(3, 4);
static int format_error(struct FerryError* error, const char* format, const char* fmt,
                        ...) {
  char quoted[FERRY_FORMAT_QUOTE_MAX * 4 + 8];
  char problem[512];
  va_list args;
  va_start(args, fmt);
  vsnprintf(problem, sizeof problem, fmt, args);
  va_end(args);
  quote_format(format, quoted, sizeof quoted);
  return ferry__set_error(error, EINVAL, "format \"%s\": %s", quoted, problem);
}

/* Reads a decimal integer at *cursor (an optional '-' only when
 * `allow_negative`), bounded by [min, max]. Returns 1 and advances the cursor
 * on success, 0 when there are no digits, -1 on overflow or out of range. */
static int read_int(const char** cursor, int allow_negative, int64_t min, int64_t max,
                    int64_t* out) {
  const char* p = *cursor;
  int negative = 0;
  if (allow_negative && *p == '-') {
    negative = 1;
    p++;
  }
  if (*p < '0' || *p > '9') return 0;
  int64_t value = 0;
  while (*p >= '0' && *p <= '9') {
    /* Bounded well below INT64_MAX so the accumulation itself never overflows. */
    if (value > (INT64_C(1) << 40)) return -1;
    value = value * 10 + (*p - '0');
    p++;
  }
  if (negative) value = -value;
  if (value < min || value > max) return -1;
  *out = value;
  *cursor = p;
  return 1;
}

/* What every layout below starts with: the type, the number of fixed
 * buffers, the validity bitmap first and `second` after it. */
static void set_layout(struct FerryFormat* out, enum FerryTypeId type,
                       int32_t n_fixed_buffers, enum FerryBufferRole second) {
  out->type = type;
  out->n_fixed_buffers = n_fixed_buffers;
  out->roles[0] = FERRY_BUFFER_VALIDITY;
  out->roles[1] = second;
}

static void set_fixed_width(struct FerryFormat* out, enum FerryTypeId type,
                            int64_t bit_width) {
  set_layout(out, type, 2, FERRY_BUFFER_DATA);
  out->bit_width = bit_width;
}

static void set_variable(struct FerryFormat* out, enum FerryTypeId type,
                         int32_t offset_bytes) {
  set_layout(out, type, 3, FERRY_BUFFER_OFFSETS);
  out->roles[2] = FERRY_BUFFER_VAR_DATA;
  out->offset_bytes = offset_bytes;
}

static void set_view(struct FerryFormat* out, enum FerryTypeId type) {
  set_layout(out, type, 2, FERRY_BUFFER_VIEWS);
  out->is_view = 1;
  out->bit_width = 128;
}

static void set_nested(struct FerryFormat* out, enum FerryTypeId type,
                       int32_t n_fixed_buffers, int32_t offset_bytes,
                       int64_t n_children) {
  set_layout(out, type, n_fixed_buffers, FERRY_BUFFER_OFFSETS);
  out->roles[2] = FERRY_BUFFER_SIZES;
  out->offset_bytes = offset_bytes;
  out->n_children = n_children;
}

/* Maximum decimal precision for each storage width, as Arrow defines them. */
static int32_t decimal_max_precision(int64_t bits) {
  switch (bits) {
    case 32: return 9;
    case 64: return 18;
    case 128: return 38;
    case 256: return 76;
    default: return 0;
  }
}

/* "d:P,S[,B]"; `p` points after "d". */
static int parse_decimal(const char* format, const char* p, struct FerryFormat* out,
                         const char** end, struct FerryError* error) {
  if (*p != ':') {
    return format_error(error, format,
                        "decimal needs ':' then precision and scale (d:P,S)");
  }
  p++;
  int64_t precision = 0, scale = 0, bits = 128;
  int r = read_int(&p, 0, 0, INT32_MAX, &precision);
  if (r == 0) return format_error(error, format, "decimal precision is not a number");
  if (r < 0) return format_error(error, format, "decimal precision is out of range");
  if (*p != ',') {
    return format_error(error, format, "decimal needs precision and scale");
  }
  p++;
  r = read_int(&p, 1, INT32_MIN, INT32_MAX, &scale);
  if (r == 0) return format_error(error, format, "decimal scale is not a number");
  if (r < 0) return format_error(error, format, "decimal scale is out of range");
  if (*p == ',') {
    p++;
    r = read_int(&p, 0, 0, 1024, &bits);
    if (r == 0) return format_error(error, format, "decimal bit width is not a number");
    if (r < 0 || decimal_max_precision(bits) == 0) {
      return format_error(error, format, "decimal bit width must be 32, 64, 128 or 256");
    }
  }
  int32_t max_precision = decimal_max_precision(bits);
  if (precision < 1 || precision > max_precision) {
    return format_error(error, format, "decimal%d precision %lld is outside 1..%d",
                        (int)bits, (long long)precision, (int)max_precision);
  }
  set_fixed_width(out, FERRY_TYPE_DECIMAL, bits);
  out->decimal_precision = (int32_t)precision;
  out->decimal_scale = (int32_t)scale;
  *end = p;
  return FERRY_OK;
}

/* ":N" after "w" or "+w"; N is a non-negative int32. */
static int parse_fixed_size(const char* format, const char* p, const char* what,
                            int64_t* size, const char** end, struct FerryError* error) {
  if (*p != ':') return format_error(error, format, "%s needs ':N' with a size", what);
  p++;
  int r = read_int(&p, 0, 0, INT32_MAX, size);
  if (r == 0) return format_error(error, format, "%s size is not a number", what);
  if (r < 0) return format_error(error, format, "%s size is out of range", what);
  *end = p;
  return FERRY_OK;
}

/* ":I,J,..." after "+ud" / "+us"; `p` points at the ':'. */
static int parse_union(const char* format, const char* p, struct FerryFormat* out,
                       const char** end, struct FerryError* error) {
  if (*p != ':') {
    return format_error(error, format, "union needs ':' and a list of type ids");
  }
  p++;
  out->union_type_list = p;
  uint8_t seen[FERRY_FORMAT_MAX_UNION_TYPES] = {0};
  int32_t n = 0;
  if (*p != '\0') {
    for (;;) {
      int64_t id = 0;
      int r = read_int(&p, 0, 0, FERRY_FORMAT_MAX_UNION_TYPES - 1, &id);
      if (r == 0) {
        return format_error(error, format, "union type id %d is not a number", (int)n);
      }
      if (r < 0) {
        return format_error(error, format, "union type id %d is outside 0..127", (int)n);
      }
      if (seen[id]) {
        return format_error(error, format, "union type id %lld appears twice",
                            (long long)id);
      }
      seen[id] = 1;
      n++;
      if (*p != ',') break;
      p++;
    }
  }
  out->n_union_types = n;
  out->n_children = n;
  *end = p;
  return FERRY_OK;
}

static char time_unit_of(char c) {
  return (c == 's' || c == 'm' || c == 'u' || c == 'n') ? c : 0;
}

/* The fixed-width temporal formats of two characters: td?, tt? (time_unit
 * set as well) and ti?. */
struct FerryTemporalCode {
  char kind;
  char unit;
  enum FerryTypeId type;
  int64_t bit_width;
};
static const struct FerryTemporalCode kTemporalCodes[] = {
    {'d', 'D', FERRY_TYPE_DATE32, 32},
    {'d', 'm', FERRY_TYPE_DATE64, 64},
    {'t', 's', FERRY_TYPE_TIME32, 32},
    {'t', 'm', FERRY_TYPE_TIME32, 32},
    {'t', 'u', FERRY_TYPE_TIME64, 64},
    {'t', 'n', FERRY_TYPE_TIME64, 64},
    {'i', 'M', FERRY_TYPE_INTERVAL_MONTHS, 32},
    {'i', 'D', FERRY_TYPE_INTERVAL_DAY_TIME, 64},
    {'i', 'n', FERRY_TYPE_INTERVAL_MONTH_DAY_NANO, 128},
};

/* Formats starting with 't'; `p` points after the 't'. */
static int parse_temporal(const char* format, const char* p, struct FerryFormat* out,
                          const char** end, struct FerryError* error) {
  char kind = p[0];
  char unit = kind == '\0' ? '\0' : p[1];
  switch (kind) {
    case 'd':
    case 't':
    case 'i':
      for (size_t k = 0; k < sizeof kTemporalCodes / sizeof kTemporalCodes[0]; k++) {
        const struct FerryTemporalCode* code = &kTemporalCodes[k];
        if (code->kind == kind && code->unit == unit) {
          set_fixed_width(out, code->type, code->bit_width);
          if (kind == 't') out->time_unit = unit;
          *end = p + 2;
          return FERRY_OK;
        }
      }
      return format_error(error, format, "%s",
                          kind == 'd'   ? "date unit must be 'D' (days) or 'm' (ms)"
                          : kind == 't' ? "time unit must be one of s, m, u, n"
                                        : "interval unit must be 'M', 'D' or 'n'");
    case 's':
      if (time_unit_of(unit) == 0) {
        return format_error(error, format, "timestamp unit must be one of s, m, u, n");
      }
      if (p[2] != ':') {
        return format_error(error, format,
                            "timestamp needs ':' after the unit (then an optional "
                            "timezone)");
      }
      set_fixed_width(out, FERRY_TYPE_TIMESTAMP, 64);
      out->time_unit = unit;
      /* The timezone is the rest of the string, possibly empty. */
      out->timezone = p[3] == '\0' ? NULL : p + 3;
      *end = p + 3 + strlen(p + 3);
      return FERRY_OK;
    case 'D':
      if (time_unit_of(unit) == 0) {
        return format_error(error, format, "duration unit must be one of s, m, u, n");
      }
      set_fixed_width(out, FERRY_TYPE_DURATION, 64);
      out->time_unit = unit;
      *end = p + 2;
      return FERRY_OK;
    default:
      return format_error(error, format,
                          "unknown temporal type (expected td, tt, ts, tD or ti)");
  }
}

/* The nested formats set_nested describes fully, after the '+': the buffers,
 * the offset width and the number of children (-1: any) of each. */
struct FerryNestedCode {
  const char* code;
  enum FerryTypeId type;
  int32_t n_fixed_buffers;
  int32_t offset_bytes;
  int64_t n_children;
};
static const struct FerryNestedCode kNestedCodes[] = {
    {"l", FERRY_TYPE_LIST, 2, 4, 1},       {"L", FERRY_TYPE_LARGE_LIST, 2, 8, 1},
    {"vl", FERRY_TYPE_LIST_VIEW, 3, 4, 1}, {"vL", FERRY_TYPE_LARGE_LIST_VIEW, 3, 8, 1},
    {"s", FERRY_TYPE_STRUCT, 1, 0, -1},    {"m", FERRY_TYPE_MAP, 2, 4, 1},
};

/* Formats starting with '+'; `p` points after the '+'. */
static int parse_nested(const char* format, const char* p, struct FerryFormat* out,
                        const char** end, struct FerryError* error) {
  for (size_t k = 0; k < sizeof kNestedCodes / sizeof kNestedCodes[0]; k++) {
    const struct FerryNestedCode* code = &kNestedCodes[k];
    size_t length = strlen(code->code);
    if (strncmp(p, code->code, length) == 0) {
      set_nested(out, code->type, code->n_fixed_buffers, code->offset_bytes,
                 code->n_children);
      *end = p + length;
      return FERRY_OK;
    }
  }
  switch (p[0]) {
    case 'v': return format_error(error, format, "list view must be \"+vl\" or \"+vL\"");
    case 'w': {
      int64_t size = 0;
      FERRY_RETURN_NOT_OK(
          parse_fixed_size(format, p + 1, "fixed-size list", &size, end, error));
      set_nested(out, FERRY_TYPE_FIXED_SIZE_LIST, 1, 0, 1);
      out->fixed_size = size;
      return FERRY_OK;
    }
    case 'u':
      if (p[1] == 'd') {
        out->type = FERRY_TYPE_DENSE_UNION;
        out->n_fixed_buffers = 2;
        out->roles[0] = FERRY_BUFFER_TYPE_IDS;
        out->roles[1] = FERRY_BUFFER_UNION_OFFSETS;
      } else if (p[1] == 's') {
        out->type = FERRY_TYPE_SPARSE_UNION;
        out->n_fixed_buffers = 1;
        out->roles[0] = FERRY_BUFFER_TYPE_IDS;
      } else {
        return format_error(error, format, "union must be \"+ud:...\" or \"+us:...\"");
      }
      return parse_union(format, p + 2, out, end, error);
    case 'r':
      out->type = FERRY_TYPE_RUN_END_ENCODED;
      out->n_fixed_buffers = 0;
      out->n_children = 2;
      *end = p + 1;
      return FERRY_OK;
    default:
      return format_error(error, format,
                          "unknown nested type (expected +l, +L, +vl, +vL, +w, +s, +m, "
                          "+ud, +us or +r)");
  }
}

static int parse_general(const char* format, struct FerryFormat* out,
                         struct FerryError* error);

/* The one-character formats (the primitive types most columns have), parsed
 * once: a parse of one is then a copy. */
static struct FerryFormat g_single[128];
static unsigned char g_single_ok[128];
static pthread_once_t g_single_once = PTHREAD_ONCE_INIT;

static void parse_single_characters(void) {
  for (int c = 1; c < 128; c++) {
    char text[2] = {(char)c, '\0'};
    /* No pointer into `text` survives: only longer formats have a timezone
     * or a union type list. */
    g_single_ok[c] = parse_general(text, &g_single[c], NULL) == FERRY_OK;
  }
}

int ferry__format_parse(const char* format, struct FerryFormat* out,
                       struct FerryError* error) {
  if (format != NULL && format[0] > 0 && format[1] == '\0') {
    pthread_once(&g_single_once, parse_single_characters);
    if (g_single_ok[(unsigned char)format[0]]) {
      if (out != NULL) *out = g_single[(unsigned char)format[0]];
      return FERRY_OK;
    }
  }
  return parse_general(format, out, error);
}

static int parse_general(const char* format, struct FerryFormat* out,
                         struct FerryError* error) {
  struct FerryFormat parsed;
  memset(&parsed, 0, sizeof parsed);
  if (format == NULL) return ferry__set_error(error, EINVAL, "format is NULL");
  if (format[0] == '\0') return ferry__set_error(error, EINVAL, "format \"\" is empty");

  const char* end = format + 1;
  switch (format[0]) {
    case 'n': parsed.type = FERRY_TYPE_NA; break; /* no buffers at all */
    case 'b': set_fixed_width(&parsed, FERRY_TYPE_BOOL, 1); break;
    case 'c': set_fixed_width(&parsed, FERRY_TYPE_INT8, 8); break;
    case 'C': set_fixed_width(&parsed, FERRY_TYPE_UINT8, 8); break;
    case 's': set_fixed_width(&parsed, FERRY_TYPE_INT16, 16); break;
    case 'S': set_fixed_width(&parsed, FERRY_TYPE_UINT16, 16); break;
    case 'i': set_fixed_width(&parsed, FERRY_TYPE_INT32, 32); break;
    case 'I': set_fixed_width(&parsed, FERRY_TYPE_UINT32, 32); break;
    case 'l': set_fixed_width(&parsed, FERRY_TYPE_INT64, 64); break;
    case 'L': set_fixed_width(&parsed, FERRY_TYPE_UINT64, 64); break;
    case 'e': set_fixed_width(&parsed, FERRY_TYPE_HALF_FLOAT, 16); break;
    case 'f': set_fixed_width(&parsed, FERRY_TYPE_FLOAT, 32); break;
    case 'g': set_fixed_width(&parsed, FERRY_TYPE_DOUBLE, 64); break;
    case 'z': set_variable(&parsed, FERRY_TYPE_BINARY, 4); break;
    case 'Z': set_variable(&parsed, FERRY_TYPE_LARGE_BINARY, 8); break;
    case 'u': set_variable(&parsed, FERRY_TYPE_STRING, 4); break;
    case 'U': set_variable(&parsed, FERRY_TYPE_LARGE_STRING, 8); break;
    case 'v':
      if (format[1] == 'z') {
        set_view(&parsed, FERRY_TYPE_BINARY_VIEW);
      } else if (format[1] == 'u') {
        set_view(&parsed, FERRY_TYPE_STRING_VIEW);
      } else {
        return format_error(error, format, "view type must be \"vz\" or \"vu\"");
      }
      end = format + 2;
      break;
    case 'd':
      FERRY_RETURN_NOT_OK(parse_decimal(format, format + 1, &parsed, &end, error));
      break;
    case 'w': {
      int64_t size = 0;
      FERRY_RETURN_NOT_OK(
          parse_fixed_size(format, format + 1, "fixed-size binary", &size, &end, error));
      set_fixed_width(&parsed, FERRY_TYPE_FIXED_SIZE_BINARY, size * 8);
      parsed.fixed_size = size;
      break;
    }
    case 't':
      FERRY_RETURN_NOT_OK(parse_temporal(format, format + 1, &parsed, &end, error));
      break;
    case '+':
      FERRY_RETURN_NOT_OK(parse_nested(format, format + 1, &parsed, &end, error));
      break;
    default:
      return format_error(error, format, "unknown type '%c'",
                          (format[0] > 0x20 && format[0] < 0x7f) ? format[0] : '?');
  }

  if (*end != '\0') {
    char rest[FERRY_FORMAT_QUOTE_MAX * 4 + 8];
    quote_format(end, rest, sizeof rest);
    return format_error(error, format, "unexpected trailing characters \"%s\"", rest);
  }
  if (out != NULL) *out = parsed;
  return FERRY_OK;
}

void ferry__format_union_type_ids(const struct FerryFormat* format,
                                  int8_t ids[FERRY_FORMAT_MAX_UNION_TYPES]) {
  const char* p = format->union_type_list;
  for (int32_t k = 0; k < format->n_union_types; k++) {
    int64_t id = 0;
    read_int(&p, 0, 0, FERRY_FORMAT_MAX_UNION_TYPES - 1, &id);
    ids[k] = (int8_t)id;
    p++; /* the ',' (or the terminating '\0' after the last id) */
  }
}

int ferry_format_validate(const char* format, struct FerryError* error) {
  struct FerryFormat parsed;
  return ferry__format_parse(format, &parsed, error);
}
