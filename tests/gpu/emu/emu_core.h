/* TEST FIXTURE, never shipped or linked into libferry.
 *
 * The machinery shared by the CUDA driver emulation (cuda_emu.c) and the
 * HIP runtime emulation (hip_emu.c): each includes this file once, so each
 * emulation library has its own state. It models a GPU with host memory,
 * and is never more forgiving than a GPU where that could hide a missing
 * wait or a host read of device memory:
 *
 * - Device memory cannot be read by the host. Each device allocation is an
 *   address range mapped without access (PROT_NONE): a host dereference of
 *   an emulated device pointer crashes with SIGSEGV, as on a GPU. The bytes
 *   live in a separate host buffer that only the emulated copy calls reach.
 *   Pinned host and managed memory are ordinary host memory, readable as on
 *   a GPU. Allocations are recorded with their device and kind, so pointer
 *   queries answer exactly and copies to or from memory the "driver" does
 *   not know are refused.
 * - Streams are FIFOs of operations (copy, wait for another stream's
 *   position, gate) executed in order by one worker thread each. An event is
 *   a position (stream id, sequence number), complete once that stream has
 *   executed that many operations, like the sim device in core/src/sim.c.
 * - Work runs late: a stream executes nothing until the host asks for a
 *   result that depends on it (synchronizing the stream, its device or an
 *   event recorded on it, a stream that waits on it, a query, freeing memory
 *   it touches, destroying it). So a host read without a wait always sees
 *   the old bytes, deterministically, where a fast emulation would usually
 *   win the race. A query of pending work answers "not ready" once and lets
 *   the work go, so polling loops end.
 * - The NULL stream is a real stream per device (the legacy default stream),
 *   asynchronous like the others: work on it is done only once someone waits
 *   for it. It is never implicitly ordered with other streams (the driver
 *   orders it with blocking streams; ferry creates only non-blocking ones),
 *   which can only expose missing waits, never hide one.
 * - Copies: a pageable host source is captured when the copy is queued (the
 *   driver stages it); every other source is read when the copy runs. A
 *   device-to-host copy into pageable memory is asynchronous here, although
 *   the driver blocks the host until it completes: the emulation is the
 *   stricter of the two, so a consumer that reads without waiting fails here
 *   even where a GPU would hide its mistake.
 * - Gates: emu_gate_close(stream) queues an operation that blocks its stream
 *   until emu_gates_open(); tests use it to keep work pending for as long as
 *   they need, without sleeping.
 * - Failures: emu_fail(name, nth, code) makes the nth next call of an entry
 *   point fail with `code`; the environment can arm the same at load time.
 *
 * One mutex guards everything, with one condition variable broadcast on
 * every change of progress; copies run outside the lock.
 *
 * The front ends are thin: each says how its driver spells a few results
 * and what its test controls are called, by defining before including this
 * file
 *   EMU_PREFIX          the test controls' prefix (cuda_emu: cuda_emu_fail, ...)
 *   EMU_SUCCESS, EMU_INVALID_VALUE, EMU_INVALID_HANDLE, EMU_OUT_OF_MEMORY,
 *   EMU_NOT_READY, EMU_UNKNOWN   the driver's result codes
 *   EMU_NO_CURRENT      what a call needing a current device returns without one
 * and implements each exported entry point over the emu_*_rc functions at
 * the end of this file, which answer in those codes. What differs stays in
 * the front ends: CUDA's contexts and stub mode, HIP's current device and
 * its HIP 5/6 pointer attributes. */
#ifndef FERRY_TESTS_GPU_EMU_CORE_H
#define FERRY_TESTS_GPU_EMU_CORE_H

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define EMU_EXPORT __attribute__((visibility("default")))
#define EMU_MAX_DEVICES 8
#define EMU_STREAM_MAGIC 0x454d555354524dULL
#define EMU_EVENT_MAGIC 0x454d554556454e54ULL

enum EmuMemoryKind { EMU_MEMORY_DEVICE = 1, EMU_MEMORY_HOST = 2, EMU_MEMORY_MANAGED = 3 };

struct EmuAllocation {
  uintptr_t start; /* the address the "driver" handed out */
  size_t size;
  /* Where the bytes are: `start` itself for host-reachable kinds; for
   * device memory a separate buffer, `start` being inaccessible. */
  uint8_t* bytes;
  size_t reserved; /* length of the inaccessible range at `start` (device memory) */
  int device;
  enum EmuMemoryKind kind;
  /* What pointer queries report instead of the kind, when >= 0: lets tests
   * show ferry memory types it does not make (arrays, managed HIP memory). */
  int reported_type;
  int reported_managed;
  struct EmuAllocation* next;
};

enum EmuOpKind { EMU_OP_COPY, EMU_OP_WAIT, EMU_OP_GATE };

struct EmuOp {
  enum EmuOpKind kind;
  uint64_t seq;
  struct EmuOp* next;
  /* Copies: host-reachable addresses (device memory already translated). */
  void* dst;
  const void* src;
  size_t size;
  void* snapshot; /* owned copy of a pageable host source */
  uint64_t wait_stream_id;
  uint64_t wait_seq;
  uint64_t gate_generation;
};

