package io.github.ferryarrow.ferry.jni;

/**
 * C-side helpers for tests and the benchmark (src/test/c/ferry_jni_testing.c, built
 * by CMake into libferry_jni_testing.so next to libferry_jni.so): a consumer on a
 * pthread the JVM has never seen, static C producers and consumers, and raw JNI
 * call floors. Test code: in neither the jar nor libferry_jni.so.
 */
public final class Testing {
  static {
    NativeLoader.load();
    System.loadLibrary("ferry_jni_testing");
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

  // ---- the peer benchmark's C side (src/test/c/ferry_jni_peer.c) ----

  /** Fills a static int32 array of 1024 values with 103 nulls (an ArrowDeviceArray
   *  on the CPU, whose first member is the plain ArrowArray) and its schema;
   *  either address may be 0. */
  public static native void peerArray(long schemaOut, long arrayOut);

  /** A C consumer: reads an ArrowArray (or a device array's first member) and
   *  its schema, releases both; -1 when either is released. */
  public static native long peerConsume(long array, long schema);

  /** Fills a stream of n record batches struct&lt;v: int32&gt; (the array above):
   *  an ArrowDeviceArrayStream when device, else a plain ArrowArrayStream. */
  public static native int peerStream(long streamOut, boolean device, long n);

  /** A C consumer of a whole stream (schema, every batch, release); the number of
   *  batches, -1 on an error. */
  public static native long peerPull(long stream, boolean device);

  /** Raw Java-to-C JNI call: returns x + 1. */
  public static native long noop(long x);

  /** n raw C-to-Java calls (CallStaticLongMethod); elapsed ns. */
  public static native long callJavaLoop(long n);

  /** Releases the device array on a new pthread the JVM has never seen (the struct
   *  memory stays the caller's); 0, or -1 when no thread could start. */
  public static native int releaseOnForeignThread(long deviceArray);

  /** Releases every device array at the given addresses, back to back, in C. */
  public static native void releaseAll(long[] deviceArrays);

  // ---- per-case floors of the benchmark: the same crossings and C handoff as
  // ---- the case, nothing else (see ferry_jni_testing.c)

  /** Moves the producer's structs into the consumer's and reads them. */
  public static native long floorTake(long schemaSource, long arraySource, long schemaTarget,
      long arrayTarget);

  /** Releases the consumer's array (and schema when not 0). */
  public static native void floorRelease(long schema, long array);

  /** get_next into {@code target} and read. */
  public static native long floorStreamTake(long stream, long target);

  /** Releases the batch in {@code target} if live, then get_next into it and read. */
  public static native long floorStreamAdvance(long stream, long target);

  /** A static producer filling {@code out} (1024 int32). */
  public static native void floorFill(long out);

  /** A stream whose get_next calls {@link #floorGetNext} in Java; 0 or -1. */
  public static native int floorJavaStream(long streamOut);

  /** One Java->C crossing doing one static C->C handoff. */
  public static native long floorJniC2c();

  /** Called from C by the floorJavaStream's get_next. */
  static void floorGetNext(long out) {
    floorFill(out);
  }

  // ---- hostile producers (tests/hostile, through src/test/c/ferry_jni_hostile.c)

  /** Number of hostile array cases in the catalogue. */
  public static native int hostileCaseCount();

  /** "name\037kind\037flags\037where\037needle" of case k (see ferry_hostile.h). */
  public static native String hostileCase(int k);

  /** Fills the released structs with the case called name; 0 or an errno. */
  public static native int hostileArray(String name, long schemaOut, long arrayOut);

  /** Number of hostile stream cases. */
  public static native int hostileStreamCount();

  /** "name\037at\037level\037code\037needle" of stream case k (see ferry_hostile.h). */
  public static native String hostileStreamCase(int k);

  /** Fills the released stream with the stream case called name; 0 or an errno. */
  public static native int hostileStream(String name, long streamOut);

  /** Hostile nodes and streams made and not released. */
  public static native long hostileLive();

  /** Releases of hostile nodes that were released already. */
  public static native long hostileReleasedAgain();

  /** Frees every released hostile node (when none is live) and clears the counters. */
  public static native void hostileReset();
}
