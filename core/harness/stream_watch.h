/* The stream watch: a host's view of one stream handoff (the matrix, the
 * demo, the benchmark's --check).
 *
 * Watching a stream replaces its get_schema and get_next callbacks with
 * wrappers that call the producer's originals and observe what crosses:
 * return codes, the producer's get_last_error message after a failure, every
 * schema and batch (watched by release_watch.h, buffer addresses
 * recorded), and whether each sim batch was still pending (poison) when it
 * was handed to the consumer. The struct stays the producer's: a consumer
 * that moves it still reaches the producer through private_data.
 * One stream is watched at a time. */
#ifndef FERRY_HARNESS_STREAM_WATCH_H
#define FERRY_HARNESS_STREAM_WATCH_H

#include <stdint.h>

#include "ferry/ferry.h"

struct it_stream_observed {
  int64_t get_schema_calls;
  int64_t get_next_calls;
  int64_t batches;          /* get_next calls that returned a live batch */
  int64_t end_seen;         /* get_next calls that returned end of stream */
  int64_t first_failure_call; /* 1-based get_next call that failed, 0: none */
  int first_failure_code;
  int get_schema_failure_code; /* 0 when no get_schema call failed */
  char failure_message[512];   /* get_last_error right after the first failure */
  int64_t sim_pending_batches; /* batches whose data read as poison at handover */
  int64_t sim_ready_batches;   /* sim batches without pending work */
  int64_t tampered_batches;
  int track_failures;          /* the release watch had no memory left */
};

/* Starts watching `stream` (live, owned by the caller). When
 * `tamper_first_batch` is set, the first value byte of batch 0 is flipped
 * before the consumer sees it (int32 CPU cases only: the witness that the
 * consumer reads the producer's memory). */
void it_stream_watch_begin(struct ArrowDeviceArrayStream* stream, int tamper_first_batch);

/* What was observed since it_stream_watch_begin. */
const struct it_stream_observed* it_stream_watch_observed(void);

/* The sim witness of one device array: 1 when it carries a sync event and
 * its first data byte reads as FERRY_SIM_POISON_BYTE (work still pending),
 * 0 when it is readable already, -1 when it has no data byte to look at. */
int it_sim_pending(const struct ArrowDeviceArray* array);

/* Flips a byte of the first element of an int32 CPU array (slot `offset`),
 * so that a consumer reading the producer's memory must see a wrong value.
 * Returns 0, or -1 when the array has no such element. */
int it_tamper_int32(struct ArrowDeviceArray* array);

#endif  // FERRY_HARNESS_STREAM_WATCH_H
