package org.ferry;

import java.lang.ref.Reference;
import java.nio.ByteBuffer;
import org.ferry.jni.FerryNative;
import org.ferry.jni.FerryNativeConstants;
import org.ferry.jni.Handoff;

/**
 * An ArrowDeviceArray and its schema owned by Java. The structs live on the C
 * heap; the array was moved in from its producer, so this object is the only
 * owner and {@link #close()} releases it exactly once (a safety net releases it,
 * and reports a leak, if it becomes unreachable unclosed: see {@link NativeHandle}).
 *
 * <p>Import is one JNI call, which also reports the top-level length, null count,
 * offset, buffer count, buffer addresses and device; those accessors read that
 * cache and make no native call. Close is one JNI call. Buffers of host-readable
 * memory are exposed as read-only direct ByteBuffers without copying. Not
 * thread-safe, like the underlying struct.
 */
public final class DeviceArray implements AutoCloseable, Schema.Owner {
  private final NativeHandle handle;
  private final SchemaOwner schema;
  /** The slot's chunk and the offset of its info there: what the import call
   *  reported (Handoff.* indices); the struct never changes while owned. */
  private final ByteBuffer slab;
  private final int info;
  private int hostAccessible = -1;

  /** Takes ownership of a filled slot and one hold on {@code schema}. */
  private DeviceArray(long slot, long slotAddress, SchemaOwner schema) {
    this.schema = schema;
    this.slab = Slab.chunk(slot);
    this.info = Slab.offset(slot) + Handoff.SLOT_INFO_OFFSET;
    this.handle = new NativeHandle(this, slotAddress, schema, "DeviceArray");
  }

  /** Wraps a filled slot and one hold on {@code schema} (already taken); on
   *  failure releases both. */
  static DeviceArray wrap(long slot, SchemaOwner schema) {
    long slotAddress = 0;
    try {
      slotAddress = Slab.address(slot);
      return new DeviceArray(slot, slotAddress, schema);
    } catch (RuntimeException | Error e) {
      if (slotAddress != 0) schema.accept(slotAddress);
      throw e;
    }
  }

  /** Wraps a live heap device array (moved into a slot; the heap struct is
   *  freed) with one hold on {@code schema} (already taken). */
  static DeviceArray wrapHeap(long heapDeviceArray, SchemaOwner schema) {
    long slot;
    try {
      slot = Handoff.adopt(heapDeviceArray);
    } catch (RuntimeException | Error e) {
      FerryNative.ferry_device_array_free(heapDeviceArray);
      schema.release();
      throw e;
    }
    FerryNative.ferry_device_array_free(heapDeviceArray); // released by the move
    return wrap(slot, schema);
  }

  private long info(int k) {
    return slab.getLong(info + 8 * k);
  }

  /**
   * Moves a producer's ArrowSchema and ArrowDeviceArray (at the given addresses)
   * into a new DeviceArray. On success both source structs are left released and
   * Java owns everything; on failure nothing was moved.
   */
  public static DeviceArray importFrom(long schemaAddress, long deviceArrayAddress) {
    long slot = Handoff.importArray(schemaAddress, deviceArrayAddress);
    ByteBuffer chunk = Slab.chunk(slot);
    long schema = chunk.getLong(Slab.offset(slot) + Handoff.SLOT_INFO_OFFSET + 8 * Handoff.SCHEMA);
    return wrap(slot, new SchemaOwner(schema));
  }

  /**
   * Moves a plain CPU ArrowSchema + ArrowArray (e.g. from Arrow Java's C data
   * module) in, as a DeviceArray on the CPU (device id -1).
   */
  public static DeviceArray importArrowC(long arrowSchemaAddress, long arrowArrayAddress) {
    if (arrowSchemaAddress == 0 || FerryNative.ferry_schema_is_released(arrowSchemaAddress)) {
      throw new FerryException(FerryException.EINVAL, "the ArrowSchema to import is released");
    }
    long deviceArray = newOrThrow(FerryNative.ferry_device_array_new(), "ArrowDeviceArray");
    try {
      // Moves the ArrowArray into the device array, leaving the source released.
      FerryNative.ferry_device_array_init(deviceArray, arrowArrayAddress, DeviceType.CPU, -1,
          0, 0, 0);
      return importFrom(arrowSchemaAddress, deviceArray);
    } finally {
      FerryNative.ferry_device_array_free(deviceArray);
    }
  }

