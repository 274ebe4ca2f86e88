package io.github.ferryarrow.ferry;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.function.LongConsumer;
import io.github.ferryarrow.ferry.jni.FerryNative;

/**
 * A heap ArrowSchema shared by a stream and the batches it yielded (each needs it
 * to size its buffers), or owned by one imported array; freed when the last
 * holder lets go. Holders are DeviceArray and DeviceArrayStream, whose own
 * close/safety-net paths drop their hold exactly once, so this needs no Cleaner.
 *
 * <p>Counting, and why it looks like this: a stream hands out a batch per
 * {@code next()}, and an atomic increment per batch (~7 ns) is a noticeable part
 * of a ~60 ns handoff. A stream serializes its calls (its lock), so it counts the
 * batches it handed out with a plain field, and its own hold is worth
 * {@link #STREAM_HOLD}: while the stream is open the count cannot reach zero
 * whatever batches close; when it closes it converts its hold into the number of
 * batches it handed out ({@link #endStreamHold}), so the count is then exactly
 * the batches still open, and whoever brings it to zero frees the schema. Each
 * batch close is one atomic decrement, as before.
 *
 * <p>It is also the free action of the DeviceArrays that hold it
 * ({@link #accept(long)}): releasing a batch and, when it was the last holder,
 * freeing the schema is one JNI call, and no lambda is allocated per batch.
 */
final class SchemaOwner implements LongConsumer {
  /** A stream's hold: larger than any number of batches a stream can hand out. */
  static final long STREAM_HOLD = 1L << 62;

  private static final VarHandle HOLDS;

  static {
    try {
      HOLDS = MethodHandles.lookup().findVarHandle(SchemaOwner.class, "holds", long.class);
    } catch (ReflectiveOperationException e) {
      throw new ExceptionInInitializerError(e);
    }
  }

  private final long address;
  /** Open holds; changed atomically through HOLDS (an AtomicLong would cost an
   *  extra object and a fenced store per import). */
  private volatile long holds;

  /** Takes ownership of a heap schema (from ferry_schema_new) with one holder. */
  SchemaOwner(long address) {
    this(address, 1);
  }

  private SchemaOwner(long address, long holds) {
    this.address = address;
    HOLDS.set(this, holds); // plain: the owner is published after construction
  }

  /** A schema held by a stream (see the class comment). */
  static SchemaOwner forStream(long address) {
    return new SchemaOwner(address, STREAM_HOLD);
  }

  long address() {
    return address;
  }

  /** True when nobody else holds the schema, so it may be moved out. */
  boolean isSoleHolder() {
    return holds == 1;
  }

  /** Adds a holder (any thread). */
  SchemaOwner retain() {
    HOLDS.getAndAdd(this, 1L);
    return this;
  }

  /** Drops a holder (any thread). */
  void release() {
    if ((long) HOLDS.getAndAdd(this, -1L) == 1) FerryNative.ferry_schema_free(address);
  }

  /** The stream closed after handing out {@code handedOut} batches, each of which
   *  holds the schema until it closes. */
  void endStreamHold(long handedOut) {
    long delta = handedOut - STREAM_HOLD;
    if ((long) HOLDS.getAndAdd(this, delta) + delta == 0) FerryNative.ferry_schema_free(address);
  }

  /** Releases a holder's slot (at {@code slotAddress}) and drops that holder's
   *  hold, freeing the schema when it was the last, in one call. */
  @Override
  public void accept(long slotAddress) {
    FerryNative.ferry_jni_close_slot(slotAddress, (long) HOLDS.getAndAdd(this, -1L) == 1 ? address : 0);
  }
}
