package io.github.ferryarrow.ferry;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.io.TempDir;

/** Hostile producers through the public import paths (issue 15): see HostileCases. */
class HostileTest {
  @TestFactory
  Stream<DynamicTest> everyHostileArrayIsRefusedOrReadSafely() {
    return HostileCases.cases().stream().map(c -> DynamicTest.dynamicTest(c.name(), () -> {
      try (BufferAllocator allocator = new RootAllocator()) {
        HostileCases.arrayCase(c, allocator);
      }
    }));
  }

  @Test
  void aLengthWhoseByteSizeOverflowsIsRefused() {
    HostileCases.hugeArray();
  }

  @Test
  void hostileStreamsComeBackAsErrors() {
    try (BufferAllocator allocator = new RootAllocator()) {
      HostileCases.streams(allocator);
    }
  }

  @Test
  void nothingReachesStderr(@TempDir Path tmp) throws Exception {
    String javaBin = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    Path err = tmp.resolve("stderr.txt");
    ProcessBuilder builder = new ProcessBuilder(List.of(javaBin,
        "-Djava.library.path=" + System.getProperty("java.library.path"),
        "-Djava.io.tmpdir=" + tmp, "--add-opens=java.base/java.nio=ALL-UNNAMED", "-Xcheck:jni",
        // Arrow Java logs through SLF4J, which warns once when no logger is bound.
        "-Dslf4j.internal.verbosity=ERROR",
        "-cp", System.getProperty("java.class.path") + File.pathSeparator
            + Path.of("target", "test-classes").toAbsolutePath() + File.pathSeparator
            + Path.of("target", "classes").toAbsolutePath(),
        "io.github.ferryarrow.ferry.HostileProbe"))
        .redirectError(err.toFile());
    Process p = builder.start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertTrue(p.waitFor(120, TimeUnit.SECONDS), "the child JVM finished");
    String stderr = Files.readString(err);
    assertEquals(0, p.exitValue(), out + stderr);
    assertTrue(out.contains("hostile cases: all passed"), out);
    assertEquals("", stderr, "nothing on stderr");
  }
}
