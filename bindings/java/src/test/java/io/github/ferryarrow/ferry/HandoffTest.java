package io.github.ferryarrow.ferry;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.ref.WeakReference;
import java.nio.ByteBuffer;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import io.github.ferryarrow.ferry.jni.FerryNative;
import io.github.ferryarrow.ferry.jni.Testing;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The one-call paths, the off-heap slots, the release queue and the nursery. */
class HandoffTest {
  @AfterEach
  void noListener() {
    NativeHandle.setLeakListener(null);
  }

  /** A flat int32 batch over {@code values} with no onRelease action: released
   *  through the queue. */
  private static ExportedBatch queued(ByteBuffer values, int length) {
    return ExportedBatch.of(length).buffers(null, values);
  }

  @Test
  void accessorsReadTheSlotAndMatchTheExportedMemory() {
    ByteBuffer values = TestData.int32s(5, 6, 7);
    try (DeviceArray a = ArrayExporter.toDeviceArray(TestData.int32Field("v"), queued(values, 3))) {
      assertEquals(3, a.length());
      assertEquals(0, a.nullCount());
      assertEquals(2, a.bufferCount());
      assertEquals(0, a.bufferAddress(0));
      assertEquals(FerryNative.ferry_jni_direct_address(values), a.bufferAddress(1));
      assertEquals(a.root().bufferAddress(1), a.bufferAddress(1));
      assertEquals(DeviceType.CPU, a.deviceType());
      assertEquals(7, a.buffer(1).getInt(8));
      assertThrows(IndexOutOfBoundsException.class, () -> a.bufferAddress(2));
    }
  }

  @Test
  void buffersBeyondTheInlineOnesAreReadOnDemand() {
    // 7 raw addresses: more than the slot keeps inline, more than the 3 passed as
    // arguments to the one-call export.
    // (An int32 has 2 buffers: validation would refuse this, so it is skipped.)
    long[] addresses = {0, 11, 22, 33, 44, 55, 66};
    long schema = FerryNative.ferry_schema_new();
    long array = FerryNative.ferry_device_array_new();
    ArrayExporter.export(TestData.int32Field("many"), ExportedBatch.of(1).bufferAddresses(addresses),
        array, schema);
    try (DeviceArray a = DeviceArray.importFrom(array, schema, Validation.NONE)) {
      FerryNative.ferry_schema_free(schema);
      FerryNative.ferry_device_array_free(array);
      assertEquals(7, a.bufferCount());
      for (int i = 0; i < addresses.length; i++) {
        assertEquals(addresses[i], a.bufferAddress(i), "buffer " + i);
        assertEquals(addresses[i], a.root().bufferAddress(i), "root buffer " + i);
      }
    }
  }

  @Test
  void theCursorReportsBuffersWithoutExtraCalls() {
    long cStream = FerryNative.ferry_array_stream_new();
    long other = FerryNative.ferry_array_stream_new();
    Testing.cStaticStream(cStream, 100);
    Testing.cStaticStream(other, 100);
    try (DeviceArrayStream s = DeviceArrayStream.importFrom(cStream);
        DeviceArrayStream t = DeviceArrayStream.importFrom(other);
        DeviceArrayStream.Cursor cursor = s.cursor();
        DeviceArray reference = t.next()) {
      assertThrows(IllegalStateException.class, () -> cursor.bufferAddress(1));
      for (int i = 0; i < 3; i++) {
        assertTrue(cursor.advance());
        assertEquals(100, cursor.length());
        assertEquals(reference.bufferAddress(1), cursor.bufferAddress(1));
        assertEquals(DeviceType.CPU, cursor.deviceType());
      }
    } finally {
      FerryNative.ferry_array_stream_free(cStream);
      FerryNative.ferry_array_stream_free(other);
    }
  }

