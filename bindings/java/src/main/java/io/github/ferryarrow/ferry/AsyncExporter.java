package io.github.ferryarrow.ferry;

import io.github.ferryarrow.ferry.jni.FerryNative;
import java.util.Iterator;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.Flow;
import java.util.concurrent.LinkedBlockingQueue;

/**
 * The producer of an async device stream: pushes Java batches to a consumer's
 * {@code ArrowAsyncDeviceStreamHandler} (from any runtime, or Java's own
 * {@link AsyncDeviceStream}). Every export is driven by the core's producer state
 * machine, which keeps the specification's rules (serialized handler calls, never
 * more tasks than requested, request never calling back, idempotent cancel,
 * release last and exactly once); Java only supplies the batches.
 *
 * <p>Each call takes the handler (borrowed until ferry releases it, which it does
 * in every outcome, failures included) and returns at once: the batches are pushed
 * from another thread. A failure of the producer (an exception of the iterator or
 * the publisher's onError) reaches the consumer as {@code on_error} with the
 * code of a {@link FerryException} (EIO for other exceptions) and its message; a
 * consumer's cancel stops the export and closes the source.
 */
public final class AsyncExporter {
  private static final System.Logger LOG = System.getLogger("io.github.ferryarrow.ferry");

  private AsyncExporter() {}

  /**
   * Pushes the batches of {@code batches} (pulled as the consumer requests them, on
   * a thread ferry starts; an {@link AutoCloseable} iterator is closed at the end)
   * under {@code schema}, all on {@code deviceType}, to the handler at
   * {@code handlerAddress}.
   */
  public static void export(FieldSpec schema, int deviceType, Iterator<ExportedBatch> batches,
      long handlerAddress) {
    long stream = DeviceArray.newOrThrow(FerryNative.ferry_array_stream_new(), "stream");
    try {
      StreamExporter.export(schema, deviceType, batches, stream);
    } catch (RuntimeException | Error e) {
      FerryNative.ferry_array_stream_free(stream);
      FerryNative.ferry_async_handler_fail(handlerAddress, FerryException.EIO,
          "the Java producer could not start: " + e);
      throw e;
    }
    pushStream(stream, handlerAddress);
  }

  /** Pushes the remaining batches of {@code stream} (moved out: it is closed) to
   *  the handler at {@code handlerAddress}, pulling as the consumer requests. */
  public static void export(DeviceArrayStream stream, long handlerAddress) {
    long moved = DeviceArray.newOrThrow(FerryNative.ferry_array_stream_new(), "stream");
    try {
      stream.exportTo(moved);
    } catch (RuntimeException | Error e) {
      FerryNative.ferry_array_stream_free(moved);
      FerryNative.ferry_async_handler_fail(handlerAddress, FerryException.EINVAL,
          "the stream to push could not be moved: " + e.getMessage());
      throw e;
    }
    pushStream(moved, handlerAddress);
  }

  /** Moves the heap stream into the core's pull-to-push thread, then frees the
   *  (now released) heap struct. */
  private static void pushStream(long stream, long handlerAddress) {
    try {
      FerryNative.ferry_async_export_stream(stream, handlerAddress,
          FerryNative.FERRY_ASYNC_EXPORT_DEFAULT);
    } finally {
      FerryNative.ferry_array_stream_free(stream); // released by the move in every outcome
    }
  }

  /**
   * Pushes what {@code publisher} publishes, under {@code schema}, all on
   * {@code deviceType}, to the handler at {@code handlerAddress}: a daemon thread
   * sends the schema, subscribes, and requests one batch from the publisher each
   * time the consumer asks for one (so the consumer's window is the
   * back-pressure). onComplete ends the stream; onError fails it (on_error with
   * the exception's code and message); a consumer's cancel cancels the
   * subscription.
   */
  public static void export(FieldSpec schema, int deviceType,
      Flow.Publisher<ExportedBatch> publisher, long handlerAddress) {
    long[] out = new long[1];
    // Fails the handler (on_error, release) itself when it cannot be made.
    FerryNative.ferry_async_sender_create(handlerAddress, deviceType, null, out);
    Pump pump = new Pump(out[0], schema, publisher);
    Thread thread = new Thread(pump, "ferry-async-export");
    thread.setDaemon(true);
    try {
      thread.start();
    } catch (RuntimeException | Error e) {
      FerryNative.ferry_async_sender_finish(out[0], FerryException.EIO,
          "the Java producer could not start its thread: " + e);
      throw e;
    }
  }

