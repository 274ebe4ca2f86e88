/* ferry_hostile: the one library of hostile producers (see ferry_hostile.h).
 *
 * Every array or schema node is one heap block (struct node) whose struct
 * (`array` or `schema`) is the node's home: a root is moved out of it into
 * the caller's struct, children stay there. A node's release marks it
 * released, releases the children it owns, and keeps the block on a list
 * (the graveyard) until ferry_hostile_reset frees it, so that a release
 * through a stale copy is counted, never a use of freed memory. Cycles and
 * shared children are links the parent does not own. */
#include "ferry_hostile.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SLOTS 8

struct node {
  struct node* next_dead; /* the graveyard */
  int released;
  /* an array node */
  struct ArrowArray array;
  const void* buffers[SLOTS];
  void* owned_buffers[SLOTS];
  struct ArrowArray* children[SLOTS];
  struct node* owned[SLOTS]; /* children this node releases */
  struct node* dictionary;
  struct ArrowArray** heap_children; /* an exact-size children table (ASan sees overreads) */
  struct FerryDevice* device;
  void* device_memory;
  /* a schema node */
  struct ArrowSchema schema;
  struct ArrowSchema* schema_children[SLOTS];
  char* format;
  char* name;
  char* metadata;
};

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static struct node* g_graveyard;
static int64_t g_live;
static int64_t g_again;
static int64_t g_calls_after_failure;

static void count_live(int64_t delta) {
  pthread_mutex_lock(&g_lock);
  g_live += delta;
  pthread_mutex_unlock(&g_lock);
}

/* Marks `n` released: 1 the first time, 0 (counted) after that. */
static int mark_released(struct node* n) {
  pthread_mutex_lock(&g_lock);
  int first = !n->released;
  if (first) {
    n->released = 1;
    g_live--;
  } else {
    g_again++;
  }
  pthread_mutex_unlock(&g_lock);
  return first;
}

static void bury(struct node* n) {
  pthread_mutex_lock(&g_lock);
  n->next_dead = g_graveyard;
  g_graveyard = n;
  pthread_mutex_unlock(&g_lock);
}

static struct node* new_node(void) {
  struct node* n = (struct node*)calloc(1, sizeof *n);
  if (n == NULL) abort(); /* a test fixture: no partial trees to unwind */
  count_live(1);
  return n;
}

/* ---- arrays ------------------------------------------------------------------ */

/* Releases node `c` (NULL: none) through its home struct, an array's or a
 * schema's. A child a consumer moved out has its home released; the
 * consumer releases its copy. */
static void release_home(struct node* c, int schema) {
  if (c == NULL) return;
  if (schema && c->schema.release != NULL) c->schema.release(&c->schema);
  if (!schema && c->array.release != NULL) c->array.release(&c->array);
}

/* The release of node `n` (an array's or a schema's): counts it, releases
 * the children and the dictionary it owns, frees its device memory, and
 * keeps it for ferry_hostile_reset. */
static void release_node(struct node* n, int schema) {
  if (!mark_released(n)) return;
  for (int i = 0; i < SLOTS; i++) release_home(n->owned[i], schema);
  release_home(n->dictionary, schema);
  if (n->device_memory != NULL) ferry_device_deallocate(n->device, n->device_memory, NULL);
  n->device_memory = NULL;
  bury(n);
}

static void array_release(struct ArrowArray* a) {
  a->release = NULL; /* first: a cycle back to this node then finds it released */
  release_node((struct node*)a->private_data, 0);
}

static struct node* anode(int64_t length, int64_t n_buffers) {
  struct node* n = new_node();
  n->array.length = length;
  n->array.n_buffers = n_buffers;
  n->array.buffers = n->buffers;
  n->array.children = n->children;
  n->array.release = array_release;
  n->array.private_data = n;
  return n;
}

/* Buffer i of `n`: a copy of `size` bytes with 64 zero bytes of slack (a
 * reader past the size reads zeros, not another allocation: the size checks,
 * not luck, are what the tests assert). */
static void copy_buffer(struct node* n, int i, const void* bytes, int64_t size) {
  n->owned_buffers[i] = calloc(1, (size_t)size + 64);
  if (n->owned_buffers[i] == NULL) abort();
  if (size > 0) memcpy(n->owned_buffers[i], bytes, (size_t)size);
  n->buffers[i] = n->owned_buffers[i];
}

static void add_child(struct node* parent, struct node* child, int owned) {
  int64_t i = parent->array.n_children++;
  parent->children[i] = child == NULL ? NULL : &child->array;
  if (owned) parent->owned[i] = child;
}

static struct node* released_node(void) {
  struct node* n = anode(1, 2);
  n->array.release(&n->array);
  return n;
}

FERRY_HOSTILE_EXPORT struct ArrowArray* ferry_hostile_node(int64_t length, int64_t null_count,
                                                           int64_t offset, int64_t n_buffers,
                                                           const uint8_t* blob,
                                                           const int64_t* sizes,
                                                           int64_t declared_n_buffers) {
  if (n_buffers < 0 || n_buffers > SLOTS) abort();
  struct node* n = anode(length, declared_n_buffers);
  n->array.null_count = null_count;
  n->array.offset = offset;
  for (int64_t i = 0; i < n_buffers; i++) {
    if (sizes[i] < 0) continue; /* a NULL buffer */
    copy_buffer(n, (int)i, blob, sizes[i]);
    blob += sizes[i];
  }
  return &n->array;
}

