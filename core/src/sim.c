/* The simulated device (ARROW_DEVICE_EXT_DEV, ids 0 .. FERRY_SIM_DEVICE_COUNT-1):
 * a GPU-like device made of host memory, asynchronous streams and events, for
 * testing producers and consumers on machines without a GPU.
 *
 * Memory: every allocation is host memory recorded in an ordered tree (by
 * address) together with its sim device id, so check_pointer answers exactly
 * whether a range lies inside a live allocation of one sim device, and bad
 * frees are errors rather than crashes.
 *
 * Streams: each stream is a FIFO of operations (copies, and waits on another
 * stream's position) executed in order. An event is a position in a stream:
 * recording it on stream S remembers (S, number of ops enqueued on S so far);
 * it has completed once S has executed that many ops. Waits therefore never
 * hold pointers to events or streams that may be destroyed: they name streams
 * by a never-reused id, and a stream that no longer exists has executed
 * everything (destroy drains it).
 *
 * No thread of its own: queued work runs on the thread that needs it done
 * (an event or stream synchronize, another stream's wait that is itself being
 * run, a stream destroy, or a deallocate of memory the work touches), so a
 * process may hold any number of streams and exported batches. Each
 * allocation keeps the list of queued ops that touch it, and each stream its
 * own condition variable (signalled when another thread finishes running one
 * of its ops), so no operation scans every stream or wakes every waiter.
 *
 * Strict mode (default; FERRY_SIM_STRICT=0 turns it off at first use): an
 * asynchronous copy poisons its destination with FERRY_SIM_POISON_BYTE when it
 * is enqueued, and queued work runs only when waited for as above. A consumer
 * that reads without waiting on the sync event therefore reads poison
 * deterministically. Fresh allocations are poisoned too. In non-strict mode
 * work runs eagerly, on the enqueuing thread, as soon as it is queued.
 *
 * The NULL stream is synchronous and unordered: a NULL-stream copy runs on the
 * calling thread at once without waiting for queued work (so a forgotten wait
 * still reads poison), recording an event on it gives an already-complete
 * event, waiting on an event with it blocks the host, and synchronizing it
 * waits for every stream of that sim device (like cuCtxSynchronize).
 *
 * Locking: one mutex guards the allocation tree, the stream and event tables
 * and every queue. Copies themselves run outside the lock. No sleeps. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "internal.h"

#define FERRY_SIM_ALIGNMENT 64
#define FERRY_SIM_STREAM_MAGIC 0x53494d5354524dULL /* "SIMSTRM" */
#define FERRY_SIM_EVENT_MAGIC 0x53494d4556454eULL  /* "SIMEVEN" */

static const ArrowDeviceType kSimDeviceTypes[] = {ARROW_DEVICE_EXT_DEV};

/* ---- global state ---------------------------------------------------------- */

static pthread_mutex_t g_sim_lock = PTHREAD_MUTEX_INITIALIZER;

static pthread_once_t g_strict_once = PTHREAD_ONCE_INIT;
static int g_sim_strict = 1; /* accessed atomically */

struct SimOp;
struct SimStream;

/* One range of sim memory that a queued op reads or writes, linked into the
 * list of its allocation until the op has run. */
struct SimTouch {
  struct SimOp* op;
  struct SimAllocation* allocation;
  uintptr_t start;
  int64_t size;
  int is_read;
  struct SimTouch* prev;
  struct SimTouch* next;
};

/* A node of the allocation tree (a treap ordered by start address). */
struct SimAllocation {
  uintptr_t start;
  int64_t size; /* as requested; the block itself is at least one byte */
  int64_t device_id;
  uint32_t priority;
  int freeing; /* a deallocate is draining it */
  struct SimAllocation* left;
  struct SimAllocation* right;
  struct SimTouch* touching; /* queued ops reading or writing it */
};

enum SimOpKind { SIM_OP_COPY, SIM_OP_WAIT };

struct SimOp {
  enum SimOpKind kind;
  uint64_t seq; /* 1-based position in its stream */
  struct SimStream* stream;
  struct SimOp* next;
  /* SIM_OP_COPY: src is `snapshot` for host-to-device copies. */
  void* dst;
  const void* src;
  int64_t size;
  void* snapshot;
  struct SimTouch touches[2];
  int n_touches;
  /* SIM_OP_WAIT: wait until stream `wait_stream_id` has executed `wait_seq`. */
  uint64_t wait_stream_id;
  uint64_t wait_seq;
};

struct SimStream {
  uint64_t magic;
  uint64_t id;
  int64_t device_id;
  struct SimOp* head;
  struct SimOp* tail;
  uint64_t enqueued; /* seq of the last op enqueued */
  uint64_t executed; /* seq of the last op executed; ops run in order */
  int running;       /* a thread runs the head op outside the lock */
  int users;         /* threads inside run_until_locked on this stream */
  int destroying;
  /* Signalled when an op of this stream finishes or the last user leaves. */
  pthread_cond_t progress;
  /* Streams with queued ops, per device (for NULL-stream synchronize). */
  struct SimStream* busy_prev;
  struct SimStream* busy_next;
  int busy;
};

