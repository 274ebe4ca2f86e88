package org.ferry.jni;

/**
 * Reads a DLPack tensor and calls its deleter (ferry_jni_dlpack.c); Java holds
 * tensors as addresses. Internal to the binding: see org.ferry.Dlpack.
 */
public final class DlpackNative {
  static {
    NativeLoader.load();
  }

  /** Slots of {@link #describe} (mirrored by ferry_jni_dlpack.c). */
  public static final int VERSION_MAJOR = 0;
  public static final int VERSION_MINOR = 1;
  public static final int FLAGS = 2;
  public static final int DATA = 3;
  public static final int BYTE_OFFSET = 4;
  public static final int DEVICE_TYPE = 5;
  public static final int DEVICE_ID = 6;
  public static final int NDIM = 7;
  public static final int CODE = 8;
  public static final int BITS = 9;
  public static final int LANES = 10;
  public static final int SHAPE0 = 11;
  public static final int STRIDE0 = 12;
  public static final int SIZE = 13;

  private DlpackNative() {}

  /** Fills {@code out} (length >= SIZE) from the DLManagedTensorVersioned at {@code tensor}. */
  public static native void describe(long tensor, long[] out);

  /** Calls the tensor's deleter (nothing when it is NULL). */
  public static native void delete(long tensor);
}
