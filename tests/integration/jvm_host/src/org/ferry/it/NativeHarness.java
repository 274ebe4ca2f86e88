package org.ferry.it;

/**
 * The JNI helper of the JVM host (native/ferry_it_jvm_host.c): it opens the
 * plugins that {@link JvmHost} has already System.load()ed and runs one
 * handoff with the same C assertions as the C host (tests/integration/host:
 * release ledger, stream watch, allocation baselines). Only strings, ints and
 * booleans cross this boundary.
 */
final class NativeHarness {
  private NativeHarness() {}

  /** Checks the matrix preconditions (sim strict mode); null or the reason. */
  static native String init();

  /** dlopens the plugin at path (already loaded by System.load) and resolves
   * its six entry points; returns the runtime's index, or -1 (see problem). */
  static native int open(String name, String path);

  /** Why the last open failed. */
  static native String problem();

  /** One array handoff from runtime p to runtime c: null when every
   * assertion holds, else the first problem. rejectWord is "" for a normal
   * case; tamper runs the tamper witness (the consumer must fail). */
  static native String runArray(int p, int c, String spec, String rejectWord, boolean tamper);

  /** The same for a stream handoff. */
  static native String runStream(int p, int c, String spec, String rejectWord, boolean tamper);

  /** Witness counters: sim pending, sim ready, tampered, structs tracked. */
  static native long[] witnesses();

  /** The tamper cases of the C host, so both hosts run the same witness. */
  static native String tamperCase(boolean stream);
}