/* The native event handle; ArrowDeviceArray.sync_event points at `slot`,
 * a heap cell holding this handle's address (as a CUevent* holds a CUevent). */
struct FerrySimEvent {
  uint64_t magic;
  int64_t device_id;
  int recorded;
  uint64_t stream_id; /* 0: recorded on the NULL stream, complete at once */
  uint64_t seq;
  struct FerrySimEvent** slot;
};

/* ---- a hash map from a non-zero 64-bit key to a pointer ---------------------- */

/* Open addressing with linear probing and backward-shift deletion. */
struct SimMap {
  uint64_t* keys;
  void** values;
  int64_t capacity; /* a power of two, or 0 */
  int64_t count;
};

static uint64_t map_slot(uint64_t key, int64_t capacity) {
  return (key * UINT64_C(0x9E3779B97F4A7C15) >> 17) & (uint64_t)(capacity - 1);
}

static void* map_get(const struct SimMap* map, uint64_t key) {
  if (map->capacity == 0) return NULL;
  uint64_t mask = (uint64_t)map->capacity - 1;
  for (uint64_t s = map_slot(key, map->capacity);; s = (s + 1) & mask) {
    if (map->keys[s] == key) return map->values[s];
    if (map->keys[s] == 0) return NULL;
  }
}

static void map_put_fresh(struct SimMap* map, uint64_t key, void* value) {
  uint64_t mask = (uint64_t)map->capacity - 1;
  uint64_t s = map_slot(key, map->capacity);
  while (map->keys[s] != 0) s = (s + 1) & mask;
  map->keys[s] = key;
  map->values[s] = value;
  map->count++;
}

/* Adds `key` (not present yet); ENOMEM when the map cannot grow. */
static int map_put(struct SimMap* map, uint64_t key, void* value) {
  if (2 * (map->count + 1) > map->capacity) {
    struct SimMap grown = {NULL, NULL, map->capacity == 0 ? 64 : 2 * map->capacity, 0};
    grown.keys = (uint64_t*)calloc((size_t)grown.capacity, sizeof(uint64_t));
    grown.values = (void**)calloc((size_t)grown.capacity, sizeof(void*));
    if (grown.keys == NULL || grown.values == NULL) {
      free(grown.keys);
      free(grown.values);
      return ENOMEM;
    }
    for (int64_t i = 0; i < map->capacity; i++) {
      if (map->keys[i] != 0) map_put_fresh(&grown, map->keys[i], map->values[i]);
    }
    free(map->keys);
    free(map->values);
    *map = grown;
  }
  map_put_fresh(map, key, value);
  return FERRY_OK;
}

static void map_remove(struct SimMap* map, uint64_t key) {
  if (map->capacity == 0) return;
  uint64_t mask = (uint64_t)map->capacity - 1;
  uint64_t s = map_slot(key, map->capacity);
  while (map->keys[s] != key) {
    if (map->keys[s] == 0) return;
    s = (s + 1) & mask;
  }
  /* Shift back the entries of the probe run behind the hole. */
  uint64_t hole = s;
  for (uint64_t next = (hole + 1) & mask; map->keys[next] != 0; next = (next + 1) & mask) {
    uint64_t home = map_slot(map->keys[next], map->capacity);
    /* The entry may move into the hole when its home is not in (hole, next]. */
    int between = hole <= next ? (home > hole && home <= next) : (home > hole || home <= next);
    if (!between) {
      map->keys[hole] = map->keys[next];
      map->values[hole] = map->values[next];
      hole = next;
    }
  }
  map->keys[hole] = 0;
  map->values[hole] = NULL;
  map->count--;
}

/* Live streams by handle (the struct's address) and by id; live events by
 * the address of their slot (what sync_event points at). */
static struct SimMap g_streams_by_handle;
static struct SimMap g_streams_by_id;
static struct SimMap g_events;

/* Retired event handles: the slots of released exports whose event went back
 * to ferry's pool under a new slot (sim_event_recycle). g_events maps each to
 * &g_retired_event, so that a wait on one is refused with the reason; the
 * slot stays allocated (no later event can get its address) until
 * SIM_RETIRED_MAX newer ones push it out. */
#define SIM_RETIRED_MAX 4096
static struct FerrySimEvent g_retired_event;
static struct FerrySimEvent** g_retired[SIM_RETIRED_MAX];
static int64_t g_retired_count;
static int64_t g_retired_next;
static uint64_t g_next_stream_id = 1;
static struct SimStream* g_busy[FERRY_SIM_DEVICE_COUNT];

/* ---- strict mode ------------------------------------------------------------- */

static void strict_init_from_env(void) {
  const char* value = getenv("FERRY_SIM_STRICT");
  int strict = !(value != NULL && strcmp(value, "0") == 0);
  __atomic_store_n(&g_sim_strict, strict, __ATOMIC_SEQ_CST);
}

static int sim_strict(void) {
  pthread_once(&g_strict_once, strict_init_from_env);
  return __atomic_load_n(&g_sim_strict, __ATOMIC_SEQ_CST);
}

static void run_all_of_device_locked(int64_t device_id);

