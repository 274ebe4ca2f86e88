/* libFuzzer target: a hostile producer (issue 15). The input builds a graph
 * of schemas and arrays the way an attacker's producer would: any format,
 * wrong buffer and child counts, NULL and released nodes, children and
 * dictionaries shared between parents or pointing back at an ancestor, huge
 * lengths and offsets, memory on the CPU or on the sim device; then a DLPack
 * tensor with fuzzed fields. Everything ferry offers a consumer runs on it:
 *
 *   - ferry_validate_schema, ferry_validate_device_array at DEFAULT and FULL:
 *     the return code and the findings agree; a DEFAULT finding is a FULL
 *     finding too; a clean schema prepares (ferry_prepared_schema_create)
 *     and ferry_validate_prepared finds as many findings at each level, a
 *     schema with findings does not prepare;
 *   - when FULL finds nothing: ferry_array_buffer_size of every buffer of
 *     every node succeeds and never exceeds the bytes actually allocated
 *     behind the buffer; the deep copy to the CPU and to the sim succeeds and
 *     its result validates at FULL; the DLPack round trip of a fixed-width
 *     copy gives back the same values;
 *   - the deep copy fails only where FULL validation has a finding (they
 *     follow one rule), or where a sim array holds memory the sim did not
 *     allocate (another ext_dev producer's: accepted as unknown device
 *     memory, never read, so not copied either);
 *   - issue 20's shapes: an array declaring more children than its table
 *     (and its schema) holds, length-0 arrays whose offsets, sizes and data
 *     buffers are NULL or 0-byte blocks, schema metadata whose header lies
 *     (fuzz_input.h); prepared validation at FULL finds what the one-shot
 *     validation finds except the metadata findings (a prepared schema
 *     keeps no metadata);
 *   - the DLPack import refuses or accepts the fuzzed tensor; when accepted
 *     on the sim, a FULL-valid import lies inside its allocation (or outside
 *     every sim allocation: unknown ext_dev memory);
 *   - nothing ferry makes outlives the input (live exports and sim
 *     allocations back to where they were), the producer's own release
 *     callbacks are never called by ferry (it only borrows them), and the
 *     tensor's deleter runs exactly once when the import took it, never when
 *     it was refused.
 *
 * What the input cannot do is lie about CPU memory: no consumer can tell how
 * large a host buffer is (docs/validation.md), so CPU buffers are allocated
 * at the size their own node's layout, length and offset require. Sim
 * buffers may be any size: the sim knows its allocations, and neither the
 * validator nor the copy may read past them (sim allocations are exact, so
 * AddressSanitizer sees any such read). Exponential or endless walks are
 * caught by libFuzzer's per-input timeout (scripts/fuzz.sh). The grammar of
 * the input is described next to each `take`; core/fuzz/hostile_seeds.py
 * writes the seed corpus (the reproducers) in it. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ferry/dlpack_abi.h"
#include "ferry/ferry.h"
#include "format.h"
#include "fuzz_input.h"

#define MAX_NODES 48
#define MAX_RECORDS 8192
#define MAX_HONEST_BYTES 4096 /* larger buffers are not allocated at all */

/* ---- memory the harness allocates, with its real size ---------------------- */

struct record {
  void* ptr;
  int64_t size;
  int on_sim; /* freed with ferry_device_deallocate */
};

static struct record g_records[MAX_RECORDS];
static int g_n_records;
static struct FerryDevice* g_sim;
static struct FerryDevice* g_cpu;

static void* record(void* ptr, int64_t size, int on_sim) {
  if (ptr == NULL) return NULL;
  if (g_n_records == MAX_RECORDS) abort(); /* the grammar bounds this */
  g_records[g_n_records++] = (struct record){ptr, size, on_sim};
  return ptr;
}

static void* cpu_alloc(int64_t size) {
  return record(calloc(1, (size_t)(size == 0 ? 1 : size)), size, 0);
}

/* A block of exactly 0 bytes (malloc(0)): unlike cpu_alloc(0), a sanitizer
 * reports any read of it. */
static void* empty_alloc(void) { return record(malloc(0), 0, 0); }

static void* sim_alloc(int64_t size) {
  void* ptr = NULL;
  if (ferry_device_allocate(g_sim, size, &ptr, NULL) != FERRY_OK) return NULL;
  return record(ptr, size, 1);
}

