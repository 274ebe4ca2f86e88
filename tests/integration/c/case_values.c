/* The value formula of the cross-language cases. */
#include "case_values.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

uint32_t it_u(uint32_t seed, int64_t i) {
  /* Unsigned 32-bit arithmetic wraps, which is exactly "mod 2^32". */
  return seed * UINT32_C(2654435761) + (uint32_t)(uint64_t)i * UINT32_C(40503);
}

int it_fixed_width(enum it_type type) {
  switch (type) {
    case IT_INT8:
    case IT_UINT8:
      return 1;
    case IT_INT16:
    case IT_UINT16:
      return 2;
    case IT_INT32:
    case IT_UINT32:
    case IT_FLOAT32:
    case IT_DICT_INT32_UTF8:
      return 4;
    case IT_INT64:
    case IT_UINT64:
    case IT_FLOAT64:
      return 8;
    default:
      return 0;
  }
}

uint64_t it_fixed_value_bits(enum it_type type, uint32_t seed, int64_t i) {
  uint32_t u = it_u(seed, i);
  switch (type) {
    case IT_INT8:
    case IT_UINT8:
      return u & 0xFFu;
    case IT_INT16:
    case IT_UINT16:
      return u & 0xFFFFu;
    case IT_INT32:
    case IT_UINT32:
      return u;
    case IT_INT64:
    case IT_UINT64:
      return ((uint64_t)u << 32) | it_u(seed, i + 1);
    case IT_FLOAT32: {
      float value = (float)(int16_t)(uint16_t)(u & 0xFFFFu) / 4.0f;
      uint32_t bits;
      memcpy(&bits, &value, sizeof(bits));
      return bits;
    }
    case IT_FLOAT64: {
      double value = (double)(int32_t)u / 1024.0;
      uint64_t bits;
      memcpy(&bits, &value, sizeof(bits));
      return bits;
    }
    case IT_DICT_INT32_UTF8:
      return u % IT_DICTIONARY_SIZE;
    default:
      return 0;
  }
}

int it_bool_value(uint32_t seed, int64_t i) { return (int)(it_u(seed, i) & 1u); }

int it_utf8_value(uint32_t seed, int64_t i, char* out) {
  if (i % 5 == 0) return 0;
  uint32_t value = it_u(seed, i) % 100000u;
  /* Digits least significant first, then reversed: no sign, no leading zeros. */
  char digits[IT_UTF8_MAX_BYTES];
  int n = 0;
  do {
    digits[n++] = (char)('0' + value % 10);
    value /= 10;
  } while (value != 0);
  for (int k = 0; k < n; k++) out[k] = digits[n - 1 - k];
  return n;
}

int it_list_length(uint32_t seed, int64_t i) { return (int)(it_u(seed, i) % 4u); }

void it_format_fixed_value(enum it_type type, uint64_t bits, char* out, size_t out_size) {
  switch (type) {
    case IT_INT8:
      snprintf(out, out_size, "%d", (int)(int8_t)(uint8_t)bits);
      break;
    case IT_INT16:
      snprintf(out, out_size, "%d", (int)(int16_t)(uint16_t)bits);
      break;
    case IT_INT32:
    case IT_DICT_INT32_UTF8:
      snprintf(out, out_size, "%" PRId32, (int32_t)(uint32_t)bits);
      break;
    case IT_INT64:
      snprintf(out, out_size, "%" PRId64, (int64_t)bits);
      break;
    case IT_FLOAT32: {
      uint32_t raw = (uint32_t)bits;
      float value;
      memcpy(&value, &raw, sizeof(value));
      snprintf(out, out_size, "%.9g (bits 0x%08" PRIx32 ")", (double)value, raw);
      break;
    }
    case IT_FLOAT64: {
      double value;
      memcpy(&value, &bits, sizeof(value));
      snprintf(out, out_size, "%.17g (bits 0x%016" PRIx64 ")", value, bits);
      break;
    }
    default:
      snprintf(out, out_size, "%" PRIu64, bits);
      break;
  }
}

int it_is_null(int64_t nulls, int64_t i) { return nulls > 0 && i % nulls == nulls - 1; }

int64_t it_null_count(int64_t nulls, int64_t length) {
  /* Indices k-1, 2k-1, ... below length: one per complete run of k. */
  return nulls > 0 ? length / nulls : 0;
}
