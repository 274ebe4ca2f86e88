package io.github.ferryarrow.ferry;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.ferryarrow.ferry.jni.FerryNative;
import io.github.ferryarrow.ferry.jni.Testing;
import org.junit.jupiter.api.Test;

class StreamTest {
  @Test
  void aJavaIteratorIsConsumedAsADeviceStream() {
    Batches batches = new Batches(4);
    long before = ArrayExporter.liveExports();
    try (DeviceArrayStream s = StreamExporter.toStream(TestData.int32Field("n"), DeviceType.CPU,
        batches)) {
      assertEquals(DeviceType.CPU, s.deviceType());
      assertEquals("n", s.schema().name());
      int count = 0;
      for (DeviceArray batch : s) {
        try (batch) {
          count++;
          assertEquals(count, batch.length());
          assertEquals((count - 1) * 10, batch.buffer(1).getInt((count - 1) * 4));
          assertEquals("i", batch.schema().format());
        }
      }
      assertEquals(4, count);
      assertNull(s.next(), "end of stream is sticky");
      assertEquals(4, batches.released.get());
    }
    assertEquals(1, batches.closes.get(), "the iterator is closed when the stream is released");
    assertEquals(before, ArrayExporter.liveExports());
  }

  @Test
  void batchesOutliveTheirStream() {
    DeviceArray kept;
    try (DeviceArrayStream s = StreamExporter.toStream(TestData.int32Field("n"), DeviceType.CPU,
        new Batches(2))) {
      kept = s.next();
    }
    try (kept) {
      assertEquals(1, kept.length());
      assertEquals("n", kept.schema().name());
    }
  }

  @Test
  void anExceptionInTheIteratorReachesAJavaConsumerAsEio() {
    Batches batches = new Batches(5, 2, new IllegalStateException("disk on fire"));
    try (DeviceArrayStream s = StreamExporter.toStream(TestData.int32Field("n"), DeviceType.CPU,
        batches)) {
      s.next().close();
      s.next().close();
      FerryException e = assertThrows(FerryException.class, s::next);
      assertEquals(FerryException.EIO, e.code());
      assertTrue(e.getMessage().contains("disk on fire"), e.getMessage());
      assertTrue(e.getMessage().contains("IllegalStateException"), e.getMessage());
    }
    assertEquals(2, batches.released.get());
  }

  @Test
  void aFerryExceptionKeepsItsCodeAcrossTheCBoundary() {
    Batches batches = new Batches(5, 0, new FerryException(FerryException.EINVAL, "bad batch"));
    long stream = FerryNative.ferry_array_stream_new();
    try {
      StreamExporter.export(TestData.int32Field("n"), DeviceType.CPU, batches, stream);
      long array = FerryNative.ferry_device_array_new();
      try {
        FerryException e = assertThrows(FerryException.class,
            () -> FerryNative.ferry_array_stream_get_next(stream, array));
        assertEquals(FerryException.EINVAL, e.code());
        assertEquals("bad batch", e.getMessage());
        assertEquals("bad batch", FerryNative.ferry_array_stream_get_last_error(stream));
      } finally {
        FerryNative.ferry_device_array_free(array);
      }
    } finally {
      FerryNative.ferry_array_stream_free(stream);
    }
    assertEquals(1, batches.closes.get());
  }

  /** Exports {@code batches} (field "n") as a device stream that a native thread
   *  the JVM has never seen pulls to its end, releasing it. Returns the error
   *  message or null; stats = {rc, batches, total length}. */
  private static String pullOnForeignThread(Batches batches, long[] stats) {
    long stream = FerryNative.ferry_array_stream_new();
    try {
      StreamExporter.export(TestData.int32Field("n"), DeviceType.CPU, batches, stream);
      String error = Testing.pullStreamOnForeignThread(stream, stats);
      assertTrue(FerryNative.ferry_array_stream_is_released(stream), "released by the puller");
      return error;
    } finally {
      FerryNative.ferry_array_stream_free(stream);
    }
  }

