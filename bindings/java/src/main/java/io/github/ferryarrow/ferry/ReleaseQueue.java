package io.github.ferryarrow.ferry;

import io.github.ferryarrow.ferry.jni.FerryNative;
import io.github.ferryarrow.ferry.jni.FerryNativeConstants;

/**
 * The Java side of the release queue (ferry_jni_handoff.c). A Java export without
 * onRelease actions is released by a C hook that only queues its handle: no call
 * into Java, no thread attachment, ~one CAS. Java drops the queued handles from
 * the {@link HandleTable} (which is what lets their ByteBuffers be collected):
 * <ul>
 *   <li>one per export, popped by the export's own JNI call;</li>
 *   <li>all of them in {@link ArrayExporter#drainReleases()} and
 *       {@link ArrayExporter#liveExports()};</li>
 *   <li>from the daemon thread "ferry-release-drainer", which blocks in C until a
 *       release arrives, waits {@link #LINGER_MS} so that exports can pick the
 *       handles up first (so C wakes it at most once per round), then drains.</li>
 * </ul>
 * Until its handle is drained an export's buffers stay referenced: memory is
 * never freed early, only possibly late (by at most one linger round).
 */
final class ReleaseQueue {
  /** The C hook that queues its handle. */
  static final long HOOK =
      FerryNative.ferry_jni_callback(FerryNativeConstants.FERRY_JNI_CALLBACK_QUEUED_RELEASE);
  /** How long the drainer leaves released handles to the exporting threads. */
  static final long LINGER_MS = 10;

  private static volatile boolean drainerStarted;
  /** Rounds the drainer thread has completed; guarded by ROUNDS_LOCK. */
  private static long drainerRounds;
  private static final Object ROUNDS_LOCK = new Object();

  /** One drain at a time (the drainer thread, drainReleases, a full queue). */
  private static final Object DRAIN_LOCK = new Object();

  private ReleaseQueue() {}

  /** Handles a value popped by ferry_jni_export_array (0: nothing). */
  static void popped(long value) {
    if (value == 0) return;
    HandleTable.releaseQueued(value & Long.MAX_VALUE);
    if (value < 0) drainAll();
  }

  /** Drops every queued handle; returns how many. */
  static int drainAll() {
    long[] handles = new long[FerryNativeConstants.FERRY_JNI_MAX_DRAIN];
    int total = 0;
    int n;
    synchronized (DRAIN_LOCK) {
      while ((n = FerryNative.ferry_jni_drain_releases(handles)) > 0) {
        HandleTable.releaseAllQueued(handles, n);
        total += n;
      }
    }
    return total;
  }

  /** Rounds the drainer thread has completed so far (for tests). */
  static long drainerRounds() {
    synchronized (ROUNDS_LOCK) {
      return drainerRounds;
    }
  }

  /**
   * Blocks until the drainer thread has completed a round after {@code round}
   * (a value from {@link #drainerRounds()}), or until {@code timeoutMs} passed;
   * returns whether it did. Tests use it to wait for the drainer without polling.
   */
  static boolean awaitDrainerRoundAfter(long round, long timeoutMs) throws InterruptedException {
    long deadline = System.nanoTime() + timeoutMs * 1_000_000L;
    synchronized (ROUNDS_LOCK) {
      while (drainerRounds <= round) {
        long left = (deadline - System.nanoTime()) / 1_000_000L;
        if (left <= 0) return false;
        ROUNDS_LOCK.wait(left);
      }
      return true;
    }
  }

  /** Starts the drainer thread once (before the first queued export). */
  static void ensureDrainer() {
    if (!drainerStarted) startDrainer();
  }

  private static synchronized void startDrainer() {
    if (drainerStarted) return;
    Thread t = new Thread(ReleaseQueue::drainLoop, "ferry-release-drainer");
    t.setDaemon(true);
    t.start();
    drainerStarted = true;
  }

  private static void drainLoop() {
    System.Logger log = System.getLogger("io.github.ferryarrow.ferry");
    for (;;) {
      try {
        FerryNative.ferry_jni_await_releases();
        // A rate limit, not synchronization: while this thread is not waiting,
        // releases do not signal it, and exports drain in passing.
        Thread.sleep(LINGER_MS);
        drainAll();
        synchronized (ROUNDS_LOCK) {
          drainerRounds++;
          ROUNDS_LOCK.notifyAll();
        }
      } catch (InterruptedException e) {
        // Daemon: keep draining; nobody is meant to stop it.
      } catch (RuntimeException | Error e) {
        log.log(System.Logger.Level.WARNING, "ferry: release drainer failed", e);
      }
    }
  }
}
