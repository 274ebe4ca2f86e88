/* Validation of schemas and device arrays against the C data interface and
 * the columnar format: every finding is reported (not just the first), each
 * naming the rule, the path of the node ("root.children[1].dictionary") and
 * the field that is wrong. docs/validation.md says what is checked and what
 * cannot be.
 *
 * Two walks: the schema tree first (its findings come first), recording
 * every distinct schema node with its parsed layout; then the array tree,
 * paired node by node with those records. Each walk enters each distinct
 * node once (node_table.h): a child or dictionary met a second time is one
 * finding ("shared", or "cycle" when it is its own ancestor) and is not
 * entered again, so the work is linear in the distinct nodes whatever the
 * producer's graph. Paths are not built while walking: each node records its
 * parent and slot, and a path is written only when a finding is reported.
 *
 * The walk never trusts a count it has not checked: pointers are tested for
 * NULL before use and every range is checked before arithmetic on it. A
 * buffer that failed its residency check is never read. Wild (non-NULL but
 * dangling) pointers cannot be detected here; the ferry tool runs validation
 * in a forked child for that reason. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accessors.h"
#include "backend.h"
#include "buffer_size.h"
#include "format.h"
#include "internal.h"
#include "node_table.h"
#include "scan.h"

/* Nesting deeper than this is reported instead of followed: real schemas are
 * far shallower, and the walks recurse. (Cycles are found by the node table
 * long before.) */
#define FERRY_VALIDATE_MAX_DEPTH 64
/* Path buffer: enough for the maximum depth of ".children[NNN]" segments. */
#define FERRY_VALIDATE_PATH_SIZE 2048
/* Variadic buffer counts above this are reported instead of walked. */
#define FERRY_VALIDATE_MAX_BUFFERS (INT64_C(1) << 32)
/* Device buffers larger than this are not copied to the host for FULL checks. */
#define FERRY_VALIDATE_MAX_COPY (INT64_C(1) << 32)
/* Nodes (of each tree) and child links recorded on the stack; larger trees
 * move their records to the heap. */
#define FERRY_VALIDATE_INLINE_NODES 128
#define FERRY_VALIDATE_INLINE_SLOTS 256
#define FERRY_VALIDATE_INLINE_LINKS 256

#define KNOWN_SCHEMA_FLAGS \
  (ARROW_FLAG_DICTIONARY_ORDERED | ARROW_FLAG_NULLABLE | ARROW_FLAG_MAP_KEYS_SORTED)

/* The slot of a node in its parent: a child index, or one of these. */
#define SLOT_ROOT INT64_MIN
#define SLOT_DICTIONARY INT64_C(-1)
/* A link to no usable schema (NULL, released, or too deep to walk). */
#define NO_SCHEMA (-1)

/* What both trees record of a node (first, so paths can be built from
 * either table). */
struct NodeHeader {
  const void* key; /* the node's address (node_table.h) */
  int64_t slot;
  int32_t parent; /* index of the parent node; -1 for the root */
  uint8_t on_path; /* an ancestor of the node being walked */
  uint8_t repeat_reported; /* its one "shared" or "cycle" finding is out */
};

/* One live schema, as the array walk needs it. */
struct SchemaNode {
  struct NodeHeader h;
  const char* format;     /* the schema's own string, for messages */
  int64_t n_children;     /* as declared */
  int32_t children;       /* first of n_children links; -1 when there is no table */
  int32_t dictionary;     /* node of the dictionary, or NO_SCHEMA */
  uint8_t has_dictionary; /* the schema's dictionary pointer is not NULL */
  uint8_t has_layout;     /* the format parsed: `layout` holds it */
  struct FerryFormat layout;
  /* ferry__max_slots(&layout): beyond this offset + length, a buffer's size
   * may overflow int64 (report_size_overflow asks buffer_size.c). */
  int64_t max_slots;
};

struct ArrayNode {
  struct NodeHeader h;
};

/* The schema tree as walked once: its nodes and the links from each node to
 * its children's nodes (NO_SCHEMA where a child is unusable). */
struct SchemaTree {
  struct FerryNodeTable nodes;
  int32_t* links;
  int32_t n_links;
  int32_t links_capacity;
  int32_t* inline_links;
};

/* Where the next finding is: child `slot` of node `parent` of `table`. */
struct Where {
  const struct FerryNodeTable* table;
  int32_t parent;
  int64_t slot;
};

struct Validator {
  FerryFindingFn on_finding;
  void* user_data;
  struct FerryError* error;
  int64_t n_findings;
  int32_t level;
  struct Where where;
  struct SchemaTree* schemas;
  struct FerryNodeTable* arrays;

  /* Device of the array being validated. `device` is NULL when residency
   * cannot be checked (the CPU, or a device that did not resolve); FULL
   * content checks then read only host memory. */
  ArrowDeviceType device_type;
  int64_t device_id;
  struct FerryDevice* device;
  struct FerryDevice* host;
  int can_read;
  int host_accessible;
};

/* ------------------------------------------------------------------------ */
/* Findings and paths                                                        */
/* ------------------------------------------------------------------------ */

/* Writes the path of `where` ("root.children[1].dictionary") into `out`. */
static void write_path(const struct Where* where, char* out, size_t out_size) {
  /* Walked nodes are at most MAX_DEPTH deep, so a path has at most one
   * segment more than that. */
  int64_t segments[FERRY_VALIDATE_MAX_DEPTH + 2];
  int n = 0;
  int64_t slot = where->slot;
  int32_t parent = where->parent;
  while (slot != SLOT_ROOT && n < (int)(sizeof segments / sizeof segments[0])) {
    segments[n++] = slot;
    const struct NodeHeader* h =
        (const struct NodeHeader*)ferry__node_table_at(where->table, parent);
    slot = h->slot;
    parent = h->parent;
  }
  size_t used = (size_t)snprintf(out, out_size, "root");
  while (n > 0 && used < out_size) {
    int64_t s = segments[--n];
    int written = s == SLOT_DICTIONARY
                      ? snprintf(out + used, out_size - used, ".dictionary")
                      : snprintf(out + used, out_size - used, ".children[%lld]",
                                 (long long)s);
    if (written < 0) break;
    used += (size_t)written;
  }
}

/* Findings are the rare path: kept out of the way of the checks. */
#if defined(__GNUC__)
#define FERRY_COLD __attribute__((cold, noinline))
/* Kept out of the recursive walk's frame (its buffers would be on the stack
 * once per level). */
#define FERRY_NOINLINE __attribute__((noinline))
/* The few steps of every validation's entry, in the caller's frame. */
#define FERRY_ALWAYS_INLINE __attribute__((always_inline))
#else
#define FERRY_COLD
#define FERRY_NOINLINE
#define FERRY_ALWAYS_INLINE
#endif

static FERRY_COLD void report(struct Validator* v, const char* rule, const char* fmt, ...)
    FERRY_PRINTF(3, 4);
static void report(struct Validator* v, const char* rule, const char* fmt, ...) {
  char what[768];
  char path[FERRY_VALIDATE_PATH_SIZE];
  va_list args;
  va_start(args, fmt);
  vsnprintf(what, sizeof what, fmt, args);
  va_end(args);
  write_path(&v->where, path, sizeof path);
  if (v->n_findings == 0) {
    ferry__set_error(v->error, EINVAL, "%s: %s: %s", rule, path, what);
  }
  v->n_findings++;
  if (v->on_finding != NULL) v->on_finding(v->user_data, rule, path, what);
}

/* Moves the finding position to child `slot` of node `parent` of `table`;
 * returns the position to restore afterwards. */
static struct Where enter(struct Validator* v, const struct FerryNodeTable* table,
                          int32_t parent, int64_t slot) {
  struct Where saved = v->where;
  v->where.table = table;
  v->where.parent = parent;
  v->where.slot = slot;
  return saved;
}

/* A node met a second time (at v->where): one finding per such node, naming
 * where it was met first; `kind` is "schema" or "array". */
static void report_repeat(struct Validator* v, struct FerryNodeTable* table,
                          int32_t seen, const char* kind) {
  struct NodeHeader* h = (struct NodeHeader*)ferry__node_table_at(table, seen);
  if (h->repeat_reported) return;
  h->repeat_reported = 1;
  char first[FERRY_VALIDATE_PATH_SIZE];
  struct Where first_where = {table, h->parent, h->slot};
  write_path(&first_where, first, sizeof first);
  if (h->on_path) {
    report(v, "cycle", "this %s is its own ancestor (%s): the tree has a cycle", kind,
           first);
  } else {
    report(v, "shared",
           "this %s is also at %s: a child or dictionary may appear only once "
           "(its parent's release frees it, so a shared one would be released twice)",
           kind, first);
  }
}

static void report_out_of_memory(struct Validator* v, const char* kind) {
  report(v, "memory", "out of memory recording the %s tree; its walk stops here",
         kind);
}

static void validator_init(struct Validator* v, FerryFindingFn on_finding,
                           void* user_data, struct FerryError* error, int32_t level) {
  v->on_finding = on_finding;
  v->user_data = user_data;
  v->error = error;
  v->n_findings = 0;
  v->level = level;
  v->where.table = NULL;
  v->where.parent = -1;
  v->where.slot = SLOT_ROOT;
  v->schemas = NULL;
  v->arrays = NULL;
  v->device_type = ARROW_DEVICE_CPU;
  v->device_id = -1;
  v->device = NULL;
  v->host = NULL;
  v->can_read = 0;
  v->host_accessible = 0;
}

static int validator_finish(struct Validator* v) {
  if (v->n_findings == 0) {
    if (v->error != NULL) v->error->message[0] = '\0'; /* ferry_error_init */
    return FERRY_OK;
  }
  return EINVAL;
}

/* ------------------------------------------------------------------------ */
/* Names for messages                                                        */
/* ------------------------------------------------------------------------ */