FERRY_HOSTILE_EXPORT void ferry_hostile_add_child(struct ArrowArray* parent,
                                                  struct ArrowArray* child, int32_t kind) {
  struct node* p = (struct node*)parent->private_data;
  if (parent->n_children >= SLOTS) abort();
  switch (kind) {
    case FERRY_HOSTILE_CHILD_NODE:
      add_child(p, (struct node*)child->private_data, 1);
      break;
    case FERRY_HOSTILE_CHILD_NULL:
      add_child(p, NULL, 0);
      break;
    case FERRY_HOSTILE_CHILD_RELEASED:
      add_child(p, released_node(), 0);
      break;
    case FERRY_HOSTILE_CHILD_SELF:
      add_child(p, p, 0);
      break;
    default:
      abort();
  }
}

FERRY_HOSTILE_EXPORT void ferry_hostile_set_dictionary(struct ArrowArray* parent,
                                                       struct ArrowArray* dictionary) {
  struct node* p = (struct node*)parent->private_data;
  p->dictionary = (struct node*)dictionary->private_data;
  parent->dictionary = dictionary;
}

static int64_t g_bogus_event;

FERRY_HOSTILE_EXPORT struct ArrowDeviceArray* ferry_hostile_device_array(
    struct ArrowArray* node, int32_t device_type, int64_t device_id, int32_t with_event,
    int64_t reserved1) {
  struct ArrowDeviceArray* d = ferry_device_array_new();
  if (d == NULL) abort();
  d->array = *node;
  node->release = NULL; /* moved */
  d->device_type = device_type;
  d->device_id = device_id;
  d->sync_event = with_event ? &g_bogus_event : NULL;
  d->reserved[1] = reserved1;
  return d;
}

/* ---- schemas ----------------------------------------------------------------- */

static void schema_release(struct ArrowSchema* s) {
  s->release = NULL;
  release_node((struct node*)s->private_data, 1);
}

static char* copy_text(const char* text) {
  if (text == NULL) return NULL;
  char* copy = strdup(text);
  if (copy == NULL) abort();
  return copy;
}

static struct node* snode(const char* format, const char* name) {
  struct node* n = new_node();
  n->format = copy_text(format);
  n->name = copy_text(name);
  n->schema.format = n->format;
  n->schema.name = n->name;
  n->schema.flags = ARROW_FLAG_NULLABLE;
  n->schema.children = n->schema_children;
  n->schema.release = schema_release;
  n->schema.private_data = n;
  return n;
}

static void add_schema_child(struct node* parent, struct node* child, int owned) {
  int64_t i = parent->schema.n_children++;
  parent->schema_children[i] = &child->schema;
  if (owned) parent->owned[i] = child;
}

static void set_metadata(struct node* n, const void* blob, size_t size) {
  n->metadata = (char*)calloc(1, size + 64);
  if (n->metadata == NULL) abort();
  memcpy(n->metadata, blob, size);
  n->schema.metadata = n->metadata;
}

FERRY_HOSTILE_EXPORT void ferry_hostile_schema(struct ArrowSchema* out, const char* format,
                                               const char* name) {
  struct node* n = snode(format, name);
  *out = n->schema;
  n->schema.release = NULL; /* moved */
}

/* ---- the array catalogue --------------------------------------------------------- */

struct array_case {
  const char* name;
  int32_t kind;
  int32_t flags;
  int32_t code;
  const char* where;
  const char* needle;
};

enum {
  C_N_BUFFERS,
  C_NEGATIVE_N_BUFFERS,
  C_TOO_MANY_BUFFERS,
  C_NULL_VALUES,
  C_NEGATIVE_LENGTH,
  C_NEGATIVE_ARRAY_OFFSET,
  C_OFFSET_OVERFLOW,
  C_NULL_COUNT_LIE,
  C_RESERVED,
  C_SYNC_EVENT_CPU,
  C_UNKNOWN_DEVICE,
  C_BAD_FORMAT,
  C_NULL_FORMAT,
  C_BAD_NAME_UTF8,
  C_CHILD_COUNT,
  C_MORE_CHILDREN_THAN_THE_TABLE,
  C_NULL_CHILD,
  C_RELEASED_CHILD,
  C_CHILD_SHORTER,
  C_SHARED_CHILDREN,
  C_SELF_CYCLE,
  C_SHARED_CHAIN,
  C_DICTIONARY_MISSING,
  C_DICTIONARY_SHARED,
  C_STRING_VIEW_NO_SIZES,
  C_SIM_TOO_SHORT,
  C_SIM_WRONG_DEVICE,
  C_DECREASING_OFFSETS,
  C_STRUCT_DECREASING_OFFSETS,
  C_NEGATIVE_OFFSET,
  C_BAD_UTF8,
  C_LIST_PAST_CHILD,
  C_DICTIONARY_INDEX,
  C_METADATA_NEGATIVE_COUNT,
  C_METADATA_BAD_UTF8_KEY,
  C_INT32_HUGE,
  C_BOOL_HUGE,
  C_INT64_HUGE,
  C_LARGE_UTF8_HUGE,
  C_COUNT,
  /* valid arrays for stream batches and baselines, not in the catalogue */
  C_GOOD_INT32 = C_COUNT,
  C_GOOD_UTF8,
  C_GOOD_STRUCT_UTF8,
};

#define REFUSED FERRY_HOSTILE_REFUSED
#define FULL FERRY_HOSTILE_FULL
#define READER FERRY_HOSTILE_READER
#define READABLE FERRY_HOSTILE_READABLE
#define DEVICE FERRY_HOSTILE_DEVICE

