package io.github.ferryarrow.ferry;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.math.BigDecimal;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** The checked value readers of DeviceArray / ArrayView (issue 20, item 13). */
class ValueReadersTest {
  private static ByteBuffer direct(int size) {
    return ByteBuffer.allocateDirect(size).order(ByteOrder.nativeOrder());
  }

  private static ByteBuffer longs(long... values) {
    ByteBuffer b = direct(8 * values.length);
    for (long v : values) b.putLong(v);
    return b.clear();
  }

  private static ByteBuffer validity(boolean... valid) {
    ByteBuffer b = direct((valid.length + 7) / 8 + 1);
    for (int i = 0; i < valid.length; i++) {
      if (valid[i]) b.put(i / 8, (byte) (b.get(i / 8) | (1 << (i % 8))));
    }
    return b;
  }

  private static DeviceArray of(String format, ExportedBatch batch) {
    return ArrayExporter.toDeviceArray(FieldSpec.of(format, "x"), batch);
  }

  @Test
  void int32WithNullsAndAnOffset() {
    // Physical [7, 8, 9, 10], offset 1: logical [8, null, 10].
    ByteBuffer bits = validity(true, true, false, true);
    try (DeviceArray a = of("i", ExportedBatch.of(3).offset(1).nullCount(1)
        .buffers(bits, TestData.int32s(7, 8, 9, 10)))) {
      assertTrue(a.isValid(0));
      assertTrue(a.isNull(1));
      assertFalse(a.isNull(2));
      assertEquals(8, a.getInt(0));
      assertEquals(10, a.getInt(2));
      IndexOutOfBoundsException e = assertThrows(IndexOutOfBoundsException.class,
          () -> a.getInt(3));
      assertEquals("index 3 out of range for length 3", e.getMessage());
      assertThrows(IndexOutOfBoundsException.class, () -> a.isNull(-1));
      FerryException wrong = assertThrows(FerryException.class, () -> a.getLong(0));
      assertEquals(FerryException.EINVAL, wrong.code());
      assertTrue(wrong.getMessage().contains("'i'"), wrong.getMessage());
    }
  }

  @Test
  void everyFixedWidth() {
    ByteBuffer b8 = direct(2).put(0, (byte) -3).put(1, (byte) 4);
    try (DeviceArray a = of("c", ExportedBatch.of(2).buffers(null, b8))) {
      assertEquals(-3, a.getByte(0));
      assertEquals(4, a.getByte(1));
    }
    ByteBuffer b16 = direct(4).putShort(0, (short) -300).putShort(2, (short) 7);
    try (DeviceArray a = of("s", ExportedBatch.of(2).buffers(null, b16))) {
      assertEquals(-300, a.getShort(0));
      assertEquals(7, a.getShort(1));
    }
    try (DeviceArray a = of("l", ExportedBatch.of(2).buffers(null, longs(-1L << 40, 5)))) {
      assertEquals(-1L << 40, a.getLong(0));
      assertEquals(5, a.getLong(1));
    }
    try (DeviceArray a = of("tsu:UTC", ExportedBatch.of(1).buffers(null, longs(123)))) {
      assertEquals(123, a.getLong(0));
    }
    ByteBuffer f32 = direct(8).putFloat(0, 1.5f).putFloat(4, -2.25f);
    try (DeviceArray a = of("f", ExportedBatch.of(2).buffers(null, f32))) {
      assertEquals(-2.25f, a.getFloat(1));
    }
    ByteBuffer f64 = direct(8).putDouble(0, Math.PI);
    try (DeviceArray a = of("g", ExportedBatch.of(1).buffers(null, f64))) {
      assertEquals(Math.PI, a.getDouble(0));
      assertThrows(FerryException.class, () -> a.getFloat(0));
    }
    // Booleans 1,0,1,1,0 starting at bit 2.
    ByteBuffer bools = direct(1).put(0, (byte) (0b1011 << 2 | 0b0));
    try (DeviceArray a = of("b", ExportedBatch.of(5).offset(2).buffers(null, bools))) {
      assertTrue(a.getBoolean(0));
      assertTrue(a.getBoolean(1));
      assertFalse(a.getBoolean(2));
      assertTrue(a.getBoolean(3));
      assertFalse(a.getBoolean(4));
    }
  }