struct EmuStream {
  uint64_t magic;
  uint64_t id;
  int device;
  int legacy; /* the device's NULL stream: never destroyed, not counted */
  struct EmuOp* head;
  struct EmuOp* tail;
  uint64_t enqueued;
  uint64_t executed;
  uint64_t released; /* operations up to this one may run (see "Work runs late") */
  int shutdown;
  pthread_t worker;
  struct EmuStream* next;
};

struct EmuEvent {
  uint64_t magic;
  int device;
  int recorded;
  uint64_t stream_id;
  uint64_t seq;
  struct EmuEvent* next;
};

struct EmuFailure {
  char name[64];
  int64_t countdown; /* calls left before the failing one; -1 when unarmed */
  unsigned code;
};

#define EMU_MAX_FAILURES 32
#define EMU_MAX_COUNTERS 64

static pthread_mutex_t emu_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t emu_progress = PTHREAD_COND_INITIALIZER;
static struct EmuAllocation* emu_allocations;
static int64_t emu_n_allocations;
static struct EmuStream* emu_streams;
static int64_t emu_n_streams;
static struct EmuStream* emu_legacy_streams[EMU_MAX_DEVICES];
static uint64_t emu_next_stream_id = 1;
static struct EmuEvent* emu_events;
static int64_t emu_n_events;
static uint64_t emu_gate_generation; /* gates queued at generation g open when it exceeds g */
static struct EmuFailure emu_failures[EMU_MAX_FAILURES];
static struct {
  char name[64];
  int64_t calls;
} emu_counters[EMU_MAX_COUNTERS];

/* ---- failure injection and call counting -------------------------------------- */

static void emu_count_call_locked(const char* name) {
  for (int i = 0; i < EMU_MAX_COUNTERS; i++) {
    if (emu_counters[i].name[0] == '\0') {
      snprintf(emu_counters[i].name, sizeof(emu_counters[i].name), "%s", name);
      emu_counters[i].calls = 1;
      return;
    }
    if (strcmp(emu_counters[i].name, name) == 0) {
      emu_counters[i].calls++;
      return;
    }
  }
}

static int64_t emu_calls(const char* name) {
  pthread_mutex_lock(&emu_lock);
  int64_t calls = 0;
  for (int i = 0; i < EMU_MAX_COUNTERS; i++) {
    if (strcmp(emu_counters[i].name, name) == 0) calls = emu_counters[i].calls;
  }
  pthread_mutex_unlock(&emu_lock);
  return calls;
}

/* Arms: the nth call (1 = the next) of `name` from now fails with `code`. */
static void emu_fail(const char* name, int64_t nth, unsigned code) {
  pthread_mutex_lock(&emu_lock);
  for (int i = 0; i < EMU_MAX_FAILURES; i++) {
    if (emu_failures[i].name[0] == '\0' || strcmp(emu_failures[i].name, name) == 0) {
      snprintf(emu_failures[i].name, sizeof(emu_failures[i].name), "%s", name);
      emu_failures[i].countdown = nth - 1;
      emu_failures[i].code = code;
      break;
    }
  }
  pthread_mutex_unlock(&emu_lock);
}

static void emu_clear_failures(void) {
  pthread_mutex_lock(&emu_lock);
  memset(emu_failures, 0, sizeof(emu_failures));
  pthread_mutex_unlock(&emu_lock);
}

/* Counts the call; returns the injected code, or 0 to go on. */
static unsigned emu_enter(const char* name) {
  unsigned code = 0;
  pthread_mutex_lock(&emu_lock);
  emu_count_call_locked(name);
  for (int i = 0; i < EMU_MAX_FAILURES; i++) {
    struct EmuFailure* f = &emu_failures[i];
    if (f->name[0] == '\0' || strcmp(f->name, name) != 0 || f->countdown < 0) continue;
    if (f->countdown == 0) code = f->code;
    f->countdown--; /* fires once, then stays unarmed at -1 */
  }
  pthread_mutex_unlock(&emu_lock);
  return code;
}

/* Parses "name:nth[:code],name:nth[:code]" from the environment at load. */
static void emu_fail_from_env(const char* variable, unsigned (*default_code)(const char*)) {
  const char* spec = getenv(variable);
  if (spec == NULL) return;
  char copy[1024];
  snprintf(copy, sizeof(copy), "%s", spec);
  char* save = NULL;
  for (char* item = strtok_r(copy, ",", &save); item != NULL; item = strtok_r(NULL, ",", &save)) {
    char* first = strchr(item, ':');
    if (first == NULL) continue;
    *first = '\0';
    char* second = strchr(first + 1, ':');
    if (second != NULL) *second = '\0';
    int64_t nth = strtoll(first + 1, NULL, 10);
    unsigned code = second != NULL ? (unsigned)strtoul(second + 1, NULL, 10) : default_code(item);
    if (nth > 0) emu_fail(item, nth, code);
  }
}

