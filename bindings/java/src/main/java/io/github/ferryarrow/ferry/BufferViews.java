package io.github.ferryarrow.ferry;

import io.github.ferryarrow.ferry.jni.FerryNative;
import java.nio.ByteBuffer;

/**
 * Read-only direct ByteBuffers over native memory, made once per (address, size).
 * The JVM can only make such a buffer in native code (JNI's NewDirectByteBuffer
 * runs a Java constructor from C, about 100 ns, longer than the rest of a
 * handoff), while producers hand out the same memory again and again (pools,
 * arenas, a stream's reused buffers). A view holds nothing but its address and
 * size, so one made for an earlier array at the same place is exactly the view a
 * new one would be; callers get duplicates, whose position and limit are their
 * own. A small direct-mapped table of immutable entries: a racing reader sees a
 * whole entry or none, a collision costs one new view.
 */
final class BufferViews {
  private static final int SIZE = 256;
  private static final Entry[] TABLE = new Entry[SIZE];
  /** Views made (tests). */
  private static final java.util.concurrent.atomic.AtomicLong MADE =
      new java.util.concurrent.atomic.AtomicLong();

  private record Entry(long address, long size, ByteBuffer view) {}

  private BufferViews() {}

  /** A read-only view of {@code size} bytes at {@code address} (0 < size <= 2^31 - 1). */
  static ByteBuffer of(long address, long size) {
    int slot = (int) ((address >>> 4) ^ (address >>> 16) ^ size) & (SIZE - 1);
    Entry e = TABLE[slot];
    if (e != null && e.address == address && e.size == size) return e.view;
    ByteBuffer view = FerryNative.ferry_jni_new_direct_buffer(address, size).asReadOnlyBuffer();
    TABLE[slot] = new Entry(address, size, view);
    MADE.incrementAndGet();
    return view;
  }

  /** Views made so far (tests). */
  static long made() {
    return MADE.get();
  }
}
