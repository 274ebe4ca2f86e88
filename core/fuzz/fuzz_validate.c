/* libFuzzer target: ferry_validate_device_array at FULL on CPU arrays built
 * from the input.
 *
 * The input chooses types (nested up to a few levels), lengths, offsets,
 * null counts, buffer counts, NULL buffers and every byte of every buffer:
 * offsets, union ids, views, run ends and validity bits are arbitrary. What
 * the input cannot do is lie about memory: every buffer is allocated at the
 * size its own array's length and offset require, variable-size data is as
 * large as the largest offset, and variadic sizes are the real sizes. So any
 * fault or sanitizer report is the validator reading what it must not.
 *
 * Issue 20's shapes: an array may declare more children than its table
 * (and its schema) holds; a length-0 array's offsets, sizes and data may be
 * 0-byte blocks (which the sanitizer guards) or NULL; the root schema may
 * carry metadata whose header lies (fuzz_input.h). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ferry/ferry.h"
#include "format.h"
#include "fuzz_input.h"

#define MAX_DEPTH 4
#define MAX_ALLOCATIONS 4096

/* Everything built for one input, freed at the end. */
static void* g_allocations[MAX_ALLOCATIONS];
static int g_n_allocations;

static void* arena_alloc(size_t size) {
  if (g_n_allocations >= MAX_ALLOCATIONS) return NULL;
  void* p = calloc(1, size == 0 ? 1 : size);
  if (p != NULL) g_allocations[g_n_allocations++] = p;
  return p;
}

/* A block of exactly 0 bytes: a sanitizer reports any read of it. */
static void* arena_alloc_empty(void) {
  if (g_n_allocations >= MAX_ALLOCATIONS) return NULL;
  void* p = malloc(0);
  if (p != NULL) g_allocations[g_n_allocations++] = p;
  return p;
}

static void* arena_alloc_sized(int64_t size) { return arena_alloc((size_t)size); }

static void arena_free_all(void) {
  for (int i = 0; i < g_n_allocations; i++) free(g_allocations[i]);
  g_n_allocations = 0;
}

/* A buffer of `size` bytes filled from the input. */
static void* fuzz_buffer(struct input* in, int64_t size) {
  uint8_t* p = (uint8_t*)arena_alloc((size_t)size);
  if (p == NULL) return NULL;
  for (int64_t i = 0; i < size; i++) p[i] = take(in);
  return p;
}

static void mark_schema_released(struct ArrowSchema* s) { s->release = NULL; }
static void mark_array_released(struct ArrowArray* a) { a->release = NULL; }

/* The formats a node may take, chosen by its type byte: the leaf layouts
 * (all a node at MAX_DEPTH may take, so the tree stays finite), then the
 * nested layouts and three malformed formats. */
static const char* const kLeafFormats[] = {
    "n",   "b",   "c",       "C",      "s",        "S",   "i",   "I",
    "l",   "L",   "e",       "f",      "g",        "z",   "Z",   "vz",
    "u",   "U",   "vu",      "d:10,2", "d:5,1,32", "w:3", "tdD", "tdm",
    "tts", "ttu", "tsu:UTC", "tDn",    "tiM",      "tiD", "tin"};
static const char* const kOtherFormats[] = {"+l",   "+L", "+vl",     "+vL",     "+w:2",
                                            "+s",   "+m", "+ud:0,3", "+us:1,2", "+r",
                                            "+ud:", "ii", "d:99,1",  "+w:0"};
#define N_LEAF_FORMATS (sizeof kLeafFormats / sizeof kLeafFormats[0])
#define N_OTHER_FORMATS (sizeof kOtherFormats / sizeof kOtherFormats[0])

/* Offsets of width `width` for n = offset + length + 1 entries: a running
 * sum of small signed steps, so they may decrease or go negative, but stay
 * small; `*max_out` is the largest value, the size of the data they index. */
static void* fuzz_offsets(struct input* in, int64_t n, int32_t width, int64_t* max_out) {
  uint8_t* p = (uint8_t*)arena_alloc((size_t)(n * width));
  if (p == NULL) return NULL;
  *max_out = fuzz_fill_offsets(in, p, n, width, n * width);
  return p;
}

static int build(struct input* in, int depth, struct ArrowSchema* schema,
                 struct ArrowArray* array);

