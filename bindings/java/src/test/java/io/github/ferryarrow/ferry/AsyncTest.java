package io.github.ferryarrow.ferry;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Flow;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import io.github.ferryarrow.ferry.jni.FerryNative;
import io.github.ferryarrow.ferry.jni.Testing;
import org.junit.jupiter.api.Test;

/** Async device streams (issue 22): Java as producer (from an Iterator, a
 *  DeviceArrayStream, a Flow.Publisher) and as consumer (blocking reads, an
 *  Iterator, a Flow.Publisher), through the core's state machines. */
class AsyncTest {
  /** Bound of every blocking read here: a hang fails the test instead. */
  static final long WAIT = 30_000;

  /** A cold publisher: serves {@code items} as requested (synchronously, from
   *  request), then completes, or fails with {@code error}. */
  static final class ListPublisher implements Flow.Publisher<ExportedBatch> {
    final List<ExportedBatch> items;
    final Throwable error;
    final AtomicInteger cancelled = new AtomicInteger();

    ListPublisher(List<ExportedBatch> items, Throwable error) {
      this.items = items;
      this.error = error;
    }

    @Override
    public void subscribe(Flow.Subscriber<? super ExportedBatch> subscriber) {
      subscriber.onSubscribe(new Flow.Subscription() {
        int next;
        boolean done;

        @Override
        public synchronized void request(long n) {
          for (long k = 0; k < n && next < items.size(); k++) subscriber.onNext(items.get(next++));
          if (next == items.size() && !done) {
            done = true;
            if (error != null) {
              subscriber.onError(error);
            } else {
              subscriber.onComplete();
            }
          }
        }

        @Override
        public void cancel() {
          cancelled.incrementAndGet();
        }
      });
    }
  }

  private static void checkBatch(DeviceArray batch, int expectedLength) {
    assertEquals(expectedLength, batch.length());
    for (int i = 0; i < expectedLength; i++) assertEquals(i * 10, batch.getInt(i));
  }

  @Test
  void anIteratorPushedToABlockingReader() throws InterruptedException {
    Batches batches = new Batches(6);
    try (AsyncDeviceStream consumer = consumerOf(2, batches)) {
      assertEquals("n", consumer.schema(-1).name());
      int count = 0;
      for (DeviceArray batch : consumer) {
        try (batch) {
          checkBatch(batch, ++count);
        }
      }
      assertEquals(6, count);
      assertNull(consumer.next(WAIT), "the end stays the end");
      assertEquals(DeviceType.CPU, consumer.deviceType());
      assertEquals(0, consumer.violations());
    }
    assertTrue(batches.closed.await(10, TimeUnit.SECONDS), "the iterator was closed");
    assertEquals(6, batches.released.get());
    assertTrue(batches.threadNames.stream().noneMatch(t -> t.equals(Thread.currentThread()
        .getName())), "pulled on ferry's thread, attached to the JVM: " + batches.threadNames);
  }

  @Test
  void theProducersErrorArrivesAndRepeats() throws InterruptedException {
    Batches batches = new Batches(6, 2, new FerryException(FerryException.ENODEV, "device lost at 3"));
    try (AsyncDeviceStream consumer = consumerOf(1, batches)) {
      consumer.next(WAIT).close();
      consumer.next(WAIT).close();
      FerryException e = assertThrows(FerryException.class, () -> consumer.next(WAIT));
      assertEquals(FerryException.ENODEV, e.code());
      assertTrue(e.getMessage().contains("device lost at 3"), e.getMessage());
      FerryException again = assertThrows(FerryException.class, () -> consumer.next(WAIT));
      assertEquals(e.code(), again.code());
      assertEquals(e.getMessage(), again.getMessage());
    }
    assertTrue(batches.closed.await(10, TimeUnit.SECONDS));
    assertEquals(3, batches.calls.get(), "no get_next after the error");
  }

  @Test
  void cancelStopsTheProducer() throws InterruptedException {
    Batches batches = new Batches(1000);
    try (AsyncDeviceStream consumer = consumerOf(2, batches)) {
      consumer.next(WAIT).close();
      consumer.cancel();
      consumer.cancel(); // idempotent
      FerryException e = assertThrows(FerryException.class, () -> consumer.next(WAIT));
      assertEquals("ECANCELED", e.codeName());
      assertTrue(batches.closed.await(10, TimeUnit.SECONDS), "the producer stopped");
    }
    assertTrue(batches.calls.get() < 1000, "stopped early: " + batches.calls.get());
  }

  @Test
  void aTimeoutLeavesTheStreamUsable() {
    try (AsyncDeviceStream consumer = AsyncDeviceStream.create(1)) {
      consumer.handlerAddress(); // handed to nobody yet: no schema will come in time
      FerryException e = assertThrows(FerryException.class, () -> consumer.next(0));
      assertEquals("ETIMEDOUT", e.codeName());
      AsyncExporter.export(TestData.int32Field("n"), DeviceType.CPU,
          new Batches(1), consumer.handlerAddress());
      try (DeviceArray batch = consumer.next(WAIT)) {
        checkBatch(batch, 1);
      }
      assertNull(consumer.next(WAIT));
    }
  }

