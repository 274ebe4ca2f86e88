/* ferry_jni_hostile.c: hostile producers for the Java binding's tests
 * (io.github.ferryarrow.ferry.HostileTest, through Testing's natives): arrays,
 * schemas and streams that lie in every way the interface allows, built here
 * because Java cannot make a struct lie. Every node counts: made and not yet
 * released (`live`), and released again after its release (`again`). Nodes are
 * never freed until hostileReset, so that a second release is counted instead
 * of touching freed memory.
 */
#include <errno.h>
#include <jni.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ferry/ferry.h"

/* ---- counted nodes ------------------------------------------------------ */

struct hostile_node {
  struct hostile_node* next; /* every node made, for hostileReset */
  int released;
  const void* buffers[4];
  struct ArrowArray* children[2];
  struct ArrowSchema* schema_children[2];
  struct ArrowArray array;   /* used when the node is an array */
  struct ArrowSchema schema; /* used when the node is a schema */
  char data[64];
};

static struct hostile_node* g_nodes;
static int64_t g_live;
static int64_t g_again;

static struct hostile_node* hostile_node_new(void) {
  struct hostile_node* n = calloc(1, sizeof *n);
  if (n == NULL) abort();
  n->next = g_nodes;
  g_nodes = n;
  g_live++;
  return n;
}

/* Counts one release of the node holding `private_data`. */
static int hostile_released(void* private_data) {
  struct hostile_node* n = private_data;
  if (n->released) {
    g_again++;
    return 0;
  }
  n->released = 1;
  g_live--;
  return 1;
}

static void hostile_array_release(struct ArrowArray* a) {
  struct ArrowArray copy = *a;
  a->release = NULL; /* first: a cycle then finds itself released */
  if (!hostile_released(copy.private_data)) return;
  for (int64_t i = 0; i < copy.n_children && i < 2 && copy.children != NULL; i++) {
    struct ArrowArray* child = copy.children[i];
    if (child != NULL && child->release != NULL) child->release(child);
  }
  if (copy.dictionary != NULL && copy.dictionary->release != NULL) {
    copy.dictionary->release(copy.dictionary);
  }
}

static void hostile_schema_release(struct ArrowSchema* s) {
  struct ArrowSchema copy = *s;
  s->release = NULL;
  if (!hostile_released(copy.private_data)) return;
  for (int64_t i = 0; i < copy.n_children && i < 2 && copy.children != NULL; i++) {
    struct ArrowSchema* child = copy.children[i];
    if (child != NULL && child->release != NULL) child->release(child);
  }
  if (copy.dictionary != NULL && copy.dictionary->release != NULL) {
    copy.dictionary->release(copy.dictionary);
  }
}

/* An array node: `length` values, `n_buffers` of buffers (the table has room
 * for 4), the values buffer holding `data` when given. */
static struct ArrowArray* hostile_array(int64_t length, int64_t n_buffers, int with_values,
                                        const void* data, size_t size) {
  struct hostile_node* n = hostile_node_new();
  if (data != NULL) memcpy(n->data, data, size < sizeof n->data ? size : sizeof n->data);
  n->buffers[0] = NULL;
  n->buffers[1] = with_values ? n->data : NULL;
  n->array.length = length;
  n->array.n_buffers = n_buffers;
  n->array.buffers = n->buffers;
  n->array.children = n->children;
  n->array.release = hostile_array_release;
  n->array.private_data = n;
  return &n->array;
}

static struct ArrowSchema* hostile_schema(const char* format, const char* name) {
  struct hostile_node* n = hostile_node_new();
  n->schema.format = format;
  n->schema.name = name;
  n->schema.flags = ARROW_FLAG_NULLABLE;
  n->schema.children = n->schema_children;
  n->schema.release = hostile_schema_release;
  n->schema.private_data = n;
  return &n->schema;
}

static void hostile_add_child(struct ArrowArray* parent, struct ArrowArray* child) {
  parent->children[parent->n_children++] = child;
}

static void hostile_add_schema_child(struct ArrowSchema* parent, struct ArrowSchema* child) {
  parent->children[parent->n_children++] = child;
}

static const int32_t k_values[4] = {1, 2, 3, 4};

/* ---- the array cases ---------------------------------------------------- */

/* name, what the error must mention ("" for anything), and how: 0 the
 * import refuses it (DEFAULT), 1 only FULL validation finds it. */
struct hostile_case {
  const char* name;
  const char* needle;
  int full_only;
};

static const struct hostile_case k_cases[] = {
    {"missing values buffer", "buffer", 0},
    {"NULL values buffer", "NULL", 0},
    {"negative length", "length", 0},
    {"negative offset", "offset", 0},
    {"offset + length overflows", "overflow", 0},
    {"negative n_buffers", "buffer", 0},
    {"struct with a child missing", "child", 0},
    {"NULL child pointer", "NULL", 0},
    {"released child", "released", 0},
    {"child shorter than its parent", "length", 0},
    {"dictionary missing", "dictionary", 0},
    {"unknown device type", "device", 0},
    {"a CPU array with a sync event", "sync_event", 0},
    {"a struct that is its own child", "", 0},
    {"null_count above length", "null_count", 0},
    {"reserved words not zero", "reserved", 0},
    {"unparseable format", "format", 0},
    {"NULL format", "format", 0},
    {"decreasing utf8 offsets", "offset", 1},
    {"invalid UTF-8", "utf", 1},
};
enum { HOSTILE_CASES = sizeof k_cases / sizeof k_cases[0] };

