package org.ferry.jni;

import java.nio.ByteBuffer;

/**
 * The one-call hot paths of the binding (ferry_jni_handoff.c): each import, stream
 * pull, close and export is a single JNI crossing, and what the accessors need is
 * reported in a {@code long[]} ("info", layout below) filled by that same call.
 * Also the release queue of Java exports. Internal to the binding.
 */
public final class Handoff {
  static {
    NativeLoader.load();
  }

  /** Info slots (mirrored by the FERRY_JNI_INFO_* enum of ferry_jni_handoff.c). */
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
  public static final int INLINE_BUFFERS = 6;
  public static final int INFO_SIZE = BUFFER0 + INLINE_BUFFERS;
  /** Most buffers {@link #exportArray} takes. */
  public static final int MAX_EXPORT_BUFFERS = 16;

  private Handoff() {}

  /** Moves the producer's schema and device array (left released) into new heap
   *  structs; returns the heap device array, info[SCHEMA] the heap schema. Throws
   *  IllegalArgumentException for 0 addresses, FerryException(EINVAL) for released
   *  sources (nothing moved then). */
  public static native long importArray(long schemaSource, long deviceArraySource, long[] info);

  /** get_next into a new heap device array: returns it (info filled), or 0 at the
   *  end of the stream; FerryException with the producer's code and message. */
  public static native long streamNext(long stream, long[] info);

  /** The cursor's step: releases the batch in {@code reused} (if live), pulls the
   *  next one into it and fills info; returns its length, or -1 at the end. */
  public static native long cursorAdvance(long stream, long reused, long[] info);

  /** Releases and frees a heap device array, and frees {@code schema} when not 0. */
  public static native void closeArray(long deviceArray, long schema);

  /** Fills info for an ArrowArray (a child or dictionary; device slots 0). */
  public static native void arrayInfo(long array, long[] info);

  /** Fills info for a live ArrowDeviceArray. */
  public static native void deviceArrayInfo(long deviceArray, long[] info);

  /**
   * Fills the released ArrowDeviceArray {@code out} with a flat array over
   * {@code buffers} (direct ByteBuffers; null = absent) or, when that is null,
   * {@code addresses}; release hook {@code hook(handle)}. On failure {@code out}
   * stays released. Returns one released handle popped off the release queue (0:
   * none; negative: {@code handle | Long.MIN_VALUE}, more are queued).
   */
  public static native long exportArray(long out, long length, long nullCount, long offset,
      ByteBuffer[] buffers, long[] addresses, int deviceType, long deviceId, long hook,
      long handle);

  /** Pops up to min(64, out.length) released handles into {@code out}; returns how many. */
  public static native int drainReleases(long[] out);

  /** Blocks until the release queue holds a handle (the drainer thread's wait). */
  public static native void awaitReleases();

  /** Address of the FerryReleaseHook that queues its handle. */
  public static native long queuedReleaseHookAddress();

  /** {capacity, handles queued so far, releases that fell back to the Java upcall}. */
  public static native long[] releaseQueueStats();
}