  @Test
  void aNativeThreadTheJvmNeverSawPullsAJavaStream() {
    Batches batches = new Batches(6);
    long attachedBefore = FerryNative.ferry_jni_stat(FerryNative.FERRY_JNI_STAT_ATTACHED_THREADS);
    long detachedBefore = FerryNative.ferry_jni_stat(FerryNative.FERRY_JNI_STAT_DETACHED_THREADS);
    long[] stats = new long[3];
    assertNull(pullOnForeignThread(batches, stats));
    assertEquals(0, stats[0]);
    assertEquals(6, stats[1]);
    assertEquals(1 + 2 + 3 + 4 + 5 + 6, stats[2]);
    assertEquals(6, batches.released.get(), "every batch released on the native thread");
    assertEquals(1, batches.closes.get());
    assertTrue(batches.daemonThreads.stream().allMatch(d -> d), "attached as a daemon");
    assertTrue(batches.threadNames.stream().allMatch(n -> n.equals("ferry-native-callback")));
    assertEquals(attachedBefore + 1,
        FerryNative.ferry_jni_stat(FerryNative.FERRY_JNI_STAT_ATTACHED_THREADS),
        "attached once for all callbacks");
    assertEquals(detachedBefore + 1,
        FerryNative.ferry_jni_stat(FerryNative.FERRY_JNI_STAT_DETACHED_THREADS),
        "detached when the thread exited");
  }

  @Test
  void anExceptionOnANativeThreadBecomesEioAndTheMessage() {
    Batches batches = new Batches(6, 3, new RuntimeException("broken producer"));
    long[] stats = new long[3];
    String error = pullOnForeignThread(batches, stats);
    assertNotNull(error);
    assertEquals(FerryException.EIO, stats[0]);
    assertEquals(3, stats[1]);
    assertTrue(error.contains("broken producer"), error);
    assertEquals(3, batches.released.get());
    assertEquals(1, batches.closes.get());
  }

  @Test
  void aCProducedStreamIsIteratedInJava() {
    long stream = FerryNative.ferry_array_stream_new();
    Testing.cStaticStream(stream, 16);
    try (DeviceArrayStream s = DeviceArrayStream.importFrom(stream)) {
      assertTrue(FerryNative.ferry_array_stream_is_released(stream));
      assertEquals("static", s.schema().name());
      for (int i = 0; i < 3; i++) {
        try (DeviceArray batch = s.next()) {
          assertEquals(16, batch.length());
          assertEquals(15 * 7, batch.buffer(1).getInt(15 * 4));
        }
      }
      assertFalse(s.isClosed());
    } finally {
      FerryNative.ferry_array_stream_free(stream);
    }
  }

  @Test
  void aCursorWalksAStreamReleasingEachBatchOnAdvance() {
    Batches batches = new Batches(3);
    try (DeviceArrayStream s = StreamExporter.toStream(TestData.int32Field("n"), DeviceType.CPU,
        batches)) {
      try (DeviceArrayStream.Cursor cursor = s.cursor()) {
        assertTrue(cursor.advance());
        assertEquals(1, cursor.length());
        assertEquals(0, batches.released.get(), "the current batch is borrowed");
        assertTrue(cursor.advance());
        assertEquals(2, cursor.length());
        assertEquals(1, batches.released.get(), "advancing released the previous batch");
        assertTrue(cursor.bufferAddress(1) != 0);
        assertTrue(cursor.advance());
        assertFalse(cursor.advance(), "end");
        assertEquals(-1, cursor.length());
        assertEquals(3, batches.released.get());
      }
    }
    assertEquals(1, batches.closes.get());
  }

  @Test
  void aCursorReportsTheProducersError() {
    Batches batches = new Batches(3, 1, new IllegalArgumentException("nope"));
    try (DeviceArrayStream s = StreamExporter.toStream(TestData.int32Field("n"), DeviceType.CPU,
        batches); DeviceArrayStream.Cursor cursor = s.cursor()) {
      assertTrue(cursor.advance());
      FerryException e = assertThrows(FerryException.class, cursor::advance);
      assertEquals(FerryException.EIO, e.code());
      assertTrue(e.getMessage().contains("nope"), e.getMessage());
    }
    assertEquals(1, batches.released.get());
  }
}
