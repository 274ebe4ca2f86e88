package io.github.ferryarrow.ferry;

/**
 * Static methods that ferry_jni_support.c calls from C (names and signatures are
 * looked up in JNI_OnLoad). Exceptions thrown here are caught by the C
 * trampoline and turned into an errno code plus message; none crosses a C frame.
 */
final class Upcalls {
  private static final System.Logger LOG = System.getLogger("io.github.ferryarrow.ferry");

  private Upcalls() {}

  /** Release hook of every Java export. */
  static void release(long handle) {
    try {
      HandleTable.release(handle);
    } catch (Throwable t) {
      // A release hook cannot fail in C: log and carry on.
      LOG.log(System.Logger.Level.WARNING, "ferry: release action of a Java export failed", t);
    }
  }

  /** get_schema of a Java stream: fills the ArrowSchema at {@code out}. */
  static int getSchema(long handle, long out) {
    StreamExporter.Record record = streamRecord(handle);
    ArrayExporter.exportSchema(record.schema(), out);
    return 0;
  }

  /** get_next of a Java stream: fills the ArrowDeviceArray at {@code out}, or
   *  leaves it released at the end. */
  static int getNext(long handle, long out) {
    streamRecord(handle).next(out);
    return 0;
  }

  /** Identity function for the C-to-Java call floor of the benchmark. */
  static long echo(long value) {
    return value;
  }

  private static StreamExporter.Record streamRecord(long handle) {
    Object entry = HandleTable.get(handle);
    if (!(entry instanceof StreamExporter.Record)) {
      throw new FerryException(FerryException.EINVAL, "unknown Java stream handle " + handle);
    }
    return (StreamExporter.Record) entry;
  }
}
