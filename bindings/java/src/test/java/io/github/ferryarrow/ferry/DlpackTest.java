package io.github.ferryarrow.ferry;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.concurrent.atomic.AtomicInteger;
import io.github.ferryarrow.ferry.jni.FerryNative;
import org.junit.jupiter.api.Test;

/** DLPack tensors as long addresses, on the CPU. */
class DlpackTest {
  @Test
  void anArrayBecomesATensorAndComesBackWithoutCopying() {
    ByteBuffer values = TestData.int32s(1, 2, 3, 4, 5);
    long address = FerryNative.ferry_jni_direct_address(values);
    long before = ArrayExporter.liveExports();
    DeviceArray a = ArrayExporter.toDeviceArray(TestData.int32Field("x"),
        ExportedBatch.of(5).buffers(null, values));
    long tensor = a.toDlpack();
    assertNotEquals(0, tensor);
    assertTrue(a.isClosed(), "the array moved into the tensor");
    Dlpack.Tensor t = Dlpack.describe(tensor);
    assertEquals(1, t.versionMajor());
    assertEquals(1, t.ndim());
    assertEquals(5, t.length());
    assertEquals(Dlpack.CODE_INT, t.code());
    assertEquals(32, t.bits());
    assertEquals(1, t.lanes());
    assertEquals(DeviceType.CPU, t.deviceType());
    assertEquals(0, t.deviceId(), "DLPack's CPU is device 0");
    assertTrue((t.flags() & Dlpack.FLAG_READ_ONLY) != 0, "Arrow data is immutable");
    assertEquals(0, t.flags() & Dlpack.FLAG_IS_COPIED);
    assertEquals(address, t.data() + t.byteOffset(), "the tensor is over the same memory");
    assertEquals(before + 1, ArrayExporter.liveExports(), "the tensor keeps the export alive");

    try (DeviceArray back = DeviceArray.fromDlpack(tensor)) {
      assertEquals(5, back.length());
      assertEquals("i", back.schema().format());
      assertEquals(address, back.bufferAddress(1), "zero-copy both ways");
      assertEquals(5, back.buffer(1).getInt(16));
    }
    // Closing the import called the deleter, which released the original export.
    assertEquals(before, ArrayExporter.liveExports());
  }

  @Test
  void deletingATensorReleasesTheArray() {
    AtomicInteger released = new AtomicInteger();
    DeviceArray a = ArrayExporter.toDeviceArray(TestData.int32Field("x"),
        TestData.int32Batch(3, released));
    long tensor = a.toDlpack(0);
    assertEquals(0, released.get());
    Dlpack.delete(tensor);
    assertEquals(1, released.get());
    Dlpack.delete(0); // ignored
  }

  @Test
  void anArrayWithNullsIsRefusedAndStaysUsable() {
    AtomicInteger released = new AtomicInteger();
    ByteBuffer validity = TestData.bytes((byte) 0b101);
    DeviceArray a = ArrayExporter.toDeviceArray(TestData.int32Field("x"),
        ExportedBatch.of(3).nullCount(1).buffers(validity, TestData.int32s(1, 0, 3))
            .onRelease(released::incrementAndGet));
    FerryException e = assertThrows(FerryException.class, a::toDlpack);
    assertEquals(FerryException.EINVAL, e.code());
    assertFalse(a.isClosed(), "nothing changed on failure");
    assertEquals(3, a.length());
    a.close();
    assertEquals(1, released.get());
  }

  @Test
  void aNullTensorIsRefused() {
    assertThrows(IllegalArgumentException.class, () -> DeviceArray.fromDlpack(0));
  }
}
