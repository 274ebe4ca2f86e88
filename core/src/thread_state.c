/* The per-thread state of the export hot path: registration, retirement at
 * thread exit and unload, and the process-wide reader (see thread_state.h). */
#include "thread_state.h"

#include <pthread.h>
#include <stdlib.h>

#include "ferry/ferry.h"
#include "leak.h"

_Thread_local struct FerryThreadState ferry__thread_state
    __attribute__((tls_model("initial-exec")));
static pthread_mutex_t ferry_threads_lock = PTHREAD_MUTEX_INITIALIZER;
static struct FerryThreadState* ferry_threads;
/* Counts of exited threads, and of any thread that could not register. */
static _Atomic int64_t ferry_live_unattributed;
static pthread_key_t ferry_thread_key;
static pthread_once_t ferry_thread_key_once = PTHREAD_ONCE_INIT;
static int ferry_thread_key_ok;

static void ferry_thread_state_retire(void* arg) {
  struct FerryThreadState* state = (struct FerryThreadState*)arg;
  pthread_mutex_lock(&ferry_threads_lock);
  if (state->registered) {
    atomic_fetch_add_explicit(&ferry_live_unattributed,
                              atomic_load_explicit(&state->live, memory_order_relaxed),
                              memory_order_relaxed);
    atomic_store_explicit(&state->live, 0, memory_order_relaxed);
    if (state->prev != NULL) state->prev->next = state->next;
    if (state->next != NULL) state->next->prev = state->prev;
    if (ferry_threads == state) ferry_threads = state->next;
    state->next = state->prev = NULL;
    /* A later use (say from another key's destructor) registers again, so
     * glibc runs this destructor once more instead of leaking. */
    state->registered = 0;
  }
  pthread_mutex_unlock(&ferry_threads_lock);
  while (state->free_head != NULL) {
    void* block = state->free_head;
    state->free_head = *(void**)block;
    free(block);
  }
  state->free_room = 0;
}

static void ferry_thread_key_create(void) {
  ferry_thread_key_ok =
      pthread_key_create(&ferry_thread_key, ferry_thread_state_retire) == 0;
}

__attribute__((noinline)) int ferry__thread_state_register(struct FerryThreadState* state) {
  pthread_once(&ferry_thread_key_once, ferry_thread_key_create);
  if (!ferry_thread_key_ok || pthread_setspecific(ferry_thread_key, state) != 0) return 0;
  pthread_mutex_lock(&ferry_threads_lock);
  state->prev = NULL;
  state->next = ferry_threads;
  if (ferry_threads != NULL) ferry_threads->prev = state;
  ferry_threads = state;
  state->registered = 1;
  pthread_mutex_unlock(&ferry_threads_lock);
  /* The list is empty here: retiring emptied it, and nothing is cached on
   * an unregistered thread. */
  /* With the leak report on, blocks are never recycled: every export then
   * takes the general path, which records it, and the export fast path
   * needs no test of its own. */
  state->free_room = ferry__leak_enabled() ? 0 : FERRY_FREE_LIST_MAX;
  return 1;
}

void ferry__live_add_unattributed(int64_t delta) {
  atomic_fetch_add_explicit(&ferry_live_unattributed, delta, memory_order_relaxed);
}

/* Returns the process-wide number of live ferry-made exports: exact when no
 * other thread is exporting or releasing at the same moment. */
int64_t ferry_live_exports(void) {
  pthread_mutex_lock(&ferry_threads_lock);
  int64_t total = atomic_load_explicit(&ferry_live_unattributed, memory_order_relaxed);
  for (struct FerryThreadState* s = ferry_threads; s != NULL; s = s->next) {
    total += atomic_load_explicit(&s->live, memory_order_relaxed);
  }
  pthread_mutex_unlock(&ferry_threads_lock);
  return total;
}

void* ferry__small_block_alloc(size_t size) {
  struct FerryThreadState* state = &ferry__thread_state;
  void* block = state->free_head;
  if (block != NULL) {
    state->free_head = *(void**)block;
    state->free_room++;
    return block;
  }
  return malloc(size);
}

/* The exiting (or dlclose-ing) thread is not covered by the key destructor;
 * deleting the key keeps a later thread exit from calling into unloaded
 * code (other threads' lists are then left to the OS). */
__attribute__((destructor)) static void ferry_thread_state_unload(void) {
  ferry_thread_state_retire(&ferry__thread_state);
  if (ferry_thread_key_ok) {
    pthread_key_delete(ferry_thread_key);
    ferry_thread_key_ok = 0;
  }
}
