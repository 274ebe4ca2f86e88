package io.github.ferryarrow.ferry;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Iterator;
import java.util.NoSuchElementException;
import java.util.function.IntFunction;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/** Small builders shared by the tests. */
final class TestData {
  private TestData() {}

  /** A direct native-order int32 buffer holding {@code values}. */
  static ByteBuffer int32s(int... values) {
    ByteBuffer b = ByteBuffer.allocateDirect(values.length * 4).order(ByteOrder.nativeOrder());
    for (int v : values) b.putInt(v);
    b.clear();
    return b;
  }

  /** A direct buffer holding {@code bytes}. */
  static ByteBuffer bytes(byte... bytes) {
    ByteBuffer b = ByteBuffer.allocateDirect(bytes.length);
    b.put(bytes).clear();
    return b;
  }

  /** An int32 batch [0, 10, 20, ...) whose release increments {@code released}. */
  static ExportedBatch int32Batch(int length, AtomicInteger released) {
    int[] values = new int[length];
    for (int i = 0; i < length; i++) values[i] = i * 10;
    return ExportedBatch.of(length).buffers(null, int32s(values))
        .onRelease(released::incrementAndGet);
  }

  /** An iterator of {@code count} items: item b is {@code make.apply(b)}, made
   *  when it is asked for. */
  static <T> Iterator<T> generate(int count, IntFunction<T> make) {
    return new Iterator<>() {
      private int b;

      @Override
      public boolean hasNext() {
        return b < count;
      }

      @Override
      public T next() {
        if (b >= count) throw new NoSuchElementException();
        return make.apply(b++);
      }
    };
  }

  /** An iterator that always has a next item: the n-th next() (1-based)
   *  returns {@code make.apply(n)}. */
  static <T> Iterator<T> endless(IntFunction<T> make) {
    return new Iterator<>() {
      private int calls;

      @Override
      public boolean hasNext() {
        return true;
      }

      @Override
      public T next() {
        return make.apply(++calls);
      }
    };
  }

  /** Native streams of one device, created together and destroyed by close(),
   *  after everything the try block it guards has released. */
  static final class DeviceStreams implements AutoCloseable {
    private final Device device;
    private final long[] handles;

    DeviceStreams(Device device, int count) {
      this.device = device;
      handles = new long[count];
      for (int i = 0; i < count; i++) handles[i] = device.createStream();
    }

    long get(int i) {
      return handles[i];
    }

    @Override
    public void close() {
      for (int i = handles.length - 1; i >= 0; i--) device.destroyStream(handles[i]);
    }
  }

  static FieldSpec int32Field(String name) {
    return FieldSpec.of("i", name);
  }

  /** Asks for collections until {@code latch} opens, at most 200 times 50 ms (GC and
   *  the Cleaner are asynchronous); whether it opened. */
  static boolean gcUntil(CountDownLatch latch) throws InterruptedException {
    for (int i = 0; i < 200; i++) {
      System.gc();
      if (latch.await(50, TimeUnit.MILLISECONDS)) return true;
    }
    return false;
  }
}