static const char* type_name(enum FerryTypeId type) {
  switch (type) {
    case FERRY_TYPE_NA: return "null";
    case FERRY_TYPE_BOOL: return "bool";
    case FERRY_TYPE_INT8: return "int8";
    case FERRY_TYPE_UINT8: return "uint8";
    case FERRY_TYPE_INT16: return "int16";
    case FERRY_TYPE_UINT16: return "uint16";
    case FERRY_TYPE_INT32: return "int32";
    case FERRY_TYPE_UINT32: return "uint32";
    case FERRY_TYPE_INT64: return "int64";
    case FERRY_TYPE_UINT64: return "uint64";
    case FERRY_TYPE_HALF_FLOAT: return "float16";
    case FERRY_TYPE_FLOAT: return "float32";
    case FERRY_TYPE_DOUBLE: return "float64";
    case FERRY_TYPE_BINARY: return "binary";
    case FERRY_TYPE_LARGE_BINARY: return "large_binary";
    case FERRY_TYPE_BINARY_VIEW: return "binary_view";
    case FERRY_TYPE_STRING: return "utf8";
    case FERRY_TYPE_LARGE_STRING: return "large_utf8";
    case FERRY_TYPE_STRING_VIEW: return "utf8_view";
    case FERRY_TYPE_DECIMAL: return "decimal";
    case FERRY_TYPE_FIXED_SIZE_BINARY: return "fixed_size_binary";
    case FERRY_TYPE_DATE32: return "date32";
    case FERRY_TYPE_DATE64: return "date64";
    case FERRY_TYPE_TIME32: return "time32";
    case FERRY_TYPE_TIME64: return "time64";
    case FERRY_TYPE_TIMESTAMP: return "timestamp";
    case FERRY_TYPE_DURATION: return "duration";
    case FERRY_TYPE_INTERVAL_MONTHS: return "interval_months";
    case FERRY_TYPE_INTERVAL_DAY_TIME: return "interval_day_time";
    case FERRY_TYPE_INTERVAL_MONTH_DAY_NANO: return "interval_month_day_nano";
    case FERRY_TYPE_LIST: return "list";
    case FERRY_TYPE_LARGE_LIST: return "large_list";
    case FERRY_TYPE_LIST_VIEW: return "list_view";
    case FERRY_TYPE_LARGE_LIST_VIEW: return "large_list_view";
    case FERRY_TYPE_FIXED_SIZE_LIST: return "fixed_size_list";
    case FERRY_TYPE_STRUCT: return "struct";
    case FERRY_TYPE_MAP: return "map";
    case FERRY_TYPE_DENSE_UNION: return "dense_union";
    case FERRY_TYPE_SPARSE_UNION: return "sparse_union";
    case FERRY_TYPE_RUN_END_ENCODED: return "run_end_encoded";
  }
  return "unknown";
}

static const char* role_name(enum FerryBufferRole role) {
  switch (role) {
    case FERRY_BUFFER_VALIDITY: return "validity";
    case FERRY_BUFFER_DATA: return "data";
    case FERRY_BUFFER_OFFSETS: return "offsets";
    case FERRY_BUFFER_SIZES: return "sizes";
    case FERRY_BUFFER_VAR_DATA: return "data";
    case FERRY_BUFFER_TYPE_IDS: return "type_ids";
    case FERRY_BUFFER_UNION_OFFSETS: return "offsets";
    case FERRY_BUFFER_VIEWS: return "views";
  }
  return "unknown";
}

/* Name of buffer `i` of a layout, including the view types' variadic tail.
 * Built only when a finding needs it. */
struct BufferLabel {
  char text[96];
};

static struct BufferLabel buffer_label(const struct FerryFormat* f, int64_t i,
                                       int64_t n_buffers) {
  struct BufferLabel l;
  if (i < f->n_fixed_buffers) {
    snprintf(l.text, sizeof l.text, "buffer %lld (%s)", (long long)i,
             role_name(f->roles[i]));
  } else if (f->is_view && i == n_buffers - 1) {
    snprintf(l.text, sizeof l.text, "buffer %lld (variadic sizes)", (long long)i);
  } else if (f->is_view) {
    snprintf(l.text, sizeof l.text, "buffer %lld (variadic data %lld)", (long long)i,
             (long long)(i - f->n_fixed_buffers));
  } else {
    snprintf(l.text, sizeof l.text, "buffer %lld", (long long)i);
  }
  return l;
}

/* A buffer's name for messages: a fixed text, or buffer `index` of layout
 * `f`, written only when a message needs it. */
struct BufferName {
  const char* text; /* when NULL, the name is buffer_label(f, index, n_buffers) */
  const struct FerryFormat* f;
  int64_t index;
  int64_t n_buffers;
};

static struct BufferName fixed_name(const char* text) {
  struct BufferName name = {text, NULL, 0, 0};
  return name;
}

static struct BufferName layout_name(const struct FerryFormat* f, int64_t index,
                                     int64_t n_buffers) {
  struct BufferName name = {NULL, f, index, n_buffers};
  return name;
}

static const char* name_text(const struct BufferName* name, struct BufferLabel* storage) {
  if (name->text != NULL) return name->text;
  *storage = buffer_label(name->f, name->index, name->n_buffers);
  return storage->text;
}

static int is_known_device_type(ArrowDeviceType t) {
  switch (t) {
    case ARROW_DEVICE_CPU:
    case ARROW_DEVICE_CUDA:
    case ARROW_DEVICE_CUDA_HOST:
    case ARROW_DEVICE_OPENCL:
    case ARROW_DEVICE_VULKAN:
    case ARROW_DEVICE_METAL:
    case ARROW_DEVICE_VPI:
    case ARROW_DEVICE_ROCM:
    case ARROW_DEVICE_ROCM_HOST:
    case ARROW_DEVICE_EXT_DEV:
    case ARROW_DEVICE_CUDA_MANAGED:
    case ARROW_DEVICE_ONEAPI:
    case ARROW_DEVICE_WEBGPU:
    case ARROW_DEVICE_HEXAGON: return 1;
    default: return 0;
  }
}

static int is_integer_type(enum FerryTypeId t) {
  return t >= FERRY_TYPE_INT8 && t <= FERRY_TYPE_UINT64;
}

static int is_signed_integer(enum FerryTypeId t) {
  return t == FERRY_TYPE_INT8 || t == FERRY_TYPE_INT16 || t == FERRY_TYPE_INT32 ||
         t == FERRY_TYPE_INT64;
}

/* ------------------------------------------------------------------------ */
/* Schemas                                                                   */
/* ------------------------------------------------------------------------ */

/* The storage a schema tree starts with (on the caller's stack). */
struct SchemaTreeStorage {
  struct SchemaNode nodes[FERRY_VALIDATE_INLINE_NODES];
  int32_t slots[FERRY_VALIDATE_INLINE_SLOTS];
  int32_t links[FERRY_VALIDATE_INLINE_LINKS];
};

static void schema_tree_init(struct SchemaTree* tree, struct SchemaTreeStorage* storage) {
  ferry__node_table_init(&tree->nodes, sizeof(struct SchemaNode), storage->nodes,
                         FERRY_VALIDATE_INLINE_NODES, storage->slots,
                         FERRY_VALIDATE_INLINE_SLOTS);
  tree->links = storage->links;
  tree->n_links = 0;
  tree->links_capacity = FERRY_VALIDATE_INLINE_LINKS;
  tree->inline_links = storage->links;
}

static void schema_tree_free(struct SchemaTree* tree) {
  ferry__node_table_free(&tree->nodes);
  if (tree->links != tree->inline_links) free(tree->links);
  tree->links = tree->inline_links;
}

/* Reserves `n` links; returns the first one's index, or -1 without memory. */
static int32_t reserve_links(struct SchemaTree* tree, int64_t n) {
  if (n > INT32_MAX / 2 - tree->n_links) return -1;
  int32_t needed = tree->n_links + (int32_t)n;
  if (needed > tree->links_capacity) {
    int32_t capacity = tree->links_capacity;
    while (capacity < needed) capacity = capacity > INT32_MAX / 4 ? needed : capacity * 2;
    int32_t* grown =
        tree->links == tree->inline_links
            ? (int32_t*)malloc((size_t)capacity * sizeof(int32_t))
            : (int32_t*)realloc(tree->links, (size_t)capacity * sizeof(int32_t));
    if (grown == NULL) return -1;
    if (tree->links == tree->inline_links) {
      memcpy(grown, tree->links, (size_t)tree->n_links * sizeof(int32_t));
    }
    tree->links = grown;
    tree->links_capacity = capacity;
  }
  int32_t first = tree->n_links;
  tree->n_links = needed;
  return first;
}

static struct SchemaNode* schema_node(const struct SchemaTree* tree, int32_t index) {
  return (struct SchemaNode*)ferry__node_table_at(&tree->nodes, index);
}

/* Parses a schema's format quietly (the schema walk reports problems);
 * returns 1 when `out` holds a usable layout. */
static int schema_layout(const struct ArrowSchema* schema, struct FerryFormat* out) {
  if (schema == NULL || schema->release == NULL || schema->format == NULL) return 0;
  return ferry__format_parse(schema->format, out, NULL) == FERRY_OK;
}

/* Layout-specific rules on the children of a schema whose format parsed
 * (node `self`, at v->where). */