/* Child schemas and arrays, both `n` of them. */
static int build_children(struct input* in, int depth, int64_t n,
                          struct ArrowSchema* schema, struct ArrowArray* array) {
  schema->n_children = n;
  array->n_children = n;
  if (n == 0) return 0;
  schema->children = (struct ArrowSchema**)arena_alloc((size_t)n * sizeof(void*));
  array->children = (struct ArrowArray**)arena_alloc((size_t)n * sizeof(void*));
  if (schema->children == NULL || array->children == NULL) return -1;
  for (int64_t i = 0; i < n; i++) {
    schema->children[i] = (struct ArrowSchema*)arena_alloc(sizeof(struct ArrowSchema));
    array->children[i] = (struct ArrowArray*)arena_alloc(sizeof(struct ArrowArray));
    if (schema->children[i] == NULL || array->children[i] == NULL) return -1;
    if (build(in, depth + 1, schema->children[i], array->children[i]) != 0) return -1;
  }
  return 0;
}

static int build(struct input* in, int depth, struct ArrowSchema* schema,
                 struct ArrowArray* array) {
  uint8_t type_byte = take(in);
  /* Deep levels only get flat types, so the tree stays finite. */
  size_t n_choices =
      depth >= MAX_DEPTH ? N_LEAF_FORMATS : N_LEAF_FORMATS + N_OTHER_FORMATS;
  size_t choice = type_byte % n_choices;
  const char* format = choice < N_LEAF_FORMATS ? kLeafFormats[choice]
                                               : kOtherFormats[choice - N_LEAF_FORMATS];
  memset(schema, 0, sizeof *schema);
  memset(array, 0, sizeof *array);
  schema->format = format;
  schema->name = "f";
  schema->flags = (take(in) & 0x10) ? 0x8 : ARROW_FLAG_NULLABLE;
  schema->release = mark_schema_released;
  array->release = mark_array_released;

  uint8_t shape = take(in);
  array->length = (shape & 0x80) && (shape & 0x40) ? -1 : (int64_t)(take(in) % 17);
  array->offset = (shape & 0x20) ? (int64_t)(take(in) % 5) : 0;
  int64_t n = array->length < 0 ? 0 : array->length + array->offset;

  struct FerryFormat f;
  if (ferry__format_parse(format, &f, NULL) != FERRY_OK) {
    /* Invalid on purpose: no layout to honour; a couple of small buffers. */
    array->n_buffers = take(in) % 3;
    array->buffers = (const void**)arena_alloc(3 * sizeof(void*));
    for (int64_t i = 0; i < array->n_buffers; i++) array->buffers[i] = fuzz_buffer(in, 8);
    array->null_count = 0;
    return 0;
  }

  int64_t n_variadic = f.is_view ? take(in) % 3 : 0;
  int64_t n_buffers = f.n_fixed_buffers + (f.is_view ? n_variadic + 1 : 0);
  /* Sometimes a wrong count (extra slots are real, small buffers). */
  if ((shape & 0x0F) == 0x0F) n_buffers += 1;
  if ((shape & 0x0F) == 0x0E && n_buffers > 0) n_buffers -= 1;
  array->n_buffers = n_buffers;
  array->buffers = (const void**)arena_alloc((size_t)(n_buffers + 1) * sizeof(void*));
  if (array->buffers == NULL) return -1;

  int64_t zero_bits = 0;
  int64_t data_max = 0;
  uint8_t null_mask = take(in);
  /* shape bit 0x10 on a length-0 array: its offsets, sizes and data are
   * 0-byte blocks, or NULL when null_mask bit 0x40 is set too. */
  int empty = (shape & 0x10) && array->length == 0;
  for (int32_t i = 0; i < f.n_fixed_buffers && i < n_buffers; i++) {
    const void* buffer = NULL;
    switch (f.roles[i]) {
      case FERRY_BUFFER_VALIDITY: {
        if (null_mask & 1) break; /* no bitmap */
        uint8_t* bits = (uint8_t*)fuzz_buffer(in, (n + 7) / 8);
        if (bits == NULL) return -1;
        for (int64_t k = array->offset; k < n; k++)
          zero_bits += !((bits[k / 8] >> (k % 8)) & 1);
        buffer = bits;
        break;
      }
      case FERRY_BUFFER_DATA: buffer = fuzz_buffer(in, (n * f.bit_width + 7) / 8); break;
      case FERRY_BUFFER_OFFSETS:
        buffer = fuzz_offsets(in, n + 1, f.offset_bytes, &data_max);
        break;
      case FERRY_BUFFER_SIZES: buffer = fuzz_buffer(in, n * f.offset_bytes); break;
      case FERRY_BUFFER_VAR_DATA: buffer = fuzz_buffer(in, data_max); break;
      case FERRY_BUFFER_TYPE_IDS: buffer = fuzz_buffer(in, n); break;
      case FERRY_BUFFER_UNION_OFFSETS: buffer = fuzz_buffer(in, 4 * n); break;
      case FERRY_BUFFER_VIEWS: buffer = fuzz_buffer(in, 16 * n); break;
    }
    if (empty && (f.roles[i] == FERRY_BUFFER_OFFSETS || f.roles[i] == FERRY_BUFFER_SIZES ||
                  f.roles[i] == FERRY_BUFFER_VAR_DATA)) {
      buffer = (null_mask & 0x40) ? NULL : arena_alloc_empty();
    }
    /* Occasionally drop a required buffer (bit i + 1 of the mask). */
    if ((null_mask >> (i + 1)) & 1 && (null_mask & 0x80)) buffer = NULL;
    array->buffers[i] = buffer;
  }
  if (f.is_view && n_buffers >= f.n_fixed_buffers + 1) {
    int64_t real_variadic = n_buffers - f.n_fixed_buffers - 1;
    int64_t* sizes = (int64_t*)arena_alloc((size_t)(real_variadic + 1) * 8);
    if (sizes == NULL) return -1;
    for (int64_t k = 0; k < real_variadic; k++) {
      sizes[k] = take(in) % 40;
      array->buffers[f.n_fixed_buffers + k] = fuzz_buffer(in, sizes[k]);
    }
    array->buffers[n_buffers - 1] = sizes;
  } else {
    for (int64_t i = f.n_fixed_buffers; i < n_buffers; i++)
      array->buffers[i] = fuzz_buffer(in, 8);
  }

  /* null_count: honest, unknown, or arbitrary. */
  uint8_t count_choice = take(in);
  if (count_choice < 200) {
    array->null_count =
        array->buffers != NULL && n_buffers > 0 && f.n_fixed_buffers > 0 &&
                f.roles[0] == FERRY_BUFFER_VALIDITY && array->buffers[0] != NULL
            ? zero_bits
            : 0;
  } else if (count_choice < 230) {
    array->null_count = -1;
  } else {
    array->null_count = (int8_t)take(in);
  }

  int64_t n_children = f.n_children >= 0 ? f.n_children : take(in) % 4;
  uint8_t count_byte = take(in);
  if (count_byte == 0xFF) n_children = take(in) % 3; /* sometimes the wrong count */
  if (build_children(in, depth, n_children, schema, array) != 0) return -1;
  /* 0xFE: the array declares more children than its table (exactly
   * n_children long) and its schema hold. */
  if (count_byte == 0xFE) array->n_children += (take(in) & 1) ? 2 : INT64_C(1) << 40;

  /* Dictionary encoding for integer indices, sometimes on one side only. */
  if (f.type >= FERRY_TYPE_INT8 && f.type <= FERRY_TYPE_UINT64 && depth < MAX_DEPTH) {
    uint8_t dictionary_choice = take(in);
    if (dictionary_choice & 1) {
      struct ArrowSchema* ds = (struct ArrowSchema*)arena_alloc(sizeof *ds);
      struct ArrowArray* da = (struct ArrowArray*)arena_alloc(sizeof *da);
      if (ds == NULL || da == NULL || build(in, MAX_DEPTH, ds, da) != 0) return -1;
      if (!(dictionary_choice & 2)) schema->dictionary = ds;
      if (!(dictionary_choice & 4)) array->dictionary = da;
    }
  }
  return 0;
}

static void ignore_finding(void* user_data, const char* rule, const char* where,
                           const char* what) {
  int64_t* count = (int64_t*)user_data;
  (*count)++;
  if (rule == NULL || where == NULL || what == NULL) abort();
  if (strncmp(where, "root", 4) != 0) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  struct input in = {data, size};
  struct ArrowSchema schema;
  struct ArrowDeviceArray array;
  memset(&array, 0, sizeof array);
  if (build(&in, 0, &schema, &array.array) == 0) {
    schema.metadata = fuzz_metadata(take(&in), arena_alloc_sized);
    array.device_type = ARROW_DEVICE_CPU;
    array.device_id = -1;
    if (take(&in) == 0xAA) array.reserved[0] = 1;
    int64_t findings = 0;
    struct FerryError error;
    ferry_error_init(&error);
    int rc = ferry_validate_device_array(&schema, &array, FERRY_VALIDATE_FULL,
                                         ignore_finding, &findings, &error);
    /* The result and the callback must agree. */
    if ((rc == FERRY_OK) != (findings == 0)) abort();
    if (rc != FERRY_OK && error.message[0] == '\0') abort();
    ferry_validate_schema(&schema, NULL, NULL, NULL);
  }
  arena_free_all();
  return 0;
}