void ferry_sim_set_strict(int32_t strict) {
  /* Read the environment first so it cannot override this call later. */
  pthread_once(&g_strict_once, strict_init_from_env);
  pthread_mutex_lock(&g_sim_lock);
  __atomic_store_n(&g_sim_strict, strict != 0, __ATOMIC_SEQ_CST);
  if (!strict) {
    /* Leaving strict mode runs everything queued so far. */
    for (int64_t id = 0; id < FERRY_SIM_DEVICE_COUNT; id++) run_all_of_device_locked(id);
  }
  pthread_mutex_unlock(&g_sim_lock);
}

int32_t ferry_sim_is_strict(void) { return sim_strict(); }

int64_t ferry__sim_live_streams(void) {
  pthread_mutex_lock(&g_sim_lock);
  int64_t n = g_streams_by_id.count;
  pthread_mutex_unlock(&g_sim_lock);
  return n;
}

int64_t ferry__sim_live_events(void) {
  pthread_mutex_lock(&g_sim_lock);
  int64_t n = g_events.count - g_retired_count;
  pthread_mutex_unlock(&g_sim_lock);
  return n;
}

/* ---- the allocation tree (callers hold g_sim_lock) ------------------------------ */

static struct SimAllocation* g_allocations;
static uint32_t g_priority_state = 2463534242u;

static uint32_t next_priority(void) {
  /* xorshift32: priorities only need to look random to keep the treap flat. */
  uint32_t x = g_priority_state;
  x ^= x << 13;
  x ^= x >> 17;
  x ^= x << 5;
  g_priority_state = x;
  return x;
}

/* Splits `t` into the allocations starting before `key` and the rest. */
static void tree_split(struct SimAllocation* t, uintptr_t key, struct SimAllocation** less,
                       struct SimAllocation** rest) {
  if (t == NULL) {
    *less = *rest = NULL;
  } else if (t->start < key) {
    tree_split(t->right, key, &t->right, rest);
    *less = t;
  } else {
    tree_split(t->left, key, less, &t->left);
    *rest = t;
  }
}

/* Joins two trees whose keys are all ordered (every key of a < any of b). */
static struct SimAllocation* tree_merge(struct SimAllocation* a, struct SimAllocation* b) {
  if (a == NULL) return b;
  if (b == NULL) return a;
  if (a->priority > b->priority) {
    a->right = tree_merge(a->right, b);
    return a;
  }
  b->left = tree_merge(a, b->left);
  return b;
}

static void tree_insert(struct SimAllocation* node) {
  struct SimAllocation *less, *rest;
  tree_split(g_allocations, node->start, &less, &rest);
  g_allocations = tree_merge(tree_merge(less, node), rest);
}

static void tree_remove(uintptr_t start) {
  struct SimAllocation *less, *rest, *node, *greater;
  tree_split(g_allocations, start, &less, &rest);
  tree_split(rest, start + 1, &node, &greater);
  g_allocations = tree_merge(less, greater);
}

/* The allocation starting last at or before `address`, or NULL. */
static struct SimAllocation* allocation_at_or_before(uintptr_t address) {
  struct SimAllocation* found = NULL;
  for (struct SimAllocation* t = g_allocations; t != NULL;) {
    if (t->start <= address) {
      found = t;
      t = t->right;
    } else {
      t = t->left;
    }
  }
  return found;
}

/* The allocation holding [address, address + size), or NULL. A zero-size
 * range may sit one past the end of an allocation (a slice at its end). */
static struct SimAllocation* allocation_holding(uintptr_t address, int64_t size) {
  struct SimAllocation* a = allocation_at_or_before(address);
  if (a == NULL) return NULL;
  uintptr_t end = a->start + (uintptr_t)a->size;
  int inside = address < end || (size == 0 && address == end);
  if (!inside || (uint64_t)size > (uint64_t)(end - address)) return NULL;
  return a;
}

/* FERRY_OK when [ptr, ptr + size) lies in a live allocation of sim device
 * `device_id`, else EFAULT saying why. */
static int check_range_locked(int64_t device_id, const void* ptr, int64_t size,
                              struct FerryError* error) {
  uintptr_t address = (uintptr_t)ptr;
  const struct SimAllocation* a = allocation_at_or_before(address);
  if (a != NULL) {
    uintptr_t end = a->start + (uintptr_t)a->size;
    int inside = address < end || (size == 0 && address == end);
    if (inside) {
      if (a->device_id != device_id) {
        return ferry__set_error(error, EFAULT,
                               "pointer %p is not sim device %" PRId64
                               " memory (it is sim device %" PRId64 " memory)",
                               ptr, device_id, a->device_id);
      }
      if ((uint64_t)size > (uint64_t)(end - address)) {
        return ferry__set_error(error, EFAULT,
                               "range [%p, +%" PRId64 ") runs past the end of a %" PRId64
                               "-byte allocation of sim device %" PRId64 " at %p",
                               ptr, size, a->size, device_id, (void*)a->start);
      }
      return FERRY_OK;
    }
  }
  return ferry__set_error(error, EFAULT, "pointer %p is not sim device %" PRId64 " memory",
                         ptr, device_id);
}

