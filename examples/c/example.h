/* The C example: a producer that exports its own memory without copying, a
 * consumer that takes ownership and reads, and a producer on the simulated
 * device (ferry's stand-in for a GPU: what it exports is pending until the
 * consumer waits on its event). See README.md. */
#ifndef FERRY_EXAMPLE_H
#define FERRY_EXAMPLE_H

#include <stdint.h>

#include <ferry/ferry.h>

/* What the consumer read. */
struct example_summary {
  int64_t length;
  int64_t null_count;
  int64_t sum; /* of the valid values */
};

/* Exports int32 values 1..n, every third one null, from memory this
 * producer allocates; the consumer's release frees it (release hook).
 * The caller owns *schema and *out on success; on failure both stay
 * released. */
int example_produce(int64_t n, struct ArrowSchema* schema, struct ArrowDeviceArray* out,
                    struct FerryError* error);

/* The same values without nulls, written to memory of the simulated device
 * on a device stream; the array carries the event recorded on that stream,
 * so the data is pending until a consumer waits. */
int example_produce_on_sim(int64_t n, struct ArrowSchema* schema,
                           struct ArrowDeviceArray* out, struct FerryError* error);

/* Takes ownership of `schema` and `in` (released on success and failure),
 * validates them, brings the data to the host (a move on the CPU; a copy,
 * after waiting on the producer's event, from a device) and sums it. */
int example_consume(struct ArrowSchema* schema, struct ArrowDeviceArray* in,
                    struct example_summary* out, struct FerryError* error);

/* Release hooks run so far (each producer's memory is freed exactly once). */
int64_t example_released(void);

#endif  // FERRY_EXAMPLE_H
