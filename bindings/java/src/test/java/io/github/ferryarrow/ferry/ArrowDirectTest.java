package io.github.ferryarrow.ferry;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.ferryarrow.ferry.arrow.ArrowJava;
import io.github.ferryarrow.ferry.jni.FerryNative;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.apache.arrow.c.CDataDictionaryProvider;
import org.apache.arrow.vector.BitVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.TimeStampMicroTZVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.complex.ListVector;
import org.apache.arrow.vector.complex.StructVector;
import org.apache.arrow.vector.complex.impl.UnionListWriter;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;
import org.junit.jupiter.api.Test;

/**
 * The direct bridge between ferry arrays and Arrow Java vectors (ArrowJava's fast
 * path for the common layouts) and the general way it falls back to: same
 * values, zero copy, exactly one release, nothing left in the allocator.
 */
class ArrowDirectTest extends ArrowAllocatorTest {
  private VarCharVector words(String name, String... values) {
    VarCharVector v = new VarCharVector(name, allocator);
    v.allocateNew();
    for (int i = 0; i < values.length; i++) {
      if (values[i] == null) v.setNull(i);
      else v.setSafe(i, values[i].getBytes(StandardCharsets.UTF_8));
    }
    v.setValueCount(values.length);
    return v;
  }

  @Test
  void utf8GoesBothWaysWithoutCopyingAndSurvivesTheCallersClose() {
    try (VarCharVector source = words("w", "a", null, "été", "")) {
      long data = source.getDataBufferAddress();
      DeviceArray ferry = ArrowJava.fromVector(source, allocator);
      source.close(); // the export holds the buffers
      assertEquals("u", ferry.schema().format());
      assertEquals(1, ferry.nullCount());
      assertEquals(data, ferry.bufferAddress(2), "zero-copy into ferry");
      try (ferry; VarCharVector back = (VarCharVector) ArrowJava.toVector(ferry, allocator)) {
        assertTrue(ferry.isClosed(), "moved into Arrow Java");
        ferry.close(); // the caller's close (try-with-resources) frees nothing now
        assertEquals(data, back.getDataBufferAddress(), "zero-copy back");
        assertEquals("w", back.getField().getName());
        assertEquals("a", new String(back.get(0), StandardCharsets.UTF_8));
        assertTrue(back.isNull(1));
        assertEquals("été", new String(back.get(2), StandardCharsets.UTF_8));
        assertEquals(0, back.get(3).length);
      }
    }
  }

  @Test
  void emptyVectorsAndEmptyStringsTakeTheGeneralWay() {
    try (IntVector empty = new IntVector("e", allocator);
        VarCharVector blanks = words("b", "", "")) {
      empty.setValueCount(0);
      try (DeviceArray ferry = ArrowJava.fromVector(empty, allocator);
          FieldVector back = ArrowJava.toVector(ferry, allocator)) {
        assertEquals(0, back.getValueCount());
      }
      try (DeviceArray ferry = ArrowJava.fromVector(blanks, allocator);
          VarCharVector back = (VarCharVector) ArrowJava.toVector(ferry, allocator)) {
        assertEquals(2, back.getValueCount());
        assertEquals(0, back.get(1).length);
      }
    }
  }

  @Test
  void aStructOfBoolAndTimestampGoesBothWays() {
    Field flag = new Field("flag", FieldType.nullable(ArrowType.Bool.INSTANCE), null);
    Field when = new Field("when", FieldType.nullable(
        new ArrowType.Timestamp(org.apache.arrow.vector.types.TimeUnit.MICROSECOND, "UTC")),
        null);
    Field record = new Field("r", FieldType.nullable(ArrowType.Struct.INSTANCE),
        List.of(flag, when));
    try (StructVector source = (StructVector) record.createVector(allocator)) {
      source.allocateNew();
      BitVector f = (BitVector) source.getChild("flag");
      TimeStampMicroTZVector t = (TimeStampMicroTZVector) source.getChild("when");
      for (int i = 0; i < 5; i++) {
        source.setIndexDefined(i);
        f.setSafe(i, i % 2);
        if (i == 3) t.setNull(i); else t.setSafe(i, 1000L * i);
      }
      f.setValueCount(5);
      t.setValueCount(5);
      source.setValueCount(5);
      try (DeviceArray ferry = ArrowJava.fromVector(source, allocator)) {
        assertEquals("+s", ferry.schema().format());
        assertEquals("tsu:UTC", ferry.schema().child(1).format());
        assertEquals(1000L * 4, ferry.child(1).getLong(4));
        assertTrue(ferry.child(0).getBoolean(3));
        try (StructVector back = (StructVector) ArrowJava.toVector(ferry, allocator)) {
          assertEquals(record, back.getField());
          BitVector bf = (BitVector) back.getChild("flag");
          TimeStampMicroTZVector bt = (TimeStampMicroTZVector) back.getChild("when");
          for (int i = 0; i < 5; i++) {
            assertEquals(i % 2, bf.get(i));
            assertEquals(i == 3, bt.isNull(i));
            if (i != 3) assertEquals(1000L * i, bt.get(i));
          }
        }
      }
    }
  }

