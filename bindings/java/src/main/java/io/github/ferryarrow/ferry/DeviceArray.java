package io.github.ferryarrow.ferry;

import io.github.ferryarrow.ferry.jni.FerryNative;
import io.github.ferryarrow.ferry.jni.FerryNativeConstants;
import java.lang.ref.Reference;
import java.nio.ByteBuffer;
import java.util.List;

/**
 * An ArrowDeviceArray and its schema owned by Java. The structs live on the C
 * heap; the array was moved in from its producer, so this object is the only
 * owner and {@link #close()} releases it exactly once (a safety net releases it,
 * and reports a leak, if it becomes unreachable unclosed: see {@link NativeHandle}).
 *
 * <p>Import is one JNI call, which also validates the array against its schema
 * ({@link Validation#DEFAULT} unless asked otherwise: a malformed array comes back
 * as a {@link FerryException} with the validator's message, and nothing of it is
 * read) and reports the top-level length, null count, offset, buffer count, buffer
 * addresses and device; those accessors read that cache and make no native call.
 * Close is one JNI call. Buffers of host-readable memory are exposed as read-only,
 * bounds-checked direct ByteBuffers sized from the format, length and offset,
 * without copying; device memory is brought to the host with {@link #toHost()} or
 * {@link #copyTo}. Not thread-safe, like the underlying struct.
 *
 * <p>What no consumer can check: on the CPU the interface carries no buffer sizes,
 * so a producer that declares a length longer than its buffer cannot be caught; the
 * sim and GPU devices know their allocations and validation refuses such buffers.
 */
public final class DeviceArray implements AutoCloseable, Schema.Owner {
  private final NativeHandle handle;
  private final SchemaOwner schema;
  /** The slot's chunk and the offset of its info there: what the import call
   *  reported (FERRY_JNI_INFO_* indices); the struct never changes while owned. */
  private final ByteBuffer slab;
  private final int info;
  private int hostAccessible = -1;
  /** The root view, made on first use (it caches the buffer views). */
  private ArrayView root;

