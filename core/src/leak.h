/* The opt-in leak report (FERRY_LEAK_REPORT): a registry of the live exports
 * made by ferry's producer helpers and of the objects bindings track with
 * ferry_leak_track, printed to stderr at process exit. Private to the core.
 *
 * Off (the default) it costs the export paths one relaxed load of a cached
 * flag: the registry is only touched when the report is on. */
#ifndef FERRY_SRC_LEAK_H
#define FERRY_SRC_LEAK_H

#include <stdatomic.h>
#include <stdint.h>

#include "ferry/ferry.h"

/* -1 until the environment was read, then 0 (off) or 1 (on). */
extern _Atomic int ferry__leak_flag __attribute__((visibility("hidden")));

/* Reads FERRY_LEAK_REPORT once (thread-safe) and returns 1 when it is on. */
int ferry__leak_enabled_slow(void);

/* 1 when the leak report is on; a relaxed load and one branch once cached. */
static inline int ferry__leak_enabled(void) {
  int flag = atomic_load_explicit(&ferry__leak_flag, memory_order_relaxed);
  if (__builtin_expect(flag >= 0, 1)) return flag;
  return ferry__leak_enabled_slow();
}

/* Records the live export whose private block is `key` (stable for the
 * export's life, whatever struct the consumer moves it into); the
 * description is formatted like printf. Call only when the report is on;
 * out of memory loses the record, never the export. */
void ferry__leak_export_add(const void* key, const char* fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Appends " on <device>:<id>" to the record of `key`, if there is one. */
void ferry__leak_export_note_device(const void* key, ArrowDeviceType device_type,
                                    int64_t device_id);
/* Forgets the record of `key` (none is fine). Call only when the report is on. */
void ferry__leak_export_remove(const void* key);

#endif  // FERRY_SRC_LEAK_H
