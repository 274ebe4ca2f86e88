package io.github.ferryarrow.ferry;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.lang.ref.Cleaner;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import java.util.function.LongConsumer;
import io.github.ferryarrow.ferry.jni.FerryNative;

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
 * made. So a new handle first enters a <i>nursery</i> (a per-thread ring) that
 * holds its owner strongly: an owner in the nursery cannot become unreachable, so
 * no leak can go unnoticed there. A ring is emptied when it is full and all rings
 * after every garbage collection (a sentinel registered with the Cleaner dies in
 * every GC and re-arms itself); only the handles still open at that point get a
 * Cleaner registration. A handle closed before then costs a thread-local lookup
 * and an array store instead. The price: a leaked owner is reported (and its
 * memory freed) one GC later than with an immediate registration.
 */
public final class NativeHandle implements AutoCloseable, Schema.Owner {
  private static final Cleaner CLEANER = Cleaner.create();
  private static final AtomicLong LEAKS = new AtomicLong();
  private static final System.Logger LOG = System.getLogger("io.github.ferryarrow.ferry");
  private static final VarHandle ADDRESS;
  private static final VarHandle GUARD;
  private static final VarHandle NURSERY_OWNER;
  /** The guard's bit set by {@link #lockExclusive()}: no new reader gets in. */
  private static final int EXCLUSIVE = 1 << 30;
  private static volatile Consumer<String> leakListener;
  /** FERRY_LEAK_REPORT set (non-empty, not "0"; the core's rule): imports register
   *  with the core's leak report (ferry_leak_track), which names at exit what is
   *  still open. Read once; off, no native call is made. */
  static final boolean LEAK_REPORT = leakReportRequested();

  static {
    try {
      MethodHandles.Lookup lookup = MethodHandles.lookup();
      ADDRESS = lookup.findVarHandle(NativeHandle.class, "address", long.class);
      GUARD = lookup.findVarHandle(NativeHandle.class, "guard", int.class);
      NURSERY_OWNER = lookup.findVarHandle(NativeHandle.class, "nurseryOwner", Object.class);
    } catch (ReflectiveOperationException e) {
      throw new ExceptionInInitializerError(e);
    }
  }

  /** The owned address; 0 once freed or given away. Swapped atomically, so the
   *  free action runs exactly once whoever (close, the Cleaner) gets there first. */
  private volatile long address;
  /** Readers in flight ({@link #enter()}, low bits) and {@link #EXCLUSIVE}: a
   *  close or a move out sets the bit, then waits (on this object's monitor)
   *  until the readers have left, so nothing is freed under a reader. */
  private volatile int guard;
  private final LongConsumer free;
  private final String what;
  /** The core's leak-report token (0 when not tracked); dropped when the address
   *  is taken (released, moved out or freed by the safety net). */
  private volatile long leakToken;
  /** Set when the nursery registered this handle with the Cleaner. */
  private volatile Cleaner.Cleanable cleanable;
  /** The owner, held strongly while this handle is in the nursery (null after).
   *  Written before the handle is published to the ring (release), taken with a
   *  CAS. */
  private Object nurseryOwner;

