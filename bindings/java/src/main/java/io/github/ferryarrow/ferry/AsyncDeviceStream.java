package io.github.ferryarrow.ferry;

import io.github.ferryarrow.ferry.jni.FerryNative;
import java.lang.ref.Reference;
import java.util.Iterator;
import java.util.concurrent.Flow;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.LongUnaryOperator;

/**
 * The consumer of an async device stream (the Arrow C Device Data Interface's
 * {@code ArrowAsyncDeviceStreamHandler}): hand {@link #handlerAddress()} to any
 * producer (C, Rust, Go, Python, Lua, Java's {@link AsyncExporter}), which pushes
 * batches from its own threads; read them with the blocking {@link #next()} /
 * {@link #iterator()}, or subscribe as a {@link Flow.Publisher}.
 *
 * <p>Over the core's consumer ({@code ferry_async_consumer_*}), which runs the
 * protocol: it requests {@code window} batches after the schema and one more for
 * each batch read, so at most {@code window} wait in its queue (back-pressure);
 * every batch is validated against the stream's schema at the {@link Validation}
 * level given; a producer breaking the protocol is reported as an error naming the
 * violation, never a crash or a hang. Each batch is a {@link DeviceArray} owned by
 * the caller (close it), sharing the stream's schema and valid after this object
 * is closed.
 *
 * <p><b>Errors.</b> The producer's {@code on_error} (code and message), a batch
 * that fails validation (EINVAL) and a protocol violation (EPROTO) arrive as
 * {@link FerryException}, and every later read throws the same one; the end of
 * the stream stays the end ({@link #next()} returns null again). A read that times
 * out throws FerryException with code ETIMEDOUT ({@code codeName()}); the stream
 * stays usable.
 *
 * <p><b>Threads.</b> Reads are serialized (a second reader waits); {@link #cancel()}
 * may be called from any thread at any time (idempotent) and wakes a blocked
 * reader (ECANCELED). {@link #close()} cancels a stream still running, waits for
 * a reader in flight, and waits (at most {@link #CLOSE_WAIT_MS} ms) for the
 * producer to release the handler before freeing it: a producer that never
 * releases it leaves the handler's memory allocated (logged), never freed under
 * it. A Flow subscription delivers on a daemon thread of its own.
 */
