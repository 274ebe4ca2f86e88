/* The release watch (see release_watch.h). */
#include "release_watch.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Buffers recorded per array; arrays of the case grammar have at most 3. */
#define IT_WATCH_MAX_BUFFERS 8
#define IT_WATCH_MAX_DEPTH 64
#define IT_WATCH_WHERE_SIZE 512

struct it_watch_node {
  enum it_watch_kind kind;
  void* address;
  void* private_data; /* recognises a struct that was moved before release */
  void (*original)(void*);
  int64_t calls;
  int left_release_set;
  int buffers_changed;
  int group;
  int orphan; /* its group was verified while it was unreleased */
  int64_t n_buffers;
  const void* buffers[IT_WATCH_MAX_BUFFERS];
  int64_t n_buffers_at_release;
  const void* buffers_at_release[IT_WATCH_MAX_BUFFERS];
  char where[IT_WATCH_WHERE_SIZE];
};

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static struct it_watch_node* g_nodes;
static int64_t g_count;
static int64_t g_capacity;
static int g_group;
/* Process-wide counts, reported and reset by the next verification. */
static int64_t g_unknown_releases;
static int64_t g_late_releases;
static char g_late_where[IT_WATCH_WHERE_SIZE];
static int64_t g_not_watched;

int it_watch_new_group(void) {
  pthread_mutex_lock(&g_lock);
  int group = ++g_group;
  pthread_mutex_unlock(&g_lock);
  return group;
}

/* Under g_lock. The node a release call on the struct at `address` with
 * `private_data` belongs to, first match wins:
 *   1. the newest unreleased node at `address` with that private_data (the
 *      struct where it was watched);
 *   2. the oldest unreleased node with that private_data, anywhere (moved
 *      by the consumer, which now releases it at `address`). Several
 *      unreleased structs may share one private_data (a producer keeping one
 *      state for all its batches): they share the original callback too, so
 *      forwarding to any of them is right, and the oldest is the likeliest
 *      (consumers release batches in order);
 *   3. a released node at `address` with that private_data, or with that
 *      private_data anywhere (a second release of the struct or of a copy);
 *   4. when the call's private_data is NULL (cleared by the first release),
 *      the newest released node at `address`.
 * A released node is never matched by its address alone while the call
 * carries another private_data: that is a different struct at a reused
 * address (a moved batch released where an earlier batch was). A NULL
 * private_data cannot follow a move (children often have none): such a
 * struct is known by its address only. NULL when no node fits. */
static struct it_watch_node* find_locked(enum it_watch_kind kind, void* address,
                                         void* private_data) {
  for (int64_t i = g_count - 1; i >= 0; i--) {
    struct it_watch_node* n = &g_nodes[i];
    if (n->kind == kind && n->calls == 0 && n->address == address &&
        n->private_data == private_data) {
      return n;
    }
  }
  for (int64_t i = 0; private_data != NULL && i < g_count; i++) {
    struct it_watch_node* n = &g_nodes[i];
    if (n->kind == kind && n->calls == 0 && n->private_data == private_data) {
      n->address = address;
      return n;
    }
  }
  struct it_watch_node* copy = NULL;
  for (int64_t i = g_count - 1; i >= 0; i--) {
    struct it_watch_node* n = &g_nodes[i];
    if (n->kind != kind || n->calls == 0) continue;
    if (n->private_data == private_data && n->address == address) return n;
    if (private_data != NULL && n->private_data == private_data && copy == NULL) copy = n;
  }
  if (copy != NULL) return copy;
  for (int64_t i = g_count - 1; private_data == NULL && i >= 0; i--) {
    struct it_watch_node* n = &g_nodes[i];
    if (n->kind == kind && n->calls > 0 && n->address == address) return n;
  }
  return NULL;
}

