package io.github.ferryarrow.ferry;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.ReadOnlyBufferException;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import io.github.ferryarrow.ferry.jni.FerryNative;
import io.github.ferryarrow.ferry.jni.Testing;
import org.junit.jupiter.api.Test;

class AccessorsTest {
  @Test
  void versionAndAbiMatchTheHeader() {
    assertEquals(io.github.ferryarrow.ferry.jni.FerryNativeConstants.FERRY_VERSION_STRING, FerryNative.ferry_version());
    assertEquals(io.github.ferryarrow.ferry.jni.FerryNativeConstants.FERRY_ABI_VERSION, FerryNative.ferry_abi_version());
  }

  @Test
  void int64ValuesAreNeverTruncated() {
    // A length above 2^32 travels through int64_t accessors intact.
    long big = (1L << 40) + 7;
    long array = FerryNative.ferry_array_new();
    try {
      FerryNative.ferry_array_init(array, big, 0, 0, 0, 0, 0, 0, 0);
      assertEquals(big, FerryNative.ferry_array_length(array));
    } finally {
      FerryNative.ferry_array_free(array);
    }
  }

  @Test
  void readsACProducedArrayThroughAccessors() {
    long schema = FerryNative.ferry_schema_new();
    long array = FerryNative.ferry_device_array_new();
    Testing.cProduceStatic(schema, array, 100);
    try (DeviceArray a = DeviceArray.importFrom(array, schema)) {
      assertTrue(FerryNative.ferry_device_array_is_released(array), "source left released");
      assertEquals("i", a.schema().format());
      assertEquals("static", a.schema().name());
      assertTrue(a.schema().isNullable());
      assertEquals(100, a.length());
      assertEquals(0, a.nullCount());
      assertEquals(0, a.offset());
      assertEquals(2, a.bufferCount());
      assertEquals(0, a.childCount());
      assertEquals(DeviceType.CPU, a.deviceType());
      assertEquals(-1, a.deviceId());
      assertEquals(0, a.syncEvent());
      assertNull(a.buffer(0), "absent validity buffer");
      ByteBuffer values = a.buffer(1);
      assertTrue(values.isReadOnly());
      assertTrue(values.isDirect());
      assertEquals(ByteOrder.nativeOrder(), values.order());
      assertEquals(400, values.capacity());
      for (int i = 0; i < 100; i++) assertEquals(i * 7, values.getInt(i * 4));
      assertThrows(ReadOnlyBufferException.class, () -> values.putInt(0, 1));
      assertThrows(IndexOutOfBoundsException.class, () -> a.buffer(2));
    } finally {
      FerryNative.ferry_schema_free(schema);
      FerryNative.ferry_device_array_free(array);
    }
  }

  @Test
  void exposesChildrenDictionaryAndMetadata() {
    AtomicInteger released = new AtomicInteger();
    FieldSpec field = FieldSpec.of("+s", "root")
        .withChildren(FieldSpec.of("i", "a"), FieldSpec.of("c", "b").withNullable(false))
        .withMetadata("origin", "java").withMetadata("k2", "v2");
    ExportedBatch batch = ExportedBatch.of(3).buffers((ByteBuffer) null)
        .children(ExportedBatch.of(3).buffers(null, TestData.int32s(1, 2, 3)),
            ExportedBatch.of(3).buffers(null, TestData.bytes((byte) 4, (byte) 5, (byte) 6)))
        .onRelease(released::incrementAndGet);
    try (DeviceArray a = ArrayExporter.toDeviceArray(field, batch)) {
      assertEquals(2, a.childCount());
      assertEquals(2, a.schema().childCount());
      assertEquals("a", a.schema().child(0).name());
      assertEquals("c", a.schema().child(1).format());
      assertFalse(a.schema().child(1).isNullable());
      assertEquals(Map.of("origin", "java", "k2", "v2"), a.schema().metadata());
      ArrayView b = a.child(1);
      assertEquals("b", b.schema().name());
      assertEquals(5, b.buffer(1).get(1));
      assertEquals(3, a.child(0).buffer(1).getInt(8));
      assertNull(a.dictionary());
      assertThrows(IndexOutOfBoundsException.class, () -> a.child(2));
    }
    assertEquals(1, released.get());
  }

  @Test
  void dictionaryArraysExposeTheirDictionary() {
    FieldSpec field = FieldSpec.of("i", "dict").withDictionary(FieldSpec.of("u", null));
    ByteBuffer offsets = TestData.int32s(0, 2, 4);
    ExportedBatch dictionary = ExportedBatch.of(2)
        .buffers(null, offsets, TestData.bytes((byte) 'd', (byte) '0', (byte) 'd', (byte) '1'));
    ExportedBatch batch = ExportedBatch.of(4).buffers(null, TestData.int32s(1, 0, 1, 1))
        .dictionary(dictionary);
    try (DeviceArray a = ArrayExporter.toDeviceArray(field, batch)) {
      ArrayView d = a.dictionary();
      assertEquals(2, d.length());
      assertEquals("u", d.schema().format());
      assertEquals(4, d.bufferSize(2), "data size read from the last offset");
      assertEquals('1', d.buffer(2).get(3));
      a.validate(true);
    }
  }

  @Test
  void viewsOfTheSameMemoryAreMadeOnceAndSizedPerArray() {
    ByteBuffer values = TestData.int32s(1, 2, 3, 4, 5, 6, 7, 8);
    long made = BufferViews.made();
    for (int round = 0; round < 3; round++) {
      try (DeviceArray a = ArrayExporter.toDeviceArray(TestData.int32Field("x"),
          ExportedBatch.of(8).buffers(null, values))) {
        ByteBuffer view = a.buffer(1);
        assertEquals(32, view.capacity());
        assertEquals(8, view.getInt(28));
        view.position(4); // a caller's position is its own
        assertEquals(0, a.buffer(1).position());
      }
    }
    assertEquals(made + 1, BufferViews.made(), "one view for the same memory");
    // The same address with another length is another view, sized for it.
    try (DeviceArray a = ArrayExporter.toDeviceArray(TestData.int32Field("x"),
        ExportedBatch.of(3).buffers(null, values))) {
      assertEquals(12, a.buffer(1).capacity());
      assertThrows(IndexOutOfBoundsException.class, () -> a.buffer(1).getInt(12));
    }
  }
}
