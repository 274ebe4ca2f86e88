/* The release ledger (see ledger.h). */
#include "ledger.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum it_node_kind { IT_NODE_SCHEMA, IT_NODE_ARRAY, IT_NODE_STREAM };

/* Buffers recorded per array; arrays of the case grammar have at most 3. */
#define IT_MAX_RECORDED_BUFFERS 8
#define IT_MAX_NODES 4096
#define IT_MAX_DEPTH 32

struct it_node {
  enum it_node_kind kind;
  void* address;
  void* private_data;
  void (*original)(void*);
  int64_t calls;
  int left_release_set;
  int buffers_changed;
  int64_t n_buffers;
  const void* buffers[IT_MAX_RECORDED_BUFFERS];
  int64_t n_buffers_at_release;
  const void* buffers_at_release[IT_MAX_RECORDED_BUFFERS];
  int orphan; /* from an earlier handoff, still unreleased when it ended */
  char where[96];
};

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static struct it_node g_nodes[IT_MAX_NODES];
static int64_t g_n_nodes;
static int64_t g_unknown_releases;
static int64_t g_overflow;
static int64_t g_release_ns;
static int64_t g_late_releases;
static char g_late_where[96];

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void it_ledger_reset(void) {
  pthread_mutex_lock(&g_lock);
  /* Structs still unreleased stay as orphans, so that a late release (a
   * consumer that releases from a finalizer or garbage collector, after its
   * check returned) still reaches the producer and is reported where it
   * happens instead of leaking and confusing every later handoff. */
  int64_t kept = 0;
  for (int64_t i = 0; i < g_n_nodes; i++) {
    if (g_nodes[i].calls == 0 && kept < IT_MAX_NODES / 2) {
      g_nodes[kept] = g_nodes[i];
      g_nodes[kept].orphan = 1;
      kept++;
    }
  }
  g_n_nodes = kept;
  g_late_releases = 0;
  g_unknown_releases = 0;
  g_overflow = 0;
  g_release_ns = 0;
  pthread_mutex_unlock(&g_lock);
}

int64_t it_ledger_count(void) {
  pthread_mutex_lock(&g_lock);
  int64_t n = g_n_nodes;
  pthread_mutex_unlock(&g_lock);
  return n;
}

int64_t it_ledger_release_ns(void) {
  pthread_mutex_lock(&g_lock);
  int64_t ns = g_release_ns;
  pthread_mutex_unlock(&g_lock);
  return ns;
}

/* Caller holds g_lock. Finds the unreleased entry at `address`, or else the
 * single unreleased entry of this kind whose private_data matches (a struct
 * the consumer moved before releasing). */
static struct it_node* find_locked(enum it_node_kind kind, void* address, void* private_data) {
  /* Newest first: a struct of this handoff may sit where an orphan's was. */
  for (int64_t i = g_n_nodes - 1; i >= 0; i--) {
    struct it_node* n = &g_nodes[i];
    if (n->kind == kind && n->address == address && n->calls == 0) return n;
  }
  struct it_node* moved = NULL;
  for (int64_t i = 0; i < g_n_nodes; i++) {
    struct it_node* n = &g_nodes[i];
    if (n->kind == kind && n->calls == 0 && n->private_data == private_data) {
      if (moved != NULL) return NULL; /* ambiguous */
      moved = n;
    }
  }
  if (moved != NULL) return moved;
  /* A second release of a struct still at its address. */
  for (int64_t i = g_n_nodes - 1; i >= 0; i--) {
    struct it_node* n = &g_nodes[i];
    if (n->kind == kind && n->address == address) return n;
  }
  return NULL;
}

/* Caller holds g_lock. */
static struct it_node* add_locked(enum it_node_kind kind, void* address, void* private_data,
                                  void (*original)(void*), const char* where) {
  if (g_n_nodes >= IT_MAX_NODES) {
    g_overflow++;
    return NULL;
  }
  struct it_node* n = &g_nodes[g_n_nodes++];
  memset(n, 0, sizeof *n);
  n->kind = kind;
  n->address = address;
  n->private_data = private_data;
  n->original = original;
  snprintf(n->where, sizeof n->where, "%s", where);
  return n;
}

/* Counts a call; returns the original callback to forward to on the first
 * call, NULL otherwise (unknown struct or repeated release). */
static void (*on_release(enum it_node_kind kind, void* address, void* private_data,
                         struct it_node** node_out))(void*) {
  pthread_mutex_lock(&g_lock);
  struct it_node* n = find_locked(kind, address, private_data);
  void (*forward)(void*) = NULL;
  if (n == NULL) {
    g_unknown_releases++;
  } else {
    n->calls++;
    if (n->calls == 1) forward = n->original;
    if (n->orphan && g_late_releases++ == 0) {
      snprintf(g_late_where, sizeof g_late_where, "%s", n->where);
    }
  }
  *node_out = n;
  pthread_mutex_unlock(&g_lock);
  return forward;
}

