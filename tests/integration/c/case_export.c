/* Builds case arrays: a plan of host buffers first, then the device copies,
 * then the ArrowArray tree pointing at them. */
#include "case_export.h"

#include <errno.h>
#include <string.h>

#include "case_values.h"
#include "export_memory.h"
#include "plugin_state.h"

/* ---- schema ------------------------------------------------------------ */

static const char* type_format(enum it_type type) {
  static const char* const formats[IT_TYPE_COUNT] = {
      "c", "s", "i", "l", "C", "S", "I", "L", "f", "g", "b", "u", "z", "+l", "+s", "i"};
  return formats[type];
}

int it_export_schema(const struct it_case* c, struct ArrowSchema* out,
                     struct FerryError* error) {
  int64_t n_children = c->type == IT_LIST_INT32          ? 1
                       : c->type == IT_STRUCT_INT32_UTF8 ? 2
                                                         : 0;
  int rc = ferry_schema_init(out, type_format(c->type), it_type_name(c->type),
                             ARROW_FLAG_NULLABLE, n_children, error);
  if (rc != FERRY_OK) return rc;
  if (c->type == IT_LIST_INT32) {
    rc = ferry_schema_init(ferry_schema_child(out, 0), "i", "item", ARROW_FLAG_NULLABLE,
                           0, error);
  } else if (c->type == IT_STRUCT_INT32_UTF8) {
    rc = ferry_schema_init(ferry_schema_child(out, 0), "i", "a", ARROW_FLAG_NULLABLE, 0,
                           error);
    if (rc == FERRY_OK) {
      rc = ferry_schema_init(ferry_schema_child(out, 1), "u", "b", ARROW_FLAG_NULLABLE, 0,
                             error);
    }
  } else if (c->type == IT_DICT_INT32_UTF8) {
    struct ArrowSchema* dictionary = NULL;
    rc = ferry_schema_allocate_dictionary(out, &dictionary, error);
    if (rc == FERRY_OK) {
      rc = ferry_schema_init(dictionary, "u", NULL, ARROW_FLAG_NULLABLE, 0, error);
    }
  }
  if (rc != FERRY_OK) ferry_schema_release(out);
  return rc;
}

/* ---- garbage ------------------------------------------------------------ */

/* splitmix64: deterministic bytes for slots whose content is unspecified. */
static uint64_t garbage(uint32_t seed, int64_t slot) {
  uint64_t z = ((uint64_t)seed << 32) ^ (uint64_t)slot ^ UINT64_C(0x9E3779B97F4A7C15);
  z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
  return z ^ (z >> 31);
}

/* A slot holds a formula value only when it is a logical element that is not
 * null; `nulls` is the case's rule (a struct child follows its parent's). */
static int slot_is_garbage(int64_t physical, int64_t offset, int64_t nulls) {
  return physical < offset || it_is_null(nulls, physical - offset);
}

/* ---- buffer builders ------------------------------------------------------ */

/* Where the layout of one ArrowArray comes from: indices into the export
 * memory (-1 for a NULL buffer). */
struct it_array_plan {
  int64_t length;
  int64_t null_count;
  int64_t offset;
  int64_t n_buffers;
  int buffers[3];
};

struct it_export_plan {
  struct it_array_plan top;
  int64_t n_children;
  struct it_array_plan children[2];
  int has_dictionary;
  struct it_array_plan dictionary;
};

static void set_bit(uint8_t* bitmap, int64_t i, int value) {
  if (value) {
    bitmap[i >> 3] |= (uint8_t)(1u << (i & 7));
  } else {
    bitmap[i >> 3] &= (uint8_t) ~(1u << (i & 7));
  }
}

/* Validity bitmap of `length` elements after `offset` slots; -1 when nulls=0. */
static int build_validity(struct it_export_memory* memory, uint32_t seed, int64_t length,
                          int64_t offset, int64_t nulls, int* index,
                          struct FerryError* error) {
  *index = -1;
  if (nulls == 0) return FERRY_OK;
  uint8_t* bitmap = NULL;
  int rc =
      it_memory_add(memory, (offset + length + 7) / 8, (void**)&bitmap, index, error);
  if (rc != FERRY_OK) return rc;
  for (int64_t p = 0; p < offset; p++) set_bit(bitmap, p, (int)(garbage(seed, p) & 1));
  for (int64_t i = 0; i < length; i++) set_bit(bitmap, offset + i, !it_is_null(nulls, i));
  return FERRY_OK;
}