  /** Takes ownership of a filled slot and one hold on {@code schema}. */
  private DeviceArray(long slot, long slotAddress, SchemaOwner schema) {
    this.schema = schema;
    this.slab = Slab.chunk(slot);
    this.info = Slab.offset(slot) + FerryNative.FERRY_JNI_SLOT_INFO_OFFSET;
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
      slot = FerryNative.ferry_jni_adopt(heapDeviceArray);
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
   * into a new DeviceArray and validates it ({@link Validation#DEFAULT}: structure,
   * counts, devices; no buffer content). Takes ownership of the producer's
   * structs, which are left released: a validation finding releases the array
   * and throws FerryException(EINVAL) with the validator's message. When the
   * structs are already released (FerryException EINVAL) or an address is 0
   * (IllegalArgumentException) nothing is moved.
   */
  public static DeviceArray importFrom(long schemaAddress, long deviceArrayAddress) {
    return importFrom(schemaAddress, deviceArrayAddress, Validation.DEFAULT);
  }

  /**
   * {@link #importFrom(long, long)} validating at {@code validation}:
   * {@link Validation#NONE} trusts the producer (the accessors then still check
   * indices against what the array declares, but a lying producer can make them
   * read what it points at), {@link Validation#FULL} also reads offsets, UTF-8 and
   * validity bits.
   */
  public static DeviceArray importFrom(long schemaAddress, long deviceArrayAddress,
      Validation validation) {
    long slot = FerryNative.ferry_jni_import_array(schemaAddress, deviceArrayAddress,
        validation.level());
    ByteBuffer chunk = Slab.chunk(slot);
    long schema = chunk.getLong(Slab.offset(slot) + FerryNative.FERRY_JNI_SLOT_INFO_OFFSET
        + 8 * FerryNative.FERRY_JNI_INFO_SCHEMA);
    return wrap(slot, new SchemaOwner(schema));
  }

  /**
   * Moves a plain CPU ArrowSchema + ArrowArray (e.g. from Arrow Java's C data
   * module) in, as a DeviceArray on the CPU (device id -1), validated as
   * {@link #importFrom(long, long)} does.
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
    ArrayView r = root;
    if (r == null) r = root = new ArrayView(this, address(), schema.address(), slab, info);
    return r;
  }

  /** The ArrowDeviceType of the array's memory ({@link DeviceType}). */
  public int deviceType() {
    checkOpen();
    return (int) info(FerryNative.FERRY_JNI_INFO_DEVICE_TYPE);
  }

  /** The device id (-1 on the CPU). */
  public long deviceId() {
    checkOpen();
    return info(FerryNative.FERRY_JNI_INFO_DEVICE_ID);
  }

  /** The device the array's memory lives on. */
  public Device device() {
    return Device.resolve(deviceType(), deviceId());
  }

  /** The producer's sync event (a pointer to the native event), 0 when none. */
  public long syncEvent() {
    checkOpen();
    return info(FerryNative.FERRY_JNI_INFO_SYNC_EVENT);
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

  /**
   * Makes {@code consumerStream}, a native stream of this array's device (the
   * {@code CUstream} / {@code hipStream_t} value itself, not a pointer to it), wait
   * for the producer's event without blocking the host; 0 blocks the host instead.
   * Enqueue the wait before closing the array: the event lives as long as the array.
   */
  public void waitOn(long consumerStream) {
    FerryNative.ferry_device_array_wait(address(), consumerStream);
  }

  public long length() {
    checkOpen();
    return info(FerryNative.FERRY_JNI_INFO_LENGTH);
  }

  public long nullCount() {
    checkOpen();
    return info(FerryNative.FERRY_JNI_INFO_NULL_COUNT);
  }

  public long offset() {
    checkOpen();
    return info(FerryNative.FERRY_JNI_INFO_OFFSET);
  }

  public int bufferCount() {
    checkOpen();
    return Math.toIntExact(info(FerryNative.FERRY_JNI_INFO_N_BUFFERS));
  }

  /** Buffer {@code i}'s address on the array's device (0 when absent). */
  public long bufferAddress(int i) {
    long a = address();
    long n = info(FerryNative.FERRY_JNI_INFO_N_BUFFERS);
    if (i < 0 || i >= n) throw new IndexOutOfBoundsException("buffer " + i + " of " + n);
    if (i < FerryNative.FERRY_JNI_INFO_INLINE_BUFFERS) {
      return info(FerryNative.FERRY_JNI_INFO_BUFFER0 + i);
    }
    return FerryNative.ferry_array_buffer(a, i);
  }

  /** See {@link ArrayView#buffer(int)}. */
  public ByteBuffer buffer(int i) {
    return root().buffer(i);
  }

  public int childCount() {
    checkOpen();
    return Math.toIntExact(info(FerryNative.FERRY_JNI_INFO_N_CHILDREN));
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
    validate(full ? Validation.FULL : Validation.DEFAULT);
  }

  /** Validates at {@code validation} (NONE does nothing); FerryException(EINVAL)
   *  with the first finding. */
  public void validate(Validation validation) {
    if (validation == Validation.NONE) return;
    FerryNative.ferry_validate_device_array(schema.address(), address(), validation.level(),
        0, 0);
  }

  /** Every finding of the validator at {@code validation} (empty when the array
   *  is valid), in the order found. */
  public List<Finding> findings(Validation validation) {
    if (validation == Validation.NONE) return List.of();
    return Finding.parse(FerryNative.ferry_jni_validate_report(schema.address(), address(),
        validation.level()));
  }

  /**
   * Brings the array to the host: the returned DeviceArray is on the CPU and
   * readable there, and this one is consumed (closed). Memory the CPU can reach
   * (the CPU itself, cuda_host, rocm_host, cuda_managed) is moved without copying
   * once the host waited on the producer's event; anything else (a GPU, the sim
   * device) is copied, after that wait, and this array released. On failure this
   * array is unchanged and still open.
   */
  public DeviceArray toHost() {
    return moveTo(DeviceType.CPU, -1);
  }

  /**
   * Moves the array to (targetType, targetId): without copying when the target can
   * reach the memory (the same device; pinned or managed memory to the CPU after
   * the host waited; cuda_managed to cuda of the same id), else by a deep copy. This
   * array is consumed (closed); the result is a new DeviceArray the caller closes.
   * On failure this array is unchanged and still open.
   */
  public DeviceArray moveTo(int targetType, long targetId) {
    long a = address();
    long out = newOrThrow(FerryNative.ferry_device_array_new(), "ArrowDeviceArray");
    try {
      FerryNative.ferry_device_array_move_to_device(schema.address(), a, targetType, targetId,
          out);
    } catch (RuntimeException e) {
      FerryNative.ferry_device_array_free(out);
      throw e;
    }
    // The result shares the schema; this array's struct is released (moved or
    // copied and released), so closing it only frees its slot and drops its hold.
    DeviceArray moved = wrapHeap(out, schema.retain());
    close();
    return moved;
  }

  /** {@link #moveTo(int, long)} to {@code target}. */
  public DeviceArray moveTo(Device target) {
    return moveTo(target.type(), target.id());
  }

  /** {@link #copyTo(int, long)} to {@code target}. */
  public DeviceArray copyTo(Device target) {
    return copyTo(target.type(), target.id());
  }

  /** Deep-copies this array to (deviceType, deviceId), after waiting on its event;
   *  the copy is a new DeviceArray the caller closes, and this one stays open. */
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

  /**
   * Moves the array out as a plain CPU ArrowSchema + ArrowArray (for Arrow Java's
   * C data module), which trusts offsets, UTF-8 and indices: the array is validated
   * ({@link Validation#FULL}) first, and a finding is FerryException(EINVAL) "the
   * array fails validation: ..." with nothing moved. Waits on the sync event; CPU
   * arrays only (bring others over with {@link #toHost()}).
   */
  public void exportArrowC(long arrowSchemaOut, long arrowArrayOut) {
    if (deviceType() != DeviceType.CPU) {
      throw new FerryException(FerryException.EINVAL, "only CPU arrays export as a plain "
          + "ArrowArray; this one is on " + DeviceType.name(deviceType())
          + " (DeviceArray.toHost() brings it over)");
    }
    await();
    try {
      validate(Validation.FULL);
    } catch (FerryException e) {
      throw new FerryException(e.code(), "the array fails validation: " + e.getMessage());
    }
    long a = address();
    exportSchemaTo(arrowSchemaOut);
    FerryNative.ferry_array_move(FerryNative.ferry_device_array_array(a), arrowArrayOut);
    handle.close();
  }

  /** Moves the device array alone out to the released struct at {@code deviceArrayOut}
   *  (a stream's get_next: the stream gave the schema); this object is closed. */
  void moveArrayTo(long deviceArrayOut) {
    FerryNative.ferry_device_array_move(address(), deviceArrayOut);
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
