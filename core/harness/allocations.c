/* The allocation ledger (see allocations.h). */
#include "allocations.h"

#include <stdio.h>
#include <string.h>

static struct FerryDevice* g_sim[FERRY_SIM_DEVICE_COUNT];
static int g_sim_resolved;

int it_allocations_init(char* message, size_t size) {
  struct FerryError error;
  ferry_error_init(&error);
  for (int d = 0; d < FERRY_SIM_DEVICE_COUNT; d++) {
    if (ferry_device_resolve(ARROW_DEVICE_EXT_DEV, d, &g_sim[d], &error) != 0) {
      snprintf(message, size, "sim device %d unavailable: %s", d, error.message);
      return -1;
    }
  }
  g_sim_resolved = 1;
  return 0;
}

static void add(struct it_allocations* out, int64_t value, const char* name) {
  if (out->n >= IT_MAX_COUNTERS) return;
  snprintf(out->names[out->n], sizeof out->names[out->n], "%s", name);
  out->values[out->n++] = value;
}

void it_allocations_take(struct it_allocations* out, const struct it_plugin* const* plugins,
                         int n_plugins) {
  memset(out, 0, sizeof *out);
  for (int i = 0; i < n_plugins; i++) {
    const struct it_plugin* p = plugins[i];
    int repeated = 0;
    for (int j = 0; j < i; j++) repeated |= plugins[j] == p;
    if (p == NULL || repeated || p->live_allocations == NULL) continue;
    char name[80];
    snprintf(name, sizeof name, "ferry_it_live_allocations() of %s", p->name);
    add(out, p->live_allocations(), name);
  }
  add(out, ferry_live_exports(), "ferry_live_exports()");
  for (int d = 0; d < FERRY_SIM_DEVICE_COUNT && g_sim_resolved; d++) {
    char name[80];
    snprintf(name, sizeof name, "live allocations of sim device %d", d);
    add(out, ferry_device_live_allocations(g_sim[d]), name);
  }
}

int it_allocations_compare(const struct it_allocations* before,
                           const struct it_allocations* after,
                           struct it_allocation_change* changes, int max) {
  int n = 0;
  for (int i = 0; i < before->n && i < after->n; i++) {
    if (after->values[i] == before->values[i]) continue;
    if (n < max) {
      changes[n].name = before->names[i];
      changes[n].before = before->values[i];
      changes[n].after = after->values[i];
    }
    n++;
  }
  return n;
}

int it_allocations_expect(const struct it_allocations* before,
                          const struct it_plugin* const* plugins, int n_plugins,
                          char* message, size_t size) {
  struct it_allocations after;
  it_allocations_take(&after, plugins, n_plugins);
  struct it_allocation_change first;
  int changed = it_allocations_compare(before, &after, &first, 1);
  if (changed > 0) {
    snprintf(message, size, "%s is %lld, was %lld", first.name, (long long)first.after,
             (long long)first.before);
  }
  return changed;
}