  @Test
  void aBoolArrayClaimingLength2To62IsRefusedNotRead() {
    // Validation cannot know a CPU buffer's size; the reader refuses a length whose
    // buffer no view can hold, with a named error, and never reads past 64 bytes.
    try (DeviceArray a = of("b", ExportedBatch.of(1L << 62).buffers(null, direct(64)))) {
      for (long i : new long[] {0, 511, 1L << 40, (1L << 62) - 1}) {
        FerryException e = assertThrows(FerryException.class, () -> a.getBoolean(i));
        assertEquals(FerryException.ERANGE, e.code());
        assertTrue(e.getMessage().contains("bytes"), e.getMessage());
      }
      assertFalse(a.isNull(5), "null_count 0: no bitmap is read");
      assertThrows(IndexOutOfBoundsException.class, () -> a.getBoolean(1L << 62));
    }
  }

  private static ByteBuffer offsets32(int... values) {
    return TestData.int32s(values);
  }

  @Test
  void utf8AndBinaryInEveryOffsetWidth() {
    byte[] text = "héllowörld".getBytes(StandardCharsets.UTF_8);
    int split = "héllo".getBytes(StandardCharsets.UTF_8).length;
    ExportedBatch small = ExportedBatch.of(2).nullCount(0)
        .buffers(null, offsets32(0, split, text.length), TestData.bytes(text));
    try (DeviceArray a = of("u", small)) {
      assertEquals("héllo", a.getString(0));
      assertEquals("wörld", a.getString(1));
      assertArrayEquals("wörld".getBytes(StandardCharsets.UTF_8), a.getBytes(1));
    }
    try (DeviceArray a = of("U", ExportedBatch.of(2)
        .buffers(null, longs(0, split, text.length), TestData.bytes(text)))) {
      assertEquals("wörld", a.getString(1));
    }
    try (DeviceArray a = of("z", ExportedBatch.of(2)
        .buffers(null, offsets32(0, 0, 3), TestData.bytes((byte) 1, (byte) 2, (byte) 3)))) {
      assertArrayEquals(new byte[0], a.getBytes(0));
      assertArrayEquals(new byte[] {1, 2, 3}, a.getBytes(1));
      FerryException e = assertThrows(FerryException.class, () -> a.getString(1));
      assertEquals(FerryException.EINVAL, e.code());
    }
    try (DeviceArray a = of("Z", ExportedBatch.of(1)
        .buffers(null, longs(1, 3), TestData.bytes((byte) 1, (byte) 2, (byte) 3)))) {
      assertArrayEquals(new byte[] {2, 3}, a.getBytes(0));
    }
  }

  @Test
  void offsetsOutsideTheirDataAreANamedError() {
    // Element 0 spans [0, 10) while the data buffer (sized by the last offset) holds 4.
    try (DeviceArray a = of("u", ExportedBatch.of(2)
        .buffers(null, offsets32(0, 10, 4), TestData.bytes("abcd".getBytes())))) {
      FerryException e = assertThrows(FerryException.class, () -> a.getString(0));
      assertEquals(FerryException.EINVAL, e.code());
      assertTrue(e.getMessage().contains("[0, 10)"), e.getMessage());
      // Element 1 spans [10, 4): decreasing.
      assertThrows(FerryException.class, () -> a.getBytes(1));
    }
  }

  @Test
  void fixedSizeBinaryAndDecimals() {
    try (DeviceArray a = of("w:3", ExportedBatch.of(2)
        .buffers(null, TestData.bytes((byte) 1, (byte) 2, (byte) 3, (byte) 4, (byte) 5,
            (byte) 6)))) {
      assertArrayEquals(new byte[] {4, 5, 6}, a.getBytes(1));
    }
    // decimal128(10, 2): 12345 -> 123.45, -5 -> -0.05 (two's complement, little-endian).
    try (DeviceArray a = of("d:10,2", ExportedBatch.of(2)
        .buffers(null, longs(12345, 0, -5, -1)))) {
      assertEquals(new BigDecimal("123.45"), a.getBigDecimal(0));
      assertEquals(new BigDecimal("-0.05"), a.getBigDecimal(1));
    }
    try (DeviceArray a = of("d:40,3,256", ExportedBatch.of(1)
        .buffers(null, longs(7, 0, 0, 0)))) {
      assertEquals(new BigDecimal("0.007"), a.getBigDecimal(0));
    }
    try (DeviceArray a = of("d:5,1,32", ExportedBatch.of(1)
        .buffers(null, TestData.int32s(-42)))) {
      assertEquals(new BigDecimal("-4.2"), a.getBigDecimal(0));
    }
  }