static void free_records(void) {
  for (int i = 0; i < g_n_records; i++) {
    if (g_records[i].on_sim) {
      if (ferry_device_deallocate(g_sim, g_records[i].ptr, NULL) != FERRY_OK) abort();
    } else {
      free(g_records[i].ptr);
    }
  }
  g_n_records = 0;
}

/* Bytes from `ptr` to the end of the harness allocation holding it; -1 when
 * no allocation of the harness holds it. */
static int64_t available(const void* ptr) {
  uintptr_t p = (uintptr_t)ptr;
  for (int i = 0; i < g_n_records; i++) {
    uintptr_t start = (uintptr_t)g_records[i].ptr;
    if (p >= start && p <= start + (uintptr_t)g_records[i].size) {
      return g_records[i].size - (int64_t)(p - start);
    }
  }
  return -1;
}

/* available() for sim allocations only: -1 when `ptr` is in none of them
 * (then it is not sim memory: another ext_dev producer's, to the sim). */
static int64_t sim_available(const void* ptr) {
  uintptr_t p = (uintptr_t)ptr;
  for (int i = 0; i < g_n_records; i++) {
    uintptr_t start = (uintptr_t)g_records[i].ptr;
    if (g_records[i].on_sim && p >= start && p <= start + (uintptr_t)g_records[i].size) {
      return g_records[i].size - (int64_t)(p - start);
    }
  }
  return -1;
}

/* ---- the graph ------------------------------------------------------------- */

static const char* const kFormats[] = {
    "+s",  "i",   "u",    "vu",      "n",       "b",    "c",   "C",        "s",
    "S",   "I",   "l",    "L",       "e",       "f",    "g",   "z",        "Z",
    "vz",  "U",   "d:10,2", "d:5,1,32", "w:3",  "tdD",  "tdm", "tts",      "ttu",
    "tsu:UTC", "tDn", "tiM", "tiD",   "tin",     "+l",   "+L",  "+vl",      "+vL",
    "+w:2", "+m", "+ud:0,3", "+us:1,2", "+r",   "+ud:", "ii",  "d:99,1",   "+w:0"};
#define N_FORMATS (sizeof kFormats / sizeof kFormats[0])

/* Lengths and offsets beyond any real buffer (index by the low 3 bits). */
static const int64_t kHuge[8] = {-1,
                                 INT64_C(1) << 20,
                                 INT64_C(1) << 31,
                                 INT64_C(1) << 40,
                                 INT64_MAX / 8,
                                 INT64_MAX / 2,
                                 INT64_MAX - 1,
                                 INT64_MAX};

struct node {
  struct ArrowSchema schema;
  struct ArrowArray array_storage;
  struct ArrowArray* array; /* node 0's is the device array's own */
  struct FerryFormat layout;
  int has_layout;
  int diverge; /* the schema's links are read separately */
  int64_t table_children; /* entries of the children tables (<= array->n_children) */
  int empty_mode; /* length 0: 1 = 0-byte offsets/sizes/data, 2 = NULL ones */
};

static struct node g_nodes[MAX_NODES];
static int g_n_nodes;
static int g_next_fresh;
static struct ArrowDeviceArray g_device_array;
static struct ArrowSchema g_released_schema;
static struct ArrowArray g_released_array;
static int g_on_sim;
static int g_foreign; /* a sim array holds memory the sim did not allocate */
static int64_t g_producer_releases;
static int64_t g_metadata_findings; /* of the last validate() */

/* The producer's release callbacks: ferry only borrows the graph, so it must
 * never call them (counted, checked to stay 0). */
static void producer_schema_release(struct ArrowSchema* s) {
  g_producer_releases++;
  s->release = NULL;
}
static void producer_array_release(struct ArrowArray* a) {
  g_producer_releases++;
  a->release = NULL;
}

/* `size` bytes filled from the input: honest CPU memory, or for a sim array
 * sim memory of an input-chosen size (or host memory, or NULL). Returns the
 * buffer and, in *allocated, how many bytes it really has. */
