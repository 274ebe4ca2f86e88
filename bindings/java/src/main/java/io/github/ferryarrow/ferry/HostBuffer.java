package io.github.ferryarrow.ferry;

import io.github.ferryarrow.ferry.jni.FerryNative;
import java.lang.ref.Reference;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Host memory allocated through ferry (ferry_device_allocate), outside the Java
 * heap and not counted against {@code -XX:MaxDirectMemorySize}: CPU memory, or
 * pinned host memory of a GPU's backend (cuda_host, rocm_host), which the host
 * reads and writes directly and the GPU copies to and from fastest. Use it for
 * data too large for direct ByteBuffers, and to stage copies to a device
 * ({@link #stagingFor}).
 *
 * <p>The memory is freed by {@link #close()} exactly once (or, as a safety net
 * reported as a leak, when the object becomes unreachable unclosed). Views from
 * {@link #asByteBuffer()} do not keep it alive: do not use them after close. To
 * export the memory and let the consumer's release free it, hand the buffer to
 * {@link ExportedBatch#ownedBuffers}.
 */
public final class HostBuffer implements AutoCloseable {
  private final Device device;
  private final long size;
  private final NativeHandle handle;

  private HostBuffer(Device device, long address, long size) {
    this.device = device;
    this.size = size;
    long deviceAddress = device.address();
    this.handle = new NativeHandle(this, address,
        a -> FerryNative.ferry_device_deallocate(deviceAddress, a), "HostBuffer");
  }

  /** {@code size} bytes of CPU memory (uninitialised; see {@link #zero()}). */
  public static HostBuffer allocate(long size) {
    return allocate(Device.cpu(), size);
  }

  /**
   * {@code size} bytes on {@code device}, which the host must be able to read (the
   * CPU, cuda_host, rocm_host, cuda_managed; the sim device too). Uninitialised.
   * FerryException(EINVAL) for a device the host cannot read, ENOMEM when out of
   * memory.
   */
  public static HostBuffer allocate(Device device, long size) {
    if (size < 0) throw new IllegalArgumentException("negative size " + size);
    if (!device.isHostAccessible()) {
      throw new FerryException(FerryException.EINVAL, "a HostBuffer must be readable by the "
          + "host; " + device + " is not (allocate it with Device.allocate)");
    }
    long address = device.allocate(Math.max(size, 1));
    return new HostBuffer(device, address, size);
  }

  /**
   * Host memory to stage copies to and from {@code device}: pinned host memory of
   * the same GPU (cuda_host for cuda, rocm_host for rocm), the CPU otherwise (sim,
   * CPU, or when the backend has no pinned memory to give).
   */
  public static HostBuffer stagingFor(Device device, long size) {
    int pinned = pinnedTypeOf(device.type());
    if (pinned != 0) {
      try {
        return allocate(Device.resolve(pinned, device.id()), size);
      } catch (FerryException e) {
        if (e.code() == FerryException.ENOMEM) throw e;
        // No pinned memory here: pageable CPU memory stages as well, more slowly.
      }
    }
    return allocate(Device.cpu(), size);
  }

  private static int pinnedTypeOf(int deviceType) {
    if (deviceType == DeviceType.CUDA) return DeviceType.CUDA_HOST;
    if (deviceType == DeviceType.ROCM) return DeviceType.ROCM_HOST;
    return 0;
  }

  /** The memory's address (valid until close). */
  public long address() {
    return handle.checkedAddress();
  }

  /** Its size in bytes. */
  public long size() {
    return size;
  }

  /** The device that allocated it (the CPU, or a pinned host device). */
  public Device device() {
    return device;
  }

  /** True once closed (or handed to an export). */
  public boolean isClosed() {
    return handle.isClosed();
  }

  /** A native-order direct ByteBuffer over the whole memory (at most 2^31 - 1 bytes). */
  public ByteBuffer asByteBuffer() {
    if (size > Integer.MAX_VALUE) {
      throw new FerryException(FerryException.ERANGE, "a HostBuffer of " + size
          + " bytes does not fit in one ByteBuffer; use asByteBuffer(offset, length)");
    }
    return asByteBuffer(0, (int) size);
  }

  /** A native-order direct ByteBuffer over {@code length} bytes from {@code offset}. */
  public ByteBuffer asByteBuffer(long offset, int length) {
    if (offset < 0 || length < 0 || offset > size - length) {
      throw new IndexOutOfBoundsException("bytes [" + offset + ", +" + length + ") of a "
          + size + "-byte HostBuffer");
    }
    ByteBuffer view = length == 0 ? ByteBuffer.allocateDirect(0)
        : FerryNative.ferry_jni_new_direct_buffer(address() + offset, length);
    return view.order(ByteOrder.nativeOrder());
  }

  /** Sets every byte to zero; returns this. */
  public HostBuffer zero() {
    FerryNative.ferry_jni_zero(address(), size);
    return this;
  }

  /** Gives the memory away (to an export that frees it on release). */
  long detach() {
    return handle.detach();
  }

  /** Frees the memory (exactly once; later calls do nothing). */
  @Override
  public void close() {
    handle.close();
    Reference.reachabilityFence(this);
  }

  @Override
  public String toString() {
    return "HostBuffer(" + size + " bytes on " + device + (isClosed() ? ", closed)" : ")");
  }
}
