package io.github.ferryarrow.ferry;

import io.github.ferryarrow.ferry.jni.FerryNative;
import io.github.ferryarrow.ferry.jni.FerryNativeConstants;

/**
 * A failed ferry call: an errno code (EINVAL, ENOMEM, ENOTSUP, ENODEV, EIO, ...)
 * and the message ferry or the producer gave. Thrown by every binding method
 * whose C function returned an error; thrown by Java producers to report a
 * failure with a specific code across the C boundary.
 *
 * <p>The code constants are the native layer's (ferry_jni.h, where the C compiler
 * checks them against this platform's errno values).
 */
public class FerryException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** Invalid argument or malformed data (what validation findings are). */
  public static final int EINVAL = FerryNativeConstants.FERRY_JNI_EINVAL;
  /** Input/output error: a producer or driver failure without a better code. */
  public static final int EIO = FerryNativeConstants.FERRY_JNI_EIO;
  /** Out of memory. */
  public static final int ENOMEM = FerryNativeConstants.FERRY_JNI_ENOMEM;
  /** No such device (a backend or device that is not there). */
  public static final int ENODEV = FerryNativeConstants.FERRY_JNI_ENODEV;
  /** Not supported. */
  public static final int ENOTSUP = FerryNativeConstants.FERRY_JNI_ENOTSUP;
  /** Bad address: a buffer shorter than the device knows it to be. */
  public static final int EFAULT = FerryNativeConstants.FERRY_JNI_EFAULT;
  /** Out of range. */
  public static final int ERANGE = FerryNativeConstants.FERRY_JNI_ERANGE;

  private final int code;

  /** An exception with errno {@code code} and {@code message}. */
  public FerryException(int code, String message) {
    super(message);
    this.code = code;
  }

  /** The errno code. Called by name from ferry_jni_support.c. */
  public int code() {
    return code;
  }

  /** The symbolic name of the code ("EINVAL"). */
  public String codeName() {
    return FerryNative.ferry_errno_name(code);
  }

  @Override
  public String toString() {
    return "FerryException(" + codeName() + "): " + getMessage();
  }
}
