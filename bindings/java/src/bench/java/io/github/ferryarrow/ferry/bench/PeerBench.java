package io.github.ferryarrow.ferry.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.function.LongSupplier;
import java.util.function.LongUnaryOperator;
import io.github.ferryarrow.ferry.ArrayExporter;
import io.github.ferryarrow.ferry.DeviceArray;
import io.github.ferryarrow.ferry.DeviceArrayStream;
import io.github.ferryarrow.ferry.DeviceType;
import io.github.ferryarrow.ferry.ExportedBatch;
import io.github.ferryarrow.ferry.FieldSpec;
import io.github.ferryarrow.ferry.StreamExporter;
import io.github.ferryarrow.ferry.arrow.ArrowJava;
import io.github.ferryarrow.ferry.arrow.BatchReader;
import io.github.ferryarrow.ferry.jni.FerryNative;
import io.github.ferryarrow.ferry.jni.Testing;
import org.apache.arrow.c.ArrowArray;
import org.apache.arrow.c.ArrowArrayStream;
import org.apache.arrow.c.ArrowSchema;
import org.apache.arrow.c.Data;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * ferry against Arrow Java's own C Data Interface ({@code org.apache.arrow.c.Data}),
 * in one JVM (plain harness, not a test).
 *
 * <p>Each row times a ferry path and the Arrow Java path a user would take
 * instead, over the same C producer or consumer (src/test/c/ferry_jni_peer.c):
 * int32 x 1024 with 103 nulls, and streams of 1,000 record batches
 * struct&lt;v: int32&gt; of that array. Rounds are interleaved (ferry, peer, peer,
 * ferry, ...: the order alternates, so a drift of load hits both alike); each round
 * gives a ratio ferry / peer, and the row reports the median ratio with its spread
 * (quartiles) and the median ns per array or per batch of each side. Two clocks:
 * the thread's CPU time (it leaves out the time the thread waited for a core,
 * most of the wall time's noise on a shared machine, but also the garbage
 * collector's pauses, which run on the VM thread) and wall time (everything,
 * noise included).
 * Every row says whether both sides do the same work (validation, objects built).
 * Prints "PEER" lines; bench.sh keeps them in docs/bench/java-peers.txt.
 *
 * <p>Options: -Dferry.peer.rounds=21, -Dferry.peer.arrays=5000 (per round),
 * -Dferry.peer.streams=2 (streams of 1,000 batches per round); row names as
 * arguments run only those.
 */
public final class PeerBench {
  private static final int ROUNDS = Integer.getInteger("ferry.peer.rounds", 21);
  private static final long ARRAYS = Long.getLong("ferry.peer.arrays", 5_000);
  private static final long STREAMS = Long.getLong("ferry.peer.streams", 2);
  private static final int BATCHES = 1000;
  private static long sink;

  private static BufferAllocator allocator;
  private static IntVector source;

  /** The Arrow Java side of rows: what it does, its operation and how many of them
   *  a round runs, with the units (arrays or batches) per operation. */
  private record Peer(String text, long ops, long unitsPerOp, LongUnaryOperator op) {}

  /** One row: what ferry does, whether the work is the same as its peer's. */
  private record Row(String name, String ferryText, String work, Peer peer,
      LongUnaryOperator ferry) {}

  public static void main(String[] args) throws IOException {
    allocator = new RootAllocator();
    List<Row> rows = rows();
    System.out.println("PEER load " + loadAverage() + " (start; a shared machine)");
    System.out.printf("PEER %-22s %-16s %-16s %8s %8s  %s%n", "", "ferry/peer, CPU", "ferry/peer, wall",
        "ferry ns", "peer ns", "");
    System.out.printf("PEER %-22s %-16s %-16s %8s %8s  %s%n", "row", "median p25-p75", "median p25-p75",
        "CPU", "CPU", "work");
    for (Row row : rows) {
      if (args.length > 0 && !Arrays.asList(args).contains(row.name)) continue;
      run(row);
    }
    System.out.println("PEER load " + loadAverage() + " (end)");
    System.out.println("(sink " + (sink == 42 ? "!" : ".") + ")");
    source.close();
    allocator.close();
  }