  static long newOrThrow(long address, String what) {
    if (address == 0) throw new OutOfMemoryError("ferry: cannot allocate " + what);
    return address;
  }

  /** The ArrowDeviceArray's address (borrowed; valid until close). */
  public long address() {
    return handle.checkedAddress();
  }

  @Override
  public void checkOpen() {
    handle.checkedAddress();
  }

  public boolean isClosed() {
    return handle.isClosed();
  }

  public Schema schema() {
    checkOpen();
    return new Schema(schema.address(), this);
  }

  /** The top-level array (its ArrowArray is the device array's first member). */
  public ArrayView root() {
    return new ArrayView(this, address(), schema.address(), slab, info);
  }

  public int deviceType() {
    return (int) info(Handoff.DEVICE_TYPE);
  }

  public long deviceId() {
    return info(Handoff.DEVICE_ID);
  }

  /** The producer's sync event (a pointer to the native event), 0 when none. */
  public long syncEvent() {
    checkOpen();
    return info(Handoff.SYNC_EVENT);
  }

  /** True when the host may read this array's memory directly. */
  public boolean isHostAccessible() {
    if (hostAccessible < 0) {
      int type = deviceType();
      hostAccessible = type == DeviceType.CPU
          || Device.resolve(type, deviceId()).isHostAccessible() ? 1 : 0;
    }
    return hostAccessible == 1;
  }

  /** Blocks until the producer's work on this array is done (no-op without an event). */
  public void await() {
    waitOn(0);
  }

  /** Makes {@code consumerStream} (of this array's device) wait for the producer's
   *  event without blocking the host; 0 blocks the host instead. */
  public void waitOn(long consumerStream) {
    FerryNative.ferry_device_array_wait(address(), consumerStream);
  }

  public long length() {
    checkOpen();
    return info(Handoff.LENGTH);
  }

  public long nullCount() {
    checkOpen();
    return info(Handoff.NULL_COUNT);
  }

  public long offset() {
    checkOpen();
    return info(Handoff.OFFSET);
  }

  public int bufferCount() {
    checkOpen();
    return Math.toIntExact(info(Handoff.N_BUFFERS));
  }

  /** Buffer {@code i}'s address on the array's device (0 when absent). */
  public long bufferAddress(int i) {
    long a = address();
    long n = info(Handoff.N_BUFFERS);
    if (i < 0 || i >= n) throw new IndexOutOfBoundsException("buffer " + i + " of " + n);
    if (i < Handoff.INLINE_BUFFERS) return info(Handoff.BUFFER0 + i);
    return FerryNative.ferry_array_buffer(a, i);
  }

  /** See {@link ArrayView#buffer(int)}. */
  public ByteBuffer buffer(int i) {
    return root().buffer(i);
  }

  public int childCount() {
    checkOpen();
    return Math.toIntExact(info(Handoff.N_CHILDREN));
  }

  public ArrayView child(int i) {
    return root().child(i);
  }

  public ArrayView dictionary() {
    return root().dictionary();
  }

  /** Validates the array against its schema (FULL also reads offsets, UTF-8 and
   *  validity); FerryException(EINVAL) naming the first finding. */
  public void validate(boolean full) {
    int level = full ? FerryNativeConstants.FERRY_VALIDATE_FULL
        : FerryNativeConstants.FERRY_VALIDATE_DEFAULT;
    FerryNative.ferry_validate_device_array(schema.address(), address(), level, 0, 0);
  }

  /** Deep-copies this array to (deviceType, deviceId), after waiting on its event;
   *  the copy is a new DeviceArray the caller closes. */
  public DeviceArray copyTo(int targetType, long targetId) {
    long out = newOrThrow(FerryNative.ferry_device_array_new(), "ArrowDeviceArray");
    try {
      FerryNative.ferry_device_array_copy(schema.address(), address(), targetType, targetId, out);
    } catch (RuntimeException e) {
      FerryNative.ferry_device_array_free(out);
      throw e;
    }
    return wrapHeap(out, schema.retain());
  }

