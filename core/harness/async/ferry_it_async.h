/* ferry_it_async: the three async entry points of ferry/ferry_it.h
 * (ferry_it_export_async, ferry_it_check_async, ferry_it_async_result) for
 * ANY runtime's test plugin, built from that plugin's synchronous stream
 * entry points. Test infrastructure: the static archive `ferry_it_async`
 * (CMake target of core/harness, position independent, symbols hidden, at
 * build/lib/libferry_it_async.a), linked into plugins, the matrix host and
 * the `ferry` tool; never installed, never part of libferry.
 *
 * A plugin implements its async entry points in a few lines:
 *
 *   int ferry_it_export_async(const char* spec, struct ArrowAsyncDeviceStreamHandler* h)
 * { int rc = ferry_it_async_export_generic(spec, h, ferry_it_export_stream,
 *                                            ferry_it_last_error, 0);
 *     if (rc != 0) my_set_last_error(ferry_it_async_last_error());
 *     return rc;
 *   }
 *   int ferry_it_check_async(const char* spec, struct ArrowAsyncDeviceStreamHandler* h,
 *                            void** ticket) {
 *     int rc = ferry_it_async_check_generic(spec, h, ticket, ferry_it_check_stream,
 *                                           ferry_it_last_error);
 *     if (rc != 0) my_set_last_error(ferry_it_async_last_error());
 *     return rc;
 *   }
 *   int ferry_it_async_result(void* ticket, int64_t timeout_ms) {
 *     int rc = ferry_it_async_result_generic(ticket, timeout_ms);
 *     if (rc != 0) my_set_last_error(ferry_it_async_last_error());
 *     return rc;
 *   }
 *
 * Merging the last error: each generic function stores its failure message
 * in a per-thread buffer of this layer (ferry_it_async_last_error); the
 * plugin copies it into its own per-thread last error when the generic call
 * returns non-zero (as above), so its ferry_it_last_error keeps answering
 * for every entry point. ETIMEDOUT from the result is a failure too.
 *
 * The producer (export): the runtime's stream is exported synchronously,
 * then pushed by the core's ferry_async_export_stream on a thread ferry
 * starts (get_schema/get_next are called on that thread). With `eager` the
 * schema and every batch (or the injected failure) are read on the calling
 * thread first, and the producer thread pushes them without calling into the
 * runtime again (only the batches' own release callbacks run later, on the
 * consumer's threads): for single-threaded runtimes such as Lua.
 *
 * The checking consumer (check + result): a strict handler that verifies
 * what shared/cases.md lists for a checking consumer: on_schema first and
 * once, handler->producer set with the case's device type, no task beyond
 * the requests, no two handler callbacks overlapping in time, no callback
 * from within request (re-entry), the end marker or the injected error
 * exactly where the case puts it, nothing after release, release exactly
 * once; request(window) from inside on_schema, one request per checked
 * batch (some from inside on_next_task), cancel=N and fail=consumer@N as
 * the case says. The batches travel, as an ArrowDeviceArrayStream built over
 * the handler's queue, to the runtime's own check_stream, called on a thread
 * this layer starts, with the case rewritten to exactly the batches that
 * should arrive (cancel=N: batches=N; fail=consumer@N: batches=N-1);
 * fail=export and fail=get_schema are judged by this layer alone, from
 * on_error with the exact message. The result waits at most timeout_ms.
 *
 * Threads: every function may be called from any thread; tickets are
 * independent of each other. */
#ifndef FERRY_IT_ASYNC_H
#define FERRY_IT_ASYNC_H

#include <stdint.h>

#include "ferry/ferry_it.h"

#ifdef __cplusplus
extern "C" {
#endif

/** ferry_it_export_async over `export_stream` (the runtime's
 *  ferry_it_export_stream) and `last_error` (its ferry_it_last_error).
 *  Borrows `case_spec` for the call and `handler` until it releases it.
 *  Returns 0 when production started; otherwise the handler has already
 *  been failed (on_error(rc, message), then release) and the message is in
 *  ferry_it_async_last_error(). A NULL handler is EINVAL (nothing to
 *  release). */
int ferry_it_async_export_generic(const char* case_spec,
                                  struct ArrowAsyncDeviceStreamHandler* handler,
                                  ferry_it_export_stream_fn export_stream,
                                  ferry_it_last_error_fn last_error, int eager);

/** ferry_it_check_async over `check_stream` (the runtime's
 *  ferry_it_check_stream, called on a thread of this layer) and
 *  `last_error`. Fills `*handler_out` (owned by the caller, valid until the
 *  ticket's result is in) and returns a ticket owned by this layer until
 *  ferry_it_async_result_generic frees it. On failure (a bad case: EINVAL)
 *  `*ticket_out` is NULL and nothing was allocated. */
int ferry_it_async_check_generic(const char* case_spec,
                                 struct ArrowAsyncDeviceStreamHandler* handler_out,
                                 void** ticket_out, ferry_it_check_stream_fn check_stream,
                                 ferry_it_last_error_fn last_error);

/** ferry_it_async_result for a ticket of ferry_it_async_check_generic:
 *  waits at most `timeout_ms` for the producer's release and the checker
 *  thread, then returns the verdict (0, or an errno code with the message in
 *  ferry_it_async_last_error()) and frees the ticket. ETIMEDOUT keeps the
 *  ticket (a later call may still collect it). */
int ferry_it_async_result_generic(void* ticket, int64_t timeout_ms);

/** The message of the last failing call of this layer on the calling thread
 *  ("" when none); a thread-local buffer, valid until this thread's next
 *  call of this layer. */
const char* ferry_it_async_last_error(void);

#ifdef __cplusplus
}
#endif

#endif  // FERRY_IT_ASYNC_H
