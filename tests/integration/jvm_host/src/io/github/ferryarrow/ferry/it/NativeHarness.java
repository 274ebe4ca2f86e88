package io.github.ferryarrow.ferry.it;

/**
 * The JNI helper of the JVM host (native/ferry_it_jvm_host.c): the C harness
 * (core/harness) and the C host's handoff assertions (tests/integration/host:
 * release watch, stream watch, allocation ledger), driven from Java. The list of
 * runtimes and the case list come from the harness too, so both hosts run the
 * same runtimes and cases. Only strings, ints and booleans cross this boundary.
 */
final class NativeHarness {
  private NativeHarness() {}

  /** Checks the matrix preconditions (sim strict mode); null or the reason. */
  static native String init();

  /** The runtimes in load order (core/harness/runtimes.def). */
  static native String[] runtimes();

  /** dlopens the plugin at path (already loaded by System.load) and resolves
   * its six entry points; returns the runtime's index, or -1 (see problem). */
  static native int open(String name, String path);

  /** Why the last open failed. */
  static native String problem();

  /** Adds every case of a case file (tests/integration/cases.txt syntax); null
   * or why it cannot. */
  static native String addCaseFile(String file);

  /** Adds one case line ("CASE", "reject WORD CASE", "thread CASE"); null or why. */
  static native String addCase(String line);

  /** The number of cases added. */
  static native int caseCount();

  /** "reject int32:lenght=3": case {@code index} as the C host prints it; -1 is the
   * tamper witness of the kind. */
  static native String describeCase(int index, boolean stream);

  /** One handoff of case {@code index} (-1: the tamper witness, where the consumer
   * must fail) from runtime p to runtime c: null when every assertion holds, else the
   * first problem. */
  static native String run(int p, int c, int index, boolean stream);

  /** Witness counters: sim pending, sim ready, tampered, structs tracked. */
  static native long[] witnesses();
}
