/* Allocation counting and last-error storage of the C test plugin. */
#include "plugin_state.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Hosts compare this counter before and after every case of the matrix, from
 * any thread, so it is atomic. */
static _Atomic int64_t live_allocations;

/* One message per thread: two hosts' threads checking cases concurrently must
 * not see each other's failures. */
static _Thread_local char last_error[FERRY_ERROR_MESSAGE_SIZE];

void* it_alloc(size_t size) {
  void* ptr = calloc(1, size == 0 ? 1 : size);
  if (ptr != NULL) atomic_fetch_add(&live_allocations, 1);
  return ptr;
}

void it_free(void* ptr) {
  if (ptr == NULL) return;
  free(ptr);
  atomic_fetch_sub(&live_allocations, 1);
}

void it_count_allocations(int64_t delta) { atomic_fetch_add(&live_allocations, delta); }

int64_t it_live_allocations(void) { return atomic_load(&live_allocations); }

int it_error(struct FerryError* error, int code, const char* fmt, ...) {
  if (error != NULL) {
    va_list args;
    va_start(args, fmt);
    vsnprintf(error->message, sizeof(error->message), fmt, args);
    va_end(args);
  }
  return code;
}

int it_error_prefix(struct FerryError* error, int code, const char* prefix) {
  if (error == NULL) return code;
  /* Built by hand: the combined message may be truncated on purpose. */
  char combined[FERRY_ERROR_MESSAGE_SIZE];
  size_t used = 0;
  const char* parts[3] = {prefix, ": ", error->message};
  for (int p = 0; p < 3; p++) {
    for (const char* c = parts[p]; *c != '\0' && used + 1 < sizeof(combined); c++) {
      combined[used++] = *c;
    }
  }
  combined[used] = '\0';
  memcpy(error->message, combined, used + 1);
  return code;
}

int it_set_last_error(int code, const char* message) {
  snprintf(last_error, sizeof(last_error), "%s", message == NULL ? "" : message);
  return code;
}

const char* it_last_error(void) { return last_error; }
