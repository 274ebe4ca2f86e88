package io.github.ferryarrow.ferry;

import io.github.ferryarrow.ferry.jni.FerryNative;

/**
 * DLPack tensors held by address. {@link DeviceArray#toDlpack} turns an array
 * into a {@code DLManagedTensorVersioned*} (DLPack 1.x) that Java can hand to any
 * DLPack consumer as a {@code long}; {@link DeviceArray#fromDlpack} takes one in.
 * A tensor that nobody consumed must be deleted once with {@link #delete}.
 */
public final class Dlpack {
  /** DLDataType code of signed integers. */
  public static final int CODE_INT = FerryNative.FERRY_JNI_DLPACK_CODE_INT;
  /** DLDataType code of unsigned integers. */
  public static final int CODE_UINT = FerryNative.FERRY_JNI_DLPACK_CODE_UINT;
  /** DLDataType code of IEEE floats. */
  public static final int CODE_FLOAT = FerryNative.FERRY_JNI_DLPACK_CODE_FLOAT;
  /** DLManagedTensorVersioned flag: the consumer must not write. */
  public static final long FLAG_READ_ONLY = FerryNative.FERRY_JNI_DLPACK_FLAG_READ_ONLY;
  /** DLManagedTensorVersioned flag: the producer copied the data. */
  public static final long FLAG_IS_COPIED = FerryNative.FERRY_JNI_DLPACK_FLAG_IS_COPIED;
  /** The DLPack major version ferry speaks. */
  public static final int MAJOR_VERSION = FerryNative.FERRY_JNI_DLPACK_MAJOR_VERSION;

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
    long[] d = new long[FerryNative.FERRY_JNI_DLPACK_SIZE];
    FerryNative.ferry_jni_dlpack_describe(tensor, d);
    return new Tensor((int) d[FerryNative.FERRY_JNI_DLPACK_VERSION_MAJOR],
        (int) d[FerryNative.FERRY_JNI_DLPACK_VERSION_MINOR], d[FerryNative.FERRY_JNI_DLPACK_FLAGS],
        d[FerryNative.FERRY_JNI_DLPACK_DATA], d[FerryNative.FERRY_JNI_DLPACK_BYTE_OFFSET],
        (int) d[FerryNative.FERRY_JNI_DLPACK_DEVICE_TYPE],
        (int) d[FerryNative.FERRY_JNI_DLPACK_DEVICE_ID], (int) d[FerryNative.FERRY_JNI_DLPACK_NDIM],
        (int) d[FerryNative.FERRY_JNI_DLPACK_CODE], (int) d[FerryNative.FERRY_JNI_DLPACK_BITS],
        (int) d[FerryNative.FERRY_JNI_DLPACK_LANES], d[FerryNative.FERRY_JNI_DLPACK_SHAPE0],
        d[FerryNative.FERRY_JNI_DLPACK_STRIDE0]);
  }

  /** Calls the tensor's deleter (takes ownership; call it once, and only for a
   *  tensor nobody else consumed). 0 is ignored. */
  public static void delete(long tensor) {
    if (tensor != 0) FerryNative.ferry_jni_dlpack_delete(tensor);
  }
}
