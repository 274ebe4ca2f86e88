package io.github.ferryarrow.ferry;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A producer for the stream tests: yields {@code n} int32 batches of lengths 1..n
 * ({@link TestData#int32Batch}), throwing {@code failure} instead of the batch at
 * index {@code failAt} (and on every later call); counts its calls, the releases of
 * its batches and its closes, and records the threads that pulled it.
 */
final class Batches implements Iterator<ExportedBatch>, AutoCloseable {
  final int n;
  final int failAt;
  final RuntimeException failure;
  final AtomicInteger calls = new AtomicInteger();
  final AtomicInteger released = new AtomicInteger();
  final AtomicInteger closes = new AtomicInteger();
  final CountDownLatch closed = new CountDownLatch(1);
  final List<Boolean> daemonThreads = new ArrayList<>();
  final List<String> threadNames = new ArrayList<>();
  int produced;

  /** n batches, no failure. */
  Batches(int n) {
    this(n, -1, null);
  }

  Batches(int n, int failAt, RuntimeException failure) {
    this.n = n;
    this.failAt = failAt;
    this.failure = failure;
  }

  @Override
  public boolean hasNext() {
    return produced < n;
  }

  @Override
  public ExportedBatch next() {
    calls.incrementAndGet();
    daemonThreads.add(Thread.currentThread().isDaemon());
    threadNames.add(Thread.currentThread().getName());
    if (produced == failAt) throw failure;
    produced++;
    return TestData.int32Batch(produced, released);
  }

  @Override
  public void close() {
    closes.incrementAndGet();
    closed.countDown();
  }
}