static void validate_schema_children_layout(struct Validator* v, int32_t self,
                                            const struct ArrowSchema* schema,
                                            const struct FerryFormat* f) {
  if (f->n_children >= 0 && schema->n_children != f->n_children) {
    report(v, "n_children", "%s schema needs %lld child%s, found n_children = %lld",
           type_name(f->type), (long long)f->n_children, f->n_children == 1 ? "" : "ren",
           (long long)schema->n_children);
    return;
  }
  if (schema->children == NULL) return;
  if (f->type == FERRY_TYPE_MAP && schema->n_children == 1) {
    const struct ArrowSchema* entries = schema->children[0];
    struct FerryFormat ef;
    if (schema_layout(entries, &ef)) {
      struct Where saved = enter(v, &v->schemas->nodes, self, 0);
      if (ef.type != FERRY_TYPE_STRUCT || entries->n_children != 2) {
        report(v, "map",
               "the entries child of a map must be a struct of 2 children "
               "(key, value), found format \"%s\" with %lld children",
               entries->format, (long long)entries->n_children);
      }
      if (entries->flags & ARROW_FLAG_NULLABLE) {
        report(v, "map", "the entries child of a map must not be nullable");
      }
      v->where = saved;
    }
  }
  if (f->type == FERRY_TYPE_RUN_END_ENCODED && schema->n_children == 2) {
    const struct ArrowSchema* run_ends = schema->children[0];
    struct FerryFormat rf;
    if (schema_layout(run_ends, &rf)) {
      struct Where saved = enter(v, &v->schemas->nodes, self, 0);
      if (rf.type != FERRY_TYPE_INT16 && rf.type != FERRY_TYPE_INT32 &&
          rf.type != FERRY_TYPE_INT64) {
        report(v, "run_ends",
               "run ends must be int16, int32 or int64, found format \"%s\"",
               run_ends->format);
      }
      v->where = saved;
    }
  }
}

/* The C data interface's text rules: the name is UTF-8, the metadata is
 * well formed and its keys are UTF-8 (its values may be any bytes).
 *
 * The metadata is read at FULL only. It carries no size: its walk follows
 * counts and lengths read from the blob itself, so a blob declaring more
 * pairs than it holds sends any walk past its end, and no consumer can
 * tell. DEFAULT reads only what it can bound, so it does not read the
 * metadata at all; FULL, which reads what the producer declares, walks it
 * with limits on counts and lengths (docs/validation.md). */
static void validate_name_and_metadata(struct Validator* v, const struct ArrowSchema* schema) {
  if (schema->name != NULL) {
    int64_t length = (int64_t)strlen(schema->name);
    int64_t good = ferry__utf8_valid_prefix((const uint8_t*)schema->name, length);
    if (good != length) {
      report(v, "utf8", "name is not valid UTF-8 (bad byte 0x%02x at byte %lld)",
             (unsigned)(uint8_t)schema->name[good], (long long)good);
    }
  }
  if (v->level != FERRY_VALIDATE_FULL || schema->metadata == NULL) return;
  struct FerryMetadataBadKey bad;
  struct FerryMetadataProblem problem;
  int rc = ferry__metadata_check_keys(schema->metadata, &bad, &problem);
  if (rc == -2) {
    if (problem.index < 0) {
      report(v, "metadata",
             "metadata declares %lld pairs, more than the %lld FULL validation walks (the "
             "blob has no size, so such a count is taken as a corrupt header)",
             (long long)problem.value, (long long)problem.limit);
    } else {
      report(v, "metadata",
             "metadata pair %lld declares a %s of %lld bytes, more than the %lld FULL "
             "validation walks (the blob has no size, so such a length is taken as "
             "corrupt)",
             (long long)problem.index, problem.what, (long long)problem.value,
             (long long)problem.limit);
    }
  } else if (rc < 0) {
    report(v, "metadata",
           "metadata is malformed: a negative pair count or key/value length");
  } else if (rc > 0) {
    report(v, "utf8", "metadata key %lld is not valid UTF-8 (bad byte 0x%02x at byte %lld)",
           (long long)bad.index, (unsigned)bad.byte, (long long)bad.byte_offset);
  }
}

/* Walks the schema at child `slot` of node `parent` (v->where is there);
 * returns its node, or NO_SCHEMA when there is no usable schema. */
static int32_t visit_schema(struct Validator* v, const struct ArrowSchema* schema,
                            int32_t parent, int64_t slot, int depth) {
  struct SchemaTree* tree = v->schemas;
  if (schema == NULL) {
    report(v, "null", "schema pointer is NULL");
    return NO_SCHEMA;
  }
  if (schema->release == NULL) {
    report(v, "released", "schema is released (release is NULL)");
    return NO_SCHEMA;
  }
  int32_t seen = ferry__node_table_find(&tree->nodes, schema);
  if (seen >= 0) {
    report_repeat(v, &tree->nodes, seen, "schema");
    return seen;
  }
  if (depth > FERRY_VALIDATE_MAX_DEPTH) {
    report(v, "depth", "schema nesting is deeper than %d levels",
           FERRY_VALIDATE_MAX_DEPTH);
    return NO_SCHEMA;
  }
  int32_t self = ferry__node_table_add(&tree->nodes, schema);
  if (self < 0) {
    report_out_of_memory(v, "schema");
    return NO_SCHEMA;
  }
  struct SchemaNode* node = schema_node(tree, self);
  node->h.slot = slot;
  node->h.parent = parent;
  node->h.on_path = 1;
  node->h.repeat_reported = 0;
  node->format = schema->format;
  node->n_children = schema->n_children;
  node->children = -1;
  node->dictionary = NO_SCHEMA;
  node->has_dictionary = schema->dictionary != NULL;
  node->has_layout = 0;

  struct FerryFormat f;
  int have_layout = 0;
  if (schema->format == NULL) {
    report(v, "format", "format is NULL");
  } else {
    struct FerryError format_error;
    ferry_error_init(&format_error);
    if (ferry__format_parse(schema->format, &f, &format_error) != FERRY_OK) {
      report(v, "format", "%s", format_error.message);
    } else {
      have_layout = 1;
      node->has_layout = 1;
      node->layout = f;
      node->max_slots = ferry__max_slots(&f);
    }
  }
  if (schema->name != NULL || schema->metadata != NULL) {
    validate_name_and_metadata(v, schema);
  }
  if (schema->flags & ~(int64_t)KNOWN_SCHEMA_FLAGS) {
    report(v, "flags", "flags 0x%llx has unknown bits 0x%llx (known: 0x%x)",
           (unsigned long long)schema->flags,
           (unsigned long long)(schema->flags & ~(int64_t)KNOWN_SCHEMA_FLAGS),
           (unsigned)KNOWN_SCHEMA_FLAGS);
  }
  if (schema->n_children < 0) {
    report(v, "n_children", "n_children is negative (%lld)",
           (long long)schema->n_children);
    schema_node(tree, self)->h.on_path = 0;
    return self;
  }
  if (schema->n_children > 0 && schema->children == NULL) {
    report(v, "children", "children is NULL but n_children is %lld",
           (long long)schema->n_children);
  }
  if (have_layout) validate_schema_children_layout(v, self, schema, &f);
  if (schema->dictionary != NULL && have_layout && !is_integer_type(f.type)) {
    report(v, "dictionary",
           "a dictionary-encoded field needs an integer index format, "
           "found \"%s\"",
           schema->format);
  }
  if (schema->children != NULL && schema->n_children > 0) {
    int32_t links = reserve_links(tree, schema->n_children);
    if (links < 0) {
      report_out_of_memory(v, "schema");
    } else {
      schema_node(tree, self)->children = links;
      for (int64_t i = 0; i < schema->n_children; i++) {
        struct Where saved = enter(v, &tree->nodes, self, i);
        int32_t child = visit_schema(v, schema->children[i], self, i, depth + 1);
        tree->links[links + i] = child;
        v->where = saved;
      }
    }
  }
  if (schema->dictionary != NULL) {
    struct Where saved = enter(v, &tree->nodes, self, SLOT_DICTIONARY);
    int32_t dictionary =
        visit_schema(v, schema->dictionary, self, SLOT_DICTIONARY, depth + 1);
    schema_node(tree, self)->dictionary = dictionary;
    v->where = saved;
  }
  schema_node(tree, self)->h.on_path = 0;
  return self;
}

/* Walks the whole schema tree into `tree` (a root that is missing or
 * released records nothing). */
static void walk_schema(struct Validator* v, struct SchemaTree* tree,
                        const struct ArrowSchema* schema) {
  v->schemas = tree;
  struct Where saved = enter(v, &tree->nodes, -1, SLOT_ROOT);
  visit_schema(v, schema, -1, SLOT_ROOT, 0);
  v->where = saved;
}

static int freeze_schema_tree(const struct SchemaTree* tree,
                              struct FerryPreparedSchema** out, struct FerryError* error);

/* A validation under way: the validator and the tree of the schema it
 * walked, whose first nodes live in `storage` (on the caller's stack). */
struct SchemaCheck {
  struct Validator v;
  struct SchemaTreeStorage storage;
  struct SchemaTree tree;
};

/* Starts a validation at `level` by walking `schema` into `check->tree`;
 * the caller walks the arrays (if any), then frees the tree. */
static inline FERRY_ALWAYS_INLINE void schema_check_begin(
    struct SchemaCheck* check, const struct ArrowSchema* schema, FerryFindingFn on_finding,
    void* user_data, struct FerryError* error, int32_t level) {
  validator_init(&check->v, on_finding, user_data, error, level);
  schema_tree_init(&check->tree, &check->storage);
  walk_schema(&check->v, &check->tree, schema);
}

/* Validates `schema` alone; when it is clean and `prepared` is not NULL,
 * keeps its tree there (ferry_prepared_schema_create). */
static int check_schema(const struct ArrowSchema* schema, FerryFindingFn on_finding,
                        void* user_data, struct FerryError* error,
                        struct FerryPreparedSchema** prepared) {
  struct SchemaCheck check;
  schema_check_begin(&check, schema, on_finding, user_data, error, FERRY_VALIDATE_DEFAULT);
  int rc = validator_finish(&check.v);
  if (rc == FERRY_OK && prepared != NULL) {
    rc = freeze_schema_tree(&check.tree, prepared, error);
  }
  schema_tree_free(&check.tree);
  return rc;
}

int ferry_validate_schema(const struct ArrowSchema* schema, FerryFindingFn on_finding,
                          void* user_data, struct FerryError* error) {
  return check_schema(schema, on_finding, user_data, error, NULL);
}

/* ------------------------------------------------------------------------ */
/* Reading buffers (FULL level)                                              */
/* ------------------------------------------------------------------------ */

/* A buffer readable by the host: either the original memory (host-accessible
 * devices) or a copy that `owned` holds. */
