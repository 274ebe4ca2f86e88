package io.github.ferryarrow.ferry;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Iterator;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * The binding's thread-safety contract (README "Threads"), tried with 8 threads
 * reading, closing and iterating one object at once, over many rounds: no crash
 * (a use-after-free would read freed or reused memory and fail the value checks,
 * or crash the JVM), no wrong value, exactly one release, and only the named
 * "is closed" error after a close.
 */
class ConcurrencyTest {
  private static final int THREADS = 8;
  private static final int ROUNDS = 300;
  private static final int LENGTH = 64;

  /** Runs {@code work[t]} on THREADS threads started together and fails with
   *  every failure of round {@code round} (a thread that has not finished after
   *  a minute is one). */
  private static void runTogether(int round, Runnable[] work) throws InterruptedException {
    Queue<Throwable> failures = new ConcurrentLinkedQueue<>();
    CountDownLatch start = new CountDownLatch(1);
    Thread[] threads = new Thread[work.length];
    for (int t = 0; t < work.length; t++) {
      Runnable w = work[t];
      threads[t] = new Thread(() -> {
        try {
          start.await();
          w.run();
        } catch (Throwable e) {
          failures.add(e);
        }
      }, "ferry-concurrency-" + t);
      threads[t].start();
    }
    start.countDown();
    for (Thread thread : threads) {
      thread.join(60_000);
      if (thread.isAlive()) failures.add(new AssertionError(thread.getName() + " hangs"));
    }
    if (!failures.isEmpty()) {
      AssertionError error = new AssertionError("round " + round + ": " + failures.size()
          + " failures, the first: " + failures.peek());
      failures.forEach(error::addSuppressed);
      throw error;
    }
  }

  private static boolean isClosedError(IllegalStateException e) {
    return e.getMessage() != null && e.getMessage().endsWith(" is closed");
  }

  /** A struct of (int32 with nulls at multiples of 5, utf8 "v<i>"), released into
   *  {@code released}. */
  private static DeviceArray newArray(AtomicInteger released) {
    ByteBuffer validity = ByteBuffer.allocateDirect(LENGTH / 8);
    int nulls = 0;
    for (int i = 0; i < LENGTH; i++) {
      if (i % 5 != 0) {
        validity.put(i / 8, (byte) (validity.get(i / 8) | (1 << (i % 8))));
      } else {
        nulls++;
      }
    }
    int[] values = new int[LENGTH];
    for (int i = 0; i < LENGTH; i++) values[i] = i * 3;
    ByteBuffer offsets = ByteBuffer.allocateDirect(4 * (LENGTH + 1)).order(ByteOrder.nativeOrder());
    StringBuilder text = new StringBuilder();
    offsets.putInt(0);
    for (int i = 0; i < LENGTH; i++) {
      text.append("v").append(i);
      offsets.putInt(text.length());
    }
    byte[] bytes = text.toString().getBytes(StandardCharsets.UTF_8);
    FieldSpec field = FieldSpec.of("+s", "row")
        .withChildren(FieldSpec.of("i", "n"), FieldSpec.of("u", "s"));
    ExportedBatch batch = ExportedBatch.of(LENGTH).buffers((ByteBuffer) null)
        .children(ExportedBatch.of(LENGTH).nullCount(nulls).buffers(validity,
                TestData.int32s(values)),
            ExportedBatch.of(LENGTH).buffers(null, offsets.clear(), TestData.bytes(bytes)))
        .onRelease(released::incrementAndGet);
    return ArrayExporter.toDeviceArray(field, batch);
  }

  /** Reads everything of {@code a} and checks it; returns false once closed. */
  private static boolean readAll(DeviceArray a, int k) {
    try {
      int i = k % LENGTH;
      assertEquals(LENGTH, a.length());
      ArrayView numbers = a.child(0);
      assertEquals(i % 5 == 0, numbers.isNull(i));
      assertEquals(i * 3, numbers.getInt(i));
      assertEquals("v" + i, a.child(1).getString(i));
      assertEquals("+s", a.schema().format());
      assertEquals("s", a.schema().child(1).name());
      if (k % 16 == 0) assertTrue(a.findings(Validation.FULL).isEmpty());
      return true;
    } catch (IllegalStateException e) {
      if (!isClosedError(e)) throw e;
      return false;
    }
  }