  @Test
  void queuedExportsKeepTheirBuffersReachableUntilTheConsumerReleases() {
    long array = FerryNative.ferry_device_array_new();
    try {
      long before = ArrayExporter.liveExports();
      WeakReference<ByteBuffer> buffer = exportAndForget(array);
      assertEquals(before + 1, ArrayExporter.liveExports());
      // Only the handle table references the buffer now; churn the heap.
      for (int i = 0; i < 10; i++) {
        byte[][] garbage = new byte[64][];
        for (int j = 0; j < garbage.length; j++) garbage[j] = new byte[64 * 1024];
        System.gc();
      }
      assertNotNull(buffer.get(), "the exported buffer is still referenced");
      assertEquals(before + 1, ArrayExporter.liveExports(), "no release before the consumer's");
      assertEquals(4 + 40, Testing.cConsumeArray(array), "length + first value, after GC");
      // Released in C: queued, and dropped by the next drain.
      assertEquals(before, ArrayExporter.liveExports());
      for (int i = 0; i < 200 && buffer.get() != null; i++) {
        System.gc();
        Thread.onSpinWait();
      }
      assertNull(buffer.get(), "once released and drained, the buffer can be collected");
    } finally {
      FerryNative.ferry_device_array_free(array);
    }
  }

  private static WeakReference<ByteBuffer> exportAndForget(long array) {
    ByteBuffer values = TestData.int32s(40, 50, 60, 70);
    ArrayExporter.exportDeviceArray(queued(values, 4), array);
    return new WeakReference<>(values);
  }

  @Test
  void aReleaseOnAForeignThreadIsQueuedWithoutAttachingIt() {
    long array = FerryNative.ferry_device_array_new();
    try {
      long before = ArrayExporter.liveExports();
      long attachedBefore = stat(FerryNative.FERRY_JNI_STAT_ATTACHED_THREADS);
      long queuedBefore = stat(FerryNative.FERRY_JNI_STAT_QUEUED);
      long fallbacksBefore = stat(FerryNative.FERRY_JNI_STAT_QUEUE_FALLBACKS);
      ArrayExporter.exportDeviceArray(queued(TestData.int32s(1, 2), 2), array);
      assertEquals(0, Testing.releaseOnForeignThread(array));
      assertTrue(FerryNative.ferry_device_array_is_released(array));
      // >=: a Cleaner-thread release of an earlier test's garbage may queue too.
      assertTrue(stat(FerryNative.FERRY_JNI_STAT_QUEUED) >= queuedBefore + 1,
          "the release was queued");
      assertEquals(fallbacksBefore, stat(FerryNative.FERRY_JNI_STAT_QUEUE_FALLBACKS),
          "no fallback to the Java upcall");
      assertEquals(attachedBefore, stat(FerryNative.FERRY_JNI_STAT_ATTACHED_THREADS),
          "the foreign thread never entered the JVM");
      assertEquals(before, ArrayExporter.liveExports());
    } finally {
      FerryNative.ferry_device_array_free(array);
    }
  }

  @Test
  void theDrainerThreadDropsReleasesWithoutAnyJavaCall() throws InterruptedException {
    long array = FerryNative.ferry_device_array_new();
    try {
      ArrayExporter.drainReleases();
      int before = HandleTable.size();
      ArrayExporter.exportDeviceArray(queued(TestData.int32s(3), 1), array);
      assertEquals(before + 1, HandleTable.size());
      Testing.releaseAll(new long[] {array});
      // Nothing on this thread drains (HandleTable.size does not): the daemon
      // drainer must. Each of its rounds is signalled, so this waits on rounds
      // (no polling); a round that ended just before the release was queued is
      // followed by another, because the queued release wakes the drainer.
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      while (HandleTable.size() != before && System.nanoTime() < deadline) {
        long round = ReleaseQueue.drainerRounds();
        if (HandleTable.size() == before) break;
        assertTrue(ReleaseQueue.awaitDrainerRoundAfter(round, 10_000),
            "the drainer thread never completed a round");
      }
      assertEquals(before, HandleTable.size(), "the drainer dropped the released export");
    } finally {
      FerryNative.ferry_device_array_free(array);
    }
  }