static void store_fixed(void* base, int width, int64_t slot, uint64_t bits) {
  uint8_t* at = (uint8_t*)base + slot * width;
  switch (width) {
    case 1: {
      uint8_t v = (uint8_t)bits;
      memcpy(at, &v, 1);
      break;
    }
    case 2: {
      uint16_t v = (uint16_t)bits;
      memcpy(at, &v, 2);
      break;
    }
    case 4: {
      uint32_t v = (uint32_t)bits;
      memcpy(at, &v, 4);
      break;
    }
    default:
      memcpy(at, &bits, 8);
      break;
  }
}

/* Fixed-width values (also dict indices and the int32 child "a"): formula at
 * logical i in slot offset + i, garbage elsewhere that differs from the
 * formula of the same logical index (dict indices stay in 0..6, so garbage
 * never makes an index invalid). */
static int build_fixed(struct it_export_memory* memory, enum it_type type, uint32_t seed,
                       int64_t length, int64_t offset, int64_t nulls, int* index,
                       struct FerryError* error) {
  int width = it_fixed_width(type);
  void* values = NULL;
  int rc = it_memory_add(memory, (offset + length) * width, &values, index, error);
  if (rc != FERRY_OK) return rc;
  uint64_t mask = width == 8 ? UINT64_MAX : (UINT64_C(1) << (8 * width)) - 1;
  for (int64_t p = 0; p < offset + length; p++) {
    int64_t logical = p - offset;
    if (!slot_is_garbage(p, offset, nulls)) {
      store_fixed(values, width, p, it_fixed_value_bits(type, seed, logical));
      continue;
    }
    /* Garbage at a pre-offset slot p differs from the formula at logical p
     * too, so reading physical p as logical p fails. */
    int64_t compared = p < offset ? p : logical;
    uint64_t formula = it_fixed_value_bits(type, seed, compared);
    uint64_t noise = garbage(seed, p);
    uint64_t bits =
        type == IT_DICT_INT32_UTF8
            ? (formula + 1 + noise % (IT_DICTIONARY_SIZE - 1)) % IT_DICTIONARY_SIZE
            : (formula ^ (noise | 1)) & mask;
    store_fixed(values, width, p, bits);
  }
  return FERRY_OK;
}

static int build_bool(struct it_export_memory* memory, uint32_t seed, int64_t length,
                      int64_t offset, int64_t nulls, int* index,
                      struct FerryError* error) {
  uint8_t* bits = NULL;
  int rc = it_memory_add(memory, (offset + length + 7) / 8, (void**)&bits, index, error);
  if (rc != FERRY_OK) return rc;
  for (int64_t p = 0; p < offset + length; p++) {
    int64_t logical = p - offset;
    int64_t compared = p < offset ? p : logical;
    int value = it_bool_value(seed, compared);
    set_bit(bits, p, slot_is_garbage(p, offset, nulls) ? !value : value);
  }
  return FERRY_OK;
}

/* The bytes of slot p of a utf8 array: the formula, or 1 to 3 characters that
 * are not digits (valid UTF-8, never equal to a formula value). */
static int utf8_slot(uint32_t seed, int64_t p, int64_t offset, int64_t nulls, char* out) {
  if (!slot_is_garbage(p, offset, nulls)) return it_utf8_value(seed, p - offset, out);
  uint64_t noise = garbage(seed, p);
  int n = 1 + (int)(noise % 3);
  for (int k = 0; k < n; k++) out[k] = "#?~xyz"[(noise >> (8 * (k + 1))) % 6];
  return n;
}

