package io.github.ferryarrow.ferry;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.ferryarrow.ferry.arrow.ArrowJava;
import io.github.ferryarrow.ferry.arrow.BatchReader;
import io.github.ferryarrow.ferry.jni.FerryNative;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.arrow.c.ArrowArrayStream;
import org.apache.arrow.c.Data;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.apache.arrow.vector.ipc.ArrowStreamReader;
import org.apache.arrow.vector.ipc.ArrowStreamWriter;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;
import org.junit.jupiter.api.Test;

/** io.github.ferryarrow.ferry.arrow.ArrowJava: vectors and readers, both ways. */
class ArrowJavaTest extends ArrowAllocatorTest {
  private IntVector ints(String name, int n, int scale) {
    IntVector v = new IntVector(name, allocator);
    v.allocateNew(n);
    for (int i = 0; i < n; i++) {
      if (i % 4 == 3) v.setNull(i); else v.set(i, i * scale);
    }
    v.setValueCount(n);
    return v;
  }

  @Test
  void vectorsGoBothWaysWithoutCopying() {
    try (IntVector source = ints("x", 10, 3)) {
      long data = source.getDataBufferAddress();
      try (DeviceArray ferry = ArrowJava.fromVector(source, allocator)) {
        source.close(); // the export holds the buffers
        assertEquals(data, ferry.bufferAddress(1), "zero-copy into ferry");
        assertEquals(2, ferry.nullCount());
        try (IntVector back = (IntVector) ArrowJava.toVector(ferry, allocator)) {
          assertTrue(ferry.isClosed(), "moved into Arrow Java");
          assertEquals(data, back.getDataBufferAddress(), "zero-copy back");
          for (int i = 0; i < 10; i++) {
            assertEquals(i % 4 == 3, back.isNull(i));
            if (i % 4 != 3) assertEquals(i * 3, back.get(i));
          }
        }
      }
    }
  }

  @Test
  void aSimArrayIsBroughtToTheHostForArrowJava() {
    try (IntVector source = ints("x", 8, 5);
        DeviceArray cpu = ArrowJava.fromVector(source, allocator);
        DeviceArray onSim = cpu.copyTo(Device.sim(0));
        FieldVector back = ArrowJava.toVector(onSim, allocator)) {
      assertTrue(onSim.isClosed());
      IntVector ints = (IntVector) back;
      assertEquals(8, ints.getValueCount());
      assertEquals(30, ints.get(6));
      assertTrue(ints.isNull(7));
    }
  }

  /** An Arrow IPC stream of {@code batches} record batches {a: int32, b: utf8}. */
  private ArrowReader ipcReader(int batches) throws IOException {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (IntVector a = new IntVector("a", allocator);
        VarCharVector b = new VarCharVector("b", allocator);
        VectorSchemaRoot root = new VectorSchemaRoot(List.of(a.getField(), b.getField()),
            List.<FieldVector>of(a, b));
        ArrowStreamWriter writer = new ArrowStreamWriter(root, null, bytes)) {
      writer.start();
      for (int k = 0; k < batches; k++) {
        a.allocateNew(3);
        b.allocateNew(3);
        for (int i = 0; i < 3; i++) {
          a.set(i, k * 10 + i);
          b.setSafe(i, ("w" + k + i).getBytes(StandardCharsets.UTF_8));
        }
        root.setRowCount(3);
        writer.writeBatch();
      }
      writer.end();
    }
    return new ArrowStreamReader(new ByteArrayInputStream(bytes.toByteArray()), allocator);
  }

  @Test
  void anArrowReaderBecomesAFerryStream() throws IOException {
    try (DeviceArrayStream stream = ArrowJava.fromReader(ipcReader(3), allocator)) {
      assertEquals("+s", stream.schema().format());
      assertEquals(DeviceType.CPU, stream.deviceType());
      int k = 0;
      for (DeviceArray batch : stream) {
        try (batch) {
          assertEquals(3, batch.length());
          ByteBuffer a = batch.child(0).buffer(1);
          ByteBuffer offsets = batch.child(1).buffer(1);
          ByteBuffer words = batch.child(1).buffer(2);
          for (int i = 0; i < 3; i++) {
            assertEquals(k * 10 + i, a.getInt(4 * i));
            byte[] w = new byte[offsets.getInt(4 * i + 4) - offsets.getInt(4 * i)];
            words.get(offsets.getInt(4 * i), w);
            assertEquals("w" + k + i, new String(w, StandardCharsets.UTF_8));
          }
        }
        k++;
      }
      assertEquals(3, k);
    }
  }