  private static final java.lang.management.ThreadMXBean THREADS =
      java.lang.management.ManagementFactory.getThreadMXBean();

  /** Runs {@code op} once: {wall ns, this thread's CPU ns} per unit. */
  private static void measure(LongUnaryOperator op, long ops, double units, double[] wall,
      double[] cpu, int r) {
    long c0 = THREADS.getCurrentThreadCpuTime();
    long w = op.applyAsLong(ops);
    long c1 = THREADS.getCurrentThreadCpuTime();
    wall[r] = w / units;
    cpu[r] = (c1 - c0) / units;
  }

  private static void run(Row row) {
    for (int w = 0; w < 3; w++) { // warm-up: JIT both paths
      row.ferry.applyAsLong(row.peer.ops);
      row.peer.op.applyAsLong(row.peer.ops);
    }
    double[] f = new double[ROUNDS];
    double[] p = new double[ROUNDS];
    double[] fc = new double[ROUNDS];
    double[] pc = new double[ROUNDS];
    double[] ratio = new double[ROUNDS];
    double[] cpuRatio = new double[ROUNDS];
    long ops = row.peer.ops;
    double units = (double) ops * row.peer.unitsPerOp;
    for (int r = 0; r < ROUNDS; r++) {
      if (r % 2 == 0) {
        measure(row.ferry, ops, units, f, fc, r);
        measure(row.peer.op, ops, units, p, pc, r);
      } else {
        measure(row.peer.op, ops, units, p, pc, r);
        measure(row.ferry, ops, units, f, fc, r);
      }
      ratio[r] = f[r] / p[r];
      cpuRatio[r] = fc[r] / pc[r];
    }
    for (double[] a : new double[][] {f, p, fc, pc, ratio, cpuRatio}) Arrays.sort(a);
    int n = ROUNDS;
    System.out.printf("PEER %-22s %5.2f %4.2f-%4.2f  %5.2f %4.2f-%4.2f %8.0f %8.0f  %s%n",
        row.name, cpuRatio[n / 2], cpuRatio[n / 4], cpuRatio[(3 * n) / 4], ratio[n / 2],
        ratio[n / 4], ratio[(3 * n) / 4], fc[n / 2], pc[n / 2], row.work);
    System.out.printf("PEER %-22s   ferry: %s%n", "", row.ferryText);
    System.out.printf("PEER %-22s   peer:  %s%n", "", row.peer.text);
  }

  private static String loadAverage() throws IOException {
    Path p = Path.of("/proc/loadavg");
    return Files.exists(p) ? Files.readString(p).trim() : "n/a";
  }

  /** An operation of a row: runs {@code once} n times, adds what it read to the sink,
   *  and returns the wall ns. */
  private static LongUnaryOperator loop(LongSupplier once) {
    return n -> {
      long start = System.nanoTime();
      long acc = 0;
      for (long i = 0; i < n; i++) acc += once.getAsLong();
      sink += acc;
      return System.nanoTime() - start;
    };
  }

  /** An IntVector of 1024 values (7 * i), every tenth null: 103 nulls. */
  private static IntVector vector(String name) {
    IntVector v = new IntVector(name, allocator);
    fill(v);
    return v;
  }

  private static void fill(IntVector v) {
    v.allocateNew(1024);
    for (int i = 0; i < 1024; i++) {
      if (i % 10 == 0) v.setNull(i);
      else v.set(i, i * 7);
    }
    v.setValueCount(1024);
  }

  private static long read(FieldVector v) {
    IntVector iv = (IntVector) v;
    return iv.getValueCount() + iv.getNullCount() + (iv.isNull(1) ? 0 : iv.get(1));
  }

