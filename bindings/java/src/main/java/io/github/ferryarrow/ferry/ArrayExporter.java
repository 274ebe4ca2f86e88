package io.github.ferryarrow.ferry;

import java.nio.ByteBuffer;
import java.util.Map;
import io.github.ferryarrow.ferry.jni.FerryNative;
import io.github.ferryarrow.ferry.jni.FerryNativeConstants;

/**
 * Exports Java-owned memory as ArrowSchema / ArrowDeviceArray without copying.
 * The exported array points at the direct ByteBuffers (or device addresses) of
 * an {@link ExportedBatch}; a handle table keeps them reachable until the
 * consumer releases the array.
 *
 * <p>A flat batch (no children, dictionary or producer device) is exported with
 * one JNI call, which reads the ByteBuffers' addresses in C. A batch without
 * onRelease actions is released through the release queue (no call into Java;
 * see {@link ReleaseQueue}); one with actions through a C-to-Java call that runs
 * them on the releasing thread.
 */
public final class ArrayExporter {
  private static final System.Logger LOG = System.getLogger("io.github.ferryarrow.ferry");
  /** The C release hook that calls back into Java (constant for the process). */
  static final long RELEASE_HOOK =
      FerryNative.ferry_jni_callback(FerryNativeConstants.FERRY_JNI_CALLBACK_RELEASE);

  private ArrayExporter() {}

  /** Keeps what one export references reachable (captured by {@code onReleased}) and
   *  runs {@code onReleased} once the consumer released it. */
  private static final class Record extends HandleTable.Entry {
    private final Runnable onReleased;

    Record(Runnable onReleased) {
      this.onReleased = onReleased;
    }

    @Override
    void released() {
      onReleased.run();
    }
  }

  private static void runReleaseActions(ExportedBatch b) {
    for (ExportedBatch child : b.children) runReleaseActions(child);
    if (b.dictionary != null) runReleaseActions(b.dictionary);
    for (Runnable action : b.releaseActions()) runLogged(action, "onRelease action");
  }

  /** Runs a release action; a failure is logged as "ferry: {what} failed" (it must
   *  not cross the consumer's C release call). */
  private static void runLogged(Runnable action, String what) {
    try {
      action.run();
    } catch (RuntimeException e) {
      LOG.log(System.Logger.Level.WARNING, "ferry: " + what + " failed", e);
    }
  }

  /** Exports the array and its schema into the consumer's released structs (the
   *  array first, then the schema, as Arrow Java's {@code Data.exportVector}); on
   *  failure both are left released and no onRelease action runs. */
  public static void export(FieldSpec field, ExportedBatch batch, long deviceArrayOut,
      long schemaOut) {
    exportSchema(field, schemaOut);
    releasingSchemaOnFailure(schemaOut, () -> exportDeviceArray(batch, deviceArrayOut));
  }

  /** Fills the released ArrowSchema at {@code out} from {@code field}. */
  public static void exportSchema(FieldSpec field, long out) {
    releasingSchemaOnFailure(out, () -> fillSchema(field, out));
  }