  @Test
  void listsThroughTheirChild() {
    // [[1, 2], [], [3]] over child [0, 1, 2, 3] with offset 1.
    FieldSpec list = FieldSpec.of("+l", "l").withChildren(FieldSpec.of("i", "item"));
    ExportedBatch batch = ExportedBatch.of(3).buffers(null, offsets32(0, 2, 2, 3))
        .children(ExportedBatch.of(3).offset(1).buffers(null, TestData.int32s(0, 1, 2, 3)));
    try (DeviceArray a = ArrayExporter.toDeviceArray(list, batch)) {
      assertEquals(0, a.listStart(0));
      assertEquals(2, a.listEnd(0));
      assertEquals(a.listStart(1), a.listEnd(1));
      ArrayView items = a.child(0);
      assertEquals(1, items.getInt(a.listStart(0)));
      assertEquals(2, items.getInt(a.listEnd(0) - 1));
      assertEquals(3, items.getInt(a.listStart(2)));
      assertThrows(IndexOutOfBoundsException.class, () -> items.getInt(3));
    }
    FieldSpec fixed = FieldSpec.of("+w:2", "f").withChildren(FieldSpec.of("i", "item"));
    try (DeviceArray a = ArrayExporter.toDeviceArray(fixed, ExportedBatch.of(2)
        .buffers((ByteBuffer) null)
        .children(ExportedBatch.of(4).buffers(null, TestData.int32s(5, 6, 7, 8))))) {
      assertEquals(2, a.listStart(1));
      assertEquals(4, a.listEnd(1));
      assertEquals(7, a.child(0).getInt(a.listStart(1)));
    }
    // An element reaching past the child is refused.
    try (DeviceArray a = ArrayExporter.toDeviceArray(list, ExportedBatch.of(1)
        .buffers(null, offsets32(0, 9))
        .children(ExportedBatch.of(2).buffers(null, TestData.int32s(1, 2))))) {
      FerryException e = assertThrows(FerryException.class, () -> a.listEnd(0));
      assertEquals(FerryException.EINVAL, e.code());
    }
  }

  @Test
  void utf8ViewsInlineAndReferenced() {
    byte[] longValue = "a string longer than twelve".getBytes(StandardCharsets.UTF_8);
    ByteBuffer views = direct(32);
    views.putInt(0, 3).put(4, (byte) 'a').put(5, (byte) 'b').put(6, (byte) 'c');
    views.putInt(16, longValue.length).put(20, longValue, 0, 4).putInt(24, 0).putInt(28, 0);
    try (DeviceArray a = of("vu", ExportedBatch.of(2)
        .buffers(null, views, TestData.bytes(longValue), longs(longValue.length)))) {
      assertEquals("abc", a.getString(0));
      assertEquals("a string longer than twelve", a.getString(1));
    }
  }

  @Test
  void float16WidenedExactly() {
    ByteBuffer halves = direct(12);
    short[] bits = {0x3C00, (short) 0xC000, 0x3800, 0x0001, 0x7C00, 0x7E00};
    for (int k = 0; k < bits.length; k++) halves.putShort(2 * k, bits[k]);
    try (DeviceArray a = of("e", ExportedBatch.of(6).buffers(null, halves))) {
      assertEquals(1.0f, a.getFloat(0));
      assertEquals(-2.0f, a.getFloat(1));
      assertEquals(0.5f, a.getFloat(2));
      assertEquals(0x1p-24f, a.getFloat(3));
      assertEquals(Float.POSITIVE_INFINITY, a.getFloat(4));
      assertTrue(Float.isNaN(a.getFloat(5)));
      assertEquals((short) 0xC000, a.getShort(1), "the raw bits");
    }
  }

