package io.github.ferryarrow.ferry;

import io.github.ferryarrow.ferry.jni.FerryNative;
import java.lang.ref.Reference;
import java.nio.ByteBuffer;
import java.util.Iterator;
import java.util.function.LongConsumer;
import java.util.concurrent.locks.ReentrantLock;

/**
 * An ArrowDeviceArrayStream owned by Java: moved in from its producer, released
 * exactly once by {@link #close()} (or by a Cleaner, reported as a leak). Yields
 * {@link DeviceArray}s, each owned by the caller, which share the stream's
 * schema and stay valid after the stream is closed. Every batch is validated
 * against the schema (prepared once per stream) at the stream's
 * {@link Validation} level, DEFAULT unless asked otherwise: a malformed batch is
 * released and comes back as FerryException(EINVAL) with the validator's message.
 * Errors of the producer arrive as FerryException with its code and
 * get_last_error message.
 *
 * <p><b>After an error</b> (the producer's get_next or get_schema failed, or a
 * batch failed validation) the stream never calls the producer's get_next again:
 * every later {@link #next()}, {@link #nextOn}, iteration step and cursor advance
 * throws a FerryException with that same code and message. The end of the stream
 * stays the end (null, again and again).
 *
 * <p><b>Threads.</b> The stream may be shared between threads; its calls are
 * serialized: a second caller of {@link #next()} (or of any other method, a
 * {@link Cursor}'s included) waits until the first returns, because the
 * specification allows one callback at a time. {@link #close()} waits for a call
 * in flight, then releases the stream exactly once, last; a call after it throws
 * IllegalStateException("DeviceArrayStream is closed"). Each {@link #iterator()} is
 * its own object and is not to be shared between threads.
 */
public final class DeviceArrayStream implements AutoCloseable, Iterable<DeviceArray> {
  private final NativeHandle handle;
  private final SchemaCell schemaCell;
  private final Validation validation;
  /** Serializes every call on the stream (see the class comment). */
  private final ReentrantLock lock = new ReentrantLock();
  /** The first error; guarded by {@link #lock}. Replayed by every later pull. */
  private FerryException failure;
  /** The schema views' owner: holds the stream's lock while they read. */
  private final Schema.Owner schemaGuard = new Schema.Owner() {
    @Override
    public long enter() {
      lockCall();
      try {
        return handle.checkedAddress();
      } catch (RuntimeException e) {
        lock.unlock();
        throw e;
      }
    }

    @Override
    public void exit() {
      lock.unlock();
    }
  };

  /** The schema, fetched once; shared with batches, released with the stream
   *  (see SchemaOwner: the stream counts the batches it handed out). */
  private static final class SchemaCell {
    SchemaOwner owner;
    /** The schema prepared for validating batches (0 until fetched, or when
     *  validation is NONE); freed with the stream. */
    long prepared;
    /** Batches handed out; written under the stream's lock, read when the
     *  stream is freed (after the last call). */
    long handedOut;
  }

  private DeviceArrayStream(long address, Validation validation) {
    SchemaCell cell = new SchemaCell();
    this.schemaCell = cell;
    this.validation = validation;
    this.handle = new NativeHandle(this, address, a -> {
      FerryNative.ferry_array_stream_free(a);
      if (cell.prepared != 0) FerryNative.ferry_prepared_schema_free(cell.prepared);
      if (cell.owner != null) cell.owner.endStreamHold(cell.handedOut);
    }, "DeviceArrayStream");
    if (NativeHandle.LEAK_REPORT) {
      handle.trackLeak(() -> "DeviceArrayStream (on " + DeviceType.name(
          FerryNative.ferry_array_stream_device_type(address)) + ") imported and never closed");
    }
  }

  /** Moves the producer's stream at {@code streamAddress} in (it is left released);
   *  batches are validated at {@link Validation#DEFAULT}. */
  public static DeviceArrayStream importFrom(long streamAddress) {
    return importFrom(streamAddress, Validation.DEFAULT);
  }

  /** Moves the producer's stream in; batches are validated at {@code validation}. */
  public static DeviceArrayStream importFrom(long streamAddress, Validation validation) {
    if (streamAddress == 0 || FerryNative.ferry_array_stream_is_released(streamAddress)) {
      throw new FerryException(FerryException.EINVAL, "the stream to import is released");
    }
    return moveIn(stream -> FerryNative.ferry_array_stream_move(streamAddress, stream),
        validation);
  }

  /** A stream struct of ferry's, filled by {@code fill} (and freed if it throws),
   *  imported at {@code validation}. */
  private static DeviceArrayStream moveIn(LongConsumer fill, Validation validation) {
    long stream = DeviceArray.newOrThrow(FerryNative.ferry_array_stream_new(), "stream");
    try {
      fill.accept(stream);
    } catch (RuntimeException e) {
      FerryNative.ferry_array_stream_free(stream);
      throw e;
    }
    return new DeviceArrayStream(stream, validation);
  }

  /** The level this stream validates its batches at (given to its import). */
  public Validation validation() {
    return validation;
  }