/* ---- queues (callers hold g_sim_lock) -------------------------------------------- */

/* The live stream behind a caller's handle, checked to belong to `device_id`.
 * A stream being destroyed is refused too: work queued on it now would
 * outlive it. */
static int find_stream_locked(void* handle, int64_t device_id, struct SimStream** out,
                              struct FerryError* error) {
  struct SimStream* s =
      (struct SimStream*)map_get(&g_streams_by_handle, (uint64_t)(uintptr_t)handle);
  if (s == NULL) {
    return ferry__set_error(error, EINVAL,
                           "stream %p is not a live sim stream (destroyed, or not a sim "
                           "stream)",
                           handle);
  }
  if (s->device_id != device_id) {
    return ferry__set_error(error, EINVAL,
                           "stream %p belongs to sim device %" PRId64
                           ", not sim device %" PRId64,
                           handle, s->device_id, device_id);
  }
  if (s->destroying) {
    return ferry__set_error(error, EINVAL, "stream %p is being destroyed", handle);
  }
  *out = s;
  return FERRY_OK;
}

/* The live event whose handle `sync_event` points at (any sim device). */
static int find_event_locked(void* sync_event, struct FerrySimEvent** out,
                             struct FerryError* error) {
  struct FerrySimEvent* e =
      (struct FerrySimEvent*)map_get(&g_events, (uint64_t)(uintptr_t)sync_event);
  if (e == NULL) {
    return ferry__set_error(error, EINVAL,
                           "sync_event %p is not a live sim event (destroyed, or not a "
                           "pointer to a sim event handle)",
                           sync_event);
  }
  if (e == &g_retired_event) {
    return ferry__set_error(error, EINVAL,
                           "sync_event %p is no longer valid: the array that carried it was "
                           "released (a consumer must queue its wait before it releases "
                           "the array; docs/events.md, lifetime rule)",
                           sync_event);
  }
  *out = e;
  return FERRY_OK;
}

/* find_event_locked, for operations that must name the event's own device. */
static int find_device_event_locked(void* sync_event, int64_t device_id,
                                    struct FerrySimEvent** out,
                                    struct FerryError* error) {
  FERRY_RETURN_NOT_OK(find_event_locked(sync_event, out, error));
  if ((*out)->device_id != device_id) {
    return ferry__set_error(error, EINVAL,
                           "sync_event %p belongs to sim device %" PRId64
                           ", not sim device %" PRId64,
                           sync_event, (*out)->device_id, device_id);
  }
  return FERRY_OK;
}

static void busy_add(struct SimStream* s) {
  if (s->busy) return;
  struct SimStream** head = &g_busy[s->device_id];
  s->busy_prev = NULL;
  s->busy_next = *head;
  if (*head != NULL) (*head)->busy_prev = s;
  *head = s;
  s->busy = 1;
}

static void busy_remove(struct SimStream* s) {
  if (!s->busy) return;
  if (s->busy_prev != NULL) {
    s->busy_prev->busy_next = s->busy_next;
  } else {
    g_busy[s->device_id] = s->busy_next;
  }
  if (s->busy_next != NULL) s->busy_next->busy_prev = s->busy_prev;
  s->busy = 0;
}

static void touch_unlink(struct SimTouch* t) {
  if (t->prev != NULL) {
    t->prev->next = t->next;
  } else {
    t->allocation->touching = t->next;
  }
  if (t->next != NULL) t->next->prev = t->prev;
}

/* Records that `op` reads (or writes) [start, start + size) when that range is
 * sim memory, so freeing the memory first runs the op. */
static void touch_link(struct SimOp* op, const void* start, int64_t size, int is_read) {
  struct SimAllocation* a = allocation_holding((uintptr_t)start, size);
  if (a == NULL || size == 0) return;
  struct SimTouch* t = &op->touches[op->n_touches++];
  t->op = op;
  t->allocation = a;
  t->start = (uintptr_t)start;
  t->size = size;
  t->is_read = is_read;
  t->prev = NULL;
  t->next = a->touching;
  if (a->touching != NULL) a->touching->prev = t;
  a->touching = t;
}

/* Removes the executed head op of `s`. */
static void pop_head_locked(struct SimStream* s) {
  struct SimOp* op = s->head;
  s->head = op->next;
  if (s->head == NULL) {
    s->tail = NULL;
    busy_remove(s);
  }
  s->executed = op->seq;
  for (int k = 0; k < op->n_touches; k++) touch_unlink(&op->touches[k]);
  free(op->snapshot);
  free(op);
  pthread_cond_broadcast(&s->progress);
}

/* Runs the ops of `s` up to position `seq` on this thread; returns once
 * they have all run (some may have been run by other threads meanwhile).
 * A wait op first runs what it waits for: positions are always recorded
 * before the wait that names them, so this never goes round in a circle. */
