package io.github.ferryarrow.ferry;

import java.lang.ref.WeakReference;
import java.nio.ByteBuffer;
import io.github.ferryarrow.ferry.jni.FerryNative;

/**
 * The native addresses of direct ByteBuffers, cached per buffer object: a direct
 * buffer never moves, and producers export the same (pooled) buffers again and
 * again, so the JNI lookup (GetDirectBufferAddress, ~10 ns plus the crossing) is
 * paid once per buffer instead of once per export. A small direct-mapped table of
 * weak entries: it never keeps a buffer alive, and a collision only costs a lookup.
 * Entries are immutable, so a racing reader sees a whole entry or none.
 */
final class DirectAddresses {
  private static final int SIZE = 256;
  private static final Entry[] TABLE = new Entry[SIZE];

  private static final class Entry extends WeakReference<ByteBuffer> {
    final long address;

    Entry(ByteBuffer buffer, long address) {
      super(buffer);
      this.address = address;
    }
  }

  private DirectAddresses() {}

  /** Buffer {@code i}'s address: 0 for null; IllegalArgumentException naming the
   *  buffer when it is not direct. */
  static long of(ByteBuffer buffer, int i) {
    if (buffer == null) return 0;
    int slot = System.identityHashCode(buffer) & (SIZE - 1);
    Entry e = TABLE[slot];
    if (e != null && e.get() == buffer) return e.address;
    if (!buffer.isDirect()) {
      throw new IllegalArgumentException("buffer " + i + " is a heap ByteBuffer; only direct "
          + "ByteBuffers can be exported without copying");
    }
    long address = FerryNative.ferry_jni_direct_address(buffer);
    TABLE[slot] = new Entry(buffer, address);
    return address;
  }
}