static void* make_buffer(struct input* in, int64_t needed, int64_t* allocated) {
  uint8_t placement = take(in);
  int64_t size = needed;
  void* ptr = NULL;
  if (!g_on_sim) {
    if (placement == 0xFF || needed > MAX_HONEST_BYTES) return NULL;
    ptr = cpu_alloc(needed);
  } else {
    switch (placement & 3) {
      case 0: /* honest when possible */
        if (size > MAX_HONEST_BYTES) size = take(in) % 64;
        ptr = sim_alloc(size);
        break;
      case 1: /* short */
        size = take(in) % 64;
        ptr = sim_alloc(size);
        break;
      case 2: /* host memory in a sim array: another ext_dev producer's */
        if (size > MAX_HONEST_BYTES) return NULL;
        ptr = cpu_alloc(size);
        g_foreign |= ptr != NULL;
        break;
      default: return NULL;
    }
  }
  if (ptr == NULL) return NULL;
  for (int64_t i = 0; i < size; i++) ((uint8_t*)ptr)[i] = take(in);
  if (allocated != NULL) *allocated = size;
  return ptr;
}

/* Offsets buffer of n entries of `width` bytes: a running sum of small
 * signed steps (they may decrease or go negative); *max_out is the largest. */
static void* make_offsets(struct input* in, int64_t n, int32_t width, int64_t* max_out) {
  int64_t allocated = 0;
  uint8_t* p = (uint8_t*)make_buffer(in, n * width, &allocated);
  *max_out = 0;
  if (p == NULL) return NULL;
  *max_out = fuzz_fill_offsets(in, p, n, width, allocated);
  return p;
}

/* Node fields, in input order: format, flags, length, offset, children
 * count, then the buffers of its layout, then variadic buffers (views). */
