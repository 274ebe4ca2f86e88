package io.github.ferryarrow.ferry;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

/**
 * A Java description of one array to export as an ArrowDeviceArray without
 * copying: its length, null count, offset, buffers (direct ByteBuffers, or raw
 * addresses of device memory), children and dictionary, and where it lives.
 * Everything referenced here is kept reachable until the consumer releases the
 * exported array; then the {@link #onRelease} actions run (e.g. to free device
 * memory). Mutable builder; export it once.
 */
public final class ExportedBatch {
  // Read in place by ArrayExporter (the builder methods are the public face).
  final long length;
  long nullCount;
  long offset;
  /** Exactly one of these is non-null: direct buffers, or raw addresses. */
  ByteBuffer[] buffers = new ByteBuffer[0];
  long[] addresses;
  ExportedBatch[] children = new ExportedBatch[0];
  ExportedBatch dictionary;
  int deviceType = DeviceType.CPU;
  long deviceId = -1;
  Device producerDevice;
  long producerStream;
  boolean synchronize;
  long syncEvent;
  Runnable eventRelease;
  /** Null until the first onRelease (most batches have none). */
  private List<Runnable> onRelease;

  private ExportedBatch(long length) {
    if (length < 0) throw new IllegalArgumentException("negative length " + length);
    this.length = length;
  }

  public static ExportedBatch of(long length) {
    return new ExportedBatch(length);
  }

  public ExportedBatch nullCount(long n) {
    this.nullCount = n;
    return this;
  }

  public ExportedBatch offset(long o) {
    this.offset = o;
    return this;
  }

  /** Buffers as direct ByteBuffers (null for an absent buffer); exported from index 0. */
  public ExportedBatch buffers(ByteBuffer... newBuffers) {
    this.buffers = newBuffers.clone();
    this.addresses = null;
    return this;
  }

  /** Buffers as raw addresses (0 for absent), e.g. device memory; keep the memory
   *  alive with {@link #onRelease}. */
  public ExportedBatch bufferAddresses(long... addresses) {
    this.addresses = addresses.clone();
    this.buffers = null;
    return this;
  }

  /**
   * Buffers in ferry-allocated host memory ({@link HostBuffer}; null for an absent
   * buffer), all of one device, which becomes the array's device (the CPU, or a
   * pinned host device such as cuda_host). The export takes them over: they are
   * closed when the consumer releases the array. When the export fails they stay
   * the caller's.
   */
  public ExportedBatch ownedBuffers(HostBuffer... owned) {
    long[] raw = new long[owned.length];
    Device device = null;
    for (int i = 0; i < owned.length; i++) {
      if (owned[i] == null) continue;
      raw[i] = owned[i].address();
      if (device == null) {
        device = owned[i].device();
      } else if (device.type() != owned[i].device().type() || device.id() != owned[i].device().id()) {
        throw new IllegalArgumentException("buffer " + i + " is on " + owned[i].device()
            + ", buffer 0 on " + device + ": one array lives on one device");
      }
    }
    bufferAddresses(raw);
    if (device != null) onDevice(device.type(), device.id());
    HostBuffer[] keep = owned.clone();
    return onRelease(() -> {
      for (HostBuffer b : keep) {
        if (b != null) b.close();
      }
    });
  }

  public ExportedBatch children(ExportedBatch... newChildren) {
    this.children = newChildren.clone();
    return this;
  }

  public ExportedBatch dictionary(ExportedBatch newDictionary) {
    this.dictionary = newDictionary;
    return this;
  }

  /** The array lives on (type, id) with no pending work (default: CPU, -1). */
  public ExportedBatch onDevice(int type, long id) {
    return livesOn(type, id, null, 0, false, 0, null);
  }

  /** Sets where the array lives and how its readiness is told (each setter sets all). */
  private ExportedBatch livesOn(int type, long id, Device producer, long stream,
      boolean synchronizeStream, long event, Runnable release) {
    this.deviceType = type;
    this.deviceId = id;
    this.producerDevice = producer;
    this.producerStream = stream;
    this.synchronize = synchronizeStream;
    this.syncEvent = event;
    this.eventRelease = release;
    return this;
  }

  /**
   * The array lives on {@code device} and its data is written by work queued on
   * {@code stream}, a native stream of that device: ferry's own (from
   * {@link Device#createStream()}) or the user's ({@code CUstream} /
   * {@code hipStream_t} value, as the user's CUDA or HIP library made it). ferry
   * records an event at the current end of that stream (from a pool: a steady
   * stream of exports creates none) and exports it as the sync event the consumer
   * waits on; the producer goes on at once. With stream 0 nothing is pending.
   */
  public ExportedBatch producedOn(Device device, long stream) {
    return producedOn(device, stream, false);
  }

  /** {@link #producedOn(Device, long)}, or with {@code synchronize} true: ferry
   *  blocks until {@code stream} finished and exports no event (for consumers
   *  that ignore events; costs the producer a stall). */
  public ExportedBatch producedOn(Device device, long stream, boolean synchronize) {
    return livesOn(device.type(), device.id(), device, stream, synchronize, 0, null);
  }

  /**
   * The array lives on {@code device}, and the producer's own native event marks
   * when it is ready: {@code syncEvent} is a pointer to the event handle (a
   * {@code CUevent*} or {@code hipEvent_t*}, what ArrowDeviceArray.sync_event
   * carries; {@link Device#createEvent()} makes one). ferry exports it unchanged;
   * {@code release} (may be null) runs once, on the releasing thread, after the
   * consumer released the array: that is where the producer destroys the event.
   * Without it the producer promises that the event outlives the array.
   */
  public ExportedBatch withSyncEvent(Device device, long syncEvent, Runnable release) {
    if (syncEvent == 0) throw new IllegalArgumentException("sync event address 0");
    return livesOn(device.type(), device.id(), null, 0, false, syncEvent, release);
  }

  /** Runs once when the consumer releases the exported array (not on a failed export),
   *  on the releasing thread. A batch with actions is released through a C-to-Java
   *  call; one without (only buffers to keep alive) through the release queue. */
  public ExportedBatch onRelease(Runnable action) {
    if (onRelease == null) onRelease = new ArrayList<>(2);
    onRelease.add(action);
    return this;
  }

  int bufferCount() {
    return buffers != null ? buffers.length : addresses.length;
  }

  /** No children, dictionary, producer stream or event: the one-call export applies. */
  boolean isFlat() {
    return children.length == 0 && dictionary == null && producerDevice == null
        && syncEvent == 0;
  }

  /** True when this batch or any child or dictionary has onRelease actions. */
  boolean hasReleaseActionsInTree() {
    if (onRelease != null) return true;
    for (ExportedBatch child : children) {
      if (child.hasReleaseActionsInTree()) return true;
    }
    return dictionary != null && dictionary.hasReleaseActionsInTree();
  }

  List<Runnable> releaseActions() {
    return onRelease != null ? onRelease : List.of();
  }
}
