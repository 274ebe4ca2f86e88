/* Release counting by interposed callbacks (see release_watch.h). */
#include "release_watch.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum watch_kind { WATCH_SCHEMA, WATCH_ARRAY, WATCH_STREAM };

struct watch_node {
  enum watch_kind kind;
  void* address;
  void* private_data; /* recognises a struct that was moved before release */
  void (*original)(void*);
  int64_t calls;
  int left_release_set;
  int group;
  char where[160];
};

/* The group of nodes reported as never released: kept so that a late
 * release (a garbage collector, a finalizer) is still forwarded once. */
#define WATCH_ORPHAN (-1)

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static struct watch_node* g_nodes;
static int64_t g_count;
static int64_t g_capacity;
static int g_group;

int watch_new_group(void) {
  pthread_mutex_lock(&g_lock);
  int group = ++g_group;
  pthread_mutex_unlock(&g_lock);
  return group;
}

/* Under g_lock. */
static struct watch_node* find_node(enum watch_kind kind, void* address) {
  for (int64_t i = 0; i < g_count; i++) {
    if (g_nodes[i].kind == kind && g_nodes[i].address == address) return &g_nodes[i];
  }
  return NULL;
}

/* Under g_lock: the node of a struct that a consumer moved before releasing
 * it, by its private_data: the single unreleased one, or else (a second
 * release of a moved struct) the latest released one. */
static struct watch_node* find_moved(enum watch_kind kind, void* private_data) {
  struct watch_node* found = NULL;
  for (int64_t i = 0; i < g_count; i++) {
    struct watch_node* n = &g_nodes[i];
    if (n->kind == kind && n->calls == 0 && n->private_data == private_data) {
      if (found != NULL) return NULL;
      found = n;
    }
  }
  if (found != NULL) return found;
  for (int64_t i = g_count - 1; i >= 0; i--) {
    struct watch_node* n = &g_nodes[i];
    if (n->kind == kind && n->private_data == private_data) return n;
  }
  return NULL;
}

/* Release calls on structs the watch cannot place (reported by the next
 * watch_verify). */
static int64_t g_unknown_releases;

static int add_node(enum watch_kind kind, void* address, void* private_data,
                    void (*original)(void*), const char* where) {
  pthread_mutex_lock(&g_lock);
  struct watch_node* existing = find_node(kind, address);
  if (existing != NULL && existing->group != WATCH_ORPHAN) {
    pthread_mutex_unlock(&g_lock);
    return -1;
  }
  /* An orphan (reported unreleased) no longer lives at this address: the
   * consumer moved it away; it stays findable by its private_data. */
  if (existing != NULL) existing->address = NULL;
  if (g_count == g_capacity) {
    int64_t capacity = g_capacity == 0 ? 64 : g_capacity * 2;
    struct watch_node* grown = realloc(g_nodes, (size_t)capacity * sizeof *grown);
    if (grown == NULL) {
      pthread_mutex_unlock(&g_lock);
      return -1;
    }
    g_nodes = grown;
    g_capacity = capacity;
  }
  struct watch_node* n = &g_nodes[g_count++];
  memset(n, 0, sizeof *n);
  n->kind = kind;
  n->address = address;
  n->private_data = private_data;
  n->original = original;
  n->group = g_group;
  snprintf(n->where, sizeof n->where, "%s", where);
  pthread_mutex_unlock(&g_lock);
  return 0;
}

/* Counts the call; returns the original callback when it must be forwarded
 * (first call), NULL otherwise. The lock is not held while the original
 * runs, because a parent's release calls its children's. */
static void (*on_release(enum watch_kind kind, void* address, void* private_data,
                         int* index))(void*) {
  pthread_mutex_lock(&g_lock);
  struct watch_node* n = find_node(kind, address);
  if (n == NULL) {
    n = find_moved(kind, private_data);
    /* From now on the struct lives at its new address. */
    if (n != NULL) n->address = address;
  }
  void (*original)(void*) = NULL;
  if (n != NULL) {
    n->calls++;
    if (n->calls == 1) original = n->original;
    *index = (int)(n - g_nodes);
  } else {
    *index = -1;
    g_unknown_releases++;
  }
  pthread_mutex_unlock(&g_lock);
  return original;
}

static void mark_left_set(int index) {
  pthread_mutex_lock(&g_lock);
  if (index >= 0 && index < g_count) g_nodes[index].left_release_set = 1;
  pthread_mutex_unlock(&g_lock);
}

static void watched_schema_release(struct ArrowSchema* schema) {
  int index;
  void (*original)(void*) =
      on_release(WATCH_SCHEMA, schema, schema->private_data, &index);
  if (original == NULL) return;
  schema->release = (void (*)(struct ArrowSchema*))original;
  schema->release(schema);
  if (schema->release != NULL) {
    mark_left_set(index);
    schema->release = watched_schema_release;
  }
}

static void watched_array_release(struct ArrowArray* array) {
  int index;
  void (*original)(void*) = on_release(WATCH_ARRAY, array, array->private_data, &index);
  if (original == NULL) return;
  array->release = (void (*)(struct ArrowArray*))original;
  array->release(array);
  if (array->release != NULL) {
    mark_left_set(index);
    array->release = watched_array_release;
  }
}

