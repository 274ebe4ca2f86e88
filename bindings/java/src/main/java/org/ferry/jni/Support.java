package org.ferry.jni;

import java.nio.ByteBuffer;

/**
 * Hand-written natives of libferry_jni.so (ferry_jni_support.c) that SWIG cannot
 * generate: addresses of the C trampolines that call back into Java, and direct
 * buffer helpers. Internal to the binding.
 */
public final class Support {
  static {
    NativeLoader.load();
  }

  private Support() {}

  /** Address of the FerryReleaseHook that calls org.ferry.Upcalls.release(handle). */
  public static native long releaseHookAddress();

  /** Address of the FerryStreamGetSchemaFn trampoline (Upcalls.getSchema). */
  public static native long getSchemaAddress();

  /** Address of the FerryStreamGetNextFn trampoline (Upcalls.getNext). */
  public static native long getNextAddress();

  /** A direct buffer over {@code size} bytes at {@code address}, no copy; the caller
   *  keeps the memory alive while the buffer is used. */
  public static native ByteBuffer newDirectBuffer(long address, long size);

  /** The address of a direct buffer, 0 for a heap buffer. */
  public static native long directBufferAddress(ByteBuffer buffer);

  /** Copies {@code length} bytes at {@code address} into a new array. */
  public static native byte[] copyBytes(long address, int length);

  /** {threads attached by callbacks, threads detached at their exit}, process-wide. */
  public static native long[] attachCounts();
}
