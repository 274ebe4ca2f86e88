/* The per-thread state of the export hot path: each thread's count of live
 * ferry-made exports and its free list of small array blocks. Private to the
 * core (never installed); the export and release paths of producer.c use the
 * inline helpers below, ferry_live_exports (the public reader) and the slow
 * paths live in thread_state.c.
 *
 * Both are on the hot path of every export and release, so both are
 * per-thread and touched without locked instructions:
 * - The live-export count is the sum of per-thread counters (each written
 *   only by its own thread, with relaxed atomic stores so that readers on
 *   other threads are race-free) plus the total of exited threads. A
 *   process-wide lock xadd per export and per release cost ~5 ns per
 *   handoff; the reader (ferry_live_exports, a diagnostic) pays instead.
 * - Small array blocks (<= 3 buffers, no children) are recycled through a
 *   capped singly linked list, two loads and two stores instead of
 *   malloc + free. `free_room` is how many more blocks the list may take:
 *   the cap minus its length on a registered thread, 0 on a thread that is
 *   not registered (whose list nobody would free), so one test decides.
 * A thread registers on first use; a pthread key destructor folds its count
 * into the exited total and frees its list at thread exit, and the library
 * destructor does the same for the thread that exits the process or
 * unloads the library. */
#ifndef FERRY_SRC_THREAD_STATE_H
#define FERRY_SRC_THREAD_STATE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define FERRY_FREE_LIST_MAX 64

struct FerryThreadState {
  _Atomic int64_t live; /* exports minus releases on this thread */
  void* free_head;
  int32_t free_room; /* see above; > 0 implies registered */
  int32_t registered;
  struct FerryThreadState* next; /* in the registry, under its lock */
  struct FerryThreadState* prev;
};

/* initial-exec: a direct %fs-relative access instead of a __tls_get_addr
 * call per use (18 instructions each); the 48 bytes fit easily in glibc's
 * static TLS surplus even when libferry is dlopen'ed. */
extern _Thread_local struct FerryThreadState ferry__thread_state
    __attribute__((tls_model("initial-exec"), visibility("hidden")));

/* Slow path, once per thread: registers `state` (the calling thread's);
 * returns 0 when the thread cannot register (then the caller falls back to
 * ferry__live_add_unattributed and to malloc). */
int ferry__thread_state_register(struct FerryThreadState* state);

/* Adds `delta` to the count of threads that could not register. */
void ferry__live_add_unattributed(int64_t delta);

/* Adds `delta` to this registered thread's count: only this thread writes
 * it, so a plain load + store, no lock prefix. */
static inline void ferry__live_count_here(struct FerryThreadState* state, int64_t delta) {
  atomic_store_explicit(&state->live,
                        atomic_load_explicit(&state->live, memory_order_relaxed) + delta,
                        memory_order_relaxed);
}

/* Counts `delta` live exports on the calling thread (the hot-path form). */
static inline void ferry__live_add(int64_t delta) {
  struct FerryThreadState* state = &ferry__thread_state;
  if (__builtin_expect(!state->registered, 0) && !ferry__thread_state_register(state)) {
    ferry__live_add_unattributed(delta);
    return;
  }
  ferry__live_count_here(state, delta);
}

/* A recycled small block of this thread, else a new one of `size` bytes
 * (NULL when out of memory). */
void* ferry__small_block_alloc(size_t size);

/* Returns a small block to this thread's free list and uncounts its export;
 * the caller has checked that free_room > 0 (which implies the thread is
 * registered, so the live counter is this thread's too). */
static inline void ferry__small_block_recycle(struct FerryThreadState* state, void* block) {
  *(void**)block = state->free_head;
  state->free_head = block;
  state->free_room--;
  ferry__live_count_here(state, -1);
}

#endif  // FERRY_SRC_THREAD_STATE_H