  /** The ArrowDeviceArrayStream's address (borrowed; valid until close). */
  public long address() {
    return handle.checkedAddress();
  }

  /** Throws IllegalStateException("DeviceArrayStream is closed") once closed. */
  public void checkOpen() {
    handle.checkedAddress();
  }

  /** True once closed (or moved out). */
  public boolean isClosed() {
    return handle.isClosed();
  }

  /** The stream's device type. */
  public int deviceType() {
    lockCall();
    try {
      return FerryNative.ferry_array_stream_device_type(address());
    } finally {
      lock.unlock();
    }
  }

  /** The stream's schema (get_schema is called once; its failure is the stream's
   *  error, see the class comment; once fetched, it stays readable after a later
   *  error, until close). */
  public Schema schema() {
    lockCall();
    try {
      checkOpen();
      if (schemaCell.owner == null) checkFailure(); // a schema already fetched stays readable
      try {
        return new Schema(schemaOwner().address(), schemaGuard);
      } catch (FerryException e) {
        throw fail(e);
      }
    } finally {
      lock.unlock();
    }
  }

  /** Takes the stream's lock for one call. A call from inside a call of the same
   *  stream on the same thread (a producer callback re-entering its consumer, e.g.
   *  closing it from get_next) is refused: it would release or pull the stream
   *  under the call in flight. */
  private void lockCall() {
    if (lock.isHeldByCurrentThread()) {
      throw new IllegalStateException("DeviceArrayStream: a call from inside one of its own "
          + "calls (a producer callback re-entering its consumer) is refused");
    }
    lock.lock();
  }

  /** Throws the stream's recorded error again (same code and message), if any.
   *  Under the lock. */
  private void checkFailure() {
    FerryException f = failure;
    if (f != null) throw new FerryException(f.code(), f.getMessage());
  }

  /** Records {@code e} as the stream's error (the first one stays); returns it.
   *  Under the lock. */
  private FerryException fail(FerryException e) {
    if (failure == null && !handle.isClosed()) failure = e;
    return e;
  }

  /** Under the lock. */
  private SchemaOwner schemaOwner() {
    long stream = address();
    if (schemaCell.owner == null) {
      long schema = DeviceArray.newOrThrow(FerryNative.ferry_schema_new(), "ArrowSchema");
      try {
        FerryNative.ferry_array_stream_get_schema(stream, schema);
      } catch (RuntimeException e) {
        FerryNative.ferry_schema_free(schema);
        throw e;
      }
      schemaCell.owner = SchemaOwner.forStream(schema);
    }
    return schemaCell.owner;
  }

  /** The prepared schema batches are validated with (0 for NONE); a schema that
   *  fails validation throws here (the stream's error). Under the lock. */
  private long prepared() {
    if (validation == Validation.NONE) return 0;
    long p = schemaCell.prepared;
    if (p == 0) {
      long[] out = new long[1];
      FerryNative.ferry_prepared_schema_create(schemaOwner().address(), 0, 0, out);
      p = out[0];
      schemaCell.prepared = p;
    }
    return p;
  }

  /** The next batch (owned by the caller), or null at the end of the stream. One
   *  JNI call: get_next into a new slot, validation, and what the accessors read. */
  public DeviceArray next() {
    return pull(0, 0);
  }

  /**
   * The next batch, handed to {@code consumerStream} (a native stream of the
   * batch's device, the {@code CUstream} / {@code hipStream_t} value itself): that
   * stream is made to wait on the batch's sync event and the host does not block;
   * with 0 the host waits for the event instead. Null at the end of the stream. A
   * batch whose wait cannot be queued is released and the error thrown, so no
   * batch arrives unordered.
   */
  public DeviceArray nextOn(long consumerStream) {
    return pull(1, consumerStream);
  }

  private DeviceArray pull(int onStream, long consumerStream) {
    lockCall();
    try {
      long stream = address();
      checkFailure();
      long slot;
      SchemaOwner schema;
      try {
        schema = schemaOwner();
        slot = FerryNative.ferry_jni_stream_next(stream, onStream, consumerStream,
            prepared(), validation.level());
      } catch (FerryException e) {
        throw fail(e);
      }
      if (slot < 0) return null;
      schemaCell.handedOut++; // the batch's hold on the schema (see SchemaOwner)
      return DeviceArray.wrap(slot, schema);
    } finally {
      lock.unlock();
    }
  }

  /** Iterates the remaining batches; each must be closed by the caller. */
  @Override
  public Iterator<DeviceArray> iterator() {
    return new BatchIterator(this::next);
  }

  /**
   * A zero-allocation walk over the remaining batches: one reused ArrowDeviceArray
   * whose batch is borrowed until the cursor advances or closes (then it is
   * released). Each advance is a single Java-to-C call, which validates the batch
   * as {@link #next()} does. Use it on hot paths; use {@link #next()} to keep
   * batches.
   */
  public Cursor cursor() {
    return new Cursor(this);
  }

