package org.ferry;

import java.util.Iterator;
import java.util.NoSuchElementException;
import java.lang.ref.Reference;
import java.nio.ByteBuffer;
import org.ferry.jni.FerryNative;
import org.ferry.jni.Handoff;

/**
 * An ArrowDeviceArrayStream owned by Java: moved in from its producer, released
 * exactly once by {@link #close()} (or by a Cleaner, reported as a leak). Yields
 * {@link DeviceArray}s, each owned by the caller, which share the stream's
 * schema and stay valid after the stream is closed. Errors of the producer
 * arrive as FerryException with its code and get_last_error message.
 * Single-threaded, like the underlying stream.
 */
public final class DeviceArrayStream implements AutoCloseable, Iterable<DeviceArray>,
    Schema.Owner {
  private final NativeHandle handle;
  private final SchemaCell schemaCell;

  /** The schema, fetched once; shared with batches, released with the stream
   *  (see SchemaOwner: the stream counts the batches it handed out). */
  private static final class SchemaCell {
    SchemaOwner owner;
    /** Batches handed out; written by the stream's thread only (streams are
     *  single-threaded), read when the stream is freed. */
    long handedOut;
  }

  private DeviceArrayStream(long address) {
    SchemaCell cell = new SchemaCell();
    this.schemaCell = cell;
    this.handle = new NativeHandle(this, address, a -> {
      FerryNative.ferry_array_stream_free(a);
      if (cell.owner != null) cell.owner.endStreamHold(cell.handedOut);
    }, "DeviceArrayStream");
  }

  /** Moves the producer's stream at {@code streamAddress} in (it is left released). */
  public static DeviceArrayStream importFrom(long streamAddress) {
    if (streamAddress == 0 || FerryNative.ferry_array_stream_is_released(streamAddress)) {
      throw new FerryException(FerryException.EINVAL, "the stream to import is released");
    }
    long stream = DeviceArray.newOrThrow(FerryNative.ferry_array_stream_new(), "stream");
    try {
      FerryNative.ferry_array_stream_move(streamAddress, stream);
    } catch (RuntimeException e) {
      FerryNative.ferry_array_stream_free(stream);
      throw e;
    }
    return new DeviceArrayStream(stream);
  }

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

  /** The stream's device type. */
  public int deviceType() {
    return FerryNative.ferry_array_stream_device_type(address());
  }

  /** The stream's schema (get_schema is called once). */
  public Schema schema() {
    return new Schema(schemaOwner().address(), this);
  }

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

  /** The next batch (owned by the caller), or null at the end of the stream. One
   *  JNI call: get_next into a new heap struct, reporting what the accessors read. */
  public DeviceArray next() {
    SchemaOwner schema = schemaOwner();
    long slot = Handoff.streamNext(address());
    if (slot < 0) return null;
    schemaCell.handedOut++; // the batch's hold on the schema (see SchemaOwner)
    return DeviceArray.wrap(slot, schema);
  }

  /** Iterates the remaining batches; each must be closed by the caller. */
  @Override
  public Iterator<DeviceArray> iterator() {
    return new Iterator<>() {
      private DeviceArray pending;
      private boolean done;

      @Override
      public boolean hasNext() {
        if (pending == null && !done) {
          pending = DeviceArrayStream.this.next();
          done = pending == null;
        }
        return pending != null;
      }

      @Override
      public DeviceArray next() {
        if (!hasNext()) throw new NoSuchElementException("end of stream");
        DeviceArray out = pending;
        pending = null;
        return out;
      }
    };
  }

  /**
   * A zero-allocation walk over the remaining batches: one reused ArrowDeviceArray
   * whose batch is borrowed until the cursor advances or closes (then it is
   * released). Each advance is a single Java-to-C call. Use it on hot paths;
   * use {@link #next()} to keep batches.
   */
  public Cursor cursor() {
    return new Cursor(this);
  }

  /** See {@link #cursor()}. Not thread-safe; close it before closing the stream. */
  public static final class Cursor implements AutoCloseable {
    private final DeviceArrayStream stream;
    /** A slot: the reused struct, and what the last advance reported after it. */
    private final NativeHandle batch;
    private final ByteBuffer slab;
    private final int info;
    private long length = -1;

    private Cursor(DeviceArrayStream stream) {
      this.stream = stream;
      long slot = Handoff.newSlot();
      long address;
      try {
        this.slab = Slab.chunk(slot);
        address = Slab.address(slot);
      } catch (RuntimeException | Error e) {
        throw new IllegalStateException("ferry: slot " + slot + " unreachable", e);
      }
      this.info = Slab.offset(slot) + Handoff.SLOT_INFO_OFFSET;
      this.batch = new NativeHandle(this, address, a -> Handoff.closeSlot(a, 0),
          "DeviceArrayStream.Cursor");
    }

    /** Releases the current batch and moves to the next; false at the end. One JNI
     *  call, which also reports length, counts and buffer addresses. */
    public boolean advance() {
      length = Handoff.cursorAdvance(stream.address(), batch.checkedAddress());
      return length >= 0;
    }

    /** Length of the current batch (-1 before the first advance and at the end). */
    public long length() {
      return length;
    }

    /** The current batch's ArrowDeviceArray (borrowed until the next advance). */
    public long address() {
      return batch.checkedAddress();
    }

    /** Buffer {@code i} of the current batch's top-level array. */
    public long bufferAddress(int i) {
      long a = address();
      if (length < 0) throw new IllegalStateException("the cursor holds no batch");
      long n = slab.getLong(info + 8 * Handoff.N_BUFFERS);
      if (i < 0 || i >= n) throw new IndexOutOfBoundsException("buffer " + i + " of " + n);
      if (i < Handoff.INLINE_BUFFERS) return slab.getLong(info + 8 * (Handoff.BUFFER0 + i));
      return FerryNative.ferry_array_buffer(a, i);
    }

    /** The current batch's device type (valid while it holds a batch). */
    public int deviceType() {
      if (length < 0) throw new IllegalStateException("the cursor holds no batch");
      return (int) slab.getLong(info + 8 * Handoff.DEVICE_TYPE);
    }

    /** Releases the current batch. */
    @Override
    public void close() {
      batch.close();
      Reference.reachabilityFence(this);
    }
  }

  /** Moves the stream out to a consumer's released struct; this object is closed. */
  public void exportTo(long streamOut) {
    FerryNative.ferry_array_stream_move(address(), streamOut);
    handle.close();
  }

  /** Releases the stream (exactly once). Batches already taken stay valid. */
  @Override
  public void close() {
    handle.close();
    Reference.reachabilityFence(this);
  }
}
