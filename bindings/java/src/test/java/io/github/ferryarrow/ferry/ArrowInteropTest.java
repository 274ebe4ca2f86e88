package io.github.ferryarrow.ferry;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.arrow.c.ArrowArray;
import org.apache.arrow.c.ArrowSchema;
import org.apache.arrow.c.Data;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.complex.StructVector;
import org.junit.jupiter.api.Test;

/** Round trips between Arrow Java (arrow-c-data) and ferry, CPU data, through the C structs. */
class ArrowInteropTest extends ArrowAllocatorTest {
  /** Arrow Java vector -> C structs -> ferry DeviceArray. */
  private DeviceArray toFerry(FieldVector vector) {
    try (ArrowArray array = ArrowArray.allocateNew(allocator);
        ArrowSchema schema = ArrowSchema.allocateNew(allocator)) {
      Data.exportVector(allocator, vector, null, array, schema);
      return DeviceArray.importArrowC(array.memoryAddress(), schema.memoryAddress());
    }
  }

  /** ferry DeviceArray -> C structs -> Arrow Java vector (the caller closes it). */
  private FieldVector toArrow(DeviceArray array) {
    try (ArrowArray cArray = ArrowArray.allocateNew(allocator);
        ArrowSchema cSchema = ArrowSchema.allocateNew(allocator)) {
      array.exportArrowC(cArray.memoryAddress(), cSchema.memoryAddress());
      return Data.importVector(allocator, cArray, cSchema, null);
    }
  }

  @Test
  void int32WithNullsRoundTrips() {
    try (IntVector source = new IntVector("ints", allocator)) {
      source.allocateNew(6);
      for (int i = 0; i < 6; i++) {
        if (i % 3 == 2) source.setNull(i); else source.set(i, i * 100 - 7);
      }
      source.setValueCount(6);
      DeviceArray ferry = toFerry(source);
      try {
        assertEquals("i", ferry.schema().format());
        assertEquals("ints", ferry.schema().name());
        assertEquals(6, ferry.length());
        assertEquals(2, ferry.nullCount());
        ByteBuffer validity = ferry.buffer(0);
        ByteBuffer values = ferry.buffer(1);
        for (int i = 0; i < 6; i++) {
          boolean valid = (validity.get(i / 8) >> (i % 8) & 1) == 1;
          assertEquals(i % 3 != 2, valid, "validity bit " + i);
          if (valid) assertEquals(i * 100 - 7, values.getInt(i * 4));
        }
        // Zero-copy: ferry sees Arrow Java's own value buffer.
        assertEquals(source.getDataBufferAddress(), ferry.bufferAddress(1));
        ferry.validate(true);
        try (IntVector back = (IntVector) toArrow(ferry)) {
          assertTrue(ferry.isClosed(), "moved out of ferry");
          assertEquals(6, back.getValueCount());
          for (int i = 0; i < 6; i++) {
            assertEquals(source.isNull(i), back.isNull(i));
            if (!source.isNull(i)) assertEquals(source.get(i), back.get(i));
          }
        }
      } finally {
        ferry.close();
      }
    }
  }

  @Test
  void utf8AndStructRoundTrip() {
    try (StructVector source = StructVector.empty("s", allocator)) {
      IntVector a = source.addOrGet("a",
          org.apache.arrow.vector.types.pojo.FieldType.nullable(
              new org.apache.arrow.vector.types.pojo.ArrowType.Int(32, true)), IntVector.class);
      VarCharVector b = source.addOrGet("b",
          org.apache.arrow.vector.types.pojo.FieldType.nullable(
              org.apache.arrow.vector.types.pojo.ArrowType.Utf8.INSTANCE), VarCharVector.class);
      source.allocateNew();
      String[] words = {"ferry", "", "zero-copy", "jni"};
      for (int i = 0; i < words.length; i++) {
        source.setIndexDefined(i);
        a.setSafe(i, i + 1);
        b.setSafe(i, words[i].getBytes(StandardCharsets.UTF_8));
      }
      source.setValueCount(words.length);
      try (DeviceArray ferry = toFerry(source)) {
        assertEquals("+s", ferry.schema().format());
        assertEquals(2, ferry.childCount());
        ArrayView strings = ferry.child(1);
        assertEquals("u", strings.schema().format());
        long dataSize = strings.bufferSize(2);
        assertEquals(String.join("", words).length(), dataSize);
        ByteBuffer data = strings.buffer(2);
        ByteBuffer offsets = strings.buffer(1);
        byte[] third = new byte[offsets.getInt(12) - offsets.getInt(8)];
        data.get(offsets.getInt(8), third);
        assertEquals("zero-copy", new String(third, StandardCharsets.UTF_8));
        try (StructVector back = (StructVector) toArrow(ferry)) {
          VarCharVector backB = (VarCharVector) back.getChild("b");
          IntVector backA = (IntVector) back.getChild("a");
          for (int i = 0; i < words.length; i++) {
            assertEquals(words[i], new String(backB.get(i), StandardCharsets.UTF_8));
            assertEquals(i + 1, backA.get(i));
          }
        }
      }
    }
  }

  @Test
  void javaExportedMemoryIsReadByArrowJavaAndReleasedThroughIt() {
    AtomicInteger released = new AtomicInteger();
    ByteBuffer offsets = TestData.int32s(0, 3, 3, 8);
    ByteBuffer data = TestData.bytes("abcdefgh".getBytes(StandardCharsets.UTF_8));
    DeviceArray ferry = ArrayExporter.toDeviceArray(FieldSpec.of("u", "words"),
        ExportedBatch.of(3).buffers(null, offsets, data).onRelease(released::incrementAndGet));
    try (VarCharVector v = (VarCharVector) toArrow(ferry)) {
      assertEquals("words", v.getName());
      assertArrayEquals("abc".getBytes(StandardCharsets.UTF_8), v.get(0));
      assertEquals(0, v.get(1).length);
      assertArrayEquals("defgh".getBytes(StandardCharsets.UTF_8), v.get(2));
      assertFalse(v.isNull(1));
      assertEquals(0, released.get());
    }
    assertEquals(1, released.get(), "closing the Arrow vector released ferry's export");
  }
}
