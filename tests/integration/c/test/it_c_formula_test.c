/* The value formula, checked against the test's own reference computation
 * (64-bit arithmetic reduced by hand, snprintf for digits), by reading the
 * raw buffers of CPU exports: this proves the producer independently of the
 * plugin's checker, which shares the producer's formula code. */
#include "it_test_support.h"

/* ---- reference ----------------------------------------------------------- */

static uint32_t ref_u(uint32_t seed, uint64_t i) {
  uint64_t wide = (uint64_t)seed * 2654435761ull + i * 40503ull;
  return (uint32_t)(wide % 4294967296ull);
}

static int64_t ref_signed(uint64_t raw, int bits) {
  uint64_t half = 1ull << (bits - 1);
  return raw >= half ? (int64_t)(raw - half) - (int64_t)half : (int64_t)raw;
}

static double ref_float32(uint32_t seed, uint64_t i) {
  return (double)ref_signed(ref_u(seed, i) % 65536u, 16) * 0.25;
}

static double ref_float64(uint32_t seed, uint64_t i) {
  return (double)ref_signed(ref_u(seed, i), 32) / 1024.0;
}

static void ref_utf8(uint32_t seed, uint64_t i, char* out) {
  if (i % 5 == 0) {
    out[0] = '\0';
  } else {
    snprintf(out, 16, "%lu", (unsigned long)(ref_u(seed, i) % 100000u));
  }
}

static int bit(const void* bitmap, int64_t i) {
  return (((const uint8_t*)bitmap)[i / 8] >> (i % 8)) & 1;
}

/* ---- hand-computed spot checks -------------------------------------------- */

FERRY_TEST(reference_spot_values) {
  CHECK_EQ_INT(2654435761u, ref_u(1, 0));
  CHECK_EQ_INT(2654435761u + 40503u, ref_u(1, 1));
  CHECK_EQ_INT(202515, ref_u(0, 5));
  /* seed 2: 2 * 2654435761 = 5308871522 = 2^32 + 1013904226. */
  CHECK_EQ_INT(1013904226u, ref_u(2, 0));
  char text[16];
  ref_utf8(0, 6, text);
  CHECK_STR("43018", text); /* 6 * 40503 = 243018 */
  ref_utf8(0, 5, text);
  CHECK_STR("", text);
  /* float32 of u = 0x...FFFF: int16 -1 / 4. */
  CHECK(ref_signed(0xFFFF, 16) == -1);
}

FERRY_TEST(int32_seed_1_first_values) {
  struct ArrowSchema schema;
  struct ArrowDeviceArray array;
  EXPORT_ARRAY_OK("int32:length=3", &schema, &array);
  const int32_t* values = array.array.buffers[1];
  CHECK_EQ_INT(-1640531535, values[0]); /* 2654435761 - 2^32 */
  CHECK_EQ_INT(-1640491032, values[1]); /* + 40503 */
  CHECK_EQ_INT(-1640450529, values[2]);
  ferry_schema_release(&schema);
  ferry_device_array_release(&array);
}

FERRY_TEST(utf8_seed_0_values) {
  struct ArrowSchema schema;
  struct ArrowDeviceArray array;
  EXPORT_ARRAY_OK("utf8:seed=0:length=7", &schema, &array);
  const int32_t* offsets = array.array.buffers[1];
  const char* data = array.array.buffers[2];
  CHECK_EQ_INT(0, offsets[1] - offsets[0]); /* i = 0: "" */
  CHECK_EQ_INT(5, offsets[2] - offsets[1]); /* i = 1: "40503" */
  CHECK(memcmp(data + offsets[1], "40503", 5) == 0);
  CHECK_EQ_INT(5, offsets[3] - offsets[2]); /* i = 2: 81006 -> "81006" */
  CHECK(memcmp(data + offsets[2], "81006", 5) == 0);
  CHECK_EQ_INT(5, offsets[4] - offsets[3]); /* i = 3: 121509 -> "21509" */
  CHECK(memcmp(data + offsets[3], "21509", 5) == 0);
  CHECK_EQ_INT(0, offsets[6] - offsets[5]); /* i = 5: "" */
  ferry_schema_release(&schema);
  ferry_device_array_release(&array);
}

/* ---- every type, every element, several seeds -------------------------- */

