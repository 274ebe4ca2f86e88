package io.github.ferryarrow.ferry;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
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

  static FieldSpec int32Field(String name) {
    return FieldSpec.of("i", name);
  }
}
