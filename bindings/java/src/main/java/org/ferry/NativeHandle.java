package org.ferry;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.lang.ref.Cleaner;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import java.util.function.LongConsumer;

/**
 * Owns one native address and frees it exactly once: on {@link #close()} or, as a
 * safety net, when the Java owner became unreachable without being closed, which
 * is reported as a leak ({@link #leakCount()}, a listener, a System.Logger
 * warning). Never uses finalizers. The free action holds no reference to the
 * owner, only to the address.
 *
 * <p><b>Why the safety net is deferred.</b> Registering a {@link Cleaner} costs
 * 130-200 ns on the reference machine, several times the whole handoff, and most
 * owners (batches in try-with-resources) are closed microseconds after they were
 * made. So a new handle first enters a <i>nursery</i> that holds its owner
 * strongly: an owner in the nursery cannot become unreachable, so no leak can go
 * unnoticed there. The nursery is emptied when it is full and after every
 * garbage collection (a sentinel registered with the Cleaner dies in every GC and
 * re-arms itself); only the handles still open at that point get a Cleaner
 * registration. A handle closed before then costs one uncontended lock and an
 * array store instead. The price: a leaked owner is reported (and its memory
 * freed) one GC later than with an immediate registration.
 */
public final class NativeHandle implements AutoCloseable {
  private static final Cleaner CLEANER = Cleaner.create();
  private static final AtomicLong LEAKS = new AtomicLong();
  private static final System.Logger LOG = System.getLogger("org.ferry");
  private static final VarHandle ADDRESS;
  private static volatile Consumer<String> leakListener;

  static {
    try {
      ADDRESS = MethodHandles.lookup().findVarHandle(NativeHandle.class, "address", long.class);
    } catch (ReflectiveOperationException e) {
      throw new ExceptionInInitializerError(e);
    }
  }

  /** The owned address; 0 once freed or given away. Swapped atomically, so the
   *  free action runs exactly once whoever (close, the Cleaner) gets there first. */
  private volatile long address;
  private final LongConsumer free;
  private final String what;
  /** Set when the nursery registered this handle with the Cleaner. */
  private volatile Cleaner.Cleanable cleanable;

  /** Takes ownership of {@code address}; {@code free} runs exactly once with it. */
  public NativeHandle(Object owner, long address, LongConsumer free, String what) {
    this.address = address;
    this.free = free;
    this.what = what;
    Nursery.add(owner, this);
  }

  /** The address, or 0 once closed. */
  public long address() {
    return address;
  }

  public boolean isClosed() {
    return address == 0;
  }

  /** The address; throws IllegalStateException naming the object when closed. */
  public long checkedAddress() {
    long a = address;
    if (a == 0) throw new IllegalStateException(what + " is closed");
    return a;
  }

  private long take() {
    return (long) ADDRESS.getAndSet(this, 0L);
  }

  /** Frees now (a no-op the second time). */
  @Override
  public void close() {
    long a = take();
    if (a != 0) free.accept(a);
    dropRegistration();
  }

  /** Gives the address away without freeing it (after a move out). */
  long detach() {
    long a = take();
    dropRegistration();
    return a;
  }

  private void dropRegistration() {
    Cleaner.Cleanable c = cleanable;
    if (c != null) c.clean(); // the leak action finds the address gone: nothing runs
  }

  /** Registers the owner with the Cleaner if the handle is still open. */
  private void promote(Object owner) {
    if (address == 0) return;
    Cleaner.Cleanable c = CLEANER.register(owner, new LeakAction(this));
    cleanable = c;
    // A close between the check above and the store of `cleanable` did not see
    // the registration: drop it here (clean() is idempotent).
    if (address == 0) c.clean();
  }

  /** Runs when the owner became unreachable, or when a promoted handle is closed. */
  private static final class LeakAction implements Runnable {
    private final NativeHandle handle;

    LeakAction(NativeHandle handle) {
      this.handle = handle;
    }

    @Override
    public void run() {
      long a = handle.take();
      if (a == 0) return; // closed explicitly
      reportLeak(handle.what);
      handle.free.accept(a);
    }
  }

  /**
   * Holds new owners strongly until they are closed or promoted (see the class
   * comment). One lock for all threads: an uncontended monitor is ~5 ns, and the
   * critical section is two array stores.
   */
  static final class Nursery {
    private static final int CAPACITY = 1024;
    private static final Object[] OWNERS = new Object[CAPACITY];
    private static final NativeHandle[] HANDLES = new NativeHandle[CAPACITY];
    private static int size;

    static {
      armSentinel();
    }

    private Nursery() {}

    static synchronized void add(Object owner, NativeHandle handle) {
      if (size == CAPACITY) promoteAll();
      OWNERS[size] = owner;
      HANDLES[size] = handle;
      size++;
    }

    /** Registers every open handle of the nursery with the Cleaner and empties it. */
    static synchronized void promoteAll() {
      for (int i = 0; i < size; i++) {
        HANDLES[i].promote(OWNERS[i]);
        OWNERS[i] = null;
        HANDLES[i] = null;
      }
      size = 0;
    }

    /** An object nothing references: the next GC collects it, the Cleaner runs
     *  the action, which empties the nursery and arms the next sentinel. */
    private static void armSentinel() {
      CLEANER.register(new Object(), () -> {
        promoteAll();
        armSentinel();
      });
    }

    static synchronized int size() {
      return size;
    }
  }

  /** Empties the nursery now (tests; a leak is then reported by the next GC). */
  static void promoteTracked() {
    Nursery.promoteAll();
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
