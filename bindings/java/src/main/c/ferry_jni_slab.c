/* ferry_jni_slab.c: the slot allocator behind ferry_jni_slab.h.
 *
 * Hot path: a per-thread cache of free slots (a singly linked list threaded
 * through the free slots), so allocating and freeing take no lock and no
 * atomic instruction. The cache exchanges batches with a global list under a
 * mutex when it runs empty or grows past a cap; a new chunk is carved when
 * the global list is empty too. A thread's cache goes back to the global list
 * when the thread exits (pthread_key destructor), so slots of exited threads
 * are reused. Chunks are never freed: Java holds ByteBuffer views of them.
 */
#include "ferry_jni_slab.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* How a free slot is linked (overlays the slot's released array). */
struct ferry_jni_free_slot {
  struct ferry_jni_free_slot* next;
  int64_t id;
};

enum { FERRY_JNI_CACHE_CAP = 128, FERRY_JNI_BATCH = 64 };

struct ferry_jni_slot_cache {
  struct ferry_jni_free_slot* head;
  int count;
  int registered; /* the exit destructor is set for this thread */
};

static _Thread_local struct ferry_jni_slot_cache t_cache;

static pthread_mutex_t g_slab_mutex = PTHREAD_MUTEX_INITIALIZER;
static struct ferry_jni_free_slot* g_free_head; /* guarded by g_slab_mutex */
static int32_t g_chunk_count;                   /* guarded by g_slab_mutex */
static _Atomic(void*) g_chunks[FERRY_JNI_MAX_CHUNKS];

static pthread_once_t g_key_once = PTHREAD_ONCE_INIT;
static pthread_key_t g_cache_key;

/* Moves every slot of a list to the global list. */
static void ferry_jni_slab_give_back(struct ferry_jni_free_slot* head) {
  if (head == NULL) return;
  struct ferry_jni_free_slot* tail = head;
  while (tail->next != NULL) tail = tail->next;
  pthread_mutex_lock(&g_slab_mutex);
  tail->next = g_free_head;
  g_free_head = head;
  pthread_mutex_unlock(&g_slab_mutex);
}

/* Thread exit: the cache's slots go back to the global list. The value is
 * the cache itself, still valid while the destructor runs. */
static void ferry_jni_slab_thread_exit(void* cache) {
  struct ferry_jni_slot_cache* c = cache;
  struct ferry_jni_free_slot* head = c->head;
  c->head = NULL;
  c->count = 0;
  ferry_jni_slab_give_back(head);
}

static void ferry_jni_slab_make_key(void) {
  pthread_key_create(&g_cache_key, ferry_jni_slab_thread_exit);
}

/* Carves a new chunk into the global list; 0 when out of memory or chunks.
 * Called with g_slab_mutex held. */
static int ferry_jni_slab_grow_locked(void) {
  if (g_chunk_count >= FERRY_JNI_MAX_CHUNKS) return 0;
  size_t size = (size_t)FERRY_JNI_SLOTS_PER_CHUNK * FERRY_JNI_SLOT_SIZE;
  char* chunk = aligned_alloc(64, size);
  if (chunk == NULL) return 0;
  memset(chunk, 0, size);
  int32_t index = g_chunk_count;
  /* Link the slots in address order, in front of the (empty) global list. */
  for (int i = FERRY_JNI_SLOTS_PER_CHUNK - 1; i >= 0; i--) {
    struct ferry_jni_free_slot* slot =
        (struct ferry_jni_free_slot*)(chunk + (size_t)i * FERRY_JNI_SLOT_SIZE);
    slot->id = (int64_t)index * FERRY_JNI_SLOTS_PER_CHUNK + i;
    slot->next = g_free_head;
    g_free_head = slot;
  }
  atomic_store_explicit(&g_chunks[index], chunk, memory_order_release);
  g_chunk_count = index + 1;
  return 1;
}

/* Makes the thread's exit hand its cache back (once per thread). */
static void ferry_jni_slab_register(struct ferry_jni_slot_cache* c) {
  pthread_once(&g_key_once, ferry_jni_slab_make_key);
  pthread_setspecific(g_cache_key, c);
  c->registered = 1;
}

/* Refills the empty cache with up to a batch from the global list. */
static int ferry_jni_slab_refill(struct ferry_jni_slot_cache* c) {
  if (!c->registered) ferry_jni_slab_register(c);
  pthread_mutex_lock(&g_slab_mutex);
  if (g_free_head == NULL && !ferry_jni_slab_grow_locked()) {
    pthread_mutex_unlock(&g_slab_mutex);
    return 0;
  }
  for (int i = 0; i < FERRY_JNI_BATCH && g_free_head != NULL; i++) {
    struct ferry_jni_free_slot* slot = g_free_head;
    g_free_head = slot->next;
    slot->next = c->head;
    c->head = slot;
    c->count++;
  }
  pthread_mutex_unlock(&g_slab_mutex);
  return 1;
}

struct ferry_jni_slot* ferry_jni_slot_alloc(int64_t* id) {
  struct ferry_jni_slot_cache* c = &t_cache;
  if (c->head == NULL && !ferry_jni_slab_refill(c)) return NULL;
  struct ferry_jni_free_slot* free_slot = c->head;
  c->head = free_slot->next;
  c->count--;
  *id = free_slot->id;
  struct ferry_jni_slot* slot = (struct ferry_jni_slot*)free_slot;
  /* The link overlays array.length and null_count; release must read NULL. */
  slot->array.array.release = NULL;
  /* Remember the id in the slot, for the free path. */
  slot->info[FERRY_JNI_INFO_SLOT_ID] = *id;
  return slot;
}

void ferry_jni_slot_free(struct ferry_jni_slot* slot) {
  if (slot == NULL) return;
  struct ferry_jni_slot_cache* c = &t_cache;
  if (!c->registered) ferry_jni_slab_register(c);
  int64_t id = slot->info[FERRY_JNI_INFO_SLOT_ID];
  struct ferry_jni_free_slot* free_slot = (struct ferry_jni_free_slot*)slot;
  free_slot->id = id;
  free_slot->next = c->head;
  c->head = free_slot;
  c->count++;
  if (c->count > FERRY_JNI_CACHE_CAP) {
    /* Hand a batch back so one thread freeing what others allocate does not
     * hoard slots. */
    struct ferry_jni_free_slot* batch = c->head;
    struct ferry_jni_free_slot* last = batch;
    for (int i = 1; i < FERRY_JNI_BATCH; i++) last = last->next;
    c->head = last->next;
    c->count -= FERRY_JNI_BATCH;
    last->next = NULL;
    ferry_jni_slab_give_back(batch);
  }
}

void* ferry_jni_slab_chunk_base(int32_t chunk) {
  if (chunk < 0 || chunk >= FERRY_JNI_MAX_CHUNKS) return NULL;
  return atomic_load_explicit(&g_chunks[chunk], memory_order_acquire);
}
