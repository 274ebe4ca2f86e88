/* The opt-in leak report: with FERRY_LEAK_REPORT set (non-empty, not "0"),
 * ferry keeps a registry of its producer helpers' live exports and of the
 * objects bindings track, and prints what is still live to stderr when the
 * library is unloaded (process exit). See leak.h. */
#include "leak.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

_Atomic int ferry__leak_flag = -1;

static pthread_once_t ferry_leak_once = PTHREAD_ONCE_INIT;

static void ferry_leak_read_environment(void) {
  const char* value = getenv("FERRY_LEAK_REPORT");
  int on = value != NULL && value[0] != '\0' && strcmp(value, "0") != 0;
  atomic_store_explicit(&ferry__leak_flag, on, memory_order_relaxed);
}

int ferry__leak_enabled_slow(void) {
  pthread_once(&ferry_leak_once, ferry_leak_read_environment);
  return atomic_load_explicit(&ferry__leak_flag, memory_order_relaxed);
}

/* ---- The registry -------------------------------------------------------- */

/* One live thing: kept in a hash bucket (for removal by key) and in a list in
 * creation order (for the report). */
struct FerryLeakRecord {
  uintptr_t key;
  char* runtime; /* NULL for the core's own exports */
  char* description;
  struct FerryLeakRecord* bucket_next;
  struct FerryLeakRecord* prev;
  struct FerryLeakRecord* next;
};

#define FERRY_LEAK_BUCKETS 1024

struct FerryLeakTable {
  struct FerryLeakRecord* buckets[FERRY_LEAK_BUCKETS];
  struct FerryLeakRecord* head;
  struct FerryLeakRecord* tail;
  int64_t count;
};

static pthread_mutex_t ferry_leak_lock = PTHREAD_MUTEX_INITIALIZER;
static struct FerryLeakTable ferry_leak_exports;
static struct FerryLeakTable ferry_leak_tracked;
static _Atomic int64_t ferry_leak_next_token = 1;

static size_t ferry_leak_bucket(uintptr_t key) {
  /* Fibonacci hashing: private blocks are aligned, tokens sequential. */
  return (size_t)(((uint64_t)key * UINT64_C(0x9E3779B97F4A7C15)) >> 54) %
         FERRY_LEAK_BUCKETS;
}

/* Both under ferry_leak_lock. */
static void ferry_leak_table_insert(struct FerryLeakTable* table,
                                    struct FerryLeakRecord* record) {
  size_t b = ferry_leak_bucket(record->key);
  record->bucket_next = table->buckets[b];
  table->buckets[b] = record;
  record->next = NULL;
  record->prev = table->tail;
  if (table->tail != NULL) table->tail->next = record;
  else table->head = record;
  table->tail = record;
  table->count++;
}

static struct FerryLeakRecord* ferry_leak_table_take(struct FerryLeakTable* table,
                                                     uintptr_t key) {
  size_t b = ferry_leak_bucket(key);
  struct FerryLeakRecord** link = &table->buckets[b];
  while (*link != NULL && (*link)->key != key) link = &(*link)->bucket_next;
  struct FerryLeakRecord* record = *link;
  if (record == NULL) return NULL;
  *link = record->bucket_next;
  if (record->prev != NULL) record->prev->next = record->next;
  else table->head = record->next;
  if (record->next != NULL) record->next->prev = record->prev;
  else table->tail = record->prev;
  table->count--;
  return record;
}

static struct FerryLeakRecord* ferry_leak_table_find(struct FerryLeakTable* table,
                                                     uintptr_t key) {
  struct FerryLeakRecord* record = table->buckets[ferry_leak_bucket(key)];
  while (record != NULL && record->key != key) record = record->bucket_next;
  return record;
}

static void ferry_leak_record_free(struct FerryLeakRecord* record) {
  if (record == NULL) return;
  free(record->runtime);
  free(record->description);
  free(record);
}

static char* ferry_leak_strdup(const char* s) {
  if (s == NULL) s = "";
  size_t n = strlen(s) + 1;
  char* copy = (char*)malloc(n);
  if (copy != NULL) memcpy(copy, s, n);
  return copy;
}

/* ---- Exports made by the producer helpers ------------------------------- */

void ferry__leak_export_add(const void* key, const char* fmt, ...) {
  char text[256];
  va_list args;
  va_start(args, fmt);
  vsnprintf(text, sizeof(text), fmt, args);
  va_end(args);
  struct FerryLeakRecord* record =
      (struct FerryLeakRecord*)calloc(1, sizeof(struct FerryLeakRecord));
  if (record == NULL) return;
  record->key = (uintptr_t)key;
  record->description = ferry_leak_strdup(text);
  if (record->description == NULL) {
    free(record);
    return;
  }
  pthread_mutex_lock(&ferry_leak_lock);
  ferry_leak_table_insert(&ferry_leak_exports, record);
  pthread_mutex_unlock(&ferry_leak_lock);
}

