// The per-thread "last failure" message of the Go plugin's entry points.
// Entry points run on the caller's thread (a cgo callback stays on the thread
// that called it), so a per-thread buffer is exactly "the last failure on
// this thread", whichever goroutine served the call.
//
// The buffer hangs off a pthread key, not a __thread array: a Go c-shared
// library's whole TLS segment is static TLS (Go's runtime uses the
// initial-exec model), and dlopen has only a small static TLS surplus
// (about 1.6 KB with glibc), which the async layer's own thread-locals
// (libferry_it_async.a) already use most of.
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define MESSAGE_SIZE 1024

static pthread_key_t key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static int key_ok;

static void make_key(void) { key_ok = pthread_key_create(&key, free) == 0; }

// This thread's buffer (made on first use; freed when the thread exits), or
// NULL when out of memory.
static char* buffer(int create) {
  pthread_once(&key_once, make_key);
  if (!key_ok) return NULL;
  char* b = pthread_getspecific(key);
  if (b == NULL && create) {
    b = calloc(1, MESSAGE_SIZE);
    if (b != NULL && pthread_setspecific(key, b) != 0) {
      free(b);
      b = NULL;
    }
  }
  return b;
}

/* Records the message of a failed entry point on the calling thread. */
__attribute__((visibility("hidden"))) void ferry_go_it_set_last_error(const char* message,
                                                                      size_t length) {
  char* b = buffer(1);
  if (b == NULL) return;
  if (length >= MESSAGE_SIZE) length = MESSAGE_SIZE - 1;
  if (message != NULL && length > 0) memcpy(b, message, length);
  b[message == NULL ? 0 : length] = '\0';
}

/* Returns the message of the last failure on this thread ("" when none),
 * owned by the plugin and valid until the next entry point call here. */
__attribute__((visibility("default"))) const char* ferry_it_last_error(void) {
  const char* b = buffer(0);
  return b == NULL ? "" : b;
}