static void run_until_locked(struct SimStream* s, uint64_t seq) {
  s->users++;
  while (s->executed < seq) {
    if (s->running) {
      /* Another thread runs the head op: its end is signalled here. */
      pthread_cond_wait(&s->progress, &g_sim_lock);
      continue;
    }
    struct SimOp* op = s->head;
    if (op->kind == SIM_OP_WAIT) {
      struct SimStream* target =
          (struct SimStream*)map_get(&g_streams_by_id, op->wait_stream_id);
      if (target != NULL && target->executed < op->wait_seq) {
        run_until_locked(target, op->wait_seq);
        continue; /* the lock was released: look at the head again */
      }
    } else {
      /* The op stays at the head while it runs, so others wait for it. */
      s->running = 1;
      pthread_mutex_unlock(&g_sim_lock);
      memmove(op->dst, op->src, (size_t)op->size);
      pthread_mutex_lock(&g_sim_lock);
      s->running = 0;
    }
    pop_head_locked(s);
  }
  if (--s->users == 0 && s->destroying) pthread_cond_broadcast(&s->progress);
}

/* Blocks until stream `stream_id` has executed op `seq`, running it. */
static void wait_position_locked(uint64_t stream_id, uint64_t seq) {
  struct SimStream* s = (struct SimStream*)map_get(&g_streams_by_id, stream_id);
  if (s != NULL && s->executed < seq) run_until_locked(s, seq);
}

/* Runs everything queued on the streams of sim device `device_id`. */
static void run_all_of_device_locked(int64_t device_id) {
  /* Each pass drains the first busy stream, which then leaves the list. */
  while (g_busy[device_id] != NULL) {
    struct SimStream* s = g_busy[device_id];
    run_until_locked(s, s->enqueued);
  }
}

static int ranges_overlap(uintptr_t a, int64_t a_size, uintptr_t b, int64_t b_size) {
  return a < b + (uintptr_t)b_size && b < a + (uintptr_t)a_size;
}

/* 1 when a queued op that has not run yet reads memory in
 * [address, address + size). */
static int pending_read_overlaps_locked(uintptr_t address, int64_t size) {
  const struct SimAllocation* a = allocation_at_or_before(address);
  if (a == NULL) return 0;
  for (const struct SimTouch* t = a->touching; t != NULL; t = t->next) {
    if (t->is_read && ranges_overlap(t->start, t->size, address, size)) {
      return 1;
    }
  }
  return 0;
}

/* Appends `op` to `s`; the caller holds the lock. In non-strict mode the op
 * runs at once. */
static void enqueue_locked(struct SimStream* s, struct SimOp* op) {
  op->seq = ++s->enqueued;
  op->stream = s;
  op->next = NULL;
  if (s->tail == NULL) {
    s->head = op;
  } else {
    s->tail->next = op;
  }
  s->tail = op;
  busy_add(s);
  if (!sim_strict()) run_until_locked(s, op->seq);
}

/* ---- the backend ------------------------------------------------------------------- */

static int sim_probe(struct FerryError* error) {
  sim_strict(); /* read FERRY_SIM_STRICT now, at first use */
  return FERRY_OK;
}

static int sim_device_count(ArrowDeviceType device_type, int64_t* count,
                            struct FerryError* error) {
  *count = FERRY_SIM_DEVICE_COUNT;
  return FERRY_OK;
}

/* Sim memory is host memory; strict mode makes premature reads visible. */
static int sim_is_host_accessible(ArrowDeviceType device_type) { return 1; }

static int sim_allocate(struct FerryDevice* device, int64_t size, void** out,
                        struct FerryError* error) {
  /* The same limit as the CPU backend's (sizes that round beyond int64). */
  if (ferry__aligned_alloc_size(size, FERRY_SIM_ALIGNMENT) == 0) {
    return ferry__set_error(error, ENOMEM,
                           "cannot allocate %" PRId64 " bytes on sim device %" PRId64
                           " (too large)",
                           size, device->device_id);
  }
  /* Exactly `size` bytes (one for 0), not the rounded size: a sanitizer then
   * sees any read past the allocation, as a GPU's memory checker would. */
  void* ptr = NULL;
  if (posix_memalign(&ptr, FERRY_SIM_ALIGNMENT, size == 0 ? 1 : (size_t)size) != 0) {
    ptr = NULL;
  }
  struct SimAllocation* node = (struct SimAllocation*)calloc(1, sizeof *node);
  if (ptr == NULL || node == NULL) {
    free(ptr);
    free(node);
    return ferry__set_error(error, ENOMEM,
                           "out of memory allocating %" PRId64
                           " bytes on sim device %" PRId64,
                           size, device->device_id);
  }
  /* Fresh device memory holds garbage; strict mode makes that visible. */
  if (sim_strict()) memset(ptr, FERRY_SIM_POISON_BYTE, size == 0 ? 1 : (size_t)size);
  node->start = (uintptr_t)ptr;
  node->size = size;
  node->device_id = device->device_id;
  pthread_mutex_lock(&g_sim_lock);
  node->priority = next_priority();
  tree_insert(node);
  pthread_mutex_unlock(&g_sim_lock);
  *out = ptr;
  return FERRY_OK;
}

