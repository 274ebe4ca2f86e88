package org.ferry;

import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * What Java exported and a C consumer still holds: the handle passed to C as
 * user_data maps to an entry that keeps the exported Java objects (direct
 * buffers, iterators) reachable until ferry calls the release hook.
 */
final class HandleTable {
  /** One exported object; {@link #released()} runs once, when the consumer releases. */
  abstract static class Entry {
    private volatile boolean cancelled;

    /** The export failed: drop the entry without running the producer's hooks. */
    void cancel() {
      cancelled = true;
    }

    boolean isCancelled() {
      return cancelled;
    }

    abstract void released();
  }

  private static final ConcurrentHashMap<Long, Entry> ENTRIES = new ConcurrentHashMap<>();
  private static final AtomicLong NEXT = new AtomicLong(1);

  private HandleTable() {}

  static long put(Entry entry) {
    long handle = NEXT.getAndIncrement();
    ENTRIES.put(handle, entry);
    return handle;
  }

  static Entry get(long handle) {
    return ENTRIES.get(handle);
  }

  /** Removes the entry and runs its release action (once; unknown handles are ignored). */
  static void release(long handle) {
    Entry entry = ENTRIES.remove(handle);
    if (entry != null && !entry.isCancelled()) entry.released();
  }

  /** Exports not yet released by their consumers. */
  static int size() {
    return ENTRIES.size();
  }
}
