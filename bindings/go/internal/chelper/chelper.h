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

#endif  // FERRY_GO_CHELPER_H
