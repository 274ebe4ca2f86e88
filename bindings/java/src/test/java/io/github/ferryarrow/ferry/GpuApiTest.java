package io.github.ferryarrow.ferry;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.github.ferryarrow.ferry.jni.FerryNative;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The GPU side of the API on every device ferry can drive without a GPU: the sim
 * device (strict: work runs only when waited for, unwaited reads see poison) and
 * the CUDA and ROCm backends over the driver emulations of tests/gpu/emu, whose
 * device memory the host cannot dereference (the pom points FERRY_CUDA_LIBRARY /
 * FERRY_HIP_LIBRARY at BUILD/test-emu). Device memory is only ever read by
 * copying it, on the consumer's stream, into host memory.
 */
class GpuApiTest {
  private static final int N = 256;

  /** The device of a name, or a loud skip when the build has no emulation for it. */
  private static Device device(String name) {
    int type = DeviceType.fromName(name);
    if (type != DeviceType.SIM) {
      String variable = type == DeviceType.CUDA ? "FERRY_CUDA_LIBRARY" : "FERRY_HIP_LIBRARY";
      String library = System.getenv(variable);
      Assumptions.assumeTrue(library != null && java.nio.file.Files.exists(Path.of(library)),
          "SKIPPED: " + name + " needs " + variable + " naming the driver emulation of "
              + "BUILD/test-emu (scripts/build.sh builds it); it is " + library);
    }
    try {
      return Device.resolve(type, 0);
    } catch (FerryException e) {
      return fail(name + " device 0 is not available although its emulation is configured: "
          + e.getMessage());
    }
  }

  private static int[] values(int seed) {
    int[] v = new int[N];
    for (int i = 0; i < N; i++) v[i] = seed * 1000 + i;
    return v;
  }

  /** Device memory being filled from staging host memory by a queued copy. */
  private record Upload(Device device, long pointer, HostBuffer staging) {
    /** Frees both (the copy must be complete). */
    void free() {
      device.deallocate(pointer);
      staging.close();
    }
  }

  /** Copies {@code values} to new memory on {@code device}, queued on {@code stream}
   *  and staged through ferry-allocated host memory. */
  private static Upload upload(Device device, long stream, int[] values) {
    HostBuffer staging = HostBuffer.stagingFor(device, 4L * values.length);
    staging.asByteBuffer().asIntBuffer().put(values);
    long pointer = device.allocate(4L * values.length);
    Device.memcpy(device, pointer, staging.device(), staging.address(), staging.size(), stream);
    return new Upload(device, pointer, staging);
  }

  /** An int32 array of {@code values} produced on {@code stream} of {@code device}
   *  (ferry records an event there); its release waits for the copy, then frees the
   *  device memory and the staging memory, and counts. */
  private static ExportedBatch produced(Device device, long stream, int[] values,
      AtomicInteger released) {
    Upload memory = upload(device, stream, values);
    return ExportedBatch.of(values.length).bufferAddresses(0, memory.pointer())
        .producedOn(device, stream)
        .onRelease(() -> {
          device.synchronize(stream);
          memory.free();
          released.incrementAndGet();
        });
  }

  /** Copies an array's values buffer into host memory on {@code stream} and waits
   *  for that stream only. */
  private static int[] readOn(DeviceArray array, long stream) {
    Device device = array.device();
    int n = (int) array.length();
    try (HostBuffer host = HostBuffer.stagingFor(device, 4L * n)) {
      Device.memcpy(host.device(), host.address(), device, array.bufferAddress(1), 4L * n, stream);
      device.synchronize(stream);
      int[] out = new int[n];
      host.asByteBuffer().asIntBuffer().get(out);
      return out;
    }
  }

  private static int[] readOnHost(DeviceArray cpuArray) {
    assertEquals(DeviceType.CPU, cpuArray.deviceType());
    int[] out = new int[(int) cpuArray.length()];
    cpuArray.buffer(1).asIntBuffer().get(out);
    return out;
  }

  @ParameterizedTest
  @ValueSource(strings = {"sim", "cuda", "rocm"})
  void anArraysEventIsHandedToTheConsumersStream(String name) {
    Device device = device(name);
    AtomicInteger released = new AtomicInteger();
    long allocations = device.liveAllocations();
    try (TestData.DeviceStreams streams = new TestData.DeviceStreams(device, 2)) {
      long producer = streams.get(0), consumer = streams.get(1);
      try (DeviceArray a = ArrayExporter.toDeviceArray(TestData.int32Field("x"),
          produced(device, producer, values(1), released))) {
        assertEquals(device.type(), a.deviceType());
        assertNotEquals(0, a.syncEvent(), "an event recorded on the producer's stream");
        a.waitOn(consumer); // queued: the host does not block
        assertArrayEquals(values(1), readOn(a, consumer));
      }
      assertEquals(1, released.get());
      assertEquals(allocations, device.liveAllocations(), "the release freed the device memory");
    }
  }