  @Test
  void eightThreadsReadCloseAndMoveOneArray() throws InterruptedException {
    AtomicInteger released = new AtomicInteger();
    AtomicLong reads = new AtomicLong();
    AtomicLong moves = new AtomicLong();
    for (int round = 0; round < ROUNDS; round++) {
      DeviceArray a = newArray(released);
      Runnable[] work = new Runnable[THREADS];
      for (int t = 0; t < THREADS - 3; t++) {
        int seed = t;
        work[t] = () -> {
          for (int k = seed; readAll(a, k); k += 7) reads.incrementAndGet();
        };
      }
      // Two closers and one thread that moves the array out (a copy to the host
      // consumes it), all racing the readers and each other.
      work[THREADS - 3] = a::close;
      work[THREADS - 2] = a::close;
      work[THREADS - 1] = () -> {
        try {
          a.toHost().close();
          moves.incrementAndGet();
        } catch (IllegalStateException e) {
          if (!isClosedError(e)) throw e;
        }
      };
      runTogether(round, work);
      assertTrue(a.isClosed());
      assertEquals(round + 1, released.get(), "released exactly once per round");
      IllegalStateException e = assertThrows(IllegalStateException.class, () -> a.getInt(0));
      assertEquals("DeviceArray is closed", e.getMessage());
    }
    assertTrue(reads.get() > 0, "the readers read");
  }

  /** A producer that records any overlap of its calls and any call after close. */
  static final class WatchedBatches implements Iterator<ExportedBatch>, AutoCloseable {
    final int n;
    final AtomicInteger inFlight = new AtomicInteger();
    final AtomicInteger overlaps = new AtomicInteger();
    final AtomicInteger callsAfterClose = new AtomicInteger();
    final AtomicInteger closed = new AtomicInteger();
    final AtomicInteger released = new AtomicInteger();
    int produced;

    WatchedBatches(int n) {
      this.n = n;
    }

    @Override
    public boolean hasNext() {
      return enterCall(() -> produced < n);
    }

    @Override
    public ExportedBatch next() {
      return enterCall(() -> {
        produced++;
        return TestData.int32Batch(produced, released);
      });
    }

    private <T> T enterCall(java.util.function.Supplier<T> body) {
      if (closed.get() != 0) callsAfterClose.incrementAndGet();
      if (inFlight.incrementAndGet() != 1) overlaps.incrementAndGet();
      try {
        Thread.onSpinWait(); // widen the window a racing caller would hit
        return body.get();
      } finally {
        inFlight.decrementAndGet();
      }
    }

    @Override
    public void close() {
      if (inFlight.get() != 0) overlaps.incrementAndGet();
      closed.incrementAndGet();
    }

    /** Asserts, once its stream is closed, the stream's side of the contract. */
    void assertSerializedAndReleasedOnce() {
      assertEquals(0, overlaps.get(), "the producer was never called concurrently");
      assertEquals(0, callsAfterClose.get(), "nothing after the release");
      assertEquals(1, closed.get(), "released exactly once");
    }
  }

  @Test
  void eightThreadsIterateAndCloseOneStream() throws InterruptedException {
    int batchesPerStream = 40;
    for (int round = 0; round < ROUNDS; round++) {
      WatchedBatches producer = new WatchedBatches(batchesPerStream);
      DeviceArrayStream s = StreamExporter.toStream(TestData.int32Field("n"), DeviceType.CPU,
          producer);
      AtomicInteger pulled = new AtomicInteger();
      Queue<Integer> lengths = new ConcurrentLinkedQueue<>();
      Runnable[] work = new Runnable[THREADS];
      for (int t = 0; t < THREADS - 2; t++) {
        boolean useCursor = t == 0;
        work[t] = () -> {
          try {
            if (useCursor) {
              try (DeviceArrayStream.Cursor cursor = s.cursor()) {
                while (cursor.advance()) {
                  pulled.incrementAndGet();
                  lengths.add((int) cursor.length());
                }
              }
              return;
            }
            for (DeviceArray batch : s) {
              try (batch) {
                pulled.incrementAndGet();
                int n = (int) batch.length();
                lengths.add(n);
                // The last value of batch n is (n - 1) * 10 (TestData.int32Batch).
                assertEquals((n - 1) * 10, batch.getInt(n - 1));
              }
            }
          } catch (IllegalStateException e) {
            if (!isClosedError(e)) throw e;
          }
        };
      }
      work[THREADS - 2] = () -> {
        try {
          assertEquals("n", s.schema().name());
          assertEquals(DeviceType.CPU, s.deviceType());
        } catch (IllegalStateException e) {
          if (!isClosedError(e)) throw e;
        }
      };
      work[THREADS - 1] = s::close;
      runTogether(round, work);
      s.close();
      producer.assertSerializedAndReleasedOnce();
      assertEquals(pulled.get(), producer.produced, "every produced batch reached one reader");
      assertEquals(pulled.get(), producer.released.get(), "every batch released once");
      assertEquals(pulled.get(), lengths.stream().distinct().count(), "no batch twice");
      assertThrows(IllegalStateException.class, s::next);
    }
  }