void ferry__leak_export_note_device(const void* key, ArrowDeviceType device_type,
                                    int64_t device_id) {
  pthread_mutex_lock(&ferry_leak_lock);
  struct FerryLeakRecord* record = ferry_leak_table_find(&ferry_leak_exports,
                                                         (uintptr_t)key);
  if (record != NULL) {
    char text[320];
    snprintf(text, sizeof(text), "%s on %s:%lld", record->description,
             ferry_device_type_name(device_type), (long long)device_id);
    char* copy = ferry_leak_strdup(text);
    if (copy != NULL) {
      free(record->description);
      record->description = copy;
    }
  }
  pthread_mutex_unlock(&ferry_leak_lock);
}

void ferry__leak_export_remove(const void* key) {
  pthread_mutex_lock(&ferry_leak_lock);
  struct FerryLeakRecord* record = ferry_leak_table_take(&ferry_leak_exports,
                                                         (uintptr_t)key);
  pthread_mutex_unlock(&ferry_leak_lock);
  ferry_leak_record_free(record);
}

/* ---- Objects tracked by bindings ------------------------------------------ */

/* Registers a copy of `runtime` and `description` (both borrowed) and
 * returns its token; 0 (nothing registered) when the report is off or out
 * of memory. */
int64_t ferry_leak_track(const char* runtime, const char* description) {
  if (!ferry__leak_enabled()) return 0;
  struct FerryLeakRecord* record =
      (struct FerryLeakRecord*)calloc(1, sizeof(struct FerryLeakRecord));
  if (record == NULL) return 0;
  record->runtime = ferry_leak_strdup(runtime);
  record->description = ferry_leak_strdup(description);
  if (record->runtime == NULL || record->description == NULL) {
    ferry_leak_record_free(record);
    return 0;
  }
  int64_t token = atomic_fetch_add_explicit(&ferry_leak_next_token, 1,
                                            memory_order_relaxed);
  record->key = (uintptr_t)token;
  pthread_mutex_lock(&ferry_leak_lock);
  ferry_leak_table_insert(&ferry_leak_tracked, record);
  pthread_mutex_unlock(&ferry_leak_lock);
  return token;
}

/* Forgets the object of `token` and frees ferry's copies; 0 and unknown
 * tokens are no-ops. */
void ferry_leak_untrack(int64_t token) {
  if (token <= 0 || !ferry__leak_enabled()) return;
  pthread_mutex_lock(&ferry_leak_lock);
  struct FerryLeakRecord* record = ferry_leak_table_take(&ferry_leak_tracked,
                                                         (uintptr_t)token);
  pthread_mutex_unlock(&ferry_leak_lock);
  ferry_leak_record_free(record);
}

/* ---- The report ------------------------------------------------------------ */

static void ferry_leak_table_clear(struct FerryLeakTable* table) {
  struct FerryLeakRecord* record = table->head;
  while (record != NULL) {
    struct FerryLeakRecord* next = record->next;
    ferry_leak_record_free(record);
    record = next;
  }
  memset(table, 0, sizeof(*table));
}

/* Set once the report is out: it is printed once per process. */
static int ferry_leak_reported;

/* Prints the report (when on and not printed yet) and returns the number of
 * live things it named. */
int64_t ferry_leak_report(void) {
  if (atomic_load_explicit(&ferry__leak_flag, memory_order_relaxed) < 0) {
    /* Nothing asked yet: read the variable now, so that a process that
     * never exported still says it is clean. */
    ferry__leak_enabled_slow();
  }
  if (atomic_load_explicit(&ferry__leak_flag, memory_order_relaxed) != 1) return 0;
  pthread_mutex_lock(&ferry_leak_lock);
  if (ferry_leak_reported) {
    pthread_mutex_unlock(&ferry_leak_lock);
    return 0;
  }
  ferry_leak_reported = 1;
  int64_t n_exports = ferry_leak_exports.count;
  int64_t n_tracked = ferry_leak_tracked.count;
  for (struct FerryLeakRecord* r = ferry_leak_exports.head; r != NULL; r = r->next) {
    fprintf(stderr, "ferry: leak: core: export never released: %s\n", r->description);
  }
  for (struct FerryLeakRecord* r = ferry_leak_tracked.head; r != NULL; r = r->next) {
    fprintf(stderr, "ferry: leak: %s: %s\n", r->runtime, r->description);
  }
  if (n_exports == 0 && n_tracked == 0) {
    fprintf(stderr, "ferry: leak report: nothing live\n");
  } else {
    fprintf(stderr,
            "ferry: leak report: %lld export(s) never released, %lld tracked "
            "object(s) never closed\n",
            (long long)n_exports, (long long)n_tracked);
  }
  fflush(stderr);
  ferry_leak_table_clear(&ferry_leak_exports);
  ferry_leak_table_clear(&ferry_leak_tracked);
  pthread_mutex_unlock(&ferry_leak_lock);
  return n_exports + n_tracked;
}

/* Runs when libferry is unloaded: at process exit after main returns or
 * exit() is called (after the language runtimes' own shutdown, which is
 * when their finalizers release what they still hold), or at dlclose. */
__attribute__((destructor)) static void ferry_leak_report_at_unload(void) {
  ferry_leak_report();
}
