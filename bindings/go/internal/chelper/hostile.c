// Hostile producers for the Go binding's tests (issue 15): arrays, schemas
// and streams made by hand with every kind of lie, each node counted, so a
// test can show that whatever the binding does with them, every node is
// released exactly once.
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "chelper.h"

static _Atomic int64_t hostile_live;

int64_t chelper_hostile_live(void) { return atomic_load(&hostile_live); }

#define HOSTILE_MAX 8

struct hostile_private {
  void* buffers[HOSTILE_MAX];           // copies of the bytes (NULL: a NULL buffer)
  struct ArrowArray* children[HOSTILE_MAX];
  int owned[HOSTILE_MAX];               // whether the node frees children[i]
  struct ArrowArray* dictionary;
};

static void hostile_release_node(struct ArrowArray* array) {
  // Released first, so that a cycle back to this node stops here.
  array->release = NULL;
  struct hostile_private* p = array->private_data;
  for (int i = 0; i < HOSTILE_MAX; i++) {
    struct ArrowArray* child = p->children[i];
    if (child != NULL && p->owned[i]) {
      if (child->release != NULL) child->release(child);
      free(child);
    }
    free(p->buffers[i]);
  }
  if (p->dictionary != NULL) {
    if (p->dictionary->release != NULL) p->dictionary->release(p->dictionary);
    free(p->dictionary);
  }
  free(p);
  atomic_fetch_sub(&hostile_live, 1);
}

struct ArrowArray* chelper_hostile_node(int64_t length, int64_t null_count, int64_t offset,
                                        int64_t n_buffers, const uint8_t* blob,
                                        const int64_t* sizes, int64_t declared_n_buffers) {
  struct ArrowArray* a = calloc(1, sizeof(*a));
  struct hostile_private* p = calloc(1, sizeof(*p));
  if (a == NULL || p == NULL || n_buffers > HOSTILE_MAX || n_buffers < 0) abort();
  for (int64_t i = 0; i < n_buffers; i++) {
    if (sizes[i] < 0) continue;  // a NULL buffer
    // 64 bytes of slack past the declared bytes: a reader that goes past its
    // size reads zeros here rather than another allocation (the size checks,
    // not luck, are what the tests assert).
    p->buffers[i] = calloc(1, (size_t)sizes[i] + 64);
    if (p->buffers[i] == NULL) abort();
    memcpy(p->buffers[i], blob, (size_t)sizes[i]);
    blob += sizes[i];
  }
  a->length = length;
  a->null_count = null_count;
  a->offset = offset;
  a->n_buffers = declared_n_buffers;
  a->buffers = (const void**)p->buffers;
  a->n_children = 0;
  a->children = p->children;
  a->release = hostile_release_node;
  a->private_data = p;
  atomic_fetch_add(&hostile_live, 1);
  return a;
}

void chelper_hostile_add_child(struct ArrowArray* parent, struct ArrowArray* child, int32_t kind) {
  struct hostile_private* p = parent->private_data;
  int64_t i = parent->n_children;
  if (i >= HOSTILE_MAX) abort();
  switch (kind) {
    case CHELPER_CHILD_NODE:
      p->children[i] = child;
      p->owned[i] = 1;
      break;
    case CHELPER_CHILD_NULL:
      p->children[i] = NULL;
      break;
    case CHELPER_CHILD_RELEASED:
      p->children[i] = calloc(1, sizeof(struct ArrowArray));
      p->owned[i] = 1;
      break;
    case CHELPER_CHILD_SELF:
      p->children[i] = parent;  // a cycle: not owned
      break;
  }
  parent->n_children = i + 1;
}

void chelper_hostile_set_dictionary(struct ArrowArray* parent, struct ArrowArray* dictionary) {
  struct hostile_private* p = parent->private_data;
  p->dictionary = dictionary;
  parent->dictionary = dictionary;
}

static uint64_t hostile_event;

struct ArrowDeviceArray* chelper_hostile_device_array(struct ArrowArray* node,
                                                      int32_t device_type, int64_t device_id,
                                                      int32_t with_event, int64_t reserved1) {
  struct ArrowDeviceArray* d = calloc(1, sizeof(*d));
  if (d == NULL) abort();
  d->array = *node;  // moved: the node's struct is freed, its private data travels
  free(node);
  d->device_type = device_type;
  d->device_id = device_id;
  d->sync_event = with_event ? &hostile_event : NULL;
  d->reserved[1] = reserved1;
  return d;
}

// ---- schemas ---------------------------------------------------------------