  @Test
  void eightThreadsReadCancelAndCloseOneAsyncStream() throws InterruptedException {
    for (int round = 0; round < ROUNDS / 6; round++) {
      WatchedBatches producer = new WatchedBatches(40);
      AsyncDeviceStream s = AsyncDeviceStream.create(4);
      AsyncExporter.export(TestData.int32Field("n"), DeviceType.CPU, producer,
          s.handlerAddress());
      Queue<Integer> lengths = new ConcurrentLinkedQueue<>();
      Runnable[] work = new Runnable[THREADS];
      for (int t = 0; t < THREADS - 2; t++) {
        work[t] = () -> {
          try {
            for (DeviceArray next = s.next(60_000); next != null; next = s.next(60_000)) {
              try (DeviceArray batch = next) {
                int n = (int) batch.length();
                lengths.add(n);
                assertEquals((n - 1) * 10, batch.getInt(n - 1));
              }
            }
          } catch (IllegalStateException e) {
            if (!isClosedError(e)) throw e;
          } catch (FerryException e) {
            if (!e.codeName().equals("ECANCELED")) throw e;
          }
        };
      }
      work[THREADS - 2] = s::cancel;
      work[THREADS - 1] = s::close;
      runTogether(round, work);
      s.close();
      producer.assertSerializedAndReleasedOnce();
      assertEquals(lengths.size(), lengths.stream().distinct().count(), "no batch twice");
      assertEquals(producer.produced, producer.released.get(),
          "every batch produced was released once (read, or queued and dropped)");
    }
  }

  @Test
  void aSecondCallerWaitsForTheFirst() throws InterruptedException {
    // The producer blocks inside get_next until released by the test: a second
    // next() and a close() on other threads must wait, not run alongside.
    CountDownLatch inside = new CountDownLatch(1);
    CountDownLatch proceed = new CountDownLatch(1);
    AtomicInteger released = new AtomicInteger();
    AtomicInteger calls = new AtomicInteger();
    Iterator<ExportedBatch> blocking = TestData.endless(call -> {
      if (calls.incrementAndGet() == 1) {
        inside.countDown();
        try {
          proceed.await();
        } catch (InterruptedException e) {
          throw new IllegalStateException(e);
        }
      }
      return TestData.int32Batch(1, released);
    });
    DeviceArrayStream s = StreamExporter.toStream(TestData.int32Field("n"), DeviceType.CPU,
        blocking);
    Queue<Throwable> failures = new ConcurrentLinkedQueue<>();
    Thread first = new Thread(() -> {
      try (DeviceArray batch = s.next()) {
        assertEquals(1, batch.length());
      } catch (Throwable e) {
        failures.add(e);
      }
    });
    first.start();
    inside.await();
    Thread closer = new Thread(s::close);
    closer.start();
    // The closer cannot finish while get_next is in flight: it waits on the lock.
    while (closer.getState() != Thread.State.WAITING) Thread.onSpinWait();
    assertFalse(s.isClosed(), "close waits for the get_next in flight");
    assertEquals(1, calls.get());
    proceed.countDown();
    first.join();
    closer.join();
    assertTrue(failures.isEmpty(), () -> failures.toString());
    assertTrue(s.isClosed());
    assertEquals(1, calls.get(), "no get_next after close");
    assertEquals(1, released.get());
  }

  @Test
  void aProducerClosingItsConsumerFromGetNextIsRefused() {
    // The producer's get_next runs on the consumer's thread, inside next(): a close
    // from there would release the stream under the call in flight.
    AtomicInteger released = new AtomicInteger();
    DeviceArrayStream[] consumer = new DeviceArrayStream[1];
    Iterator<ExportedBatch> reentrant = TestData.endless(call -> {
      consumer[0].close();
      return TestData.int32Batch(1, released);
    });
    try (DeviceArrayStream s = StreamExporter.toStream(TestData.int32Field("n"), DeviceType.CPU,
        reentrant)) {
      consumer[0] = s;
      FerryException e = assertThrows(FerryException.class, s::next);
      assertTrue(e.getMessage().contains("re-entering its consumer"), e.getMessage());
      assertFalse(s.isClosed());
    }
    assertEquals(0, released.get());
  }

  @Test
  void closeWaitsForAReaderAndRefusesNewOnes() throws InterruptedException {
    // A reader inside a value read holds the array open: close waits, then
    // releases; the reader's read completes with the right value.
    AtomicInteger released = new AtomicInteger();
    DeviceArray a = newArray(released);
    NativeHandle guard = a.guard();
    guard.enter(); // what every reader does around its read
    Thread closer = new Thread(a::close);
    closer.start();
    while (closer.getState() != Thread.State.WAITING) Thread.onSpinWait();
    assertEquals(0, released.get(), "close waits for the reader");
    assertThrows(IllegalStateException.class, () -> a.getInt(0), "no new reader once closing");
    guard.exit();
    closer.join();
    assertEquals(1, released.get());
    assertTrue(a.isClosed());
  }
}
