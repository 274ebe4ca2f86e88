/* The independent oracle of the value formula (see oracle.h). */
#include "oracle.h"

#include <stdio.h>
#include <string.h>

struct type_info {
  const char* format;
  enum conf_layout layout;
  int width;
};

static const struct type_info k_types[IT_TYPE_COUNT] = {
    {"c", LAYOUT_FIXED, 1},
    {"s", LAYOUT_FIXED, 2},
    {"i", LAYOUT_FIXED, 4},
    {"l", LAYOUT_FIXED, 8},
    {"C", LAYOUT_FIXED, 1},
    {"S", LAYOUT_FIXED, 2},
    {"I", LAYOUT_FIXED, 4},
    {"L", LAYOUT_FIXED, 8},
    {"f", LAYOUT_FIXED, 4},
    {"g", LAYOUT_FIXED, 8},
    {"b", LAYOUT_BOOL, 0},
    {"u", LAYOUT_VARBIN, 0},
    {"z", LAYOUT_VARBIN, 0},
    {"+l", LAYOUT_LIST, 0},
    {"+s", LAYOUT_STRUCT, 0},
    {"i", LAYOUT_DICT, 4},
};

const char* conf_type_format(enum it_type type) { return k_types[type].format; }
enum conf_layout conf_type_layout(enum it_type type) { return k_types[type].layout; }
int conf_type_width(enum it_type type) { return k_types[type].width; }

uint32_t conf_u(uint32_t seed, uint64_t i) {
  /* Unsigned 32-bit arithmetic wraps, which is exactly "mod 2^32". */
  return seed * 2654435761u + (uint32_t)i * 40503u;
}

int conf_is_null(int64_t nulls, int64_t i) { return nulls > 0 && i % nulls == nulls - 1; }

int64_t conf_null_count(int64_t nulls, int64_t length) {
  return nulls > 0 ? length / nulls : 0;
}

int conf_fixed_value(enum it_type type, uint32_t seed, int64_t i,
                     unsigned char out[8]) {
  uint32_t v = conf_u(seed, (uint64_t)i);
  uint64_t wide = ((uint64_t)v << 32) | conf_u(seed, (uint64_t)i + 1);
  int width = k_types[type].width;
  switch (type) {
    case IT_FLOAT32: {
      float f = (float)(int16_t)(uint16_t)(v & 0xFFFFu) / 4.0f;
      memcpy(out, &f, 4);
      return 4;
    }
    case IT_FLOAT64: {
      double d = (double)(int32_t)v / 1024.0;
      memcpy(out, &d, 8);
      return 8;
    }
    case IT_INT64:
    case IT_UINT64:
      for (int b = 0; b < 8; b++) out[b] = (unsigned char)(wide >> (8 * b));
      return 8;
    default:
      /* The low 8/16/32 bits, little-endian: two's complement needs no work. */
      for (int b = 0; b < width; b++) out[b] = (unsigned char)(v >> (8 * b));
      return width;
  }
}

int conf_bool_value(uint32_t seed, int64_t i) {
  return (int)(conf_u(seed, (uint64_t)i) & 1u);
}

int conf_utf8_value(uint32_t seed, int64_t i, char out[8]) {
  if (i % 5 == 0) return 0;
  char tmp[16];
  int n =
      snprintf(tmp, sizeof tmp, "%u", (unsigned)(conf_u(seed, (uint64_t)i) % 100000u));
  memcpy(out, tmp, (size_t)n);
  return n;
}
