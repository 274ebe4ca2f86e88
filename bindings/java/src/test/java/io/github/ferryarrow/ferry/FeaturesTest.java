package io.github.ferryarrow.ferry;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.ferryarrow.ferry.arrow.ArrowJava;
import io.github.ferryarrow.ferry.jni.FerryNative;
import io.github.ferryarrow.ferry.jni.NativeStructs;
import io.github.ferryarrow.ferry.jni.Testing;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiConsumer;
import org.apache.arrow.c.ArrowArrayStream;
import org.apache.arrow.c.Data;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.junit.jupiter.api.Test;

/**
 * One test per capability of docs/features.md (the Java column), named
 * feature_&lt;id&gt;, each calling the capability for real. Device capabilities
 * run on the sim device in strict mode, where a read that skipped its wait sees
 * poison (GpuApiTest runs them on the emulated CUDA and ROCm drivers too).
 */
class FeaturesTest {
  private static final int N = 16;

  private static int[] values(int seed) {
    int[] v = new int[N];
    for (int i = 0; i < N; i++) v[i] = seed + 7 * i;
    return v;
  }

  /** A CPU int32 array of values(seed), exported by Java. */
  private static DeviceArray cpuArray(int seed) {
    return ArrayExporter.toDeviceArray(TestData.int32Field("x"),
        ExportedBatch.of(N).buffers(null, TestData.int32s(values(seed))));
  }

  private static int[] ints(ByteBuffer b) {
    int[] out = new int[b.capacity() / 4];
    b.asIntBuffer().get(out);
    return out;
  }

  /** An int32 array of values(seed) produced on the sim device on {@code stream}:
   *  ferry records the event; the release frees the device memory. */
  private static ExportedBatch onSim(Device sim, long stream, int seed) {
    long pointer = sim.allocate(4L * N);
    ByteBuffer host = TestData.int32s(values(seed));
    sim.copyFromHost(host, pointer, stream);
    return ExportedBatch.of(N).bufferAddresses(0, pointer).producedOn(sim, stream)
        .onRelease(() -> {
          sim.synchronize(stream); // the queued copy read `host`
          sim.deallocate(pointer);
          host.clear();
        });
  }

  @Test
  void feature_export_array() {
    ByteBuffer values = TestData.int32s(values(1));
    long before = ArrayExporter.liveExports();
    try (NativeStructs out = NativeStructs.allocate()) {
      long schema = out.schema(), array = out.array();
      ArrayExporter.export(TestData.int32Field("x"), ExportedBatch.of(N).buffers(null, values),
          array, schema);
      assertEquals(before + 1, ArrayExporter.liveExports(), "Java keeps the buffer alive");
      assertEquals(FerryNative.ferry_jni_direct_address(values),
          FerryNative.ferry_array_buffer(FerryNative.ferry_device_array_array(array), 1),
          "zero-copy: the consumer sees Java's own buffer");
      assertEquals(N + 1, Testing.cConsumeArray(array), "a C consumer reads length + value 0");
      assertEquals(before, ArrayExporter.liveExports(), "the release hook reached Java");
    }
  }

  @Test
  void feature_import_array() {
    try (NativeStructs out = NativeStructs.allocate()) {
      long schema = out.schema(), array = out.array();
      Testing.cProduceStatic(schema, array, 10);
      try (DeviceArray a = DeviceArray.importFrom(array, schema)) {
        assertTrue(FerryNative.ferry_device_array_is_released(array), "moved in");
        a.await();
        assertEquals(10, a.length());
        assertEquals(7 * 9, a.buffer(1).getInt(4 * 9));
        assertTrue(a.isValid(9));
        assertEquals(7 * 9, a.getInt(9), "the checked value reader");
        a.validate(Validation.FULL);
      }
    }
  }

  @Test
  void feature_export_stream() {
    AtomicInteger released = new AtomicInteger();
    long stream = FerryNative.ferry_array_stream_new();
    try {
      StreamExporter.export(TestData.int32Field("s"), DeviceType.CPU,
          List.of(TestData.int32Batch(3, released), TestData.int32Batch(4, released)).iterator(),
          stream);
      long[] stats = new long[3];
      assertNull(Testing.pullStreamOnForeignThread(stream, stats));
      assertEquals(2, stats[1], "batches");
      assertEquals(7, stats[2], "total length");
      assertEquals(2, released.get());
    } finally {
      FerryNative.ferry_array_stream_free(stream);
    }
  }

  @Test
  void feature_import_stream() {
    long stream = FerryNative.ferry_array_stream_new();
    Testing.cStaticStream(stream, 5);
    try (DeviceArrayStream s = DeviceArrayStream.importFrom(stream)) {
      assertEquals("i", s.schema().format());
      for (int k = 0; k < 3; k++) {
        try (DeviceArray batch = s.next()) {
          assertEquals(5, batch.length());
          assertEquals(7 * 4, batch.buffer(1).getInt(16));
        }
      }
    } finally {
      FerryNative.ferry_array_stream_free(stream);
    }
  }