static void build_node(struct input* in, int k) {
  struct node* node = &g_nodes[k];
  const char* format = kFormats[take(in) % N_FORMATS];
  uint8_t flags = take(in);
  node->array = k == 0 ? &g_device_array.array : &node->array_storage;
  struct ArrowSchema* schema = &node->schema;
  struct ArrowArray* array = node->array;
  memset(schema, 0, sizeof *schema);
  memset(array, 0, sizeof *array);
  schema->format = format;
  schema->name = "f";
  schema->flags = (flags & 0x01) ? 0x40 : ARROW_FLAG_NULLABLE;
  schema->release = producer_schema_release;
  array->release = producer_array_release;
  node->diverge = (flags & 0x08) != 0;
  node->has_layout = ferry__format_parse(format, &node->layout, NULL) == FERRY_OK;

  uint8_t length_byte = take(in);
  uint8_t offset_byte = take(in);
  array->length = length_byte < 0xF0 ? length_byte % 17 : kHuge[length_byte & 7];
  /* 0xEE and 0xDD (length 0 either way): the buffers a length-0 array need
   * not have are 0-byte blocks or NULL (issue 20). */
  node->empty_mode = length_byte == 0xEE ? 1 : length_byte == 0xDD ? 2 : 0;
  array->offset = offset_byte < 0xF0 ? offset_byte % 5 : kHuge[offset_byte & 7];
  uint8_t children_byte = take(in);
  int64_t n_children = node->has_layout && node->layout.n_children >= 0
                           ? node->layout.n_children
                           : children_byte % 4;
  if (children_byte >= 0xF0) n_children = children_byte & 3;
  schema->n_children = n_children;
  array->n_children = n_children;
  node->table_children = n_children;
  /* 0xE8..0xEF: the array declares more children than its table (and its
   * schema) holds; the table is exactly n_children long (issue 20). On the
   * CPU only, where every array is read with its own node's schema: on the
   * sim a node may be read with another node's schema, which may declare
   * as many children as the array's lie, and a count both sides declare is
   * trusted by every consumer (the table is host memory of unknown size). */
  static const int64_t kExtraChildren[4] = {1, 2, INT64_C(1) << 40, INT64_MAX / 2};
  if (!g_on_sim && children_byte >= 0xE8 && children_byte < 0xF0) {
    array->n_children = n_children + kExtraChildren[children_byte & 3];
  }
  if (n_children > 0) {
    schema->children = (struct ArrowSchema**)cpu_alloc(n_children * sizeof(void*));
    array->children = (struct ArrowArray**)cpu_alloc(n_children * sizeof(void*));
  }

  /* Buffers. n = offset + length when both are sane, else 0 (then every
   * buffer that would need it is left NULL). */
  int sane = array->length >= 0 && array->offset >= 0 &&
             array->length <= INT64_MAX / 32 - array->offset;
  int64_t n = sane ? array->offset + array->length : 0;
  const struct FerryFormat* f = &node->layout;
  int64_t n_fixed = node->has_layout ? f->n_fixed_buffers : take(in) % 3;
  int64_t n_variadic = node->has_layout && f->is_view ? take(in) % 3 : 0;
  int64_t n_buffers = n_fixed + (node->has_layout && f->is_view ? n_variadic + 1 : 0);
  if ((flags & 0x40) != 0) n_buffers += 1;
  if ((flags & 0x80) != 0 && n_buffers > 0) n_buffers -= 1;
  array->n_buffers = n_buffers;
  array->buffers = (const void**)cpu_alloc((n_buffers + 1) * (int64_t)sizeof(void*));
  int64_t zero_bits = 0;
  int have_validity = 0;
  int64_t data_max = 0;
  for (int64_t i = 0; i < n_fixed && i < n_buffers; i++) {
    if (!node->has_layout || !sane) {
      /* No layout: small buffers nobody may read. Lengths beyond any real
       * buffer: short ones on the sim, none on the CPU (where no consumer
       * could tell). */
      int64_t allocated = 0;
      void* buffer = make_buffer(in, 8, &allocated);
      array->buffers[i] = node->has_layout && !g_on_sim ? NULL : buffer;
      continue;
    }
    const void* buffer = NULL;
    switch (f->roles[i]) {
      case FERRY_BUFFER_VALIDITY: {
        if (take(in) == 0) break; /* no bitmap by default */
        int64_t allocated = 0;
        const uint8_t* bits = (const uint8_t*)make_buffer(in, (n + 7) / 8, &allocated);
        for (int64_t b = array->offset; bits != NULL && b < n && b / 8 < allocated; b++) {
          zero_bits += !((bits[b / 8] >> (b % 8)) & 1);
        }
        have_validity = bits != NULL;
        buffer = bits;
        break;
      }
      case FERRY_BUFFER_DATA:
        buffer = make_buffer(in, (n * f->bit_width + 7) / 8, NULL);
        break;
      case FERRY_BUFFER_OFFSETS: {
        if (node->empty_mode != 0 && array->length == 0) {
          buffer = node->empty_mode == 1 ? (g_on_sim ? sim_alloc(0) : empty_alloc()) : NULL;
          data_max = 0;
          break;
        }
        int is_list_view =
            f->type == FERRY_TYPE_LIST_VIEW || f->type == FERRY_TYPE_LARGE_LIST_VIEW;
        buffer = make_offsets(in, is_list_view ? n : n + 1, f->offset_bytes, &data_max);
        break;
      }
      case FERRY_BUFFER_SIZES:
      case FERRY_BUFFER_VAR_DATA:
        if (node->empty_mode != 0 && array->length == 0) {
          buffer = node->empty_mode == 1 ? (g_on_sim ? sim_alloc(0) : empty_alloc()) : NULL;
          break;
        }
        buffer = make_buffer(
            in, f->roles[i] == FERRY_BUFFER_SIZES ? n * f->offset_bytes : data_max, NULL);
        break;
      case FERRY_BUFFER_TYPE_IDS: buffer = make_buffer(in, n, NULL); break;
      case FERRY_BUFFER_UNION_OFFSETS: buffer = make_buffer(in, 4 * n, NULL); break;
      case FERRY_BUFFER_VIEWS: buffer = make_buffer(in, 16 * n, NULL); break;
    }
    array->buffers[i] = buffer;
  }
  if (node->has_layout && f->is_view && n_buffers >= n_fixed + 1) {
    /* Variadic buffers and their sizes: real sizes on the CPU; on the sim the
     * allocations may be shorter than the sizes say. */
    int64_t real_variadic = n_buffers - n_fixed - 1;
    int64_t* sizes = (int64_t*)cpu_alloc((real_variadic + 1) * 8);
    for (int64_t k2 = 0; k2 < real_variadic; k2++) {
      int64_t declared = take(in) % 40;
      int64_t allocated = 0;
      array->buffers[n_fixed + k2] = make_buffer(in, declared, &allocated);
      sizes[k2] = g_on_sim || array->buffers[n_fixed + k2] == NULL ? declared : allocated;
    }
    void* sizes_buffer = NULL;
    if (take(in) != 0xFF) { /* 0xFF: no sizes buffer */
      int64_t allocated = 0;
      sizes_buffer = make_buffer(in, real_variadic * 8, &allocated);
      int64_t declared_bytes = real_variadic * 8;
      if (sizes_buffer != NULL) {
        memcpy(sizes_buffer, sizes,
               (size_t)(allocated < declared_bytes ? allocated : declared_bytes));
      }
    }
    array->buffers[n_buffers - 1] = sizes_buffer;
  } else {
    for (int64_t i = n_fixed; i < n_buffers; i++) array->buffers[i] = make_buffer(in, 8, NULL);
  }

  /* null_count: honest, unknown, or arbitrary. */
  array->null_count = have_validity ? zero_bits : 0;
  if (flags & 0x20) array->null_count = -1;
  if (flags & 0x10) array->null_count = (int8_t)take(in);
  /* Released nodes keep their pointers: ferry must not follow them. */
  if (flags & 0x02) schema->release = NULL;
  if (flags & 0x04) array->release = NULL;
}

