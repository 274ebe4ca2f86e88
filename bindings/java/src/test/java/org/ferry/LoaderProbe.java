package org.ferry;

import org.ferry.jni.FerryNative;
import org.ferry.jni.NativeLoader;

/** Run in a child JVM by LoaderTest: prints where libferry_jni.so came from. */
public final class LoaderProbe {
  private LoaderProbe() {}

  public static void main(String[] args) {
    String version = FerryNative.ferry_version();
    System.out.println("loaded-from=" + NativeLoader.loadedFrom());
    System.out.println("version=" + version);
  }
}