struct HostView {
  const uint8_t* data;
  int64_t size;
  void* owned;
};

static void host_view_reset(struct HostView* h) {
  free(h->owned);
  memset(h, 0, sizeof *h);
}

/* Makes `size` bytes at `ptr` readable on the host; reports and returns 0
 * when that fails. */
static int host_view_fetch(struct Validator* v, const void* ptr, int64_t size,
                           struct BufferName name, struct HostView* out) {
  memset(out, 0, sizeof *out);
  out->size = size;
  if (size <= 0) {
    out->data = (const uint8_t*)ptr;
    return 1;
  }
  if (size > FERRY_MAX_READ_BYTES) {
    struct BufferLabel storage;
    report(v, "buffer_size",
           "%s: declares %lld bytes, more than any buffer ferry reads (2^48): not read",
           name_text(&name, &storage), (long long)size);
    return 0;
  }
  if (v->host_accessible) {
    out->data = (const uint8_t*)ptr;
    return 1;
  }
  struct BufferLabel storage;
  const char* label = name_text(&name, &storage);
  if (size > FERRY_VALIDATE_MAX_COPY) {
    report(v, "buffer_size", "%s: %lld bytes is too large to copy for FULL validation",
           label, (long long)size);
    return 0;
  }
  out->owned = malloc((size_t)size);
  if (out->owned == NULL) {
    report(v, "buffer_size", "%s: out of memory copying %lld bytes to the host", label,
           (long long)size);
    return 0;
  }
  struct FerryError copy_error;
  ferry_error_init(&copy_error);
  if (ferry_device_memcpy(v->host, out->owned, v->device, ptr, size, NULL, &copy_error) !=
      FERRY_OK) {
    report(v, "device", "%s: copying %lld bytes to the host failed: %s", label,
           (long long)size, copy_error.message);
    host_view_reset(out);
    return 0;
  }
  out->data = (const uint8_t*)out->owned;
  return 1;
}

static int64_t read_offset(const uint8_t* data, int32_t width, int64_t i) {
  if (width == 8) {
    int64_t value;
    memcpy(&value, data + i * 8, 8);
    return value;
  }
  int32_t value;
  memcpy(&value, data + i * 4, 4);
  return value;
}

/* Reads integer i of a buffer of integer type `t` as int64 (uint64 values
 * above INT64_MAX come back negative, which every caller treats as out of
 * range). */
static int64_t read_integer(const uint8_t* data, enum FerryTypeId t, int64_t i) {
/* Element i as a T, with memcpy: buffers may be unaligned. */
#define READ_AS(T)                                        \
  do {                                                    \
    T x;                                                  \
    memcpy(&x, data + (int64_t)sizeof(T) * i, sizeof(T)); \
    return (int64_t)x;                                    \
  } while (0)
  switch (t) {
    case FERRY_TYPE_INT8: READ_AS(int8_t);
    case FERRY_TYPE_UINT8: READ_AS(uint8_t);
    case FERRY_TYPE_INT16: READ_AS(int16_t);
    case FERRY_TYPE_UINT16: READ_AS(uint16_t);
    case FERRY_TYPE_INT32: READ_AS(int32_t);
    case FERRY_TYPE_UINT32: READ_AS(uint32_t);
    case FERRY_TYPE_INT64: READ_AS(int64_t);
    case FERRY_TYPE_UINT64: READ_AS(uint64_t);
    default: return 0;
  }
#undef READ_AS
}

static int bit_is_set(const uint8_t* bits, int64_t i) {
  return (bits[i >> 3] >> (i & 7)) & 1;
}

/* ------------------------------------------------------------------------ */
/* Arrays                                                                    */
/* ------------------------------------------------------------------------ */

/* Everything the content checks of one node need, read once. A buffer whose
 * residency check failed is `unreadable` and never fetched. */
struct NodeBuffers {
  struct HostView views[FERRY_FORMAT_MAX_FIXED_BUFFERS];
  int fetched[FERRY_FORMAT_MAX_FIXED_BUFFERS];
  unsigned unreadable; /* bit i: fixed buffer i */
};

static void node_buffers_reset(struct NodeBuffers* b) {
  for (int i = 0; i < FERRY_FORMAT_MAX_FIXED_BUFFERS; i++) host_view_reset(&b->views[i]);
}

/* Size of buffer i through the shared size computation; -1 when it cannot
 * be computed (the content checks explain why). */
static int64_t buffer_size(struct Validator* v, const struct SchemaNode* sn,
                           const struct ArrowArray* array, int64_t i) {
  int64_t size = -1;
  if (ferry__buffer_size(&sn->layout, sn->format, array, v->device_type, v->device_id, i,
                         &size, NULL) != FERRY_OK) {
    return -1;
  }
  return size;
}

/* Residency of one buffer: reported when the backend says it lives
 * elsewhere; unknown answers (ENOTSUP, no device) are skipped. Returns 0
 * when the buffer must not be read. */
static int check_residency(struct Validator* v, const void* ptr, int64_t size,
                           struct BufferName name) {
  if (v->device == NULL || ptr == NULL) return 1;
  struct FerryError residency_error;
  ferry_error_init(&residency_error);
  int rc =
      ferry__device_check_pointer(v->device, ptr, size < 0 ? 0 : size, &residency_error);
  if (rc == FERRY_OK) return 1;
  /* Unknown memory (the backend cannot tell; on the sim, ext_dev memory it
   * did not allocate) is accepted as memory of an unknown device is: no
   * finding, and where the host would dereference it directly, not read
   * (reads through a driver's copy report their own errors). */
  if (rc == ENOTSUP) return !v->host_accessible;
  struct BufferLabel storage;
  const char* label = name_text(&name, &storage);
  if (rc == EFAULT) {
    report(v, "device", "%s at %p (%lld bytes) is not on %s:%lld: %s", label, ptr,
           (long long)size, ferry_device_type_name(v->device_type),
           (long long)v->device_id, residency_error.message);
  } else {
    /* The backend could not answer (a driver error): the residency of this
     * buffer is unknown, which a consumer must hear about. */
    report(v, "device", "%s at %p: residency could not be checked on %s:%lld: %s", label,
           ptr, ferry_device_type_name(v->device_type), (long long)v->device_id,
           residency_error.message);
  }
  return 0;
}

/* check_residency without a finding, for buffers of another node (whose own
 * walk reports them): 1 when [ptr, ptr + size) may be read. */
static int residency_allows_read(struct Validator* v, const void* ptr, int64_t size) {
  if (v->device == NULL || ptr == NULL) return 1;
  int rc = ferry__device_check_pointer(v->device, ptr, size, NULL);
  return rc == FERRY_OK || (rc == ENOTSUP && !v->host_accessible);
}

/* FULL checks of the offsets buffer of a variable-size or list layout:
 * entries [offset, offset + length] non-negative, monotone, and the last
 * within `limit` (the data size or the child's length, -1 when unknown). */
static int check_offsets(struct Validator* v, const struct FerryFormat* f,
                         const uint8_t* offsets, const struct ArrowArray* array,
                         int64_t limit, const char* limit_what) {
  int64_t first_index = array->offset;
  int64_t last_index = array->offset + array->length;
  int64_t bad = ferry__first_bad_offset(offsets, f->offset_bytes, first_index, last_index);
  if (bad == first_index) {
    report(v, "offsets", "buffer 1 (offsets): offsets[%lld] = %lld is negative",
           (long long)first_index, (long long)read_offset(offsets, f->offset_bytes, bad));
    return 0;
  }
  if (bad >= 0) {
    report(v, "offsets",
           "buffer 1 (offsets): offsets[%lld] = %lld is less than offsets[%lld] = %lld "
           "(offsets must not decrease)",
           (long long)bad, (long long)read_offset(offsets, f->offset_bytes, bad),
           (long long)(bad - 1), (long long)read_offset(offsets, f->offset_bytes, bad - 1));
    return 0;
  }
  int64_t last = read_offset(offsets, f->offset_bytes, last_index);
  if (limit >= 0 && last > limit) {
    report(v, "offsets",
           "buffer 1 (offsets): last offset offsets[%lld] = %lld exceeds %s %lld",
           (long long)last_index, (long long)last, limit_what, (long long)limit);
    return 0;
  }
  return 1;
}

/* The variadic data buffers of a view array as far as they can be read.
 * On host memory nothing is copied or allocated: the sizes are read in
 * place. Device memory the host cannot read is copied (`copies`). */
#define FERRY_VALIDATE_INLINE_VARIADIC 64
struct VariadicBuffers {
  int64_t n;
  const void* const* buffers; /* the array's variadic buffers */
  const uint8_t* sizes;       /* n int64 values, host-readable */
  struct HostView sizes_copy; /* holds `sizes` when they were copied */
  struct HostView* copies;    /* host copies of the buffers; NULL: host memory */
  /* 1 for a buffer that failed its residency check (views into it are not
   * checked); NULL when there is no device to ask. */
  uint8_t* unreadable;
  uint8_t inline_unreadable[FERRY_VALIDATE_INLINE_VARIADIC];
};

static void variadic_reset(struct VariadicBuffers* vb) {
  for (int64_t k = 0; k < vb->n && vb->copies != NULL; k++) host_view_reset(&vb->copies[k]);
  free(vb->copies);
  host_view_reset(&vb->sizes_copy);
  if (vb->unreadable != vb->inline_unreadable) free(vb->unreadable);
  vb->copies = NULL;
  vb->unreadable = NULL;
}

/* Size of variadic buffer k as the views may use it: 0 for a negative size,
 * a NULL buffer or a copy that failed (each reported when read). */
static int64_t variadic_size(const struct VariadicBuffers* vb, int64_t k) {
  if (vb->copies != NULL) return vb->copies[k].size;
  int64_t size;
  memcpy(&size, vb->sizes + 8 * k, 8);
  return size < 0 || (vb->buffers[k] == NULL && size > 0) ? 0 : size;
}

static const uint8_t* variadic_data(const struct VariadicBuffers* vb, int64_t k) {
  return vb->copies != NULL ? vb->copies[k].data : (const uint8_t*)vb->buffers[k];
}