  @Test
  void aListTakesTheGeneralWay() {
    try (ListVector source = ListVector.empty("l", allocator)) {
      UnionListWriter w = source.getWriter();
      for (int i = 0; i < 3; i++) {
        w.setPosition(i);
        w.startList();
        for (int j = 0; j <= i; j++) w.writeInt(10 * i + j);
        w.endList();
      }
      source.setValueCount(3);
      try (DeviceArray ferry = ArrowJava.fromVector(source, allocator)) {
        assertEquals("+l", ferry.schema().format());
        assertEquals(3, ferry.listEnd(1));
        try (ListVector back = (ListVector) ArrowJava.toVector(ferry, allocator)) {
          assertEquals(List.of(20, 21, 22), back.getObject(2));
        }
      }
    }
  }

  @Test
  void arrowJavaGetsFullyValidatedArraysUnlessToldOtherwise() {
    // utf8 "\xff": valid structure, invalid UTF-8 (DEFAULT does not read the bytes).
    FieldSpec spec = FieldSpec.of("u", "bad");
    ExportedBatch batch = ExportedBatch.of(1).buffers(null, TestData.int32s(0, 1),
        TestData.bytes((byte) 0xff));
    try (DeviceArray ferry = ArrayExporter.toDeviceArray(spec, batch)) {
      FerryException e = assertThrows(FerryException.class, () ->
          ArrowJava.toVector(ferry, allocator));
      assertTrue(e.getMessage().startsWith("the array fails validation: "), e.getMessage());
      assertFalse(ferry.isClosed(), "a finding leaves the array as it was");
      try (FieldVector back = ArrowJava.toVector(ferry, allocator, new CDataDictionaryProvider(),
          Validation.DEFAULT)) { // the explicit choice: structure only
        assertTrue(ferry.isClosed());
        assertEquals(1, ((VarCharVector) back).get(0).length);
      }
    }
  }

  @Test
  void transferMovesOwnershipAndReleasesOnce() {
    java.util.concurrent.atomic.AtomicInteger released = new java.util.concurrent.atomic.AtomicInteger();
    DeviceArray first = ArrayExporter.toDeviceArray(TestData.int32Field("x"),
        TestData.int32Batch(4, released));
    long address = first.bufferAddress(1);
    DeviceArray second = first.transfer();
    assertTrue(first.isClosed());
    assertThrows(IllegalStateException.class, first::transfer);
    first.close();
    assertEquals(0, released.get(), "the first object's close released nothing");
    assertEquals(address, second.bufferAddress(1));
    second.close();
    ArrayExporter.drainReleases();
    assertEquals(1, released.get());
  }

  @Test
  void aOneColumnUtf8StreamReadsAsRecordBatches() throws IOException {
    FieldSpec spec = FieldSpec.of("u", "s");
    java.util.Iterator<ExportedBatch> batches = List.of(
        ExportedBatch.of(2).buffers(null, TestData.int32s(0, 1, 3),
            TestData.bytes((byte) 'a', (byte) 'b', (byte) 'c')),
        ExportedBatch.of(1).buffers(null, TestData.int32s(0, 2),
            TestData.bytes((byte) 'd', (byte) 'e'))).iterator();
    try (DeviceArrayStream stream = StreamExporter.toStream(spec, DeviceType.CPU, batches);
        ArrowReader reader = ArrowJava.toReader(stream, allocator)) {
      assertTrue(stream.isClosed());
      VectorSchemaRoot root = reader.getVectorSchemaRoot();
      assertEquals(new Schema(List.of(new Field("s", FieldType.nullable(ArrowType.Utf8.INSTANCE),
          null))), root.getSchema());
      assertTrue(reader.loadNextBatch());
      VarCharVector v = (VarCharVector) root.getVector(0);
      assertEquals("bc", new String(v.get(1), StandardCharsets.UTF_8));
      assertTrue(reader.loadNextBatch());
      assertEquals(1, root.getRowCount());
      assertEquals("de", new String(v.get(0), StandardCharsets.UTF_8));
      assertFalse(reader.loadNextBatch());
    }
  }

  @Test
  void aReaderWithAListColumnTakesTheGeneralWay() throws IOException {
    Field ints = new Field("l", FieldType.nullable(ArrowType.List.INSTANCE),
        List.of(new Field("$data$", FieldType.nullable(new ArrowType.Int(32, true)), null)));
    VectorSchemaRoot root = VectorSchemaRoot.create(new Schema(List.of(ints)), allocator);
    ListVector l = (ListVector) root.getVector(0);
    UnionListWriter w = l.getWriter();
    w.setPosition(0);
    w.startList();
    w.writeInt(7);
    w.endList();
    root.setRowCount(1);
    ArrowReader one = new ArrowReader(allocator) {
      private boolean done;

      @Override
      public boolean loadNextBatch() {
        if (done) return false;
        done = true;
        return true;
      }

      @Override
      public long bytesRead() {
        return 0;
      }

      @Override
      protected void closeReadSource() {
        root.close();
      }

      @Override
      protected Schema readSchema() {
        return root.getSchema();
      }

      @Override
      public VectorSchemaRoot getVectorSchemaRoot() {
        return root;
      }
    };
    try (DeviceArrayStream stream = ArrowJava.fromReader(one, allocator)) {
      try (DeviceArray batch = stream.next()) {
        assertEquals("+l", batch.schema().child(0).format());
        assertEquals(7, batch.child(0).child(0).getInt(0));
      }
      assertEquals(null, stream.next());
    }
  }
}
