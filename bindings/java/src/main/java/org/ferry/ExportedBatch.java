package org.ferry;

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
  private final long length;
  private long nullCount;
  private long offset;
  /** Exactly one of these is non-null: direct buffers, or raw addresses. */
  private ByteBuffer[] buffers = new ByteBuffer[0];
  private long[] addresses;
  private ExportedBatch[] children = new ExportedBatch[0];
  private ExportedBatch dictionary;
  private int deviceType = DeviceType.CPU;
  private long deviceId = -1;
  private Device producerDevice;
  private long producerStream;
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
    this.deviceType = type;
    this.deviceId = id;
    this.producerDevice = null;
    return this;
  }

  /** The array lives on {@code device} and was produced on {@code stream}: ferry
   *  records an event there that the consumer waits on. */
  public ExportedBatch producedOn(Device device, long stream) {
    this.deviceType = device.type();
    this.deviceId = device.id();
    this.producerDevice = device;
    this.producerStream = stream;
    return this;
  }

  /** Runs once when the consumer releases the exported array (not on a failed export),
   *  on the releasing thread. A batch with actions is released through a C-to-Java
   *  call; one without (only buffers to keep alive) through the release queue. */
  public ExportedBatch onRelease(Runnable action) {
    if (onRelease == null) onRelease = new ArrayList<>(2);
    onRelease.add(action);
    return this;
  }

  long length() {
    return length;
  }

  long nullCountValue() {
    return nullCount;
  }

  long offsetValue() {
    return offset;
  }

  /** The direct buffers, or null when raw addresses were given. */
  ByteBuffer[] byteBuffers() {
    return buffers;
  }

  /** The raw addresses, or null when direct buffers were given. */
  long[] rawAddresses() {
    return addresses;
  }

  int bufferCount() {
    return buffers != null ? buffers.length : addresses.length;
  }

  /** No children, dictionary or producer device: the one-call export applies. */
  boolean isFlat() {
    return children.length == 0 && dictionary == null && producerDevice == null;
  }

  /** True when this batch or any child or dictionary has onRelease actions. */
  boolean hasReleaseActionsInTree() {
    if (onRelease != null) return true;
    for (ExportedBatch child : children) {
      if (child.hasReleaseActionsInTree()) return true;
    }
    return dictionary != null && dictionary.hasReleaseActionsInTree();
  }

  ExportedBatch[] childList() {
    return children;
  }

  ExportedBatch dictionaryValue() {
    return dictionary;
  }

  int deviceType() {
    return deviceType;
  }

  long deviceId() {
    return deviceId;
  }

  Device producerDevice() {
    return producerDevice;
  }

  long producerStream() {
    return producerStream;
  }

  List<Runnable> releaseActions() {
    return onRelease != null ? onRelease : List.of();
  }
}
