package io.github.ferryarrow.ferry;

import java.nio.ByteBuffer;
import io.github.ferryarrow.ferry.jni.FerryNative;

/**
 * A device of ferry's registry (CPU, the simulated device, CUDA, ROCm). Devices
 * live for the whole process; memory, streams and events made here are owned by
 * the caller and given back with the matching free/destroy method. Addresses
 * of device memory, streams and events are plain longs.
 */
public final class Device {
  private final long address;
  private final int type;
  private final long id;

  private Device(long address) {
    this.address = address;
    this.type = FerryNative.ferry_device_type(address);
    this.id = FerryNative.ferry_device_id(address);
  }

  /**
   * A backend compiled into ferry (cpu, sim, cuda, rocm) and whether it can be used
   * now.
   *
   * @param name the backend's name
   * @param available true when its probe succeeded
   * @param reason why it cannot be used (library missing, no driver, no device,
   *     forked process...), "" when available
   */
  public record Backend(String name, boolean available, String reason) {}

  /** Every backend compiled in, each probed (once per process; the GPU backends
   *  load their driver library then). */
  public static java.util.List<Backend> backends() {
    long n = FerryNative.ferry_backend_count();
    java.util.List<Backend> out = new java.util.ArrayList<>();
    for (long i = 0; i < n; i++) {
      String name = FerryNative.ferry_backend_name(i);
      try {
        FerryNative.ferry_backend_probe(i);
        out.add(new Backend(name, true, ""));
      } catch (FerryException e) {
        out.add(new Backend(name, false, e.getMessage()));
      }
    }
    return java.util.Collections.unmodifiableList(out);
  }

  /** Finds (type, id); FerryException(ENODEV/ENOTSUP) with the reason when unavailable. */
  public static Device resolve(int deviceType, long deviceId) {
    long[] out = new long[1];
    FerryNative.ferry_device_resolve(deviceType, deviceId, out);
    return new Device(out[0]);
  }

  public static Device cpu() {
    return resolve(DeviceType.CPU, -1);
  }

  /** Simulated device {@code id} (0 .. 3). */
  public static Device sim(long id) {
    return resolve(DeviceType.SIM, id);
  }

  /** The struct FerryDevice address, for FerryNative calls. */
  public long address() {
    return address;
  }

  public int type() {
    return type;
  }

  public long id() {
    return id;
  }

  public boolean isHostAccessible() {
    return FerryNative.ferry_device_is_host_accessible(address);
  }

  /** Allocates {@code size} bytes; free them with {@link #deallocate}. */
  public long allocate(long size) {
    long[] out = new long[1];
    FerryNative.ferry_device_allocate(address, size, out);
    return out[0];
  }

  public void deallocate(long pointer) {
    FerryNative.ferry_device_deallocate(address, pointer);
  }

  /** Allocations made on this device and not freed yet. */
  public long liveAllocations() {
    return FerryNative.ferry_device_live_allocations(address);
  }

  /** Copies {@code size} bytes; with {@code stream} 0 the copy is complete on return. */
  public static void memcpy(Device dst, long dstPointer, Device src, long srcPointer, long size,
      long stream) {
    FerryNative.ferry_device_memcpy(dst.address, dstPointer, src.address, srcPointer, size,
        stream);
  }

  /** Copies the bytes of a direct buffer (from index 0 to its limit) to {@code dstPointer}
   *  on this device, ordered on {@code stream} (0: complete on return). The buffer
   *  must stay alive until the copy completes. */
  public void copyFromHost(ByteBuffer src, long dstPointer, long stream) {
    memcpy(this, dstPointer, cpu(), bufferAddress(src, "source"), src.limit(), stream);
  }

  /** Copies {@code dst.limit()} bytes from {@code srcPointer} into a direct buffer. */
  public void copyToHost(long srcPointer, ByteBuffer dst, long stream) {
    memcpy(cpu(), bufferAddress(dst, "destination"), this, srcPointer, dst.limit(), stream);
  }

  public long createStream() {
    long[] out = new long[1];
    FerryNative.ferry_device_stream_create(address, out);
    return out[0];
  }

  public void destroyStream(long stream) {
    FerryNative.ferry_device_stream_destroy(address, stream);
  }

  public void synchronize(long stream) {
    FerryNative.ferry_device_stream_synchronize(address, stream);
  }

  /** Creates an event: the address is usable as ArrowDeviceArray.sync_event. */
  public long createEvent() {
    long[] out = new long[1];
    FerryNative.ferry_device_event_create(address, out);
    return out[0];
  }

  public void destroyEvent(long event) {
    FerryNative.ferry_device_event_destroy(address, event);
  }

  public void recordEvent(long event, long stream) {
    FerryNative.ferry_device_event_record(address, event, stream);
  }

  public void synchronizeEvent(long event) {
    FerryNative.ferry_device_event_synchronize(address, event);
  }

  public void streamWaitEvent(long stream, long event) {
    FerryNative.ferry_device_stream_wait_event(address, stream, event);
  }

  static long bufferAddress(ByteBuffer buffer, String what) {
    long a = buffer == null ? 0 : FerryNative.ferry_jni_direct_address(buffer);
    if (a == 0 && buffer != null && buffer.capacity() > 0) {
      throw new IllegalArgumentException(what + " buffer is not a direct ByteBuffer");
    }
    return a;
  }

  @Override
  public String toString() {
    return "Device(" + DeviceType.name(type) + ", " + id + ")";
  }
}
