package io.github.ferryarrow.ferry;

import io.github.ferryarrow.ferry.jni.FerryNative;
import io.github.ferryarrow.ferry.jni.FerryNativeConstants;

/**
 * What Java exported and a C consumer still holds: the handle passed to C as
 * user_data maps to an object that keeps the exported Java objects (direct
 * buffers, iterators) reachable until the consumer releases the export.
 *
 * <p>Handles are {@code generation << 32 | slot}: slots are reused, generations
 * are not (per slot), so a stale handle (a release still queued for an export
 * whose entry was dropped after a failure) never hits a newer entry. Handles are
 * never 0 and below 2^63 (ferry_jni_handoff.c uses bit 63). One monitor guards
 * the table: exports and releases take it once each (a drain of k releases once).
 */
final class HandleTable {
  /** An entry with a release action; any other object is only kept reachable. */
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

  private static final java.lang.invoke.VarHandle ENTRY =
      java.lang.invoke.MethodHandles.arrayElementVarHandle(Object[].class);
  private static final java.lang.invoke.VarHandle GENERATION =
      java.lang.invoke.MethodHandles.arrayElementVarHandle(int[].class);
  /** Written under the monitor; read without it by {@link #get} (volatile arrays,
   *  release/acquire elements), which a stream's get_next does per batch. */
  private static volatile Object[] entries = new Object[256];
  private static volatile int[] generations = new int[256];
  private static int[] freeSlots = new int[256];
  private static int freeCount;
  private static int highWater;
  private static int live;
  /** Values taken off the release queue and processed here (dropped, or ignored
   *  as stale); compared with the queue's claims in {@link #liveExports()}. */
  private static long queuedProcessed;

  private HandleTable() {}

  static synchronized long put(Object entry) {
    int slot;
    if (freeCount > 0) {
      slot = freeSlots[--freeCount];
    } else {
      if (highWater == entries.length) grow();
      slot = highWater++;
    }
    int generation = (generations[slot] + 1) & Integer.MAX_VALUE;
    if (generation == 0) generation = 1;
    GENERATION.setRelease(generations, slot, generation);
    ENTRY.setRelease(entries, slot, entry);
    live++;
    return ((long) generation << 32) | slot;
  }

  private static void grow() {
    int n = entries.length * 2;
    freeSlots = java.util.Arrays.copyOf(freeSlots, n);
    generations = java.util.Arrays.copyOf(generations, n);
    entries = java.util.Arrays.copyOf(entries, n);
  }

  private static int slotOf(long handle) {
    int slot = (int) handle;
    int generation = (int) (handle >>> 32);
    if (slot < 0 || slot >= highWater || generation == 0 || generations[slot] != generation
        || entries[slot] == null) {
      return -1;
    }
    return slot;
  }

  /** The live entry of {@code handle}, or null; lock-free. A handle is looked up
   *  only while its export is live (a consumer calling get_next), so its slot is
   *  not being reused meanwhile. */
  static Object get(long handle) {
    int slot = (int) handle;
    int generation = (int) (handle >>> 32);
    Object[] es = entries;
    int[] gs = generations;
    if (slot < 0 || slot >= es.length || slot >= gs.length || generation == 0) return null;
    Object entry = ENTRY.getAcquire(es, slot);
    if (entry == null || (int) GENERATION.getAcquire(gs, slot) != generation) return null;
    return entry;
  }

  private static Object removeLocked(long handle) {
    int slot = slotOf(handle);
    if (slot < 0) return null;
    Object entry = entries[slot];
    ENTRY.setRelease(entries, slot, null);
    freeSlots[freeCount++] = slot;
    live--;
    return entry;
  }

  /** Drops the entry without running anything (a failed export). */
  static synchronized void remove(long handle) {
    removeLocked(handle);
  }

  /** Removes the entry and runs its release action (once; unknown handles are ignored). */
  static void release(long handle) {
    Object entry;
    synchronized (HandleTable.class) {
      entry = removeLocked(handle);
    }
    runReleased(entry);
  }

  /** {@link #release} for a value taken off the release queue. */
  static void releaseQueued(long handle) {
    Object entry;
    synchronized (HandleTable.class) {
      entry = removeLocked(handle);
      queuedProcessed++;
    }
    runReleased(entry);
  }

  /** {@link #releaseQueued} for {@code handles[0..n)}, under one lock. */
  static void releaseAllQueued(long[] handles, int n) {
    Object[] removed = new Object[n];
    synchronized (HandleTable.class) {
      for (int i = 0; i < n; i++) removed[i] = removeLocked(handles[i]);
      queuedProcessed += n;
    }
    for (Object entry : removed) runReleased(entry);
  }

  private static void runReleased(Object entry) {
    if (entry instanceof Entry && !((Entry) entry).isCancelled()) ((Entry) entry).released();
  }

  /** Entries in the table (exports whose release Java has not processed yet). */
  static synchronized int size() {
    return live;
  }

  /**
   * Exports whose consumers have not released them: the entries, less the
   * releases that the C hook queued and Java has not processed yet (still on the
   * queue, or popped by another thread's export call and not yet dropped). Both
   * counts are read under the table's lock, where processed values are counted,
   * so the result is exact whenever no release is running at that moment.
   */
  static synchronized long liveExports() {
    long claimed = FerryNative.ferry_jni_stat(FerryNativeConstants.FERRY_JNI_STAT_QUEUED);
    return live - (claimed - queuedProcessed);
  }
}