  /** Runs {@code body} on a plain ArrowArrayStream (the C stream interface) that
   *  ferry's exportToArrowStream made of a C stream of 5-element batches. */
  private static void onPlainStream(BiConsumer<BufferAllocator, ArrowArrayStream> body) {
    long stream = FerryNative.ferry_array_stream_new();
    Testing.cStaticStream(stream, 5);
    try (BufferAllocator allocator = new RootAllocator();
        ArrowArrayStream plain = ArrowArrayStream.allocateNew(allocator)) {
      DeviceArrayStream.importFrom(stream).exportToArrowStream(plain.memoryAddress());
      body.accept(allocator, plain);
    } finally {
      FerryNative.ferry_array_stream_free(stream);
    }
  }

  /** A device stream out as a plain ArrowArrayStream (the C stream interface),
   *  read by Arrow Java's own importer. */
  @Test
  void feature_export_c_stream() {
    onPlainStream((allocator, plain) -> {
      try (ArrowReader reader = Data.importArrayStream(allocator, plain)) {
        for (int k = 0; k < 3; k++) {
          assertTrue(reader.loadNextBatch());
          assertEquals(5, reader.getVectorSchemaRoot().getRowCount());
          assertEquals(7 * 4, ((IntVector) reader.getVectorSchemaRoot().getVector(0)).get(4));
        }
      } catch (IOException e) {
        throw new AssertionError(e);
      }
    });
  }

  /** A plain ArrowArrayStream (here Arrow Java's export of a ferry stream) in
   *  as a CPU device stream, each batch validated. */
  @Test
  void feature_import_c_stream() {
    onPlainStream((allocator, plain) -> {
      try (DeviceArrayStream s =
          DeviceArrayStream.importArrowStream(plain.memoryAddress(), Validation.DEFAULT)) {
        /* exportToArrowStream hands record batches (a struct of the columns),
         * as Arrow Java's readers expect. */
        assertEquals("+s", s.schema().format());
        for (int k = 0; k < 3; k++) {
          try (DeviceArray batch = s.next()) {
            assertEquals(DeviceType.CPU, batch.deviceType());
            assertEquals(5, batch.length());
          }
        }
      }
    });
  }

  @Test
  void feature_to_host() {
    Device sim = Device.sim(0);
    try (TestData.DeviceStreams streams = new TestData.DeviceStreams(sim, 1)) {
      long stream = streams.get(0);
      try (DeviceArray a = ArrayExporter.toDeviceArray(TestData.int32Field("x"),
          onSim(sim, stream, 2));
          DeviceArray host = a.toHost()) {
        assertTrue(a.isClosed(), "consumed");
        assertEquals(DeviceType.CPU, host.deviceType());
        assertArrayEquals(values(2), ints(host.buffer(1)), "waited, then copied: no poison");
      }
    }
  }

  @Test
  void feature_copy_to_device() {
    try (DeviceArray cpu = cpuArray(3);
        DeviceArray sim = cpu.copyTo(Device.sim(1));
        DeviceArray sim2 = sim.copyTo(Device.sim(2));
        DeviceArray back = sim2.copyTo(DeviceType.CPU, -1)) {
      assertEquals(DeviceType.SIM, sim2.deviceType());
      assertEquals(2, sim2.deviceId());
      assertNotEquals(sim.bufferAddress(1), sim2.bufferAddress(1));
      assertArrayEquals(values(3), ints(back.buffer(1)));
    }
  }

  @Test
  void feature_move_to_device() {
    DeviceArray cpu = cpuArray(4);
    long address = cpu.bufferAddress(1);
    try (DeviceArray same = cpu.moveTo(DeviceType.CPU, -1)) {
      assertEquals(address, same.bufferAddress(1), "to a device that reaches it: no copy");
      try (DeviceArray sim = same.moveTo(Device.sim(3)); DeviceArray back = sim.toHost()) {
        assertTrue(same.isClosed());
        assertArrayEquals(values(4), ints(back.buffer(1)));
      }
    }
  }

  @Test
  void feature_consumer_stream_array() {
    Device sim = Device.sim(0);
    try (TestData.DeviceStreams streams = new TestData.DeviceStreams(sim, 2)) {
      long producer = streams.get(0), consumer = streams.get(1);
      try (DeviceArray a = ArrayExporter.toDeviceArray(TestData.int32Field("x"),
          onSim(sim, producer, 5))) {
        a.waitOn(consumer);
        ByteBuffer out = ByteBuffer.allocateDirect(4 * N).order(java.nio.ByteOrder.nativeOrder());
        sim.copyToHost(a.bufferAddress(1), out, consumer);
        sim.synchronize(consumer);
        assertArrayEquals(values(5), ints(out), "ordered after the producer's event");
      }
    }
  }