/* A link byte names a child: 0 the next node not linked yet (a tree by
 * default), 0xF0 NULL, 0xF1 a released node, else node (byte - 1) % n, which
 * may be the node itself, an ancestor or a node linked elsewhere too. */
static int link_target(uint8_t link) {
  if (link == 0) return g_next_fresh < g_n_nodes ? g_next_fresh++ : -1;
  if (link == 0xF0) return -1;
  if (link == 0xF1) return -2;
  return (link - 1) % g_n_nodes;
}

static struct ArrowSchema* schema_of(int target) {
  return target == -1 ? NULL : target == -2 ? &g_released_schema : &g_nodes[target].schema;
}

static struct ArrowArray* array_of(int target) {
  return target == -1 ? NULL : target == -2 ? &g_released_array : g_nodes[target].array;
}

/* The schema side of a link whose array side is `array_target`. On the CPU
 * another node's schema would make the consumer read the array's honest
 * buffers with another layout (here or further down its subtree), which no
 * consumer can detect: there the schema side may only be missing or
 * released instead. */
static int schema_target(int array_target, int wanted) {
  if (g_on_sim || wanted < 0 || array_target < 0) return wanted;
  return array_target;
}

/* Children, then the dictionary (byte 0: none). Diverging nodes read a
 * second byte for the schema side of each link. */
static void wire_node(struct input* in, int k) {
  struct node* node = &g_nodes[k];
  for (int64_t j = 0; j < node->table_children; j++) {
    int target = link_target(take(in));
    node->array->children[j] = array_of(target);
    int wanted = node->diverge ? link_target(take(in)) : target;
    node->schema.children[j] = schema_of(schema_target(target, wanted));
  }
  uint8_t dictionary = take(in);
  if (dictionary != 0) {
    int target = link_target(dictionary);
    node->array->dictionary = array_of(target);
    uint8_t schema_side = node->diverge ? take(in) : dictionary;
    node->schema.dictionary =
        schema_side == 0 ? NULL : schema_of(schema_target(target, link_target(schema_side)));
  }
}

/* ---- checks --------------------------------------------------------------- */

static void count_finding(void* user_data, const char* rule, const char* where,
                          const char* what) {
  if (rule == NULL || where == NULL || what == NULL) abort();
  if (strncmp(where, "root", 4) != 0) abort();
  if (strncmp(what, "metadata", 8) == 0) g_metadata_findings++;
  (*(int64_t*)user_data)++;
}

static int64_t g_last_findings; /* of the last validate() */

/* Validates at `level` (through `prepared` when not NULL); aborts unless the
 * code and the findings agree. */
