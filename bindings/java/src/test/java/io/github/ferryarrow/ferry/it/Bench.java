package io.github.ferryarrow.ferry.it;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Iterator;
import java.util.NoSuchElementException;
import io.github.ferryarrow.ferry.ArrayExporter;
import io.github.ferryarrow.ferry.DeviceArray;
import io.github.ferryarrow.ferry.DeviceArrayStream;
import io.github.ferryarrow.ferry.DeviceType;
import io.github.ferryarrow.ferry.ExportedBatch;
import io.github.ferryarrow.ferry.FerryException;
import io.github.ferryarrow.ferry.FieldSpec;
import io.github.ferryarrow.ferry.HostBuffer;
import io.github.ferryarrow.ferry.StreamExporter;

/**
 * The benchmark entry points of core/harness/ferry_it_bench.h, called by
 * the C shim bindings/java/plugin/ferry_it_java.c (one JNI upcall each), and
 * written the way a Java user of the binding writes them: a cached direct
 * ByteBuffer exported with {@link ArrayExporter#export} (the consumer's release
 * only drops the export's reference to it), {@link StreamExporter} over an
 * {@link Iterator} for a stream; {@link DeviceArray#importFrom} and the stream's
 * Iterator to consume, reading element 0 through {@code buffer(1)}. Each method
 * catches everything and returns an errno code with the message kept for
 * {@link #lastError()}: no exception reaches the shim.
 */
public final class Bench {
  /** The largest length accepted: 1 GiB of int32. */
  private static final long MAX_LENGTH = 1L << 28;
  private static final FieldSpec INT32 = FieldSpec.of("i", "values");
  private static final ThreadLocal<String> LAST_ERROR = ThreadLocal.withInitial(() -> "");

  /** One cached buffer per length; the array is replaced, never mutated. The
   *  memory is kept reachable here, never closed: the process ends first. */
  private record Cached(long length, HostBuffer memory, ByteBuffer values) {}

  private static volatile Cached[] cache = new Cached[0];

  private Bench() {}

  private static ByteBuffer find(long length) {
    for (Cached c : cache) {
      if (c.length() == length) return c.values();
    }
    return null;
  }

  /** The direct buffer of {@code length} int32 values (element 0 holds the length),
   *  allocated on first use. */
  private static ByteBuffer cachedValues(long length) {
    ByteBuffer values = find(length);
    if (values != null) return values;
    if (length < 0 || length > MAX_LENGTH) {
      throw new FerryException(FerryException.EINVAL,
          "length " + length + " is outside 0.." + MAX_LENGTH);
    }
    synchronized (Bench.class) {
      values = find(length);
      if (values != null) return values;
      // ferry-allocated host memory: a 1 GiB buffer needs no direct-buffer
      // allowance (-XX:MaxDirectMemorySize); it lives as long as the process.
      HostBuffer memory = HostBuffer.allocate(4 * Math.max(length, 1));
      values = memory.asByteBuffer().order(ByteOrder.nativeOrder());
      if (length > 0) values.putInt(0, (int) length);
      Cached[] grown = java.util.Arrays.copyOf(cache, cache.length + 1);
      grown[cache.length] = new Cached(length, memory, values);
      cache = grown;
      return values;
    }
  }

  private static ExportedBatch batch(long length, ByteBuffer values) {
    return ExportedBatch.of(length).buffers(null, values);
  }

  /** Length and element 0 of a consumed array (EINVAL unless they agree). */
  private static void readFirst(DeviceArray array) {
    long length = array.length();
    if (length <= 0) return;
    int first = array.buffer(1).getInt((int) (4 * array.offset()));
    if (first != (int) length) {
      throw new FerryException(FerryException.EINVAL,
          "element 0 is " + first + ", expected the length " + length);
    }
  }

  /** ferry_it_bench_noop. */
  public static long noop(long x) {
    return x + 1;
  }

  /** ferry_it_bench_export_array: fills the released schema and device array. */
  public static int exportArray(long length, long schemaOut, long arrayOut) {
    try {
      ArrayExporter.export(INT32, batch(length, cachedValues(length)), arrayOut, schemaOut);
      return 0;
    } catch (Throwable t) {
      return failed(t);
    }
  }

  /** ferry_it_bench_consume_array: takes ownership of both structs (the shim
   *  releases whatever was not moved in). */
  public static int consumeArray(long schema, long array) {
    try (DeviceArray imported = DeviceArray.importFrom(array, schema)) {
      readFirst(imported);
      return 0;
    } catch (Throwable t) {
      return failed(t);
    }
  }

  /** ferry_it_bench_export_stream: fills the released stream. */
  public static int exportStream(long length, long batches, long streamOut) {
    try {
      if (batches < 0) {
        throw new FerryException(FerryException.EINVAL, "batches " + batches + " is negative");
      }
      ByteBuffer values = cachedValues(length);
      StreamExporter.export(INT32, DeviceType.CPU, new Iterator<ExportedBatch>() {
        private long remaining = batches;

        @Override
        public boolean hasNext() {
          return remaining > 0;
        }

        @Override
        public ExportedBatch next() {
          if (remaining <= 0) throw new NoSuchElementException();
          remaining--;
          return batch(length, values);
        }
      }, streamOut);
      return 0;
    } catch (Throwable t) {
      return failed(t);
    }
  }

  /** ferry_it_bench_consume_stream: takes ownership of the stream (the shim
   *  releases it if it was not moved in). */
  public static int consumeStream(long stream) {
    try (DeviceArrayStream imported = DeviceArrayStream.importFrom(stream)) {
      for (DeviceArray batch : imported) {
        try (batch) {
          readFirst(batch);
        }
      }
      return 0;
    } catch (Throwable t) {
      return failed(t);
    }
  }

  /** The message of the last failure on this thread. */
  public static String lastError() {
    return LAST_ERROR.get();
  }

  private static int failed(Throwable t) {
    if (t instanceof FerryException) {
      FerryException e = (FerryException) t;
      LAST_ERROR.set(e.getMessage() == null ? e.codeName() : e.getMessage());
      return e.code() == 0 ? FerryException.EIO : e.code();
    }
    LAST_ERROR.set(t.toString());
    return FerryException.EIO;
  }
}
