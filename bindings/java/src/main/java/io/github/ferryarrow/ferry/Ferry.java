package io.github.ferryarrow.ferry;

import io.github.ferryarrow.ferry.jni.FerryNative;
import io.github.ferryarrow.ferry.jni.FerryNativeConstants;

/** The library as a whole: versions. */
public final class Ferry {
  private Ferry() {}

  /** The version of the loaded libferry ("0.1.0"). */
  public static String version() {
    return FerryNative.ferry_version();
  }

  /** The ABI version of the loaded libferry (this binding checks it on load). */
  public static int abiVersion() {
    return FerryNative.ferry_abi_version();
  }

  /** The ABI version this binding was generated for. */
  public static int bindingAbiVersion() {
    return FerryNativeConstants.FERRY_ABI_VERSION;
  }
}