  @Test
  void aFullQueueFallsBackToTheUpcallAndLosesNothing() {
    int n = (int) stat(FerryNative.FERRY_JNI_STAT_QUEUE_CAPACITY) + 500;
    long[] arrays = new long[n];
    ByteBuffer values = TestData.int32s(9);
    long before = ArrayExporter.liveExports();
    long queuedBefore = stat(FerryNative.FERRY_JNI_STAT_QUEUED);
    long fallbacksBefore = stat(FerryNative.FERRY_JNI_STAT_QUEUE_FALLBACKS);
    try {
      for (int i = 0; i < n; i++) {
        arrays[i] = FerryNative.ferry_device_array_new();
        ArrayExporter.exportDeviceArray(queued(values, 1), arrays[i]);
      }
      assertEquals(before + n, ArrayExporter.liveExports());
      Testing.releaseAll(arrays); // more releases than the queue holds, back to back
      long queued = stat(FerryNative.FERRY_JNI_STAT_QUEUED) - queuedBefore;
      long fallbacks = stat(FerryNative.FERRY_JNI_STAT_QUEUE_FALLBACKS) - fallbacksBefore;
      assertTrue(fallbacks > 0, "the queue overflowed into the upcall");
      assertTrue(queued + fallbacks >= n,
          "every release was either queued or delivered by the upcall");
      assertEquals(before, ArrayExporter.liveExports());
    } finally {
      for (long a : arrays) {
        if (a != 0) FerryNative.ferry_device_array_free(a);
      }
    }
  }

  /**
   * liveExports() while another thread exports: that thread's export call pops
   * handles released earlier (this thread's) and drops them a moment later. The
   * count must never include such a popped-but-not-dropped handle: at a check,
   * only the other thread's export in progress (at most one) may be live.
   */
  @Test
  void liveExportsIsExactWhileAnotherThreadExports() throws InterruptedException {
    ArrayExporter.drainReleases();
    long base = ArrayExporter.liveExports();
    ByteBuffer values = TestData.int32s(4, 5);
    java.util.concurrent.atomic.AtomicBoolean stop = new java.util.concurrent.atomic.AtomicBoolean();
    java.util.concurrent.atomic.AtomicReference<Throwable> failure =
        new java.util.concurrent.atomic.AtomicReference<>();
    Thread other = new Thread(() -> {
      long array = FerryNative.ferry_device_array_new();
      try {
        while (!stop.get()) {
          ArrayExporter.exportDeviceArray(queued(values, 2), array);
          Testing.cConsumeArray(array);
        }
      } catch (Throwable t) {
        failure.set(t);
      } finally {
        FerryNative.ferry_device_array_free(array);
      }
    }, "exporter");
    other.start();
    long array = FerryNative.ferry_device_array_new();
    long worst = 0;
    try {
      for (int i = 0; i < 100_000; i++) {
        ArrayExporter.exportDeviceArray(queued(values, 2), array);
        Testing.cConsumeArray(array); // released: queued for whoever pops next
        worst = Math.max(worst, ArrayExporter.liveExports() - base);
      }
    } finally {
      stop.set(true);
      other.join();
      FerryNative.ferry_device_array_free(array);
    }
    assertNull(failure.get());
    assertTrue(worst <= 1, "at most the other thread's export in progress was live, saw "
        + worst + " above the baseline");
    assertEquals(base, ArrayExporter.liveExports(), "everything released");
  }

