package io.github.ferryarrow.ferry.it;

import io.github.ferryarrow.ferry.DeviceType;
import io.github.ferryarrow.ferry.FerryException;

/**
 * One parsed case string of the cross-language tests (docs/cases.md):
 * {@code TYPE(:KEY=VALUE)*}. Parsing never throws anything but FerryException(EINVAL)
 * with a message naming the offending part.
 */
final class Case {
  /** The TYPE words, in the order of cases.md. */
  enum Type {
    INT8("int8", "c", 1), INT16("int16", "s", 2), INT32("int32", "i", 4),
    INT64("int64", "l", 8), UINT8("uint8", "C", 1), UINT16("uint16", "S", 2),
    UINT32("uint32", "I", 4), UINT64("uint64", "L", 8), FLOAT32("float32", "f", 4),
    FLOAT64("float64", "g", 8), BOOL("bool", "b", 0), UTF8("utf8", "u", 0),
    BINARY("binary", "z", 0), LIST_INT32("list_int32", "+l", 0),
    STRUCT_INT32_UTF8("struct_int32_utf8", "+s", 0), DICT_INT32_UTF8("dict_int32_utf8", "i", 4);

    final String word;
    final String format;
    /** Bytes per value of fixed-width primitives, 0 otherwise. */
    final int width;

    Type(String word, String format, int width) {
      this.word = word;
      this.format = format;
      this.width = width;
    }
  }

  /** CONSUMER (fail=consumer@N) is the async checking consumer's: the
   *  synchronous entry points accept and ignore it, as window and cancel. */
  enum Fail { NONE, EXPORT, GET_NEXT, GET_SCHEMA, CONSUMER }

  /** Length and offset are each, and together, at most this many slots. */
  static final long MAX_SLOTS = 1L << 28;

  final String spec;
  Type type = Type.INT32;
  long length = 16;
  long nulls;
  long seed = 1;
  long offset;
  String deviceName = "cpu";
  int deviceType = DeviceType.CPU;
  long batches = 3;
  Fail fail = Fail.NONE;
  long failAt;
  /** Async streams only (parsed and checked, used by the async checker). */
  long window = 1;
  long cancel;

  private Case(String spec) {
    this.spec = spec;
  }

  static Case parse(String spec) {
    if (spec == null) throw invalid("case string is null");
    Case c = new Case(spec);
    String[] parts = spec.split(":", -1);
    c.type = null;
    for (Type t : Type.values()) {
      if (t.word.equals(parts[0])) c.type = t;
    }
    if (c.type == null) {
      throw invalid("unknown type \"" + parts[0] + "\" in case \"" + spec + "\"");
    }
    java.util.Set<String> seen = new java.util.HashSet<>();
    for (int i = 1; i < parts.length; i++) {
      String pair = parts[i];
      int eq = pair.indexOf('=');
      if (eq <= 0) throw invalid("malformed KEY=VALUE \"" + pair + "\" in case \"" + spec + "\"");
      String key = pair.substring(0, eq);
      String value = pair.substring(eq + 1);
      if (!seen.add(key) && isKnownKey(key)) {
        throw invalid("duplicate key \"" + key + "\" in case \"" + spec + "\"");
      }
      switch (key) {
        case "length" -> c.length = number(key, value, MAX_SLOTS, spec);
        case "nulls" -> c.nulls = number(key, value, Long.MAX_VALUE, spec);
        case "seed" -> c.seed = number(key, value, 0xFFFFFFFFL, spec);
        case "offset" -> c.offset = number(key, value, MAX_SLOTS, spec);
        case "device" -> c.parseDevice(value);
        case "batches" -> c.batches = number(key, value, Long.MAX_VALUE, spec);
        case "fail" -> c.parseFail(value);
        case "window" -> {
          c.window = number(key, value, Long.MAX_VALUE, spec);
          if (c.window == 0) {
            throw invalid("window=0 in case \"" + spec + "\": a consumer must request at "
                + "least 1 batch");
          }
        }
        case "cancel" -> c.cancel = number(key, value, Long.MAX_VALUE, spec);
        default -> throw invalid("unknown key \"" + key + "\" in case \"" + spec + "\"");
      }
    }
    if (c.length + c.offset > MAX_SLOTS) {
      throw invalid("length " + c.length + " plus offset " + c.offset + " exceeds " + MAX_SLOTS
          + " slots in case \"" + spec + "\"");
    }
    return c;
  }

  private static boolean isKnownKey(String key) {
    return java.util.List.of("length", "nulls", "seed", "offset", "device", "batches", "fail",
        "window", "cancel").contains(key);
  }

  /** A decimal number in [0, max]; no sign, no spaces. */
  private static long number(String key, String value, long max, String spec) {
    if (value.isEmpty()) {
      throw invalid("malformed number \"\" for key \"" + key + "\" in case \"" + spec + "\"");
    }
    long result = 0;
    for (int i = 0; i < value.length(); i++) {
      char ch = value.charAt(i);
      if (ch < '0' || ch > '9') {
        throw invalid("malformed number \"" + value + "\" for key \"" + key + "\" in case \""
            + spec + "\"");
      }
      int d = ch - '0';
      if (result > (max - d) / 10) {
        throw invalid(key + " \"" + value + "\" out of range (0 to " + max + ") in case \""
            + spec + "\"");
      }
      result = result * 10 + d;
    }
    return result;
  }

  private void parseDevice(String value) {
    deviceType = switch (value) {
      case "cpu" -> DeviceType.CPU;
      case "sim" -> DeviceType.SIM;
      case "cuda" -> DeviceType.CUDA;
      case "rocm" -> DeviceType.ROCM;
      default -> throw invalid("unknown device \"" + value + "\" in case \"" + spec
          + "\" (expected cpu, sim, cuda or rocm)");
    };
    deviceName = value;
  }

  private void parseFail(String value) {
    if (value.equals("export")) {
      fail = Fail.EXPORT;
    } else if (value.equals("get_schema")) {
      fail = Fail.GET_SCHEMA;
    } else if (value.startsWith("get_next@") || value.startsWith("consumer@")) {
      String mode = value.substring(0, value.indexOf('@'));
      boolean getNext = mode.equals("get_next");
      failAt = number("fail=" + mode + "@N", value.substring(mode.length() + 1), Long.MAX_VALUE,
          spec);
      if (failAt == 0) {
        throw invalid("fail=" + mode + "@0 in case \"" + spec + "\": N counts "
            + (getNext ? "get_next calls " : "") + "from 1");
      }
      fail = getNext ? Fail.GET_NEXT : Fail.CONSUMER;
    } else {
      throw invalid("unknown fail mode \"" + value + "\" in case \"" + spec
          + "\" (expected export, get_next@N, get_schema or consumer@N)");
    }
  }

  /** The device id used for this case's device: -1 on the CPU, 0 elsewhere. */
  long deviceId() {
    return deviceType == DeviceType.CPU ? -1 : 0;
  }

  /** Whether logical element i is null. */
  boolean isNull(long i) {
    return nulls > 0 && i % nulls == nulls - 1;
  }

  /** The exact null count of the top-level array. */
  long nullCount() {
    return nulls == 0 ? 0 : length / nulls;
  }

  static FerryException invalid(String message) {
    return new FerryException(FerryException.EINVAL, message);
  }
}
