package org.ferry;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.LongConsumer;
import org.ferry.jni.FerryNative;
import org.ferry.jni.Handoff;

/**
 * A heap ArrowSchema shared by a stream and the batches it yielded (each needs it
 * to size its buffers), freed when the last holder lets go. Holders are
 * DeviceArray and DeviceArrayStream, whose own close/Cleaner paths call
 * {@link #release()} exactly once, so this needs no Cleaner of its own.
 *
 * <p>It is also the free action of the DeviceArrays that hold it
 * ({@link #accept(long)}): releasing a batch and, when it was the last holder,
 * freeing the schema is one JNI call, and no lambda is allocated per batch.
 */
final class SchemaOwner implements LongConsumer {
  private final long address;
  private final AtomicInteger holders = new AtomicInteger(1);

  /** Takes ownership of a heap schema (from ferry_schema_new) with one holder. */
  SchemaOwner(long address) {
    this.address = address;
  }

  long address() {
    return address;
  }

  /** True when nobody else holds the schema, so it may be moved out. */
  boolean isSoleHolder() {
    return holders.get() == 1;
  }

  SchemaOwner retain() {
    holders.incrementAndGet();
    return this;
  }

  void release() {
    if (holders.decrementAndGet() == 0) FerryNative.ferry_schema_free(address);
  }

  /** Frees a heap device array of a holder and drops that holder's hold, in one call. */
  @Override
  public void accept(long deviceArray) {
    Handoff.closeArray(deviceArray, holders.decrementAndGet() == 0 ? address : 0);
  }
}