  @Test
  void aFailedQueuedExportLeavesNothingBehind() {
    long array = FerryNative.ferry_device_array_new();
    try {
      long before = ArrayExporter.liveExports();
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
          () -> ArrayExporter.exportDeviceArray(
              ExportedBatch.of(1).buffers(null, ByteBuffer.allocate(4)), array));
      assertTrue(e.getMessage().contains("buffer 1"), e.getMessage());
      assertTrue(FerryNative.ferry_device_array_is_released(array));
      assertEquals(before, ArrayExporter.liveExports());
      // A bad device type fails in C after the hook was installed: the entry is
      // dropped and the queued release is ignored (handles are never reused).
      assertThrows(FerryException.class, () -> ArrayExporter.exportDeviceArray(
          queued(TestData.int32s(1), 1).onDevice(-77, 0), array));
      assertTrue(FerryNative.ferry_device_array_is_released(array));
      assertEquals(before, ArrayExporter.liveExports());
      // The table still works after the stale handle was drained.
      ArrayExporter.exportDeviceArray(queued(TestData.int32s(8), 1), array);
      assertEquals(before + 1, ArrayExporter.liveExports());
      assertEquals(1 + 8, Testing.cConsumeArray(array));
      assertEquals(before, ArrayExporter.liveExports());
    } finally {
      FerryNative.ferry_device_array_free(array);
    }
  }

  @Test
  void aLeakedQueuedExportIsReportedAndReleased() throws InterruptedException {
    CountDownLatch leaked = new CountDownLatch(1);
    NativeHandle.setLeakListener(what -> leaked.countDown());
    long leaksBefore = NativeHandle.leakCount();
    long before = ArrayExporter.liveExports();
    leakOne();
    assertEquals(before + 1, ArrayExporter.liveExports());
    // The nursery holds the leaked array until a GC flushes it; the next GC then
    // finds it unreachable. Bounded.
    assertTrue(TestData.gcUntil(leaked), "the safety net reported the leak");
    assertTrue(NativeHandle.leakCount() > leaksBefore);
    // The Cleaner thread's release went through the queue; a drain drops it.
    assertEquals(before, ArrayExporter.liveExports());
  }

  private static void leakOne() {
    DeviceArray a = ArrayExporter.toDeviceArray(TestData.int32Field("leak"),
        queued(TestData.int32s(1, 2, 3), 3));
    assertEquals(3, a.length());
  }

  @Test
  void promotedHandlesCloseCleanlyAndClosedOnesAreNeverPromoted() {
    AtomicInteger releasedA = new AtomicInteger();
    AtomicInteger releasedB = new AtomicInteger();
    long leaksBefore = NativeHandle.leakCount();
    DeviceArray a = ArrayExporter.toDeviceArray(TestData.int32Field("a"),
        TestData.int32Batch(2, releasedA));
    DeviceArray b = ArrayExporter.toDeviceArray(TestData.int32Field("b"),
        TestData.int32Batch(2, releasedB));
    assertTrue(NativeHandle.Nursery.tracked() >= 2);
    b.close();
    NativeHandle.promoteTracked();
    assertEquals(0, NativeHandle.Nursery.tracked(), "the flush empties every ring");
    assertEquals(0, releasedA.get(), "promotion does not release");
    assertFalse(a.isClosed());
    assertEquals(2, a.length());
    a.close(); // unregisters from the Cleaner, whose action then finds nothing to do
    a.close();
    assertEquals(1, releasedA.get());
    assertEquals(1, releasedB.get());
    assertEquals(leaksBefore, NativeHandle.leakCount(), "no leak reported for closed arrays");
  }

  @Test
  void racingClosesReleaseExactlyOnce() throws InterruptedException {
    for (int round = 0; round < 50; round++) {
      AtomicInteger released = new AtomicInteger();
      DeviceArray a = ArrayExporter.toDeviceArray(TestData.int32Field("r"),
          TestData.int32Batch(1, released));
      CountDownLatch start = new CountDownLatch(1);
      Runnable closer = () -> {
        try {
          start.await();
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
        a.close();
      };
      Thread t1 = new Thread(closer);
      Thread t2 = new Thread(closer);
      t1.start();
      t2.start();
      start.countDown();
      t1.join();
      t2.join();
      assertEquals(1, released.get(), "round " + round);
    }
  }

  @Test
  void streamBatchesHoldTheSchemaUntilTheLastOneCloses() {
    long exportsBefore = FerryNative.ferry_live_exports();
    DeviceArray first;
    DeviceArray second;
    try (DeviceArrayStream s = StreamExporter.toStream(TestData.int32Field("n"), DeviceType.CPU,
        new Batches(3))) {
      first = s.next();
      second = s.next();
      s.next().close();
      assertFalse(first.schemaIsSoleHolderForTest(), "shared with the open stream");
    }
    assertEquals("n", first.schema().name());
    first.close();
    assertTrue(second.schemaIsSoleHolderForTest(), "the last batch holds the schema alone");
    assertEquals("i", second.schema().format());
    second.close();
    assertEquals(exportsBefore, FerryNative.ferry_live_exports(),
        "the schema (a Java export) was released when the last holder closed");
  }

  private static long stat(int which) {
    return FerryNative.ferry_jni_stat(which);
  }
}
