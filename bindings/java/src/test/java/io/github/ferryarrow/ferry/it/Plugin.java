package io.github.ferryarrow.ferry.it;

import java.util.Iterator;
import java.util.NoSuchElementException;
import io.github.ferryarrow.ferry.ArrayExporter;
import io.github.ferryarrow.ferry.Device;
import io.github.ferryarrow.ferry.DeviceArray;
import io.github.ferryarrow.ferry.DeviceArrayStream;
import io.github.ferryarrow.ferry.ExportedBatch;
import io.github.ferryarrow.ferry.FerryException;
import io.github.ferryarrow.ferry.FieldSpec;
import io.github.ferryarrow.ferry.StreamExporter;
import io.github.ferryarrow.ferry.jni.FerryNative;

/**
 * The Java participant of the cross-language tests: every entry point of
 * core/include/ferry/ferry_it.h, implemented in Java and called by the C shim
 * bindings/java/plugin/ferry_it_java.c. Each method catches everything, keeps
 * the message as this thread's last error and returns an errno code: no
 * exception reaches the shim.
 */
public final class Plugin {
  private static final ThreadLocal<String> LAST_ERROR = ThreadLocal.withInitial(() -> "");

  private Plugin() {}

  /** ferry_it_export_array: fills the released schema and device array. */
  public static int exportArray(String spec, long schemaOut, long arrayOut) {
    return run(() -> {
      Case c = Case.parse(spec);
      if (c.fail == Case.Fail.EXPORT) throw injected("injected failure at export");
      ArrayExporter.export(CaseProducer.field(c), CaseProducer.batch(c, c.seed), arrayOut,
          schemaOut);
    });
  }

  /** ferry_it_check_array: takes ownership of both structs and releases them. */
  public static int checkArray(String spec, long schema, long array) {
    return run(() -> {
      DeviceArray imported = null;
      try {
        Case c = Case.parse(spec);
        imported = DeviceArray.importFrom(array, schema);
        CaseChecker.checkArray(c, c.seed, imported, "");
      } finally {
        if (imported != null) imported.close();
        // Whatever was not moved in (bad case string, released input) is released here.
        FerryNative.ferry_schema_release(schema);
        FerryNative.ferry_device_array_release(array);
      }
    });
  }

  /** ferry_it_export_stream: fills the released stream. */
  public static int exportStream(String spec, long streamOut) {
    return run(() -> {
      Case c = Case.parse(spec);
      if (c.fail == Case.Fail.EXPORT) throw injected("injected failure at export");
      // An unavailable device is an error of the entry point itself
      // (cases.md), not of a later get_next: resolve it before exporting.
      Device.resolve(c.deviceType, c.deviceId());
      FieldSpec field = CaseProducer.field(c);
      StreamExporter.export(() -> {
        if (c.fail == Case.Fail.GET_SCHEMA) throw injected("injected failure at get_schema");
        return field;
      }, c.deviceType, new CaseBatches(c), streamOut);
    });
  }

  /** Yields the case's batches (seed + b), failing the N-th get_next when asked. */
  private static final class CaseBatches implements Iterator<ExportedBatch> {
    private final Case c;
    private long produced;
    private long calls;

    CaseBatches(Case c) {
      this.c = c;
    }

    /** Called exactly once per get_next by the stream exporter. */
    @Override
    public boolean hasNext() {
      calls++;
      if (c.fail == Case.Fail.GET_NEXT && calls == c.failAt) {
        throw injected("injected failure at get_next " + calls);
      }
      return produced < c.batches;
    }

    @Override
    public ExportedBatch next() {
      if (produced >= c.batches) throw new NoSuchElementException();
      long seed = (c.seed + produced) & 0xFFFFFFFFL;
      produced++;
      return CaseProducer.batch(c, seed);
    }
  }

  /** ferry_it_check_stream: takes ownership of the stream and releases it. */
  public static int checkStream(String spec, long stream) {
    return run(() -> {
      DeviceArrayStream imported = null;
      try {
        Case c = Case.parse(spec);
        imported = DeviceArrayStream.importFrom(stream);
        checkStream(c, imported);
      } finally {
        if (imported != null) imported.close();
        FerryNative.ferry_array_stream_release(stream);
      }
    });
  }

  private static void checkStream(Case c, DeviceArrayStream s) {
    if (s.deviceType() != c.deviceType) {
      throw CaseChecker.mismatch("stream device type: expected " + c.deviceName + " ("
          + c.deviceType + "), got " + io.github.ferryarrow.ferry.DeviceType.name(s.deviceType()));
    }
    if (c.fail == Case.Fail.GET_SCHEMA) {
      expectInjected(s, "get_schema", "injected failure at get_schema", () -> s.schema());
      return;
    }
    CaseChecker.checkSchema(c, s.schema(), "");
    long failing = c.fail == Case.Fail.GET_NEXT && c.failAt <= c.batches + 1 ? c.failAt : 0;
    long seen = 0;
    for (long call = 1;; call++) {
      if (call == failing) {
        expectInjected(s, "get_next call " + call, "injected failure at get_next " + call,
            () -> {
              DeviceArray extra = s.next();
              if (extra != null) extra.close();
            });
        return;
      }
      try (DeviceArray batch = s.next()) {
        if (batch == null) {
          if (seen != c.batches) {
            throw CaseChecker.mismatch("stream ended after " + seen + " batches, expected " + c.batches);
          }
          if (failing != 0) {
            throw CaseChecker.mismatch("stream ended before the injected failure at get_next call " + failing);
          }
          return;
        }
        if (seen >= c.batches) {
          throw CaseChecker.mismatch("stream yielded more than " + c.batches + " batches");
        }
        CaseChecker.checkArray(c, (c.seed + seen) & 0xFFFFFFFFL, batch, "batch " + seen + ": ");
        seen++;
      }
    }
  }

  private static void expectInjected(DeviceArrayStream s, String what, String expected,
      Runnable call) {
    try {
      call.run();
    } catch (FerryException e) {
      if (e.code() != FerryException.EIO) {
        throw CaseChecker.mismatch(what + " returned " + e.codeName() + " (" + e.code()
            + "), expected EIO from the injected failure (message: " + e.getMessage() + ")");
      }
      if (!expected.equals(e.getMessage())) {
        throw CaseChecker.mismatch(what + ": get_last_error returned \"" + e.getMessage()
            + "\", expected \"" + expected + "\"");
      }
      return;
    }
    throw CaseChecker.mismatch(what + " succeeded, expected the injected failure \"" + expected + "\"");
  }

  /** ferry_it_live_allocations: Java exports not yet released by their consumers
   *  (each owns its buffers and, on devices, its memory and stream). */
  public static long liveAllocations() {
    return ArrayExporter.liveExports();
  }

  /** ferry_it_last_error: the message of the last failure on this thread. */
  public static String lastError() {
    return LAST_ERROR.get();
  }

  private static FerryException injected(String message) {
    return new FerryException(FerryException.EIO, message);
  }

  private static int run(Runnable body) {
    try {
      body.run();
      LAST_ERROR.set("");
      return 0;
    } catch (FerryException e) {
      LAST_ERROR.set(e.getMessage() == null ? e.codeName() : e.getMessage());
      return e.code() == 0 ? FerryException.EIO : e.code();
    } catch (Throwable t) {
      LAST_ERROR.set(t.toString());
      return FerryException.EIO;
    }
  }
}