  private static List<Row> rows() {
    List<Row> rows = new ArrayList<>();
    long array = FerryNative.ferry_device_array_new();
    long schema = FerryNative.ferry_schema_new();
    // Arrow Java's views of the same structs (the device array's first member is
    // the ArrowArray), made per call as a user handed an address does: importVector
    // closes them.

    // ---- C -> Java, one array ----
    Peer importPeer = new Peer("Data.importVector, read, close", ARRAYS, 1, loop(() -> {
      Testing.peerArray(schema, array);
      try (FieldVector v = Data.importVector(allocator, ArrowArray.wrap(array),
          ArrowSchema.wrap(schema), null)) {
        return read(v);
      }
    }));
    rows.add(new Row("import_to_vector",
        "DeviceArray.importFrom (DEFAULT) + ArrowJava.toVector, read, close",
        "not the same: ferry validates (DEFAULT at the import, FULL before Arrow Java), Arrow Java does not; both build a FieldVector",
        importPeer,
        loop(() -> {
          Testing.peerArray(schema, array);
          DeviceArray a = DeviceArray.importFrom(array, schema);
          try (FieldVector v = ArrowJava.toVector(a, allocator)) {
            return read(v);
          }
        })));
    rows.add(new Row("import_deviceArray",
        "DeviceArray.importFrom (DEFAULT), read length, null count, buffer address, close",
        "not the same: ferry validates and builds a DeviceArray, Arrow Java a FieldVector",
        importPeer,
        loop(() -> {
          Testing.peerArray(schema, array);
          try (DeviceArray a = DeviceArray.importFrom(array, schema)) {
            return a.length() + a.nullCount() + a.bufferAddress(1);
          }
        })));

    // ---- Java -> C, one array ----
    source = vector("peer");
    long validity = source.getValidityBufferAddress();
    long values = source.getDataBufferAddress();
    Peer exportPeer = new Peer("Data.exportVector; C reads, releases", ARRAYS, 1, loop(() -> {
      Data.exportVector(allocator, source, null, ArrowArray.wrap(array), ArrowSchema.wrap(schema));
      return Testing.peerConsume(array, schema);
    }));
    rows.add(new Row("export_from_vector",
        "ArrowJava.fromVector + DeviceArray.exportTo; C reads, releases",
        "not the same: ferry also validates (DEFAULT); both export the buffers (retained) and schema",
        exportPeer,
        loop(() -> {
          ArrowJava.fromVector(source, allocator).exportTo(array, schema);
          return Testing.peerConsume(array, schema);
        })));
    FieldSpec int32 = FieldSpec.of("i", "peer");
    rows.add(new Row("export_arrayExporter",
        "ArrayExporter.export(FieldSpec, ExportedBatch over the vector's addresses)",
        "not the same: ferry holds no reference on the vector's buffers (the caller keeps them)",
        exportPeer,
        loop(() -> {
          ArrayExporter.export(int32, ExportedBatch.of(1024).nullCount(103)
              .bufferAddresses(validity, values), array, schema);
          return Testing.peerConsume(array, schema);
        })));

    // ---- streams of 1,000 record batches ----
    long dstream = FerryNative.ferry_array_stream_new();
    long stream = FerryNative.ferry_array_stream_new(); // as large as an ArrowArrayStream
    Peer streamImportPeer = new Peer(
        "C ArrowArrayStream -> Data.importArrayStream, loadNextBatch x 1000", STREAMS, BATCHES,
        loop(() -> {
          check(Testing.peerStream(stream, false, BATCHES));
          return drain(Data.importArrayStream(allocator, ArrowArrayStream.wrap(stream)));
        }));
    rows.add(new Row("stream_to_reader",
        "C ArrowDeviceArrayStream -> DeviceArrayStream.importFrom + ArrowJava.toReader, "
            + "loadNextBatch x 1000",
        "not the same: ferry validates each batch (DEFAULT, then FULL before Arrow Java); both load a VectorSchemaRoot per batch",
        streamImportPeer,
        loop(() -> {
          check(Testing.peerStream(dstream, true, BATCHES));
          return drain(ArrowJava.toReader(DeviceArrayStream.importFrom(dstream), allocator));
        })));
    rows.add(new Row("stream_import_ferry",
        "C ArrowDeviceArrayStream -> DeviceArrayStream (DEFAULT, prepared schema), "
            + "next() x 1000, read child 0, close",
        "not the same: ferry validates each batch and builds a DeviceArray, "
            + "Arrow Java a VectorSchemaRoot",
        streamImportPeer,
        loop(() -> {
          check(Testing.peerStream(dstream, true, BATCHES));
          long acc = 0;
          try (DeviceArrayStream s = DeviceArrayStream.importFrom(dstream)) {
            for (DeviceArray b : s) {
              try (b) {
                acc += b.length() + b.child(0).getInt(1);
              }
            }
          }
          return acc;
        })));
    Peer streamExportPeer = new Peer("ArrowReader -> Data.exportArrayStream; C pulls 1000",
        STREAMS, BATCHES, loop(() -> {
          Data.exportArrayStream(allocator, repeat(BATCHES), ArrowArrayStream.wrap(stream));
          return checkPull(Testing.peerPull(stream, false));
        }));
    rows.add(new Row("stream_from_reader",
        "ArrowReader -> ArrowJava.fromReader + DeviceArrayStream.exportTo; C pulls 1000",
        "same: both export each batch's buffers (retained until the C release) and one schema",
        streamExportPeer,
        loop(() -> {
          ArrowJava.fromReader(repeat(BATCHES), allocator).exportTo(dstream);
          return checkPull(Testing.peerPull(dstream, true));
        })));
    FieldSpec batchSpec = FieldSpec.of("+s", "").withChildren(FieldSpec.of("i", "v"));
    rows.add(new Row("stream_export_ferry",
        "StreamExporter.export(Iterator<ExportedBatch> over the vector's addresses); C pulls 1000",
        "not the same: ferry holds no reference on the buffers (the caller keeps them)",
        streamExportPeer,
        loop(() -> {
          StreamExporter.export(batchSpec, DeviceType.CPU, new Iterator<ExportedBatch>() {
            int left = BATCHES;

            @Override
            public boolean hasNext() {
              return left > 0;
            }

            @Override
            public ExportedBatch next() {
              left--;
              return ExportedBatch.of(1024).bufferAddresses(0).children(
                  ExportedBatch.of(1024).nullCount(103).bufferAddresses(validity, values));
            }
          }, dstream);
          return checkPull(Testing.peerPull(dstream, true));
        })));
    return rows;
  }

  private static void check(int rc) {
    if (rc != 0) throw new IllegalStateException("peerStream failed");
  }

  private static long checkPull(long batches) {
    if (batches != BATCHES) throw new IllegalStateException("pulled " + batches + " batches");
    return batches;
  }

  /** Loads every batch of {@code r}, reads it, and closes {@code r}. */
  private static long drain(ArrowReader reader) {
    long acc = 0;
    try (ArrowReader r = reader) {
      while (r.loadNextBatch()) {
        VectorSchemaRoot root = r.getVectorSchemaRoot();
        acc += root.getRowCount() + read(root.getVector(0));
      }
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
    return acc;
  }

  /** An ArrowReader of n record batches struct<v: int32>, each the same 1024 values
   *  (filled once: loading a batch costs nothing, on both sides). */
  private static ArrowReader repeat(int n) {
    Schema schema = new Schema(List.of(new Field("v", FieldType.nullable(new ArrowType.Int(32, true)),
        null)));
    return new BatchReader(allocator, schema, (root, index) -> {
      if (index >= n) return false;
      if (index == 0) fill((IntVector) root.getVector(0));
      root.setRowCount(1024);
      return true;
    });
  }
}