/* Under g_lock. A new node, or NULL (counted) when the table cannot grow. */
static struct it_watch_node* add_locked(enum it_watch_kind kind, void* address,
                                        void* private_data, void (*original)(void*),
                                        const char* where) {
  if (g_count == g_capacity) {
    int64_t capacity = g_capacity == 0 ? 256 : g_capacity * 2;
    struct it_watch_node* grown =
        (struct it_watch_node*)realloc(g_nodes, (size_t)capacity * sizeof *grown);
    if (grown == NULL) {
      g_not_watched++;
      return NULL;
    }
    g_nodes = grown;
    g_capacity = capacity;
  }
  struct it_watch_node* n = &g_nodes[g_count++];
  *n = (struct it_watch_node){.kind = kind, .address = address, .original = original,
                              .private_data = private_data, .group = g_group};
  snprintf(n->where, sizeof n->where, "%s", where);
  return n;
}

/* Counts a release call; returns the node's index when the call must be
 * forwarded to the original callback (the first call), -1 otherwise. The
 * lock is not held while the original runs: a parent's release calls its
 * children's. */
static int64_t on_release(enum it_watch_kind kind, void* address, void* private_data,
                          void (**original)(void*)) {
  pthread_mutex_lock(&g_lock);
  struct it_watch_node* n = find_locked(kind, address, private_data);
  int64_t index = -1;
  if (n == NULL) {
    g_unknown_releases++;
  } else {
    n->calls++;
    if (n->calls == 1) {
      index = n - g_nodes;
      *original = n->original;
      if (n->orphan && g_late_releases++ == 0) {
        snprintf(g_late_where, sizeof g_late_where, "%s", n->where);
      }
    }
  }
  pthread_mutex_unlock(&g_lock);
  return index;
}

/* Records the buffers an array is released with (before its original runs). */
static void note_buffers_at_release(int64_t index, const struct ArrowArray* array) {
  pthread_mutex_lock(&g_lock);
  if (index >= g_count) { /* verified and forgotten meanwhile */
    pthread_mutex_unlock(&g_lock);
    return;
  }
  struct it_watch_node* n = &g_nodes[index];
  n->n_buffers_at_release = array->n_buffers;
  for (int64_t i = 0; i < array->n_buffers && i < IT_WATCH_MAX_BUFFERS; i++) {
    n->buffers_at_release[i] = array->buffers == NULL ? NULL : array->buffers[i];
  }
  if (n->n_buffers_at_release != n->n_buffers) n->buffers_changed = 1;
  for (int64_t i = 0; i < n->n_buffers && i < IT_WATCH_MAX_BUFFERS; i++) {
    if (n->buffers_at_release[i] != n->buffers[i]) n->buffers_changed = 1;
  }
  pthread_mutex_unlock(&g_lock);
}

static void note_left_set(int64_t index) {
  pthread_mutex_lock(&g_lock);
  if (index < g_count) g_nodes[index].left_release_set = 1;
  pthread_mutex_unlock(&g_lock);
}

static void watched_schema_release(struct ArrowSchema* schema) {
  void (*original)(void*) = NULL;
  int64_t index = on_release(IT_WATCH_SCHEMA, schema, schema->private_data, &original);
  if (index < 0) return;
  schema->release = (void (*)(struct ArrowSchema*))original;
  schema->release(schema);
  if (schema->release != NULL) {
    note_left_set(index);
    schema->release = watched_schema_release;
  }
}

static void watched_array_release(struct ArrowArray* array) {
  void (*original)(void*) = NULL;
  int64_t index = on_release(IT_WATCH_ARRAY, array, array->private_data, &original);
  if (index < 0) return;
  note_buffers_at_release(index, array);
  array->release = (void (*)(struct ArrowArray*))original;
  array->release(array);
  if (array->release != NULL) {
    note_left_set(index);
    array->release = watched_array_release;
  }
}

static void watched_stream_release(struct ArrowDeviceArrayStream* stream) {
  void (*original)(void*) = NULL;
  int64_t index = on_release(IT_WATCH_STREAM, stream, stream->private_data, &original);
  if (index < 0) return;
  stream->release = (void (*)(struct ArrowDeviceArrayStream*))original;
  stream->release(stream);
  if (stream->release != NULL) {
    note_left_set(index);
    stream->release = watched_stream_release;
  }
}

