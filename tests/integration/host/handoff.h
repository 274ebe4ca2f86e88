/* One handoff between two runtimes, with every assertion the host makes.
 *
 * Array handoff: producer exports -> the host moves the struct bitwise into
 * its own ArrowDeviceArray, records every buffer address and interposes on
 * every release callback (release_watch.h) -> the consumer checks it (and takes
 * ownership) -> the host verifies: consumer verdict, every struct released
 * exactly once with release set to NULL, the buffers handed back at release
 * are the producer's, every runtime's live allocations, ferry_live_exports
 * and the sim devices' allocations back at their baseline (allocations.h).
 * Stream handoff: the same around a watched stream (stream_watch.h), plus
 * the injected failure observed at the callback with its message, and the
 * number of batches that crossed.
 *
 * "Zero-copy" as asserted here: the struct the consumer receives is the
 * producer's, moved bitwise by the host (no layer in between copies or
 * re-exports it), and the buffer addresses the consumer hands back at
 * release are exactly the producer's. The tamper run proves that the
 * consumer's verdict comes from reading those buffers: the host flips a
 * byte in the producer's memory after export and the consumer must fail.
 * "Sync honoured": for sim cases (strict mode) the host never waits; the
 * data still reads as poison when it is handed over (counted as a witness),
 * so a consumer that passes its value check must have waited on the event. */
#ifndef FERRY_IT_HOST_HANDOFF_H
#define FERRY_IT_HOST_HANDOFF_H

#include <stddef.h>
#include <stdint.h>

#include "case_list.h"
#include "plugin.h"

/* Witness counters accumulated over runs. */
struct it_handoff_stats {
  int64_t sim_pending;  /* sim arrays/batches still pending at handover */
  int64_t sim_ready;    /* sim arrays/batches exported already complete */
  int64_t tampered;     /* tamper runs whose byte flip was done */
  int64_t structs_tracked;
};

/* The tamper witness cases (int32 on the CPU, no nulls). */
#define IT_TAMPER_ARRAY_CASE "int32:length=16:seed=11"
#define IT_TAMPER_STREAM_CASE "int32:length=16:seed=11:batches=2"

/* The tamper witness entry of a kind (`stream` 0: arrays), for the hosts'
 * loops; never freed. */
const struct it_case_entry* it_handoff_tamper_entry(int stream);

/* "tamper ", "reject ", "thread " or "": how a host labels an entry. */
const char* it_handoff_entry_label(const struct it_case_entry* entry, int tamper);

/* Checks the preconditions of the matrix (sim devices, strict mode on). 0,
 * or -1 with the reason in `message`. */
int it_handoff_init(char* message, size_t size);

/* Runs one array handoff from `producer` to `consumer` (`all`: every loaded
 * runtime, for the allocation ledger), on a new thread when the entry says
 * "thread". With `tamper` the case must be IT_TAMPER_ARRAY_CASE and the
 * consumer must FAIL. Returns 1 when every assertion holds, 0 with the first
 * problem in `message`. */
int it_handoff_array(const struct it_runtime_set* all, const struct it_plugin* producer,
                     const struct it_plugin* consumer, const struct it_case_entry* entry,
                     int tamper, struct it_handoff_stats* stats, char* message, size_t size);

/* The same for a stream handoff. */
int it_handoff_stream(const struct it_runtime_set* all, const struct it_plugin* producer,
                      const struct it_plugin* consumer, const struct it_case_entry* entry,
                      int tamper, struct it_handoff_stats* stats, char* message, size_t size);

/* Default bound of an async handoff: the consumer's verdict must come
 * within this many milliseconds, else the pair is reported as hung. */
#define IT_ASYNC_TIMEOUT_MS 10000

/* Runs one async handoff (async_handoff.c): the consumer's checking handler
 * (ferry_it_check_async), wrapped by the host's watch, goes to the
 * producer's ferry_it_export_async; the verdict (ferry_it_async_result) is
 * awaited at most `timeout_ms`. Asserts: the verdict, fail=export's code and
 * message, the handler released exactly once and nothing called after the
 * release, every allocation ledger back at its baseline. A "reject" entry
 * must be refused with on_error and release. Both plugins must have the
 * async entry points (it_plugin_has_async). Returns 1, or 0 with the first
 * problem in `message` ("HUNG: ..." for a pair that timed out: its handler
 * and ticket are left allocated, and the run goes on). */
int it_handoff_async(const struct it_runtime_set* all, const struct it_plugin* producer,
                     const struct it_plugin* consumer, const struct it_case_entry* entry,
                     int64_t timeout_ms, char* message, size_t size);

/* Writes the printf-style message of a failed assertion into
 * message[size] and returns 0 (the verdict), so that a check reads
 * `return it_failf(message, size, ...)`. Internal to the handoff library. */
int it_failf(char* message, size_t size, const char* fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif  // FERRY_IT_HOST_HANDOFF_H