static int sim_deallocate(struct FerryDevice* device, void* ptr,
                          struct FerryError* error) {
  pthread_mutex_lock(&g_sim_lock);
  struct SimAllocation* a = allocation_at_or_before((uintptr_t)ptr);
  if (a == NULL || a->start != (uintptr_t)ptr) {
    int code =
        ferry__set_error(error, EINVAL,
                        "pointer %p is not a live allocation of sim device %" PRId64
                        " (freed twice, never allocated there, or not the start of "
                        "an allocation)",
                        ptr, device->device_id);
    pthread_mutex_unlock(&g_sim_lock);
    return code;
  }
  if (a->device_id != device->device_id) {
    int code = ferry__set_error(error, EINVAL,
                               "pointer %p belongs to sim device %" PRId64
                               ", not sim device %" PRId64,
                               ptr, a->device_id, device->device_id);
    pthread_mutex_unlock(&g_sim_lock);
    return code;
  }
  if (a->freeing) {
    int code = ferry__set_error(
        error, EINVAL, "pointer %p was freed by another thread at the same time", ptr);
    pthread_mutex_unlock(&g_sim_lock);
    return code;
  }
  /* Like cudaFree's implicit synchronization: queued work touching the
   * memory runs first. Nothing new can be queued on it meanwhile that a
   * correct program would not have to order before this free anyway. */
  a->freeing = 1;
  while (a->touching != NULL) {
    struct SimOp* op = a->touching->op;
    run_until_locked(op->stream, op->seq);
  }
  tree_remove(a->start);
  pthread_mutex_unlock(&g_sim_lock);
  free(a);
  free(ptr);
  return FERRY_OK;
}

static int sim_memcpy(struct FerryDevice* device, void* dst,
                      struct FerryDevice* src_device, const void* src, int64_t size,
                      enum FerryCopyKind kind, void* stream, struct FerryError* error) {
  pthread_mutex_lock(&g_sim_lock);
  int code = FERRY_OK;
  if (kind == FERRY_COPY_HOST_TO_DEVICE || kind == FERRY_COPY_DEVICE_TO_DEVICE) {
    code = check_range_locked(device->device_id, dst, size, error);
  }
  if (code == FERRY_OK && kind != FERRY_COPY_HOST_TO_DEVICE) {
    code = check_range_locked(src_device->device_id, src, size, error);
  }
  struct SimStream* s = NULL;
  if (code == FERRY_OK && stream != NULL) {
    code = find_stream_locked(stream, device->device_id, &s, error);
  }
  if (code != FERRY_OK || s == NULL) {
    pthread_mutex_unlock(&g_sim_lock);
    /* The NULL stream: synchronous, at once. */
    if (code == FERRY_OK) memmove(dst, src, (size_t)size);
    return code;
  }

  struct SimOp* op = (struct SimOp*)calloc(1, sizeof(struct SimOp));
  void* snapshot = NULL;
  if (op != NULL && kind == FERRY_COPY_HOST_TO_DEVICE) {
    /* Like a pageable-memory cuMemcpyHtoDAsync, the host source is captured
     * now, so the caller may reuse it as soon as this returns. */
    snapshot = malloc((size_t)size);
    if (snapshot != NULL) memcpy(snapshot, src, (size_t)size);
  }
  if (op == NULL || (kind == FERRY_COPY_HOST_TO_DEVICE && snapshot == NULL)) {
    pthread_mutex_unlock(&g_sim_lock);
    free(op);
    return ferry__set_error(error, ENOMEM, "out of memory queueing a sim copy");
  }
  op->kind = SIM_OP_COPY;
  op->dst = dst;
  op->src = snapshot != NULL ? snapshot : src;
  op->size = size;
  op->snapshot = snapshot;
  if (sim_strict()) {
    /* Poison what this op will write, so reading it before waiting shows.
     * Skipped when queued work (or this copy itself) still has to read the
     * old contents: poisoning them would break correct stream order. */
    int self_overlap =
        snapshot == NULL && ranges_overlap((uintptr_t)src, size, (uintptr_t)dst, size);
    if (!self_overlap && !pending_read_overlaps_locked((uintptr_t)dst, size)) {
      memset(dst, FERRY_SIM_POISON_BYTE, (size_t)size);
    }
  }
  touch_link(op, dst, size, 0);
  if (snapshot == NULL) touch_link(op, src, size, 1);
  enqueue_locked(s, op);
  pthread_mutex_unlock(&g_sim_lock);
  return FERRY_OK;
}

static int sim_stream_create(struct FerryDevice* device, void** stream_out,
                             struct FerryError* error) {
  struct SimStream* s = (struct SimStream*)calloc(1, sizeof(struct SimStream));
  if (s == NULL || pthread_cond_init(&s->progress, NULL) != 0) {
    free(s);
    return ferry__set_error(error, ENOMEM, "out of memory creating a sim stream");
  }
  s->magic = FERRY_SIM_STREAM_MAGIC;
  s->device_id = device->device_id;
  pthread_mutex_lock(&g_sim_lock);
  s->id = g_next_stream_id++;
  int code = map_put(&g_streams_by_handle, (uint64_t)(uintptr_t)s, s);
  if (code == FERRY_OK) {
    code = map_put(&g_streams_by_id, s->id, s);
    if (code != FERRY_OK) map_remove(&g_streams_by_handle, (uint64_t)(uintptr_t)s);
  }
  pthread_mutex_unlock(&g_sim_lock);
  if (code != FERRY_OK) {
    pthread_cond_destroy(&s->progress);
    free(s);
    return ferry__set_error(error, ENOMEM, "out of memory creating a sim stream");
  }
  *stream_out = s;
  return FERRY_OK;
}

