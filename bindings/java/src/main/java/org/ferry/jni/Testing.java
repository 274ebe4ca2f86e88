package org.ferry.jni;

/**
 * C-side helpers for tests and the benchmark (ferry_jni_testing.c): a consumer on a
 * pthread the JVM has never seen, static C producers and consumers, and raw JNI
 * call floors. Not part of the public API.
 */
public final class Testing {
  static {
    NativeLoader.load();
  }

  private Testing() {}

  /** Pulls the stream at {@code stream} to its end on a new pthread, releasing it.
   *  Returns null or the error message; stats = {rc, batches, total length}. */
  public static native String pullStreamOnForeignThread(long stream, long[] stats);

  /** Fills a static CPU int32 schema + array (values 7 * i); schemaOut may be 0. */
  public static native void cProduceStatic(long schemaOut, long arrayOut, long length);

  /** Fills an endless static C stream of int32 batches. */
  public static native void cStaticStream(long streamOut, long length);

  /** Moves, reads and releases a device array in C; returns length + first value. */
  public static native long cConsumeArray(long deviceArray);

  /** Pulls n batches in C; elapsed ns, -1 on error. */
  public static native long cPullLoop(long stream, long n);

  /** n C-to-C static handoffs; elapsed ns. */
  public static native long cToCLoop(long n);

  /** Raw Java-to-C JNI call: returns x + 1. */
  public static native long noop(long x);

  /** n raw C-to-Java calls (CallStaticLongMethod); elapsed ns. */
  public static native long callJavaLoop(long n);
}
