package org.ferry.bench;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import org.ferry.ArrayExporter;
import org.ferry.DeviceArray;
import org.ferry.DeviceArrayStream;
import org.ferry.DeviceType;
import org.ferry.ExportedBatch;
import org.ferry.FieldSpec;
import org.ferry.StreamExporter;
import org.ferry.jni.FerryNative;
import org.ferry.jni.Testing;

/**
 * Java <-> C handoff benchmark (plain harness, not a test). Every case is measured
 * in this process next to the floors it is compared with, also measured here:
 * the raw JNI call in each direction and the C-to-C static handoff. Per case:
 * min and median ns/op over REPS repetitions of N operations after warm-up;
 * ratio = median / floor, target <= 1.5. Prints one "RESULT java CASE NS" line
 * per case (median). Run: bindings/java/bench.sh (see the README).
 */
public final class HandoffBench {
  private static final int REPS = Integer.getInteger("ferry.bench.reps", 7);
  private static final long N = Long.getLong("ferry.bench.n", 200_000);
  private static final double TARGET = 1.5;

  private interface Loop {
    /** Runs n operations and returns the elapsed ns (measured by the case). */
    long run(long n);
  }

  private static long sink;

  private static double[] measure(Loop loop) {
    loop.run(N); // warm-up: JIT, caches
    loop.run(N);
    double[] perOp = new double[REPS];
    for (int r = 0; r < REPS; r++) perOp[r] = (double) loop.run(N) / N;
    Arrays.sort(perOp);
    return perOp;
  }

  private static Loop timed(java.util.function.LongConsumer body) {
    return n -> {
      long start = System.nanoTime();
      body.accept(n);
      return System.nanoTime() - start;
    };
  }

  private static final List<String> TABLE = new ArrayList<>();

  private static double report(String name, double[] perOp, double floor, String floorName) {
    double min = perOp[0];
    double median = perOp[perOp.length / 2];
    System.out.printf("RESULT java %s %.1f%n", name, median);
    if (floor > 0) {
      double ratio = median / floor;
      TABLE.add(String.format("%-34s %8.1f %8.1f   %6.2fx of %-22s %s", name, min, median, ratio,
          floorName, ratio <= TARGET ? "within 1.5x" : "ABOVE 1.5x"));
    } else {
      TABLE.add(String.format("%-34s %8.1f %8.1f   (floor)", name, min, median));
    }
    return median;
  }

  public static void main(String[] args) {
    // ---- floors ----
    double jni = report("floor_jni_java_to_c", measure(timed(n -> {
      long acc = 0;
      for (long i = 0; i < n; i++) acc = Testing.noop(acc);
      sink += acc;
    })), 0, "");
    double upcall = report("floor_jni_c_to_java", measure(Testing::callJavaLoop), 0, "");
    double c2c = report("floor_c_to_c_handoff", measure(Testing::cToCLoop), 0, "");

    // ---- C produces, Java consumes ----
    long cStream = FerryNative.ferry_stream_new();
    Testing.cStaticStream(cStream, 1024);
    try (DeviceArrayStream s = DeviceArrayStream.importFrom(cStream);
        DeviceArrayStream.Cursor cursor = s.cursor()) {
      report("c_to_java_stream_cursor", measure(timed(n -> {
        long acc = 0;
        for (long i = 0; i < n; i++) {
          cursor.advance();
          acc += cursor.length();
        }
        sink += acc;
      })), jni + c2c, "jni + c2c");
      report("c_to_java_stream_deviceArray", measure(timed(n -> {
        long acc = 0;
        for (long i = 0; i < n; i++) {
          try (DeviceArray batch = s.next()) {
            acc += batch.length() + batch.bufferAddress(1);
          }
        }
        sink += acc;
      })), jni + c2c, "jni + c2c");
    } finally {
      FerryNative.ferry_stream_free(cStream);
    }
    long schema = FerryNative.ferry_schema_new();
    long array = FerryNative.ferry_device_array_new();
    report("c_to_java_array_deviceArray", measure(timed(n -> {
      long acc = 0;
      for (long i = 0; i < n; i++) {
        Testing.cProduceStatic(schema, array, 1024);
        try (DeviceArray a = DeviceArray.importFrom(schema, array)) {
          acc += a.length() + a.bufferAddress(1);
        }
      }
      sink += acc;
    })), jni + c2c, "jni + c2c");

    // ---- Java produces, C consumes ----
    ByteBuffer values = ByteBuffer.allocateDirect(4096).order(ByteOrder.nativeOrder());
    report("java_to_c_array", measure(timed(n -> {
      long acc = 0;
      for (long i = 0; i < n; i++) {
        ArrayExporter.exportDeviceArray(ExportedBatch.of(1024).buffers(null, values), array);
        acc += Testing.cConsumeArray(array);
      }
      sink += acc;
    })), jni + upcall + c2c, "jni + upcall + c2c");
    FerryNative.ferry_schema_free(schema);
    FerryNative.ferry_device_array_free(array);

    long javaStream = FerryNative.ferry_stream_new();
    StreamExporter.export(FieldSpec.of("i", "bench"), DeviceType.CPU, new Endless(values),
        javaStream);
    report("java_to_c_stream", measure(n -> Testing.cPullLoop(javaStream, n)),
        2 * upcall + c2c, "2 upcalls + c2c");
    FerryNative.ferry_stream_free(javaStream);

    System.out.printf("%n%-34s %8s %8s   %s%n", "case (ns/op)", "min", "median",
        "median vs floor measured in this run");
    TABLE.forEach(System.out::println);
    System.out.println("(sink " + (sink == 42 ? "!" : ".") + ")");
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