  @Test
  void withoutTheWaitTheSimConsumerReadsPoison() {
    // The control of the test above: the same read, minus waitOn, sees the sim's
    // poison, so the test above can only pass through the wait.
    FerryNative.ferry_sim_set_strict(1);
    Device sim = device("sim");
    AtomicInteger released = new AtomicInteger();
    try (TestData.DeviceStreams streams = new TestData.DeviceStreams(sim, 2)) {
      long producer = streams.get(0), consumer = streams.get(1);
      try (DeviceArray a = ArrayExporter.toDeviceArray(TestData.int32Field("x"),
          produced(sim, producer, values(2), released))) {
        int[] early = readOn(a, consumer);
        int poison = FerryNative.FERRY_SIM_POISON_BYTE * 0x01010101;
        assertEquals(poison, early[0], "an unwaited read sees poison");
      }
    }
  }

  /** count batches of values(seed + b), each produced on its own stream. */
  private static Iterator<ExportedBatch> producedBatches(Device device, long stream, int count,
      AtomicInteger released) {
    return TestData.generate(count, b -> produced(device, stream, values(10 + b), released));
  }

  @ParameterizedTest
  @ValueSource(strings = {"sim", "cuda", "rocm"})
  void everyBatchOfAStreamIsHandedToTheConsumersStream(String name) {
    Device device = device(name);
    AtomicInteger released = new AtomicInteger();
    try (TestData.DeviceStreams streams = new TestData.DeviceStreams(device, 2)) {
      long producer = streams.get(0), consumer = streams.get(1);
      try (DeviceArrayStream s = StreamExporter.toStream(TestData.int32Field("x"),
          device.type(), producedBatches(device, producer, 3, released))) {
        for (int b = 0; b < 3; b++) {
          try (DeviceArray batch = s.nextOn(consumer)) {
            assertEquals(device.type(), batch.deviceType());
            assertArrayEquals(values(10 + b), readOn(batch, consumer), "batch " + b);
          }
        }
        assertNull(s.nextOn(consumer), "the end of the stream");
      }
      assertEquals(3, released.get());
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"sim", "cuda", "rocm"})
  void arraysMoveAndCopyBetweenTheCpuAndADevice(String name) {
    Device device = device(name);
    long allocations = device.liveAllocations();
    try (DeviceArray cpu = ArrayExporter.toDeviceArray(TestData.int32Field("x"),
        ExportedBatch.of(N).buffers(null, TestData.int32s(values(3))))) {
      try (DeviceArray copy = cpu.copyTo(device)) {
        assertEquals(device.type(), copy.deviceType());
        assertTrue(allocations < device.liveAllocations(), "the copy lives on the device");
        DeviceArray moved = copy.moveTo(device.type(), device.id());
        assertTrue(copy.isClosed(), "moveTo consumes its source");
        try (DeviceArray back = moved.toHost()) {
          assertTrue(moved.isClosed(), "toHost consumes its source");
          assertArrayEquals(values(3), readOnHost(back));
        }
      }
      assertFalseClosed(cpu);
      assertArrayEquals(values(3), readOnHost(cpu), "copyTo left the source as it was");
    }
    assertEquals(allocations, device.liveAllocations(), "every copy was freed");
  }

  private static void assertFalseClosed(DeviceArray a) {
    assertTrue(!a.isClosed(), "copyTo keeps its source open");
  }

  @Test
  void pinnedHostMemoryMovesToTheCpuWithoutACopy() {
    Device cuda = device("cuda");
    Device pinned = Device.resolve(DeviceType.CUDA_HOST, cuda.id());
    HostBuffer memory = HostBuffer.allocate(pinned, 4L * N);
    memory.asByteBuffer().asIntBuffer().put(values(4));
    long address = memory.address();
    try (DeviceArray a = ArrayExporter.toDeviceArray(TestData.int32Field("x"),
        ExportedBatch.of(N).ownedBuffers(null, memory))) {
      assertEquals(DeviceType.CUDA_HOST, a.deviceType());
      try (DeviceArray host = a.toHost()) {
        assertEquals(address, host.bufferAddress(1), "the same memory: moved, not copied");
        assertArrayEquals(values(4), readOnHost(host));
      }
    }
    assertTrue(memory.isClosed(), "the consumer's release freed the owned memory");
  }

