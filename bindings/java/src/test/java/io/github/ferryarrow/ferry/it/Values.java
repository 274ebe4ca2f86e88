package io.github.ferryarrow.ferry.it;

/** The value formula of docs/cases.md, on unsigned 32-bit integers held in longs. */
final class Values {
  private Values() {}

  /** u(i) = (seed * 2654435761 + i * 40503) mod 2^32. */
  static long u(long seed, long i) {
    return (seed * 2654435761L + i * 40503L) & 0xFFFFFFFFL;
  }

  /** int64 / uint64: (u(i) << 32) | u(i + 1). */
  static long wide(long seed, long i) {
    return (u(seed, i) << 32) | u(seed, i + 1);
  }

  static float float32(long seed, long i) {
    return (float) (short) (u(seed, i) & 0xFFFF) / 4;
  }

  static double float64(long seed, long i) {
    return (double) (int) u(seed, i) / 1024;
  }

  static boolean bool(long seed, long i) {
    return (u(seed, i) & 1) == 1;
  }

  /** The utf8 / binary value: "" when i % 5 == 0, else u(i) mod 100000 in decimal. */
  static String text(long seed, long i) {
    return i % 5 == 0 ? "" : Long.toString(u(seed, i) % 100000);
  }

  /** Number of elements of list i. */
  static int listSize(long seed, long i) {
    return (int) (u(seed, i) % 4);
  }

  /** Dictionary index of element i. */
  static int dictIndex(long seed, long i) {
    return (int) (u(seed, i) % 7);
  }
}
