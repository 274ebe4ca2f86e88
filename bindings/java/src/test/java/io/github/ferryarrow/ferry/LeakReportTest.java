package io.github.ferryarrow.ferry;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** FERRY_LEAK_REPORT=1: the core's report at exit names the Java imports never
 *  closed (issue 20, item 15), one line each, and nothing once they are closed. */
class LeakReportTest {
  /** Runs LeakProbe in a fresh JVM; returns its stderr. */
  private static String probe(String mode, String report) throws IOException,
      InterruptedException {
    String javaBin = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    String classpath = Path.of("target", "classes").toAbsolutePath() + java.io.File.pathSeparator
        + Path.of("target", "test-classes").toAbsolutePath();
    List<String> command = List.of(javaBin,
        "-Djava.io.tmpdir=" + System.getProperty("java.io.tmpdir"),
        "-cp", classpath, "io.github.ferryarrow.ferry.LeakProbe", mode);
    ProcessBuilder builder = new ProcessBuilder(command);
    builder.environment().remove("LD_LIBRARY_PATH");
    if (report == null) {
      builder.environment().remove("FERRY_LEAK_REPORT");
    } else {
      builder.environment().put("FERRY_LEAK_REPORT", report);
    }
    builder.redirectOutput(ProcessBuilder.Redirect.DISCARD);
    Process p = builder.start();
    String err = new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
    assertTrue(p.waitFor(60, TimeUnit.SECONDS), "child JVM finished");
    assertEquals(0, p.exitValue(), err);
    return err;
  }

  private static List<String> javaLines(String err) {
    return err.lines().filter(l -> l.startsWith("ferry: leak: java: ")).toList();
  }

  @Test
  void importsNeverClosedAreNamedAtExit() throws Exception {
    String err = probe("leak", "1");
    List<String> lines = javaLines(err);
    assertEquals(2, lines.size(), err);
    assertTrue(lines.stream().anyMatch(l -> l.contains("DeviceArray (format 'i', length 5, on cpu)")
        && l.contains("never closed")), err);
    assertTrue(lines.stream().anyMatch(l -> l.contains("DeviceArrayStream (on cpu)")), err);
    assertFalse(err.contains("format 'g'"), "a closed import is not reported: " + err);
  }

  @Test
  void closedImportsLeaveNothingAndNoReportWithoutTheVariable() throws Exception {
    String clean = probe("clean", "1");
    assertEquals(List.of(), javaLines(clean), clean);
    assertTrue(clean.contains("ferry: leak report: nothing live"), clean);
    String off = probe("leak", null);
    assertFalse(off.contains("ferry: leak"), off);
    String zero = probe("leak", "0");
    assertFalse(zero.contains("ferry: leak"), zero);
  }
}