  @ParameterizedTest
  @ValueSource(strings = {"sim", "cuda", "rocm"})
  void theProducersOwnStreamAndEventAreWrapped(String name) {
    Device device = device(name);
    long userEvent = device.createEvent();
    AtomicInteger eventReleases = new AtomicInteger();
    AtomicInteger released = new AtomicInteger();
    try (TestData.DeviceStreams streams = new TestData.DeviceStreams(device, 2)) {
      // userStream: the native handle, as the user's library has it
      long userStream = streams.get(0), consumer = streams.get(1);
      Upload memory = upload(device, userStream, values(5));
      device.recordEvent(userEvent, userStream);
      ExportedBatch batch = ExportedBatch.of(N).bufferAddresses(0, memory.pointer())
          .withSyncEvent(device, userEvent, () -> {
            eventReleases.incrementAndGet();
            device.destroyEvent(userEvent);
          })
          .onRelease(() -> {
            device.synchronize(userStream);
            memory.free();
            released.incrementAndGet();
          });
      try (DeviceArray a = ArrayExporter.toDeviceArray(TestData.int32Field("x"), batch)) {
        assertEquals(userEvent, a.syncEvent(), "the user's event is the sync event, unchanged");
        a.waitOn(consumer);
        assertArrayEquals(values(5), readOn(a, consumer));
        assertEquals(0, eventReleases.get(), "the event lives as long as the array");
      }
      assertEquals(1, eventReleases.get(), "the event's release ran once, after the array's");
      assertEquals(1, released.get());

      // The user's stream, synchronised instead of an event.
      Upload again = upload(device, userStream, values(6));
      ExportedBatch synced = ExportedBatch.of(N).bufferAddresses(0, again.pointer())
          .producedOn(device, userStream, true)
          .onRelease(again::free);
      try (DeviceArray a = ArrayExporter.toDeviceArray(TestData.int32Field("y"), synced)) {
        assertEquals(0, a.syncEvent(), "synchronised on export: no event");
        try (DeviceArray host = a.toHost()) {
          assertArrayEquals(values(6), readOnHost(host));
        }
      }
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"sim", "cuda", "rocm"})
  void dlpackTensorsGoBothWaysOnTheDevice(String name) {
    Device device = device(name);
    AtomicInteger released = new AtomicInteger();
    try (TestData.DeviceStreams streams = new TestData.DeviceStreams(device, 2)) {
      long producer = streams.get(0), consumer = streams.get(1);
      DeviceArray a = ArrayExporter.toDeviceArray(TestData.int32Field("x"),
          produced(device, producer, values(7), released));
      long data = a.bufferAddress(1);
      long tensor = a.toDlpack(consumer); // the consumer's stream waits on the event
      assertTrue(a.isClosed(), "the array moved into the tensor");
      Dlpack.Tensor t = Dlpack.describe(tensor);
      assertEquals(device.type(), t.deviceType());
      assertEquals(data, t.data() + t.byteOffset());
      assertEquals(N, t.length());
      assertEquals(Dlpack.CODE_INT, t.code());
      assertEquals(32, t.bits());
      try (DeviceArray back = DeviceArray.fromDlpack(tensor)) {
        assertEquals(device.type(), back.deviceType());
        assertEquals(data, back.bufferAddress(1), "no copy either way");
        assertArrayEquals(values(7), readOn(back, consumer));
        assertEquals(0, released.get(), "the tensor holds the array");
      }
      assertEquals(1, released.get(), "closing the imported tensor released the array");
    }
  }

  @Test
  void backendsAreListedWithTheirReasons() {
    List<Device.Backend> backends = Device.backends();
    assertTrue(backends.stream().anyMatch(b -> b.name().equals("cpu") && b.available()));
    assertTrue(backends.stream().anyMatch(b -> b.name().equals("sim") && b.available()));
    for (Device.Backend b : backends) {
      assertEquals(b.available(), b.reason().isEmpty(), b + ": a reason exactly when unavailable");
    }
  }

  @Test
  void hostBuffersAreNotDirectBufferMemory() {
    long before = java.lang.management.ManagementFactory
        .getPlatformMXBeans(java.lang.management.BufferPoolMXBean.class).stream()
        .filter(p -> p.getName().equals("direct")).mapToLong(p -> p.getMemoryUsed()).sum();
    try (HostBuffer big = HostBuffer.allocate(64L << 20)) {
      ByteBuffer view = big.asByteBuffer();
      view.putInt(view.capacity() - 4, 42);
      assertEquals(42, view.getInt(view.capacity() - 4));
      long during = java.lang.management.ManagementFactory
          .getPlatformMXBeans(java.lang.management.BufferPoolMXBean.class).stream()
          .filter(p -> p.getName().equals("direct")).mapToLong(p -> p.getMemoryUsed()).sum();
      assertTrue(during - before < (1 << 20), "64 MiB outside the direct buffer pool");
    }
  }
}