/* Reads the variadic sizes and makes each variadic buffer readable; 0 when
 * the views cannot be checked at all. */
static int fetch_variadic(struct Validator* v, const struct FerryFormat* f,
                          const struct ArrowArray* array, struct VariadicBuffers* vb) {
  vb->n = 0;
  vb->copies = NULL;
  vb->unreadable = NULL;
  memset(&vb->sizes_copy, 0, sizeof vb->sizes_copy);
  int64_t n_variadic = array->n_buffers - f->n_fixed_buffers - 1;
  if (n_variadic <= 0) return 1;
  int64_t sizes_index = array->n_buffers - 1;
  const void* sizes_ptr = array->buffers[sizes_index];
  /* A NULL sizes buffer with variadic buffers is a structural finding. */
  if (sizes_ptr == NULL) return 0;
  /* A pointer that failed its pointer-only check was reported already. */
  if (!residency_allows_read(v, sizes_ptr, 0) ||
      !check_residency(v, sizes_ptr, n_variadic * 8,
                       layout_name(f, sizes_index, array->n_buffers))) {
    return 0;
  }
  if (!host_view_fetch(v, sizes_ptr, n_variadic * 8, fixed_name("variadic sizes"),
                       &vb->sizes_copy)) {
    return 0;
  }
  vb->n = n_variadic;
  vb->buffers = array->buffers + f->n_fixed_buffers;
  vb->sizes = vb->sizes_copy.data;
  if (!v->host_accessible) {
    vb->copies = (struct HostView*)calloc((size_t)n_variadic, sizeof(struct HostView));
  }
  if (v->device != NULL) {
    vb->unreadable = n_variadic <= FERRY_VALIDATE_INLINE_VARIADIC
                         ? vb->inline_unreadable
                         : (uint8_t*)malloc((size_t)n_variadic);
    if (vb->unreadable != NULL) memset(vb->unreadable, 0, (size_t)n_variadic);
  }
  if ((!v->host_accessible && vb->copies == NULL) ||
      (v->device != NULL && vb->unreadable == NULL)) {
    variadic_reset(vb);
    report(v, "buffer_size", "out of memory reading %lld variadic buffers",
           (long long)n_variadic);
    return 0;
  }
  for (int64_t k = 0; k < n_variadic; k++) {
    struct BufferName name = layout_name(f, f->n_fixed_buffers + k, array->n_buffers);
    struct BufferLabel storage;
    const void* ptr = vb->buffers[k];
    int64_t size;
    memcpy(&size, vb->sizes + 8 * k, 8);
    if (size < 0) {
      report(v, "variadic", "%s: size %lld in the variadic sizes buffer is negative",
             name_text(&name, &storage), (long long)size);
      size = 0;
    } else if (ptr == NULL && size > 0) {
      report(v, "buffers", "%s is NULL but its size is %lld", name_text(&name, &storage),
             (long long)size);
      size = 0;
    }
    /* A pointer that failed its pointer-only check was reported already. */
    if (!residency_allows_read(v, ptr, 0) || !check_residency(v, ptr, size, name)) {
      vb->unreadable[k] = 1; /* only a device can fail these */
      continue;
    }
    if (vb->copies != NULL) host_view_fetch(v, ptr, size, name, &vb->copies[k]);
  }
  return 1;
}

/* FULL checks of string/binary views: lengths, variadic references in
 * range, prefixes and (for utf8_view) UTF-8. */
static void check_views(struct Validator* v, const struct FerryFormat* f,
                        const struct ArrowArray* array, const uint8_t* validity,
                        const uint8_t* views, const struct VariadicBuffers* vb) {
  int64_t n_variadic = array->n_buffers - f->n_fixed_buffers - 1;
  int is_utf8 = f->type == FERRY_TYPE_STRING_VIEW;
  int64_t reported = 0;
  for (int64_t i = array->offset; i < array->offset + array->length && reported < 8;
       i++) {
    if (validity != NULL && !bit_is_set(validity, i)) continue;
    const uint8_t* view = views + 16 * i;
    int32_t length;
    memcpy(&length, view, 4);
    if (length < 0) {
      report(v, "views", "buffer 1 (views): view[%lld] has negative length %d",
             (long long)i, (int)length);
      reported++;
      continue;
    }
    const uint8_t* bytes;
    if (length <= 12) {
      bytes = view + 4;
    } else {
      int32_t buffer_index, data_offset;
      memcpy(&buffer_index, view + 8, 4);
      memcpy(&data_offset, view + 12, 4);
      if (buffer_index < 0 || buffer_index >= n_variadic) {
        report(v, "views",
               "buffer 1 (views): view[%lld] refers to variadic buffer %d, but there are "
               "%lld",
               (long long)i, (int)buffer_index,
               (long long)(n_variadic < 0 ? 0 : n_variadic));
        reported++;
        continue;
      }
      if (vb->unreadable != NULL && vb->unreadable[buffer_index]) {
        continue; /* its residency was reported */
      }
      int64_t buffer_size = variadic_size(vb, buffer_index);
      if (data_offset < 0 || (int64_t)data_offset + length > buffer_size) {
        report(v, "views",
               "buffer 1 (views): view[%lld] bytes [%d, %lld) are outside variadic "
               "buffer %d "
               "of %lld bytes",
               (long long)i, (int)data_offset, (long long)data_offset + length,
               (int)buffer_index, (long long)buffer_size);
        reported++;
        continue;
      }
      bytes = variadic_data(vb, buffer_index) + data_offset;
      if (memcmp(bytes, view + 4, 4) != 0) {
        report(
            v, "views",
            "buffer 1 (views): view[%lld] prefix does not match the first 4 bytes of its "
            "data",
            (long long)i);
        reported++;
        continue;
      }
    }
    if (is_utf8 && length > 0) {
      int64_t good = ferry__utf8_valid_prefix(bytes, length);
      if (good != length) {
        report(v, "utf8", "value[%lld] is not valid UTF-8 (bad byte 0x%02x at byte %lld)",
               (long long)(i - array->offset), bytes[good], (long long)good);
        reported++;
      }
    }
  }
}

/* Reads a child's integer values (for run ends); returns 0 when unreadable.
 * The child's own walk reports its buffers' problems. */
static int fetch_child_values(struct Validator* v, const struct SchemaNode* child_node,
                              const struct ArrowArray* child, struct HostView* out) {
  if (child->n_buffers < 2 || child->buffers == NULL || child->buffers[1] == NULL)
    return 0;
  int64_t size = buffer_size(v, child_node, child, 1);
  if (size < 0 || !residency_allows_read(v, child->buffers[1], size)) return 0;
  return host_view_fetch(v, child->buffers[1], size, fixed_name("run ends"), out);
}

/* The node of child `i` of schema node `sn` (NO_SCHEMA when there is none). */
static int32_t child_schema(const struct SchemaTree* tree, const struct SchemaNode* sn,
                            int64_t i) {
  if (sn == NULL || sn->children < 0 || i >= sn->n_children) return NO_SCHEMA;
  return tree->links[sn->children + i];
}

/* FULL content checks of one node whose layout parsed and whose structure
 * (buffer count, non-NULL buffers, lengths) has been checked. Buffers in
 * `unreadable` failed their residency check and are not read. */
