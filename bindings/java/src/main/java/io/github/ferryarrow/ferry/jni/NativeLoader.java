package io.github.ferryarrow.ferry.jni;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Locale;

/**
 * Loads the binding's native library once per class loader.
 *
 * <p>By default it comes from the jar: {@code /native/linux-x86_64/} holds
 * {@code libferry_jni.so} (RUNPATH {@code $ORIGIN}) and the core
 * {@code libferry.so.0}. Both are extracted side by side into a new private
 * temporary directory, {@code libferry_jni.so} is loaded, and the directory is
 * deleted at once (the loaded code stays mapped), so no JVM run leaves files
 * behind. The dynamic linker resolves {@code libferry.so.0} by its soname: when
 * the process has loaded one already (a host program, another binding), that one
 * is used and the extracted copy is not, so the process keeps one libferry and
 * one device registry.
 *
 * <p>The system property {@value #PROPERTY} names an installed
 * {@code libferry_jni.so} to load instead (its own RUNPATH, or the system's
 * library path, then finds {@code libferry.so.0}).
 */
public final class NativeLoader {
  /** System property: the path of a libferry_jni.so to load instead of the jar's. */
  public static final String PROPERTY = "ferry.native.library";
  /** Folder of the bundled libraries inside the jar. */
  public static final String RESOURCE_DIR = "/native/linux-x86_64/";
  /** The JNI library's file name. */
  public static final String JNI_LIBRARY = "libferry_jni.so";
  /** The core library's file name (its soname). */
  public static final String CORE_LIBRARY = "libferry.so.0";

  private static boolean loaded;
  private static String loadedFrom = "";

  private NativeLoader() {}

  /** Loads the library if needed and checks that libferry.so speaks the ABI this
   *  binding was generated for; throws UnsatisfiedLinkError when it cannot. */
  public static synchronized void load() {
    if (loaded) return;
    String explicit = System.getProperty(PROPERTY);
    if (explicit != null && !explicit.isEmpty()) {
      try {
        System.load(Path.of(explicit).toAbsolutePath().toString());
      } catch (UnsatisfiedLinkError e) {
        throw linkError("cannot load " + explicit + " (named by -D" + PROPERTY + "): "
            + e.getMessage(), e);
      }
      loadedFrom = explicit;
    } else {
      loadedFrom = loadBundled();
    }
    loaded = true;
    // Fails with FerryException(EINVAL) naming both versions on a mismatch.
    FerryNativeJNI.ferry_check_abi_version(FerryNativeConstants.FERRY_ABI_VERSION);
  }

  /** Where the library came from (loading it if needed): the path named by the
   *  property, or "jar:" and the resource folder. */
  public static synchronized String loadedFrom() {
    load();
    return loadedFrom;
  }

  private static String loadBundled() {
    String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
    String arch = System.getProperty("os.arch", "");
    if (!os.startsWith("linux") || !(arch.equals("amd64") || arch.equals("x86_64"))) {
      throw linkError("the ferry jar bundles native libraries for linux-x86_64 only, this is "
          + os + "/" + arch + "; install ferry and point -D" + PROPERTY
          + " at its libferry_jni.so", null);
    }
    Path dir = null;
    try {
      dir = Files.createTempDirectory("ferry-jni");
      extract(CORE_LIBRARY, dir);
      Path jni = extract(JNI_LIBRARY, dir);
      System.load(jni.toString());
      return "jar:" + RESOURCE_DIR;
    } catch (IOException | UnsatisfiedLinkError e) {
      throw linkError("cannot load the jar's " + RESOURCE_DIR + JNI_LIBRARY + ": "
          + e.getMessage() + " (or point -D" + PROPERTY + " at an installed libferry_jni.so)",
          e);
    } finally {
      deleteQuietly(dir);
    }
  }

  private static Path extract(String name, Path dir) throws IOException {
    try (InputStream in = NativeLoader.class.getResourceAsStream(RESOURCE_DIR + name)) {
      if (in == null) throw new IOException(RESOURCE_DIR + name + " is not in the jar");
      Path file = dir.resolve(name);
      Files.copy(in, file, StandardCopyOption.REPLACE_EXISTING);
      return file;
    }
  }

  /** Removes the extraction folder and what is in it (loaded code stays mapped). */
  private static void deleteQuietly(Path dir) {
    if (dir == null) return;
    for (String name : new String[] {JNI_LIBRARY, CORE_LIBRARY}) {
      try {
        Files.deleteIfExists(dir.resolve(name));
      } catch (IOException e) {
        // Best effort; the folder delete below then fails too and says so.
      }
    }
    try {
      Files.deleteIfExists(dir);
    } catch (IOException e) {
      System.getLogger("io.github.ferryarrow.ferry").log(System.Logger.Level.WARNING,
          "ferry: cannot remove " + dir + ": " + e);
    }
  }

  private static UnsatisfiedLinkError linkError(String message, Throwable cause) {
    UnsatisfiedLinkError error = new UnsatisfiedLinkError("ferry: " + message);
    if (cause != null) error.initCause(cause);
    return error;
  }
}
