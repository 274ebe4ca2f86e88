package io.github.ferryarrow.ferry.bench;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import io.github.ferryarrow.ferry.ArrayExporter;
import io.github.ferryarrow.ferry.DeviceArray;
import io.github.ferryarrow.ferry.DeviceArrayStream;
import io.github.ferryarrow.ferry.DeviceType;
import io.github.ferryarrow.ferry.ExportedBatch;
import io.github.ferryarrow.ferry.FieldSpec;
import io.github.ferryarrow.ferry.StreamExporter;
import io.github.ferryarrow.ferry.Validation;
import io.github.ferryarrow.ferry.jni.FerryNative;
import io.github.ferryarrow.ferry.jni.Testing;

/**
 * Java <-> C handoff benchmark (plain harness, not a test).
 *
 * <p>Every case is measured next to its own floor, in the same JVM, interleaved
 * repetition by repetition (floor, case, floor, case, ...) so that load from other
 * processes hits both alike. A floor makes exactly the boundary crossings of its
 * case (the same number of Java-to-C JNI calls, and C-to-Java calls where the case
 * needs one) and the same C handoff (a static C producer, a 128-byte move, reading
 * length and one value, release), and nothing else: no heap struct, no ferry
 * bookkeeping, no Java object. So "case / floor" is what the binding adds on top
 * of the physics of JNI. Target: median ratio <= 1.5.
 *
 * <p>Also measured, for reference: the raw primitives (one Java->C call, one
 * C->Java call, one C->C handoff).
 *
 * <p>Usage: {@code HandoffBench [case ...]} (default: all); prints
 * {@code RESULT java <case> <median ns>} and a table line per case. bench.sh runs
 * each case in a fresh JVM.
 */
public final class HandoffBench {
  private static final int REPS = Integer.getInteger("ferry.bench.reps", 9);
  private static final long N = Long.getLong("ferry.bench.n", 200_000);
  private static final double TARGET = 1.5;

  private interface Loop {
    /** Runs n operations and returns the elapsed ns. */
    long run(long n);
  }

  private static long sink;

  private static Loop timed(java.util.function.LongConsumer body) {
    return n -> {
      long start = System.nanoTime();
      body.accept(n);
      return System.nanoTime() - start;
    };
  }

  /** One case and its floor; floorText says what the floor contains. */
  private record Pair(String floorText, Loop floor, Loop body) {}

  private static double[] single(Loop loop) {
    loop.run(N);
    loop.run(N);
    double[] perOp = new double[REPS];
    for (int r = 0; r < REPS; r++) perOp[r] = (double) loop.run(N) / N;
    Arrays.sort(perOp);
    return perOp;
  }

  private static void primitive(String name, String text, Loop loop) {
    double[] t = single(loop);
    System.out.printf("RESULT java %s %.1f%n", name, t[t.length / 2]);
    System.out.printf("TABLE %-30s %8.1f %8.1f   (primitive: %s)%n", name, t[0], t[t.length / 2],
        text);
  }

  private static void pair(String name, Pair p) {
    p.floor.run(N);
    p.body.run(N);
    p.floor.run(N);
    p.body.run(N);
    double[] floor = new double[REPS];
    double[] body = new double[REPS];
    double[] ratio = new double[REPS];
    for (int r = 0; r < REPS; r++) {
      floor[r] = (double) p.floor.run(N) / N;
      body[r] = (double) p.body.run(N) / N;
      ratio[r] = body[r] / floor[r];
    }
    Arrays.sort(floor);
    Arrays.sort(body);
    Arrays.sort(ratio);
    double med = body[REPS / 2];
    double floorMed = floor[REPS / 2];
    double r = ratio[REPS / 2];
    System.out.printf("RESULT java %s %.1f%n", name, med);
    System.out.printf("RESULT java floor_%s %.1f%n", name, floorMed);
    System.out.printf("TABLE %-30s %8.1f %8.1f   floor %6.1f %6.1f   ratio %5.2f  %s  [floor: %s]%n",
        name, body[0], med, floor[0], floorMed, r, r <= TARGET ? "PASS" : "MISS", p.floorText);
  }

  private static final Map<String, Runnable> CASES = new LinkedHashMap<>();

