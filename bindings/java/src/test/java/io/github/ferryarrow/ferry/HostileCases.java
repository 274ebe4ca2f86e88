package io.github.ferryarrow.ferry;

import io.github.ferryarrow.ferry.arrow.ArrowJava;
import io.github.ferryarrow.ferry.jni.FerryNative;
import io.github.ferryarrow.ferry.jni.Testing;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.Locale;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.ipc.ArrowReader;

/**
 * Hostile producers (src/test/c/ferry_jni_hostile.c) through every public import
 * path of the binding: arrays (DeviceArray.importFrom at each validation level,
 * the views, validate and findings, the Arrow Java bridge) and streams (next,
 * nextOn, the cursor, the Arrow Java reader). Each lie must come back as a
 * FerryException carrying the validator's message (or, read without validation,
 * as an exception at the accessor that meets it), never a crash; every node is
 * released exactly once. Shared by HostileTest and, in a child JVM whose stderr
 * must stay empty, HostileProbe. Each method throws AssertionError on a failure.
 */
final class HostileCases {
  private HostileCases() {}

  /** One hostile array case of the C table. */
  record Case(int index, String name, String needle, boolean fullOnly) {}

  static List<Case> cases() {
    int n = Testing.hostileCaseCount();
    Case[] out = new Case[n];
    for (int k = 0; k < n; k++) {
      String[] parts = Testing.hostileCase(k).split("\u001f", -1);
      out[k] = new Case(k, parts[0], parts[1], parts[2].equals("1"));
    }
    return List.of(out);
  }

  static void check(boolean condition, String message) {
    if (!condition) throw new AssertionError(message);
  }

  /** A FerryException (EINVAL, or ENODEV for a device ferry does not know) whose
   *  message mentions the needle. */
  static void checkMentions(RuntimeException e, String needle, String what) {
    check(e instanceof FerryException, what + ": " + e + " is not a FerryException");
    FerryException f = (FerryException) e;
    check(f.code() == FerryException.EINVAL || f.code() == FerryException.ENODEV,
        what + ": code " + f.codeName() + " (" + f.getMessage() + ")");
    check(f.getMessage().toLowerCase(Locale.ROOT).contains(needle.toLowerCase(Locale.ROOT)),
        what + ": \"" + f.getMessage() + "\" does not mention \"" + needle + "\"");
  }

  static RuntimeException thrown(Runnable body, String what) {
    try {
      body.run();
    } catch (RuntimeException e) {
      return e;
    }
    throw new AssertionError(what + ": accepted, expected an error");
  }

  /** Nothing hostile is live and nothing was released twice; frees the nodes. */
  static void checkAllReleased(String what) {
    check(Testing.hostileReleasedAgain() == 0, what + ": a node was released twice");
    check(Testing.hostileLive() == 0, what + ": " + Testing.hostileLive() + " nodes not released");
    Testing.hostileReset();
  }

  /** The producer's structs of case k (heap), and their cleanup. */
  private static final class Structs implements AutoCloseable {
    final long schema = FerryNative.ferry_schema_new();
    final long array = FerryNative.ferry_device_array_new();

    Structs(int k) {
      Testing.hostileArray(k, schema, array);
    }

    Structs() {
      Testing.hostileHugeArray(schema, array);
    }

    @Override
    public void close() {
      FerryNative.ferry_schema_free(schema); // releases whatever was not moved out
      FerryNative.ferry_device_array_free(array);
    }
  }

  /** Reads every buffer, child and dictionary of {@code view} through the public
   *  accessors (to {@code depth} levels), stopping at the first exception. */
  static void readAll(ArrayView view, int depth) {
    view.schema().format();
    for (int i = 0; i < view.bufferCount(); i++) {
      ByteBuffer b = view.buffer(i);
      if (b != null && b.capacity() > 0) b.get(b.capacity() - 1);
    }
    if (depth == 0) return;
    for (int i = 0; i < view.childCount(); i++) readAll(view.child(i), depth - 1);
    ArrayView dictionary = view.dictionary();
    if (dictionary != null) readAll(dictionary, depth - 1);
  }