static void after_release(struct it_node* n, int release_still_set, int64_t elapsed_ns) {
  pthread_mutex_lock(&g_lock);
  if (release_still_set) n->left_release_set = 1;
  g_release_ns += elapsed_ns;
  pthread_mutex_unlock(&g_lock);
}

static void counting_schema_release(struct ArrowSchema* schema) {
  struct it_node* n;
  void (*forward)(void*) = on_release(IT_NODE_SCHEMA, schema, schema->private_data, &n);
  if (forward == NULL) return;
  schema->release = (void (*)(struct ArrowSchema*))forward;
  int64_t start = now_ns();
  schema->release(schema);
  int64_t elapsed = now_ns() - start;
  int still_set = schema->release != NULL;
  if (still_set) schema->release = counting_schema_release;
  after_release(n, still_set, elapsed);
}

static void counting_array_release(struct ArrowArray* array) {
  struct it_node* n;
  void (*forward)(void*) = on_release(IT_NODE_ARRAY, array, array->private_data, &n);
  if (forward == NULL) return;
  /* What the consumer hands back must be the producer's buffers. */
  pthread_mutex_lock(&g_lock);
  n->n_buffers_at_release = array->n_buffers;
  for (int64_t i = 0; i < array->n_buffers && i < IT_MAX_RECORDED_BUFFERS; i++) {
    n->buffers_at_release[i] = array->buffers == NULL ? NULL : array->buffers[i];
  }
  if (n->n_buffers_at_release != n->n_buffers) n->buffers_changed = 1;
  for (int64_t i = 0; i < n->n_buffers && i < IT_MAX_RECORDED_BUFFERS; i++) {
    if (n->buffers_at_release[i] != n->buffers[i]) n->buffers_changed = 1;
  }
  pthread_mutex_unlock(&g_lock);
  array->release = (void (*)(struct ArrowArray*))forward;
  int64_t start = now_ns();
  array->release(array);
  int64_t elapsed = now_ns() - start;
  int still_set = array->release != NULL;
  if (still_set) array->release = counting_array_release;
  after_release(n, still_set, elapsed);
}

static void counting_stream_release(struct ArrowDeviceArrayStream* stream) {
  struct it_node* n;
  void (*forward)(void*) = on_release(IT_NODE_STREAM, stream, stream->private_data, &n);
  if (forward == NULL) return;
  stream->release = (void (*)(struct ArrowDeviceArrayStream*))forward;
  int64_t start = now_ns();
  stream->release(stream);
  int64_t elapsed = now_ns() - start;
  int still_set = stream->release != NULL;
  if (still_set) stream->release = counting_stream_release;
  after_release(n, still_set, elapsed);
}

static int track_schema(struct ArrowSchema* schema, const char* where, int depth) {
  if (schema == NULL || schema->release == NULL) return 0;
  if (depth > IT_MAX_DEPTH || schema->release == counting_schema_release) return 0;
  pthread_mutex_lock(&g_lock);
  struct it_node* n = add_locked(IT_NODE_SCHEMA, schema, schema->private_data,
                                 (void (*)(void*))schema->release, where);
  pthread_mutex_unlock(&g_lock);
  if (n == NULL) return -1;
  schema->release = counting_schema_release;
  char path[96];
  for (int64_t i = 0; schema->children != NULL && i < schema->n_children; i++) {
    snprintf(path, sizeof path, "%s.children[%lld]", where, (long long)i);
    if (track_schema(schema->children[i], path, depth + 1) != 0) return -1;
  }
  snprintf(path, sizeof path, "%s.dictionary", where);
  return track_schema(schema->dictionary, path, depth + 1);
}

static int track_array(struct ArrowArray* array, const char* where, int depth) {
  if (array == NULL || array->release == NULL) return 0;
  if (depth > IT_MAX_DEPTH || array->release == counting_array_release) return 0;
  pthread_mutex_lock(&g_lock);
  struct it_node* n = add_locked(IT_NODE_ARRAY, array, array->private_data,
                                 (void (*)(void*))array->release, where);
  if (n != NULL) {
    n->n_buffers = array->n_buffers;
    for (int64_t i = 0; i < array->n_buffers && i < IT_MAX_RECORDED_BUFFERS; i++) {
      n->buffers[i] = array->buffers == NULL ? NULL : array->buffers[i];
    }
  }
  pthread_mutex_unlock(&g_lock);
  if (n == NULL) return -1;
  array->release = counting_array_release;
  char path[96];
  for (int64_t i = 0; array->children != NULL && i < array->n_children; i++) {
    snprintf(path, sizeof path, "%s.children[%lld]", where, (long long)i);
    if (track_array(array->children[i], path, depth + 1) != 0) return -1;
  }
  snprintf(path, sizeof path, "%s.dictionary", where);
  return track_array(array->dictionary, path, depth + 1);
}

