package org.ferry.jni;

import java.nio.ByteBuffer;

/**
 * The one-call hot paths of the binding (ferry_jni_handoff.c, ferry_jni_slab.c):
 * each import, stream pull, cursor step, close and export is a single JNI
 * crossing. An imported array lives in a 256-byte off-heap <i>slot</i>: the
 * ArrowDeviceArray, then 16 longs of "info" (layout below) that the same call
 * wrote and that Java reads through a direct ByteBuffer over the slot's chunk
 * ({@link #slabChunk}), without further native calls. Also the release queue of
 * Java exports. Internal to the binding.
 */
public final class Handoff {
  static {
    NativeLoader.load();
  }

  /** Slot geometry (mirrored by ferry_jni_slab.h). */
  public static final int SLOT_SIZE = 256;
  public static final int SLOT_INFO_OFFSET = 128;
  public static final int SLOTS_PER_CHUNK = 1024;

  /** Info slots, in longs (mirrored by the FERRY_JNI_INFO_* enum of ferry_jni_handoff.c). */
  public static final int LENGTH = 0;
  public static final int NULL_COUNT = 1;
  public static final int OFFSET = 2;
  public static final int N_BUFFERS = 3;
  public static final int N_CHILDREN = 4;
  public static final int DEVICE_TYPE = 5;
  public static final int DEVICE_ID = 6;
  public static final int SYNC_EVENT = 7;
  public static final int DICTIONARY = 8;
  /** The heap ArrowSchema made by {@link #importArray} (0 otherwise). */
  public static final int SCHEMA = 9;
  /** Buffer i's address is at BUFFER0 + i for i < INLINE_BUFFERS. */
  public static final int BUFFER0 = 10;
  public static final int INLINE_BUFFERS = 5;
  /** Length of a long[] info ({@link #arrayInfo}). */
  public static final int INFO_SIZE = BUFFER0 + INLINE_BUFFERS;
  /** Most buffers {@link #exportArray} takes. */
  public static final int MAX_EXPORT_BUFFERS = 16;

  private Handoff() {}

  /** Moves the producer's schema (into a heap struct) and device array (into a new
   *  slot), leaving both released; returns the slot id, whose info[SCHEMA] is the
   *  heap schema. IllegalArgumentException for 0 addresses, FerryException(EINVAL)
   *  for released sources (nothing moved then). */
  public static native long importArray(long schemaSource, long deviceArraySource);

  /** Moves a live device array into a new slot (source left released); slot id. */
  public static native long adopt(long deviceArray);

  /** get_next into a new slot: its id, or -1 at the end of the stream;
   *  FerryException with the producer's code and message. */
  public static native long streamNext(long stream);

  /** The cursor's step: releases the batch in the slot at {@code slotAddress} (if
   *  live), pulls the next one into it and fills its info; returns its length, or
   *  -1 at the end. */
  public static native long cursorAdvance(long stream, long slotAddress);

  /** A new empty slot; its id. */
  public static native long newSlot();

  /** Releases the array of the slot at {@code slotAddress} and frees the slot, and
   *  frees {@code schema} when not 0. */
  public static native void closeSlot(long slotAddress, long schema);

  /** A direct ByteBuffer over slab chunk {@code chunk}, or null when it does not exist. */
  public static native ByteBuffer slabChunk(int chunk);

  /** Fills a long[INFO_SIZE] for an ArrowArray (a child or dictionary; device 0). */
  public static native void arrayInfo(long array, long[] info);

  /**
   * Fills the released ArrowDeviceArray {@code out} with a flat array of
   * {@code nBuffers} buffers at {@code a0..a2} (nBuffers <= 3) or {@code addresses}
   * (0 = absent); release hook {@code hook(handle)}. On failure {@code out} stays
   * released. Returns one released handle popped off the release queue (0: none;
   * negative: {@code handle | Long.MIN_VALUE}, more are queued).
   */
  public static native long exportArray(long out, long length, long nullCount, long offset,
      int nBuffers, long a0, long a1, long a2, long[] addresses, int deviceType, long deviceId,
      long hook, long handle);

  /** The address of a direct ByteBuffer; 0 for a heap buffer. */
  public static native long directAddress(ByteBuffer buffer);

  /** Pops up to min(64, out.length) released handles into {@code out}; returns how many. */
  public static native int drainReleases(long[] out);

  /** Blocks until the release queue holds a handle (the drainer thread's wait). */
  public static native void awaitReleases();

  /** Address of the FerryReleaseHook that queues its handle. */
  public static native long queuedReleaseHookAddress();

  /** {capacity, handles queued so far, releases that fell back to the Java upcall}. */
  public static native long[] releaseQueueStats();
}