  /** A reader of {a: int32} whose first batch is [7, 8] and whose second load
   *  throws IOException({@code message}). */
  private ArrowReader readerFailingAtBatch2(String message) {
    Schema schema = new Schema(List.of(Field.nullable("a", new ArrowType.Int(32, true))));
    return new BatchReader(allocator, schema, (root, index) -> {
      if (index == 1) throw new IOException(message);
      IntVector a = (IntVector) root.getVector("a");
      a.allocateNew(2);
      a.set(0, 7);
      a.set(1, 8);
      root.setRowCount(2);
      return true;
    });
  }

  /** A plain stream's failure reaches the ferry stream with the producer's own
   *  message (the core's adapter passes it on word for word), and every later
   *  read reports the same error. */
  @Test
  void anArrowStreamFailureKeepsItsOwnMessage() {
    String message = "the test reader breaks at batch 2";
    try (ArrowArrayStream out = ArrowArrayStream.allocateNew(allocator)) {
      Data.exportArrayStream(allocator, readerFailingAtBatch2(message), out);
      try (DeviceArrayStream stream =
          DeviceArrayStream.importArrowStream(out.memoryAddress(), Validation.DEFAULT)) {
        assertEquals(0, out.snapshot().release, "moved into the ferry stream");
        try (DeviceArray batch = stream.next()) {
          assertEquals(2, batch.length());
          assertEquals(8, batch.child(0).buffer(1).getInt(4));
        }
        FerryException first = assertThrows(FerryException.class, stream::next);
        assertTrue(first.getMessage().contains(message), first.getMessage());
        assertFalse(first.getMessage().contains("the Arrow stream's"), first.getMessage());
        FerryException again = assertThrows(FerryException.class, stream::next);
        assertEquals(first.code(), again.code());
        assertEquals(first.getMessage(), again.getMessage());
      }
    }
  }

  /** Batch b [b*100, b*100+1, ...] of a Java stream, released back to us. */
  private static ExportedBatch javaBatch(int b, AtomicInteger released) {
    int[] values = new int[5];
    for (int i = 0; i < 5; i++) values[i] = b * 100 + i;
    return ExportedBatch.of(5).buffers(null, TestData.int32s(values))
        .onRelease(released::incrementAndGet);
  }

  /** The struct&lt;v: int32&gt; of {@link #javaBatch}. */
  private static ExportedBatch javaStruct(int b, AtomicInteger released) {
    return ExportedBatch.of(5).buffers((ByteBuffer) null).children(javaBatch(b, released));
  }

  @Test
  void aFerryStreamBecomesAnArrowReader() throws IOException {
    AtomicInteger released = new AtomicInteger();
    FieldSpec record = FieldSpec.of("+s", "").withChildren(FieldSpec.of("i", "v"));
    Iterator<ExportedBatch> structs = TestData.generate(4, b -> javaStruct(b, released));
    List<Integer> seen = new ArrayList<>();
    try (DeviceArrayStream stream = StreamExporter.toStream(record, DeviceType.CPU, structs);
        ArrowReader reader = ArrowJava.toReader(stream, allocator)) {
      assertTrue(stream.isClosed(), "moved into the reader");
      VectorSchemaRoot root = reader.getVectorSchemaRoot();
      assertEquals("v", root.getSchema().getFields().get(0).getName());
      while (reader.loadNextBatch()) {
        IntVector v = (IntVector) root.getVector("v");
        for (int i = 0; i < root.getRowCount(); i++) seen.add(v.get(i));
      }
      assertFalse(reader.loadNextBatch());
    }
    assertEquals(20, seen.size());
    assertEquals(Integer.valueOf(304), seen.get(19));
    assertEquals(4, released.get(), "every batch went back to its producer");
  }

  @Test
  void aSimStreamReachesArrowJavaOnTheHost() throws IOException {
    AtomicInteger released = new AtomicInteger();
    Device sim = Device.sim(1);
    FieldSpec record = FieldSpec.of("+s", "").withChildren(FieldSpec.of("i", "v"));
    // The batches are copied to the sim device (the copy's release frees it).
    Iterator<DeviceArray> onSim = TestData.generate(2, b -> {
      try (DeviceArray cpu = ArrayExporter.toDeviceArray(record, javaStruct(b, released))) {
        return cpu.copyTo(sim);
      }
    });
    long deviceStream = FerryNative.ferry_array_stream_new();
    StreamExporter.exportArrays(() -> record, sim.type(), onSim, deviceStream);
    try (DeviceArrayStream stream = DeviceArrayStream.importFrom(deviceStream);
        ArrowReader reader = ArrowJava.toReader(stream, allocator)) {
      int rows = 0;
      while (reader.loadNextBatch()) {
        IntVector v = (IntVector) reader.getVectorSchemaRoot().getVector("v");
        assertEquals(rows / 5 * 100, v.get(0), "batch " + rows / 5);
        rows += reader.getVectorSchemaRoot().getRowCount();
      }
      assertEquals(10, rows);
    } finally {
      FerryNative.ferry_array_stream_free(deviceStream);
    }
    assertEquals(2, released.get());
  }
}
