package org.ferry;

import java.nio.ByteBuffer;
import java.util.Map;
import org.ferry.jni.FerryNative;
import org.ferry.jni.FerryNativeConstants;
import org.ferry.jni.Support;

/**
 * Exports Java-owned memory as ArrowSchema / ArrowDeviceArray without copying.
 * The exported array points at the direct ByteBuffers (or device addresses) of
 * an {@link ExportedBatch}; ferry's release hook, called exactly once when the
 * consumer releases the array, drops the last Java reference to them.
 */
public final class ArrayExporter {
  private static final System.Logger LOG = System.getLogger("org.ferry");
  /** The C release hook that calls back into Java (constant for the process). */
  static final long RELEASE_HOOK = Support.releaseHookAddress();

  private ArrayExporter() {}

  /** Keeps an exported batch (and everything it references) reachable. */
  private static final class Record extends HandleTable.Entry {
    private final ExportedBatch batch;

    Record(ExportedBatch batch) {
      this.batch = batch;
    }

    @Override
    void released() {
      runReleaseActions(batch);
    }

    private static void runReleaseActions(ExportedBatch b) {
      for (ExportedBatch child : b.childList()) runReleaseActions(child);
      if (b.dictionaryValue() != null) runReleaseActions(b.dictionaryValue());
      for (Runnable action : b.releaseActions()) {
        try {
          action.run();
        } catch (RuntimeException e) {
          LOG.log(System.Logger.Level.WARNING, "ferry: onRelease action failed", e);
        }
      }
    }
  }

  /** Exports schema and array into the consumer's released structs; on failure
   *  both are left released and no onRelease action runs. */
  public static void export(FieldSpec field, ExportedBatch batch, long schemaOut,
      long deviceArrayOut) {
    exportSchema(field, schemaOut);
    try {
      exportDeviceArray(batch, deviceArrayOut);
    } catch (RuntimeException | Error e) {
      FerryNative.ferry_schema_release(schemaOut);
      throw e;
    }
  }

  /** Fills the released ArrowSchema at {@code out} from {@code field}. */
  public static void exportSchema(FieldSpec field, long out) {
    try {
      fillSchema(field, out);
    } catch (RuntimeException | Error e) {
      FerryNative.ferry_schema_release(out);
      throw e;
    }
  }

  private static void fillSchema(FieldSpec field, long out) {
    int n = field.children().size();
    FerryNative.ferry_schema_init(out, field.format(), field.name(), field.flags(), n);
    for (Map.Entry<String, String> e : field.metadata().entrySet()) {
      FerryNative.ferry_schema_add_metadata(out, e.getKey(), e.getValue());
    }
    for (int i = 0; i < n; i++) {
      fillSchema(field.children().get(i), FerryNative.ferry_schema_child(out, i));
    }
    if (field.dictionary() != null) {
      long[] dictionary = new long[1];
      FerryNative.ferry_schema_allocate_dictionary(out, dictionary);
      fillSchema(field.dictionary(), dictionary[0]);
    }
  }

  /** Deep-copies the schema at {@code src} into the released schema at {@code dst}. */
  static void copySchema(long src, long dst) {
    try {
      copySchemaInto(src, dst);
    } catch (RuntimeException | Error e) {
      FerryNative.ferry_schema_release(dst);
      throw e;
    }
  }

  private static void copySchemaInto(long src, long dst) {
    long n = FerryNative.ferry_schema_n_children(src);
    FerryNative.ferry_schema_init(dst, FerryNative.ferry_schema_format(src),
        FerryNative.ferry_schema_name(src), FerryNative.ferry_schema_flags(src), n);
    Schema view = new Schema(src, () -> { });
    for (Map.Entry<String, String> e : view.metadata().entrySet()) {
      FerryNative.ferry_schema_add_metadata(dst, e.getKey(), e.getValue());
    }
    for (long i = 0; i < n; i++) {
      copySchemaInto(FerryNative.ferry_schema_child(src, i), FerryNative.ferry_schema_child(dst, i));
    }
    long dictionary = FerryNative.ferry_schema_dictionary(src);
    if (dictionary != 0) {
      long[] out = new long[1];
      FerryNative.ferry_schema_allocate_dictionary(dst, out);
      copySchemaInto(dictionary, out[0]);
    }
  }

