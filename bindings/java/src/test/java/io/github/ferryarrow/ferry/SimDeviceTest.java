package io.github.ferryarrow.ferry;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.concurrent.atomic.AtomicInteger;
import io.github.ferryarrow.ferry.jni.FerryNative;
import io.github.ferryarrow.ferry.jni.FerryNativeConstants;
import org.junit.jupiter.api.Test;

/** Java as a producer on ferry's simulated device (strict mode: unsynchronised reads see poison). */
class SimDeviceTest {
  private static final int N = 64;

  /** Copies 0, 3, 6, ... to sim memory on a stream and exports it with an event. */
  private static DeviceArray produceOnSim(Device sim, long stream, AtomicInteger released) {
    int[] values = new int[N];
    for (int i = 0; i < N; i++) values[i] = i * 3;
    ByteBuffer host = TestData.int32s(values);
    long pointer = sim.allocate(N * 4L);
    sim.copyFromHost(host, pointer, stream);
    ExportedBatch batch = ExportedBatch.of(N).bufferAddresses(0, pointer).producedOn(sim, stream)
        .onRelease(() -> host.capacity()) // the host source must outlive the queued copy
        .onRelease(() -> sim.deallocate(pointer))
        .onRelease(released::incrementAndGet);
    return ArrayExporter.toDeviceArray(TestData.int32Field("sim"), batch);
  }

  @Test
  void consumerWaitsOnTheProducersEventBeforeReading() {
    FerryNative.ferry_sim_set_strict(1);
    Device sim = Device.sim(0);
    long allocationsBefore = sim.liveAllocations();
    AtomicInteger released = new AtomicInteger();
    try (TestData.DeviceStreams streams = new TestData.DeviceStreams(sim, 1)) {
      long stream = streams.get(0);
      try (DeviceArray a = produceOnSim(sim, stream, released)) {
        assertEquals(DeviceType.SIM, a.deviceType());
        assertEquals(0, a.deviceId());
        assertNotEquals(0, a.syncEvent(), "an event was recorded on the producer's stream");
        assertTrue(a.isHostAccessible());
        ByteBuffer early = a.buffer(1);
        assertEquals((byte) FerryNativeConstants.FERRY_SIM_POISON_BYTE, early.get(4 * 5),
            "strict mode: reading before waiting sees poison");
        a.await();
        ByteBuffer values = a.buffer(1);
        for (int i = 0; i < N; i++) assertEquals(i * 3, values.getInt(i * 4));
      }
      assertEquals(1, released.get());
      assertEquals(allocationsBefore, sim.liveAllocations(), "release freed the sim memory");
    }
  }

  @Test
  void aSimArrayCopiesToTheCpu() {
    Device sim = Device.sim(1);
    AtomicInteger released = new AtomicInteger();
    try (TestData.DeviceStreams streams = new TestData.DeviceStreams(sim, 1)) {
      long stream = streams.get(0);
      try (DeviceArray a = produceOnSim(sim, stream, released);
          DeviceArray cpu = a.copyTo(DeviceType.CPU, -1)) {
        assertEquals(DeviceType.CPU, cpu.deviceType());
        assertEquals(0, cpu.syncEvent());
        assertEquals(N, cpu.length());
        assertEquals((N - 1) * 3, cpu.buffer(1).getInt((N - 1) * 4));
      }
      assertEquals(1, released.get());
    }
  }

  @Test
  void deviceStreamsAndEventsWorkFromJava() {
    Device sim = Device.sim(2);
    long event = sim.createEvent();
    long pointer = sim.allocate(16);
    try (TestData.DeviceStreams streams = new TestData.DeviceStreams(sim, 1)) {
      long stream = streams.get(0);
      try {
        ByteBuffer host = TestData.int32s(1, 2, 3, 4);
        sim.copyFromHost(host, pointer, stream);
        sim.recordEvent(event, stream);
        sim.synchronizeEvent(event);
        ByteBuffer back = ByteBuffer.allocateDirect(16).order(host.order());
        sim.copyToHost(pointer, back, 0);
        assertEquals(4, back.getInt(12));
      } finally {
        sim.deallocate(pointer);
        sim.destroyEvent(event);
      }
    }
  }
}