/* The findings are the core's messages: "rule: where" and a part of "what". */
static const struct array_case k_cases[C_COUNT] = {
    [C_N_BUFFERS] = {"n_buffers", REFUSED, 0, EINVAL, "n_buffers: root",
                     "needs 2 buffers, found n_buffers = 1"},
    [C_NEGATIVE_N_BUFFERS] = {"negative_n_buffers", REFUSED, 0, EINVAL, "n_buffers: root",
                              "n_buffers is negative (-1)"},
    [C_TOO_MANY_BUFFERS] = {"too_many_buffers", REFUSED, READABLE, EINVAL, "n_buffers: root",
                            "found n_buffers = 5"},
    [C_NULL_VALUES] = {"null_values", REFUSED, 0, EINVAL, "buffers: root",
                       "buffer 1 (data) is NULL but length is 4"},
    [C_NEGATIVE_LENGTH] = {"negative_length", REFUSED, 0, EINVAL, "length: root",
                           "length is negative (-1)"},
    [C_NEGATIVE_ARRAY_OFFSET] = {"negative_array_offset", REFUSED, 0, EINVAL, "offset: root",
                                 "offset is negative (-2)"},
    [C_OFFSET_OVERFLOW] = {"offset_overflow", REFUSED, 0, EINVAL, "length: root", "overflows"},
    [C_NULL_COUNT_LIE] = {"null_count_lie", REFUSED, READABLE, EINVAL, "null_count: root",
                          "null_count 9 exceeds length 4"},
    [C_RESERVED] = {"reserved", REFUSED, READABLE, EINVAL, "reserved: root",
                    "reserved[0] is 0x7"},
    [C_SYNC_EVENT_CPU] = {"sync_event_cpu", REFUSED, 0, EINVAL, "sync_event: root",
                          "on the CPU; it must be NULL"},
    [C_UNKNOWN_DEVICE] = {"unknown_device", REFUSED, DEVICE, EINVAL, "device: root",
                          "device_type 999 is not a known ArrowDeviceType"},
    [C_BAD_FORMAT] = {"bad_format", REFUSED, 0, EINVAL, "format: root", "unknown type 'q'"},
    [C_NULL_FORMAT] = {"null_format", REFUSED, 0, EINVAL, "format: root", "format is NULL"},
    [C_BAD_NAME_UTF8] = {"bad_name_utf8", REFUSED, READABLE, EINVAL, "utf8: root",
                         "name is not valid UTF-8 (bad byte 0xff at byte 1)"},
    [C_CHILD_COUNT] = {"child_count", REFUSED, 0, EINVAL, "n_children: root",
                       "array has 1 children but its schema has 2"},
    [C_MORE_CHILDREN_THAN_THE_TABLE] = {"more_children_than_the_table", REFUSED, READABLE, EINVAL,
                                        "n_children: root",
                                        "array has 1099511627776 children but its schema has 1"},
    [C_NULL_CHILD] = {"null_child", REFUSED, 0, EINVAL, "null: root.children[1]",
                      "array pointer is NULL"},
    [C_RELEASED_CHILD] = {"released_child", REFUSED, 0, EINVAL, "released: root.children[1]",
                          "release is NULL"},
    [C_CHILD_SHORTER] = {"child_shorter_than_parent", REFUSED, 0, EINVAL,
                         "length: root",
                         "children[0] has length 1, less than the parent's offset + length = 3"},
    [C_SHARED_CHILDREN] = {"shared_children", REFUSED, READABLE, EINVAL, "shared: root.children[1]",
                           "also at root.children[0]"},
    [C_SELF_CYCLE] = {"self_cycle", REFUSED, 0, EINVAL, "cycle: root.children[0].children[0]",
                      "the tree has a cycle"},
    [C_SHARED_CHAIN] = {"shared_chain_40", REFUSED, READABLE, EINVAL,
                        "shared: root.children[0].children[0]", "is also at root.children[0]"},
    [C_INT32_HUGE] = {"int32_huge", REFUSED, 0, EINVAL, "length: root",
                      "4611686018427387904 elements of 4 bytes overflow int64"},
    [C_DICTIONARY_MISSING] = {"dictionary_missing", REFUSED, 0, EINVAL, "dictionary: root",
                              "the schema has a dictionary but the array has none"},
    [C_DICTIONARY_SHARED] = {"dictionary_shared_with_a_child", REFUSED, READABLE, EINVAL,
                             "shared: root.children[1]", "also at root.children[0].dictionary"},
    [C_STRING_VIEW_NO_SIZES] = {"string_view_no_sizes", REFUSED, READABLE, EINVAL, "buffers: root",
                                "buffer 3 (variadic sizes) is NULL but there are 1 variadic "
                                "data buffers"},
    [C_SIM_TOO_SHORT] = {"sim_too_short", REFUSED, DEVICE, EINVAL, "device: root",
                         "runs past the end of a 8-byte allocation of sim device 0"},
    [C_SIM_WRONG_DEVICE] = {"sim_wrong_device", REFUSED, DEVICE, EINVAL, "device: root",
                            "is not sim device 0 memory (it is sim device 1 memory)"},
    [C_DECREASING_OFFSETS] = {"decreasing_offsets", FULL, 0, EINVAL, "offsets: root",
                              "offsets[2] = 1 is less than offsets[1] = 2"},
    [C_STRUCT_DECREASING_OFFSETS] = {"struct_decreasing_offsets", FULL, 0, EINVAL,
                                     "offsets: root.children[0]",
                                     "offsets[2] = 1 is less than offsets[1] = 2"},
    [C_NEGATIVE_OFFSET] = {"negative_offset", FULL, 0, EINVAL, "offsets: root",
                           "offsets[1] = -3 is less than offsets[0] = 0"},
    [C_BAD_UTF8] = {"bad_utf8", FULL, 0, EINVAL, "utf8: root", "not valid UTF-8"},
    [C_LIST_PAST_CHILD] = {"list_past_child", FULL, 0, EINVAL, "offsets: root",
                           "offsets[2] = 9 exceeds the child length 4"},
    [C_DICTIONARY_INDEX] = {"dictionary_index", FULL, 0, EINVAL, "dictionary: root",
                            "index[1] = 7 is outside the dictionary of length 3"},
    [C_METADATA_NEGATIVE_COUNT] = {"metadata_negative_count", FULL, 0, EINVAL, "metadata: root",
                                   "metadata is malformed: a negative pair count"},
    [C_METADATA_BAD_UTF8_KEY] = {"metadata_bad_utf8_key", FULL, 0, EINVAL, "utf8: root",
                                 "metadata key 0 is not valid UTF-8"},
    /* what a reader says is the binding's own: no needle */
    [C_BOOL_HUGE] = {"bool_huge", READER, 0, EINVAL, "", ""},
    [C_INT64_HUGE] = {"int64_huge", READER, 0, EINVAL, "", ""},
    [C_LARGE_UTF8_HUGE] = {"large_utf8_huge", READER, 0, EINVAL, "", ""},
};