static FERRY_NOINLINE void validate_content(struct Validator* v,
                                            const struct SchemaNode* sn,
                                            const struct ArrowArray* array,
                                            unsigned unreadable) {
  const struct FerryFormat* f = &sn->layout;
  struct NodeBuffers b;
  memset(&b, 0, sizeof b);
  b.unreadable = unreadable;
  int64_t end = array->offset + array->length;

  for (int32_t i = 0; i < f->n_fixed_buffers; i++) {
    const void* ptr = array->buffers[i];
    if (ptr == NULL || (b.unreadable >> i) & 1) continue;
    /* Variable data is sized from the offsets, which are checked first. */
    if (f->roles[i] == FERRY_BUFFER_VAR_DATA) continue;
    int64_t size = -1;
    struct FerryError size_error;
    ferry_error_init(&size_error);
    if (ferry__buffer_size(f, sn->format, array, v->device_type, v->device_id, i, &size,
                           &size_error) != FERRY_OK) {
      struct BufferLabel label = buffer_label(f, i, array->n_buffers);
      report(v, "buffer_size", "%s: its size cannot be computed: %s", label.text,
             size_error.message);
      node_buffers_reset(&b);
      return;
    }
    if (!host_view_fetch(v, ptr, size, layout_name(f, i, array->n_buffers), &b.views[i])) {
      node_buffers_reset(&b);
      return;
    }
    b.fetched[i] = 1;
  }

  const uint8_t* validity = NULL;
  if (f->n_fixed_buffers > 0 && f->roles[0] == FERRY_BUFFER_VALIDITY && b.fetched[0]) {
    validity = b.views[0].data;
    int64_t zeros =
        array->length - ferry__count_set_bits(validity, array->offset, array->length);
    if (array->null_count != -1 && zeros != array->null_count) {
      report(v, "null_count",
             "null_count is %lld but the validity bitmap has %lld zero bits",
             (long long)array->null_count, (long long)zeros);
    }
  }

  switch (f->type) {
    case FERRY_TYPE_BINARY:
    case FERRY_TYPE_LARGE_BINARY:
    case FERRY_TYPE_STRING:
    case FERRY_TYPE_LARGE_STRING: {
      /* Length 0: the offsets buffer may have no entry (buffer_size.c). */
      if (!b.fetched[1] || array->length == 0) break;
      const uint8_t* offsets = b.views[1].data;
      if (!check_offsets(v, f, offsets, array, -1, "")) break;
      int64_t data_end = read_offset(offsets, f->offset_bytes, end);
      if (data_end > 0 && array->buffers[2] == NULL) {
        report(v, "buffers", "buffer 2 (data) is NULL but the offsets reach %lld bytes",
               (long long)data_end);
        break;
      }
      if ((b.unreadable >> 2) & 1 ||
          !check_residency(v, array->buffers[2], data_end, fixed_name("buffer 2 (data)"))) {
        break;
      }
      struct HostView data;
      if (!host_view_fetch(v, array->buffers[2], data_end, fixed_name("buffer 2 (data)"),
                           &data))
        break;
      int64_t data_start = read_offset(offsets, f->offset_bytes, array->offset);
      int is_utf8 = f->type == FERRY_TYPE_STRING || f->type == FERRY_TYPE_LARGE_STRING;
      /* The common case at memory speed; a value-by-value look (skipping nulls)
       * only when something may be wrong. */
      if (is_utf8 &&
          !ferry__utf8_values_valid(data.data, data_start, data_end,
                                    offsets + array->offset * f->offset_bytes,
                                    f->offset_bytes, array->length + 1)) {
        int64_t reported = 0;
        for (int64_t i = array->offset; i < end && reported < 8; i++) {
          if (validity != NULL && !bit_is_set(validity, i)) continue;
          int64_t start = read_offset(offsets, f->offset_bytes, i);
          int64_t stop = read_offset(offsets, f->offset_bytes, i + 1);
          if (stop == start) continue;
          int64_t good = ferry__utf8_valid_prefix(data.data + start, stop - start);
          if (good != stop - start) {
            report(v, "utf8",
                   "value[%lld] is not valid UTF-8 (bad byte 0x%02x at byte %lld of the "
                   "value)",
                   (long long)(i - array->offset), data.data[start + good],
                   (long long)good);
            reported++;
          }
        }
      }
      host_view_reset(&data);
      break;
    }
    case FERRY_TYPE_BINARY_VIEW:
    case FERRY_TYPE_STRING_VIEW: {
      struct VariadicBuffers vb;
      if (fetch_variadic(v, f, array, &vb) && b.fetched[1]) {
        check_views(v, f, array, validity, b.views[1].data, &vb);
      }
      variadic_reset(&vb);
      break;
    }
    case FERRY_TYPE_LIST:
    case FERRY_TYPE_LARGE_LIST:
    case FERRY_TYPE_MAP:
      if (b.fetched[1] && array->length > 0 && array->children != NULL &&
          array->children[0] != NULL) {
        check_offsets(v, f, b.views[1].data, array, array->children[0]->length,
                      "the child length");
      }
      break;
    case FERRY_TYPE_LIST_VIEW:
    case FERRY_TYPE_LARGE_LIST_VIEW: {
      if (!b.fetched[1] || !b.fetched[2] || array->children == NULL ||
          array->children[0] == NULL) {
        break;
      }
      int64_t child_length = array->children[0]->length;
      int64_t reported = 0;
      for (int64_t i = array->offset; i < end && reported < 8; i++) {
        if (validity != NULL && !bit_is_set(validity, i)) continue;
        int64_t start = read_offset(b.views[1].data, f->offset_bytes, i);
        int64_t size = read_offset(b.views[2].data, f->offset_bytes, i);
        if (start < 0 || size < 0 || start > child_length ||
            size > child_length - start) {
          report(
              v, "offsets",
              "list view [%lld]: offset %lld and size %lld are outside the child length "
              "%lld",
              (long long)i, (long long)start, (long long)size, (long long)child_length);
          reported++;
        }
      }
      break;
    }
    case FERRY_TYPE_DENSE_UNION:
    case FERRY_TYPE_SPARSE_UNION: {
      if (!b.fetched[0]) break;
      int8_t type_ids[FERRY_FORMAT_MAX_UNION_TYPES];
      int8_t child_of_id[FERRY_FORMAT_MAX_UNION_TYPES];
      ferry__format_union_type_ids(f, type_ids);
      memset(child_of_id, -1, sizeof child_of_id);
      for (int32_t k = 0; k < f->n_union_types; k++) {
        child_of_id[type_ids[k]] = (int8_t)k;
      }
      int64_t reported = 0;
      for (int64_t i = array->offset; i < end && reported < 8; i++) {
        int8_t id = (int8_t)b.views[0].data[i];
        if (id < 0 || child_of_id[id] < 0) {
          report(v, "union",
                 "buffer 0 (type_ids): type_ids[%lld] = %d is not one of the "
                 "union's type ids",
                 (long long)i, (int)id);
          reported++;
          continue;
        }
        if (f->type == FERRY_TYPE_DENSE_UNION && b.fetched[1] &&
            array->children != NULL) {
          const struct ArrowArray* child = array->children[child_of_id[id]];
          int32_t child_offset;
          memcpy(&child_offset, b.views[1].data + 4 * i, 4);
          if (child != NULL && (child_offset < 0 || child_offset >= child->length)) {
            report(v, "union",
                   "buffer 1 (offsets): offsets[%lld] = %d is outside child %d of length "
                   "%lld",
                   (long long)i, (int)child_offset, (int)child_of_id[id],
                   (long long)child->length);
            reported++;
          }
        }
      }
      break;
    }
    case FERRY_TYPE_RUN_END_ENCODED: {
      int32_t run_ends_link = child_schema(v->schemas, sn, 0);
      if (array->children == NULL || array->children[0] == NULL ||
          run_ends_link == NO_SCHEMA) {
        break;
      }
      const struct ArrowArray* run_ends = array->children[0];
      const struct SchemaNode* rn = schema_node(v->schemas, run_ends_link);
      if (run_ends->release == NULL || !rn->has_layout ||
          !is_signed_integer(rn->layout.type) || run_ends->length < 0 ||
          run_ends->offset < 0) {
        break;
      }
      enum FerryTypeId run_end_type = rn->layout.type;
      struct HostView values;
      if (!fetch_child_values(v, rn, run_ends, &values)) break;
      int64_t previous = 0;
      int ok = 1;
      for (int64_t k = run_ends->offset; k < run_ends->offset + run_ends->length; k++) {
        int64_t run_end = read_integer(values.data, run_end_type, k);
        if (run_end <= previous) {
          report(v, "run_ends",
                 "children[0] (run ends): value[%lld] = %lld is not greater "
                 "than the previous run end %lld",
                 (long long)(k - run_ends->offset), (long long)run_end,
                 (long long)previous);
          ok = 0;
          break;
        }
        previous = run_end;
      }
      if (ok && array->length > 0 && previous < end) {
        report(v, "run_ends",
               "children[0] (run ends): the last run end %lld does not cover "
               "offset + length = %lld",
               (long long)previous, (long long)end);
      }
      host_view_reset(&values);
      break;
    }
    default: break;
  }

  /* Dictionary indices: the node's data buffer holds them. */
  if (sn->has_dictionary && array->dictionary != NULL && is_integer_type(f->type) &&
      b.fetched[1] &&
      !ferry__integers_in_range(b.views[1].data, (int32_t)(f->bit_width / 8),
                                is_signed_integer(f->type), array->offset, array->length,
                                array->dictionary->length)) {
    int64_t dictionary_length = array->dictionary->length;
    int64_t reported = 0;
    for (int64_t i = array->offset; i < end && reported < 8; i++) {
      if (validity != NULL && !bit_is_set(validity, i)) continue;
      int64_t index = read_integer(b.views[1].data, f->type, i);
      if (index < 0 || index >= dictionary_length) {
        report(
            v, "dictionary",
            "buffer 1 (indices): index[%lld] = %lld is outside the dictionary of length "
            "%lld",
            (long long)(i - array->offset), (long long)index,
            (long long)dictionary_length);
        reported++;
      }
    }
  }
  node_buffers_reset(&b);
}

/* Lengths children must have, relative to their parent (no buffer reads). */
static void validate_child_lengths(struct Validator* v, const struct ArrowArray* array,
                                   const struct FerryFormat* f) {
  int64_t end = array->offset + array->length;
  for (int64_t i = 0; i < array->n_children; i++) {
    const struct ArrowArray* child = array->children[i];
    if (child == NULL || child->release == NULL) continue;
    int64_t needed = -1;
    const char* why = "";
    if (f->type == FERRY_TYPE_STRUCT || f->type == FERRY_TYPE_SPARSE_UNION) {
      needed = end;
      why = "the parent's offset + length";
    } else if (f->type == FERRY_TYPE_FIXED_SIZE_LIST) {
      if (f->fixed_size > 0 && end > INT64_MAX / f->fixed_size) {
        report(v, "length", "(offset + length) * list size overflows");
        continue;
      }
      needed = end * f->fixed_size;
      why = "(offset + length) * list size";
    }
    if (needed >= 0 && child->length < needed) {
      report(v, "length", "children[%lld] has length %lld, less than %s = %lld",
             (long long)i, (long long)child->length, why, (long long)needed);
    }
  }
  if (f->type == FERRY_TYPE_RUN_END_ENCODED && array->n_children == 2 &&
      array->children[0] != NULL && array->children[1] != NULL &&
      array->children[0]->release != NULL && array->children[1]->release != NULL) {
    if (array->children[0]->length != array->children[1]->length) {
      report(v, "run_ends",
             "children[0] (run ends) has length %lld but children[1] "
             "(values) has length %lld",
             (long long)array->children[0]->length,
             (long long)array->children[1]->length);
    }
    if (array->children[0]->null_count != 0 && array->children[0]->null_count != -1) {
      report(v, "run_ends",
             "children[0] (run ends) must not contain nulls, null_count is "
             "%lld",
             (long long)array->children[0]->null_count);
    }
  }
}

/* Structure of one node's buffers against its layout: counts, required
 * buffers; returns 1 when the layout can be trusted for the rest. */
