package io.github.ferryarrow.ferry;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.ferryarrow.ferry.jni.FerryNative;
import io.github.ferryarrow.ferry.jni.NativeLoader;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** How the binding finds its native libraries (NativeLoader), in this JVM and in
 *  fresh child JVMs that see nothing but the classes and their resources. */
class LoaderTest {
  private static final Path BUILD = Path.of(System.getProperty("ferry.test.build.dir", "../../build"));

  @Test
  void theJarCarriesBothNativeLibraries() {
    for (String name : new String[] {NativeLoader.JNI_LIBRARY, NativeLoader.CORE_LIBRARY}) {
      assertTrue(NativeLoader.class.getResource(NativeLoader.RESOURCE_DIR + name) != null,
          NativeLoader.RESOURCE_DIR + name + " is packaged");
    }
  }

  @Test
  void testsLoadWhatTheJarCarries() {
    assertEquals("jar:" + NativeLoader.RESOURCE_DIR, NativeLoader.loadedFrom());
  }

  @Test
  void theExtractedLibrariesAreUsedAndNothingIsLeftBehind(@TempDir Path tmp) throws Exception {
    String out = probe(tmp, List.of());
    assertTrue(out.contains("loaded-from=jar:" + NativeLoader.RESOURCE_DIR), out);
    assertTrue(out.contains("version=" + FerryNative.ferry_version()), out);
    List<String> core = mapped(out, "libferry.so");
    assertEquals(1, core.size(), "one libferry in the process: " + out);
    assertTrue(core.get(0).startsWith(tmp.toString()) && core.get(0).endsWith("(deleted)"),
        "the jar's copy, extracted under java.io.tmpdir and already removed: " + out);
    assertEquals(List.of(), leftovers(tmp), "the JVM left its extraction folder behind");
  }

  @Test
  void aLibferryTheProcessAlreadyLoadedIsReusedBySoname(@TempDir Path tmp) throws Exception {
    Path installed = BUILD.resolve("lib").resolve(NativeLoader.CORE_LIBRARY).toRealPath();
    String out = probe(tmp, List.of(installed.toString()));
    List<String> core = mapped(out, "libferry.so");
    assertEquals(List.of(installed.toString()), core,
        "the dynamic linker kept the libferry.so.0 the process had: " + out);
    assertEquals(List.of(), leftovers(tmp));
  }

  @Test
  void aPropertyNamesAnInstalledLibrary(@TempDir Path tmp) throws Exception {
    Path jni = BUILD.resolve("java").resolve(NativeLoader.JNI_LIBRARY).toRealPath();
    String out = probe(tmp, List.of(), "-D" + NativeLoader.PROPERTY + "=" + jni);
    assertTrue(out.contains("loaded-from=" + jni), out);
    assertTrue(mapped(out, "libferry_jni.so").contains(jni.toString()), out);
    assertEquals(List.of(), leftovers(tmp), "nothing was extracted");
  }

  @Test
  void aWrongPropertyIsAClearError(@TempDir Path tmp) throws Exception {
    Path missing = tmp.resolve("no-such-libferry_jni.so");
    String out = probe(tmp, List.of(), 1, "-D" + NativeLoader.PROPERTY + "=" + missing);
    assertTrue(out.contains("UnsatisfiedLinkError") && out.contains(NativeLoader.PROPERTY)
        && out.contains(missing.toString()), out);
  }

  private static String probe(Path tmp, List<String> args, String... jvmOptions)
      throws IOException, InterruptedException {
    return probe(tmp, args, 0, jvmOptions);
  }

  /** Runs LoaderProbe in a fresh JVM whose java.io.tmpdir is {@code tmp}. */
  private static String probe(Path tmp, List<String> args, int expectedExit,
      String... jvmOptions) throws IOException, InterruptedException {
    String javaBin = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    String classpath = Path.of("target", "classes").toAbsolutePath() + java.io.File.pathSeparator
        + Path.of("target", "test-classes").toAbsolutePath();
    List<String> command = new ArrayList<>(List.of(javaBin, "-Djava.io.tmpdir=" + tmp));
    command.addAll(List.of(jvmOptions));
    command.addAll(List.of("-cp", classpath, "io.github.ferryarrow.ferry.LoaderProbe"));
    command.addAll(args);
    ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true);
    builder.environment().remove("LD_LIBRARY_PATH");
    Process p = builder.start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertTrue(p.waitFor(60, TimeUnit.SECONDS), "child JVM finished");
    assertEquals(expectedExit, p.exitValue(), out);
    if (expectedExit != 0) assertNotEquals("", out);
    return out;
  }

  private static List<String> mapped(String out, String library) {
    return out.lines().filter(l -> l.startsWith("mapped=") && l.contains("/" + library))
        .map(l -> l.substring("mapped=".length())).collect(Collectors.toList());
  }

  private static List<Path> leftovers(Path tmp) throws IOException {
    try (Stream<Path> s = Files.list(tmp)) {
      return s.collect(Collectors.toList());
    }
  }
}
