/* ferry_it_bench.h: the benchmark entry points every test plugin exports
 * besides the six of ferry/ferry_it.h.
 *
 * They measure the handoff itself, not the test plugins' case building and
 * checking: each runtime implements them IN that runtime, through its
 * binding's ordinary API (what a user of that language would write), behind
 * the same boundary as its other entry points (C: a direct call; Rust: a
 * guarded extern "C" fn; Go: //export with recover; Java: C shim -> JNI
 * upcall; Lua: C shim -> lua_pcall). tests/integration/bench/bench.c times
 * them for every ordered pair of runtimes.
 *
 * The exported array is int32, no nulls, `length` elements, zero-copy from a
 * buffer the producing runtime allocated once per length and keeps cached;
 * every element holds `length` (truncated to int32), so a consumer can check
 * element 0 against the length it read. Releasing an export only drops a
 * reference to that buffer. Errors follow ferry_it.h: an errno code plus
 * ferry_it_last_error() on the calling thread; no exception, panic or Lua
 * error leaves these functions. */
#ifndef FERRY_IT_BENCH_H
#define FERRY_IT_BENCH_H

#include <stdint.h>

#include "ferry/ferry_it.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Returns x + 1, computed in the runtime: one crossing into it and back. */
FERRY_IT_EXPORT int64_t ferry_it_bench_noop(int64_t x);

/** Exports the cached int32 array of `length` elements (0 <= length <=
 *  2^28, EINVAL otherwise; ENOMEM when the buffer cannot be allocated) into
 *  the released `schema_out` and `array_out`; the caller owns both on
 *  success, both stay released on failure. */
FERRY_IT_EXPORT int ferry_it_bench_export_array(int64_t length,
                                                struct ArrowSchema* schema_out,
                                                struct ArrowDeviceArray* array_out);

/** Takes ownership of `schema` and `array` (on success and on failure),
 *  imports them through the binding's consumer API, reads the length and,
 *  when not empty, element 0 (EINVAL unless it equals the length), and
 *  releases both. */
FERRY_IT_EXPORT int ferry_it_bench_consume_array(struct ArrowSchema* schema,
                                                 struct ArrowDeviceArray* array);

/** Exports into the released `out` a CPU stream of `batches` batches, each
 *  the cached array of `length` elements, produced through the binding's
 *  stream-producer API; the caller owns the stream on success. */
FERRY_IT_EXPORT int ferry_it_bench_export_stream(int64_t length, int64_t batches,
                                                 struct ArrowDeviceArrayStream* out);

/** Takes ownership of `stream` and iterates it to the end through the
 *  binding's consumer API, reading each batch's length and element 0 (as
 *  above); releases every batch and the stream on every path. */
FERRY_IT_EXPORT int ferry_it_bench_consume_stream(struct ArrowDeviceArrayStream* stream);

/** Signatures, for hosts that load plugins with dlsym. */
typedef int64_t (*ferry_it_bench_noop_fn)(int64_t);
typedef int (*ferry_it_bench_export_array_fn)(int64_t, struct ArrowSchema*,
                                              struct ArrowDeviceArray*);
typedef int (*ferry_it_bench_consume_array_fn)(struct ArrowSchema*,
                                               struct ArrowDeviceArray*);
typedef int (*ferry_it_bench_export_stream_fn)(int64_t, int64_t,
                                               struct ArrowDeviceArrayStream*);
typedef int (*ferry_it_bench_consume_stream_fn)(struct ArrowDeviceArrayStream*);

/** The largest length the entry points accept: 1 GiB of int32. */
#define FERRY_IT_BENCH_MAX_LENGTH (INT64_C(1) << 28)

#ifdef __cplusplus
}
#endif

#endif  // FERRY_IT_BENCH_H
