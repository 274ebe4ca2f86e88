package org.ferry;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.ferry.jni.FerryNative;
import org.ferry.jni.NativeLoader;
import org.junit.jupiter.api.Test;

class LoaderTest {
  @Test
  void theJarCarriesTheNativeLibrary() {
    assertTrue(NativeLoader.class.getResource(NativeLoader.RESOURCE) != null,
        NativeLoader.RESOURCE + " is packaged");
  }

  @Test
  void testsLoadFromJavaLibraryPath() {
    assertEquals("java.library.path", NativeLoader.loadedFrom());
  }

  @Test
  void withoutJavaLibraryPathTheResourceIsExtracted() throws IOException, InterruptedException {
    String javaBin = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    String classpath = Path.of("target", "classes").toAbsolutePath() + java.io.File.pathSeparator
        + Path.of("target", "test-classes").toAbsolutePath();
    Process p = new ProcessBuilder(List.of(javaBin, "-Djava.library.path=/nonexistent", "-cp",
        classpath, "org.ferry.LoaderProbe")).redirectErrorStream(true).start();
    assertTrue(p.waitFor(60, TimeUnit.SECONDS), "child JVM finished");
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertEquals(0, p.exitValue(), out);
    assertTrue(out.contains("loaded-from=/"), out);
    assertTrue(out.contains("libferry_jni.so"), out);
    assertTrue(out.contains("version=" + FerryNative.ferry_version()), out);
    assertTrue(Files.isDirectory(Path.of("target", "classes")));
  }
}
