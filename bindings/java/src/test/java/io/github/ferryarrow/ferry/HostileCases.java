package io.github.ferryarrow.ferry;

import io.github.ferryarrow.ferry.arrow.ArrowJava;
import io.github.ferryarrow.ferry.jni.FerryNative;
import io.github.ferryarrow.ferry.jni.Testing;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.function.Function;
import java.util.function.IntFunction;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.ipc.ArrowReader;

/**
 * Hostile producers (the catalogue of tests/hostile, the one library every
 * binding's hostile suite loads) through every public import
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

  /** What a consumer must do with a case (ferry_hostile.h). */
  static final int REFUSED = 0;
  static final int FULL = 1;
  static final int READER = 2;
  /** Flag: the lie is about what nobody reads; the values read fine. */
  static final int READABLE = 1;

  /** One array case of the catalogue: its name, what a consumer must do, and
   *  the finding ("rule: where" and a part of the message). */
  record Case(String name, int kind, int flags, String where, String needle) {}

  static List<Case> cases() {
    return catalogue(Testing.hostileCaseCount(), Testing::hostileCase,
        parts -> new Case(parts[0], Integer.parseInt(parts[1]), Integer.parseInt(parts[2]),
            parts[3], parts[4]));
  }

  /** One stream case: where the lie is met (0 get_schema, n the n-th pull),
   *  the validation level that finds it, the errno and a part of the message. */
  record StreamCase(String name, int at, int level, int code, String needle) {}

  static List<StreamCase> streamCases() {
    return catalogue(Testing.hostileStreamCount(), Testing::hostileStreamCase,
        parts -> new StreamCase(parts[0], Integer.parseInt(parts[1]), Integer.parseInt(parts[2]),
            Integer.parseInt(parts[3]), parts[4]));
  }

  /** The n entries of a catalogue, each read from its one string (fields joined
   *  by U+001F) by {@code make}. */
  private static <T> List<T> catalogue(int n, IntFunction<String> entry,
      Function<String[], T> make) {
    List<T> out = new ArrayList<>(n);
    for (int k = 0; k < n; k++) {
      out.add(make.apply(entry.apply(k).split("\u001f", -1)));
    }
    return List.copyOf(out);
  }

  static void check(boolean condition, String message) {
    if (!condition) throw new AssertionError(message);
  }

  /** A FerryException (EINVAL, or ENODEV for a device ferry does not know) whose
   *  message mentions the case's finding: its "rule: where" and its needle. */
  static void checkFinding(RuntimeException e, Case c, String what) {
    checkMentions(e, c.where(), what);
    checkMentions(e, c.needle(), what);
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

  /** The producer's structs of case {@code name} (heap), and their cleanup. */
  private static final class Structs implements AutoCloseable {
    final long schema = FerryNative.ferry_schema_new();
    final long array = FerryNative.ferry_device_array_new();

    Structs(String name) {
      check(Testing.hostileArray(name, schema, array) == 0, name + ": not in the catalogue");
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
    if (c.kind() == REFUSED) {
      // The default import refuses it with the validator's finding.
      try (Structs s = new Structs(c.name())) {
        RuntimeException e = thrown(() -> DeviceArray.importFrom(s.array, s.schema).close(),
            what + ": importFrom");
        checkFinding(e, c, what + ": importFrom");
      }
      checkAllReleased(what + ": importFrom");
      // Trusted (NONE): validation reports it, the accessors never read past
      // what the array declares, and Arrow Java never sees it.
      try (Structs s = new Structs(c.name());
          DeviceArray a = DeviceArray.importFrom(s.array, s.schema, Validation.NONE)) {
        List<Finding> findings = a.findings(Validation.DEFAULT);
        check(!findings.isEmpty(), what + ": no finding");
        check(findings.stream().anyMatch(f -> f.toString().contains(c.needle())),
            what + ": findings " + findings);
        checkFinding(thrown(() -> a.validate(Validation.DEFAULT), what + ": validate"), c,
            what + ": validate");
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
    } else if (c.kind() == FULL) {
      // A content lie: structure is fine, FULL finds it.
      try (Structs s = new Structs(c.name());
          DeviceArray a = DeviceArray.importFrom(s.array, s.schema)) {
        checkFinding(thrown(() -> a.validate(Validation.FULL), what + ": validate(FULL)"), c,
            what + ": validate(FULL)");
        check(!a.findings(Validation.FULL).isEmpty(), what + ": no FULL finding");
        RuntimeException e = thrown(() -> ArrowJava.toVector(a, allocator).close(),
            what + ": ArrowJava.toVector");
        checkFinding(e, c, what + ": toVector");
        check(e.getMessage().startsWith("the array fails validation: "), what + ": " + e);
        check(!a.isClosed(), what + ": a refused toVector leaves the array open");
      }
      checkAllReleased(what + ": content lie");
      try (Structs s = new Structs(c.name())) {
        checkFinding(thrown(() -> DeviceArray.importFrom(s.array, s.schema, Validation.FULL),
            what + ": importFrom(FULL)"), c, what + ": importFrom(FULL)");
      }
      checkAllReleased(what + ": importFrom(FULL)");
    } else {
      // A length no buffer can back: DEFAULT cannot tell (no sizes travel on
      // the CPU), so the accessors refuse it instead of reading.
      try (Structs s = new Structs(c.name());
          DeviceArray a = DeviceArray.importFrom(s.array, s.schema)) {
        RuntimeException e = thrown(() -> readAll(a.root(), 1), what + ": readAll");
        check(e instanceof FerryException || e instanceof IndexOutOfBoundsException
            || e instanceof ArithmeticException, what + ": readAll threw " + e);
      }
      checkAllReleased(what + ": reader");
    }
  }

  /** int32 of 2^62 elements: its byte size overflows int64; the import says so. */
  static void hugeArray() {
    try (Structs s = new Structs("int32_huge")) {
      checkMentions(thrown(() -> DeviceArray.importFrom(s.array, s.schema).close(),
          "2^62 int32: importFrom"), "overflow", "2^62 int32: importFrom");
    }
    checkAllReleased("2^62 int32");
  }

  /** Pulls one batch of {@code s} the way {@code path} says (0 next, 1 nextOn, 2 the
   *  cursor); false at the end of the stream. */
  private static boolean pull(DeviceArrayStream s, DeviceArrayStream.Cursor cursor, int path) {
    if (path == 0) {
      DeviceArray batch = s.next();
      if (batch == null) return false;
      batch.close();
      return true;
    } else if (path == 1) {
      DeviceArray batch = s.nextOn(0);
      if (batch == null) return false;
      batch.close();
      return true;
    }
    return cursor.advance();
  }

  /** Every hostile stream of the catalogue through next, nextOn and the cursor:
   *  the pull where the catalogue says fails with its errno and message. */
  static void streams(BufferAllocator allocator) {
    for (StreamCase c : streamCases()) {
      for (int path = 0; path < 3; path++) {
        String what = "stream " + c.name() + " path " + path;
        long address = FerryNative.ferry_array_stream_new();
        check(Testing.hostileStream(c.name(), address) == 0, what + ": not in the catalogue");
        Validation level = c.level() == 1 ? Validation.FULL : Validation.DEFAULT;
        final int p = path;
        int[] pulls = {0};
        try (DeviceArrayStream s = DeviceArrayStream.importFrom(address, level)) {
          RuntimeException e = thrown(() -> {
            if (p == 2) {
              try (DeviceArrayStream.Cursor cursor = s.cursor()) {
                while (pulls[0]++ < 8 && pull(s, cursor, p)) {}
              }
            } else {
              while (pulls[0]++ < 8 && pull(s, null, p)) {}
            }
          }, what);
          check(e instanceof FerryException, what + ": " + e);
          FerryException f = (FerryException) e;
          // A lie in the schema is met by the first pull, or by the cursor's
          // creation (which reads the schema) before any.
          check(c.at() == 0 ? pulls[0] <= 1 : pulls[0] == c.at(),
              what + ": failed at pull " + pulls[0]);
          check(f.code() == c.code(), what + ": " + f);
          check(f.getMessage().contains(c.needle()), what + ": \"" + f.getMessage()
              + "\" does not mention \"" + c.needle() + "\"");
        } finally {
          FerryNative.ferry_array_stream_free(address);
        }
        checkAllReleased(what);
      }
    }
    // The content lie through Arrow Java's reader: validated before Arrow reads it.
    long address = FerryNative.ferry_array_stream_new();
    check(Testing.hostileStream("content_lie", address) == 0, "content_lie");
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