static const int32_t k_values[8] = {10, 20, 30, 40, 50, 60, 70, 80};

/* An int32 leaf of `length` over the 8 values. */
static struct node* int32_leaf(int64_t length) {
  struct node* n = anode(length, 2);
  copy_buffer(n, 1, k_values, sizeof k_values);
  return n;
}

/* utf8 over `data` with these offsets (n_offsets - 1 elements). */
static struct node* utf8_leaf(const int32_t* offsets, int64_t n_offsets, const char* data,
                              int64_t size) {
  struct node* n = anode(n_offsets - 1, 3);
  copy_buffer(n, 1, offsets, n_offsets * (int64_t)sizeof(int32_t));
  copy_buffer(n, 2, data, size);
  return n;
}

/* struct<a: i, b: i> of 4 rows: the shape the children cases lie about. */
static void two_int32_children(struct node** schema, struct node** array) {
  *schema = snode("+s", "s");
  add_schema_child(*schema, snode("i", "a"), 1);
  add_schema_child(*schema, snode("i", "b"), 1);
  *array = anode(4, 1);
  add_child(*array, int32_leaf(4), 1);
  add_child(*array, int32_leaf(4), 1);
}

/* Sim memory of `size` bytes on sim device `id`, freed with the node. */
static void *sim_memory(struct node* n, int64_t id, int64_t size) {
  if (ferry_device_resolve(ARROW_DEVICE_EXT_DEV, id, &n->device, NULL) != FERRY_OK ||
      ferry_device_allocate(n->device, size, &n->device_memory, NULL) != FERRY_OK) {
    n->device_memory = NULL;
  }
  return n->device_memory;
}

/* Builds case `c` into the nodes at *schema and *array; sets the device
 * fields of `out`. */
