package org.ferry.jni;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;

/**
 * Loads libferry_jni.so once per class loader: first from {@code java.library.path}
 * ({@code System.loadLibrary("ferry_jni")}), else by extracting
 * {@code /native/linux-x86_64/libferry_jni.so} from the jar to a temporary file.
 * libferry_jni.so links libferry.so dynamically, which the dynamic linker finds
 * through the JNI library's RUNPATH or {@code LD_LIBRARY_PATH}.
 */
public final class NativeLoader {
  /** Resource path of the JNI library inside the jar. */
  public static final String RESOURCE = "/native/linux-x86_64/libferry_jni.so";

  private static boolean loaded;
  private static String loadedFrom = "";

  private NativeLoader() {}

  /** Loads the library if needed and checks that libferry.so speaks the ABI this
   *  binding was generated for; throws UnsatisfiedLinkError when it cannot. */
  public static synchronized void load() {
    if (loaded) return;
    UnsatisfiedLinkError fromPath;
    try {
      System.loadLibrary("ferry_jni");
      loadedFrom = "java.library.path";
      fromPath = null;
    } catch (UnsatisfiedLinkError e) {
      fromPath = e;
    }
    if (fromPath != null) {
      try {
        Path extracted = extract();
        System.load(extracted.toString());
        loadedFrom = extracted.toString();
      } catch (IOException | UnsatisfiedLinkError e) {
        UnsatisfiedLinkError error = new UnsatisfiedLinkError(
            "ferry: cannot load libferry_jni.so from java.library.path ("
                + fromPath.getMessage() + ") nor from the jar resource " + RESOURCE
                + " (" + e.getMessage() + ")");
        error.initCause(e);
        throw error;
      }
    }
    loaded = true;
    // Fails with FerryException(EINVAL) naming both versions on a mismatch.
    FerryNativeJNI.ferry_check_abi_version(FerryNativeConstants.FERRY_ABI_VERSION);
  }

  /** Where the library came from (loading it if needed): "java.library.path" or
   *  the extracted file. */
  public static synchronized String loadedFrom() {
    load();
    return loadedFrom;
  }

  private static Path extract() throws IOException {
    try (InputStream in = NativeLoader.class.getResourceAsStream(RESOURCE)) {
      if (in == null) throw new IOException("resource not in the jar");
      Path dir = Files.createTempDirectory("ferry-jni");
      Path file = dir.resolve("libferry_jni.so");
      Files.copy(in, file, StandardCopyOption.REPLACE_EXISTING);
      file.toFile().deleteOnExit();
      dir.toFile().deleteOnExit();
      return file;
    }
  }
}