/* Appends ".children[i]" or ".dictionary" to `where` (of `length` bytes);
 * returns the new length, or 0 when it does not fit. */
static size_t extend_path(char* where, size_t length, const char* fmt, int64_t i) {
  int n = snprintf(where + length, IT_WATCH_WHERE_SIZE - length, fmt, (long long)i);
  if (n < 0 || length + (size_t)n >= IT_WATCH_WHERE_SIZE) {
    where[length] = '\0';
    return 0;
  }
  return length + (size_t)n;
}

static int walk_schema(struct ArrowSchema* schema, char* where, size_t length, int depth) {
  if (schema == NULL || schema->release == NULL || depth > IT_WATCH_MAX_DEPTH) return 0;
  /* Already watched (a cycle, or a struct shared by two parents). */
  if (schema->release == watched_schema_release) return 0;
  pthread_mutex_lock(&g_lock);
  struct it_watch_node* n = add_locked(IT_WATCH_SCHEMA, schema, schema->private_data,
                                       (void (*)(void*))schema->release, where);
  pthread_mutex_unlock(&g_lock);
  if (n == NULL) return -1;
  schema->release = watched_schema_release;
  int rc = 0;
  for (int64_t i = 0; schema->children != NULL && i < schema->n_children; i++) {
    size_t longer = extend_path(where, length, ".children[%lld]", i);
    if (longer > 0 && walk_schema(schema->children[i], where, longer, depth + 1) != 0) rc = -1;
    where[length] = '\0';
  }
  size_t longer = extend_path(where, length, ".dictionary", 0);
  if (longer > 0 && walk_schema(schema->dictionary, where, longer, depth + 1) != 0) rc = -1;
  where[length] = '\0';
  return rc;
}

static int walk_array(struct ArrowArray* array, char* where, size_t length, int depth) {
  if (array == NULL || array->release == NULL || depth > IT_WATCH_MAX_DEPTH) return 0;
  if (array->release == watched_array_release) return 0;
  pthread_mutex_lock(&g_lock);
  struct it_watch_node* n = add_locked(IT_WATCH_ARRAY, array, array->private_data,
                                       (void (*)(void*))array->release, where);
  if (n != NULL) {
    n->n_buffers = array->n_buffers;
    for (int64_t i = 0; i < array->n_buffers && i < IT_WATCH_MAX_BUFFERS; i++) {
      n->buffers[i] = array->buffers == NULL ? NULL : array->buffers[i];
    }
  }
  pthread_mutex_unlock(&g_lock);
  if (n == NULL) return -1;
  array->release = watched_array_release;
  int rc = 0;
  for (int64_t i = 0; array->children != NULL && i < array->n_children; i++) {
    size_t longer = extend_path(where, length, ".children[%lld]", i);
    if (longer > 0 && walk_array(array->children[i], where, longer, depth + 1) != 0) rc = -1;
    where[length] = '\0';
  }
  size_t longer = extend_path(where, length, ".dictionary", 0);
  if (longer > 0 && walk_array(array->dictionary, where, longer, depth + 1) != 0) rc = -1;
  where[length] = '\0';
  return rc;
}

int it_watch_schema(struct ArrowSchema* schema, const char* where) {
  char path[IT_WATCH_WHERE_SIZE];
  snprintf(path, sizeof path, "%s", where);
  return walk_schema(schema, path, strlen(path), 0);
}

int it_watch_array(struct ArrowArray* array, const char* where) {
  char path[IT_WATCH_WHERE_SIZE];
  snprintf(path, sizeof path, "%s", where);
  return walk_array(array, path, strlen(path), 0);
}

int it_watch_stream(struct ArrowDeviceArrayStream* stream, const char* where) {
  if (stream == NULL || stream->release == NULL) return 0;
  if (stream->release == watched_stream_release) return 0;
  pthread_mutex_lock(&g_lock);
  struct it_watch_node* n = add_locked(IT_WATCH_STREAM, stream, stream->private_data,
                                       (void (*)(void*))stream->release, where);
  pthread_mutex_unlock(&g_lock);
  if (n == NULL) return -1;
  stream->release = watched_stream_release;
  return 0;
}