static void build(int c, struct node** schema, struct node** array,
                  struct ArrowDeviceArray* out) {
  static const int32_t utf8_offsets[4] = {0, 2, 2, 5}; /* ["ab", "", "cde"] */
  struct node* s = NULL;
  struct node* a = NULL;
  out->device_type = ARROW_DEVICE_CPU;
  out->device_id = -1;
  switch (c) {
    case C_GOOD_INT32:
    case C_N_BUFFERS:
    case C_NEGATIVE_N_BUFFERS:
    case C_TOO_MANY_BUFFERS:
    case C_NULL_VALUES:
    case C_NEGATIVE_LENGTH:
    case C_NEGATIVE_ARRAY_OFFSET:
    case C_OFFSET_OVERFLOW:
    case C_NULL_COUNT_LIE:
    case C_RESERVED:
    case C_SYNC_EVENT_CPU:
    case C_UNKNOWN_DEVICE:
    case C_BAD_FORMAT:
    case C_NULL_FORMAT:
    case C_BAD_NAME_UTF8:
    case C_METADATA_NEGATIVE_COUNT:
    case C_METADATA_BAD_UTF8_KEY:
    case C_INT32_HUGE: {
      s = snode(c == C_BAD_FORMAT ? "q" : c == C_NULL_FORMAT ? NULL : "i",
                c == C_BAD_NAME_UTF8 ? "x\xff" : "x");
      a = int32_leaf(4);
      if (c == C_N_BUFFERS) a->array.n_buffers = 1;
      if (c == C_NEGATIVE_N_BUFFERS) {
        a->array.n_buffers = -1;
        a->array.length = 0;
      }
      if (c == C_TOO_MANY_BUFFERS) a->array.n_buffers = 5; /* the table has 8 slots */
      if (c == C_NULL_VALUES) a->buffers[1] = NULL;
      if (c == C_NEGATIVE_LENGTH) a->array.length = -1;
      if (c == C_NEGATIVE_ARRAY_OFFSET) {
        a->array.offset = -2;
        a->array.length = 2;
      }
      if (c == C_OFFSET_OVERFLOW) a->array.offset = INT64_MAX - 1;
      if (c == C_NULL_COUNT_LIE) {
        static const uint8_t all_valid[8] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
        a->array.null_count = 9; /* more nulls than elements */
        copy_buffer(a, 0, all_valid, sizeof all_valid);
      }
      if (c == C_RESERVED) out->reserved[0] = 7;
      if (c == C_SYNC_EVENT_CPU) out->sync_event = (void*)&g_bogus_event;
      if (c == C_UNKNOWN_DEVICE) {
        out->device_type = 999;
        out->device_id = 0;
      }
      if (c == C_METADATA_NEGATIVE_COUNT) {
        const int32_t blob[1] = {-1};
        set_metadata(s, blob, sizeof blob);
      }
      if (c == C_METADATA_BAD_UTF8_KEY) {
        /* one pair: key "\xff" (1 byte), value "v" */
        const int32_t count = 1, one = 1;
        char blob[4 + 4 + 1 + 4 + 1];
        memcpy(blob, &count, 4);
        memcpy(blob + 4, &one, 4);
        blob[8] = (char)0xff;
        memcpy(blob + 9, &one, 4);
        blob[13] = 'v';
        set_metadata(s, blob, sizeof blob);
      }
      if (c == C_INT32_HUGE) a->array.length = INT64_C(1) << 62; /* 2^64 bytes */
      break;
    }
    case C_CHILD_COUNT:
    case C_NULL_CHILD:
    case C_RELEASED_CHILD:
    case C_SHARED_CHILDREN:
      two_int32_children(&s, &a);
      if (c == C_CHILD_COUNT) a->array.n_children = 1;
      if (c == C_NULL_CHILD) a->children[1] = NULL; /* child 1 stays owned: released with it */
      if (c == C_RELEASED_CHILD) a->owned[1]->array.release(&a->owned[1]->array);
      if (c == C_SHARED_CHILDREN) a->children[1] = a->children[0];
      break;
    case C_MORE_CHILDREN_THAN_THE_TABLE: {
      s = snode("+s", "s");
      add_schema_child(s, snode("i", "a"), 1);
      a = anode(2, 1);
      add_child(a, int32_leaf(2), 1);
      /* 2^40 children over a table of exactly one (heap, so ASan sees an
       * overread) */
      a->heap_children = (struct ArrowArray**)malloc(sizeof(struct ArrowArray*));
      if (a->heap_children == NULL) abort();
      a->heap_children[0] = a->children[0];
      a->array.children = a->heap_children;
      a->array.n_children = INT64_C(1) << 40;
      break;
    }
    case C_CHILD_SHORTER:
      s = snode("+s", "s");
      add_schema_child(s, snode("i", "a"), 1);
      a = anode(3, 1);
      add_child(a, int32_leaf(1), 1);
      break;
    case C_SELF_CYCLE: {
      /* struct<a: struct<c: i>>: child 0 is a struct whose only child is
       * itself (a cycle that survives the root being moved) */
      s = snode("+s", "s");
      struct node* inner = snode("+s", "a");
      add_schema_child(inner, snode("i", "c"), 1);
      add_schema_child(s, inner, 1);
      a = anode(4, 1);
      struct node* loop = anode(4, 1);
      add_child(loop, loop, 0);
      add_child(a, loop, 1);
      break;
    }
    case C_SHARED_CHAIN: {
      /* 40 levels of struct whose two children are the same next level:
       * 2^40 paths over 41 nodes (a walk per path never ends) */
      enum { LEVELS = 40 };
      struct node* schemas[LEVELS + 1];
      struct node* arrays[LEVELS + 1];
      schemas[LEVELS] = snode("i", "leaf");
      arrays[LEVELS] = int32_leaf(4);
      for (int i = LEVELS - 1; i >= 0; i--) {
        schemas[i] = snode("+s", "level");
        add_schema_child(schemas[i], schemas[i + 1], 1);
        add_schema_child(schemas[i], schemas[i + 1], 0);
        arrays[i] = anode(4, 1);
        add_child(arrays[i], arrays[i + 1], 1);
        add_child(arrays[i], arrays[i + 1], 0);
      }
      s = schemas[0];
      a = arrays[0];
      break;
    }
    case C_DICTIONARY_MISSING:
    case C_DICTIONARY_INDEX: {
      s = snode("i", "d");
      s->dictionary = snode("u", NULL);
      s->schema.dictionary = &s->dictionary->schema;
      const int32_t indices[2] = {1, 7}; /* the dictionary has 3 values */
      a = anode(2, 2);
      copy_buffer(a, 1, indices, sizeof indices);
      if (c == C_DICTIONARY_INDEX) {
        a->dictionary = utf8_leaf(utf8_offsets, 4, "abcde", 5);
        a->array.dictionary = &a->dictionary->array;
      }
      break;
    }
    case C_DICTIONARY_SHARED: {
      /* struct<a: dictionary<int32 -> utf8>, b: utf8> where b is a's
       * dictionary, in the schema and in the array */
      s = snode("+s", "s");
      struct node* words = snode("u", "b");
      struct node* dict_a = snode("i", "a");
      dict_a->dictionary = words;
      dict_a->schema.dictionary = &words->schema;
      add_schema_child(s, dict_a, 1);
      add_schema_child(s, words, 0);
      const int32_t indices[3] = {0, 1, 2};
      struct node* ia = anode(3, 2);
      copy_buffer(ia, 1, indices, sizeof indices);
      struct node* wa = utf8_leaf(utf8_offsets, 4, "abcde", 5);
      ia->dictionary = wa;
      ia->array.dictionary = &wa->array;
      a = anode(3, 1);
      add_child(a, ia, 1);
      add_child(a, wa, 0);
      break;
    }
    case C_STRING_VIEW_NO_SIZES:
      s = snode("vu", "v");
      a = anode(0, 4);
      copy_buffer(a, 2, "abc", 3); /* variadic data, but buffer 3 (sizes) NULL */
      break;
    case C_SIM_TOO_SHORT:
    case C_SIM_WRONG_DEVICE:
      /* int32 on sim device 0 over 8 bytes of sim memory: of length 100 (the
       * sim knows allocation sizes, which no CPU consumer can check), or of
       * length 2 over memory of sim device 1 */
      s = snode("i", "x");
      a = anode(c == C_SIM_TOO_SHORT ? 100 : 2, 2);
      a->buffers[1] = sim_memory(a, c == C_SIM_TOO_SHORT ? 0 : 1, 8);
      out->device_type = ARROW_DEVICE_EXT_DEV;
      out->device_id = 0;
      break;
    case C_GOOD_UTF8:
    case C_DECREASING_OFFSETS:
    case C_NEGATIVE_OFFSET:
    case C_BAD_UTF8: {
      int32_t offsets[4] = {0, 2, 2, 5};
      char data[5] = {'a', 'b', 'c', 'd', 'e'};
      if (c == C_DECREASING_OFFSETS) offsets[2] = 1; /* 0, 2, 1, 5 */
      if (c == C_NEGATIVE_OFFSET) offsets[1] = -3;
      if (c == C_BAD_UTF8) data[0] = (char)0xff;
      s = snode("u", "s");
      a = utf8_leaf(offsets, 4, data, 5);
      break;
    }
    case C_GOOD_STRUCT_UTF8:
    case C_STRUCT_DECREASING_OFFSETS: {
      /* struct<s: utf8> of 3 rows (a record batch), its column lying or not */
      int32_t offsets[4] = {0, 2, 2, 5};
      if (c == C_STRUCT_DECREASING_OFFSETS) offsets[2] = 1;
      s = snode("+s", "");
      add_schema_child(s, snode("u", "s"), 1);
      a = anode(3, 1);
      add_child(a, utf8_leaf(offsets, 4, "abcde", 5), 1);
      break;
    }
    case C_LIST_PAST_CHILD: {
      static const int32_t list_offsets[3] = {0, 2, 9}; /* the child has 4 elements */
      s = snode("+l", "l");
      add_schema_child(s, snode("i", "item"), 1);
      a = anode(2, 2);
      copy_buffer(a, 1, list_offsets, sizeof list_offsets);
      add_child(a, int32_leaf(4), 1);
      break;
    }
    case C_BOOL_HUGE: {
      /* bool of length 2^62 over 64 bytes */
      uint8_t bits[64];
      memset(bits, 0x55, sizeof bits);
      s = snode("b", "flag");
      a = anode(INT64_C(1) << 62, 2);
      copy_buffer(a, 1, bits, sizeof bits);
      break;
    }
    case C_INT64_HUGE:
      /* int64 of length 2^46 over 32 bytes: 2^49 bytes by its declaration */
      s = snode("l", "x");
      a = anode(INT64_C(1) << 46, 2);
      copy_buffer(a, 1, k_values, sizeof k_values);
      break;
    case C_LARGE_UTF8_HUGE: {
      /* large_utf8 ["ab", <2^60 bytes>] over 5 bytes of data */
      const int64_t offsets[3] = {0, 2, INT64_C(1) << 60};
      s = snode("U", "s");
      a = anode(2, 3);
      copy_buffer(a, 1, offsets, sizeof offsets);
      copy_buffer(a, 2, "abcde", 5);
      break;
    }
    default:
      abort();
  }
  *schema = s;
  *array = a;
}

