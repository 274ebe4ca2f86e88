package io.github.ferryarrow.ferry;

/** Run in a child JVM by HostileTest: every hostile case, so that the parent can
 *  check that nothing at all reached stderr (fd 2, native writes included). */
public final class HostileProbe {
  private HostileProbe() {}

  public static void main(String[] args) {
    HostileCases.runAll();
    System.out.println("hostile cases: all passed");
  }
}
