/* Test and benchmark helpers written in C: consumers on new pthreads, a C
 * producer at the floor, and C -> Go callback loops. Not part of the API. */
#ifndef FERRY_GO_CHELPER_H
#define FERRY_GO_CHELPER_H

#include <stdint.h>

#include "ferry/dlpack_abi.h"
#include "ferry/ferry.h"

/* Reads `stream` to its end with ferry_array_stream_get_next + release, on a new
 * pthread when `new_thread`; `*batches` counts the batches, `*elements` sums
 * their lengths, `*ns` is the time spent; `message` gets the failure text. */
int chelper_drain_stream(struct ArrowDeviceArrayStream* stream, int new_thread,
                         int64_t* batches, int64_t* elements, int64_t* ns,
                         char* message, int64_t message_size);

/* Fills `out` with an endless C stream of int32 arrays of `length` elements
 * over one static buffer; release only marks the array released (the floor). */
void chelper_endless_stream(struct ArrowDeviceArrayStream* out, int64_t length);

/* Moves `array` out, reads length and the first value, releases it: a C
 * consumer. Returns the first value. */
int32_t chelper_consume_array(struct ArrowDeviceArray* array);

/* Calls the trivial Go export chelperNoop `n` times, from a new pthread when
 * `new_thread`; returns the elapsed nanoseconds. */
int64_t chelper_call_go(int64_t n, int new_thread);

/* `n` C -> C handoffs (static fill, move, read, release): the C floor. */
int64_t chelper_c2c_handoffs(int64_t n);

/* A DLPack 1.x tensor made by C over `n` int64 values 0, 3, 6, ... (shape
 * {n} when `ndim` is 1, {1, n} when 2); its deleter frees it and counts. */
DLManagedTensorVersioned* chelper_dlpack_tensor(int64_t n, int32_t ndim);
/* How many chelper tensors were deleted so far. */
int64_t chelper_dlpack_deleted(void);

/* malloc/free for the Go -> C floor (chelper.GoToC); free is the export's
 * release hook. */
void* chelper_alloc(int64_t size);
void chelper_free(void* ptr);

/* Moves child `i` of the live `array` into the released `dst` (a CPU device
 * array) and returns the child's last buffer address. */
void* chelper_move_child_out(struct ArrowDeviceArray* array, int64_t i,
                             struct ArrowDeviceArray* dst);

/* Fills the released structs with an int32 array of 256 static values
 * (element 0 holds 256) and its schema; their releases only mark them
 * released: the producer side of the consumer benchmarks, at the floor. */
void chelper_fill_static(struct ArrowSchema* schema, struct ArrowDeviceArray* array);
/* Releases both (the floor consumer's release, in one call). */
void chelper_release_pair(struct ArrowSchema* schema, struct ArrowDeviceArray* array);

/* ---- the user's own driver library (native.c) -----------------------------
 * Streams and events made by calling the CUDA (kind 0) or HIP (kind 1)
 * library named by FERRY_CUDA_LIBRARY / FERRY_HIP_LIBRARY directly, not
 * through ferry, plus the emulations' test controls. Each returns 0, or
 * non-zero with the reason in `message`. */
#define CHELPER_NATIVE_CUDA 0
#define CHELPER_NATIVE_HIP 1
int chelper_native_stream(int32_t kind, void** stream_out, char* message, int64_t size);
/* `*event_out` is a pointer to the native handle, as an Arrow sync_event is. */
int chelper_native_event(int32_t kind, void** event_out, char* message, int64_t size);
int chelper_native_stream_destroy(int32_t kind, void* stream);
int chelper_native_event_destroy(int32_t kind, void* event);
/* 1 when the event (a pointer to the handle) completed, 0 when pending. */
int chelper_native_event_done(int32_t kind, void* event);
/* Holds the work queued on `stream` after this point until gates_open. */
int chelper_native_gate_close(int32_t kind, void* stream);
void chelper_native_gates_open(int32_t kind);
int64_t chelper_native_stream_pending(int32_t kind, void* stream);

#endif  // FERRY_GO_CHELPER_H