static int validate_buffer_structure(struct Validator* v, const struct ArrowArray* array,
                                     const struct FerryFormat* f) {
  int64_t expected = f->n_fixed_buffers;
  if (f->is_view) {
    if (array->n_buffers < expected + 1) {
      report(v, "n_buffers",
             "%s array needs at least %lld buffers (validity, views, variadic sizes), "
             "found n_buffers = %lld",
             type_name(f->type), (long long)(expected + 1), (long long)array->n_buffers);
      return 0;
    }
    if (array->n_buffers > FERRY_VALIDATE_MAX_BUFFERS) {
      /* The only open-ended count: walking it would read far past any real
       * buffer table (and ferry_array_init refuses as many). */
      report(v, "n_buffers", "%s array has n_buffers = %lld, more than 2^32",
             type_name(f->type), (long long)array->n_buffers);
      return 0;
    }
  } else if (array->n_buffers != expected) {
    report(v, "n_buffers", "%s array needs %lld buffer%s, found n_buffers = %lld",
           type_name(f->type), (long long)expected, expected == 1 ? "" : "s",
           (long long)array->n_buffers);
    return 0;
  }

  int ok = 1;
  for (int32_t i = 0; i < f->n_fixed_buffers; i++) {
    if (array->buffers[i] != NULL || ferry__buffer_may_be_null(f, array, i)) continue;
    struct BufferLabel label = buffer_label(f, i, array->n_buffers);
    if (f->roles[i] == FERRY_BUFFER_VALIDITY) {
      report(v, "buffers", "%s is NULL but null_count is %lld", label.text,
             (long long)array->null_count);
    } else {
      report(v, "buffers", "%s is NULL but length is %lld", label.text,
             (long long)array->length);
    }
    ok = 0;
  }
  if (f->is_view && array->buffers[array->n_buffers - 1] == NULL &&
      !ferry__buffer_may_be_null(f, array, array->n_buffers - 1)) {
    report(v, "buffers",
           "buffer %lld (variadic sizes) is NULL but there are %lld "
           "variadic data buffers",
           (long long)(array->n_buffers - 1),
           (long long)(array->n_buffers - f->n_fixed_buffers - 1));
  }
  return ok;
}

/* Residency of every buffer the layout sizes without reading contents;
 * returns the mask of fixed buffers that failed (and must not be read). */
static unsigned check_node_residency(struct Validator* v, const struct SchemaNode* sn,
                                     const struct ArrowArray* array) {
  const struct FerryFormat* f = &sn->layout;
  unsigned unreadable = 0;
  for (int32_t i = 0; i < f->n_fixed_buffers; i++) {
    if (array->buffers[i] == NULL || f->roles[i] == FERRY_BUFFER_VAR_DATA) continue;
    if (!check_residency(v, array->buffers[i], buffer_size(v, sn, array, i),
                         layout_name(f, i, array->n_buffers))) {
      unreadable |= 1u << i;
    }
  }
  /* The variable-size buffers get a pointer-only check here (their sizes
   * need the contents); FULL checks them again with their real sizes when it
   * reads them, unless this check failed (then they are never read). */
  for (int64_t i = f->n_fixed_buffers; i < array->n_buffers; i++) {
    check_residency(v, array->buffers[i], 0, layout_name(f, i, array->n_buffers));
  }
  if (f->n_fixed_buffers == 3 && f->roles[2] == FERRY_BUFFER_VAR_DATA &&
      !check_residency(v, array->buffers[2], 0, fixed_name("buffer 2 (data)"))) {
    unreadable |= 1u << 2;
  }
  return unreadable;
}

/* The rule of ferry_array_buffer_size on sizes that overflow int64, as a
 * finding: returns 1 (and reports the first such buffer) when one does. */
static FERRY_COLD int report_size_overflow(struct Validator* v, const struct SchemaNode* sn,
                                          const struct ArrowArray* array) {
  for (int32_t i = 0; i < sn->layout.n_fixed_buffers; i++) {
    if (sn->layout.roles[i] == FERRY_BUFFER_VAR_DATA) continue; /* sized by contents */
    struct FerryError size_error;
    ferry_error_init(&size_error);
    int64_t size;
    if (ferry__buffer_size(&sn->layout, sn->format, array, v->device_type, v->device_id, i,
                           &size, &size_error) != FERRY_OK) {
      report(v, "length", "%s", size_error.message);
      return 1;
    }
  }
  return 0;
}

/* The findings about a node's own counts (visit_array calls this only when
 * one of them is off) and what remains usable. */
static FERRY_COLD void report_counts(struct Validator* v, const struct ArrowArray* array,
                                     int* sane, int* buffers_usable,
                                     int* children_usable) {
  if (array->length < 0) {
    report(v, "length", "length is negative (%lld)", (long long)array->length);
    *sane = 0;
  }
  if (array->offset < 0) {
    report(v, "offset", "offset is negative (%lld)", (long long)array->offset);
    *sane = 0;
  }
  if (*sane && array->length > INT64_MAX - array->offset - 1) {
    report(v, "length", "offset %lld + length %lld overflows", (long long)array->offset,
           (long long)array->length);
    *sane = 0;
  }
  if (array->null_count < -1) {
    report(v, "null_count", "null_count is %lld (only -1 may stand for unknown)",
           (long long)array->null_count);
  } else if (array->length >= 0 && array->null_count > array->length) {
    report(v, "null_count", "null_count %lld exceeds length %lld",
           (long long)array->null_count, (long long)array->length);
  }
  if (array->n_buffers < 0) {
    report(v, "n_buffers", "n_buffers is negative (%lld)", (long long)array->n_buffers);
    *buffers_usable = 0;
  } else if (array->n_buffers > 0 && array->buffers == NULL) {
    report(v, "buffers", "buffers is NULL but n_buffers is %lld",
           (long long)array->n_buffers);
    *buffers_usable = 0;
  }
  if (array->n_children < 0) {
    report(v, "n_children", "n_children is negative (%lld)",
           (long long)array->n_children);
    *children_usable = 0;
  } else if (array->n_children > 0 && array->children == NULL) {
    report(v, "children", "children is NULL but n_children is %lld",
           (long long)array->n_children);
    *children_usable = 0;
  }
}

static struct ArrayNode* array_node(const struct Validator* v, int32_t index) {
  return (struct ArrayNode*)ferry__node_table_at(v->arrays, index);
}

static void visit_children(struct Validator* v, const struct SchemaNode* sn,
                           const struct ArrowArray* array, int32_t self,
                           int children_usable, int depth);

/* Walks the array at child `slot` of array node `parent` (v->where is
 * there), paired with schema node `schema_index` (NO_SCHEMA: none usable). */
static void visit_array(struct Validator* v, int32_t schema_index,
                        const struct ArrowArray* array, int32_t parent, int64_t slot,
                        int depth) {
  if (array == NULL) {
    report(v, "null", "array pointer is NULL");
    return;
  }
  if (array->release == NULL) {
    report(v, "released", "array is released (release is NULL)");
    return;
  }
  int32_t seen = ferry__node_table_find(v->arrays, array);
  if (seen >= 0) {
    report_repeat(v, v->arrays, seen, "array");
    return;
  }
  if (depth > FERRY_VALIDATE_MAX_DEPTH) {
    report(v, "depth", "array nesting is deeper than %d levels",
           FERRY_VALIDATE_MAX_DEPTH);
    return;
  }
  int32_t self = ferry__node_table_add(v->arrays, array);
  if (self < 0) {
    report_out_of_memory(v, "array");
    return;
  }
  /* on_path is set only while its children are walked (visit_children). */
  struct ArrayNode* node = array_node(v, self);
  node->h.slot = slot;
  node->h.parent = parent;
  node->h.on_path = 0;
  node->h.repeat_reported = 0;

  /* The schema tree is complete: its nodes no longer move. */
  const struct SchemaNode* sn =
      schema_index == NO_SCHEMA ? NULL : schema_node(v->schemas, schema_index);
  int have_layout = sn != NULL && sn->has_layout;
  /* The counts of a well-formed node, all in one test; the precise findings
   * only when one of them is off. */
  int sane = 1; /* lengths usable for range arithmetic */
  int buffers_usable = 1;
  int children_usable = 1;
  if (array->length < 0 || array->offset < 0 ||
      array->length > INT64_MAX - array->offset - 1 || array->null_count < -1 ||
      array->null_count > array->length || array->n_buffers < 0 ||
      (array->n_buffers > 0 && array->buffers == NULL) || array->n_children < 0 ||
      (array->n_children > 0 && array->children == NULL)) {
    report_counts(v, array, &sane, &buffers_usable, &children_usable);
  }
  if (sn != NULL && sn->n_children >= 0 && array->n_children >= 0 &&
      array->n_children != sn->n_children) {
    report(v, "n_children", "array has %lld children but its schema has %lld",
           (long long)array->n_children, (long long)sn->n_children);
  }
  int schema_has_dictionary = sn != NULL && sn->has_dictionary;
  if (sn != NULL && schema_has_dictionary != (array->dictionary != NULL)) {
    report(v, "dictionary",
           schema_has_dictionary ? "the schema has a dictionary but the array has none"
                                 : "the array has a dictionary but the schema has none");
  }

  int layout_ok = have_layout && buffers_usable &&
                  validate_buffer_structure(v, array, &sn->layout);
  if (layout_ok && sane && array->offset + array->length > sn->max_slots) {
    sane = !report_size_overflow(v, sn, array);
  }
  unsigned unreadable = 0;
  if (layout_ok && sane && v->device != NULL) {
    unreadable = check_node_residency(v, sn, array);
  }

  /* Content and child-length rules need the children the layout promises. */
  int children_match =
      layout_ok && children_usable && sn->n_children == array->n_children &&
      (sn->layout.n_children < 0 || array->n_children == sn->layout.n_children);
  if (layout_ok && sane && children_match && array->n_children > 0) {
    validate_child_lengths(v, array, &sn->layout);
  }
  if (layout_ok && sane && children_match && v->level == FERRY_VALIDATE_FULL &&
      v->can_read) {
    validate_content(v, sn, array, unreadable);
  }
  if ((children_usable && array->children != NULL && array->n_children > 0) ||
      array->dictionary != NULL) {
    visit_children(v, sn, array, self, children_usable, depth);
  }
}

