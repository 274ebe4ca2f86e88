package io.github.ferryarrow.ferry;

import io.github.ferryarrow.ferry.jni.FerryNative;
import io.github.ferryarrow.ferry.jni.NativeLoader;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Run in a child JVM by LoaderTest: optionally loads a libferry.so.0 first (as a
 * host program would have), uses ferry, then prints where libferry_jni.so came
 * from and every libferry.so file mapped into the process.
 */
public final class LoaderProbe {
  private LoaderProbe() {}

  public static void main(String[] args) throws IOException {
    if (args.length > 0) System.load(args[0]);
    String version = FerryNative.ferry_version();
    System.out.println("loaded-from=" + NativeLoader.loadedFrom());
    System.out.println("version=" + version);
    Files.readAllLines(Path.of("/proc/self/maps")).stream()
        .filter(line -> line.contains("libferry.so") || line.contains("libferry_jni.so"))
        .map(line -> line.substring(line.indexOf('/')))
        .distinct()
        .forEach(path -> System.out.println("mapped=" + path));
  }
}