struct hostile_schema_private {
  char* format;
  char* name;
};

static void hostile_release_schema(struct ArrowSchema* schema) {
  struct hostile_schema_private* p = schema->private_data;
  free(p->format);
  free(p->name);
  free(p);
  schema->release = NULL;
  atomic_fetch_sub(&hostile_live, 1);
}

void chelper_hostile_schema(struct ArrowSchema* out, const char* format, const char* name) {
  struct hostile_schema_private* p = calloc(1, sizeof(*p));
  if (p == NULL) abort();
  p->format = strdup(format);
  p->name = strdup(name);
  memset(out, 0, sizeof(*out));
  out->format = p->format;
  out->name = p->name;
  out->flags = ARROW_FLAG_NULLABLE;
  out->release = hostile_release_schema;
  out->private_data = p;
  atomic_fetch_add(&hostile_live, 1);
}

// ---- streams ---------------------------------------------------------------

struct hostile_stream_private {
  int32_t behaviour;
  int32_t code;
};

// struct<s: utf8> of 3 rows whose offsets decrease ({0, 4, 2, 6}).
static void hostile_bad_struct(struct ArrowDeviceArray* out, ArrowDeviceType device_type) {
  int32_t offsets[4] = {0, 4, 2, 6};
  uint8_t blob[16 + 6];
  memcpy(blob, offsets, 16);
  memcpy(blob + 16, "abcdef", 6);
  int64_t sizes[3] = {-1, 16, 6};
  struct ArrowArray* column = chelper_hostile_node(3, 0, 0, 3, blob, sizes, 3);
  int64_t top_sizes[1] = {-1};
  struct ArrowArray* top = chelper_hostile_node(3, 0, 0, 1, NULL, top_sizes, 1);
  chelper_hostile_add_child(top, column, CHELPER_CHILD_NODE);
  struct ArrowDeviceArray* d =
      chelper_hostile_device_array(top, device_type, device_type == ARROW_DEVICE_CPU ? -1 : 0, 0, 0);
  *out = *d;
  free(d);
}

static int hostile_get_schema(struct ArrowDeviceArrayStream* stream, struct ArrowSchema* out) {
  struct hostile_stream_private* p = stream->private_data;
  switch (p->behaviour) {
    case CHELPER_STREAM_RELEASED_SCHEMA:
      return 0;  // and `out` stays released
    case CHELPER_STREAM_BAD_SCHEMA:
      chelper_hostile_schema(out, "zz", "x");
      return 0;
    default:
      if (ferry_schema_init(out, "+s", NULL, 0, 1, NULL) != 0) return ENOMEM;
      if (ferry_schema_init(ferry_schema_child(out, 0), "u", "s", ARROW_FLAG_NULLABLE, 0, NULL) != 0) {
        ferry_schema_release(out);
        return ENOMEM;
      }
      return 0;
  }
}

static int hostile_get_next(struct ArrowDeviceArrayStream* stream, struct ArrowDeviceArray* out) {
  struct hostile_stream_private* p = stream->private_data;
  switch (p->behaviour) {
    case CHELPER_STREAM_BAD_BATCH:
      hostile_bad_struct(out, ARROW_DEVICE_CPU);
      return 0;
    case CHELPER_STREAM_WRONG_DEVICE:
      hostile_bad_struct(out, ARROW_DEVICE_EXT_DEV);
      return 0;
    case CHELPER_STREAM_FAILS:
      return p->code;
    case CHELPER_STREAM_FILLS_AND_FAILS:
      hostile_bad_struct(out, ARROW_DEVICE_CPU);
      return EIO;
    default:
      return 0;
  }
}

static const char* hostile_last_error(struct ArrowDeviceArrayStream* stream) {
  (void)stream;
  return NULL;
}

static void hostile_release_stream(struct ArrowDeviceArrayStream* stream) {
  free(stream->private_data);
  stream->release = NULL;
  atomic_fetch_sub(&hostile_live, 1);
}

void chelper_hostile_stream(struct ArrowDeviceArrayStream* out, int32_t behaviour, int32_t code) {
  struct hostile_stream_private* p = calloc(1, sizeof(*p));
  if (p == NULL) abort();
  p->behaviour = behaviour;
  p->code = code;
  memset(out, 0, sizeof(*out));
  out->device_type = ARROW_DEVICE_CPU;
  out->get_schema = hostile_get_schema;
  out->get_next = hostile_get_next;
  out->get_last_error = hostile_last_error;
  out->release = hostile_release_stream;
  out->private_data = p;
  atomic_fetch_add(&hostile_live, 1);
}