int it_ledger_track_schema(struct ArrowSchema* schema, const char* where) {
  return track_schema(schema, where, 0);
}

int it_ledger_track_array(struct ArrowArray* array, const char* where) {
  return track_array(array, where, 0);
}

int it_ledger_track_stream(struct ArrowDeviceArrayStream* stream, const char* where) {
  if (stream == NULL || stream->release == NULL) return 0;
  if (stream->release == counting_stream_release) return 0;
  pthread_mutex_lock(&g_lock);
  struct it_node* n = add_locked(IT_NODE_STREAM, stream, stream->private_data,
                                 (void (*)(void*))stream->release, where);
  pthread_mutex_unlock(&g_lock);
  if (n == NULL) return -1;
  stream->release = counting_stream_release;
  return 0;
}

static const char* kind_name(enum it_node_kind kind) {
  switch (kind) {
    case IT_NODE_SCHEMA: return "schema";
    case IT_NODE_ARRAY: return "array";
    case IT_NODE_STREAM: return "stream";
  }
  return "struct";
}

int64_t it_ledger_verify(char* message, size_t size) {
  int64_t findings = 0;
  char first[512] = "";
  pthread_mutex_lock(&g_lock);
  if (g_overflow > 0) {
    findings++;
    snprintf(first, sizeof first, "ledger full: %lld structs not tracked",
             (long long)g_overflow);
  }
  if (g_late_releases > 0) {
    if (findings++ == 0) {
      snprintf(first, sizeof first,
               "%lld structs of an earlier handoff were released during this one (first: "
               "%s): the consumer released them after its check had returned",
               (long long)g_late_releases, g_late_where);
    }
  }
  if (g_unknown_releases > 0) {
    if (findings++ == 0) {
      snprintf(first, sizeof first,
               "%lld release calls on structs that were not live: released before (a "
               "double release through a saved callback), never exported, or moved "
               "ambiguously",
               (long long)g_unknown_releases);
    }
  }
  for (int64_t i = 0; i < g_n_nodes; i++) {
    const struct it_node* n = &g_nodes[i];
    if (n->orphan) continue;
    const char* problem = NULL;
    char detail[256] = "";
    if (n->calls == 0) {
      problem = "was never released";
    } else if (n->calls > 1) {
      snprintf(detail, sizeof detail, "was released %lld times (exactly once is allowed)",
               (long long)n->calls);
      problem = detail;
    } else if (n->left_release_set) {
      problem = "release callback did not set release to NULL";
    } else if (n->buffers_changed) {
      snprintf(detail, sizeof detail,
               "was released with other buffers than the producer exported "
               "(buffer 1: exported %p, released %p)",
               n->n_buffers > 1 ? n->buffers[1] : NULL,
               n->n_buffers_at_release > 1 ? n->buffers_at_release[1] : NULL);
      problem = detail;
    }
    if (problem != NULL && findings++ == 0) {
      snprintf(first, sizeof first, "%s %s %s", kind_name(n->kind), n->where, problem);
    }
  }
  pthread_mutex_unlock(&g_lock);
  if (findings > 1) {
    snprintf(message, size, "%s (and %lld more release findings)", first,
             (long long)(findings - 1));
  } else {
    snprintf(message, size, "%s", first);
  }
  return findings;
}

static void describe(const char* prefix, char* out, size_t size, int at_release) {
  size_t used = 0;
  out[0] = '\0';
  pthread_mutex_lock(&g_lock);
  for (int64_t i = 0; i < g_n_nodes && used + 1 < size; i++) {
    const struct it_node* n = &g_nodes[i];
    if (n->orphan || n->kind != IT_NODE_ARRAY || strncmp(n->where, prefix, strlen(prefix)) != 0) continue;
    int64_t count = at_release ? n->n_buffers_at_release : n->n_buffers;
    const void* const* buffers = at_release ? n->buffers_at_release : n->buffers;
    int w = snprintf(out + used, size - used, "%s%s:", used == 0 ? "" : "; ", n->where);
    if (w < 0 || (size_t)w >= size - used) break;
    used += (size_t)w;
    for (int64_t b = 0; b < count && b < IT_MAX_RECORDED_BUFFERS; b++) {
      w = buffers[b] == NULL ? snprintf(out + used, size - used, " -")
                             : snprintf(out + used, size - used, " %p", buffers[b]);
      if (w < 0 || (size_t)w >= size - used) break;
      used += (size_t)w;
    }
  }
  pthread_mutex_unlock(&g_lock);
}

void it_ledger_describe_buffers(const char* prefix, char* out, size_t size) {
  describe(prefix, out, size, 0);
}

void it_ledger_describe_released_buffers(const char* prefix, char* out, size_t size) {
  describe(prefix, out, size, 1);
}
