package org.ferry;

import java.util.concurrent.atomic.AtomicInteger;
import org.ferry.jni.FerryNative;

/**
 * A heap ArrowSchema shared by a stream and the batches it yielded (each needs it
 * to size its buffers), freed when the last holder lets go. Holders are
 * DeviceArray and DeviceArrayStream, whose own close/Cleaner paths call
 * {@link #release()} exactly once, so this needs no Cleaner of its own.
 */
final class SchemaOwner {
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
}
