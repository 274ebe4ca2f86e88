package io.github.ferryarrow.ferry;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import io.github.ferryarrow.ferry.jni.FerryNative;

/**
 * Java's view of the off-heap slots that hold imported arrays (ferry_jni_slab.c):
 * one native-order direct ByteBuffer per chunk of slots, made once, and the
 * chunk's base address. A slot id is {@code chunk << FERRY_JNI_SLOT_ID_BITS | index}
 * (the geometry is ferry_jni.h's, read through the generated constants).
 */
final class Slab {
  private static final int INDEX_BITS = FerryNative.FERRY_JNI_SLOT_ID_BITS;
  private static volatile ByteBuffer[] chunks = new ByteBuffer[16];
  private static volatile long[] bases = new long[16];

  private Slab() {}

  /** The ByteBuffer over the chunk holding slot {@code id}. */
  static ByteBuffer chunk(long id) {
    int c = (int) (id >>> INDEX_BITS);
    ByteBuffer[] cs = chunks;
    ByteBuffer b;
    if (c < cs.length && (b = cs[c]) != null) return b;
    return load(c);
  }

  /** The byte offset of slot {@code id} in its chunk. */
  static int offset(long id) {
    return (int) (id & (FerryNative.FERRY_JNI_SLOTS_PER_CHUNK - 1))
        * FerryNative.FERRY_JNI_SLOT_SIZE;
  }

  /** The native address of slot {@code id} (its ArrowDeviceArray). */
  static long address(long id) {
    chunk(id); // makes sure bases[c] is known
    return bases[(int) (id >>> INDEX_BITS)] + offset(id);
  }

  /** Buffer {@code i}'s address (0 when absent) of the array in a slot: the first
   *  buffers from its info block at byte {@code info} of {@code slab}, the rest from
   *  the array at {@code array}. IndexOutOfBoundsException past its buffer count. */
  static long bufferAddress(ByteBuffer slab, int info, long array, int i) {
    long n = slab.getLong(info + 8 * FerryNative.FERRY_JNI_INFO_N_BUFFERS);
    if (i < 0 || i >= n) throw new IndexOutOfBoundsException("buffer " + i + " of " + n);
    if (i < FerryNative.FERRY_JNI_INFO_INLINE_BUFFERS) {
      return slab.getLong(info + 8 * (FerryNative.FERRY_JNI_INFO_BUFFER0 + i));
    }
    return FerryNative.ferry_array_buffer(array, i);
  }

  private static synchronized ByteBuffer load(int c) {
    ByteBuffer[] cs = chunks;
    if (c < cs.length && cs[c] != null) return cs[c];
    ByteBuffer b = FerryNative.ferry_jni_slab_chunk(c);
    if (b == null) throw new IllegalStateException("ferry: slab chunk " + c + " does not exist");
    b = b.order(ByteOrder.nativeOrder());
    int n = Math.max(cs.length, Integer.highestOneBit(c) * 2);
    long[] newBases = Arrays.copyOf(bases, n);
    ByteBuffer[] newChunks = Arrays.copyOf(cs, n);
    newBases[c] = FerryNative.ferry_jni_direct_address(b);
    newChunks[c] = b;
    bases = newBases;   // published before chunks: a reader that finds the chunk
    chunks = newChunks; // finds its base too
    return b;
  }
}