/* Runs what is queued, waits for other threads to leave the stream, frees. */
static int sim_stream_destroy(struct FerryDevice* device, void* stream,
                              struct FerryError* error) {
  pthread_mutex_lock(&g_sim_lock);
  struct SimStream* s = NULL;
  int code = find_stream_locked(stream, device->device_id, &s, error);
  if (code != FERRY_OK) {
    pthread_mutex_unlock(&g_sim_lock);
    return code;
  }
  s->destroying = 1;
  run_until_locked(s, s->enqueued);
  while (s->users > 0) pthread_cond_wait(&s->progress, &g_sim_lock);
  /* Only now leave the tables: until here, waits on this stream's positions
   * had to see its real progress. */
  map_remove(&g_streams_by_handle, (uint64_t)(uintptr_t)s);
  map_remove(&g_streams_by_id, s->id);
  pthread_mutex_unlock(&g_sim_lock);
  pthread_cond_destroy(&s->progress);
  s->magic = 0;
  free(s);
  return FERRY_OK;
}

static int sim_stream_synchronize(struct FerryDevice* device, void* stream,
                                  struct FerryError* error) {
  pthread_mutex_lock(&g_sim_lock);
  int code = FERRY_OK;
  if (stream != NULL) {
    struct SimStream* s = NULL;
    code = find_stream_locked(stream, device->device_id, &s, error);
    if (code == FERRY_OK) run_until_locked(s, s->enqueued);
  } else {
    /* The NULL stream: wait for every stream of this device. */
    run_all_of_device_locked(device->device_id);
  }
  pthread_mutex_unlock(&g_sim_lock);
  return code;
}

static int sim_event_create(struct FerryDevice* device, void** sync_event_out,
                            struct FerryError* error) {
  struct FerrySimEvent* event = (struct FerrySimEvent*)calloc(1, sizeof(*event));
  struct FerrySimEvent** slot = (struct FerrySimEvent**)malloc(sizeof(*slot));
  if (event == NULL || slot == NULL) {
    free(event);
    free(slot);
    return ferry__set_error(error, ENOMEM, "out of memory creating a sim event");
  }
  event->magic = FERRY_SIM_EVENT_MAGIC;
  event->device_id = device->device_id;
  event->slot = slot;
  *slot = event;
  pthread_mutex_lock(&g_sim_lock);
  int code = map_put(&g_events, (uint64_t)(uintptr_t)slot, event);
  pthread_mutex_unlock(&g_sim_lock);
  if (code != FERRY_OK) {
    free(event);
    free(slot);
    return ferry__set_error(error, ENOMEM, "out of memory creating a sim event");
  }
  *sync_event_out = slot;
  return FERRY_OK;
}

/* Safe while the event is pending: waits name stream positions, not events. */
static int sim_event_destroy(struct FerryDevice* device, void* sync_event,
                             struct FerryError* error) {
  pthread_mutex_lock(&g_sim_lock);
  struct FerrySimEvent* event = NULL;
  int code = find_device_event_locked(sync_event, device->device_id, &event, error);
  if (code == FERRY_OK) map_remove(&g_events, (uint64_t)(uintptr_t)sync_event);
  pthread_mutex_unlock(&g_sim_lock);
  if (code == FERRY_OK) {
    event->magic = 0;
    free(event->slot);
    free(event);
  }
  return code;
}

/* The event of a released export goes back to ferry's pool: it moves to a
 * new slot, and the old one (the handle the consumer saw) is retired. */
static int sim_event_recycle(struct FerryDevice* device, void** sync_event,
                             struct FerryError* error) {
  struct FerrySimEvent** fresh = (struct FerrySimEvent**)malloc(sizeof(*fresh));
  if (fresh == NULL) return ferry__set_error(error, ENOMEM, "out of memory recycling an event");
  pthread_mutex_lock(&g_sim_lock);
  struct FerrySimEvent* event = NULL;
  struct FerrySimEvent** old = (struct FerrySimEvent**)*sync_event;
  int code = find_device_event_locked(old, device->device_id, &event, error);
  /* The new slot first: on failure nothing changed. */
  if (code == FERRY_OK && map_put(&g_events, (uint64_t)(uintptr_t)fresh, event) != FERRY_OK) {
    code = ferry__set_error(error, ENOMEM, "out of memory recycling an event");
  }
  if (code != FERRY_OK) {
    pthread_mutex_unlock(&g_sim_lock);
    free(fresh);
    return code;
  }
  *fresh = event;
  event->slot = fresh;
  map_remove(&g_events, (uint64_t)(uintptr_t)old);
  struct FerrySimEvent** evicted = NULL;
  if (map_put(&g_events, (uint64_t)(uintptr_t)old, &g_retired_event) != FERRY_OK) {
    evicted = old; /* no room to remember it: the handle is just gone */
  } else {
    if (g_retired_count == SIM_RETIRED_MAX) {
      evicted = g_retired[g_retired_next];
      map_remove(&g_events, (uint64_t)(uintptr_t)evicted);
    } else {
      g_retired_count++;
    }
    g_retired[g_retired_next] = old;
    g_retired_next = (g_retired_next + 1) % SIM_RETIRED_MAX;
  }
  pthread_mutex_unlock(&g_sim_lock);
  free(evicted);
  *sync_event = fresh;
  return FERRY_OK;
}

