/* The suite's independent reading of the case grammar and value formula. */
#include "conf_case.h"

#include <stdio.h>
#include <string.h>

struct type_info {
  const char* name;
  const char* format;
  enum conf_layout layout;
  int width;
};

static const struct type_info k_types[CONF_TYPE_COUNT] = {
    {"int8", "c", LAYOUT_FIXED, 1},
    {"int16", "s", LAYOUT_FIXED, 2},
    {"int32", "i", LAYOUT_FIXED, 4},
    {"int64", "l", LAYOUT_FIXED, 8},
    {"uint8", "C", LAYOUT_FIXED, 1},
    {"uint16", "S", LAYOUT_FIXED, 2},
    {"uint32", "I", LAYOUT_FIXED, 4},
    {"uint64", "L", LAYOUT_FIXED, 8},
    {"float32", "f", LAYOUT_FIXED, 4},
    {"float64", "g", LAYOUT_FIXED, 8},
    {"bool", "b", LAYOUT_BOOL, 0},
    {"utf8", "u", LAYOUT_VARBIN, 0},
    {"binary", "z", LAYOUT_VARBIN, 0},
    {"list_int32", "+l", LAYOUT_LIST, 0},
    {"struct_int32_utf8", "+s", LAYOUT_STRUCT, 0},
    {"dict_int32_utf8", "i", LAYOUT_DICT, 4},
};

const char* conf_type_name(enum conf_type type) { return k_types[type].name; }
const char* conf_type_format(enum conf_type type) { return k_types[type].format; }
enum conf_layout conf_type_layout(enum conf_type type) { return k_types[type].layout; }
int conf_type_width(enum conf_type type) { return k_types[type].width; }

uint32_t conf_u(uint32_t seed, uint64_t i) {
  /* Unsigned 32-bit arithmetic wraps, which is exactly "mod 2^32". */
  return seed * 2654435761u + (uint32_t)i * 40503u;
}

int conf_is_null(int64_t nulls, int64_t i) { return nulls > 0 && i % nulls == nulls - 1; }

int64_t conf_null_count(int64_t nulls, int64_t length) {
  return nulls > 0 ? length / nulls : 0;
}

int conf_fixed_value(enum conf_type type, uint32_t seed, int64_t i,
                     unsigned char out[8]) {
  uint32_t v = conf_u(seed, (uint64_t)i);
  uint64_t wide = ((uint64_t)v << 32) | conf_u(seed, (uint64_t)i + 1);
  int width = k_types[type].width;
  switch (type) {
    case CONF_FLOAT32: {
      float f = (float)(int16_t)(uint16_t)(v & 0xFFFFu) / 4.0f;
      memcpy(out, &f, 4);
      return 4;
    }
    case CONF_FLOAT64: {
      double d = (double)(int32_t)v / 1024.0;
      memcpy(out, &d, 8);
      return 8;
    }
    case CONF_INT64:
    case CONF_UINT64:
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

/* Plain decimal digits only; fails on empty, sign, junk or overflow of `max`. */
static int parse_number(const char* s, size_t n, uint64_t max, uint64_t* out) {
  if (n == 0) return -1;
  uint64_t v = 0;
  for (size_t k = 0; k < n; k++) {
    if (s[k] < '0' || s[k] > '9') return -1;
    uint64_t d = (uint64_t)(s[k] - '0');
    if (v > (max - d) / 10) return -1;
    v = v * 10 + d;
  }
  *out = v;
  return 0;
}

static int set_device(struct conf_case* c, const char* v, size_t n) {
  static const struct {
    const char* name;
    ArrowDeviceType type;
  } devices[] = {{"cpu", ARROW_DEVICE_CPU},
                 {"sim", ARROW_DEVICE_EXT_DEV},
                 {"cuda", ARROW_DEVICE_CUDA},
                 {"rocm", ARROW_DEVICE_ROCM}};
  for (size_t k = 0; k < sizeof devices / sizeof devices[0]; k++) {
    if (strlen(devices[k].name) == n && memcmp(devices[k].name, v, n) == 0) {
      snprintf(c->device, sizeof c->device, "%s", devices[k].name);
      c->device_type = devices[k].type;
      return 0;
    }
  }
  return -1;
}

int conf_case_parse(const char* text, struct conf_case* out, char* why, size_t why_size) {
  memset(out, 0, sizeof *out);
  snprintf(out->text, sizeof out->text, "%s", text);
  out->length = 16;
  out->seed = 1;
  out->batches = 3;
  snprintf(out->device, sizeof out->device, "cpu");
  out->device_type = ARROW_DEVICE_CPU;

  const char* colon = strchr(text, ':');
  size_t type_len = colon ? (size_t)(colon - text) : strlen(text);
  int found = 0;
  for (int t = 0; t < CONF_TYPE_COUNT; t++) {
    if (strlen(k_types[t].name) == type_len &&
        memcmp(k_types[t].name, text, type_len) == 0) {
      out->type = (enum conf_type)t;
      found = 1;
    }
  }
  if (!found) {
    snprintf(why, why_size, "unknown type \"%.*s\"", (int)type_len, text);
    return -1;
  }
  const char* p = colon;
  while (p != NULL) {
    const char* key = p + 1;
    const char* next = strchr(key, ':');
    size_t item_len = next ? (size_t)(next - key) : strlen(key);
    const char* eq = memchr(key, '=', item_len);
    if (eq == NULL) {
      snprintf(why, why_size, "missing '=' in \"%.*s\"", (int)item_len, key);
      return -1;
    }
    size_t key_len = (size_t)(eq - key);
    const char* v = eq + 1;
    size_t vn = item_len - key_len - 1;
    uint64_t num = 0;
    int bad = 0;
#define KEY_IS(word) (key_len == strlen(word) && memcmp(key, word, key_len) == 0)
    if (KEY_IS("length")) {
      bad = parse_number(v, vn, INT64_MAX, &num);
      out->length = (int64_t)num;
    } else if (KEY_IS("nulls")) {
      bad = parse_number(v, vn, INT64_MAX, &num);
      out->nulls = (int64_t)num;
    } else if (KEY_IS("seed")) {
      bad = parse_number(v, vn, UINT32_MAX, &num);
      out->seed = (uint32_t)num;
    } else if (KEY_IS("offset")) {
      bad = parse_number(v, vn, INT64_MAX, &num);
      out->offset = (int64_t)num;
    } else if (KEY_IS("batches")) {
      bad = parse_number(v, vn, INT64_MAX, &num);
      out->batches = (int64_t)num;
    } else if (KEY_IS("device")) {
      bad = set_device(out, v, vn);
    } else if (KEY_IS("fail")) {
      if (vn == 6 && memcmp(v, "export", 6) == 0) {
        out->fail = CONF_FAIL_EXPORT;
      } else if (vn == 10 && memcmp(v, "get_schema", 10) == 0) {
        out->fail = CONF_FAIL_GET_SCHEMA;
      } else if (vn > 9 && memcmp(v, "get_next@", 9) == 0) {
        out->fail = CONF_FAIL_GET_NEXT;
        bad = parse_number(v + 9, vn - 9, INT64_MAX, &num) || num == 0;
        out->fail_n = (int64_t)num;
      } else {
        bad = 1;
      }
    } else {
      snprintf(why, why_size, "unknown key \"%.*s\"", (int)key_len, key);
      return -1;
    }
#undef KEY_IS
    if (bad) {
      snprintf(why, why_size, "bad value \"%.*s\"", (int)item_len, key);
      return -1;
    }
    p = next;
  }
  return 0;
}