  @Test
  void feature_consumer_stream_batch() {
    Device sim = Device.sim(0);
    try (TestData.DeviceStreams streams = new TestData.DeviceStreams(sim, 2)) {
      long producer = streams.get(0), consumer = streams.get(1);
      try (DeviceArrayStream s = StreamExporter.toStream(TestData.int32Field("x"), DeviceType.SIM,
          List.of(onSim(sim, producer, 6), onSim(sim, producer, 7)).iterator())) {
        for (int seed = 6; seed <= 7; seed++) {
          try (DeviceArray batch = s.nextOn(consumer)) {
            ByteBuffer out =
                ByteBuffer.allocateDirect(4 * N).order(java.nio.ByteOrder.nativeOrder());
            sim.copyToHost(batch.bufferAddress(1), out, consumer);
            sim.synchronize(consumer);
            assertArrayEquals(values(seed), ints(out));
          }
        }
        assertNull(s.nextOn(consumer));
      }
    }
  }

  @Test
  void feature_wrap_native_stream() {
    Device sim = Device.sim(1);
    try (TestData.DeviceStreams streams = new TestData.DeviceStreams(sim, 1)) {
      long users = streams.get(0); // a native stream handle the user's code works on
      try (DeviceArray a = ArrayExporter.toDeviceArray(TestData.int32Field("x"),
          onSim(sim, users, 8))) {
        assertNotEquals(0, a.syncEvent(), "an event recorded on the user's stream");
        try (DeviceArray host = a.toHost()) {
          assertArrayEquals(values(8), ints(host.buffer(1)));
        }
      }
    }
  }

  @Test
  void feature_wrap_native_event() {
    Device sim = Device.sim(1);
    long event = sim.createEvent();
    AtomicInteger eventReleased = new AtomicInteger();
    long pointer = sim.allocate(4L * N);
    ByteBuffer host = TestData.int32s(values(9));
    try (TestData.DeviceStreams streams = new TestData.DeviceStreams(sim, 1)) {
      long stream = streams.get(0);
      try {
        sim.copyFromHost(host, pointer, stream);
        sim.recordEvent(event, stream);
        ExportedBatch batch = ExportedBatch.of(N).bufferAddresses(0, pointer)
            .withSyncEvent(sim, event, () -> {
              sim.destroyEvent(event);
              eventReleased.incrementAndGet();
            });
        try (DeviceArray a = ArrayExporter.toDeviceArray(TestData.int32Field("x"), batch)) {
          assertEquals(event, a.syncEvent(), "the user's event, unchanged");
          a.await();
          assertArrayEquals(values(9), ints(a.buffer(1)));
        }
        assertEquals(1, eventReleased.get(), "released with the array");
      } finally {
        sim.synchronize(stream);
        sim.deallocate(pointer);
      }
    }
  }

  @Test
  void feature_dlpack_export() {
    DeviceArray a = cpuArray(10);
    long data = a.bufferAddress(1);
    long tensor = a.toDlpack();
    try {
      Dlpack.Tensor t = Dlpack.describe(tensor);
      assertEquals(Dlpack.MAJOR_VERSION, t.versionMajor());
      assertEquals(data, t.data() + t.byteOffset());
      assertEquals(N, t.length());
      assertEquals(32, t.bits());
      assertTrue((t.flags() & Dlpack.FLAG_READ_ONLY) != 0);
    } finally {
      Dlpack.delete(tensor);
    }
  }

  @Test
  void feature_dlpack_import() {
    DeviceArray a = cpuArray(11);
    long data = a.bufferAddress(1);
    long tensor = a.toDlpack();
    try (DeviceArray back = DeviceArray.fromDlpack(tensor)) {
      assertEquals("i", back.schema().format());
      assertEquals(data, back.bufferAddress(1), "no copy");
      assertArrayEquals(values(11), ints(back.buffer(1)));
    }
  }

  @Test
  void feature_arrow_array_interop() {
    try (BufferAllocator allocator = new RootAllocator(); IntVector v = new IntVector("v", allocator)) {
      v.allocateNew(N);
      for (int i = 0; i < N; i++) v.set(i, values(12)[i]);
      v.setValueCount(N);
      try (DeviceArray ferry = ArrowJava.fromVector(v, allocator);
          IntVector back = (IntVector) ArrowJava.toVector(ferry, allocator)) {
        assertEquals(v.getDataBufferAddress(), back.getDataBufferAddress(), "zero-copy both ways");
        assertEquals(values(12)[N - 1], back.get(N - 1));
      }
    }
  }