/* Compares logical element i of a fixed-width export with the reference. */
static void check_fixed_element(const char* type, const void* values, int64_t p,
                                uint32_t seed, int64_t i) {
  uint32_t u = ref_u(seed, (uint64_t)i);
  char message[256];
  snprintf(message, sizeof message, "%s seed %u element %lld", type, seed, (long long)i);
  int ok = 1;
  if (strcmp(type, "int8") == 0)
    ok = ((const int8_t*)values)[p] == ref_signed(u % 256u, 8);
  if (strcmp(type, "uint8") == 0) ok = ((const uint8_t*)values)[p] == u % 256u;
  if (strcmp(type, "int16") == 0)
    ok = ((const int16_t*)values)[p] == ref_signed(u % 65536u, 16);
  if (strcmp(type, "uint16") == 0) ok = ((const uint16_t*)values)[p] == u % 65536u;
  if (strcmp(type, "int32") == 0) ok = ((const int32_t*)values)[p] == ref_signed(u, 32);
  if (strcmp(type, "uint32") == 0) ok = ((const uint32_t*)values)[p] == u;
  if (strcmp(type, "int64") == 0 || strcmp(type, "uint64") == 0) {
    uint64_t expected = (uint64_t)u * 4294967296ull + ref_u(seed, (uint64_t)i + 1);
    ok = ((const uint64_t*)values)[p] == expected;
  }
  if (strcmp(type, "float32") == 0) {
    /* Bit-exact: the reference value is exactly representable. */
    float expected = (float)ref_float32(seed, (uint64_t)i);
    ok = memcmp(&((const float*)values)[p], &expected, 4) == 0;
  }
  if (strcmp(type, "float64") == 0) {
    double expected = ref_float64(seed, (uint64_t)i);
    ok = memcmp(&((const double*)values)[p], &expected, 8) == 0;
  }
  if (strcmp(type, "bool") == 0) ok = bit(values, p) == (int)(u % 2u);
  if (strcmp(type, "dict_int32_utf8") == 0)
    ok = ((const int32_t*)values)[p] == (int32_t)(u % 7u);
  if (!ok) ferry_test_fail(__FILE__, __LINE__, message);
}

static void check_utf8_element(const int32_t* offsets, const char* data, int64_t p,
                               uint32_t seed, int64_t i) {
  char expected[16];
  ref_utf8(seed, (uint64_t)i, expected);
  int32_t n = offsets[p + 1] - offsets[p];
  if (n != (int32_t)strlen(expected) ||
      memcmp(data + offsets[p], expected, (size_t)n) != 0) {
    char message[256];
    snprintf(message, sizeof message, "utf8 seed %u element %lld: expected \"%s\"", seed,
             (long long)i, expected);
    ferry_test_fail(__FILE__, __LINE__, message);
  }
}

/* Exports `type` with the given seed, nulls and offset and compares every
 * element, validity bit and count with the reference. */
static void check_export_against_reference(const char* type, uint32_t seed,
                                           int64_t length, int64_t nulls,
                                           int64_t offset) {
  char spec[128];
  snprintf(spec, sizeof spec, "%s:seed=%u:length=%lld:nulls=%lld:offset=%lld", type, seed,
           (long long)length, (long long)nulls, (long long)offset);
  struct ArrowSchema schema;
  struct ArrowDeviceArray array;
  EXPORT_ARRAY_OK(spec, &schema, &array);
  const struct ArrowArray* a = &array.array;
  CHECK_STR(type, schema.name);
  CHECK(schema.flags & ARROW_FLAG_NULLABLE);
  CHECK_EQ_INT(length, a->length);
  CHECK_EQ_INT(offset, a->offset);
  int64_t expected_nulls = 0;
  for (int64_t i = 0; i < length; i++)
    expected_nulls += nulls > 0 && (i + 1) % nulls == 0;
  CHECK_EQ_INT(expected_nulls, a->null_count);
  if (nulls == 0) CHECK(a->buffers[0] == NULL);

  for (int64_t i = 0; i < length; i++) {
    int64_t p = offset + i;
    int is_null = nulls > 0 && (i + 1) % nulls == 0;
    if (nulls > 0) CHECK_EQ_INT(!is_null, bit(a->buffers[0], p));
    if (is_null) continue;
    if (strcmp(type, "utf8") == 0 || strcmp(type, "binary") == 0) {
      check_utf8_element(a->buffers[1], a->buffers[2], p, seed, i);
    } else if (strcmp(type, "list_int32") == 0) {
      const int32_t* offsets = a->buffers[1];
      const int32_t* items = a->children[0]->buffers[1];
      CHECK_EQ_INT(ref_u(seed, (uint64_t)i) % 4u, offsets[p + 1] - offsets[p]);
      for (int32_t j = offsets[p]; j < offsets[p + 1]; j++) {
        CHECK_EQ_INT(ref_signed(ref_u(seed, (uint64_t)j), 32), items[j]);
      }
    } else if (strcmp(type, "struct_int32_utf8") == 0) {
      /* Field values at child position i + offset, "b" with seed + 1. */
      check_fixed_element("int32", a->children[0]->buffers[1], p, seed, i);
      check_utf8_element(a->children[1]->buffers[1], a->children[1]->buffers[2], p,
                         seed + 1, i);
    } else {
      check_fixed_element(type, a->buffers[1], p, seed, i);
    }
  }
  if (strcmp(type, "dict_int32_utf8") == 0) {
    const struct ArrowArray* d = a->dictionary;
    CHECK_EQ_INT(7, d->length);
    for (int k = 0; k < 7; k++) {
      char expected[4];
      snprintf(expected, sizeof expected, "d%d", k);
      const int32_t* offsets = d->buffers[1];
      CHECK_EQ_INT(2, offsets[k + 1] - offsets[k]);
      CHECK(memcmp((const char*)d->buffers[2] + offsets[k], expected, 2) == 0);
    }
  }
  ferry_schema_release(&schema);
  ferry_device_array_release(&array);
}

