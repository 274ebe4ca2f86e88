/* Release counting for `ferry check`: every release callback in an exported
 * tree is replaced by a wrapper that finds the struct in a table, counts the
 * call, and forwards the first one to the producer's original callback. A
 * second call is counted, not forwarded, so a double release becomes a
 * finding instead of a double free. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tool.h"

enum node_kind { NODE_SCHEMA, NODE_ARRAY, NODE_STREAM };

struct node {
  enum node_kind kind;
  void* address;
  /* Kept to recognise a struct that a consumer moved (bitwise copied) to
   * another address before releasing it: private_data moves with it. */
  void* private_data;
  void (*original)(void*);
  int64_t calls;
  int left_release_set; /* the original returned with release still non-NULL */
  int group;
  char where[512];
};

#define MAX_NODES 100000
#define MAX_DEPTH 64

static struct node* g_nodes;
static int64_t g_n_nodes;
static int64_t g_capacity;
static int g_group;

int tool_interpose_new_group(void) { return ++g_group; }

static struct node* find_node(enum node_kind kind, void* address) {
  for (int64_t i = 0; i < g_n_nodes; i++) {
    if (g_nodes[i].kind == kind && g_nodes[i].address == address) return &g_nodes[i];
  }
  return NULL;
}

/* A moved struct: the one not yet released node of this kind whose
 * private_data matches, if exactly one does. */
static struct node* find_moved(enum node_kind kind, void* private_data) {
  struct node* found = NULL;
  for (int64_t i = 0; i < g_n_nodes; i++) {
    struct node* n = &g_nodes[i];
    if (n->kind == kind && n->calls == 0 && n->private_data == private_data) {
      if (found != NULL) return NULL;
      found = n;
    }
  }
  return found;
}

static struct node* add_node(enum node_kind kind, void* address, void* private_data,
                             void (*original)(void*), const char* where) {
  if (g_n_nodes >= MAX_NODES) return NULL;
  if (g_n_nodes == g_capacity) {
    int64_t capacity = g_capacity == 0 ? 64 : g_capacity * 2;
    struct node* grown = (struct node*)realloc(g_nodes, (size_t)capacity * sizeof *grown);
    if (grown == NULL) return NULL;
    g_nodes = grown;
    g_capacity = capacity;
  }
  struct node* n = &g_nodes[g_n_nodes++];
  memset(n, 0, sizeof *n);
  n->kind = kind;
  n->address = address;
  n->private_data = private_data;
  n->original = original;
  n->group = g_group;
  snprintf(n->where, sizeof n->where, "%s", where);
  return n;
}

static const char* kind_name(enum node_kind kind) {
  switch (kind) {
    case NODE_SCHEMA: return "schema";
    case NODE_ARRAY: return "array";
    case NODE_STREAM: return "stream";
  }
  return "struct";
}

/* The common part of the wrappers: returns the node whose original must be
 * called now, or NULL when the call must not be forwarded. */
static struct node* on_release(enum node_kind kind, void* address, void* private_data) {
  struct node* n = find_node(kind, address);
  if (n == NULL) n = find_moved(kind, private_data);
  if (n == NULL) {
    tool_fail(
        "release", "?",
        "release called on a %s at %p that was never exported (or moved ambiguously)",
        kind_name(kind), address);
    return NULL;
  }
  n->calls++;
  return n->calls == 1 ? n : NULL;
}

static void counting_schema_release(struct ArrowSchema* schema) {
  struct node* n = on_release(NODE_SCHEMA, schema, schema->private_data);
  if (n == NULL) return;
  schema->release = (void (*)(struct ArrowSchema*))n->original;
  schema->release(schema);
  if (schema->release != NULL) {
    n->left_release_set = 1;
    schema->release = counting_schema_release;
  }
}

static void counting_array_release(struct ArrowArray* array) {
  struct node* n = on_release(NODE_ARRAY, array, array->private_data);
  if (n == NULL) return;
  array->release = (void (*)(struct ArrowArray*))n->original;
  array->release(array);
  if (array->release != NULL) {
    n->left_release_set = 1;
    array->release = counting_array_release;
  }
}

