package io.github.ferryarrow.ferry.it;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The cross-language matrix with the JVM as the host process: the JVM exists
 * before any plugin, and every plugin (C, Rust, Lua, Java, Go) is loaded with
 * System.load, so Go's runtime starts after the JVM and forwards the signals
 * it does not own to the JVM's handlers (docs/embedding.md). Each handoff is
 * run by the JNI helper with the C host's assertions; this class loads,
 * orders, drives and counts. Prints one line per failure,
 * "FAIL producer->consumer array|stream CASE: message", and ends with
 * "N passed, N failed".
 *
 * <pre>
 * java -Dferry.it.helper=.../libferry_it_jvm_host.so io.github.ferryarrow.ferry.it.JvmHost
 *     --plugin-dir DIR [--plugins c,rust,go,java,lua] [--require LIST]
 *     [--cases FILE]... [--case CASE]... [--arrays-only|--streams-only] [--no-tamper]
 * </pre>
 */
public final class JvmHost {
  private JvmHost() {}

  private static void usage(String why) {
    System.err.println("JvmHost: " + why);
    System.exit(2);
  }

  public static void main(String[] args) {
    System.load(System.getProperty("ferry.it.helper"));
    String pluginDir = null;
    List<String> order = Arrays.asList(NativeHarness.runtimes());
    List<String> wanted = order;
    List<String> required = List.of();
    boolean arrays = true;
    boolean streams = true;
    boolean tamper = true;
    for (int i = 0; i < args.length; i++) {
      String a = args[i];
      String value = i + 1 < args.length ? args[i + 1] : null;
      String problem = null;
      switch (a) {
        case "--plugin-dir": pluginDir = value; i++; break;
        case "--plugins": wanted = Arrays.asList(value.split(",")); i++; break;
        case "--require": required = Arrays.asList(value.split(",")); i++; break;
        case "--cases": problem = NativeHarness.addCaseFile(value); i++; break;
        case "--case": problem = NativeHarness.addCase(value); i++; break;
        case "--arrays-only": streams = false; break;
        case "--streams-only": arrays = false; break;
        case "--no-tamper": tamper = false; break;
        default: usage("unknown argument " + a);
      }
      if (problem != null) usage(problem);
    }
    if (pluginDir == null || NativeHarness.caseCount() == 0) {
      usage("--plugin-dir and at least one case are required");
    }
    long passed = 0;
    long failed = 0;
    List<String> names = new ArrayList<>();
    List<Integer> indexes = new ArrayList<>();
    List<String> skipped = new ArrayList<>();
    for (String name : order) {
      if (!wanted.contains(name)) continue;
      Path path = Paths.get(pluginDir, "libferry_it_" + name + ".so");
      if (!Files.exists(path)) {
        System.out.println("SKIPPED runtime " + name + ": " + path + " not built");
        skipped.add(name);
        continue;
      }
      try {
        System.load(path.toAbsolutePath().toString());
      } catch (UnsatisfiedLinkError e) {
        System.out.println("FAIL load " + name + ": System.load: " + e.getMessage());
        failed++;
        continue;
      }
      int index = NativeHarness.open(name, path.toAbsolutePath().toString());
      if (index < 0) {
        System.out.println("FAIL load " + name + ": " + NativeHarness.problem());
        failed++;
        continue;
      }
      System.out.println("loaded runtime " + name + ": " + path + " (System.load)");
      names.add(name);
      indexes.add(index);
    }
    for (String name : required) {
      if (!names.contains(name)) {
        System.out.println("FAIL required runtime " + name + " is not loaded");
        failed++;
      }
    }
    String setup = NativeHarness.init();
    if (setup != null) {
      System.out.println("FAIL setup: " + setup);
      System.out.println(passed + " passed, " + (failed + 1) + " failed");
      System.exit(1);
    }
    int n = names.size();
    int cases = NativeHarness.caseCount();
    long[][] cellPassed = new long[n][n];
    long[][] cellRun = new long[n][n];
    long start = System.nanoTime();
    for (int p = 0; p < n; p++) {
      for (int c = 0; c < n; c++) {
        for (int kind = 0; kind < 2; kind++) {
          boolean stream = kind == 1;
          if ((stream && !streams) || (!stream && !arrays)) continue;
          for (int k = tamper ? -1 : 0; k < cases; k++) {
            String problem = NativeHarness.run(indexes.get(p), indexes.get(c), k, stream);
            cellRun[p][c]++;
            if (problem == null) {
              passed++;
              cellPassed[p][c]++;
            } else {
              failed++;
              System.out.println("FAIL " + names.get(p) + "->" + names.get(c) + " "
                  + (stream ? "stream " : "array ") + NativeHarness.describeCase(k, stream)
                  + ": " + problem);
            }
          }
        }
      }
    }
    System.out.println();
    System.out.println("producer \\ consumer (passed/run), JVM host");
    StringBuilder header = new StringBuilder(String.format("%-10s", ""));
    for (String name : names) header.append(String.format(" %10s", name));
    System.out.println(header);
    for (int p = 0; p < n; p++) {
      StringBuilder row = new StringBuilder(String.format("%-10s", names.get(p)));
      for (int c = 0; c < n; c++) row.append(String.format(" %10s", cellPassed[p][c] + "/" + cellRun[p][c]));
      System.out.println(row);
    }
    long[] w = NativeHarness.witnesses();
    System.out.println("witnesses: " + w[0] + " sim arrays/batches still pending at handover (the consumer"
        + " had to wait), " + w[1] + " already complete; " + w[2] + " tamper runs; " + w[3]
        + " structs tracked");
    System.out.printf("%d cases x %d runtimes (%d pairs) in %.1f s%n", cases, n, n * n,
        (System.nanoTime() - start) / 1e9);
    if (!skipped.isEmpty()) {
      System.out.println("SKIPPED runtimes (pairs not run, not counted): " + String.join(" ", skipped));
    }
    System.out.println(passed + " passed, " + failed + " failed");
    System.out.flush();
    System.exit(failed == 0 && passed > 0 ? 0 : 1);
  }
}
