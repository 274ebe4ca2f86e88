package org.ferry;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import org.ferry.jni.Handoff;
import org.ferry.jni.Support;

/**
 * Java's view of the off-heap slots that hold imported arrays (ferry_jni_slab.c):
 * one native-order direct ByteBuffer per chunk of 1024 slots, made once, and the
 * chunk's base address. A slot id is {@code chunk * 1024 + index}.
 */
final class Slab {
  private static final int INDEX_BITS = 10;
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
    return (int) (id & (Handoff.SLOTS_PER_CHUNK - 1)) * Handoff.SLOT_SIZE;
  }

  /** The native address of slot {@code id} (its ArrowDeviceArray). */
  static long address(long id) {
    chunk(id); // makes sure bases[c] is known
    return bases[(int) (id >>> INDEX_BITS)] + offset(id);
  }

  private static synchronized ByteBuffer load(int c) {
    ByteBuffer[] cs = chunks;
    if (c < cs.length && cs[c] != null) return cs[c];
    ByteBuffer b = Handoff.slabChunk(c);
    if (b == null) throw new IllegalStateException("ferry: slab chunk " + c + " does not exist");
    b = b.order(ByteOrder.nativeOrder());
    int n = Math.max(cs.length, Integer.highestOneBit(c) * 2);
    long[] newBases = Arrays.copyOf(bases, n);
    ByteBuffer[] newChunks = Arrays.copyOf(cs, n);
    newBases[c] = Support.directBufferAddress(b);
    newChunks[c] = b;
    bases = newBases;   // published before chunks: a reader that finds the chunk
    chunks = newChunks; // finds its base too
    return b;
  }
}
