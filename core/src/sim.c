/* The simulated device (ARROW_DEVICE_EXT_DEV, ids 0 .. FERRY_SIM_DEVICE_COUNT-1):
 * a GPU-like device made of host memory, asynchronous streams and events, for
 * testing producers and consumers on machines without a GPU.
 *
 * Memory: every allocation is host memory recorded in a table (sorted by
 * address) together with its sim device id, so check_pointer answers exactly
 * whether a range lies inside a live allocation of one sim device, and bad
 * frees are errors rather than crashes.
 *
 * Streams: each stream is a FIFO of operations (copies and waits on another
 * stream's position) executed in order by the stream's own worker thread.
 * An event is a position in a stream: recording it on stream S remembers
 * (S, number of ops enqueued on S so far); it has completed once S has
 * executed that many ops. Waits therefore never hold pointers to events or
 * streams that may be destroyed: they name streams by a never-reused id, and
 * a stream that no longer exists has executed everything (destroy drains it).
 *
 * Strict mode (default; FERRY_SIM_STRICT=0 turns it off at first use): an
 * asynchronous copy poisons its destination with FERRY_SIM_POISON_BYTE when it
 * is enqueued, and a stream's worker executes an op only when something
 * demands it: an event synchronize, a stream synchronize, another stream's
 * wait (itself demanded), a stream destroy, or a deallocate of memory the op
 * touches. A consumer that reads without waiting on the sync event therefore
 * reads poison deterministically. Fresh allocations are poisoned too. In
 * non-strict mode the workers execute eagerly, like real hardware.
 *
 * The NULL stream is synchronous and unordered: a NULL-stream copy runs on the
 * calling thread at once without waiting for queued work (so a forgotten wait
 * still reads poison), recording an event on it gives an already-complete
 * event, waiting on an event with it blocks the host, and synchronizing it
 * waits for every stream of that sim device (like cuCtxSynchronize).
 *
 * Locking: one mutex guards the allocation table, every stream queue and every
 * event, with one condition variable broadcast on every change of progress or
 * demand. Copies themselves run outside the lock. No sleeps anywhere. */
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
/* Broadcast whenever an op completes, demand rises, work is enqueued or a
 * stream is asked to shut down. Every waiter re-checks its own condition. */
static pthread_cond_t g_sim_progress = PTHREAD_COND_INITIALIZER;

static pthread_once_t g_strict_once = PTHREAD_ONCE_INIT;
static int g_sim_strict = 1; /* accessed atomically */

struct SimAllocation {
  uintptr_t start;
  int64_t size; /* as requested; the block itself is at least one byte */
  int64_t device_id;
};

/* Sorted by start; guarded by g_sim_lock. */
static struct SimAllocation* g_allocations;
static int64_t g_n_allocations;
static int64_t g_allocation_capacity;

enum SimOpKind { SIM_OP_COPY, SIM_OP_WAIT };

struct SimOp {
  enum SimOpKind kind;
  uint64_t seq; /* 1-based position in its stream */
  struct SimOp* next;
  /* SIM_OP_COPY: src is `snapshot` for host-to-device copies. */
  void* dst;
  const void* src;
  int64_t size;
  void* snapshot;
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
  uint64_t demand;   /* the worker may execute ops with seq <= demand */
  int shutdown;
  pthread_t worker;
  struct SimStream* next;
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
  struct FerrySimEvent* next;
};

static struct SimStream* g_streams;
static uint64_t g_next_stream_id = 1;
static struct FerrySimEvent* g_events;
static int64_t g_n_streams;
static int64_t g_n_events;

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

void ferry_sim_set_strict(int32_t strict) {
  /* Read the environment first so it cannot override this call later. */
  pthread_once(&g_strict_once, strict_init_from_env);
  pthread_mutex_lock(&g_sim_lock);
  __atomic_store_n(&g_sim_strict, strict != 0, __ATOMIC_SEQ_CST);
  if (!strict) {
    /* Leaving strict mode releases everything queued so far. */
    for (struct SimStream* s = g_streams; s != NULL; s = s->next) s->demand = s->enqueued;
    pthread_cond_broadcast(&g_sim_progress);
  }
  pthread_mutex_unlock(&g_sim_lock);
}

