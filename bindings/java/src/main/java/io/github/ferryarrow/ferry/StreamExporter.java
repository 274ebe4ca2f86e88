package io.github.ferryarrow.ferry;

import java.util.Iterator;
import java.util.function.Supplier;
import io.github.ferryarrow.ferry.jni.FerryNative;
import io.github.ferryarrow.ferry.jni.FerryNativeConstants;

/**
 * Exports any Java {@code Iterator<ExportedBatch>} as an ArrowDeviceArrayStream.
 * get_schema and get_next run the iterator on whatever thread the consumer
 * calls from (foreign threads are attached as daemons); an exception thrown by
 * the iterator reaches the consumer as its FerryException code (EIO for any
 * other exception) plus the message from get_last_error. When the consumer
 * releases the stream the iterator is closed if it is AutoCloseable.
 */
public final class StreamExporter {
  private static final long GET_SCHEMA =
      FerryNative.ferry_jni_callback(FerryNativeConstants.FERRY_JNI_CALLBACK_GET_SCHEMA);
  private static final long GET_NEXT =
      FerryNative.ferry_jni_callback(FerryNativeConstants.FERRY_JNI_CALLBACK_GET_NEXT);

  private StreamExporter() {}

  /** The Java side of one exported stream: batches described by ExportedBatch
   *  (exported zero-copy) or owned DeviceArrays (moved out). */
  static final class Record extends HandleTable.Entry {
    private final Supplier<FieldSpec> schema;
    private final Iterator<?> batches;

    Record(Supplier<FieldSpec> schema, Iterator<?> batches) {
      this.schema = schema;
      this.batches = batches;
    }

    /** Called on every get_schema; may throw to fail it. */
    FieldSpec schema() {
      FieldSpec spec = schema.get();
      if (spec == null) {
        throw new FerryException(FerryException.EINVAL, "the stream's schema supplier returned null");
      }
      return spec;
    }

    /** Fills the released ArrowDeviceArray at {@code out} with the next batch, or
     *  leaves it released at the end. */
    void next(long out) {
      if (!batches.hasNext()) return;
      Object batch = batches.next();
      if (batch instanceof ExportedBatch) {
        ArrayExporter.exportDeviceArray((ExportedBatch) batch, out);
      } else if (batch instanceof DeviceArray) {
        ((DeviceArray) batch).moveArrayTo(out);
      } else {
        throw new FerryException(FerryException.EINVAL, "the stream's iterator returned "
            + (batch == null ? "null" : "a " + batch.getClass().getName()));
      }
    }

    @Override
    void released() {
      if (batches instanceof AutoCloseable) {
        try {
          ((AutoCloseable) batches).close();
        } catch (Exception e) {
          System.getLogger("io.github.ferryarrow.ferry").log(System.Logger.Level.WARNING,
              "ferry: closing a stream's iterator failed", e);
        }
      }
    }
  }

  /** Fills the released stream at {@code out}; on failure it stays released. */
  public static void export(FieldSpec schema, int deviceType, Iterator<ExportedBatch> batches,
      long out) {
    export(() -> schema, deviceType, batches, out);
  }

  /** As above, with the schema made on each get_schema call (an exception thrown
   *  by the supplier fails get_schema like one thrown by the iterator). */
  public static void export(Supplier<FieldSpec> schema, int deviceType,
      Iterator<ExportedBatch> batches, long out) {
    exportRecord(new Record(schema, batches), deviceType, out);
  }

  private static void exportRecord(Record record, int deviceType, long out) {
    long handle = HandleTable.put(record);
    try {
      FerryNative.ferry_array_stream_init(out, deviceType, GET_SCHEMA, GET_NEXT,
          ArrayExporter.RELEASE_HOOK, handle);
    } catch (RuntimeException | Error e) {
      record.cancel();
      HandleTable.release(handle);
      throw e;
    }
  }

  /**
   * Exports a stream of arrays Java already owns (imported, copied, moved: any
   * {@link DeviceArray} whose schema is {@code schema}), each moved out to the
   * consumer as it pulls; the stream's device type is {@code deviceType} and every
   * array must live there. Use it to forward or re-serve data. Fills the released
   * stream at {@code out}; on failure it stays released.
   */
  public static void exportArrays(Supplier<FieldSpec> schema, int deviceType,
      Iterator<DeviceArray> arrays, long out) {
    exportRecord(new Record(schema, arrays), deviceType, out);
  }

  /** Exports and imports back: a Java-produced DeviceArrayStream (mostly for tests). */
  public static DeviceArrayStream toStream(FieldSpec schema, int deviceType,
      Iterator<ExportedBatch> batches) {
    long stream = DeviceArray.newOrThrow(FerryNative.ferry_array_stream_new(), "stream");
    try {
      export(schema, deviceType, batches, stream);
      return DeviceArrayStream.importFrom(stream);
    } finally {
      FerryNative.ferry_array_stream_free(stream);
    }
  }
}
