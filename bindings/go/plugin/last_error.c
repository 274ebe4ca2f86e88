// The per-thread "last failure" message of the Go plugin's entry points.
// Entry points run on the caller's thread (a cgo callback stays on the thread
// that called it), so a C thread-local is exactly "the last failure on this
// thread", whichever goroutine served the call.
#include <stddef.h>
#include <string.h>

#define MESSAGE_SIZE 1024

static __thread char last_error[MESSAGE_SIZE];

/* Records the message of a failed entry point on the calling thread. */
__attribute__((visibility("hidden"))) void ferry_go_it_set_last_error(const char* message,
                                                                      size_t length) {
  if (length >= MESSAGE_SIZE) length = MESSAGE_SIZE - 1;
  if (message != NULL && length > 0) memcpy(last_error, message, length);
  last_error[message == NULL ? 0 : length] = '\0';
}

/* Returns the message of the last failure on this thread ("" when none),
 * owned by the plugin and valid until the next entry point call here. */
__attribute__((visibility("default"))) const char* ferry_it_last_error(void) {
  return last_error;
}