/* ---- allocations (callers hold emu_lock unless named otherwise) --------------------- */

static struct EmuAllocation* emu_find_allocation_locked(const void* pointer) {
  uintptr_t address = (uintptr_t)pointer;
  for (struct EmuAllocation* a = emu_allocations; a != NULL; a = a->next) {
    if (address >= a->start && address < a->start + a->size) return a;
  }
  return NULL;
}

/* The allocation holding all of [pointer, pointer + size), or NULL. */
static struct EmuAllocation* emu_find_range_locked(const void* pointer, size_t size) {
  struct EmuAllocation* a = emu_find_allocation_locked(pointer);
  return a != NULL && size <= a->start + a->size - (uintptr_t)pointer ? a : NULL;
}

/* Where the emulation itself reads or writes `pointer` of allocation `a`. */
static uint8_t* emu_bytes_of(const struct EmuAllocation* a, const void* pointer) {
  return a->bytes + ((uintptr_t)pointer - a->start);
}

static void emu_release_memory(struct EmuAllocation* a) {
  if (a->reserved != 0) munmap((void*)a->start, a->reserved);
  free(a->bytes);
  free(a);
}

static void* emu_allocate(int device, enum EmuMemoryKind kind, size_t size) {
  size_t bytes = size == 0 ? 1 : size;
  struct EmuAllocation* a = (struct EmuAllocation*)calloc(1, sizeof(*a));
  if (a == NULL) return NULL;
  a->bytes = (uint8_t*)malloc(bytes);
  if (a->bytes == NULL) {
    free(a);
    return NULL;
  }
  if (kind == EMU_MEMORY_DEVICE) {
    /* An address range the host cannot touch; the bytes stay in a->bytes. */
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    a->reserved = (bytes + page - 1) / page * page;
    void* range = mmap(NULL, a->reserved, PROT_NONE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (range == MAP_FAILED) {
      free(a->bytes);
      free(a);
      return NULL;
    }
    a->start = (uintptr_t)range;
  } else {
    a->start = (uintptr_t)a->bytes;
  }
  /* Recognisable garbage, like fresh device memory. */
  memset(a->bytes, 0xCD, bytes);
  a->size = bytes;
  a->device = device;
  a->kind = kind;
  a->reported_type = -1;
  a->reported_managed = -1;
  pthread_mutex_lock(&emu_lock);
  a->next = emu_allocations;
  emu_allocations = a;
  emu_n_allocations++;
  pthread_mutex_unlock(&emu_lock);
  return (void*)a->start;
}

static int emu_ranges_overlap(uintptr_t a, size_t a_size, uintptr_t b, size_t b_size) {
  return a < b + b_size && b < a + a_size;
}

/* Lets every operation queued on `s` (up to `seq`) run. */
static void emu_release_locked(struct EmuStream* s, uint64_t seq) {
  if (s != NULL && s->released < seq) {
    s->released = seq;
    pthread_cond_broadcast(&emu_progress);
  }
}

/* 1 when queued work touches [start, start + size) of the emulation's bytes;
 * that work is released so that it finishes. */
static int emu_pending_touches_locked(uintptr_t start, size_t size) {
  int touched = 0;
  for (struct EmuStream* s = emu_streams; s != NULL; s = s->next) {
    for (struct EmuOp* op = s->head; op != NULL; op = op->next) {
      if (op->kind != EMU_OP_COPY) continue;
      if (emu_ranges_overlap((uintptr_t)op->dst, op->size, start, size) ||
          (op->snapshot == NULL &&
           emu_ranges_overlap((uintptr_t)op->src, op->size, start, size))) {
        emu_release_locked(s, op->seq);
        touched = 1;
      }
    }
  }
  return touched;
}

/* Frees the allocation starting at `pointer` if it has kind `kind`, after
 * queued copies that touch it have run (the drivers' free synchronizes).
 * Returns 0, or -1 when the pointer is not the start of such an allocation. */
static int emu_free(const void* pointer, enum EmuMemoryKind kind) {
  pthread_mutex_lock(&emu_lock);
  struct EmuAllocation* a = emu_find_allocation_locked(pointer);
  if (a == NULL || a->start != (uintptr_t)pointer || a->kind != kind) {
    pthread_mutex_unlock(&emu_lock);
    return -1;
  }
  while (emu_pending_touches_locked((uintptr_t)a->bytes, a->size)) {
    pthread_cond_wait(&emu_progress, &emu_lock);
  }
  for (struct EmuAllocation** link = &emu_allocations; *link != NULL; link = &(*link)->next) {
    if (*link == a) {
      *link = a->next;
      break;
    }
  }
  emu_n_allocations--;
  pthread_mutex_unlock(&emu_lock);
  emu_release_memory(a);
  return 0;
}

/* Copies what the driver knows about `pointer`; 0 when found. */
static int emu_lookup(const void* pointer, struct EmuAllocation* out) {
  pthread_mutex_lock(&emu_lock);
  struct EmuAllocation* a = emu_find_allocation_locked(pointer);
  if (a != NULL) *out = *a;
  pthread_mutex_unlock(&emu_lock);
  return a != NULL ? 0 : -1;
}

/* Makes pointer queries about the allocation holding `pointer` report
 * `type` and `managed` (-1: the truth). Returns -1 for unknown memory. */
static int emu_override_report(const void* pointer, int type, int managed) {
  pthread_mutex_lock(&emu_lock);
  struct EmuAllocation* a = emu_find_allocation_locked(pointer);
  if (a != NULL) {
    a->reported_type = type;
    a->reported_managed = managed;
  }
  pthread_mutex_unlock(&emu_lock);
  return a != NULL ? 0 : -1;
}

/* ---- streams ------------------------------------------------------------------------- */

static struct EmuStream* emu_stream_by_id_locked(uint64_t id) {
  for (struct EmuStream* s = emu_streams; s != NULL; s = s->next) {
    if (s->id == id) return s;
  }
  return NULL;
}

static int emu_position_done_locked(uint64_t stream_id, uint64_t seq) {
  struct EmuStream* s = emu_stream_by_id_locked(stream_id);
  return s == NULL || s->executed >= seq;
}

/* The live stream behind a handle, or NULL (the NULL handle included). */
static struct EmuStream* emu_stream_lookup_locked(const void* handle) {
  for (struct EmuStream* s = emu_streams; s != NULL; s = s->next) {
    if ((const void*)s == handle && s->magic == EMU_STREAM_MAGIC && !s->legacy) return s;
  }
  return NULL;
}

/* 1 when the released head operation of a stream may run now. */
static int emu_op_ready_locked(const struct EmuOp* op) {
  switch (op->kind) {
    case EMU_OP_WAIT:
      return emu_position_done_locked(op->wait_stream_id, op->wait_seq);
    case EMU_OP_GATE:
      return emu_gate_generation > op->gate_generation;
    default:
      return 1;
  }
}

static void* emu_worker(void* arg) {
  struct EmuStream* s = (struct EmuStream*)arg;
  pthread_mutex_lock(&emu_lock);
  for (;;) {
    struct EmuOp* op = s->head;
    if (op == NULL) {
      if (s->shutdown) break;
      pthread_cond_wait(&emu_progress, &emu_lock);
      continue;
    }
    if (op->seq > s->released) {
      pthread_cond_wait(&emu_progress, &emu_lock);
      continue;
    }
    /* A released wait releases what it waits for. */
    if (op->kind == EMU_OP_WAIT) {
      emu_release_locked(emu_stream_by_id_locked(op->wait_stream_id), op->wait_seq);
    }
    if (!emu_op_ready_locked(op)) {
      pthread_cond_wait(&emu_progress, &emu_lock);
      continue;
    }
    if (op->kind == EMU_OP_COPY) {
      pthread_mutex_unlock(&emu_lock);
      memmove(op->dst, op->src, op->size);
      pthread_mutex_lock(&emu_lock);
    }
    s->head = op->next;
    if (s->head == NULL) s->tail = NULL;
    s->executed = op->seq;
    free(op->snapshot);
    free(op);
    pthread_cond_broadcast(&emu_progress);
  }
  pthread_mutex_unlock(&emu_lock);
  return NULL;
}

static void emu_enqueue_locked(struct EmuStream* s, struct EmuOp* op) {
  op->seq = ++s->enqueued;
  if (s->tail == NULL) {
    s->head = op;
  } else {
    s->tail->next = op;
  }
  s->tail = op;
  pthread_cond_broadcast(&emu_progress);
}

/* Caller holds emu_lock. */
static struct EmuStream* emu_stream_create_locked(int device, int legacy) {
  struct EmuStream* s = (struct EmuStream*)calloc(1, sizeof(*s));
  if (s == NULL) return NULL;
  s->magic = EMU_STREAM_MAGIC;
  s->device = device;
  s->legacy = legacy;
  s->id = emu_next_stream_id++;
  if (pthread_create(&s->worker, NULL, emu_worker, s) != 0) {
    free(s);
    return NULL;
  }
  s->next = emu_streams;
  emu_streams = s;
  if (!legacy) emu_n_streams++;
  return s;
}

static struct EmuStream* emu_stream_create(int device) {
  pthread_mutex_lock(&emu_lock);
  struct EmuStream* s = emu_stream_create_locked(device, 0);
  pthread_mutex_unlock(&emu_lock);
  return s;
}

/* The NULL (legacy default) stream of `device`, made on first use; NULL
 * when out of memory. Caller holds emu_lock. */
static struct EmuStream* emu_legacy_stream_locked(int device) {
  if (device < 0 || device >= EMU_MAX_DEVICES) return NULL;
  if (emu_legacy_streams[device] == NULL) {
    emu_legacy_streams[device] = emu_stream_create_locked(device, 1);
  }
  return emu_legacy_streams[device];
}

/* The stream a handle names for work on `device`: NULL is the device's NULL
 * stream. Returns 0, or -1 for an unknown handle or one of another device. */
static int emu_stream_for(const void* handle, int device, struct EmuStream** out) {
  pthread_mutex_lock(&emu_lock);
  struct EmuStream* s =
      handle == NULL ? emu_legacy_stream_locked(device) : emu_stream_lookup_locked(handle);
  pthread_mutex_unlock(&emu_lock);
  *out = s;
  return s != NULL && s->device == device ? 0 : -1;
}

/* Drains (gates must be open) and frees. -1 for an unknown handle. */
static int emu_stream_destroy(void* handle) {
  pthread_mutex_lock(&emu_lock);
  struct EmuStream* s = emu_stream_lookup_locked(handle);
  if (s == NULL || s->shutdown) {
    pthread_mutex_unlock(&emu_lock);
    return -1;
  }
  s->shutdown = 1;
  emu_release_locked(s, s->enqueued); /* queued work still completes */
  pthread_cond_broadcast(&emu_progress);
  pthread_mutex_unlock(&emu_lock);
  pthread_join(s->worker, NULL);
  pthread_mutex_lock(&emu_lock);
  for (struct EmuStream** link = &emu_streams; *link != NULL; link = &(*link)->next) {
    if (*link == s) {
      *link = s->next;
      break;
    }
  }
  emu_n_streams--;
  pthread_cond_broadcast(&emu_progress);
  pthread_mutex_unlock(&emu_lock);
  s->magic = 0;
  free(s);
  return 0;
}

/* Queues a copy of `size` bytes on `s`, after checking the memory: a side
 * whose flag is set must lie inside one allocation of the driver; the other
 * may be any host memory (or known memory, as with unified addressing).
 * Device memory is translated to where its bytes are; a pageable host source
 * is captured now, as a driver stages it. Returns 0, -1 for memory the
 * driver does not know, -2 when out of memory. */
static int emu_copy(struct EmuStream* s, void* dst, const void* src, size_t size,
                    int dst_must_be_known, int src_must_be_known) {
  struct EmuOp* op = (struct EmuOp*)calloc(1, sizeof(*op));
  if (op == NULL) return -2;
  pthread_mutex_lock(&emu_lock);
  struct EmuAllocation* d = emu_find_range_locked(dst, size);
  struct EmuAllocation* a = emu_find_range_locked(src, size);
  if ((dst_must_be_known && d == NULL) || (src_must_be_known && a == NULL)) {
    pthread_mutex_unlock(&emu_lock);
    free(op);
    return -1;
  }
  op->kind = EMU_OP_COPY;
  op->dst = d != NULL ? emu_bytes_of(d, dst) : dst;
  op->size = size;
  if (a != NULL) {
    op->src = emu_bytes_of(a, src);
  } else {
    op->snapshot = malloc(size == 0 ? 1 : size);
    if (op->snapshot == NULL) {
      pthread_mutex_unlock(&emu_lock);
      free(op);
      return -2;
    }
    memcpy(op->snapshot, src, size);
    op->src = op->snapshot;
  }
  emu_enqueue_locked(s, op);
  pthread_mutex_unlock(&emu_lock);
  return 0;
}

static void emu_stream_synchronize(struct EmuStream* s) {
  pthread_mutex_lock(&emu_lock);
  uint64_t id = s->id, target = s->enqueued;
  emu_release_locked(s, target);
  while (!emu_position_done_locked(id, target)) pthread_cond_wait(&emu_progress, &emu_lock);
  pthread_mutex_unlock(&emu_lock);
}

/* Waits for every stream of `device` (its NULL stream included). */
static void emu_device_synchronize(int device) {
  pthread_mutex_lock(&emu_lock);
  for (struct EmuStream* s = emu_streams; s != NULL; s = s->next) {
    if (s->device == device) emu_release_locked(s, s->enqueued);
  }
  int again = 1;
  while (again) {
    again = 0;
    for (struct EmuStream* s = emu_streams; s != NULL; s = s->next) {
      if (s->device == device && s->executed < s->released) {
        pthread_cond_wait(&emu_progress, &emu_lock);
        again = 1;
        break;
      }
    }
  }
  pthread_mutex_unlock(&emu_lock);
}

/* Operations queued on `s` and not executed yet. A query lets them run, as
 * a GPU would on its own, so that a polling caller makes progress. */
static int64_t emu_stream_query(struct EmuStream* s) {
  pthread_mutex_lock(&emu_lock);
  int64_t pending = (int64_t)(s->enqueued - s->executed);
  if (pending > 0) emu_release_locked(s, s->enqueued);
  pthread_mutex_unlock(&emu_lock);
  return pending;
}

/* For tests: operations queued and not executed yet (-1: unknown handle). */
static int64_t emu_stream_pending(void* handle) {
  pthread_mutex_lock(&emu_lock);
  struct EmuStream* s = emu_stream_lookup_locked(handle);
  int64_t pending = s == NULL ? -1 : (int64_t)(s->enqueued - s->executed);
  pthread_mutex_unlock(&emu_lock);
  return pending;
}

/* ---- events ------------------------------------------------------------------------------ */

static struct EmuEvent* emu_event_lookup_locked(const void* handle) {
  for (struct EmuEvent* e = emu_events; e != NULL; e = e->next) {
    if ((const void*)e == handle && e->magic == EMU_EVENT_MAGIC) return e;
  }
  return NULL;
}

static struct EmuEvent* emu_event_create(int device) {
  struct EmuEvent* e = (struct EmuEvent*)calloc(1, sizeof(*e));
  if (e == NULL) return NULL;
  e->magic = EMU_EVENT_MAGIC;
  e->device = device;
  pthread_mutex_lock(&emu_lock);
  e->next = emu_events;
  emu_events = e;
  emu_n_events++;
  pthread_mutex_unlock(&emu_lock);
  return e;
}

static int emu_event_destroy(void* handle) {
  pthread_mutex_lock(&emu_lock);
  struct EmuEvent* e = emu_event_lookup_locked(handle);
  if (e == NULL) {
    pthread_mutex_unlock(&emu_lock);
    return -1;
  }
  for (struct EmuEvent** link = &emu_events; *link != NULL; link = &(*link)->next) {
    if (*link == e) {
      *link = e->next;
      break;
    }
  }
  emu_n_events--;
  pthread_mutex_unlock(&emu_lock);
  e->magic = 0;
  free(e);
  return 0;
}

/* Caller holds emu_lock and has validated both handles. */
static void emu_event_record_locked(struct EmuEvent* e, struct EmuStream* s) {
  e->recorded = 1;
  e->stream_id = s->id;
  e->seq = s->enqueued;
}

static int emu_event_done_locked(const struct EmuEvent* e) {
  return !e->recorded || emu_position_done_locked(e->stream_id, e->seq);
}

/* 1 when complete; 0 when pending, and then the work it waits for may run
 * (a polling caller makes progress). */
static int emu_event_query_locked(const struct EmuEvent* e) {
  if (emu_event_done_locked(e)) return 1;
  emu_release_locked(emu_stream_by_id_locked(e->stream_id), e->seq);
  return 0;
}

static void emu_event_synchronize_locked(const struct EmuEvent* e) {
  uint64_t id = e->stream_id, seq = e->seq;
  if (!e->recorded) return;
  emu_release_locked(emu_stream_by_id_locked(id), seq);
  while (!emu_position_done_locked(id, seq)) pthread_cond_wait(&emu_progress, &emu_lock);
}

/* Queues on `s` a wait for the event's position (nothing when complete). */
static int emu_stream_wait_event_locked(struct EmuStream* s, const struct EmuEvent* e) {
  if (emu_event_done_locked(e) || e->stream_id == s->id) return 0;
  struct EmuOp* op = (struct EmuOp*)calloc(1, sizeof(*op));
  if (op == NULL) return -1;
  op->kind = EMU_OP_WAIT;
  op->wait_stream_id = e->stream_id;
  op->wait_seq = e->seq;
  emu_enqueue_locked(s, op);
  return 0;
}

/* ---- gates and test queries ---------------------------------------------------------------- */

static int emu_gate_close(void* handle) {
  struct EmuOp* op = (struct EmuOp*)calloc(1, sizeof(*op));
  if (op == NULL) return -1;
  op->kind = EMU_OP_GATE;
  pthread_mutex_lock(&emu_lock);
  struct EmuStream* s = emu_stream_lookup_locked(handle);
  if (s == NULL) {
    pthread_mutex_unlock(&emu_lock);
    free(op);
    return -1;
  }
  op->gate_generation = emu_gate_generation;
  emu_enqueue_locked(s, op);
  pthread_mutex_unlock(&emu_lock);
  return 0;
}

static void emu_gates_open(void) {
  pthread_mutex_lock(&emu_lock);
  emu_gate_generation++;
  pthread_cond_broadcast(&emu_progress);
  pthread_mutex_unlock(&emu_lock);
}

static int64_t emu_live(int what) {
  pthread_mutex_lock(&emu_lock);
  int64_t n = what == 0 ? emu_n_allocations : what == 1 ? emu_n_streams : emu_n_events;
  pthread_mutex_unlock(&emu_lock);
  return n;
}

static int emu_env_int(const char* variable, int fallback) {
  const char* value = getenv(variable);
  return value != NULL && value[0] != '\0' ? atoi(value) : fallback;
}

/* ---- the entry points' common part, in the driver's result codes --------------------
 */

#if !defined(EMU_PREFIX) || !defined(EMU_SUCCESS) || !defined(EMU_INVALID_VALUE) || \
    !defined(EMU_INVALID_HANDLE) || !defined(EMU_OUT_OF_MEMORY) ||                  \
    !defined(EMU_NOT_READY) || !defined(EMU_UNKNOWN) || !defined(EMU_NO_CURRENT)
#error "define EMU_PREFIX and the EMU_ result codes before including emu_core.h"
#endif

/* Reads the device count from `devices_variable` (default 2, at most
 * EMU_MAX_DEVICES) and arms the failures `fail_variable` lists. */
static unsigned emu_default_failure_code(const char* name) {
  return strstr(name, "Alloc") != NULL || strstr(name, "alloc") != NULL
             ? EMU_OUT_OF_MEMORY
             : EMU_UNKNOWN;
}

static int emu_load_environment(const char* devices_variable, const char* fail_variable) {
  int devices = emu_env_int(devices_variable, 2);
  if (devices < 0) devices = 0;
  if (devices > EMU_MAX_DEVICES) devices = EMU_MAX_DEVICES;
  emu_fail_from_env(fail_variable, emu_default_failure_code);
  return devices;
}

/* The stream a handle names for work on `device` (NULL: its NULL stream);
 * a stream of another device is an invalid handle. */
static unsigned emu_stream_rc(const void* handle, int device, struct EmuStream** out) {
  return emu_stream_for(handle, device, out) == 0 ? EMU_SUCCESS : EMU_INVALID_HANDLE;
}

/* A stream of any device; NULL is the NULL stream of `device`, the current
 * one (< 0: there is none). */
static unsigned emu_any_stream_rc(const void* handle, int device,
                                  struct EmuStream** out) {
  if (handle == NULL) {
    return device < 0 ? EMU_NO_CURRENT : emu_stream_rc(NULL, device, out);
  }
  pthread_mutex_lock(&emu_lock);
  *out = emu_stream_lookup_locked(handle);
  pthread_mutex_unlock(&emu_lock);
  return *out != NULL ? EMU_SUCCESS : EMU_INVALID_HANDLE;
}

/* `size` > 0 (the front ends answer 0 bytes as their driver does). */
static unsigned emu_allocate_rc(int device, enum EmuMemoryKind kind, size_t size,
                                void** out) {
  if (out == NULL) return EMU_INVALID_VALUE;
  void* block = emu_allocate(device, kind, size);
  if (block == NULL) return EMU_OUT_OF_MEMORY;
  *out = block;
  return EMU_SUCCESS;
}

static unsigned emu_free_rc(const void* pointer, enum EmuMemoryKind kind) {
  return emu_free(pointer, kind) == 0 ? EMU_SUCCESS : EMU_INVALID_VALUE;
}

/* Queues a copy on a stream of `device` (emu_copy says what is checked). */
static unsigned emu_copy_rc(int device, const void* stream, void* dst, const void* src,
                            size_t size, int dst_must_be_known, int src_must_be_known) {
  struct EmuStream* s = NULL;
  unsigned rc = emu_stream_rc(stream, device, &s);
  if (rc != EMU_SUCCESS) return rc;
  switch (emu_copy(s, dst, src, size, dst_must_be_known, src_must_be_known)) {
    case 0: return EMU_SUCCESS;
    case -1: return EMU_INVALID_VALUE;
    default: return EMU_OUT_OF_MEMORY;
  }
}

/* A peer copy on a stream of the current device (< 0: none): each pointer
 * must be memory of its device. Unused by the "old driver" builds, which
 * leave the peer copy out. */
__attribute__((unused)) static unsigned emu_copy_peer_rc(int current_device,
                                                         const void* stream, void* dst,
                                                         int dst_device, const void* src,
                                                         int src_device, size_t size) {
  struct EmuAllocation d, s;
  if (emu_lookup(dst, &d) != 0 || emu_lookup(src, &s) != 0 || d.device != dst_device ||
      s.device != src_device) {
    return EMU_INVALID_VALUE;
  }
  if (current_device < 0) return EMU_NO_CURRENT;
  return emu_copy_rc(current_device, stream, dst, src, size, 1, 1);
}

/* Stores a created stream or event (NULL: out of memory) in the caller's
 * `out`, a pointer to a handle of the driver's own pointer type (CUstream,
 * hipEvent_t, ...): copied bytewise, so that one core serves every front
 * end's handle types. */
static unsigned emu_created_rc(void* created, void* out) {
  if (created == NULL) return EMU_OUT_OF_MEMORY;
  memcpy(out, &created, sizeof created);
  return EMU_SUCCESS;
}

static unsigned emu_stream_create_rc(int device, void* out, unsigned flags) {
  if (out == NULL || flags > 1u) return EMU_INVALID_VALUE;
  return emu_created_rc(emu_stream_create(device), out);
}

static unsigned emu_stream_destroy_rc(void* handle) {
  return emu_stream_destroy(handle) == 0 ? EMU_SUCCESS : EMU_INVALID_HANDLE;
}

static unsigned emu_stream_synchronize_rc(const void* handle, int current_device) {
  struct EmuStream* s = NULL;
  unsigned rc = emu_any_stream_rc(handle, current_device, &s);
  if (rc == EMU_SUCCESS) emu_stream_synchronize(s);
  return rc;
}

static unsigned emu_stream_query_rc(const void* handle, int current_device) {
  struct EmuStream* s = NULL;
  unsigned rc = emu_any_stream_rc(handle, current_device, &s);
  if (rc != EMU_SUCCESS) return rc;
  return emu_stream_query(s) == 0 ? EMU_SUCCESS : EMU_NOT_READY;
}

static unsigned emu_event_create_rc(int device, void* out, unsigned flags) {
  if (out == NULL || (flags & ~7u) != 0) return EMU_INVALID_VALUE;
  return emu_created_rc(emu_event_create(device), out);
}

static unsigned emu_event_destroy_rc(void* handle) {
  return emu_event_destroy(handle) == 0 ? EMU_SUCCESS : EMU_INVALID_HANDLE;
}

/* The event and the stream must be of one device. */
static unsigned emu_event_record_rc(const void* event, const void* stream,
                                    int current_device) {
  struct EmuStream* s = NULL;
  unsigned rc = emu_any_stream_rc(stream, current_device, &s);
  if (rc != EMU_SUCCESS) return rc;
  pthread_mutex_lock(&emu_lock);
  struct EmuEvent* e = emu_event_lookup_locked(event);
  if (e == NULL || e->device != s->device) {
    rc = EMU_INVALID_HANDLE;
  } else {
    emu_event_record_locked(e, s);
  }
  pthread_mutex_unlock(&emu_lock);
  return rc;
}

static unsigned emu_event_query_rc(const void* event) {
  pthread_mutex_lock(&emu_lock);
  struct EmuEvent* e = emu_event_lookup_locked(event);
  unsigned rc = e == NULL                   ? EMU_INVALID_HANDLE
                : emu_event_query_locked(e) ? EMU_SUCCESS
                                            : EMU_NOT_READY;
  pthread_mutex_unlock(&emu_lock);
  return rc;
}

static unsigned emu_event_synchronize_rc(const void* event) {
  pthread_mutex_lock(&emu_lock);
  struct EmuEvent* e = emu_event_lookup_locked(event);
  if (e != NULL) emu_event_synchronize_locked(e);
  pthread_mutex_unlock(&emu_lock);
  return e != NULL ? EMU_SUCCESS : EMU_INVALID_HANDLE;
}

static unsigned emu_stream_wait_event_rc(const void* stream, const void* event,
                                         unsigned flags, int current_device) {
  if (flags != 0) return EMU_INVALID_VALUE;
  struct EmuStream* s = NULL;
  unsigned rc = emu_any_stream_rc(stream, current_device, &s);
  if (rc != EMU_SUCCESS) return rc;
  pthread_mutex_lock(&emu_lock);
  struct EmuEvent* e = emu_event_lookup_locked(event);
  if (e == NULL) {
    rc = EMU_INVALID_HANDLE;
  } else if (emu_stream_wait_event_locked(s, e) != 0) {
    rc = EMU_OUT_OF_MEMORY;
  }
  pthread_mutex_unlock(&emu_lock);
  return rc;
}

/* ---- the test controls (not part of any driver API): <EMU_PREFIX>_fail, ...
 * ------------ */

#define EMU_CONTROL_NAME_(prefix, name) prefix##_##name
#define EMU_CONTROL_NAME(prefix, name) EMU_CONTROL_NAME_(prefix, name)
#define EMU_CONTROL(name) EMU_CONTROL_NAME(EMU_PREFIX, name)

EMU_EXPORT void EMU_CONTROL(fail)(const char* name, int64_t nth, unsigned code) {
  emu_fail(name, nth, code);
}
EMU_EXPORT void EMU_CONTROL(clear_failures)(void) { emu_clear_failures(); }
EMU_EXPORT int64_t EMU_CONTROL(calls)(const char* name) { return emu_calls(name); }
EMU_EXPORT int EMU_CONTROL(gate_close)(void* stream) { return emu_gate_close(stream); }
EMU_EXPORT void EMU_CONTROL(gates_open)(void) { emu_gates_open(); }
EMU_EXPORT int64_t EMU_CONTROL(stream_pending)(void* stream) {
  return emu_stream_pending(stream);
}
EMU_EXPORT int64_t EMU_CONTROL(live_allocations)(void) { return emu_live(0); }
EMU_EXPORT int64_t EMU_CONTROL(live_streams)(void) { return emu_live(1); }
EMU_EXPORT int64_t EMU_CONTROL(live_events)(void) { return emu_live(2); }
/* 1 when the event (a CUevent or hipEvent_t, not a pointer to one) has
 * completed, 0 when pending, -1 for an unknown handle. */
EMU_EXPORT int EMU_CONTROL(event_done)(void* event) {
  pthread_mutex_lock(&emu_lock);
  struct EmuEvent* e = emu_event_lookup_locked(event);
  int done = e == NULL ? -1 : emu_event_done_locked(e);
  pthread_mutex_unlock(&emu_lock);
  return done;
}
/* Pointer queries about `pointer`'s allocation report this memory type
 * and managed flag from now on (-1: the truth). */
EMU_EXPORT int EMU_CONTROL(override_report)(const void* pointer, int type, int managed) {
  return emu_override_report(pointer, type, managed);
}
/* The device the emulation recorded for a pointer (-1: unknown). */
EMU_EXPORT int EMU_CONTROL(pointer_device)(const void* pointer) {
  struct EmuAllocation a;
  return emu_lookup(pointer, &a) == 0 ? a.device : -1;
}

#endif  // FERRY_TESTS_GPU_EMU_CORE_H