int32_t ferry_sim_is_strict(void) { return sim_strict(); }

int64_t ferry__sim_live_streams(void) {
  pthread_mutex_lock(&g_sim_lock);
  int64_t n = g_n_streams;
  pthread_mutex_unlock(&g_sim_lock);
  return n;
}

int64_t ferry__sim_live_events(void) {
  pthread_mutex_lock(&g_sim_lock);
  int64_t n = g_n_events;
  pthread_mutex_unlock(&g_sim_lock);
  return n;
}

/* ---- the allocation table (callers hold g_sim_lock) ---------------------------- */

/* Index of the last allocation starting at or before `address`, or -1. */
static int64_t allocation_at_or_before(uintptr_t address) {
  int64_t lo = 0, hi = g_n_allocations - 1, found = -1;
  while (lo <= hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (g_allocations[mid].start <= address) {
      found = mid;
      lo = mid + 1;
    } else {
      hi = mid - 1;
    }
  }
  return found;
}

/* FERRY_OK when [ptr, ptr + size) lies in a live allocation of sim device
 * `device_id`, else EFAULT saying why. */
static int check_range_locked(int64_t device_id, const void* ptr, int64_t size,
                              struct FerryError* error) {
  uintptr_t address = (uintptr_t)ptr;
  int64_t i = allocation_at_or_before(address);
  if (i >= 0) {
    const struct SimAllocation* a = &g_allocations[i];
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

static int insert_allocation_locked(uintptr_t start, int64_t size, int64_t device_id) {
  if (g_n_allocations == g_allocation_capacity) {
    int64_t capacity = g_allocation_capacity == 0 ? 64 : g_allocation_capacity * 2;
    struct SimAllocation* grown = (struct SimAllocation*)realloc(
        g_allocations, (size_t)capacity * sizeof(struct SimAllocation));
    if (grown == NULL) return ENOMEM;
    g_allocations = grown;
    g_allocation_capacity = capacity;
  }
  int64_t at = allocation_at_or_before(start) + 1;
  memmove(&g_allocations[at + 1], &g_allocations[at],
          (size_t)(g_n_allocations - at) * sizeof(struct SimAllocation));
  g_allocations[at] = (struct SimAllocation){start, size, device_id};
  g_n_allocations++;
  return FERRY_OK;
}

/* ---- streams and events lookup (callers hold g_sim_lock) ------------------------ */

static struct SimStream* find_stream_by_id(uint64_t id) {
  for (struct SimStream* s = g_streams; s != NULL; s = s->next) {
    if (s->id == id) return s;
  }
  return NULL;
}

/* The live stream behind a caller's handle, checked to belong to `device_id`.
 * A stream being destroyed is refused too: its worker may have exited, so
 * work queued on it now would never run. */
static int find_stream_locked(void* handle, int64_t device_id, struct SimStream** out,
                              struct FerryError* error) {
  for (struct SimStream* s = g_streams; s != NULL; s = s->next) {
    if ((void*)s == handle) {
      if (s->device_id != device_id) {
        return ferry__set_error(error, EINVAL,
                               "stream %p belongs to sim device %" PRId64
                               ", not sim device %" PRId64,
                               handle, s->device_id, device_id);
      }
      if (s->shutdown) {
        return ferry__set_error(error, EINVAL, "stream %p is being destroyed", handle);
      }
      *out = s;
      return FERRY_OK;
    }
  }
  return ferry__set_error(error, EINVAL,
                         "stream %p is not a live sim stream (destroyed, or not a sim "
                         "stream)",
                         handle);
}

/* The live event whose handle `sync_event` points at (any sim device). */
static int find_event_locked(void* sync_event, struct FerrySimEvent** out,
                             struct FerryError* error) {
  for (struct FerrySimEvent* e = g_events; e != NULL; e = e->next) {
    if ((void*)e->slot == sync_event) {
      *out = e;
      return FERRY_OK;
    }
  }
  return ferry__set_error(error, EINVAL,
                         "sync_event %p is not a live sim event (destroyed, or not a "
                         "pointer to a sim event handle)",
                         sync_event);
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

/* 1 when stream `stream_id` has executed its op `seq` (a stream that no
 * longer exists was drained when it was destroyed). */
static int position_done_locked(uint64_t stream_id, uint64_t seq) {
  struct SimStream* s = find_stream_by_id(stream_id);
  return s == NULL || s->executed >= seq;
}

/* Blocks until stream `stream_id` has executed op `seq`, demanding it. */
static void wait_position_locked(uint64_t stream_id, uint64_t seq) {
  for (;;) {
    struct SimStream* s = find_stream_by_id(stream_id);
    if (s == NULL || s->executed >= seq) return;
    if (s->demand < seq) {
      s->demand = seq;
      pthread_cond_broadcast(&g_sim_progress);
    }
    pthread_cond_wait(&g_sim_progress, &g_sim_lock);
  }
}

static int ranges_overlap(uintptr_t a, int64_t a_size, uintptr_t b, int64_t b_size) {
  return a < b + (uintptr_t)b_size && b < a + (uintptr_t)a_size;
}

/* 1 when a queued op that has not executed yet reads from (or, for a wait,
 * could depend on) memory in [address, address + size). */
static int pending_read_overlaps_locked(uintptr_t address, int64_t size) {
  for (struct SimStream* s = g_streams; s != NULL; s = s->next) {
    for (struct SimOp* op = s->head; op != NULL; op = op->next) {
      if (op->kind == SIM_OP_COPY && op->snapshot == NULL &&
          ranges_overlap((uintptr_t)op->src, op->size, address, size)) {
        return 1;
      }
    }
  }
  return 0;
}

/* Executes (by demand) every queued op that reads or writes memory in
 * [address, address + size), so the memory can be freed safely. This is the
 * sim's version of cudaFree's implicit synchronization. */
static void drain_ops_touching_locked(uintptr_t address, int64_t size) {
  int again = 1;
  while (again) {
    again = 0;
    for (struct SimStream* s = g_streams; s != NULL; s = s->next) {
      uint64_t last = 0;
      for (struct SimOp* op = s->head; op != NULL; op = op->next) {
        if (op->kind != SIM_OP_COPY) continue;
        if (ranges_overlap((uintptr_t)op->dst, op->size, address, size) ||
            (op->snapshot == NULL &&
             ranges_overlap((uintptr_t)op->src, op->size, address, size))) {
          last = op->seq;
        }
      }
      if (last != 0 && s->executed < last) {
        /* The list may change while we wait: start over afterwards. */
        wait_position_locked(s->id, last);
        again = 1;
        break;
      }
    }
  }
}

/* ---- the worker ----------------------------------------------------------------- */

static void* sim_worker(void* arg) {
  struct SimStream* s = (struct SimStream*)arg;
  pthread_mutex_lock(&g_sim_lock);
  for (;;) {
    struct SimOp* op = s->head;
    if (op != NULL && op->seq <= s->demand) {
      if (op->kind == SIM_OP_WAIT) {
        struct SimStream* target = find_stream_by_id(op->wait_stream_id);
        if (target != NULL && target->executed < op->wait_seq) {
          /* This op is demanded, so what it waits for is demanded too. */
          if (target->demand < op->wait_seq) {
            target->demand = op->wait_seq;
            pthread_cond_broadcast(&g_sim_progress);
          }
          pthread_cond_wait(&g_sim_progress, &g_sim_lock);
          continue;
        }
      } else {
        /* The op stays at the head while it runs, so deallocate and destroy
         * keep waiting for it; nobody else touches it. */
        pthread_mutex_unlock(&g_sim_lock);
        memmove(op->dst, op->src, (size_t)op->size);
        pthread_mutex_lock(&g_sim_lock);
      }
      s->head = op->next;
      if (s->head == NULL) s->tail = NULL;
      s->executed = op->seq;
      free(op->snapshot);
      free(op);
      pthread_cond_broadcast(&g_sim_progress);
      continue;
    }
    if (s->shutdown && s->head == NULL) break;
    pthread_cond_wait(&g_sim_progress, &g_sim_lock);
  }
  pthread_mutex_unlock(&g_sim_lock);
  return NULL;
}

/* Appends `op` to `s`; the caller holds the lock. */
static void enqueue_locked(struct SimStream* s, struct SimOp* op) {
  op->seq = ++s->enqueued;
  op->next = NULL;
  if (s->tail == NULL) {
    s->head = op;
  } else {
    s->tail->next = op;
  }
  s->tail = op;
  if (!sim_strict()) s->demand = s->enqueued;
  pthread_cond_broadcast(&g_sim_progress);
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
  int64_t rounded = ferry__aligned_alloc_size(size, FERRY_SIM_ALIGNMENT);
  if (rounded == 0) {
    return ferry__set_error(error, ENOMEM,
                           "cannot allocate %" PRId64 " bytes on sim device %" PRId64
                           " (too large)",
                           size, device->device_id);
  }
  void* ptr = aligned_alloc(FERRY_SIM_ALIGNMENT, (size_t)rounded);
  if (ptr == NULL) {
    return ferry__set_error(error, ENOMEM,
                           "out of memory allocating %" PRId64
                           " bytes on sim device %" PRId64,
                           size, device->device_id);
  }
  /* Fresh device memory holds garbage; strict mode makes that visible. */
  if (sim_strict()) memset(ptr, FERRY_SIM_POISON_BYTE, (size_t)rounded);
  pthread_mutex_lock(&g_sim_lock);
  int code = insert_allocation_locked((uintptr_t)ptr, size, device->device_id);
  pthread_mutex_unlock(&g_sim_lock);
  if (code != FERRY_OK) {
    free(ptr);
    return ferry__set_error(error, ENOMEM, "out of memory in the sim allocation table");
  }
  *out = ptr;
  return FERRY_OK;
}

static int sim_deallocate(struct FerryDevice* device, void* ptr,
                          struct FerryError* error) {
  pthread_mutex_lock(&g_sim_lock);
  int64_t i = allocation_at_or_before((uintptr_t)ptr);
  if (i < 0 || g_allocations[i].start != (uintptr_t)ptr) {
    int code =
        ferry__set_error(error, EINVAL,
                        "pointer %p is not a live allocation of sim device %" PRId64
                        " (freed twice, never allocated there, or not the start of "
                        "an allocation)",
                        ptr, device->device_id);
    pthread_mutex_unlock(&g_sim_lock);
    return code;
  }
  if (g_allocations[i].device_id != device->device_id) {
    int code = ferry__set_error(error, EINVAL,
                               "pointer %p belongs to sim device %" PRId64
                               ", not sim device %" PRId64,
                               ptr, g_allocations[i].device_id, device->device_id);
    pthread_mutex_unlock(&g_sim_lock);
    return code;
  }
  drain_ops_touching_locked((uintptr_t)ptr, g_allocations[i].size);
  /* The table may have changed while draining; find the entry again. */
  i = allocation_at_or_before((uintptr_t)ptr);
  if (i < 0 || g_allocations[i].start != (uintptr_t)ptr) {
    int code = ferry__set_error(
        error, EINVAL, "pointer %p was freed by another thread at the same time", ptr);
    pthread_mutex_unlock(&g_sim_lock);
    return code;
  }
  memmove(&g_allocations[i], &g_allocations[i + 1],
          (size_t)(g_n_allocations - i - 1) * sizeof(struct SimAllocation));
  g_n_allocations--;
  pthread_mutex_unlock(&g_sim_lock);
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
  enqueue_locked(s, op);
  pthread_mutex_unlock(&g_sim_lock);
  return FERRY_OK;
}

static int sim_stream_create(struct FerryDevice* device, void** stream_out,
                             struct FerryError* error) {
  struct SimStream* s = (struct SimStream*)calloc(1, sizeof(struct SimStream));
  if (s == NULL)
    return ferry__set_error(error, ENOMEM, "out of memory creating a sim stream");
  s->magic = FERRY_SIM_STREAM_MAGIC;
  s->device_id = device->device_id;
  pthread_mutex_lock(&g_sim_lock);
  s->id = g_next_stream_id++;
  int rc = pthread_create(&s->worker, NULL, sim_worker, s);
  if (rc != 0) {
    pthread_mutex_unlock(&g_sim_lock);
    free(s);
    return ferry__set_error(error, rc == EAGAIN ? EAGAIN : EIO,
                           "cannot start the worker thread of a sim stream: %s",
                           strerror(rc));
  }
  s->next = g_streams;
  g_streams = s;
  g_n_streams++;
  pthread_mutex_unlock(&g_sim_lock);
  *stream_out = s;
  return FERRY_OK;
}

/* Drains the queue (executing everything), joins the worker, frees. */
static int sim_stream_destroy(struct FerryDevice* device, void* stream,
                              struct FerryError* error) {
  pthread_mutex_lock(&g_sim_lock);
  struct SimStream* s = NULL;
  int code = find_stream_locked(stream, device->device_id, &s, error);
  if (code != FERRY_OK) {
    pthread_mutex_unlock(&g_sim_lock);
    return code;
  }
  s->shutdown = 1;
  s->demand = s->enqueued;
  pthread_cond_broadcast(&g_sim_progress);
  pthread_mutex_unlock(&g_sim_lock);

  pthread_join(s->worker, NULL);

  /* Only now leave the list: until here, waits on this stream's positions
   * had to see its real progress. */
  pthread_mutex_lock(&g_sim_lock);
  for (struct SimStream** link = &g_streams; *link != NULL; link = &(*link)->next) {
    if (*link == s) {
      *link = s->next;
      break;
    }
  }
  g_n_streams--;
  pthread_cond_broadcast(&g_sim_progress);
  pthread_mutex_unlock(&g_sim_lock);
  s->magic = 0;
  free(s);
  return FERRY_OK;
}

static int sim_stream_synchronize(struct FerryDevice* device, void* stream,
                                  struct FerryError* error) {
  pthread_mutex_lock(&g_sim_lock);
  if (stream != NULL) {
    struct SimStream* s = NULL;
    int code = find_stream_locked(stream, device->device_id, &s, error);
    if (code == FERRY_OK) wait_position_locked(s->id, s->enqueued);
    pthread_mutex_unlock(&g_sim_lock);
    return code;
  }
  /* The NULL stream: wait for every stream of this device. */
  int again = 1;
  while (again) {
    again = 0;
    for (struct SimStream* s = g_streams; s != NULL; s = s->next) {
      if (s->device_id == device->device_id && s->executed < s->enqueued) {
        wait_position_locked(s->id, s->enqueued);
        again = 1;
        break;
      }
    }
  }
  pthread_mutex_unlock(&g_sim_lock);
  return FERRY_OK;
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
  event->next = g_events;
  g_events = event;
  g_n_events++;
  pthread_mutex_unlock(&g_sim_lock);
  *sync_event_out = slot;
  return FERRY_OK;
}

/* Safe while the event is pending: waits name stream positions, not events. */
static int sim_event_destroy(struct FerryDevice* device, void* sync_event,
                             struct FerryError* error) {
  pthread_mutex_lock(&g_sim_lock);
  struct FerrySimEvent* event = NULL;
  int code = find_device_event_locked(sync_event, device->device_id, &event, error);
  if (code == FERRY_OK) {
    for (struct FerrySimEvent** link = &g_events; *link != NULL; link = &(*link)->next) {
      if (*link == event) {
        *link = event->next;
        break;
      }
    }
    g_n_events--;
  }
  pthread_mutex_unlock(&g_sim_lock);
  if (code == FERRY_OK) {
    event->magic = 0;
    free(event->slot);
    free(event);
  }
  return code;
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
  if (code == FERRY_OK && event->recorded && event->stream_id != s->id &&
      !position_done_locked(event->stream_id, event->seq)) {
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

static int sim_check_pointer(struct FerryDevice* device, const void* ptr, int64_t size,
                             struct FerryError* error) {
  pthread_mutex_lock(&g_sim_lock);
  int code = check_range_locked(device->device_id, ptr, size, error);
  pthread_mutex_unlock(&g_sim_lock);
  return code;
}

const struct FerryBackend ferry__backend_sim = {
    .name = "sim",
    .device_types = kSimDeviceTypes,
    .n_device_types = 1,
    .probe = sim_probe,
    .device_count = sim_device_count,
    .device_init = NULL,
    .is_host_accessible = sim_is_host_accessible,
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
    .check_pointer = sim_check_pointer,
};