  @Test
  void aPublisherPushedToAFlowSubscriber() throws Exception {
    AtomicInteger released = new AtomicInteger();
    List<Integer> lengths = new ArrayList<>();
    AtomicReference<Throwable> failure = new AtomicReference<>();
    CountDownLatch done = new CountDownLatch(1);
    List<ExportedBatch> items = new ArrayList<>();
    for (int i = 1; i <= 5; i++) items.add(TestData.int32Batch(i, released));
    try (AsyncDeviceStream consumer = AsyncDeviceStream.create(3)) {
      AsyncExporter.export(TestData.int32Field("p"), DeviceType.CPU,
          new ListPublisher(items, null), consumer.handlerAddress());
      consumer.subscribe(new Flow.Subscriber<>() {
        Flow.Subscription s;

        @Override
        public void onSubscribe(Flow.Subscription subscription) {
          s = subscription;
          s.request(1);
        }

        @Override
        public void onNext(DeviceArray batch) {
          try (batch) {
            lengths.add((int) batch.length());
            checkBatch(batch, (int) batch.length());
          } catch (Throwable t) {
            failure.set(t);
          }
          s.request(1);
        }

        @Override
        public void onError(Throwable t) {
          failure.set(t);
          done.countDown();
        }

        @Override
        public void onComplete() {
          done.countDown();
        }
      });
      assertTrue(done.await(30, TimeUnit.SECONDS), "completed");
      assertNull(failure.get());
      assertEquals(List.of(1, 2, 3, 4, 5), lengths);
    }
    assertEquals(5, released.get());
  }

  @Test
  void aPublishersErrorReachesTheConsumer() {
    try (AsyncDeviceStream consumer = AsyncDeviceStream.create(1)) {
      AsyncExporter.export(TestData.int32Field("p"), DeviceType.CPU,
          new ListPublisher(List.of(TestData.int32Batch(1, new AtomicInteger())),
              new FerryException(FerryException.EIO, "upstream broke")),
          consumer.handlerAddress());
      consumer.next(WAIT).close();
      FerryException e = assertThrows(FerryException.class, () -> consumer.next(WAIT));
      assertEquals(FerryException.EIO, e.code());
      assertEquals("upstream broke", e.getMessage());
    }
  }

  /** A consumer with window {@code window} into which {@code batches} (int32
   *  field "n") are pushed from the core's thread. */
  private static AsyncDeviceStream consumerOf(int window, Iterator<ExportedBatch> batches) {
    AsyncDeviceStream consumer = AsyncDeviceStream.create(window);
    try {
      AsyncExporter.export(TestData.int32Field("n"), DeviceType.CPU, batches,
          consumer.handlerAddress());
    } catch (RuntimeException e) {
      consumer.close();
      throw e;
    }
    return consumer;
  }

  /** A subscriber that requests nothing and keeps the error it is told of. */
  private static Flow.Subscriber<DeviceArray> errorRecorder(AtomicReference<Throwable> error) {
    return new Flow.Subscriber<>() {
      @Override
      public void onSubscribe(Flow.Subscription s) {}

      @Override
      public void onNext(DeviceArray item) {}

      @Override
      public void onError(Throwable t) {
        error.set(t);
      }

      @Override
      public void onComplete() {}
    };
  }

  @Test
  void aSecondSubscriberIsRefused() throws InterruptedException {
    try (AsyncDeviceStream consumer = AsyncDeviceStream.create(1)) {
      AtomicReference<Throwable> first = new AtomicReference<>();
      AtomicReference<Throwable> second = new AtomicReference<>();
      consumer.subscribe(errorRecorder(first));
      consumer.subscribe(errorRecorder(second));
      assertTrue(second.get() instanceof IllegalStateException);
    }
  }

  @Test
  void aJavaStreamAndACProducerBothWays() {
    // A C-produced device stream pushed through the core's pull-to-push thread.
    long stream = FerryNative.ferry_array_stream_new();
    try {
      Testing.cStaticStream(stream, 16);
      DeviceArrayStream pulled = DeviceArrayStream.importFrom(stream);
      try (AsyncDeviceStream consumer = AsyncDeviceStream.create(4)) {
        AsyncExporter.export(pulled, consumer.handlerAddress());
        assertTrue(pulled.isClosed(), "moved into the exporter");
        for (int i = 0; i < 3; i++) {
          try (DeviceArray batch = consumer.next(WAIT)) {
            assertEquals(16, batch.length());
            assertEquals(15 * 7, batch.getInt(15));
          }
        }
      }
    } finally {
      FerryNative.ferry_array_stream_free(stream);
    }
  }

  @Test
  void closingWithoutAProducerFreesEverything() {
    AsyncDeviceStream never = AsyncDeviceStream.create(1);
    never.close();
    never.close();
    assertThrows(IllegalStateException.class, never::next);
    // A handler handed out and released by a producer that fails at once.
    AsyncDeviceStream failed = AsyncDeviceStream.create(1);
    FerryNative.ferry_async_handler_fail(failed.handlerAddress(), FerryException.EIO, "no");
    FerryException e = assertThrows(FerryException.class, failed::next);
    assertEquals("no", e.getMessage());
    failed.close();
  }
}