const char* it_watch_kind_name(enum it_watch_kind kind) {
  switch (kind) {
    case IT_WATCH_SCHEMA: return "schema";
    case IT_WATCH_ARRAY: return "array";
    case IT_WATCH_STREAM: return "stream";
  }
  return "struct";
}

void it_watch_describe(const struct it_watch_finding* f, char* out, size_t size) {
  const char* kind = it_watch_kind_name(f->kind);
  switch (f->problem) {
    case IT_WATCH_NEVER_RELEASED:
      snprintf(out, size, "%s %s was never released", kind, f->where);
      break;
    case IT_WATCH_RELEASED_AGAIN:
      snprintf(out, size, "%s %s was released %lld times (exactly once is allowed)", kind,
               f->where, (long long)f->count);
      break;
    case IT_WATCH_LEFT_SET:
      snprintf(out, size, "%s %s: its release callback did not set release to NULL", kind,
               f->where);
      break;
    case IT_WATCH_BUFFERS_CHANGED:
      snprintf(out, size,
               "%s %s was released with other buffers than the producer exported "
               "(buffer 1: exported %p, released %p)",
               kind, f->where, f->exported_buffer, f->released_buffer);
      break;
    case IT_WATCH_UNKNOWN_RELEASES:
      snprintf(out, size,
               "%lld release calls on structs that were not live: released before and "
               "forgotten, never exported, or moved ambiguously",
               (long long)f->count);
      break;
    case IT_WATCH_LATE_RELEASES:
      snprintf(out, size,
               "%lld structs of an earlier handoff were released late (first: %s): the "
               "consumer released them after its check had returned",
               (long long)f->count, f->where);
      break;
    case IT_WATCH_NOT_WATCHED:
      snprintf(out, size, "%lld structs could not be watched (out of memory)",
               (long long)f->count);
      break;
  }
}

/* A finding as it is reported: copied out of the table, so that `report`
 * runs without the lock (it may print, or release more structs). */
struct pending {
  struct it_watch_finding finding;
  char where[IT_WATCH_WHERE_SIZE];
};

static void add_pending(struct pending** list, int64_t* n, int64_t* capacity,
                        const struct it_watch_finding* f) {
  if (*n == *capacity) {
    int64_t grown_capacity = *capacity == 0 ? 16 : *capacity * 2;
    struct pending* grown =
        (struct pending*)realloc(*list, (size_t)grown_capacity * sizeof *grown);
    if (grown == NULL) return;
    *list = grown;
    *capacity = grown_capacity;
  }
  struct pending* p = &(*list)[(*n)++];
  p->finding = *f;
  snprintf(p->where, sizeof p->where, "%s", f->where);
  p->finding.where = p->where;
}