  /** What the publisher signalled, in order. */
  private record Signal(ExportedBatch batch, Throwable error, boolean complete) {}

  /** Drives one sender from a publisher (see export). */
  private static final class Pump implements Runnable, Flow.Subscriber<ExportedBatch> {
    private final long sender;
    private final FieldSpec schema;
    private final Flow.Publisher<ExportedBatch> publisher;
    private final BlockingQueue<Signal> signals = new LinkedBlockingQueue<>();
    private final BlockingQueue<Flow.Subscription> subscription = new LinkedBlockingQueue<>();

    Pump(long sender, FieldSpec schema, Flow.Publisher<ExportedBatch> publisher) {
      this.sender = sender;
      this.schema = schema;
      this.publisher = publisher;
    }

    @Override
    public void onSubscribe(Flow.Subscription s) {
      subscription.add(s);
    }

    @Override
    public void onNext(ExportedBatch batch) {
      signals.add(new Signal(batch, null, false));
    }

    @Override
    public void onError(Throwable error) {
      signals.add(new Signal(null, error, false));
    }

    @Override
    public void onComplete() {
      signals.add(new Signal(null, null, true));
    }

    @Override
    public void run() {
      Flow.Subscription s = null;
      int code = 0;
      String message = null;
      try {
        long schemaStruct = DeviceArray.newOrThrow(FerryNative.ferry_schema_new(),
            "ArrowSchema");
        try {
          ArrayExporter.exportSchema(schema, schemaStruct);
          FerryNative.ferry_async_sender_send_schema(sender, schemaStruct); // moved in
        } finally {
          FerryNative.ferry_schema_free(schemaStruct);
        }
        publisher.subscribe(this);
        s = subscription.take();
        while (true) {
          FerryNative.ferry_async_sender_wait_demand(sender, -1);
          s.request(1);
          Signal signal = signals.take();
          if (signal.complete()) break;
          if (signal.error() != null) {
            Throwable t = signal.error();
            code = t instanceof FerryException f ? f.code() : FerryException.EIO;
            message = t instanceof FerryException ? t.getMessage() : t.toString();
            break;
          }
          send(signal.batch());
        }
      } catch (FerryException e) {
        // The consumer cancelled or refused (the sender knows, and sends nothing
        // more), or a batch could not be exported: that is the stream's error.
        if (!FerryNative.ferry_async_sender_is_cancelled(sender)) {
          code = e.code();
          message = e.getMessage();
        }
        if (s != null) s.cancel();
      } catch (InterruptedException e) {
        code = FerryException.EIO;
        message = "the Java producer was interrupted";
        if (s != null) s.cancel();
      } catch (RuntimeException | Error e) {
        code = FerryException.EIO;
        message = "the Java producer failed: " + e;
        if (s != null) s.cancel();
      } finally {
        try {
          FerryNative.ferry_async_sender_finish(sender, code, message);
        } catch (RuntimeException e) {
          LOG.log(System.Logger.Level.DEBUG, "ferry: the consumer refused the end", e);
        }
      }
    }

    /** Exports one batch and hands it to the consumer (waiting for demand). */
    private void send(ExportedBatch batch) {
      long array = DeviceArray.newOrThrow(FerryNative.ferry_device_array_new(),
          "ArrowDeviceArray");
      try {
        ArrayExporter.exportDeviceArray(batch, array);
        FerryNative.ferry_async_sender_send(sender, array, null, -1);
      } finally {
        // Moved in on success or refusal; still ours on the other failures.
        if (!FerryNative.ferry_device_array_is_released(array)) {
          FerryNative.ferry_device_array_release(array);
        }
        FerryNative.ferry_device_array_free(array);
      }
    }
  }
}