/* The children and the dictionary of array node `self` (schema node `sn`). */
static void visit_children(struct Validator* v, const struct SchemaNode* sn,
                           const struct ArrowArray* array, int32_t self,
                           int children_usable, int depth) {
  array_node(v, self)->h.on_path = 1;
  /* The children table is walked only when the array's count and its
   * schema's agree. When they differ (already a finding) neither count is
   * known to bound the table: an array declaring more children than its
   * schema may have a table of the schema's length or shorter, so no slot
   * of it is read. Without a usable schema node (its own finding is out)
   * there is nothing to agree with, and the children are not walked. */
  int64_t n_walked = 0;
  if (sn != NULL && sn->n_children > 0 && array->n_children == sn->n_children) {
    n_walked = sn->n_children;
  }
  if (children_usable && array->children != NULL) {
    for (int64_t i = 0; i < n_walked; i++) {
      struct Where saved = enter(v, v->arrays, self, i);
      visit_array(v, child_schema(v->schemas, sn, i), array->children[i], self, i,
                  depth + 1);
      v->where = saved;
    }
  }
  if (array->dictionary != NULL) {
    struct Where saved = enter(v, v->arrays, self, SLOT_DICTIONARY);
    int schema_has_dictionary = sn != NULL && sn->has_dictionary;
    visit_array(v, schema_has_dictionary ? sn->dictionary : NO_SCHEMA, array->dictionary,
                self, SLOT_DICTIONARY, depth + 1);
    v->where = saved;
  }
  array_node(v, self)->h.on_path = 0;
}

/* Device-level rules of the root: reserved words, device type and id,
 * sync_event; then resolves the device for residency and reads. */
static inline FERRY_ALWAYS_INLINE void validate_device(
    struct Validator* v, const struct ArrowDeviceArray* array) {
  if ((array->reserved[0] | array->reserved[1] | array->reserved[2]) != 0) {
    for (int i = 0; i < 3; i++) {
      if (array->reserved[i] != 0) {
        report(v, "reserved", "reserved[%d] is 0x%llx, the specification requires 0", i,
               (unsigned long long)array->reserved[i]);
      }
    }
  }
  v->device_type = array->device_type;
  v->device_id = array->device_id;
  if (array->device_type != ARROW_DEVICE_CPU &&
      !is_known_device_type(array->device_type)) {
    report(v, "device", "device_type %d is not a known ArrowDeviceType",
           (int)array->device_type);
    return;
  }
  if (array->device_type == ARROW_DEVICE_CPU) {
    if (array->sync_event != NULL) {
      report(v, "sync_event", "sync_event is %p on the CPU; it must be NULL",
             array->sync_event);
    }
    if (array->device_id != -1 && array->device_id != 0) {
      report(v, "device", "device_id %lld on the CPU; it must be -1 (or 0)",
             (long long)array->device_id);
    }
    /* Host memory: readable, and no backend can say where a host pointer
     * points (docs/validation.md), so there is no device to ask. */
    v->host_accessible = 1;
    v->can_read = 1;
    return;
  }
  if (array->device_id < 0) {
    report(v, "device", "device_id %lld is negative for device type %s",
           (long long)array->device_id, ferry_device_type_name(array->device_type));
  }

  struct FerryDevice* device = NULL;
  if (ferry_device_resolve(array->device_type, array->device_id, &device, NULL) ==
      FERRY_OK) {
    v->device = device;
    v->host_accessible = ferry_device_is_host_accessible(device);
    v->can_read = v->host_accessible ||
                  ferry_device_resolve(ARROW_DEVICE_CPU, -1, &v->host, NULL) == FERRY_OK;
  }

  /* Content reads must not race the producer: wait on its event first. */
  if (v->level == FERRY_VALIDATE_FULL && v->can_read && array->sync_event != NULL) {
    struct FerryError wait_error;
    ferry_error_init(&wait_error);
    if (ferry_device_array_wait(array, NULL, &wait_error) != FERRY_OK) {
      report(v, "sync_event", "waiting on sync_event failed: %s", wait_error.message);
      v->can_read = 0;
    }
  }
}

/* Walks the device array against the schema tree in v->schemas (whose root
 * is node 0, when it has any node). */
static inline FERRY_ALWAYS_INLINE void walk_arrays(struct Validator* v,
                                                   const struct ArrowDeviceArray* array) {
  struct ArrayNode inline_nodes[FERRY_VALIDATE_INLINE_NODES];
  int32_t inline_slots[FERRY_VALIDATE_INLINE_SLOTS];
  struct FerryNodeTable arrays;
  ferry__node_table_init(&arrays, sizeof(struct ArrayNode), inline_nodes,
                         FERRY_VALIDATE_INLINE_NODES, inline_slots,
                         FERRY_VALIDATE_INLINE_SLOTS);
  v->arrays = &arrays;
  v->where = (struct Where){&arrays, -1, SLOT_ROOT};
  if (array == NULL) {
    report(v, "null", "device array pointer is NULL");
  } else if (array->array.release == NULL) {
    report(v, "released", "device array is released (release is NULL)");
  } else {
    validate_device(v, array);
    int32_t root_schema = v->schemas->nodes.count > 0 ? 0 : NO_SCHEMA;
    visit_array(v, root_schema, &array->array, -1, SLOT_ROOT, 0);
  }
  ferry__node_table_free(&arrays);
}

static int check_level(int32_t level, struct FerryError* error) {
  if (level != FERRY_VALIDATE_DEFAULT && level != FERRY_VALIDATE_FULL) {
    return ferry__set_error(error, EINVAL,
                           "validation level %d is neither DEFAULT (0) nor "
                           "FULL (1)",
                           (int)level);
  }
  return FERRY_OK;
}

int ferry_validate_device_array(const struct ArrowSchema* schema,
                                const struct ArrowDeviceArray* array, int32_t level,
                                FerryFindingFn on_finding, void* user_data,
                                struct FerryError* error) {
  FERRY_RETURN_NOT_OK(check_level(level, error));
  struct SchemaCheck check;
  schema_check_begin(&check, schema, on_finding, user_data, error, level);
  walk_arrays(&check.v, array);
  schema_tree_free(&check.tree);
  return validator_finish(&check.v);
}

/* ------------------------------------------------------------------------ */
/* Prepared schemas                                                          */
/* ------------------------------------------------------------------------ */

/* A clean schema tree, frozen: one allocation holding this header, the
 * nodes, the links and copies of the format strings (the nodes point into
 * them), so nothing of the caller's schema is kept. */
struct FerryPreparedSchema {
  struct SchemaTree tree;
};

/* Rounds up to a multiple of 8, so the parts of one allocation stay aligned. */
static size_t align8(size_t n) { return (n + 7) & ~(size_t)7; }

static int freeze_schema_tree(const struct SchemaTree* tree,
                              struct FerryPreparedSchema** out,
                              struct FerryError* error) {
  int32_t n = tree->nodes.count;
  size_t strings = 0;
  for (int32_t i = 0; i < n; i++) strings += strlen(schema_node(tree, i)->format) + 1;
  size_t nodes_at = align8(sizeof(struct FerryPreparedSchema));
  size_t links_at = nodes_at + align8((size_t)n * sizeof(struct SchemaNode));
  size_t strings_at = links_at + align8((size_t)tree->n_links * sizeof(int32_t));
  unsigned char* block = (unsigned char*)malloc(strings_at + strings);
  if (block == NULL) {
    return ferry__set_error(error, ENOMEM, "out of memory preparing a schema of %d nodes",
                           (int)n);
  }
  struct FerryPreparedSchema* prepared = (struct FerryPreparedSchema*)block;
  struct SchemaNode* nodes = (struct SchemaNode*)(block + nodes_at);
  int32_t* links = (int32_t*)(block + links_at);
  char* text = (char*)(block + strings_at);
  memcpy(nodes, tree->nodes.elements, (size_t)n * sizeof(struct SchemaNode));
  if (tree->n_links > 0) {
    memcpy(links, tree->links, (size_t)tree->n_links * sizeof(int32_t));
  }
  for (int32_t i = 0; i < n; i++) {
    struct SchemaNode* node = &nodes[i];
    const char* original = node->format;
    size_t length = strlen(original) + 1;
    memcpy(text, original, length);
    /* The layout's pointers into the format string move with it. */
    if (node->layout.timezone != NULL) {
      node->layout.timezone = text + (node->layout.timezone - original);
    }
    if (node->layout.union_type_list != NULL) {
      node->layout.union_type_list = text + (node->layout.union_type_list - original);
    }
    node->format = text;
    node->h.key = NULL; /* the caller's schema is not kept */
    text += length;
  }
  ferry__node_table_init(&prepared->tree.nodes, sizeof(struct SchemaNode), nodes, n,
                         NULL, 0);
  prepared->tree.nodes.count = n;
  prepared->tree.links = links;
  prepared->tree.n_links = tree->n_links;
  prepared->tree.links_capacity = tree->n_links;
  prepared->tree.inline_links = links;
  *out = prepared;
  return FERRY_OK;
}

int ferry_prepared_schema_create(const struct ArrowSchema* schema,
                                 FerryFindingFn on_finding, void* user_data,
                                 struct FerryPreparedSchema** out,
                                 struct FerryError* error) {
  if (out == NULL) return ferry__set_error(error, EINVAL, "out must not be NULL");
  *out = NULL;
  return check_schema(schema, on_finding, user_data, error, out);
}

void ferry_prepared_schema_free(struct FerryPreparedSchema* prepared) { free(prepared); }

int ferry_validate_prepared(const struct FerryPreparedSchema* prepared,
                            const struct ArrowDeviceArray* array, int32_t level,
                            FerryFindingFn on_finding, void* user_data,
                            struct FerryError* error) {
  if (prepared == NULL) {
    return ferry__set_error(error, EINVAL, "prepared must not be NULL");
  }
  FERRY_RETURN_NOT_OK(check_level(level, error));
  struct Validator v;
  validator_init(&v, on_finding, user_data, error, level);
  /* The array walk only reads the schema tree: one prepared schema serves
   * any number of threads at once. */
  v.schemas = (struct SchemaTree*)&prepared->tree;
  walk_arrays(&v, array);
  return validator_finish(&v);
}
