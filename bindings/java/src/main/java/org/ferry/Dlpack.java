package org.ferry;

import org.ferry.jni.DlpackNative;

/**
 * DLPack tensors held by address. {@link DeviceArray#toDlpack} turns an array
 * into a {@code DLManagedTensorVersioned*} (DLPack 1.x) that Java can hand to any
 * DLPack consumer as a {@code long}; {@link DeviceArray#fromDlpack} takes one in.
 * A tensor that nobody consumed must be deleted once with {@link #delete}.
 */
public final class Dlpack {
  /** DLDataType codes. */
  public static final int CODE_INT = 0;
  public static final int CODE_UINT = 1;
  public static final int CODE_FLOAT = 2;
  /** DLManagedTensorVersioned flags. */
  public static final long FLAG_READ_ONLY = 1;
  public static final long FLAG_IS_COPIED = 2;

  private Dlpack() {}

  /**
   * What a tensor describes. For a tensor whose major version is not 1 only the
   * version is filled (DLPack forbids reading the rest).
   *
   * @param data the data pointer (the first element is at data + byteOffset)
   * @param length the first dimension (ferry's tensors have one)
   * @param stride the first stride in elements, 0 when the tensor is compact
   */
  public record Tensor(int versionMajor, int versionMinor, long flags, long data,
      long byteOffset, int deviceType, int deviceId, int ndim, int code, int bits, int lanes,
      long length, long stride) {}

  /** Reads the DLManagedTensorVersioned at {@code tensor} (borrowed). */
  public static Tensor describe(long tensor) {
    long[] d = new long[DlpackNative.SIZE];
    DlpackNative.describe(tensor, d);
    return new Tensor((int) d[DlpackNative.VERSION_MAJOR], (int) d[DlpackNative.VERSION_MINOR],
        d[DlpackNative.FLAGS], d[DlpackNative.DATA], d[DlpackNative.BYTE_OFFSET],
        (int) d[DlpackNative.DEVICE_TYPE], (int) d[DlpackNative.DEVICE_ID],
        (int) d[DlpackNative.NDIM], (int) d[DlpackNative.CODE], (int) d[DlpackNative.BITS],
        (int) d[DlpackNative.LANES], d[DlpackNative.SHAPE0], d[DlpackNative.STRIDE0]);
  }

  /** Calls the tensor's deleter (takes ownership; call it once, and only for a
   *  tensor nobody else consumed). 0 is ignored. */
  public static void delete(long tensor) {
    if (tensor != 0) DlpackNative.delete(tensor);
  }
}
