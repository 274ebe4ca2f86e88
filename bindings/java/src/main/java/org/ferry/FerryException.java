package org.ferry;

/**
 * A failed ferry call: an errno code (EINVAL, ENOMEM, ENOTSUP, ENODEV, EIO, ...)
 * and the message ferry or the producer gave. Thrown by every binding method
 * whose C function returned an error; thrown by Java producers to report a
 * failure with a specific code across the C boundary.
 */
public class FerryException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** EINVAL, as Linux numbers it. */
  public static final int EINVAL = 22;
  /** EIO, as Linux numbers it. */
  public static final int EIO = 5;
  /** ENOMEM, as Linux numbers it. */
  public static final int ENOMEM = 12;
  /** ENODEV, as Linux numbers it. */
  public static final int ENODEV = 19;
  /** ENOTSUP (EOPNOTSUPP), as Linux numbers it. */
  public static final int ENOTSUP = 95;

  private final int code;

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
    return org.ferry.jni.FerryNative.ferry_errno_name(code);
  }

  @Override
  public String toString() {
    return "FerryException(" + codeName() + "): " + getMessage();
  }
}