static int validate_with(const struct FerryPreparedSchema* prepared,
                         const struct ArrowSchema* schema,
                         const struct ArrowDeviceArray* array, int32_t level) {
  int64_t findings = 0;
  g_metadata_findings = 0;
  struct FerryError error;
  ferry_error_init(&error);
  int rc = prepared != NULL ? ferry_validate_prepared(prepared, array, level, count_finding,
                                                      &findings, &error)
                            : ferry_validate_device_array(schema, array, level,
                                                          count_finding, &findings, &error);
  if ((rc == FERRY_OK) != (findings == 0)) abort();
  if (rc != FERRY_OK && error.message[0] == '\0') abort();
  g_last_findings = findings;
  return rc;
}

static int validate(const struct ArrowSchema* schema, const struct ArrowDeviceArray* array,
                    int32_t level) {
  return validate_with(NULL, schema, array, level);
}

/* A clean schema prepares, and validating through it finds exactly what the
 * one-shot validation found (at FULL less the metadata findings: a prepared
 * schema keeps no metadata); a schema with findings does not prepare. */
static void check_prepared(const struct ArrowSchema* schema, int schema_rc,
                           const int64_t one_shot_findings[2]) {
  struct FerryPreparedSchema* prepared = NULL;
  int rc = ferry_prepared_schema_create(schema, NULL, NULL, &prepared, NULL);
  if (rc != schema_rc) abort();
  if (rc != FERRY_OK) {
    if (prepared != NULL) abort();
    return;
  }
  for (int32_t level = FERRY_VALIDATE_DEFAULT; level <= FERRY_VALIDATE_FULL; level++) {
    validate_with(prepared, NULL, &g_device_array, level);
    if (g_last_findings != one_shot_findings[level]) abort();
  }
  ferry_prepared_schema_free(prepared);
}

/* For a FULL-valid tree: every buffer's size is computable and within the
 * bytes allocated behind it. */
static void check_sizes(const struct ArrowSchema* schema, const struct ArrowArray* array,
                        ArrowDeviceType type, int64_t id) {
  for (int64_t i = 0; i < array->n_buffers; i++) {
    int64_t size = -1;
    if (ferry_array_buffer_size(schema, array, type, id, i, &size, NULL) != FERRY_OK) {
      abort();
    }
    if (array->buffers[i] == NULL || size == 0) continue;
    int64_t bytes = available(array->buffers[i]);
    if (bytes < 0 || size > bytes) abort();
  }
  for (int64_t c = 0; c < array->n_children; c++) {
    check_sizes(schema->children[c], array->children[c], type, id);
  }
  if (array->dictionary != NULL) {
    check_sizes(schema->dictionary, array->dictionary, type, id);
  }
}

/* Copies to (type, id). The copy fails only where FULL validation found
 * something; a copy of a FULL-valid array is FULL-valid and is released. */
static void check_copy(const struct ArrowSchema* schema, int full_ok, ArrowDeviceType type,
                       int64_t id) {
  struct ArrowDeviceArray copy;
  memset(&copy, 0, sizeof copy);
  struct FerryError error;
  int rc = ferry_device_array_copy(schema, &g_device_array, type, id, &copy, &error);
  if (rc == ENOMEM) return;
  if (rc != FERRY_OK) {
    if (full_ok) abort(); /* one rule: a valid array copies */
    if (copy.array.release != NULL) abort();
    return;
  }
  if (validate(schema, &copy, FERRY_VALIDATE_FULL) != FERRY_OK && full_ok) abort();
  if (type == ARROW_DEVICE_CPU && full_ok) {
    /* The DLPack round trip of a fixed-width copy gives the same values. */
    struct DLManagedTensorVersioned* tensor = NULL;
    if (ferry_device_array_to_dlpack(schema, &copy, NULL, &tensor, NULL) == FERRY_OK) {
      struct ArrowSchema back_schema;
      struct ArrowDeviceArray back;
      memset(&back_schema, 0, sizeof back_schema);
      memset(&back, 0, sizeof back);
      if (ferry_device_array_from_dlpack(tensor, &back_schema, &back, NULL) != FERRY_OK) {
        abort();
      }
      if (validate(&back_schema, &back, FERRY_VALIDATE_FULL) != FERRY_OK) abort();
      const struct ArrowArray* original = &g_device_array.array;
      int64_t width = 0;
      struct FerryFormat f;
      if (ferry__format_parse(schema->format, &f, NULL) == FERRY_OK) width = f.bit_width / 8;
      if (back.array.length != original->length) abort();
      if (original->length > 0 &&
          memcmp(back.array.buffers[1],
                 (const uint8_t*)original->buffers[1] + original->offset * width,
                 (size_t)(original->length * width)) != 0) {
        abort();
      }
      ferry_device_array_release(&back); /* the tensor's deleter releases `copy` */
      ferry_schema_release(&back_schema);
      return;
    }
  }
  ferry_device_array_release(&copy);
}