int64_t it_watch_verify(int group, it_watch_report_fn report, void* context) {
  struct pending* list = NULL;
  int64_t n_list = 0, capacity = 0, findings = 0;
  pthread_mutex_lock(&g_lock);
  int64_t kept = 0;
  for (int64_t i = 0; i < g_count; i++) {
    struct it_watch_node* n = &g_nodes[i];
    int mine = !n->orphan && (group == 0 || n->group == group);
    if (mine) {
      struct it_watch_finding f = {IT_WATCH_NEVER_RELEASED, n->kind, n->where, 0, NULL, NULL};
      int found = 1;
      if (n->calls == 0) {
        f.problem = IT_WATCH_NEVER_RELEASED;
      } else if (n->calls > 1) {
        f.problem = IT_WATCH_RELEASED_AGAIN;
        f.count = n->calls;
      } else if (n->left_release_set) {
        f.problem = IT_WATCH_LEFT_SET;
      } else if (n->buffers_changed) {
        f.problem = IT_WATCH_BUFFERS_CHANGED;
        f.exported_buffer = n->n_buffers > 1 ? n->buffers[1] : NULL;
        f.released_buffer = n->n_buffers_at_release > 1 ? n->buffers_at_release[1] : NULL;
      } else {
        found = 0;
      }
      if (found) {
        findings++;
        add_pending(&list, &n_list, &capacity, &f);
      }
      /* Unreleased structs stay, so that a late release is forwarded once. */
      if (n->calls == 0) n->orphan = 1;
    }
    /* Orphans released late are forgotten now, the verified group too. */
    int keep = mine ? n->calls == 0 : !(n->orphan && n->calls > 0);
    if (keep) g_nodes[kept++] = *n;
  }
  g_count = kept;
  const struct {
    enum it_watch_problem problem;
    int64_t* count;
  } totals[] = {{IT_WATCH_UNKNOWN_RELEASES, &g_unknown_releases},
                {IT_WATCH_LATE_RELEASES, &g_late_releases},
                {IT_WATCH_NOT_WATCHED, &g_not_watched}};
  for (size_t t = 0; t < sizeof totals / sizeof totals[0]; t++) {
    if (*totals[t].count == 0) continue;
    struct it_watch_finding f = {totals[t].problem, IT_WATCH_ARRAY,
                                 totals[t].problem == IT_WATCH_LATE_RELEASES ? g_late_where
                                                                              : "",
                                 *totals[t].count, NULL, NULL};
    findings++;
    add_pending(&list, &n_list, &capacity, &f);
    *totals[t].count = 0;
  }
  pthread_mutex_unlock(&g_lock);
  for (int64_t i = 0; report != NULL && i < n_list; i++) report(context, &list[i].finding);
  free(list);
  return findings;
}

struct text_context {
  char* out;
  size_t size;
  size_t used;
};

static void append_text(void* context, const struct it_watch_finding* finding) {
  struct text_context* t = (struct text_context*)context;
  if (t->used + 1 >= t->size) return;
  char text[1024];
  it_watch_describe(finding, text, sizeof text);
  int n = snprintf(t->out + t->used, t->size - t->used, "%s%s", t->used ? "; " : "", text);
  if (n > 0) t->used += (size_t)n < t->size - t->used ? (size_t)n : t->size - t->used - 1;
}

int64_t it_watch_verify_text(int group, char* out, size_t size) {
  struct text_context t = {out, size, 0};
  if (size > 0) out[0] = '\0';
  return it_watch_verify(group, append_text, &t);
}

int64_t it_watch_count(int group) {
  int64_t n = 0;
  pthread_mutex_lock(&g_lock);
  for (int64_t i = 0; i < g_count; i++) {
    if (group == 0 || (!g_nodes[i].orphan && g_nodes[i].group == group)) n++;
  }
  pthread_mutex_unlock(&g_lock);
  return n;
}

void it_watch_describe_buffers(int group, const char* prefix, int at_release, char* out,
                               size_t size) {
  size_t used = 0;
  out[0] = '\0';
  pthread_mutex_lock(&g_lock);
  for (int64_t i = 0; i < g_count && used + 1 < size; i++) {
    const struct it_watch_node* n = &g_nodes[i];
    if (n->orphan || n->group != group || n->kind != IT_WATCH_ARRAY ||
        strncmp(n->where, prefix, strlen(prefix)) != 0) {
      continue;
    }
    int64_t count = at_release ? n->n_buffers_at_release : n->n_buffers;
    const void* const* buffers = at_release ? n->buffers_at_release : n->buffers;
    int w = snprintf(out + used, size - used, "%s%s:", used == 0 ? "" : "; ", n->where);
    if (w < 0 || (size_t)w >= size - used) break;
    used += (size_t)w;
    for (int64_t b = 0; b < count && b < IT_WATCH_MAX_BUFFERS; b++) {
      w = buffers[b] == NULL ? snprintf(out + used, size - used, " -")
                             : snprintf(out + used, size - used, " %p", buffers[b]);
      if (w < 0 || (size_t)w >= size - used) break;
      used += (size_t)w;
    }
  }
  pthread_mutex_unlock(&g_lock);
}