static int sim_event_record(struct FerryDevice* device, void* sync_event, void* stream,
                            struct FerryError* error) {
  pthread_mutex_lock(&g_sim_lock);
  struct FerrySimEvent* event = NULL;
  int code = find_device_event_locked(sync_event, device->device_id, &event, error);
  struct SimStream* s = NULL;
  if (code == FERRY_OK && stream != NULL) {
    code = find_stream_locked(stream, device->device_id, &s, error);
  }
  if (code == FERRY_OK) {
    event->recorded = 1;
    event->stream_id = s == NULL ? 0 : s->id;
    event->seq = s == NULL ? 0 : s->enqueued;
  }
  pthread_mutex_unlock(&g_sim_lock);
  return code;
}

/* Any sim device's event may be waited on (as with CUDA peers). */
static int sim_event_synchronize(struct FerryDevice* device, void* sync_event,
                                 struct FerryError* error) {
  pthread_mutex_lock(&g_sim_lock);
  struct FerrySimEvent* event = NULL;
  int code = find_event_locked(sync_event, &event, error);
  if (code == FERRY_OK && event->recorded) {
    /* Copy the position: the event may be destroyed while we wait. */
    wait_position_locked(event->stream_id, event->seq);
  }
  pthread_mutex_unlock(&g_sim_lock);
  return code;
}

static int sim_stream_wait_event(struct FerryDevice* device, void* stream,
                                 void* sync_event, struct FerryError* error) {
  if (stream == NULL) return sim_event_synchronize(device, sync_event, error);
  pthread_mutex_lock(&g_sim_lock);
  struct FerrySimEvent* event = NULL;
  struct SimStream* s = NULL;
  int code = find_event_locked(sync_event, &event, error);
  if (code == FERRY_OK) code = find_stream_locked(stream, device->device_id, &s, error);
  /* Nothing to wait for: never recorded, already complete, or recorded on
   * this same stream (whose order already implies it). */
  struct SimStream* target =
      code == FERRY_OK && event->recorded && event->stream_id != s->id
          ? (struct SimStream*)map_get(&g_streams_by_id, event->stream_id)
          : NULL;
  if (target != NULL && target->executed < event->seq) {
    struct SimOp* op = (struct SimOp*)calloc(1, sizeof(struct SimOp));
    if (op == NULL) {
      code = ferry__set_error(error, ENOMEM, "out of memory queueing a sim wait");
    } else {
      op->kind = SIM_OP_WAIT;
      op->wait_stream_id = event->stream_id;
      op->wait_seq = event->seq;
      enqueue_locked(s, op);
    }
  }
  pthread_mutex_unlock(&g_sim_lock);
  return code;
}

/* The sim shares ARROW_DEVICE_EXT_DEV with every other "extension" device,
 * so an EXT_DEV pointer that no sim allocation holds is some other
 * producer's device memory, not a lie about sim memory: it is unknown
 * (ENOTSUP, as a backend that cannot tell answers), and only memory the sim
 * allocated gets the strict answers (EFAULT for another sim device's memory
 * or a range running past the allocation). */
static int sim_check_pointer(struct FerryDevice* device, const void* ptr, int64_t size,
                             struct FerryError* error) {
  pthread_mutex_lock(&g_sim_lock);
  uintptr_t address = (uintptr_t)ptr;
  const struct SimAllocation* a = allocation_at_or_before(address);
  int code;
  /* A range starting at the end of an allocation is a slice of it (valid
   * when empty, running past the end otherwise), so it is the sim's. */
  if (a == NULL || address > a->start + (uintptr_t)a->size) {
    code = ferry__set_error(error, ENOTSUP,
                           "pointer %p is not memory the sim allocated (ext_dev memory of "
                           "another producer: its residency cannot be checked)",
                           ptr);
  } else {
    code = check_range_locked(device->device_id, ptr, size, error);
  }
  pthread_mutex_unlock(&g_sim_lock);
  return code;
}

const struct FerryBackend ferry__backend_sim = {
    FERRY_BACKEND_IDENTITY("sim", kSimDeviceTypes, sim, NULL),
    .allocate = sim_allocate,
    .deallocate = sim_deallocate,
    .memcpy = sim_memcpy,
    .stream_create = sim_stream_create,
    .stream_destroy = sim_stream_destroy,
    .stream_synchronize = sim_stream_synchronize,
    .event_create = sim_event_create,
    .event_destroy = sim_event_destroy,
    .event_record = sim_event_record,
    .event_synchronize = sim_event_synchronize,
    .stream_wait_event = sim_stream_wait_event,
    .event_recycle = sim_event_recycle,
    .check_pointer = sim_check_pointer,
};
