package io.github.ferryarrow.ferry;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import io.github.ferryarrow.ferry.jni.FerryNative;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class LifecycleTest {
  @AfterEach
  void noListener() {
    NativeHandle.setLeakListener(null);
  }

  @Test
  void closeReleasesExactlyOnce() {
    AtomicInteger released = new AtomicInteger();
    long exportsBefore = FerryNative.ferry_live_exports();
    long javaBefore = ArrayExporter.liveExports();
    DeviceArray a = ArrayExporter.toDeviceArray(TestData.int32Field("x"),
        TestData.int32Batch(8, released));
    assertEquals(javaBefore + 1, ArrayExporter.liveExports());
    assertEquals(0, released.get());
    a.close();
    assertEquals(1, released.get());
    a.close();
    assertEquals(1, released.get(), "second close is a no-op");
    assertTrue(a.isClosed());
    assertEquals(javaBefore, ArrayExporter.liveExports());
    assertEquals(exportsBefore, FerryNative.ferry_live_exports());
  }

  @Test
  void accessAfterCloseThrowsInsteadOfReadingFreedMemory() {
    DeviceArray a = ArrayExporter.toDeviceArray(TestData.int32Field("x"),
        TestData.int32Batch(4, new AtomicInteger()));
    ArrayView root = a.root();
    Schema schema = a.schema();
    a.close();
    IllegalStateException e = assertThrows(IllegalStateException.class, a::length);
    assertTrue(e.getMessage().contains("closed"), e.getMessage());
    assertThrows(IllegalStateException.class, root::length);
    assertThrows(IllegalStateException.class, schema::format);
  }

  @Test
  void cleanerReleasesAnUnclosedArrayAndReportsTheLeak() throws InterruptedException {
    AtomicInteger released = new AtomicInteger();
    CountDownLatch leaked = new CountDownLatch(1);
    NativeHandle.setLeakListener(what -> leaked.countDown());
    long leaksBefore = NativeHandle.leakCount();
    makeGarbage(released);
    // GC is asynchronous: ask for it until the Cleaner ran (bounded).
    assertTrue(TestData.gcUntil(leaked), "the Cleaner reported the leak");
    assertTrue(NativeHandle.leakCount() > leaksBefore);
    // The Cleaner released the array, which ran the producer's release hook.
    for (int i = 0; i < 200 && released.get() == 0; i++) {
      System.gc();
      leaked.await(10, TimeUnit.MILLISECONDS);
    }
    assertEquals(1, released.get());
  }

  private static void makeGarbage(AtomicInteger released) {
    DeviceArray a = ArrayExporter.toDeviceArray(TestData.int32Field("leak"),
        TestData.int32Batch(4, released));
    assertEquals(4, a.length());
  }

  @Test
  void exportToMovesOwnershipOut() {
    AtomicInteger released = new AtomicInteger();
    DeviceArray a = ArrayExporter.toDeviceArray(TestData.int32Field("x"),
        TestData.int32Batch(5, released));
    long schema = FerryNative.ferry_schema_new();
    long array = FerryNative.ferry_device_array_new();
    try {
      a.exportTo(array, schema);
      assertTrue(a.isClosed());
      assertEquals(0, released.get(), "moving out does not release");
      assertEquals(5, FerryNative.ferry_array_length(FerryNative.ferry_device_array_array(array)));
      assertEquals("x", FerryNative.ferry_schema_name(schema));
    } finally {
      FerryNative.ferry_device_array_free(array);
      FerryNative.ferry_schema_free(schema);
    }
    assertEquals(1, released.get());
  }
}