  /**
   * Moves the array out to a consumer's structs: the schema and device array at
   * the given addresses (both released beforehand) receive ownership, and this
   * object is closed without releasing the array. The schema is moved when this
   * array is its only holder, else deep-copied (stream batches share one).
   */
  public void exportTo(long schemaOut, long deviceArrayOut) {
    long a = address();
    if (!FerryNative.ferry_schema_is_released(schemaOut)
        || !FerryNative.ferry_device_array_is_released(deviceArrayOut)) {
      throw new FerryException(FerryException.EINVAL, "export targets must be released");
    }
    exportSchemaTo(schemaOut);
    FerryNative.ferry_device_array_move(a, deviceArrayOut);
    handle.close(); // frees the now released struct and drops the schema hold
  }

  /** Moves the array out as a plain CPU ArrowSchema + ArrowArray (for Arrow Java's
   *  C data module). Waits on the sync event first; CPU arrays only. */
  public void exportArrowC(long arrowSchemaOut, long arrowArrayOut) {
    if (deviceType() != DeviceType.CPU) {
      throw new FerryException(FerryException.EINVAL, "only CPU arrays export as a plain "
          + "ArrowArray; this one is on " + DeviceType.name(deviceType()));
    }
    await();
    long a = address();
    exportSchemaTo(arrowSchemaOut);
    FerryNative.ferry_array_move(FerryNative.ferry_device_array_array(a), arrowArrayOut);
    handle.close();
  }

  private void exportSchemaTo(long schemaOut) {
    if (schema.isSoleHolder()) {
      FerryNative.ferry_schema_move(schema.address(), schemaOut);
    } else {
      ArrayExporter.copySchema(schema.address(), schemaOut);
    }
  }

  /**
   * Moves this array into a DLPack 1.x tensor over the same memory (fixed-width
   * types without nulls; one dimension) and returns its
   * {@code DLManagedTensorVersioned*} address; this object is closed. The caller
   * owns the tensor: hand it to a DLPack consumer, or {@link Dlpack#delete} it
   * (which releases the array). {@code consumerStream} (a stream of the array's
   * device) is made to wait on the array's sync event; 0 makes the host wait.
   * On failure nothing changes.
   */
  public long toDlpack(long consumerStream) {
    long a = address();
    long[] out = new long[1];
    FerryNative.ferry_device_array_to_dlpack(schema.address(), a, consumerStream, out);
    handle.close(); // the struct was moved into the tensor: frees it and the schema hold
    return out[0];
  }

  /** {@link #toDlpack(long)} with the host waiting on the sync event. */
  public long toDlpack() {
    return toDlpack(0);
  }

  /**
   * Takes in the DLPack 1.x tensor at {@code tensor} (one-dimensional, contiguous,
   * integers or floats) without copying. On success ferry owns the tensor and
   * calls its deleter once, when the returned array is closed; on failure the
   * caller still owns it.
   */
  public static DeviceArray fromDlpack(long tensor) {
    if (tensor == 0) throw new IllegalArgumentException("null DLManagedTensorVersioned address");
    long schema = newOrThrow(FerryNative.ferry_schema_new(), "ArrowSchema");
    long array = FerryNative.ferry_device_array_new();
    try {
      if (array == 0) throw new OutOfMemoryError("ferry: cannot allocate ArrowDeviceArray");
      FerryNative.ferry_device_array_from_dlpack(tensor, schema, array);
    } catch (RuntimeException | Error e) {
      FerryNative.ferry_schema_free(schema);
      FerryNative.ferry_device_array_free(array);
      throw e;
    }
    return wrapHeap(array, new SchemaOwner(schema));
  }

  /** True when no stream or other array shares this array's schema (tests). */
  boolean schemaIsSoleHolderForTest() {
    return schema.isSoleHolder();
  }

  /** Releases the array (exactly once; later calls do nothing). */
  @Override
  public void close() {
    handle.close();
    // Keeps this object reachable until the free is done, so that the safety
    // net cannot see it unreachable (and report a leak) in the middle of close.
    Reference.reachabilityFence(this);
  }

  @Override
  public String toString() {
    if (isClosed()) return "DeviceArray(closed)";
    return "DeviceArray(" + schema().format() + ", length " + length() + ", "
        + DeviceType.name(deviceType()) + ":" + deviceId() + ")";
  }
}