static int64_t g_sync_event_target;

/* Fills the released structs at schema_out and array_out with case k. */
static void hostile_build(int k, struct ArrowSchema* schema_out, struct ArrowDeviceArray* out) {
  struct ArrowSchema* schema = hostile_schema("i", "hostile");
  struct ArrowArray* array = hostile_array(4, 2, 1, k_values, sizeof k_values);
  memset(out, 0, sizeof *out);
  out->device_type = ARROW_DEVICE_CPU;
  out->device_id = -1;
  switch (k) {
    case 0: array->n_buffers = 1; break;
    case 1: ((struct hostile_node*)array->private_data)->buffers[1] = NULL; break;
    case 2: array->length = -1; break;
    case 3: array->offset = -2; array->length = 2; break;
    case 4: array->offset = INT64_MAX; array->length = 2; break;
    case 5: array->n_buffers = -1; array->length = 0; break;
    case 6:
    case 7:
    case 8:
    case 9: {
      schema->format = "+s";
      array->n_buffers = 1;
      array->length = k == 9 ? 3 : 1;
      hostile_add_schema_child(schema, hostile_schema("i", "a"));
      if (k == 6) hostile_add_schema_child(schema, hostile_schema("u", "b"));
      struct ArrowArray* child = hostile_array(1, 2, 1, k_values, sizeof k_values);
      if (k == 7) {
        ((struct hostile_node*)array->private_data)->children[0] = NULL;
        array->n_children = 1;
        /* the child node made above is nobody's: count it released */
        child->release(child);
      } else {
        if (k == 8) child->release(child); /* released before export */
        hostile_add_child(array, child);
      }
      break;
    }
    case 10: schema->dictionary = hostile_schema("u", "words"); break;
    case 11: out->device_type = 999; out->device_id = 0; break;
    case 12: out->sync_event = &g_sync_event_target; break;
    case 13: {
      schema->format = "+s";
      struct ArrowSchema* inner = hostile_schema("+s", "inner");
      hostile_add_schema_child(inner, hostile_schema("i", "leaf"));
      hostile_add_schema_child(schema, inner);
      array->n_buffers = 1;
      array->length = 1;
      struct ArrowArray* cycle = hostile_array(1, 1, 0, NULL, 0);
      hostile_add_child(cycle, cycle);
      hostile_add_child(array, cycle);
      break;
    }
    case 14: array->null_count = 9; break;
    case 15: out->reserved[1] = 7; break;
    case 16: schema->format = "zz"; break;
    case 17: schema->format = NULL; break;
    case 18:
    case 19: {
      /* utf8 of 2 elements over "ab\xff": offsets {0, 3, 1} or {0, 2, 3} */
      static const int32_t decreasing[3] = {0, 3, 1};
      static const int32_t fine[3] = {0, 2, 3};
      schema->format = "u";
      struct hostile_node* n = array->private_data;
      memcpy(n->data, "ab\xff", 3);
      n->buffers[1] = k == 18 ? decreasing : fine;
      n->buffers[2] = n->data;
      array->n_buffers = 3;
      array->length = 2;
      break;
    }
    default: break;
  }
  *schema_out = *schema;
  ((struct hostile_node*)schema->private_data)->schema.release = NULL; /* moved */
  schema_out->private_data = schema->private_data;
  out->array = *array;
  array->release = NULL; /* moved */
}

JNIEXPORT jint JNICALL Java_io_github_ferryarrow_ferry_jni_Testing_hostileCaseCount(JNIEnv* env,
                                                                                   jclass cls) {
  return HOSTILE_CASES;
}

/* "name\037needle\037full_only" of case k. */
JNIEXPORT jstring JNICALL Java_io_github_ferryarrow_ferry_jni_Testing_hostileCase(JNIEnv* env,
                                                                                 jclass cls,
                                                                                 jint k) {
  if (k < 0 || k >= HOSTILE_CASES) return NULL;
  char text[256];
  snprintf(text, sizeof text, "%s\037%s\037%d", k_cases[k].name, k_cases[k].needle,
           k_cases[k].full_only);
  return (*env)->NewStringUTF(env, text);
}

JNIEXPORT void JNICALL Java_io_github_ferryarrow_ferry_jni_Testing_hostileArray(
    JNIEnv* env, jclass cls, jint k, jlong schema_out, jlong array_out) {
  hostile_build(k, (struct ArrowSchema*)(intptr_t)schema_out,
                (struct ArrowDeviceArray*)(intptr_t)array_out);
}