static void counting_stream_release(struct ArrowDeviceArrayStream* stream) {
  struct node* n = on_release(NODE_STREAM, stream, stream->private_data);
  if (n == NULL) return;
  stream->release = (void (*)(struct ArrowDeviceArrayStream*))n->original;
  stream->release(stream);
  if (stream->release != NULL) {
    n->left_release_set = 1;
    stream->release = counting_stream_release;
  }
}

static void walk_schema(struct ArrowSchema* schema, char* where, size_t length,
                        int depth) {
  if (schema == NULL || schema->release == NULL || depth > MAX_DEPTH) return;
  /* Already wrapped (a cycle, or a struct shared by two parents). */
  if (schema->release == counting_schema_release || find_node(NODE_SCHEMA, schema))
    return;
  if (add_node(NODE_SCHEMA, schema, schema->private_data,
               (void (*)(void*))schema->release, where) == NULL) {
    return;
  }
  schema->release = counting_schema_release;
  if (schema->children != NULL) {
    for (int64_t i = 0; i < schema->n_children; i++) {
      int n = snprintf(where + length, 512 - length, ".children[%lld]", (long long)i);
      if (n < 0 || length + (size_t)n >= 512) continue;
      walk_schema(schema->children[i], where, length + (size_t)n, depth + 1);
      where[length] = '\0';
    }
  }
  if (schema->dictionary != NULL) {
    int n = snprintf(where + length, 512 - length, ".dictionary");
    if (n > 0 && length + (size_t)n < 512) {
      walk_schema(schema->dictionary, where, length + (size_t)n, depth + 1);
    }
    where[length] = '\0';
  }
}

static void walk_array(struct ArrowArray* array, char* where, size_t length, int depth) {
  if (array == NULL || array->release == NULL || depth > MAX_DEPTH) return;
  if (array->release == counting_array_release || find_node(NODE_ARRAY, array)) return;
  if (add_node(NODE_ARRAY, array, array->private_data, (void (*)(void*))array->release,
               where) == NULL) {
    return;
  }
  array->release = counting_array_release;
  if (array->children != NULL) {
    for (int64_t i = 0; i < array->n_children; i++) {
      int n = snprintf(where + length, 512 - length, ".children[%lld]", (long long)i);
      if (n < 0 || length + (size_t)n >= 512) continue;
      walk_array(array->children[i], where, length + (size_t)n, depth + 1);
      where[length] = '\0';
    }
  }
  if (array->dictionary != NULL) {
    int n = snprintf(where + length, 512 - length, ".dictionary");
    if (n > 0 && length + (size_t)n < 512) {
      walk_array(array->dictionary, where, length + (size_t)n, depth + 1);
    }
    where[length] = '\0';
  }
}

void tool_interpose_schema(struct ArrowSchema* schema, const char* where) {
  char path[512];
  snprintf(path, sizeof path, "%s", where);
  walk_schema(schema, path, strlen(path), 0);
}

void tool_interpose_array(struct ArrowArray* array, const char* where) {
  char path[512];
  snprintf(path, sizeof path, "%s", where);
  walk_array(array, path, strlen(path), 0);
}

void tool_interpose_stream(struct ArrowDeviceArrayStream* stream, const char* where) {
  if (stream == NULL || stream->release == NULL) return;
  if (stream->release == counting_stream_release) return;
  if (add_node(NODE_STREAM, stream, stream->private_data,
               (void (*)(void*))stream->release, where) == NULL) {
    return;
  }
  stream->release = counting_stream_release;
}

int64_t tool_interpose_verify(int group) {
  int64_t findings = 0;
  int64_t kept = 0;
  for (int64_t i = 0; i < g_n_nodes; i++) {
    struct node* n = &g_nodes[i];
    if (group != 0 && n->group != group) {
      g_nodes[kept++] = *n;
      continue;
    }
    if (n->calls == 0) {
      tool_fail("release", n->where, "%s was never released%s", kind_name(n->kind),
                strchr(n->where, '.') != NULL ? " by its parent's release" : "");
      findings++;
    } else if (n->calls > 1) {
      tool_fail("release", n->where,
                "%s was released %lld times (exactly once is allowed)",
                kind_name(n->kind), (long long)n->calls);
      findings++;
    }
    if (n->left_release_set) {
      tool_fail("release", n->where,
                "the %s's release callback did not set release to NULL",
                kind_name(n->kind));
      findings++;
    }
  }
  g_n_nodes = kept;
  return findings;
}