static int build_utf8(struct it_export_memory* memory, uint32_t seed, int64_t length,
                      int64_t offset, int64_t nulls, int* offsets_index, int* data_index,
                      struct FerryError* error) {
  int64_t slots = offset + length;
  int32_t* offsets = NULL;
  int rc = it_memory_add(memory, (slots + 1) * 4, (void**)&offsets, offsets_index, error);
  if (rc != FERRY_OK) return rc;
  char value[IT_UTF8_MAX_BYTES];
  int64_t total = 0;
  for (int64_t p = 0; p < slots; p++) {
    offsets[p] = (int32_t)total;
    total += utf8_slot(seed, p, offset, nulls, value);
  }
  offsets[slots] = (int32_t)total;
  char* data = NULL;
  rc = it_memory_add(memory, total, (void**)&data, data_index, error);
  if (rc != FERRY_OK) return rc;
  for (int64_t p = 0; p < slots; p++) {
    int n = utf8_slot(seed, p, offset, nulls, value);
    memcpy(data + offsets[p], value, (size_t)n);
  }
  return FERRY_OK;
}

/* List offsets: u(i) mod 4 items for valid lists, 1 to 3 (garbage) for null
 * and pre-offset lists; the int32 child holds u(j) at every position j. */
static int build_list(struct it_export_memory* memory, uint32_t seed, int64_t length,
                      int64_t offset, int64_t nulls, int* offsets_index,
                      struct it_array_plan* child, struct FerryError* error) {
  int64_t slots = offset + length;
  int32_t* offsets = NULL;
  int rc = it_memory_add(memory, (slots + 1) * 4, (void**)&offsets, offsets_index, error);
  if (rc != FERRY_OK) return rc;
  int64_t total = 0;
  for (int64_t p = 0; p < slots; p++) {
    offsets[p] = (int32_t)total;
    total += slot_is_garbage(p, offset, nulls) ? 1 + (int64_t)(garbage(seed, p) % 3)
                                               : it_list_length(seed, p - offset);
  }
  offsets[slots] = (int32_t)total;
  *child =
      (struct it_array_plan){.length = total, .n_buffers = 2, .buffers = {-1, -1, -1}};
  return build_fixed(memory, IT_INT32, seed, total, 0, 0, &child->buffers[1], error);
}

static int build_dictionary(struct it_export_memory* memory, struct it_array_plan* plan,
                            struct FerryError* error) {
  *plan = (struct it_array_plan){
      .length = IT_DICTIONARY_SIZE, .n_buffers = 3, .buffers = {-1, -1, -1}};
  int32_t* offsets = NULL;
  char* data = NULL;
  int rc = it_memory_add(memory, (IT_DICTIONARY_SIZE + 1) * 4, (void**)&offsets,
                         &plan->buffers[1], error);
  if (rc == FERRY_OK) {
    rc = it_memory_add(memory, 2 * IT_DICTIONARY_SIZE, (void**)&data, &plan->buffers[2],
                       error);
  }
  if (rc != FERRY_OK) return rc;
  for (int k = 0; k < IT_DICTIONARY_SIZE; k++) {
    offsets[k] = 2 * k;
    data[2 * k] = 'd';
    data[2 * k + 1] = (char)('0' + k);
  }
  offsets[IT_DICTIONARY_SIZE] = 2 * IT_DICTIONARY_SIZE;
  return FERRY_OK;
}