/* An int32 array declaring 2^62 elements (its byte size overflows int64). */
JNIEXPORT void JNICALL Java_io_github_ferryarrow_ferry_jni_Testing_hostileHugeArray(
    JNIEnv* env, jclass cls, jlong schema_out, jlong array_out) {
  hostile_build(-1, (struct ArrowSchema*)(intptr_t)schema_out,
                (struct ArrowDeviceArray*)(intptr_t)array_out);
  ((struct ArrowDeviceArray*)(intptr_t)array_out)->array.length = INT64_C(1) << 62;
}

/* ---- streams ------------------------------------------------------------ */

enum {
  HOSTILE_STREAM_RELEASED_SCHEMA = 0,
  HOSTILE_STREAM_OTHER_DEVICE = 1,
  HOSTILE_STREAM_MALFORMED_BATCH = 2,
  HOSTILE_STREAM_FAILS = 3,
  HOSTILE_STREAM_BAD_FORMAT = 4,
  HOSTILE_STREAM_CONTENT_LIE = 5,
  HOSTILE_STREAMS = 6
};

struct hostile_stream {
  int kind;
  int pulls;
};

static int hostile_stream_get_schema(struct ArrowDeviceArrayStream* s, struct ArrowSchema* out) {
  struct hostile_stream* h = s->private_data;
  struct ArrowDeviceArray batch;
  hostile_build(h->kind == HOSTILE_STREAM_CONTENT_LIE ? 18 : -1, out, &batch);
  batch.array.release(&batch.array);
  if (h->kind == HOSTILE_STREAM_RELEASED_SCHEMA) {
    out->release(out);
  } else if (h->kind == HOSTILE_STREAM_BAD_FORMAT) {
    out->format = "not a format";
  }
  return 0;
}

static int hostile_stream_get_next(struct ArrowDeviceArrayStream* s, struct ArrowDeviceArray* out) {
  struct hostile_stream* h = s->private_data;
  if (h->pulls++ >= 2) {
    out->array.release = NULL; /* the end */
    return 0;
  }
  if (h->kind == HOSTILE_STREAM_FAILS) return EIO;
  struct ArrowSchema schema;
  int k = h->kind == HOSTILE_STREAM_MALFORMED_BATCH ? 0
          : h->kind == HOSTILE_STREAM_CONTENT_LIE   ? 18
                                                      : -1;
  hostile_build(k, &schema, out);
  schema.release(&schema);
  if (h->kind == HOSTILE_STREAM_OTHER_DEVICE) {
    out->device_type = ARROW_DEVICE_EXT_DEV;
    out->device_id = 0;
  }
  return 0;
}

static const char* hostile_stream_last_error(struct ArrowDeviceArrayStream* s) {
  struct hostile_stream* h = s->private_data;
  return h->kind == HOSTILE_STREAM_FAILS ? "the hostile producer broke" : NULL;
}

static void hostile_stream_release(struct ArrowDeviceArrayStream* s) {
  struct hostile_stream* h = s->private_data;
  s->release = NULL;
  free(h);
  g_live--;
}

JNIEXPORT jint JNICALL Java_io_github_ferryarrow_ferry_jni_Testing_hostileStreamCount(
    JNIEnv* env, jclass cls) {
  return HOSTILE_STREAMS;
}

/* A CPU stream of kind k (see the enum) at stream_out: two batches. */
JNIEXPORT void JNICALL Java_io_github_ferryarrow_ferry_jni_Testing_hostileStream(
    JNIEnv* env, jclass cls, jint kind, jlong stream_out) {
  struct ArrowDeviceArrayStream* s = (struct ArrowDeviceArrayStream*)(intptr_t)stream_out;
  struct hostile_stream* h = calloc(1, sizeof *h);
  if (h == NULL) abort();
  h->kind = kind;
  g_live++;
  memset(s, 0, sizeof *s);
  s->device_type = ARROW_DEVICE_CPU;
  s->get_schema = hostile_stream_get_schema;
  s->get_next = hostile_stream_get_next;
  s->get_last_error = hostile_stream_last_error;
  s->release = hostile_stream_release;
  s->private_data = h;
}

/* ---- counters ----------------------------------------------------------- */

/* Nodes (and streams) made and not released yet. */
JNIEXPORT jlong JNICALL Java_io_github_ferryarrow_ferry_jni_Testing_hostileLive(JNIEnv* env,
                                                                              jclass cls) {
  return g_live;
}

/* Release calls on nodes already released. */
JNIEXPORT jlong JNICALL Java_io_github_ferryarrow_ferry_jni_Testing_hostileReleasedAgain(
    JNIEnv* env, jclass cls) {
  return g_again;
}

/* Frees every node made so far (call when none is live) and clears the counts. */
JNIEXPORT void JNICALL Java_io_github_ferryarrow_ferry_jni_Testing_hostileReset(JNIEnv* env,
                                                                              jclass cls) {
  while (g_nodes != NULL) {
    struct hostile_node* n = g_nodes;
    g_nodes = n->next;
    free(n);
  }
  g_live = 0;
  g_again = 0;
}