  @Test
  void unionsThroughTheirChildren() {
    // Dense +ud:3,7 over [int32 [10, 20], utf8 ["x"]]: elements 10, "x", 20.
    FieldSpec dense = FieldSpec.of("+ud:3,7", "d")
        .withChildren(FieldSpec.of("i", "n"), FieldSpec.of("u", "s"));
    ExportedBatch denseBatch = ExportedBatch.of(3)
        .buffers(TestData.bytes((byte) 3, (byte) 7, (byte) 3), offsets32(0, 0, 1))
        .children(ExportedBatch.of(2).buffers(null, TestData.int32s(10, 20)),
            ExportedBatch.of(1).buffers(null, offsets32(0, 1), TestData.bytes((byte) 'x')));
    try (DeviceArray a = ArrayExporter.toDeviceArray(dense, denseBatch)) {
      assertEquals(7, a.typeId(1));
      assertEquals(0, a.unionChild(0));
      assertEquals(1, a.unionChild(1));
      assertEquals(10, a.child(0).getInt(a.unionValueIndex(0)));
      assertEquals("x", a.child(1).getString(a.unionValueIndex(1)));
      assertEquals(20, a.child(0).getInt(a.unionValueIndex(2)));
      assertFalse(a.isNull(0), "unions have no validity bitmap");
    }
    // Sparse +us:0,1 with offset 1 over children of length 4.
    FieldSpec sparse = FieldSpec.of("+us:0,1", "s")
        .withChildren(FieldSpec.of("i", "n"), FieldSpec.of("u", "s"));
    ExportedBatch sparseBatch = ExportedBatch.of(3).offset(1)
        .buffers(TestData.bytes((byte) 9, (byte) 0, (byte) 1, (byte) 0))
        .children(ExportedBatch.of(4).buffers(null, TestData.int32s(0, 1, 2, 3)),
            ExportedBatch.of(4).buffers(null, offsets32(0, 1, 2, 3, 4),
                TestData.bytes("abcd".getBytes())));
    try (DeviceArray a = ArrayExporter.toDeviceArray(sparse, sparseBatch)) {
      assertEquals(1, a.child(0).getInt(a.unionValueIndex(0)));
      assertEquals("c", a.child(1).getString(a.unionValueIndex(1)));
      assertEquals(3, a.child(0).getInt(a.unionValueIndex(2)));
      assertThrows(IndexOutOfBoundsException.class, () -> a.typeId(3));
    }
  }

  @Test
  void runEndEncodedThroughItsRuns() {
    // Runs ends [2, 5] of values ["a", "b"]: a a b b b; offset 1 -> a b b b.
    FieldSpec ree = FieldSpec.of("+r", "r").withChildren(
        FieldSpec.of("i", "run_ends").withNullable(false), FieldSpec.of("u", "values"));
    ExportedBatch batch = ExportedBatch.of(4).offset(1).buffers()
        .children(ExportedBatch.of(2).buffers(null, TestData.int32s(2, 5)),
            ExportedBatch.of(2).buffers(null, offsets32(0, 1, 2), TestData.bytes("ab".getBytes())));
    try (DeviceArray a = ArrayExporter.toDeviceArray(ree, batch)) {
      ArrayView values = a.child(1);
      assertEquals("a", values.getString(a.runIndex(0)));
      for (int i = 1; i < 4; i++) assertEquals("b", values.getString(a.runIndex(i)));
      assertThrows(IndexOutOfBoundsException.class, () -> a.runIndex(4));
      assertThrows(FerryException.class, () -> a.getInt(0));
    }
  }

  @Test
  void dictionaryIndicesAndReadsAfterClose() {
    FieldSpec field = FieldSpec.of("i", "d").withDictionary(FieldSpec.of("u", "values"));
    ExportedBatch batch = ExportedBatch.of(2).buffers(null, TestData.int32s(1, 0))
        .dictionary(ExportedBatch.of(2).buffers(null, offsets32(0, 1, 3),
            TestData.bytes("xyz".getBytes())));
    DeviceArray a = ArrayExporter.toDeviceArray(field, batch);
    assertEquals(1, a.getInt(0));
    assertEquals("yz", a.dictionary().getString(a.getInt(0)));
    ArrayView dictionary = a.dictionary();
    a.close();
    IllegalStateException e = assertThrows(IllegalStateException.class, () -> a.getInt(0));
    assertEquals("DeviceArray is closed", e.getMessage());
    assertThrows(IllegalStateException.class, () -> dictionary.getString(0));
  }
}