/* ---- the DLPack import of a fuzzed tensor ----------------------------------- */

static int g_deleter_calls;
static void count_deleter(struct DLManagedTensorVersioned* self) { g_deleter_calls++; }

static const uint64_t kByteOffsets[8] = {0,
                                         4,
                                         60,
                                         200,
                                         UINT64_C(1) << 40,
                                         UINT64_C(1) << 63,
                                         UINT64_MAX - 63,
                                         UINT64_MAX};
static const int64_t kShapes[8] = {0, 1, 3, 16, -1, INT64_MAX / 4, INT64_MAX / 2,
                                   INT64_C(1) << 40};
static const uint8_t kCodes[4] = {kDLInt, kDLUInt, kDLFloat, kDLBool};
static const uint8_t kBits[4] = {8, 16, 32, 64};

/* Tensor fields, in input order: flags, ndim, two shapes, dtype, byte
 * offset, data size. */
static void check_dlpack_import(struct input* in) {
  uint8_t flags = take(in);
  int64_t shape[2] = {kShapes[take(in) & 7], kShapes[take(in) & 7]};
  int64_t strides[2] = {1, 2};
  uint8_t dtype = take(in);
  uint64_t byte_offset = kByteOffsets[take(in) & 7];
  int64_t data_size = take(in) % 128;
  int on_sim = (flags >> 5) == 1 || (flags >> 5) == 2;
  void* data = on_sim ? sim_alloc(data_size) : cpu_alloc(data_size);

  struct DLManagedTensorVersioned tensor;
  memset(&tensor, 0, sizeof tensor);
  tensor.version.major = (flags & 0x01) ? DLPACK_MAJOR_VERSION + 1 : DLPACK_MAJOR_VERSION;
  tensor.deleter = count_deleter;
  DLTensor* t = &tensor.dl_tensor;
  t->data = (flags & 0x02) ? NULL : data;
  t->ndim = (int32_t)(flags >> 3 & 1) + ((dtype & 0x80) ? 1 : 0);
  t->shape = (flags & 0x04) ? NULL : shape;
  t->strides = (dtype & 0x40) ? strides + (dtype & 1) : NULL;
  t->dtype.code = kCodes[dtype & 3];
  t->dtype.bits = kBits[(dtype >> 2) & 3];
  t->dtype.lanes = (dtype & 0x20) ? 2 : 1;
  t->byte_offset = byte_offset;
  switch (flags >> 5) {
    case 1: t->device = (DLDevice){kDLExtDev, 0}; break;
    case 2: t->device = (DLDevice){kDLExtDev, 3}; break;
    case 3: t->device = (DLDevice){(DLDeviceType)99, 0}; break;
    case 4: t->device = (DLDevice){kDLMAIA, 0}; break;
    case 5: t->device = (DLDevice){kDLExtDev, -1}; break;
    default: t->device = (DLDevice){kDLCPU, (int32_t)(dtype & 3)}; break;
  }

  struct ArrowSchema schema;
  struct ArrowDeviceArray array;
  memset(&schema, 0, sizeof schema);
  memset(&array, 0, sizeof array);
  g_deleter_calls = 0;
  int rc = ferry_device_array_from_dlpack(&tensor, &schema, &array, NULL);
  if (g_deleter_calls != 0) abort(); /* never during the import */
  if (rc != FERRY_OK) {
    if (schema.release != NULL || array.array.release != NULL) abort();
    return; /* refused: the tensor is still ours */
  }
  if (on_sim && t->data != NULL &&
      validate(&schema, &array, FERRY_VALIDATE_FULL) == FERRY_OK) {
    /* A FULL-valid sim import lies inside its allocation, or outside every
     * sim allocation (then it is unknown ext_dev memory, never read). */
    int64_t size = 0;
    if (ferry_array_buffer_size(&schema, &array.array, array.device_type,
                                array.device_id, 1, &size, NULL) != FERRY_OK) {
      abort();
    }
    int64_t bytes = sim_available(array.array.buffers[1]);
    if (size > 0 && bytes >= 0 && size > bytes) abort();
  }
  ferry_device_array_release(&array);
  ferry_schema_release(&schema);
  if (g_deleter_calls != 1) abort();
}

