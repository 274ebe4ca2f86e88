package org.ferry;

import java.lang.ref.Cleaner;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import java.util.function.LongConsumer;

/**
 * Owns one native address and frees it exactly once: on {@link #close()} or, as a
 * safety net, through a {@link Cleaner} when the Java owner became unreachable
 * without being closed, which is reported as a leak. Never uses finalizers.
 * The free action holds no reference to the owner, only to the address.
 */
public final class NativeHandle implements AutoCloseable {
  private static final Cleaner CLEANER = Cleaner.create();
  private static final AtomicLong LEAKS = new AtomicLong();
  private static final System.Logger LOG = System.getLogger("org.ferry");
  private static volatile Consumer<String> leakListener;

  private final State state;
  private final Cleaner.Cleanable cleanable;

  /** The cleaning action: frees the address once, knowing whether it was asked to. */
  private static final class State implements Runnable {
    private final AtomicLong address;
    private final LongConsumer free;
    private final String what;
    private volatile boolean closedExplicitly;

    State(long address, LongConsumer free, String what) {
      this.address = new AtomicLong(address);
      this.free = free;
      this.what = what;
    }

    @Override
    public void run() {
      long a = address.getAndSet(0);
      if (a == 0) return;
      if (!closedExplicitly) reportLeak(what);
      free.accept(a);
    }
  }

  /** Takes ownership of {@code address}; {@code free} runs exactly once with it. */
  public NativeHandle(Object owner, long address, LongConsumer free, String what) {
    this.state = new State(address, free, what);
    this.cleanable = CLEANER.register(owner, state);
  }

  /** The address, or 0 once closed. */
  public long address() {
    return state.address.get();
  }

  public boolean isClosed() {
    return state.address.get() == 0;
  }

  /** The address; throws IllegalStateException naming the object when closed. */
  public long checkedAddress() {
    long a = state.address.get();
    if (a == 0) throw new IllegalStateException(state.what + " is closed");
    return a;
  }

  /** Frees now (a no-op the second time). */
  @Override
  public void close() {
    state.closedExplicitly = true;
    cleanable.clean();
  }

  /** Gives the address away without freeing it (after a move out). */
  long detach() {
    long a = state.address.getAndSet(0);
    state.closedExplicitly = true;
    cleanable.clean();
    return a;
  }

  /** Number of owners that were garbage-collected without close(), process-wide. */
  public static long leakCount() {
    return LEAKS.get();
  }

  /** Called (on the Cleaner thread) with a description of every leak; null to stop. */
  public static void setLeakListener(Consumer<String> listener) {
    leakListener = listener;
  }

  private static void reportLeak(String what) {
    LEAKS.incrementAndGet();
    LOG.log(System.Logger.Level.WARNING,
        "ferry: " + what + " was not closed; released by the Cleaner");
    Consumer<String> listener = leakListener;
    if (listener != null) {
      try {
        listener.accept(what);
      } catch (RuntimeException e) {
        LOG.log(System.Logger.Level.WARNING, "ferry: leak listener failed", e);
      }
    }
  }
}