static void watched_stream_release(struct ArrowDeviceArrayStream* stream) {
  int index;
  void (*original)(void*) =
      on_release(WATCH_STREAM, stream, stream->private_data, &index);
  if (original == NULL) return;
  stream->release = (void (*)(struct ArrowDeviceArrayStream*))original;
  stream->release(stream);
  if (stream->release != NULL) {
    mark_left_set(index);
    stream->release = watched_stream_release;
  }
}

static void walk_schema(struct ArrowSchema* schema, char* where, size_t length,
                        int depth) {
  if (schema == NULL || schema->release == NULL || depth > 32) return;
  if (schema->release == watched_schema_release) return;
  if (add_node(WATCH_SCHEMA, schema, schema->private_data,
               (void (*)(void*))schema->release, where) != 0) {
    return;
  }
  schema->release = watched_schema_release;
  for (int64_t i = 0; schema->children != NULL && i < schema->n_children; i++) {
    int n = snprintf(where + length, 160 - length, ".children[%lld]", (long long)i);
    if (n > 0 && length + (size_t)n < 160) {
      walk_schema(schema->children[i], where, length + (size_t)n, depth + 1);
    }
    where[length] = '\0';
  }
  if (schema->dictionary != NULL) {
    int n = snprintf(where + length, 160 - length, ".dictionary");
    if (n > 0 && length + (size_t)n < 160) {
      walk_schema(schema->dictionary, where, length + (size_t)n, depth + 1);
    }
    where[length] = '\0';
  }
}

static void walk_array(struct ArrowArray* array, char* where, size_t length, int depth) {
  if (array == NULL || array->release == NULL || depth > 32) return;
  if (array->release == watched_array_release) return;
  if (add_node(WATCH_ARRAY, array, array->private_data, (void (*)(void*))array->release,
               where) != 0) {
    return;
  }
  array->release = watched_array_release;
  for (int64_t i = 0; array->children != NULL && i < array->n_children; i++) {
    int n = snprintf(where + length, 160 - length, ".children[%lld]", (long long)i);
    if (n > 0 && length + (size_t)n < 160) {
      walk_array(array->children[i], where, length + (size_t)n, depth + 1);
    }
    where[length] = '\0';
  }
  if (array->dictionary != NULL) {
    int n = snprintf(where + length, 160 - length, ".dictionary");
    if (n > 0 && length + (size_t)n < 160) {
      walk_array(array->dictionary, where, length + (size_t)n, depth + 1);
    }
    where[length] = '\0';
  }
}

void watch_schema(struct ArrowSchema* schema, const char* where) {
  char path[160];
  snprintf(path, sizeof path, "%s", where);
  walk_schema(schema, path, strlen(path), 0);
}

void watch_array(struct ArrowArray* array, const char* where) {
  char path[160];
  snprintf(path, sizeof path, "%s", where);
  walk_array(array, path, strlen(path), 0);
}

void watch_stream(struct ArrowDeviceArrayStream* stream, const char* where) {
  if (stream == NULL || stream->release == NULL) return;
  if (stream->release == watched_stream_release) return;
  if (add_node(WATCH_STREAM, stream, stream->private_data,
               (void (*)(void*))stream->release, where) != 0) {
    return;
  }
  stream->release = watched_stream_release;
}

static const char* kind_name(enum watch_kind kind) {
  return kind == WATCH_SCHEMA ? "schema" : kind == WATCH_ARRAY ? "array" : "stream";
}

int64_t watch_verify(int group, char* why, size_t why_size) {
  int64_t findings = 0;
  int64_t kept = 0;
  pthread_mutex_lock(&g_lock);
  for (int64_t i = 0; i < g_count; i++) {
    struct watch_node* n = &g_nodes[i];
    if (n->group != group) {
      /* Orphans that were released late are forgotten now. */
      if (n->group != WATCH_ORPHAN || n->calls == 0) g_nodes[kept++] = *n;
      continue;
    }
    char what[256] = "";
    if (n->calls == 0) {
      snprintf(what, sizeof what, "%s %s was never released", kind_name(n->kind),
               n->where);
    } else if (n->calls > 1) {
      snprintf(what, sizeof what, "%s %s was released %lld times", kind_name(n->kind),
               n->where, (long long)n->calls);
    } else if (n->left_release_set) {
      snprintf(what, sizeof what, "%s %s: release callback did not set release to NULL",
               kind_name(n->kind), n->where);
    }
    if (what[0] != '\0') {
      /* Every finding, joined, as far as `why` reaches. */
      size_t used = findings == 0 ? 0 : strlen(why);
      if (used < why_size) {
        snprintf(why + used, why_size - used, "%s%s", findings == 0 ? "" : "; ", what);
      }
      findings++;
    }
    if (n->calls == 0) {
      n->group = WATCH_ORPHAN;
      g_nodes[kept++] = *n;
    }
  }
  g_count = kept;
  if (g_unknown_releases > 0) {
    size_t used = findings == 0 ? 0 : strlen(why);
    if (used < why_size) {
      snprintf(
          why + used, why_size - used,
          "%s%lld release call(s) on a struct that was never exported or was already "
          "released and forgotten",
          findings == 0 ? "" : "; ", (long long)g_unknown_releases);
    }
    findings += g_unknown_releases;
    g_unknown_releases = 0;
  }
  pthread_mutex_unlock(&g_lock);
  return findings;
}