public final class AsyncDeviceStream implements AutoCloseable, Iterable<DeviceArray>,
    Flow.Publisher<DeviceArray> {
  /** How long {@link #close()} waits for the producer's release of the handler. */
  public static final long CLOSE_WAIT_MS = 10_000;
  private static final System.Logger LOG = System.getLogger("io.github.ferryarrow.ferry");

  private final long handler;
  private final long consumer;
  private final int level;
  private final ReentrantLock lock = new ReentrantLock();
  /** Guarded by lock. */
  private SchemaOwner schema;
  private FerryException failure;
  private boolean ended;
  private boolean closed;
  /** Set once the handler's address was handed out (a producer may hold it). */
  private final AtomicBoolean handedOut = new AtomicBoolean();
  private final AtomicBoolean subscribed = new AtomicBoolean();
  /** The Cleaner's safety net: closes what an unreachable stream left open. */
  private final NativeHandle safetyNet;

  private AsyncDeviceStream(long handler, long consumer, int level) {
    this.handler = handler;
    this.consumer = consumer;
    this.level = level;
    AtomicBoolean handed = handedOut;
    // Unreachable without close: the producer may still hold the handler, so
    // only what no producer touches is given up (the consumer's own memory is
    // returned by the core once the producer released the handler).
    this.safetyNet = new NativeHandle(this, consumer, c -> {
      FerryNative.ferry_async_consumer_free(c);
      if (!handed.get()) FerryNative.ferry_async_handler_free(handler);
    }, "AsyncDeviceStream");
    if (NativeHandle.LEAK_REPORT) {
      safetyNet.trackLeak(() -> "AsyncDeviceStream (an async consumer) never closed");
    }
  }

  /**
   * A consumer keeping at most {@code window} (at least 1) batches queued, validating
   * each at {@code validation} ({@link Validation#NONE} trusts the producer). The
   * caller owns it: close it.
   */
  public static AsyncDeviceStream create(long window, Validation validation) {
    if (window < 1) throw new IllegalArgumentException("window " + window + " < 1");
    long handler = DeviceArray.newOrThrow(FerryNative.ferry_async_handler_new(),
        "ArrowAsyncDeviceStreamHandler");
    long[] out = new long[1];
    try {
      FerryNative.ferry_async_consumer_create(window, validation.level(), handler, out);
    } catch (RuntimeException | Error e) {
      FerryNative.ferry_async_handler_free(handler);
      throw e;
    }
    return new AsyncDeviceStream(handler, out[0], validation.level());
  }

  /** {@link #create(long, Validation)} validating at {@link Validation#DEFAULT}. */
  public static AsyncDeviceStream create(long window) {
    return create(window, Validation.DEFAULT);
  }

  /**
   * The {@code ArrowAsyncDeviceStreamHandler*} to hand to one producer (borrowed:
   * the producer holds it until it calls its release; valid until then even after
   * {@link #close()}). Hand it to exactly one producer.
   */
  public long handlerAddress() {
    lock.lock();
    try {
      checkOpen();
      handedOut.set(true);
      return handler;
    } finally {
      lock.unlock();
    }
  }

  private void checkOpen() {
    if (closed) throw new IllegalStateException("AsyncDeviceStream is closed");
  }

  /** Under the lock: the stream's recorded error again, if any. */
  private void checkFailure() {
    FerryException f = failure;
    if (f != null) throw new FerryException(f.code(), f.getMessage());
  }

  private boolean isTimeout(FerryException e) {
    return "ETIMEDOUT".equals(e.codeName());
  }

  /** Under the lock: the schema, fetched once (waits up to timeoutMs). */
  private SchemaOwner schemaOwner(long timeoutMs) {
    if (schema == null) {
      long s = DeviceArray.newOrThrow(FerryNative.ferry_schema_new(), "ArrowSchema");
      try {
        FerryNative.ferry_async_consumer_get_schema(consumer, s, timeoutMs);
      } catch (RuntimeException | Error e) {
        FerryNative.ferry_schema_free(s);
        throw e;
      }
      schema = new SchemaOwner(s); // this stream's hold, dropped at close
    }
    return schema;
  }

  /** The stream's schema, waiting up to {@code timeoutMs} (negative: forever) for
   *  the producer's on_schema; valid until this stream is closed. */
  public Schema schema(long timeoutMs) {
    lock.lock();
    try {
      checkOpen();
      checkFailure();
      SchemaOwner s;
      try {
        s = schemaOwner(timeoutMs);
      } catch (FerryException e) {
        if (!isTimeout(e)) failure = e;
        throw e;
      }
      NativeHandle guard = safetyNet;
      return new Schema(s.address(), guard);
    } finally {
      lock.unlock();
    }
  }

  /** The producer's device type once its schema came (0 before). */
  public int deviceType() {
    return (int) read(FerryNative::ferry_async_consumer_device_type);
  }

  /** {@code reader} applied to the consumer, under the lock, on an open stream. */
  private long read(LongUnaryOperator reader) {
    lock.lock();
    try {
      checkOpen();
      return reader.applyAsLong(consumer);
    } finally {
      lock.unlock();
    }
  }

  /** The next batch (owned by the caller), blocking until it comes; null at the
   *  end of the stream. */
  public DeviceArray next() {
    return next(-1);
  }

  /**
   * The next batch, waiting at most {@code timeoutMs} (negative: forever, 0: poll);
   * null at the end of the stream. FerryException ETIMEDOUT when none came in time
   * (the stream stays usable); any other error is the stream's and repeats.
   */
  public DeviceArray next(long timeoutMs) {
    lock.lock();
    try {
      checkOpen();
      checkFailure();
      if (ended) return null;
      long out = DeviceArray.newOrThrow(FerryNative.ferry_device_array_new(),
          "ArrowDeviceArray");
      SchemaOwner s;
      try {
        s = schemaOwner(timeoutMs);
        FerryNative.ferry_async_consumer_next(consumer, out, timeoutMs);
      } catch (FerryException e) {
        FerryNative.ferry_device_array_free(out); // left released on failure
        if (!isTimeout(e)) failure = e;
        throw e;
      } catch (RuntimeException | Error e) {
        FerryNative.ferry_device_array_free(out);
        throw e;
      }
      if (FerryNative.ferry_device_array_is_released(out)) {
        FerryNative.ferry_device_array_free(out);
        ended = true;
        return null;
      }
      return DeviceArray.wrapHeap(out, s.retain());
    } finally {
      lock.unlock();
    }
  }

  /** Asks the producer to stop (idempotent, from any thread, also while a reader
   *  blocks: it gets ECANCELED). Batches already read stay valid. */
  public void cancel() {
    // No lock: the core's cancel is thread-safe and must reach a blocked reader.
    long c = safetyNet.address();
    if (c != 0) FerryNative.ferry_async_consumer_cancel(c);
    Reference.reachabilityFence(this);
  }

  /** Protocol violations of the producer seen so far. */
  public long violations() {
    return read(FerryNative::ferry_async_consumer_violations);
  }

  /** Iterates the remaining batches, blocking; each must be closed by the caller.
   *  One thread per iterator. */
  @Override
  public Iterator<DeviceArray> iterator() {
    return new BatchIterator(this::next);
  }

  /**
   * Delivers the batches to {@code subscriber} (one subscriber per stream; a second
   * gets onError(IllegalStateException)) on a daemon thread of its own, as the
   * subscriber requests them: onNext for each batch (owned by the subscriber: close
   * it), then onComplete at the end or onError with the stream's error.
   * {@code Subscription.cancel()} cancels the producer. The subscriber's exceptions
   * cancel the stream and are not rethrown.
   */
  @Override
  public void subscribe(Flow.Subscriber<? super DeviceArray> subscriber) {
    if (subscriber == null) throw new NullPointerException("subscriber");
    if (!subscribed.compareAndSet(false, true)) {
      subscriber.onSubscribe(new Flow.Subscription() {
        @Override
        public void request(long n) {}

        @Override
        public void cancel() {}
      });
      subscriber.onError(new IllegalStateException(
          "AsyncDeviceStream allows one subscriber and already has one"));
      return;
    }
    Delivery delivery = new Delivery(subscriber);
    Thread thread = new Thread(delivery, "ferry-async-delivery");
    thread.setDaemon(true);
    thread.start();
  }

  /** Runs a subscription: waits for demand, reads, delivers. */
  private final class Delivery implements Runnable, Flow.Subscription {
    private final Flow.Subscriber<? super DeviceArray> subscriber;
    private final AtomicLong demand = new AtomicLong();
    private final AtomicBoolean cancelled = new AtomicBoolean();
    private final Object signal = new Object();

    Delivery(Flow.Subscriber<? super DeviceArray> subscriber) {
      this.subscriber = subscriber;
    }

    @Override
    public void request(long n) {
      if (n <= 0) {
        // Reactive Streams rule 3.9: a non-positive request is an error.
        if (cancelled.compareAndSet(false, true)) {
          AsyncDeviceStream.this.cancel();
          failWith(new IllegalArgumentException("request(" + n + "): must be positive"));
        }
        return;
      }
      demand.getAndAccumulate(n, (a, b) -> a + b < 0 ? Long.MAX_VALUE : a + b);
      synchronized (signal) {
        signal.notifyAll();
      }
    }

    @Override
    public void cancel() {
      if (cancelled.compareAndSet(false, true)) {
        AsyncDeviceStream.this.cancel();
        synchronized (signal) {
          signal.notifyAll();
        }
      }
    }

    private volatile Throwable pendingError;

    private void failWith(Throwable t) {
      pendingError = t;
      synchronized (signal) {
        signal.notifyAll();
      }
    }

    /** Waits until there is demand or the subscription ended; false when ended. */
    private boolean awaitDemand() throws InterruptedException {
      synchronized (signal) {
        while (demand.get() == 0 && !cancelled.get() && pendingError == null) signal.wait();
      }
      return !cancelled.get() || pendingError != null;
    }

    @Override
    public void run() {
      try {
        subscriber.onSubscribe(this);
        while (awaitDemand()) {
          if (pendingError != null) {
            subscriber.onError(pendingError);
            return;
          }
          DeviceArray batch;
          try {
            batch = next();
          } catch (RuntimeException e) {
            if (!cancelled.get()) subscriber.onError(e);
            return;
          }
          if (batch == null) {
            if (!cancelled.get()) subscriber.onComplete();
            return;
          }
          demand.decrementAndGet();
          if (cancelled.get()) {
            batch.close();
            return;
          }
          subscriber.onNext(batch);
        }
      } catch (InterruptedException e) {
        AsyncDeviceStream.this.cancel();
      } catch (RuntimeException | Error e) {
        // The subscriber threw (rule 2.13 forbids it): the stream stops.
        AsyncDeviceStream.this.cancel();
        LOG.log(System.Logger.Level.WARNING, "ferry: a Flow subscriber threw; stream cancelled",
            e);
      }
    }
  }

  /**
   * Closes the stream: cancels the producer when the stream is still running,
   * waits for a reader in flight, frees the consumer (queued batches are
   * released) and, once the producer released the handler (at most
   * {@link #CLOSE_WAIT_MS} ms), the handler. Batches already read stay valid.
   * Idempotent.
   */
  @Override
  public void close() {
    cancel(); // wakes a blocked reader; a no-op at the end of the stream
    lock.lock();
    try {
      if (closed) return;
      closed = true;
      long c = safetyNet.detach(); // the safety net no longer owns anything
      if (c == 0) return;
      boolean released;
      if (handedOut.get()) {
        released = released(c);
      } else {
        FerryNative.ferry_async_handler_release(handler); // no producer ever had it
        released = true;
      }
      FerryNative.ferry_async_consumer_free(c);
      if (released) {
        FerryNative.ferry_async_handler_free(handler);
      } else {
        LOG.log(System.Logger.Level.WARNING, "ferry: the async producer did not release its "
            + "handler within " + CLOSE_WAIT_MS + " ms of the cancel; its memory is kept");
      }
      if (schema != null) schema.release();
    } finally {
      lock.unlock();
    }
    Reference.reachabilityFence(this);
  }

  private static boolean released(long consumer) {
    try {
      FerryNative.ferry_async_consumer_wait_released(consumer, CLOSE_WAIT_MS);
      return true;
    } catch (FerryException e) {
      return false; // ETIMEDOUT
    }
  }
}