FERRY_TEST(every_type_matches_the_reference) {
  const uint32_t seeds[] = {0, 1, 7, 2654435761u, 4294967295u};
  for (int t = 0; t < IT_TEST_N_TYPES; t++) {
    for (int s = 0; s < 5; s++) {
      check_export_against_reference(it_test_types[t], seeds[s], 200, 0, 0);
      check_export_against_reference(it_test_types[t], seeds[s], 101, 3, 5);
      check_export_against_reference(it_test_types[t], seeds[s], 50, 1, 2);
    }
  }
}

/* Garbage in null and pre-offset slots never equals the formula, so a
 * checker that compares null slots or ignores the offset fails. */
FERRY_TEST(null_and_pre_offset_slots_hold_no_formula_values) {
  struct ArrowSchema schema;
  struct ArrowDeviceArray array;
  EXPORT_ARRAY_OK("int32:length=30:nulls=3:offset=5", &schema, &array);
  const int32_t* values = array.array.buffers[1];
  for (int64_t p = 0; p < 5; p++)
    CHECK(values[p] != ref_signed(ref_u(1, (uint64_t)p), 32));
  for (int64_t i = 2; i < 30; i += 3)
    CHECK(values[5 + i] != ref_signed(ref_u(1, (uint64_t)i), 32));
  ferry_schema_release(&schema);
  ferry_device_array_release(&array);
}

FERRY_TEST(schema_names_and_formats) {
  const char* formats[] = {"c", "s", "i", "l", "C", "S",  "I",  "L",
                           "f", "g", "b", "u", "z", "+l", "+s", "i"};
  for (int t = 0; t < IT_TEST_N_TYPES; t++) {
    struct ArrowSchema schema;
    struct ArrowDeviceArray array;
    EXPORT_ARRAY_OK(it_test_types[t], &schema, &array);
    CHECK_STR(formats[t], schema.format);
    CHECK_STR(it_test_types[t], schema.name);
    CHECK(schema.flags & ARROW_FLAG_NULLABLE);
    if (strcmp(it_test_types[t], "list_int32") == 0) {
      CHECK_EQ_INT(1, schema.n_children);
      CHECK_STR("item", schema.children[0]->name);
      CHECK_STR("i", schema.children[0]->format);
      CHECK(schema.children[0]->flags & ARROW_FLAG_NULLABLE);
    } else if (strcmp(it_test_types[t], "struct_int32_utf8") == 0) {
      CHECK_EQ_INT(2, schema.n_children);
      CHECK_STR("a", schema.children[0]->name);
      CHECK_STR("b", schema.children[1]->name);
      CHECK_STR("u", schema.children[1]->format);
    } else if (strcmp(it_test_types[t], "dict_int32_utf8") == 0) {
      CHECK(schema.dictionary != NULL);
      CHECK_STR("u", schema.dictionary->format);
    } else {
      CHECK_EQ_INT(0, schema.n_children);
      CHECK(schema.dictionary == NULL);
    }
    ferry_schema_release(&schema);
    ferry_device_array_release(&array);
  }
}

FERRY_TEST_MAIN()