static int case_index(const char* name) {
  if (name == NULL) return -1;
  if (strcmp(name, "good_int32") == 0) return C_GOOD_INT32;
  if (strcmp(name, "good_utf8") == 0) return C_GOOD_UTF8;
  if (strcmp(name, "good_struct_utf8") == 0) return C_GOOD_STRUCT_UTF8;
  for (int i = 0; i < C_COUNT; i++) {
    if (strcmp(name, k_cases[i].name) == 0) return i;
  }
  return -1;
}

FERRY_HOSTILE_EXPORT int32_t ferry_hostile_count(void) { return C_COUNT; }

static const struct array_case* case_at(int32_t i) {
  return i >= 0 && i < C_COUNT ? &k_cases[i] : NULL;
}

FERRY_HOSTILE_EXPORT const char* ferry_hostile_name(int32_t i) {
  return case_at(i) ? case_at(i)->name : NULL;
}
FERRY_HOSTILE_EXPORT int32_t ferry_hostile_find(const char* name) {
  int i = case_index(name);
  return i < C_COUNT ? i : -1;
}
FERRY_HOSTILE_EXPORT int32_t ferry_hostile_kind(int32_t i) {
  return case_at(i) ? case_at(i)->kind : -1;
}
FERRY_HOSTILE_EXPORT int32_t ferry_hostile_flags(int32_t i) {
  return case_at(i) ? case_at(i)->flags : 0;
}
FERRY_HOSTILE_EXPORT int32_t ferry_hostile_code(int32_t i) {
  return case_at(i) ? case_at(i)->code : 0;
}
FERRY_HOSTILE_EXPORT const char* ferry_hostile_where(int32_t i) {
  return case_at(i) ? case_at(i)->where : "";
}
FERRY_HOSTILE_EXPORT const char* ferry_hostile_needle(int32_t i) {
  return case_at(i) ? case_at(i)->needle : "";
}