  @Test
  void feature_arrow_stream_bridge() throws IOException {
    try (BufferAllocator allocator = new RootAllocator()) {
      long stream = FerryNative.ferry_array_stream_new();
      Testing.cStaticStream(stream, 6);
      DeviceArrayStream endless = DeviceArrayStream.importFrom(stream);
      FerryNative.ferry_array_stream_free(stream);
      // ferry -> Arrow Java (a stream of int32 arrays: record batches of one column) ...
      ArrowReader reader = ArrowJava.toReader(endless, allocator);
      assertTrue(reader.loadNextBatch());
      assertEquals(6, reader.getVectorSchemaRoot().getRowCount());
      IntVector column = (IntVector) reader.getVectorSchemaRoot().getVector(0);
      assertEquals(7 * 5, column.get(5));
      // ... and back: the reader, read as a ferry stream, which owns and closes it.
      try (DeviceArrayStream again = ArrowJava.fromReader(reader, allocator);
          DeviceArray batch = again.next()) {
        assertEquals("+s", again.schema().format());
        assertEquals(6, batch.length());
        assertEquals(7 * 5, batch.child(0).buffer(1).getInt(4 * 5));
      }
    }
  }

  @Test
  void feature_validate() {
    ByteBuffer offsets = TestData.int32s(0, 3, 1);
    ByteBuffer data = TestData.bytes((byte) 'a', (byte) 'b', (byte) 'c');
    try (DeviceArray a = ArrayExporter.toDeviceArray(FieldSpec.of("u", "s"),
        ExportedBatch.of(2).buffers(null, offsets, data))) {
      a.validate(Validation.DEFAULT); // the structure is fine
      assertTrue(a.findings(Validation.DEFAULT).isEmpty());
      FerryException e = assertThrows(FerryException.class, () -> a.validate(Validation.FULL));
      assertEquals(FerryException.EINVAL, e.code());
      List<Finding> findings = a.findings(Validation.FULL);
      assertFalse(findings.isEmpty());
      assertEquals("offsets", findings.get(0).rule(), findings.toString());
    }
  }

  @Test
  void feature_devices() {
    List<Device.Backend> backends = Device.backends();
    assertTrue(backends.stream().anyMatch(b -> b.name().equals("sim") && b.available()));
    Device sim = Device.sim(2);
    long before = sim.liveAllocations();
    long pointer = sim.allocate(1024);
    assertEquals(before + 1, sim.liveAllocations());
    sim.deallocate(pointer);
    assertEquals(before, sim.liveAllocations());
    assertThrows(FerryException.class, () -> Device.resolve(DeviceType.SIM, 99));
  }

  @Test
  void feature_export_async() {
    // Java pushes; the core's own consumer (what a C program uses) reads.
    AtomicInteger released = new AtomicInteger();
    long handler = FerryNative.ferry_async_handler_new();
    long[] consumer = new long[1];
    FerryNative.ferry_async_consumer_create(2, FerryNative.FERRY_VALIDATE_DEFAULT, handler,
        consumer);
    try {
      AsyncExporter.export(TestData.int32Field("a"), DeviceType.CPU,
          List.of(TestData.int32Batch(N, released), TestData.int32Batch(2, released)).iterator(),
          handler);
      long array = FerryNative.ferry_device_array_new();
      try {
        FerryNative.ferry_async_consumer_next(consumer[0], array, 30_000);
        assertEquals(N, FerryNative.ferry_array_length(FerryNative.ferry_device_array_array(array)));
        FerryNative.ferry_device_array_release(array);
        FerryNative.ferry_async_consumer_next(consumer[0], array, 30_000);
        FerryNative.ferry_device_array_release(array);
        FerryNative.ferry_async_consumer_next(consumer[0], array, 30_000);
        assertTrue(FerryNative.ferry_device_array_is_released(array), "the end");
      } finally {
        FerryNative.ferry_device_array_free(array);
      }
      FerryNative.ferry_async_consumer_wait_released(consumer[0], 30_000);
    } finally {
      FerryNative.ferry_async_consumer_free(consumer[0]);
      FerryNative.ferry_async_handler_free(handler);
    }
    assertEquals(2, released.get());
  }

  @Test
  void feature_import_async() {
    // A C-produced stream, pushed by the core from a thread of its own.
    long stream = FerryNative.ferry_array_stream_new();
    try (AsyncDeviceStream consumer = AsyncDeviceStream.create(2)) {
      Testing.cStaticStream(stream, N);
      FerryNative.ferry_async_export_stream(stream, consumer.handlerAddress(),
          FerryNative.FERRY_ASYNC_EXPORT_DEFAULT);
      for (int i = 0; i < 3; i++) {
        try (DeviceArray batch = consumer.next(30_000)) {
          assertEquals(N, batch.length());
          assertEquals(7 * (N - 1), batch.getInt(N - 1));
        }
      }
      consumer.cancel();
    } finally {
      FerryNative.ferry_array_stream_free(stream);
    }
  }
}