  /** See {@link #cursor()}. Its advance and close take the stream's lock (one
   *  call at a time); what it reports about the current batch is for the thread
   *  that advanced it. Close it before closing the stream. */
  public static final class Cursor implements AutoCloseable {
    private final DeviceArrayStream stream;
    /** A slot: the reused struct, and what the last advance reported after it. */
    private final NativeHandle batch;
    private final ByteBuffer slab;
    private final int info;
    /** What each advance validates with (fetched once, here). */
    private final long prepared;
    private final int level;
    private long length = -1;

    private Cursor(DeviceArrayStream stream) {
      this.stream = stream;
      stream.lockCall();
      try {
        stream.checkOpen();
        stream.checkFailure();
        try {
          this.prepared = stream.prepared();
        } catch (FerryException e) {
          throw stream.fail(e);
        }
      } finally {
        stream.lock.unlock();
      }
      this.level = stream.validation.level();
      long slot = FerryNative.ferry_jni_new_slot();
      long address;
      try {
        this.slab = Slab.chunk(slot);
        address = Slab.address(slot);
      } catch (RuntimeException | Error e) {
        throw new IllegalStateException("ferry: slot " + slot + " unreachable", e);
      }
      this.info = Slab.offset(slot) + FerryNative.FERRY_JNI_SLOT_INFO_OFFSET;
      this.batch = new NativeHandle(this, address, a -> FerryNative.ferry_jni_close_slot(a, 0),
          "DeviceArrayStream.Cursor");
    }

    /** Releases the current batch and moves to the next; false at the end. One JNI
     *  call, which also validates the batch and reports length, counts and buffer
     *  addresses. A malformed batch is released and thrown (the cursor then holds
     *  none). */
    public boolean advance() {
      stream.lockCall();
      try {
        long slot = batch.checkedAddress();
        long s = stream.address();
        stream.checkFailure();
        try {
          length = FerryNative.ferry_jni_cursor_advance(s, slot, prepared, level);
        } catch (FerryException e) {
          length = -1; // the failed batch was released: the cursor holds none
          throw stream.fail(e);
        } catch (RuntimeException e) {
          length = -1;
          throw e;
        }
        return length >= 0;
      } finally {
        stream.lock.unlock();
      }
    }

    /** Length of the current batch (-1 before the first advance and at the end). */
    public long length() {
      return length;
    }

    /** The current batch's ArrowDeviceArray (borrowed until the next advance). */
    public long address() {
      return batch.checkedAddress();
    }

    private void checkHolds() {
      if (length < 0) throw new IllegalStateException("the cursor holds no batch");
    }

    /** Buffer {@code i}'s address of the current batch's top-level array. */
    public long bufferAddress(int i) {
      long a = address();
      checkHolds();
      return Slab.bufferAddress(slab, info, a, i);
    }

    /** The current batch's device type (valid while it holds a batch). */
    public int deviceType() {
      checkHolds();
      return (int) slab.getLong(info + 8 * FerryNative.FERRY_JNI_INFO_DEVICE_TYPE);
    }

    /** Releases the current batch. */
    @Override
    public void close() {
      stream.lockCall();
      try {
        batch.close();
      } finally {
        stream.lock.unlock();
      }
      Reference.reachabilityFence(this);
    }
  }

  /** Moves the stream out to a consumer's released struct; this object is closed. */
  public void exportTo(long streamOut) {
    moveOut(a -> FerryNative.ferry_array_stream_move(a, streamOut));
  }

  /** Under the lock: {@code move} takes the stream's contents, then this object is
   *  closed (left open when move throws). */
  private void moveOut(LongConsumer move) {
    lockCall();
    try {
      move.accept(address());
      handle.close();
    } finally {
      lock.unlock();
    }
  }

  /**
   * Moves the stream out as a plain ArrowArrayStream at {@code arrowStreamOut}
   * (released beforehand), the form Arrow Java's {@code Data.importArrayStream}
   * reads: every batch is validated (FULL: Arrow Java trusts offsets and UTF-8),
   * waited on, and brought to the CPU when the host cannot read its device. This
   * object is closed; batches already taken stay valid.
   */
  public void exportToArrowStream(long arrowStreamOut) {
    moveOut(a -> FerryNative.ferry_jni_stream_to_arrow(a, arrowStreamOut));
  }

  /** Moves a plain ArrowArrayStream of CPU batches (e.g. from Arrow Java's
   *  {@code Data.exportArrayStream}) in as a stream of the CPU; the source is left
   *  released. Batches are validated at {@code validation}. */
  public static DeviceArrayStream importArrowStream(long arrowStreamAddress,
      Validation validation) {
    return moveIn(stream -> FerryNative.ferry_jni_stream_from_arrow(arrowStreamAddress, stream),
        validation);
  }

  /** Releases the stream (exactly once), after waiting for a call in flight on
   *  another thread. Batches already taken stay valid. */
  @Override
  public void close() {
    lockCall();
    try {
      handle.close();
    } finally {
      lock.unlock();
    }
    Reference.reachabilityFence(this);
  }
}