  /**
   * Fills the released ArrowDeviceArray at {@code out} with {@code batch}, zero-copy.
   * On failure {@code out} stays released, the batch's onRelease actions do not
   * run and the caller still owns its memory.
   */
  public static void exportDeviceArray(ExportedBatch batch, long out) {
    Record record = new Record(batch);
    long handle = HandleTable.put(record);
    long array = DeviceArray.newOrThrow(FerryNative.ferry_array_new(), "ArrowArray");
    try {
      fillArray(batch, array, RELEASE_HOOK, handle);
      Device device = batch.producerDevice();
      if (device != null) {
        FerryNative.ferry_device_array_init_async(out, array, device.address(),
            batch.producerStream(), FerryNativeConstants.FERRY_EXPORT_RECORD_EVENT);
      } else {
        FerryNative.ferry_device_array_init(out, array, batch.deviceType(), batch.deviceId(), 0,
            0, 0);
      }
    } catch (RuntimeException | Error e) {
      record.cancel();
      FerryNative.ferry_array_release(array); // runs the hook if it was installed
      HandleTable.release(handle);            // drops the entry if it was not
      throw e;
    } finally {
      FerryNative.ferry_array_free(array);    // released by now: moved in or released above
    }
  }

  private static void fillArray(ExportedBatch batch, long array, long hook, long handle) {
    Object[] buffers = batch.bufferList();
    ExportedBatch[] children = batch.childList();
    // Check every buffer before ferry_array_init, so a bad buffer fails early.
    long[] addresses = new long[buffers.length];
    for (int i = 0; i < buffers.length; i++) addresses[i] = addressOf(buffers[i], i);
    FerryNative.ferry_array_init(array, batch.length(), batch.nullCountValue(),
        batch.offsetValue(), buffers.length, 0, children.length, hook, handle);
    for (int i = 0; i < addresses.length; i++) {
      if (addresses[i] != 0) FerryNative.ferry_array_set_buffer(array, i, addresses[i]);
    }
    for (int i = 0; i < children.length; i++) {
      fillArray(children[i], FerryNative.ferry_array_child(array, i), 0, 0);
    }
    if (batch.dictionaryValue() != null) {
      long[] dictionary = new long[1];
      FerryNative.ferry_array_allocate_dictionary(array, dictionary);
      fillArray(batch.dictionaryValue(), dictionary[0], 0, 0);
    }
  }

  private static long addressOf(Object buffer, int i) {
    if (buffer == null) return 0;
    if (buffer instanceof Long) return (Long) buffer;
    ByteBuffer b = (ByteBuffer) buffer;
    if (!b.isDirect()) {
      throw new IllegalArgumentException("buffer " + i + " is a heap ByteBuffer; only direct "
          + "ByteBuffers can be exported without copying");
    }
    return Support.directBufferAddress(b);
  }

  /** Exports and imports back: a Java-produced DeviceArray (mostly for tests). */
  public static DeviceArray toDeviceArray(FieldSpec field, ExportedBatch batch) {
    long schema = DeviceArray.newOrThrow(FerryNative.ferry_schema_new(), "ArrowSchema");
    long array = FerryNative.ferry_device_array_new();
    try {
      if (array == 0) throw new OutOfMemoryError("ferry: cannot allocate ArrowDeviceArray");
      export(field, batch, schema, array);
      return DeviceArray.importFrom(schema, array);
    } finally {
      FerryNative.ferry_schema_free(schema);
      FerryNative.ferry_device_array_free(array);
    }
  }

  /** Java exports (arrays and streams) whose consumers have not released them yet. */
  public static long liveExports() {
    return HandleTable.size();
  }
}