/* Case `c` into the caller's released structs. */
static void make_case(int c, struct ArrowDeviceArray* out, struct ArrowSchema* schema_out) {
  struct node* s;
  struct node* a;
  memset(out, 0, sizeof *out);
  build(c, &s, &a, out);
  out->array = a->array;
  a->array.release = NULL; /* moved */
  *schema_out = s->schema;
  s->schema.release = NULL; /* moved */
}

FERRY_HOSTILE_EXPORT int ferry_hostile_make(const char* name, struct ArrowDeviceArray* out,
                                            struct ArrowSchema* schema_out) {
  int c = case_index(name);
  if (c < 0 || out == NULL || schema_out == NULL) return EINVAL;
  make_case(c, out, schema_out);
  return 0;
}

/* ---- streams ------------------------------------------------------------------- */

/* A stream's private data: a node (so that it is counted and buried like the
 * others) and what the stream does. */
struct stream {
  struct node node;
  char schema_case[32];
  char batch_case[32];
  int32_t good;
  int32_t calls;
  int failed;
  char message[128];
};

static int stream_get_schema(struct ArrowDeviceArrayStream* stream, struct ArrowSchema* out) {
  struct stream* p = (struct stream*)stream->private_data;
  p->message[0] = '\0';
  if (strcmp(p->schema_case, "released_schema") == 0) {
    memset(out, 0, sizeof *out);
    return 0; /* success, and `out` stays released: a protocol breach */
  }
  if (strcmp(p->schema_case, "schema_fails") == 0) {
    snprintf(p->message, sizeof p->message, "injected failure at get_schema");
    return EIO;
  }
  struct ArrowDeviceArray scratch;
  make_case(case_index(p->schema_case), &scratch, out);
  scratch.array.release(&scratch.array);
  return 0;
}

static int stream_get_next(struct ArrowDeviceArrayStream* stream, struct ArrowDeviceArray* out) {
  struct stream* p = (struct stream*)stream->private_data;
  int32_t call = p->calls++;
  const char* batch = p->batch_case;
  p->message[0] = '\0';
  memset(out, 0, sizeof *out);
  if (p->failed) {
    pthread_mutex_lock(&g_lock);
    g_calls_after_failure++;
    pthread_mutex_unlock(&g_lock);
  }
  struct ArrowSchema scratch;
  if (call < p->good || (p->failed && strcmp(batch, "fail_then_good") == 0)) {
    make_case(case_index(p->schema_case), out, &scratch);
    scratch.release(&scratch);
    return 0;
  }
  if (call > p->good || batch[0] == '\0') return 0; /* the end: `out` stays released */
  if (strcmp(batch, "fails") == 0 || strcmp(batch, "fail_then_good") == 0) {
    p->failed = 1;
    snprintf(p->message, sizeof p->message, "injected failure at get_next %d", (int)call + 1);
    return EIO;
  }
  if (strncmp(batch, "fails_silently:", 15) == 0) {
    p->failed = 1;
    return (int)strtol(batch + 15, NULL, 10);
  }
  if (strcmp(batch, "fills_and_fails") == 0) {
    p->failed = 1;
    make_case(case_index(p->schema_case), out, &scratch); /* filled, yet a failure */
    scratch.release(&scratch);
    return EIO;
  }
  if (strcmp(batch, "other_device") == 0) {
    make_case(case_index(p->schema_case), out, &scratch);
    scratch.release(&scratch);
    out->device_type = ARROW_DEVICE_EXT_DEV; /* on a CPU stream */
    out->device_id = 0;
    return 0;
  }
  make_case(case_index(batch), out, &scratch);
  scratch.release(&scratch);
  return 0;
}

static const char* stream_get_last_error(struct ArrowDeviceArrayStream* stream) {
  struct stream* p = (struct stream*)stream->private_data;
  return p->message[0] != '\0' ? p->message : NULL;
}

static void stream_release(struct ArrowDeviceArrayStream* stream) {
  struct stream* p = (struct stream*)stream->private_data;
  stream->release = NULL;
  if (mark_released(&p->node)) bury(&p->node);
}

static int special_schema(const char* name) {
  return strcmp(name, "released_schema") == 0 || strcmp(name, "schema_fails") == 0;
}

static int special_batch(const char* name) {
  static const char* const k_special[] = {"",        "fails",           "fail_then_good",
                                          "other_device", "fills_and_fails"};
  for (size_t i = 0; i < sizeof k_special / sizeof k_special[0]; i++) {
    if (strcmp(name, k_special[i]) == 0) return 1;
  }
  return strncmp(name, "fails_silently:", 15) == 0;
}

FERRY_HOSTILE_EXPORT int ferry_hostile_stream(const char* schema_case, const char* batch_case,
                                              int32_t good, struct ArrowDeviceArrayStream* out) {
  if (schema_case == NULL || batch_case == NULL || out == NULL || good < 0) return EINVAL;
  if (strlen(schema_case) >= 32 || strlen(batch_case) >= 32) return EINVAL;
  if (!special_schema(schema_case) && case_index(schema_case) < 0) return EINVAL;
  if (!special_batch(batch_case) && case_index(batch_case) < 0) return EINVAL;
  /* batches are of the schema's case: a stream whose schema fails has none */
  if (special_schema(schema_case) && (good > 0 || batch_case[0] != '\0')) return EINVAL;
  struct stream* p = (struct stream*)calloc(1, sizeof *p);
  if (p == NULL) return ENOMEM;
  count_live(1);
  strcpy(p->schema_case, schema_case);
  strcpy(p->batch_case, batch_case);
  p->good = good;
  *out = (struct ArrowDeviceArrayStream){.device_type = ARROW_DEVICE_CPU,
                                          .get_schema = stream_get_schema,
                                          .get_next = stream_get_next,
                                          .get_last_error = stream_get_last_error,
                                          .release = stream_release,
                                          .private_data = p};
  return 0;
}