  public static void main(String[] args) throws IOException {
    System.out.println("LOAD " + loadAverage() + " (start)");
    CASES.put("primitives", HandoffBench::primitives);
    CASES.put("c_to_java_stream_cursor", () -> withCStreams(HandoffBench::streamCursor));
    CASES.put("c_to_java_stream_deviceArray",
        () -> withCStreams(HandoffBench::streamDeviceArray));
    CASES.put("c_to_java_array_deviceArray", HandoffBench::arrayDeviceArray);
    CASES.put("c_to_java_array_trusted", HandoffBench::arrayTrusted);
    CASES.put("java_to_c_array", HandoffBench::javaToCArray);
    CASES.put("java_to_c_stream", HandoffBench::javaToCStream);
    String[] names = args.length > 0 ? args : CASES.keySet().toArray(new String[0]);
    for (String name : names) {
      Runnable c = CASES.get(name);
      if (c == null) throw new IllegalArgumentException("unknown case " + name + "; cases: "
          + CASES.keySet());
      c.run();
    }
    System.out.println("LOAD " + loadAverage() + " (end)");
    System.out.println("(sink " + (sink == 42 ? "!" : ".") + ")");
  }

  private static String loadAverage() throws IOException {
    Path p = Path.of("/proc/loadavg");
    return Files.exists(p) ? Files.readString(p).trim() : "n/a";
  }

  private static void primitives() {
    primitive("floor_jni_java_to_c", "static native long -> long", timed(n -> {
      long acc = 0;
      for (long i = 0; i < n; i++) acc = Testing.noop(acc);
      sink += acc;
    }));
    primitive("floor_jni_c_to_java", "CallStaticLongMethod from a C loop",
        Testing::callJavaLoop);
    primitive("floor_c_to_c_handoff", "fill, 128-B move, read, release; C loop",
        Testing::cToCLoop);
  }

  /** What a stream case runs with: two endless static C streams, one for Java
   *  to import, one for the floor, and an array the floor takes batches into. */
  private interface CStreams {
    void run(long cStream, long floorStream, long target);
  }

  /** Runs {@code body} with fresh C streams, freed after it. */
  private static void withCStreams(CStreams body) {
    long cStream = FerryNative.ferry_array_stream_new();
    long floorStream = FerryNative.ferry_array_stream_new();
    long target = FerryNative.ferry_device_array_new();
    Testing.cStaticStream(cStream, 1024);
    Testing.cStaticStream(floorStream, 1024);
    try {
      body.run(cStream, floorStream, target);
    } finally {
      FerryNative.ferry_device_array_free(target);
      FerryNative.ferry_array_stream_free(floorStream);
      FerryNative.ferry_array_stream_free(cStream);
    }
  }

  /** C produces (endless static stream), Java walks it with the cursor. */
  private static void streamCursor(long cStream, long floorStream, long target) {
    // The lean path: a trusted producer (no validation), batches borrowed.
    try (DeviceArrayStream s = DeviceArrayStream.importFrom(cStream, Validation.NONE);
        DeviceArrayStream.Cursor cursor = s.cursor()) {
      pair("c_to_java_stream_cursor", new Pair(
          "1 JNI call/batch: release previous + get_next + read", timed(n -> {
            long acc = 0;
            for (long i = 0; i < n; i++) acc += Testing.floorStreamAdvance(floorStream, target);
            sink += acc;
          }), timed(n -> {
            long acc = 0;
            for (long i = 0; i < n; i++) {
              cursor.advance();
              acc += cursor.length() + cursor.bufferAddress(1);
            }
            sink += acc;
          })));
    }
  }

  /** C produces, Java takes each batch as an owned DeviceArray and closes it. */
  private static void streamDeviceArray(long cStream, long floorStream, long target) {
    try (DeviceArrayStream s = DeviceArrayStream.importFrom(cStream)) {
      pair("c_to_java_stream_deviceArray", new Pair(
          "2 JNI calls/batch: get_next + read; release", timed(n -> {
            long acc = 0;
            for (long i = 0; i < n; i++) {
              acc += Testing.floorStreamTake(floorStream, target);
              Testing.floorRelease(0, target);
            }
            sink += acc;
          }), timed(n -> {
            long acc = 0;
            for (long i = 0; i < n; i++) {
              try (DeviceArray batch = s.next()) {
                acc += batch.length() + batch.bufferAddress(1);
              }
            }
            sink += acc;
          })));
    }
  }

