// The Go plugin's async entry points (ferry_it_export_async,
// ferry_it_check_async, ferry_it_async_result of ferry/ferry_it.h): the
// harness's generic layer (core/harness/async/ferry_it_async.h, the static
// archive libferry_it_async.a that build_plugin.sh links in) over this
// plugin's synchronous stream entry points, which are Go functions; the
// layer calls them from its own C threads, which cgo allows. Each failure's
// message is copied into the plugin's per-thread last error, so
// ferry_it_last_error answers for these entry points too.
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "_cgo_export.h"
#include "ferry/ferry.h"

// From ferry/ferry_it.h and core/harness/async/ferry_it_async.h (neither is
// inside this Go module; the archive is linked by build_plugin.sh only).
typedef int (*ferry_it_export_stream_fn)(const char*, struct ArrowDeviceArrayStream*);
typedef int (*ferry_it_check_stream_fn)(const char*, struct ArrowDeviceArrayStream*);
typedef const char* (*ferry_it_last_error_fn)(void);
int ferry_it_async_export_generic(const char* case_spec,
                                  struct ArrowAsyncDeviceStreamHandler* handler,
                                  ferry_it_export_stream_fn export_stream,
                                  ferry_it_last_error_fn last_error, int eager);
int ferry_it_async_check_generic(const char* case_spec,
                                 struct ArrowAsyncDeviceStreamHandler* handler_out,
                                 void** ticket_out, ferry_it_check_stream_fn check_stream,
                                 ferry_it_last_error_fn last_error);
int ferry_it_async_result_generic(void* ticket, int64_t timeout_ms);
const char* ferry_it_async_last_error(void);

void ferry_go_it_set_last_error(const char* message, size_t length);
const char* ferry_it_last_error(void);

// The Go entry points take char* (cgo's spelling); the layer's function
// types take const char*: these adapters keep the types exact.
static int go_export_stream(const char* spec, struct ArrowDeviceArrayStream* out) {
  return ferry_it_export_stream((char*)spec, out);
}

static int go_check_stream(const char* spec, struct ArrowDeviceArrayStream* stream) {
  return ferry_it_check_stream((char*)spec, stream);
}

// Copies the layer's message of a failed call into the plugin's last error.
static int merged(int rc) {
  if (rc != 0) {
    const char* message = ferry_it_async_last_error();
    ferry_go_it_set_last_error(message, message == NULL ? 0 : strlen(message));
  }
  return rc;
}

// Goroutines serve the producer's stream on ferry's thread (eager 0): Go is
// multi-threaded, so the stream is pulled as the consumer asks.
__attribute__((visibility("default"))) int ferry_it_export_async(
    const char* case_spec, struct ArrowAsyncDeviceStreamHandler* handler) {
  return merged(ferry_it_async_export_generic(case_spec, handler, go_export_stream,
                                              ferry_it_last_error, 0));
}

__attribute__((visibility("default"))) int ferry_it_check_async(
    const char* case_spec, struct ArrowAsyncDeviceStreamHandler* handler, void** ticket) {
  return merged(ferry_it_async_check_generic(case_spec, handler, ticket, go_check_stream,
                                             ferry_it_last_error));
}

__attribute__((visibility("default"))) int ferry_it_async_result(void* ticket,
                                                                 int64_t timeout_ms) {
  return merged(ferry_it_async_result_generic(ticket, timeout_ms));
}