/* Fills every host buffer of case `c` and describes the arrays in `plan`. */
static int build_plan(const struct it_case* c, uint32_t seed,
                      struct it_export_memory* memory, struct it_export_plan* plan,
                      struct FerryError* error) {
  const int64_t length = c->length, offset = c->offset, nulls = c->nulls;
  memset(plan, 0, sizeof(*plan));
  struct it_array_plan* top = &plan->top;
  *top = (struct it_array_plan){.length = length,
                                .null_count = it_null_count(nulls, length),
                                .offset = offset,
                                .buffers = {-1, -1, -1}};
  int rc = build_validity(memory, seed, length, offset, nulls, &top->buffers[0], error);
  if (rc != FERRY_OK) return rc;

  switch (c->type) {
    case IT_BOOL:
      top->n_buffers = 2;
      return build_bool(memory, seed, length, offset, nulls, &top->buffers[1], error);
    case IT_UTF8:
    case IT_BINARY:
      top->n_buffers = 3;
      return build_utf8(memory, seed, length, offset, nulls, &top->buffers[1],
                        &top->buffers[2], error);
    case IT_LIST_INT32:
      top->n_buffers = 2;
      plan->n_children = 1;
      return build_list(memory, seed, length, offset, nulls, &top->buffers[1],
                        &plan->children[0], error);
    case IT_STRUCT_INT32_UTF8: {
      /* Children are offset-free and as long as the parent's slots; the
       * parent's offset and nulls decide where their garbage goes. */
      top->n_buffers = 1;
      plan->n_children = 2;
      struct it_array_plan* a = &plan->children[0];
      struct it_array_plan* b = &plan->children[1];
      *a = (struct it_array_plan){
          .length = offset + length, .n_buffers = 2, .buffers = {-1, -1, -1}};
      *b = (struct it_array_plan){
          .length = offset + length, .n_buffers = 3, .buffers = {-1, -1, -1}};
      rc = build_fixed(memory, IT_INT32, seed, length, offset, nulls, &a->buffers[1],
                       error);
      if (rc != FERRY_OK) return rc;
      return build_utf8(memory, seed + 1, length, offset, nulls, &b->buffers[1],
                        &b->buffers[2], error);
    }
    case IT_DICT_INT32_UTF8:
      top->n_buffers = 2;
      plan->has_dictionary = 1;
      rc = build_fixed(memory, IT_DICT_INT32_UTF8, seed, length, offset, nulls,
                       &top->buffers[1], error);
      if (rc != FERRY_OK) return rc;
      return build_dictionary(memory, &plan->dictionary, error);
    default:
      top->n_buffers = 2;
      return build_fixed(memory, c->type, seed, length, offset, nulls, &top->buffers[1],
                         error);
  }
}

/* ---- arrays ------------------------------------------------------------ */

static int init_from_plan(struct ArrowArray* out, const struct it_array_plan* plan,
                          int64_t n_children, const struct it_export_memory* memory,
                          FerryReleaseHook hook, void* user_data,
                          struct FerryError* error) {
  const void* buffers[3];
  for (int k = 0; k < 3; k++) buffers[k] = it_memory_pointer(memory, plan->buffers[k]);
  return ferry_array_init(out, plan->length, plan->null_count, plan->offset,
                          plan->n_buffers, buffers, n_children, hook, user_data, error);
}

int it_export_array(const struct it_case* c, uint32_t seed, struct FerryDevice* device,
                    struct ArrowDeviceArray* out, struct FerryError* error) {
  struct it_export_memory* memory = NULL;
  int rc = it_memory_create(device, &memory, error);
  if (rc != FERRY_OK) return rc;
  struct it_export_plan plan;
  rc = build_plan(c, seed, memory, &plan, error);
  if (rc == FERRY_OK) rc = it_memory_place(memory, error);
  struct ArrowArray top;
  memset(&top, 0, sizeof(top));
  if (rc == FERRY_OK) {
    rc = init_from_plan(&top, &plan.top, plan.n_children, memory, it_memory_release,
                        memory, error);
  }
  if (rc != FERRY_OK) {
    /* The hook was not installed, so the memory is still ours to free. */
    it_memory_release(memory);
    return rc;
  }

  /* From here on releasing `top` frees everything through the hook. */
  for (int64_t k = 0; k < plan.n_children && rc == FERRY_OK; k++) {
    rc = init_from_plan(ferry_array_child(&top, k), &plan.children[k], 0, memory, NULL,
                        NULL, error);
  }
  if (rc == FERRY_OK && plan.has_dictionary) {
    struct ArrowArray* dictionary = NULL;
    rc = ferry_array_allocate_dictionary(&top, &dictionary, error);
    if (rc == FERRY_OK) {
      rc = init_from_plan(dictionary, &plan.dictionary, 0, memory, NULL, NULL, error);
    }
  }
  if (rc == FERRY_OK) {
    if (device == NULL) {
      rc = ferry_device_array_init(out, &top, ARROW_DEVICE_CPU, -1, NULL, NULL, NULL,
                                   error);
    } else {
      rc = ferry_device_array_init_async(out, &top, device, memory->stream,
                                         FERRY_SYNC_RECORD_EVENT, error);
    }
  }
  if (rc != FERRY_OK) ferry_array_release(&top);
  return rc;
}
