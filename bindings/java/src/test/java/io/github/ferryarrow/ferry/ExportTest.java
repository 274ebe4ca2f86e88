package io.github.ferryarrow.ferry;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.concurrent.atomic.AtomicInteger;
import io.github.ferryarrow.ferry.jni.FerryNative;
import io.github.ferryarrow.ferry.jni.NativeStructs;
import io.github.ferryarrow.ferry.jni.Testing;
import org.junit.jupiter.api.Test;

class ExportTest {
  @Test
  void directBuffersAreExportedWithoutCopying() {
    ByteBuffer values = TestData.int32s(3, 1, 4, 1, 5);
    long javaAddress = FerryNative.ferry_jni_direct_address(values);
    try (NativeStructs out = NativeStructs.allocate()) {
      long schema = out.schema(), array = out.array();
      ArrayExporter.export(TestData.int32Field("pi"), ExportedBatch.of(5).buffers(null, values),
          array, schema);
      // The C side sees the very same address.
      long cAddress = FerryNative.ferry_array_buffer(FerryNative.ferry_device_array_array(array), 1);
      assertEquals(javaAddress, cAddress);
      assertEquals(0, FerryNative.ferry_array_buffer(FerryNative.ferry_device_array_array(array), 0));
      // A write through Java is visible to the C consumer: no copy was made.
      values.putInt(0, 42);
      assertEquals(5 + 42, Testing.cConsumeArray(array));
    }
  }

  @Test
  void exportedBuffersStayReachableUntilTheConsumerReleases() {
    AtomicInteger released = new AtomicInteger();
    long array = FerryNative.ferry_device_array_new();
    try {
      exportAndForget(array, released);
      // Only the handle table keeps the buffer alive now; churn the heap.
      for (int i = 0; i < 20; i++) {
        byte[][] garbage = new byte[64][];
        for (int j = 0; j < garbage.length; j++) garbage[j] = new byte[64 * 1024];
        System.gc();
      }
      assertEquals(0, released.get());
      assertEquals(1000 + 0, Testing.cConsumeArray(array), "length + first value, after GC");
      assertEquals(1, released.get());
    } finally {
      FerryNative.ferry_device_array_free(array);
    }
  }

  private static void exportAndForget(long array, AtomicInteger released) {
    ArrayExporter.exportDeviceArray(TestData.int32Batch(1000, released), array);
  }

  @Test
  void heapBuffersAreRefusedAndNothingLeaks() {
    long before = ArrayExporter.liveExports();
    long array = FerryNative.ferry_device_array_new();
    AtomicInteger released = new AtomicInteger();
    try {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
          () -> ArrayExporter.exportDeviceArray(ExportedBatch.of(1)
              .buffers(null, ByteBuffer.allocate(4)).onRelease(released::incrementAndGet), array));
      assertTrue(e.getMessage().contains("buffer 1"), e.getMessage());
      assertTrue(FerryNative.ferry_device_array_is_released(array));
    } finally {
      FerryNative.ferry_device_array_free(array);
    }
    assertEquals(before, ArrayExporter.liveExports());
    assertEquals(0, released.get(), "a failed export runs no release action");
  }

  @Test
  void aFailedExportLeavesBothStructsReleased() {
    long before = ArrayExporter.liveExports();
    try (NativeStructs out = NativeStructs.allocate()) {
      long schema = out.schema(), array = out.array();
      // The child's heap buffer fails after the parent array was initialised
      // with its release hook: the hook runs, but no release action does.
      AtomicInteger released = new AtomicInteger();
      FieldSpec field = FieldSpec.of("+s", "s").withChildren(TestData.int32Field("a"));
      ExportedBatch batch = ExportedBatch.of(1).buffers((ByteBuffer) null)
          .children(ExportedBatch.of(1).buffers(null, ByteBuffer.allocate(4)))
          .onRelease(released::incrementAndGet);
      assertThrows(IllegalArgumentException.class,
          () -> ArrayExporter.export(field, batch, array, schema));
      assertEquals(0, released.get());
      assertTrue(FerryNative.ferry_schema_is_released(schema));
      assertTrue(FerryNative.ferry_device_array_is_released(array));
      assertEquals(before, ArrayExporter.liveExports());
    }
  }
}