/* A stream case: ferry_hostile_stream's arguments (`good` batches of the
 * schema case, then the batch case), and what a consumer must report. */
struct stream_case {
  const char *name, *schema_case, *batch_case;
  int32_t good, at, level, code;
  const char* needle;
};

static const struct stream_case k_streams[] = {
    {"released_schema", "released_schema", "", 0, 0, FERRY_VALIDATE_DEFAULT, EIO,
     "released schema"},
    {"schema_fails", "schema_fails", "", 0, 0, FERRY_VALIDATE_DEFAULT, EIO,
     "injected failure at get_schema"},
    /* with a batch: a consumer that reads the schema only for its first
     * batch meets the lie there */
    {"bad_schema", "bad_format", "", 1, 0, FERRY_VALIDATE_DEFAULT, EINVAL, "unknown type 'q'"},
    {"other_device", "good_int32", "other_device", 0, 1, FERRY_VALIDATE_DEFAULT, EINVAL,
     "device type"},
    {"malformed_batch", "good_int32", "n_buffers", 1, 2, FERRY_VALIDATE_DEFAULT, EINVAL,
     "needs 2 buffers, found n_buffers = 1"},
    {"self_cycle_batch", "good_int32", "self_cycle", 1, 2, FERRY_VALIDATE_DEFAULT, EINVAL,
     "root"},
    {"sync_event_batch", "good_int32", "sync_event_cpu", 0, 1, FERRY_VALIDATE_DEFAULT, EINVAL,
     "sync_event"},
    {"fails", "good_int32", "fails", 1, 2, FERRY_VALIDATE_DEFAULT, EIO,
     "injected failure at get_next 2"},
    {"fills_and_fails", "good_int32", "fills_and_fails", 0, 1, FERRY_VALIDATE_DEFAULT, EIO, ""},
    {"content_lie", "good_utf8", "decreasing_offsets", 0, 1, FERRY_VALIDATE_FULL, EINVAL,
     "offsets[2] = 1 is less than offsets[1] = 2"},
};
enum { STREAM_COUNT = sizeof k_streams / sizeof k_streams[0] };

static const struct stream_case* stream_at(int32_t i) {
  return i >= 0 && i < STREAM_COUNT ? &k_streams[i] : NULL;
}

FERRY_HOSTILE_EXPORT int32_t ferry_hostile_stream_count(void) { return STREAM_COUNT; }
FERRY_HOSTILE_EXPORT const char* ferry_hostile_stream_name(int32_t i) {
  return stream_at(i) ? stream_at(i)->name : NULL;
}
FERRY_HOSTILE_EXPORT int32_t ferry_hostile_stream_find(const char* name) {
  for (int32_t i = 0; name != NULL && i < STREAM_COUNT; i++) {
    if (strcmp(name, k_streams[i].name) == 0) return i;
  }
  return -1;
}
FERRY_HOSTILE_EXPORT int32_t ferry_hostile_stream_at(int32_t i) {
  return stream_at(i) ? stream_at(i)->at : -1;
}
FERRY_HOSTILE_EXPORT int32_t ferry_hostile_stream_level(int32_t i) {
  return stream_at(i) ? stream_at(i)->level : -2;
}
FERRY_HOSTILE_EXPORT int32_t ferry_hostile_stream_code(int32_t i) {
  return stream_at(i) ? stream_at(i)->code : 0;
}
FERRY_HOSTILE_EXPORT const char* ferry_hostile_stream_needle(int32_t i) {
  return stream_at(i) ? stream_at(i)->needle : "";
}

FERRY_HOSTILE_EXPORT int ferry_hostile_stream_make(const char* name,
                                                   struct ArrowDeviceArrayStream* out) {
  const struct stream_case* c = stream_at(ferry_hostile_stream_find(name));
  if (c == NULL) return EINVAL;
  return ferry_hostile_stream(c->schema_case, c->batch_case, c->good, out);
}

/* ---- counters ---------------------------------------------------------------------- */

FERRY_HOSTILE_EXPORT int64_t ferry_hostile_calls_after_failure(void) {
  pthread_mutex_lock(&g_lock);
  int64_t n = g_calls_after_failure;
  pthread_mutex_unlock(&g_lock);
  return n;
}

FERRY_HOSTILE_EXPORT int64_t ferry_hostile_live(void) {
  pthread_mutex_lock(&g_lock);
  int64_t n = g_live;
  pthread_mutex_unlock(&g_lock);
  return n;
}

FERRY_HOSTILE_EXPORT int64_t ferry_hostile_released_again(void) {
  pthread_mutex_lock(&g_lock);
  int64_t n = g_again;
  pthread_mutex_unlock(&g_lock);
  return n;
}

FERRY_HOSTILE_EXPORT void ferry_hostile_reset(void) {
  pthread_mutex_lock(&g_lock);
  /* A live tree may still point at a released child: nothing is freed then. */
  struct node* dead = g_live == 0 ? g_graveyard : NULL;
  if (g_live == 0) g_graveyard = NULL;
  g_again = 0;
  g_calls_after_failure = 0;
  pthread_mutex_unlock(&g_lock);
  while (dead != NULL) {
    struct node* next = dead->next_dead;
    for (int i = 0; i < SLOTS; i++) free(dead->owned_buffers[i]);
    free(dead->heap_children);
    free(dead->format);
    free(dead->name);
    free(dead->metadata);
    free(dead);
    dead = next;
  }
}
