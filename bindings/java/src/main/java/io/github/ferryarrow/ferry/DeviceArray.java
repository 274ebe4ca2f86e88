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
 * {@link #copyTo}.
 *
 * <p><b>Threads.</b> Every read (accessors, value readers, child views, schema
 * views, validation, copies) may run on many threads at once. {@link #close()}
 * and the calls that move the array out ({@link #moveTo}, {@link #toHost()},
 * {@link #exportTo}, {@link #exportArrowC}, {@link #toDlpack}) wait for the reads
 * in flight to finish and keep new ones out; a read that starts after them throws
 * IllegalStateException("DeviceArray is closed"). Only what a call hands out and
 * the binding cannot watch, a {@link #buffer(int)} ByteBuffer or an address, must
 * not be used after close.
 *
 * <p>What no consumer can check: on the CPU the interface carries no buffer sizes,
 * so a producer that declares a length longer than its buffer cannot be caught; the
 * sim and GPU devices know their allocations and validation refuses such buffers.
 */
public final class DeviceArray implements AutoCloseable {
  private final NativeHandle handle;
  private final SchemaOwner schema;
  /** The slot's chunk and the offset of its info there: what the import call
   *  reported (FERRY_JNI_INFO_* indices); the struct never changes while owned. */
  private final ByteBuffer slab;
  private final int info;
  private int hostAccessible = -1;
  /** The root view, made on first use (it caches the buffer views). */
  private volatile ArrayView root;

  /** Takes ownership of a filled slot and one hold on {@code schema}. */
  private DeviceArray(long slot, long slotAddress, SchemaOwner schema) {
    this(Slab.chunk(slot), Slab.offset(slot) + FerryNative.FERRY_JNI_SLOT_INFO_OFFSET,
        slotAddress, schema);
  }

  /** Takes ownership of the slot at {@code slotAddress} (its info at {@code info}
   *  in {@code slab}) and one hold on {@code schema}. */
  private DeviceArray(ByteBuffer slab, int info, long slotAddress, SchemaOwner schema) {
    this.schema = schema;
    this.slab = slab;
    this.info = info;
    this.handle = new NativeHandle(this, slotAddress, schema, "DeviceArray");
    if (NativeHandle.LEAK_REPORT) handle.trackLeak(this::leakDescription);
  }

  /** What the leak report says of this array when it is never closed. */
  private String leakDescription() {
    return "DeviceArray (format '" + FerryNative.ferry_schema_format(schema.address())
        + "', length " + info(FerryNative.FERRY_JNI_INFO_LENGTH) + ", on "
        + DeviceType.name((int) info(FerryNative.FERRY_JNI_INFO_DEVICE_TYPE))
        + ") imported and never closed";
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

  /** Info {@code k}, read with the array held open (a slot is reused once closed). */
  private long guardedInfo(int k) {
    handle.enter();
    try {
      return info(k);
    } finally {
      handle.exit();
    }
  }

  /** The guard that reads take (see the class comment); views and schemas use it. */
  NativeHandle guard() {
    return handle;
  }

  /**
   * Moves a producer's ArrowDeviceArray and ArrowSchema (at the given addresses:
   * the array first, then the schema, as Arrow Java's {@code Data.importVector})
   * into a new DeviceArray and validates it ({@link Validation#DEFAULT}: structure,
   * counts, devices; no buffer content). Takes ownership of the producer's
   * structs, which are left released: a validation finding releases the array
   * and throws FerryException(EINVAL) with the validator's message. When the
   * structs are already released (FerryException EINVAL) or an address is 0
   * (IllegalArgumentException) nothing is moved.
   */
  public static DeviceArray importFrom(long deviceArrayAddress, long schemaAddress) {
    return importFrom(deviceArrayAddress, schemaAddress, Validation.DEFAULT);
  }

  /**
   * {@link #importFrom(long, long)} validating at {@code validation}:
   * {@link Validation#NONE} trusts the producer (the accessors then still check
   * indices against what the array declares, but a lying producer can make them
   * read what it points at), {@link Validation#FULL} also reads offsets, UTF-8 and
   * validity bits.
   */
  public static DeviceArray importFrom(long deviceArrayAddress, long schemaAddress,
      Validation validation) {
    long slot = FerryNative.ferry_jni_import_array(schemaAddress, deviceArrayAddress,
        validation.level());
    ByteBuffer chunk = Slab.chunk(slot);
    long schema = chunk.getLong(Slab.offset(slot) + FerryNative.FERRY_JNI_SLOT_INFO_OFFSET
        + 8 * FerryNative.FERRY_JNI_INFO_SCHEMA);
    return wrap(slot, new SchemaOwner(schema));
  }

  /**
   * Moves a plain CPU ArrowArray + ArrowSchema (e.g. from Arrow Java's C data
   * module; the array first) in, as a DeviceArray on the CPU (device id -1),
   * validated as {@link #importFrom(long, long)} does.
   */
  public static DeviceArray importArrowC(long arrowArrayAddress, long arrowSchemaAddress) {
    if (arrowSchemaAddress == 0 || FerryNative.ferry_schema_is_released(arrowSchemaAddress)) {
      throw new FerryException(FerryException.EINVAL, "the ArrowSchema to import is released");
    }
    long deviceArray = newOrThrow(FerryNative.ferry_device_array_new(), "ArrowDeviceArray");
    try {
      // Moves the ArrowArray into the device array, leaving the source released.
      FerryNative.ferry_device_array_init(deviceArray, arrowArrayAddress, DeviceType.CPU, -1,
          0, 0, 0);
      return importFrom(deviceArray, arrowSchemaAddress);
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

  /**
   * Moves the array into a new DeviceArray object, without a native call or a copy
   * (the same slot, schema and device), and closes this one: for code that hands
   * the memory to another owner (a bridge whose vectors keep the array alive), so
   * that a later {@code close()} of this object, by try-with-resources for
   * instance, cannot release memory the new owner still reads. Waits for reads in
   * flight; IllegalStateException when this array is closed. The caller owns the
   * result.
   */
  public DeviceArray transfer() {
    long a = handle.detach();
    if (a == 0) throw new IllegalStateException("DeviceArray is closed");
    // The schema hold travels with the slot (detach runs no free).
    DeviceArray moved = new DeviceArray(slab, info, a, schema);
    moved.hostAccessible = hostAccessible;
    Reference.reachabilityFence(this);
    return moved;
  }

  /** Throws IllegalStateException("DeviceArray is closed") once closed. */
  public void checkOpen() {
    handle.checkedAddress();
  }

  public boolean isClosed() {
    return handle.isClosed();
  }

  public Schema schema() {
    checkOpen();
    return new Schema(schema.address(), handle);
  }

  /** The top-level array (its ArrowArray is the device array's first member). */
  public ArrayView root() {
    ArrayView r = root;
    if (r == null) r = root = new ArrayView(this, address(), schema.address(), slab, info);
    return r;
  }

  /** The ArrowDeviceType of the array's memory ({@link DeviceType}). */
  public int deviceType() {
    return (int) guardedInfo(FerryNative.FERRY_JNI_INFO_DEVICE_TYPE);
  }

  /** The device id (-1 on the CPU). */
  public long deviceId() {
    return guardedInfo(FerryNative.FERRY_JNI_INFO_DEVICE_ID);
  }

  /** The device the array's memory lives on. */
  public Device device() {
    return Device.resolve(deviceType(), deviceId());
  }

  /** The producer's sync event (a pointer to the native event), 0 when none. */
  public long syncEvent() {
    return guardedInfo(FerryNative.FERRY_JNI_INFO_SYNC_EVENT);
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
    long a = handle.enter();
    try {
      FerryNative.ferry_device_array_wait(a, consumerStream);
    } finally {
      handle.exit();
    }
  }

  public long length() {
    return guardedInfo(FerryNative.FERRY_JNI_INFO_LENGTH);
  }

  public long nullCount() {
    return guardedInfo(FerryNative.FERRY_JNI_INFO_NULL_COUNT);
  }

  public long offset() {
    return guardedInfo(FerryNative.FERRY_JNI_INFO_OFFSET);
  }

  public int bufferCount() {
    return Math.toIntExact(guardedInfo(FerryNative.FERRY_JNI_INFO_N_BUFFERS));
  }

  /** Buffer {@code i}'s address on the array's device (0 when absent). */
  public long bufferAddress(int i) {
    long a = handle.enter();
    try {
      return Slab.bufferAddress(slab, info, a, i);
    } finally {
      handle.exit();
    }
  }

  /** See {@link ArrayView#buffer(int)}. */
  public ByteBuffer buffer(int i) {
    return root().buffer(i);
  }

  public int childCount() {
    return Math.toIntExact(guardedInfo(FerryNative.FERRY_JNI_INFO_N_CHILDREN));
  }

  public ArrayView child(int i) {
    return root().child(i);
  }

  public ArrayView dictionary() {
    return root().dictionary();
  }

  // ---- value readers (host-accessible arrays; see ArrayView) ----------------

  /** {@link ArrayView#isNull(long)} of the top-level array. */
  public boolean isNull(long i) {
    return root().isNull(i);
  }

  /** {@link ArrayView#isValid(long)} of the top-level array. */
  public boolean isValid(long i) {
    return root().isValid(i);
  }

  /** {@link ArrayView#getBoolean(long)} of the top-level array. */
  public boolean getBoolean(long i) {
    return root().getBoolean(i);
  }

  /** {@link ArrayView#getByte(long)} of the top-level array. */
  public byte getByte(long i) {
    return root().getByte(i);
  }

  /** {@link ArrayView#getShort(long)} of the top-level array. */
  public short getShort(long i) {
    return root().getShort(i);
  }

  /** {@link ArrayView#getInt(long)} of the top-level array. */
  public int getInt(long i) {
    return root().getInt(i);
  }

  /** {@link ArrayView#getLong(long)} of the top-level array. */
  public long getLong(long i) {
    return root().getLong(i);
  }

  /** {@link ArrayView#getFloat(long)} of the top-level array. */
  public float getFloat(long i) {
    return root().getFloat(i);
  }

  /** {@link ArrayView#getDouble(long)} of the top-level array. */
  public double getDouble(long i) {
    return root().getDouble(i);
  }

  /** {@link ArrayView#getBytes(long)} of the top-level array (a copy). */
  public byte[] getBytes(long i) {
    return root().getBytes(i);
  }

  /** {@link ArrayView#getString(long)} of the top-level array. */
  public String getString(long i) {
    return root().getString(i);
  }

  /** {@link ArrayView#getBigDecimal(long)} of the top-level array. */
  public java.math.BigDecimal getBigDecimal(long i) {
    return root().getBigDecimal(i);
  }

  /** {@link ArrayView#typeId(long)} of the top-level array. */
  public byte typeId(long i) {
    return root().typeId(i);
  }

  /** {@link ArrayView#unionChild(long)} of the top-level array. */
  public int unionChild(long i) {
    return root().unionChild(i);
  }

  /** {@link ArrayView#unionValueIndex(long)} of the top-level array. */
  public long unionValueIndex(long i) {
    return root().unionValueIndex(i);
  }

  /** {@link ArrayView#runIndex(long)} of the top-level array. */
  public long runIndex(long i) {
    return root().runIndex(i);
  }

  /** {@link ArrayView#listStart(long)} of the top-level array. */
  public long listStart(long i) {
    return root().listStart(i);
  }

  /** {@link ArrayView#listEnd(long)} of the top-level array. */
  public long listEnd(long i) {
    return root().listEnd(i);
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
    long a = handle.enter();
    try {
      FerryNative.ferry_validate_device_array(schema.address(), a, validation.level(), 0, 0);
    } finally {
      handle.exit();
    }
  }

  /** Every finding of the validator at {@code validation} (empty when the array
   *  is valid), in the order found. */
  public List<Finding> findings(Validation validation) {
    if (validation == Validation.NONE) return List.of();
    long a = handle.enter();
    try {
      return Finding.parse(FerryNative.ferry_jni_validate_report(schema.address(), a,
          validation.level()));
    } finally {
      handle.exit();
    }
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
    long out = newOrThrow(FerryNative.ferry_device_array_new(), "ArrowDeviceArray");
    long a;
    try {
      a = handle.lockExclusive(); // waits for reads in flight
    } catch (RuntimeException e) {
      FerryNative.ferry_device_array_free(out);
      throw e;
    }
    try {
      FerryNative.ferry_device_array_move_to_device(schema.address(), a, targetType, targetId,
          out);
    } catch (RuntimeException e) {
      handle.unlockExclusive();
      FerryNative.ferry_device_array_free(out);
      throw e;
    }
    // The result shares the schema; this array's struct is released (moved or
    // copied and released), so closing it only frees its slot and drops its hold.
    SchemaOwner held = schema.retain();
    handle.closeExclusive();
    return wrapHeap(out, held);
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
    long a;
    try {
      a = handle.enter();
    } catch (RuntimeException e) {
      FerryNative.ferry_device_array_free(out);
      throw e;
    }
    SchemaOwner held;
    try {
      FerryNative.ferry_device_array_copy(schema.address(), a, targetType, targetId, out);
      held = schema.retain(); // while this array's hold keeps the schema alive
    } catch (RuntimeException e) {
      FerryNative.ferry_device_array_free(out);
      throw e;
    } finally {
      handle.exit();
    }
    return wrapHeap(out, held);
  }

  /**
   * Moves the array out to a consumer's structs: the device array and schema at
   * the given addresses (the array first; both released beforehand) receive ownership, and this
   * object is closed without releasing the array. The schema is moved when this
   * array is its only holder, else deep-copied (stream batches share one).
   */
  public void exportTo(long deviceArrayOut, long schemaOut) {
    checkOpen();
    if (!FerryNative.ferry_schema_is_released(schemaOut)
        || !FerryNative.ferry_device_array_is_released(deviceArrayOut)) {
      throw new FerryException(FerryException.EINVAL, "export targets must be released");
    }
    long a = lockAndExportSchema(schemaOut);
    FerryNative.ferry_device_array_move(a, deviceArrayOut);
    handle.closeExclusive(); // frees the now released struct and drops the schema hold
  }

  /**
   * The start of a move out: takes the exclusive hold (waiting for reads in flight) and
   * exports the schema into {@code schemaOut}; returns the struct's address, held. On
   * failure the hold is given back and nothing is moved.
   */
  private long lockAndExportSchema(long schemaOut) {
    long a = handle.lockExclusive();
    try {
      exportSchemaTo(schemaOut);
    } catch (RuntimeException | Error e) {
      handle.unlockExclusive();
      throw e;
    }
    return a;
  }

  /**
   * Moves the array out as a plain CPU ArrowArray + ArrowSchema (for Arrow Java's
   * C data module; the array first), which trusts offsets, UTF-8 and indices: the array is validated
   * ({@link Validation#FULL}) first, and a finding is FerryException(EINVAL) "the
   * array fails validation: ..." with nothing moved. Waits on the sync event; CPU
   * arrays only (bring others over with {@link #toHost()}).
   */
  public void exportArrowC(long arrowArrayOut, long arrowSchemaOut) {
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
    long a = lockAndExportSchema(arrowSchemaOut);
    FerryNative.ferry_array_move(FerryNative.ferry_device_array_array(a), arrowArrayOut);
    handle.closeExclusive();
  }

  /** Moves the device array alone out to the released struct at {@code deviceArrayOut}
   *  (a stream's get_next: the stream gave the schema); this object is closed. */
  void moveArrayTo(long deviceArrayOut) {
    long a = handle.lockExclusive();
    try {
      FerryNative.ferry_device_array_move(a, deviceArrayOut);
    } catch (RuntimeException | Error e) {
      handle.unlockExclusive();
      throw e;
    }
    handle.closeExclusive();
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
    long[] out = new long[1];
    long a = handle.lockExclusive(); // waits for reads in flight
    try {
      FerryNative.ferry_device_array_to_dlpack(schema.address(), a, consumerStream, out);
    } catch (RuntimeException | Error e) {
      handle.unlockExclusive();
      throw e;
    }
    handle.closeExclusive(); // the struct was moved into the tensor: frees it and the schema hold
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

  /** Releases the array (exactly once; later calls do nothing), after the reads
   *  in flight on other threads have finished. */
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
