/* The allocation ledger: every allocation counter a host can see, taken
 * before a handoff and compared after it. The counters are each plugin's
 * ferry_it_live_allocations() (the runtime's own count of what its exports
 * own), ferry_live_exports() (the core's count of live ferry-made exports)
 * and the live allocations of the four sim devices. Back at the baseline
 * after every handoff is the leak check that covers every runtime, the JVM
 * and Go included, which cannot run under ASan. */
#ifndef FERRY_HARNESS_ALLOCATIONS_H
#define FERRY_HARNESS_ALLOCATIONS_H

#include <stddef.h>
#include <stdint.h>

#include "ferry/ferry.h"
#include "plugin.h"

/* Two plugin counters more than runtimes: the conformance mode watches a
 * plugin under test and the C reference besides. */
#define IT_MAX_COUNTERS (IT_MAX_RUNTIMES + 2 + 1 + FERRY_SIM_DEVICE_COUNT)

struct it_allocations {
  int n;
  char names[IT_MAX_COUNTERS][80]; /* "ferry_it_live_allocations() of rust" */
  int64_t values[IT_MAX_COUNTERS];
};

/* Resolves the sim devices the ledger reads; 0, or -1 with the reason. */
int it_allocations_init(char* message, size_t size);

/* Reads every counter now: the `n_plugins` plugins' (NULL entries and
 * repeated plugins are skipped), the core's and the sim devices'. */
void it_allocations_take(struct it_allocations* out, const struct it_plugin* const* plugins,
                         int n_plugins);

/* One counter that moved. */
struct it_allocation_change {
  const char* name; /* borrowed from `before` */
  int64_t before;
  int64_t after;
};

/* Lists the counters of `after` that differ from `before` (taken with the
 * same plugins) into `changes` (up to `max`); returns how many differ. */
int it_allocations_compare(const struct it_allocations* before,
                           const struct it_allocations* after,
                           struct it_allocation_change* changes, int max);

/* Takes the counters again and writes the first change as "NAME is N, was
 * M" into `message`; returns the number of counters that changed. */
int it_allocations_expect(const struct it_allocations* before,
                          const struct it_plugin* const* plugins, int n_plugins,
                          char* message, size_t size);

#endif  // FERRY_HARNESS_ALLOCATIONS_H