  /** Takes ownership of {@code address}; {@code free} runs exactly once with it. */
  public NativeHandle(Object owner, long address, LongConsumer free, String what) {
    // A plain store: a volatile one costs a full fence, and the handle is
    // published (ring: release store; owner: the caller) only after this.
    ADDRESS.set(this, address);
    this.free = free;
    this.what = what;
    this.nurseryOwner = owner;
    Nursery.add(this);
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

  /**
   * Starts a read of the owned memory: returns the address, which stays valid
   * (not freed, not moved out) until the matching {@link #exit()}; throws
   * IllegalStateException naming the object once it is closed or being closed.
   * Many readers may be inside at once; close waits for them.
   */
  @Override
  public long enter() {
    for (;;) {
      int g = guard;
      if ((g & EXCLUSIVE) != 0) throw new IllegalStateException(what + " is closed");
      if (GUARD.compareAndSet(this, g, g + 1)) break;
    }
    long a = address;
    if (a == 0) { // given away by a path that does not take the guard (the Cleaner)
      exit();
      throw new IllegalStateException(what + " is closed");
    }
    return a;
  }

  /** Ends a read started by {@link #enter()}; the last reader out wakes a
   *  waiting close. */
  @Override
  public void exit() {
    int g = (int) GUARD.getAndAdd(this, -1) - 1;
    if (g == EXCLUSIVE) {
      synchronized (this) {
        notifyAll();
      }
    }
  }

  /**
   * Takes the object for a close or a move out: refuses new readers, waits for
   * those inside to leave and returns the address. Throws IllegalStateException
   * when it is already closed or taken. Follow with {@link #closeExclusive()} or,
   * when the move out failed and the object stays open, {@link #unlockExclusive()}.
   */
  long lockExclusive() {
    if (!tryLockExclusive()) throw new IllegalStateException(what + " is closed");
    long a = address;
    if (a == 0) throw new IllegalStateException(what + " is closed");
    return a;
  }

  private boolean tryLockExclusive() {
    for (;;) {
      int g = guard;
      if ((g & EXCLUSIVE) != 0) return false;
      if (GUARD.compareAndSet(this, g, g | EXCLUSIVE)) break;
    }
    if (guard != EXCLUSIVE) { // readers inside: wait for the last one's notify
      boolean interrupted = false;
      synchronized (this) {
        while (guard != EXCLUSIVE) {
          try {
            wait();
          } catch (InterruptedException e) {
            interrupted = true; // a close must finish; the interrupt is kept
          }
        }
      }
      if (interrupted) Thread.currentThread().interrupt();
    }
    return true;
  }

  /** Reopens after {@link #lockExclusive()} (the move out failed). */
  void unlockExclusive() {
    GUARD.getAndAdd(this, -EXCLUSIVE);
  }

  /** Frees (or, after a move out, frees what is left) while holding the object
   *  exclusively; it stays closed. */
  void closeExclusive() {
    long a = take();
    if (a != 0) free.accept(a);
    dropRegistration();
  }

  private long take() {
    long a = (long) ADDRESS.getAndSet(this, 0L);
    if (a != 0) {
      long token = leakToken; // only the one taker gets here
      if (token != 0) {
        leakToken = 0;
        FerryNative.ferry_leak_untrack(token);
      }
    }
    return a;
  }

  private static boolean leakReportRequested() {
    String v = System.getenv("FERRY_LEAK_REPORT");
    return v != null && !v.isEmpty() && !v.equals("0");
  }

  /** Registers this open handle with the core's leak report (when FERRY_LEAK_REPORT
   *  is set), described as {@code description}; untracked when the address is
   *  taken. Call once, right after construction. */
  void trackLeak(java.util.function.Supplier<String> description) {
    if (!LEAK_REPORT || address == 0) return;
    leakToken = FerryNative.ferry_leak_track("java", description.get());
    // A close on another thread between the check and the store did not see the
    // token: forget it here.
    if (address == 0) {
      long token = leakToken;
      leakToken = 0;
      if (token != 0) FerryNative.ferry_leak_untrack(token);
    }
  }

  /** Frees now, after waiting for readers inside {@link #enter()} (a no-op the
   *  second time, also while the first close still waits). */
  @Override
  public void close() {
    if (tryLockExclusive()) closeExclusive();
  }

  /** Gives the address away without freeing it (after a move out). */
  long detach() {
    if (!tryLockExclusive()) return 0;
    long a = take();
    dropRegistration();
    return a;
  }

  private void dropRegistration() {
    Cleaner.Cleanable c = cleanable;
    if (c != null) c.clean(); // the leak action finds the address gone: nothing runs
  }

  /** Registers the owner with the Cleaner if the handle is still open; called by
   *  the nursery, at most once per handle (whoever takes {@code nurseryOwner}). */
  private void promote() {
    Object owner = NURSERY_OWNER.getAcquire(this);
    if (owner == null || !NURSERY_OWNER.compareAndSet(this, owner, null)) return;
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
      try {
        handle.free.accept(a);
      } finally {
        reportLeak(handle.what); // after the release, so a listener sees it done
      }
    }
  }

  /**
   * Holds new handles, and through them their owners, strongly until they are
   * promoted (see the class comment). One ring per thread, written only by that
   * thread with plain stores (no lock, no atomic: a lock here cost ~8 ns per
   * object). The flusher (the GC sentinel's action on the Cleaner thread) reads
   * every ring and clears a slot only with a compare-and-set against the handle
   * it promoted, so it never erases a newer entry of the owning thread; a
   * handle is promoted at most once (CAS on its nurseryOwner). Rings of exited
   * threads are flushed and dropped.
   */
  static final class Nursery {
    private static final int CAPACITY = 256;
    private static final VarHandle SLOT = MethodHandles.arrayElementVarHandle(NativeHandle[].class);
    private static final ThreadLocal<Ring> RING = ThreadLocal.withInitial(Nursery::newRing);
    private static final java.util.List<Ring> RINGS = new java.util.ArrayList<>();

    static {
      armSentinel();
    }

    private Nursery() {}

    private static final class Ring {
      final NativeHandle[] slots = new NativeHandle[CAPACITY];
      final Thread thread = Thread.currentThread();
      int size; // owning thread only
    }

    private static Ring newRing() {
      Ring r = new Ring();
      synchronized (RINGS) {
        RINGS.add(r);
      }
      return r;
    }

    static void add(NativeHandle handle) {
      Ring r = RING.get();
      if (r.size == CAPACITY) {
        flush(r);
        r.size = 0;
      }
      SLOT.setRelease(r.slots, r.size++, handle);
    }

    /** Promotes every handle of {@code r} still open and clears its slots. */
    private static void flush(Ring r) {
      NativeHandle[] slots = r.slots;
      for (int i = 0; i < CAPACITY; i++) {
        NativeHandle h = (NativeHandle) SLOT.getAcquire(slots, i);
        if (h == null) continue;
        h.promote();
        SLOT.compareAndSet(slots, i, h, null);
      }
    }

    /** Flushes every ring; drops the rings of exited threads. */
    static void promoteAll() {
      Ring[] rings;
      synchronized (RINGS) {
        rings = RINGS.toArray(new Ring[0]);
      }
      for (Ring r : rings) {
        boolean exited = !r.thread.isAlive(); // read before the flush: no add after
        flush(r);
        if (exited) {
          synchronized (RINGS) {
            RINGS.remove(r);
          }
        }
      }
    }

    /** Handles currently held (tests). */
    static int tracked() {
      Ring[] rings;
      synchronized (RINGS) {
        rings = RINGS.toArray(new Ring[0]);
      }
      int n = 0;
      for (Ring r : rings) {
        for (int i = 0; i < CAPACITY; i++) {
          if (SLOT.getAcquire(r.slots, i) != null) n++;
        }
      }
      return n;
    }

    /** An object nothing references: the next GC collects it, the Cleaner runs
     *  the action, which flushes the rings and arms the next sentinel. */
    private static void armSentinel() {
      CLEANER.register(new Object(), () -> {
        promoteAll();
        armSentinel();
      });
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