  /** Runs {@code step}; when it throws, releases the ArrowSchema at {@code schemaOut}
   *  (what it holds so far) and rethrows. */
  private static void releasingSchemaOnFailure(long schemaOut, Runnable step) {
    try {
      step.run();
    } catch (RuntimeException | Error e) {
      FerryNative.ferry_schema_release(schemaOut);
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
    exportSchema(FieldSpec.of(new Schema(src, Schema.Owner.BORROWED)), dst);
  }

  /**
   * Fills the released ArrowDeviceArray at {@code out} with {@code batch}, zero-copy.
   * On failure {@code out} stays released, the batch's onRelease actions do not
   * run and the caller still owns its memory.
   */
  public static void exportDeviceArray(ExportedBatch batch, long out) {
    boolean actions = batch.hasReleaseActionsInTree();
    if (!actions && batch.isFlat() && batch.bufferCount() <= FerryNativeConstants.FERRY_JNI_MAX_EXPORT_BUFFERS) {
      exportQueued(batch, out);
      return;
    }
    Record record = new Record(() -> runReleaseActions(batch));
    long handle = HandleTable.put(record);
    if (!actions) ReleaseQueue.ensureDrainer();
    long array = DeviceArray.newOrThrow(FerryNative.ferry_array_new(), "ArrowArray");
    try {
      fillArray(batch, array, actions ? RELEASE_HOOK : ReleaseQueue.HOOK, handle);
      Device device = batch.producerDevice;
      if (device != null) {
        FerryNative.ferry_device_array_init_async(out, array, device.address(),
            batch.producerStream, batch.synchronize
                ? FerryNativeConstants.FERRY_SYNC_SYNCHRONIZE
                : FerryNativeConstants.FERRY_SYNC_RECORD_EVENT);
      } else if (batch.syncEvent != 0 && batch.eventRelease != null) {
        Runnable eventRelease = batch.eventRelease;
        Record event = new Record(() -> runLogged(eventRelease, "the sync event's release action"));
        long eventHandle = HandleTable.put(event);
        try {
          FerryNative.ferry_device_array_init(out, array, batch.deviceType, batch.deviceId,
              batch.syncEvent, RELEASE_HOOK, eventHandle);
        } catch (RuntimeException | Error e) {
          event.cancel();
          HandleTable.release(eventHandle); // no hook ran: the producer keeps its event
          throw e;
        }
      } else {
        FerryNative.ferry_device_array_init(out, array, batch.deviceType, batch.deviceId,
            batch.syncEvent, 0, 0);
      }
    } catch (RuntimeException | Error e) {
      record.cancel();
      FerryNative.ferry_array_release(array); // runs the hook if it was installed
      HandleTable.release(handle);            // drops the entry if it was not
      if (!actions) ReleaseQueue.drainAll();  // processes a queued release now
      throw e;
    } finally {
      FerryNative.ferry_array_free(array);    // released by now: moved in or released above
    }
  }

  /** The one-call export of a flat batch without actions (the hot path). */
  private static void exportQueued(ExportedBatch batch, long out) {
    int n = batch.bufferCount();
    long a0 = 0;
    long a1 = 0;
    long a2 = 0;
    long[] addresses = null;
    ByteBuffer[] buffers = batch.buffers;
    if (n <= 3) {
      // Checked before anything is exported (a heap buffer fails here).
      if (buffers != null) {
        if (n > 0) a0 = DirectAddresses.of(buffers[0], 0);
        if (n > 1) a1 = DirectAddresses.of(buffers[1], 1);
        if (n > 2) a2 = DirectAddresses.of(buffers[2], 2);
      } else {
        long[] raw = batch.addresses;
        if (n > 0) a0 = raw[0];
        if (n > 1) a1 = raw[1];
        if (n > 2) a2 = raw[2];
      }
    } else if (buffers != null) {
      addresses = new long[n];
      for (int i = 0; i < n; i++) addresses[i] = DirectAddresses.of(buffers[i], i);
    } else {
      addresses = batch.addresses;
    }
    ReleaseQueue.ensureDrainer();
    long handle = HandleTable.put(batch);
    long popped;
    try {
      popped = FerryNative.ferry_jni_export_array(out, batch.length, batch.nullCount,
          batch.offset, n, a0, a1, a2, addresses, batch.deviceType, batch.deviceId,
          ReleaseQueue.HOOK, handle);
    } catch (RuntimeException | Error e) {
      HandleTable.remove(handle); // the handle is never reused: a queued copy is ignored
      ReleaseQueue.drainAll();    // ... and processed now, which liveExports counts
      throw e;
    }
    ReleaseQueue.popped(popped);
  }

  private static void fillArray(ExportedBatch batch, long array, long hook, long handle) {
    ExportedBatch[] children = batch.children;
    // Check every buffer before ferry_array_init, so a bad buffer fails early.
    int n = batch.bufferCount();
    long[] addresses = new long[n];
    ByteBuffer[] buffers = batch.buffers;
    for (int i = 0; i < n; i++) {
      addresses[i] = buffers != null ? DirectAddresses.of(buffers[i], i) : batch.addresses[i];
    }
    FerryNative.ferry_array_init(array, batch.length, batch.nullCount,
        batch.offset, n, 0, children.length, hook, handle);
    for (int i = 0; i < addresses.length; i++) {
      if (addresses[i] != 0) FerryNative.ferry_array_set_buffer(array, i, addresses[i]);
    }
    for (int i = 0; i < children.length; i++) {
      fillArray(children[i], FerryNative.ferry_array_child(array, i), 0, 0);
    }
    if (batch.dictionary != null) {
      long[] dictionary = new long[1];
      FerryNative.ferry_array_allocate_dictionary(array, dictionary);
      fillArray(batch.dictionary, dictionary[0], 0, 0);
    }
  }

  /** Exports and imports back: a Java-produced DeviceArray (mostly for tests). */
  public static DeviceArray toDeviceArray(FieldSpec field, ExportedBatch batch) {
    long schema = DeviceArray.newOrThrow(FerryNative.ferry_schema_new(), "ArrowSchema");
    long array = FerryNative.ferry_device_array_new();
    try {
      if (array == 0) throw new OutOfMemoryError("ferry: cannot allocate ArrowDeviceArray");
      export(field, batch, array, schema);
      return DeviceArray.importFrom(array, schema);
    } finally {
      FerryNative.ferry_schema_free(schema);
      FerryNative.ferry_device_array_free(array);
    }
  }

  /** Java exports (arrays and streams) whose consumers have not released them yet;
   *  exact whenever no release is running at that moment (a release in progress on
   *  another thread may or may not be counted). */
  public static long liveExports() {
    return HandleTable.liveExports();
  }

  /**
   * Drops every export whose consumer has released it since the last drain, now,
   * on this thread (the release queue is otherwise drained by later exports and a
   * daemon thread). Returns how many were dropped.
   */
  public static int drainReleases() {
    return ReleaseQueue.drainAll();
  }
}