/* ---- the target ------------------------------------------------------------ */

/* Header: mode (bit 0: sim memory; bits 1-2: the sim device id the array
 * declares; bit 3: a non-zero reserved word; bit 4: a bogus sync_event),
 * then the node count; then every node, every node's links, one metadata
 * byte, the tensor. */
int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (g_sim == NULL) {
    if (ferry_device_resolve(ARROW_DEVICE_EXT_DEV, 0, &g_sim, NULL) != FERRY_OK ||
        ferry_device_resolve(ARROW_DEVICE_CPU, -1, &g_cpu, NULL) != FERRY_OK) {
      abort();
    }
  }
  int64_t exports_before = ferry_live_exports();
  int64_t sim_before = ferry_device_live_allocations(g_sim);
  struct input in = {data, size};
  uint8_t mode = take(&in);
  g_on_sim = mode & 1;
  g_n_nodes = 1 + take(&in) % MAX_NODES;
  g_next_fresh = 1;
  g_producer_releases = 0;
  memset(&g_device_array, 0, sizeof g_device_array);
  memset(&g_released_schema, 0, sizeof g_released_schema);
  memset(&g_released_array, 0, sizeof g_released_array);
  g_released_schema.format = "i";

  g_foreign = 0;
  for (int k = 0; k < g_n_nodes; k++) build_node(&in, k);
  for (int k = 0; k < g_n_nodes; k++) wire_node(&in, k);
  /* One metadata byte: which node's schema gets which blob (fuzz_input.h). */
  uint8_t metadata_byte = take(&in);
  if (metadata_byte != 0) {
    g_nodes[(metadata_byte >> 3) % g_n_nodes].schema.metadata =
        fuzz_metadata(metadata_byte, cpu_alloc);
  }
  int sync_token = 0;
  if (g_on_sim) {
    g_device_array.device_type = ARROW_DEVICE_EXT_DEV;
    g_device_array.device_id = (mode >> 1) & 3;
    if (mode & 0x10) g_device_array.sync_event = &sync_token;
  } else {
    g_device_array.device_type = ARROW_DEVICE_CPU;
    g_device_array.device_id = -1;
  }
  if (mode & 0x08) g_device_array.reserved[1] = 1;

  const struct ArrowSchema* schema = &g_nodes[0].schema;
  int64_t schema_findings = 0;
  int schema_rc = ferry_validate_schema(schema, count_finding, &schema_findings, NULL);
  if ((schema_rc == FERRY_OK) != (schema_findings == 0)) abort();
  int64_t findings[2];
  int default_rc = validate(schema, &g_device_array, FERRY_VALIDATE_DEFAULT);
  findings[FERRY_VALIDATE_DEFAULT] = g_last_findings;
  int full_rc = validate(schema, &g_device_array, FERRY_VALIDATE_FULL);
  findings[FERRY_VALIDATE_FULL] = g_last_findings - g_metadata_findings;
  check_prepared(schema, schema_rc, findings);
  if (default_rc != FERRY_OK && full_rc == FERRY_OK) abort();
  if (schema_rc != FERRY_OK && default_rc == FERRY_OK) abort();
  int full_ok = full_rc == FERRY_OK;
  /* Memory of another ext_dev producer is never read: neither sized from
   * its contents nor copied. */
  if (full_ok && !g_foreign) {
    check_sizes(schema, &g_device_array.array, g_device_array.device_type,
                g_device_array.device_id);
  }
  check_copy(schema, full_ok && !g_foreign, ARROW_DEVICE_CPU, -1);
  check_copy(schema, full_ok && !g_foreign, ARROW_DEVICE_EXT_DEV, 1);
  if (g_producer_releases != 0) abort(); /* ferry only borrows the graph */

  check_dlpack_import(&in);
  free_records();
  if (ferry_live_exports() != exports_before) abort();
  if (ferry_device_live_allocations(g_sim) != sim_before) abort();
  return 0;
}