  /** C produces one array (+ schema) per iteration, Java imports (validated),
   *  reads, closes: the everyday path. */
  private static void arrayDeviceArray() {
    arrayImport("c_to_java_array_deviceArray", Validation.DEFAULT);
  }

  /** The same, trusting the producer (no validation). */
  private static void arrayTrusted() {
    arrayImport("c_to_java_array_trusted", Validation.NONE);
  }

  private static void arrayImport(String name, Validation validation) {
    long schema = FerryNative.ferry_schema_new();
    long array = FerryNative.ferry_device_array_new();
    long schemaTarget = FerryNative.ferry_schema_new();
    long arrayTarget = FerryNative.ferry_device_array_new();
    pair(name, new Pair(
        "3 JNI calls: C producer fills; move schema+array + read; release both", timed(n -> {
          long acc = 0;
          for (long i = 0; i < n; i++) {
            Testing.cProduceStatic(schema, array, 1024);
            acc += Testing.floorTake(schema, array, schemaTarget, arrayTarget);
            Testing.floorRelease(schemaTarget, arrayTarget);
          }
          sink += acc;
        }), timed(n -> {
          long acc = 0;
          for (long i = 0; i < n; i++) {
            Testing.cProduceStatic(schema, array, 1024);
            try (DeviceArray a = DeviceArray.importFrom(array, schema, validation)) {
              acc += a.length() + a.bufferAddress(1);
            }
          }
          sink += acc;
        })));
    FerryNative.ferry_schema_free(schema);
    FerryNative.ferry_device_array_free(array);
    FerryNative.ferry_schema_free(schemaTarget);
    FerryNative.ferry_device_array_free(arrayTarget);
  }

  /** Java exports a direct ByteBuffer (a new ExportedBatch each time), C consumes
   *  (move, read, release). */
  private static void javaToCArray() {
    long array = FerryNative.ferry_device_array_new();
    ByteBuffer values = ByteBuffer.allocateDirect(4096).order(ByteOrder.nativeOrder());
    pair("java_to_c_array", new Pair(
        "2 JNI calls: C producer fills; C consumer moves, reads, releases", timed(n -> {
          long acc = 0;
          for (long i = 0; i < n; i++) {
            Testing.floorFill(array);
            acc += Testing.cConsumeArray(array);
          }
          sink += acc;
        }), timed(n -> {
          long acc = 0;
          for (long i = 0; i < n; i++) {
            ArrayExporter.exportDeviceArray(ExportedBatch.of(1024).buffers(null, values), array);
            acc += Testing.cConsumeArray(array);
          }
          sink += acc;
        })));
    ArrayExporter.drainReleases();
    FerryNative.ferry_device_array_free(array);
  }

  /** A C consumer pulls a Java stream (Iterator of ExportedBatch) in a C loop. */
  private static void javaToCStream() {
    ByteBuffer values = ByteBuffer.allocateDirect(4096).order(ByteOrder.nativeOrder());
    long javaStream = FerryNative.ferry_array_stream_new();
    long floorStream = FerryNative.ferry_array_stream_new();
    StreamExporter.export(FieldSpec.of("i", "bench"), DeviceType.CPU, new Endless(values),
        javaStream);
    if (Testing.floorJavaStream(floorStream) != 0) throw new IllegalStateException("floor");
    pair("java_to_c_stream", new Pair(
        "per batch: C get_next calls Java (CallStaticVoidMethod), which makes 1 JNI call "
            + "to fill; C reads, releases",
        n -> Testing.cPullLoop(floorStream, n), n -> Testing.cPullLoop(javaStream, n)));
    FerryNative.ferry_array_stream_free(javaStream);
    FerryNative.ferry_array_stream_free(floorStream);
    ArrayExporter.drainReleases();
  }

  /** An endless Java stream of one int32 batch over the same direct buffer. */
  private static final class Endless implements Iterator<ExportedBatch> {
    private final ByteBuffer values;

    Endless(ByteBuffer values) {
      this.values = values;
    }

    @Override
    public boolean hasNext() {
      return true;
    }

    @Override
    public ExportedBatch next() {
      return ExportedBatch.of(1024).buffers(null, values);
    }
  }
}
