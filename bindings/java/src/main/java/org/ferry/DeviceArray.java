package org.ferry;

import java.nio.ByteBuffer;
import org.ferry.jni.FerryNative;
import org.ferry.jni.FerryNativeConstants;

/**
 * An ArrowDeviceArray and its schema owned by Java. The structs live on the C
 * heap; the array was moved in from its producer, so this object is the only
 * owner and {@link #close()} releases it exactly once (a {@link java.lang.ref.Cleaner}
 * releases it, and reports a leak, if it becomes unreachable unclosed).
 *
 * <p>Accessors read through ferry's C accessors; buffers of host-readable memory
 * are exposed as read-only direct ByteBuffers without copying. Not thread-safe,
 * like the underlying struct.
 */
public final class DeviceArray implements AutoCloseable, Schema.Owner {
  private final NativeHandle handle;
  private final long address;
  private final SchemaOwner schema;
  private final int deviceType;
  private final long deviceId;
  private int hostAccessible = -1;

  /** Takes ownership of a heap ArrowDeviceArray and one hold on {@code schema}. */
  private DeviceArray(long address, SchemaOwner schema) {
    this.address = address;
    this.schema = schema;
    this.deviceType = FerryNative.ferry_device_array_device_type(address);
    this.deviceId = FerryNative.ferry_device_array_device_id(address);
    this.handle = new NativeHandle(this, address, a -> {
      FerryNative.ferry_device_array_free(a);
      schema.release();
    }, "DeviceArray");
  }

  /** For DeviceArrayStream: wraps a filled heap array sharing the stream's schema. */
  static DeviceArray adopt(long heapDeviceArray, SchemaOwner schema) {
    try {
      return new DeviceArray(heapDeviceArray, schema.retain());
    } catch (RuntimeException | Error e) {
      FerryNative.ferry_device_array_free(heapDeviceArray);
      schema.release();
      throw e;
    }
  }

  /**
   * Moves a producer's ArrowSchema and ArrowDeviceArray (at the given addresses)
   * into a new DeviceArray. On success both source structs are left released and
   * Java owns everything; on failure nothing was moved.
   */
  public static DeviceArray importFrom(long schemaAddress, long deviceArrayAddress) {
    if (schemaAddress == 0 || deviceArrayAddress == 0) {
      throw new IllegalArgumentException("null ArrowSchema or ArrowDeviceArray address");
    }
    if (FerryNative.ferry_schema_is_released(schemaAddress)) {
      throw new FerryException(FerryException.EINVAL, "the ArrowSchema to import is released");
    }
    if (FerryNative.ferry_device_array_is_released(deviceArrayAddress)) {
      throw new FerryException(FerryException.EINVAL,
          "the ArrowDeviceArray to import is released");
    }
    long array = newOrThrow(FerryNative.ferry_device_array_new(), "ArrowDeviceArray");
    long schema = FerryNative.ferry_schema_new();
    if (schema == 0) {
      FerryNative.ferry_device_array_free(array);
      throw new OutOfMemoryError("ferry_schema_new: out of memory");
    }
    // The array is moved last, so a failure leaves the producer's array untouched.
    try {
      FerryNative.ferry_schema_move(schemaAddress, schema);
    } catch (RuntimeException e) {
      FerryNative.ferry_schema_free(schema);
      FerryNative.ferry_device_array_free(array);
      throw e;
    }
    try {
      FerryNative.ferry_device_array_move(deviceArrayAddress, array);
    } catch (RuntimeException e) {
      FerryNative.ferry_schema_move(schema, schemaAddress); // hand the schema back
      FerryNative.ferry_schema_free(schema);
      FerryNative.ferry_device_array_free(array);
      throw e;
    }
    return new DeviceArray(array, new SchemaOwner(schema));
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

  /** The top-level array. */
  public ArrayView root() {
    long array = FerryNative.ferry_device_array_array(address());
    return new ArrayView(this, array, schema.address());
  }

  public int deviceType() {
    return deviceType;
  }

  public long deviceId() {
    return deviceId;
  }

  /** The producer's sync event (a pointer to the native event), 0 when none. */
  public long syncEvent() {
    return FerryNative.ferry_device_array_sync_event(address());
  }

  /** True when the host may read this array's memory directly. */
  public boolean isHostAccessible() {
    if (hostAccessible < 0) {
      hostAccessible = deviceType == DeviceType.CPU
          || Device.resolve(deviceType, deviceId).isHostAccessible() ? 1 : 0;
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
    return root().length();
  }

  public long nullCount() {
    return root().nullCount();
  }

  public long offset() {
    return root().offset();
  }

  public int bufferCount() {
    return root().bufferCount();
  }

  public long bufferAddress(int i) {
    return root().bufferAddress(i);
  }

  /** See {@link ArrayView#buffer(int)}. */
  public ByteBuffer buffer(int i) {
    return root().buffer(i);
  }

  public int childCount() {
    return root().childCount();
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
    return adopt(out, schema);
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
    if (deviceType != DeviceType.CPU) {
      throw new FerryException(FerryException.EINVAL, "only CPU arrays export as a plain "
          + "ArrowArray; this one is on " + DeviceType.name(deviceType));
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

  /** Releases the array (exactly once; later calls do nothing). */
  @Override
  public void close() {
    handle.close();
  }

  @Override
  public String toString() {
    if (isClosed()) return "DeviceArray(closed)";
    return "DeviceArray(" + schema().format() + ", length " + length() + ", "
        + DeviceType.name(deviceType) + ":" + deviceId + ")";
  }
}
