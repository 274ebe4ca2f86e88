package io.github.ferryarrow.ferry;

import java.util.Iterator;
import java.util.NoSuchElementException;
import java.util.function.Supplier;

/**
 * The iterator of a stream's remaining batches over its blocking {@code next()}, which
 * answers null at the end. Each batch it returns is the caller's to close. One thread
 * per iterator.
 */
final class BatchIterator implements Iterator<DeviceArray> {
  private final Supplier<DeviceArray> source;
  private DeviceArray pending;
  private boolean done;

  /** Borrows {@code source} (a stream's next) for as long as the iterator is used. */
  BatchIterator(Supplier<DeviceArray> source) {
    this.source = source;
  }

  @Override
  public boolean hasNext() {
    if (pending == null && !done) {
      pending = source.get();
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
}