  static void arrayCase(Case c, BufferAllocator allocator) {
    String what = c.name();
    if (!c.fullOnly()) {
      // The default import refuses it with the validator's finding.
      try (Structs s = new Structs(c.index())) {
        RuntimeException e = thrown(() -> DeviceArray.importFrom(s.array, s.schema).close(),
            what + ": importFrom");
        checkMentions(e, c.needle(), what + ": importFrom");
      }
      checkAllReleased(what + ": importFrom");
      // Trusted (NONE): validation reports it, the accessors never read past
      // what the array declares, and Arrow Java never sees it.
      try (Structs s = new Structs(c.index());
          DeviceArray a = DeviceArray.importFrom(s.array, s.schema, Validation.NONE)) {
        List<Finding> findings = a.findings(Validation.DEFAULT);
        check(!findings.isEmpty(), what + ": no finding");
        check(findings.stream().anyMatch(f -> f.toString().toLowerCase(Locale.ROOT)
            .contains(c.needle().toLowerCase(Locale.ROOT))), what + ": findings " + findings);
        checkMentions(thrown(() -> a.validate(Validation.DEFAULT), what + ": validate"),
            c.needle(), what + ": validate");
        try {
          readAll(a.root(), 3);
        } catch (FerryException | IndexOutOfBoundsException | ArithmeticException e) {
          // the accessor that met the lie said so
        }
        RuntimeException e = thrown(() -> ArrowJava.toVector(a, allocator).close(),
            what + ": ArrowJava.toVector");
        check(e instanceof FerryException, what + ": toVector threw " + e);
      }
      checkAllReleased(what + ": trusted import");
    } else {
      // A content lie: structure is fine, FULL finds it.
      try (Structs s = new Structs(c.index());
          DeviceArray a = DeviceArray.importFrom(s.array, s.schema)) {
        checkMentions(thrown(() -> a.validate(Validation.FULL), what + ": validate(FULL)"),
            c.needle(), what + ": validate(FULL)");
        check(!a.findings(Validation.FULL).isEmpty(), what + ": no FULL finding");
        RuntimeException e = thrown(() -> ArrowJava.toVector(a, allocator).close(),
            what + ": ArrowJava.toVector");
        checkMentions(e, c.needle(), what + ": toVector");
        check(e.getMessage().startsWith("the array fails validation: "), what + ": " + e);
        check(!a.isClosed(), what + ": a refused toVector leaves the array open");
      }
      checkAllReleased(what + ": content lie");
      try (Structs s = new Structs(c.index())) {
        checkMentions(thrown(() -> DeviceArray.importFrom(s.array, s.schema, Validation.FULL),
            what + ": importFrom(FULL)"), c.needle(), what + ": importFrom(FULL)");
      }
      checkAllReleased(what + ": importFrom(FULL)");
    }
  }

  /** int32 of 2^62 elements: its byte size overflows int64; nothing reads it. */
  static void hugeArray() {
    try (Structs s = new Structs()) {
      DeviceArray a;
      try {
        a = DeviceArray.importFrom(s.array, s.schema);
      } catch (FerryException e) {
        checkMentions(e, "overflow", "2^62 int32: importFrom");
        checkAllReleased("2^62 int32");
        return;
      }
      try (a) {
        checkMentions(thrown(() -> a.buffer(1), "2^62 int32: buffer(1)"), "int64",
            "2^62 int32: buffer(1)");
      }
    }
    checkAllReleased("2^62 int32");
  }

  /** Every kind of hostile stream through next, nextOn and the cursor. */
  static void streams(BufferAllocator allocator) {
    String[] needles = {"released schema", "device type", "buffer", "the hostile producer broke",
        "format", "offset"};
    // A producer breaking the protocol (a released schema on success) is the
    // core's EIO, like a failing producer; a malformed answer is EINVAL.
    int[] codes = {FerryException.EIO, FerryException.EINVAL, FerryException.EINVAL,
        FerryException.EIO, FerryException.EINVAL, FerryException.EINVAL};
    for (int kind = 0; kind < Testing.hostileStreamCount(); kind++) {
      String what = "stream kind " + kind;
      String needle = needles[kind];
      boolean contentLie = kind == 5;
      int expectedCode = codes[kind];
      for (int path = 0; path < 3; path++) {
        long address = FerryNative.ferry_array_stream_new();
        Testing.hostileStream(kind, address);
        Validation level = contentLie ? Validation.FULL : Validation.DEFAULT;
        final int p = path;
        try (DeviceArrayStream s = DeviceArrayStream.importFrom(address, level)) {
          RuntimeException e = thrown(() -> {
            if (p == 0) {
              s.next().close();
            } else if (p == 1) {
              s.nextOn(0).close();
            } else {
              try (DeviceArrayStream.Cursor cursor = s.cursor()) {
                cursor.advance();
              }
            }
          }, what + " path " + p);
          check(e instanceof FerryException, what + " path " + p + ": " + e);
          FerryException f = (FerryException) e;
          check(f.code() == expectedCode, what + " path " + p + ": " + f);
          check(f.getMessage().contains(needle), what + " path " + p + ": \"" + f.getMessage()
              + "\" does not mention \"" + needle + "\"");
        } finally {
          FerryNative.ferry_array_stream_free(address);
        }
        checkAllReleased(what + " path " + path);
      }
    }
    // The content lie through Arrow Java's reader: validated before Arrow reads it.
    long address = FerryNative.ferry_array_stream_new();
    Testing.hostileStream(5, address);
    try (DeviceArrayStream s = DeviceArrayStream.importFrom(address);
        ArrowReader reader = ArrowJava.toReader(s, allocator)) {
      try {
        reader.loadNextBatch();
        throw new AssertionError("the reader loaded a batch with decreasing offsets");
      } catch (IOException e) {
        check(e.getMessage().contains("the array fails validation"), "reader: " + e);
      }
    } catch (IOException e) {
      throw new AssertionError(e);
    } finally {
      FerryNative.ferry_array_stream_free(address);
    }
    checkAllReleased("the Arrow reader");
  }

  /** Everything above. */
  static void runAll() {
    try (BufferAllocator allocator = new RootAllocator()) {
      for (Case c : cases()) arrayCase(c, allocator);
      hugeArray();
      streams(allocator);
    }
  }
}
