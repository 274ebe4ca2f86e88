package io.github.ferryarrow.ferry.it;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import io.github.ferryarrow.ferry.ArrayView;
import io.github.ferryarrow.ferry.DeviceArray;
import io.github.ferryarrow.ferry.DeviceType;
import io.github.ferryarrow.ferry.FerryException;
import io.github.ferryarrow.ferry.Schema;

/**
 * Checks that an imported array holds exactly a case (docs/cases.md): schema,
 * length, offset, exact null count, every validity bit, every non-null value,
 * children and dictionary, and the device. Device memory is brought to the host
 * with DeviceArray.toHost(), which waits on the producer's sync event first and
 * then moves what the CPU can reach (pinned, managed) or copies the rest. With
 * nulls=0 a validity bitmap may still be present (pyarrow keeps one on slices):
 * every bit in range must then be set.
 * Every mismatch is FerryException(EINVAL) saying where and what.
 */
final class CaseChecker {
  private CaseChecker() {}

  static void checkSchema(Case c, Schema schema, String where) {
    checkField(schema, c.type.format, c.type.word, where + "top-level");
    switch (c.type) {
      case LIST_INT32:
        expectChildren(schema, 1, where);
        checkField(schema.child(0), "i", "item", where + "list child");
        break;
      case STRUCT_INT32_UTF8:
        expectChildren(schema, 2, where);
        checkField(schema.child(0), "i", "a", where + "struct child a");
        checkField(schema.child(1), "u", "b", where + "struct child b");
        break;
      case DICT_INT32_UTF8:
        expectChildren(schema, 0, where);
        Schema dictionary = schema.dictionary();
        if (dictionary == null) throw mismatch(where + "schema has no dictionary");
        if (!"u".equals(dictionary.format())) {
          throw mismatch(where + "dictionary format: expected \"u\", got \"" + dictionary.format()
              + "\"");
        }
        break;
      default:
        expectChildren(schema, 0, where);
        if (schema.dictionary() != null) throw mismatch(where + "schema has a dictionary, expected none");
    }
  }

  private static void checkField(Schema field, String format, String name, String what) {
    if (!format.equals(field.format())) {
      throw mismatch(what + " format: expected \"" + format + "\", got \"" + field.format() + "\"");
    }
    if (!name.equals(field.name())) {
      throw mismatch(what + " name: expected \"" + name + "\", got \"" + field.name() + "\"");
    }
    if (!field.isNullable()) throw mismatch(what + " field \"" + name + "\" must be nullable");
  }

  private static void expectChildren(Schema schema, int n, String where) {
    if (schema.childCount() != n) {
      throw mismatch(where + "schema n_children: expected " + n + ", got " + schema.childCount());
    }
  }

  /** Checks {@code array} (borrowed) against case {@code c} with {@code seed}. */
  static void checkArray(Case c, long seed, DeviceArray array, String where) {
    if (array.deviceType() != c.deviceType) {
      throw mismatch(where + "device type: expected " + c.deviceName + " ("
          + c.deviceType + "), got " + DeviceType.name(array.deviceType()) + " ("
          + array.deviceType() + ")");
    }
    checkSchema(c, array.schema(), where);
    if (c.deviceType == DeviceType.CPU) {
      array.await();
      checkData(c, seed, array.root(), where);
    } else {
      // toHost consumes `array` (the caller's close is then a no-op).
      try (DeviceArray host = array.toHost()) {
        checkData(c, seed, host.root(), where);
      }
    }
  }

  private static void checkData(Case c, long seed, ArrayView a, String where) {
    if (a.length() != c.length) throw mismatch(where + "length: expected " + c.length + ", got " + a.length());
    if (a.offset() != c.offset) throw mismatch(where + "offset: expected " + c.offset + ", got " + a.offset());
    if (a.nullCount() != c.nullCount()) {
      throw mismatch(where + "null_count: expected " + c.nullCount() + ", got " + a.nullCount());
    }
    int expectedBuffers = bufferCount(c.type);
    if (a.bufferCount() != expectedBuffers) {
      throw mismatch(where + "n_buffers: expected " + expectedBuffers + ", got " + a.bufferCount());
    }
    long off = c.offset;
    ByteBuffer validity = a.buffer(0);
    if (validity == null && c.nullCount() > 0) throw mismatch(where + "validity bitmap is NULL but nulls are expected");
    for (long i = 0; i < c.length; i++) {
      boolean valid = validity == null || bit(validity, i + off);
      if (valid == c.isNull(i)) {
        throw mismatch(where + "element " + i + " (physical " + (i + off) + "): expected "
            + (c.isNull(i) ? "null" : "valid") + ", got " + (valid ? "valid" : "null"));
      }
    }
    switch (c.type) {
      case BOOL: {
        ByteBuffer values = values(a, 1, where);
        for (long i = 0; i < c.length; i++) {
          if (!c.isNull(i) && bit(values, i + off) != Values.bool(seed, i)) {
            throw valueMismatch(where, i, off, Values.bool(seed, i), bit(values, i + off));
          }
        }
        break;
      }
      case UTF8:
      case BINARY:
        checkStrings(a, c, seed, off, where, c.type.word);
        break;
      case LIST_INT32:
        checkList(a, c, seed, off, where);
        break;
      case STRUCT_INT32_UTF8: {
        if (a.childCount() != 2) throw mismatch(where + "n_children: expected 2, got " + a.childCount());
        ArrayView childA = a.child(0);
        checkPlainChild(childA, c.length + off, where + "child a ");
        ByteBuffer ints = values(childA, 1, where + "child a ");
        for (long i = 0; i < c.length; i++) {
          if (c.isNull(i)) continue;
          int got = ints.getInt((int) (4 * (i + off)));
          if (got != (int) Values.u(seed, i)) {
            throw valueMismatch(where + "child a ", i, off, (int) Values.u(seed, i), got);
          }
        }
        ArrayView childB = a.child(1);
        checkPlainChild(childB, c.length + off, where + "child b ");
        checkStringsAt(childB, c, (seed + 1) & 0xFFFFFFFFL, off, where + "child b ", "utf8", c);
        break;
      }
      case DICT_INT32_UTF8: {
        ByteBuffer indices = values(a, 1, where);
        for (long i = 0; i < c.length; i++) {
          if (c.isNull(i)) continue;
          int got = indices.getInt((int) (4 * (i + off)));
          if (got != Values.dictIndex(seed, i)) throw valueMismatch(where, i, off, Values.dictIndex(seed, i), got);
        }
        ArrayView dictionary = a.dictionary();
        if (dictionary == null) throw mismatch(where + "array has no dictionary");
        checkPlainChild(dictionary, 7, where + "dictionary ");
        if (dictionary.length() != 7) throw mismatch(where + "dictionary length: expected 7, got " + dictionary.length());
        ByteBuffer offsets = values(dictionary, 1, where + "dictionary ");
        ByteBuffer data = values(dictionary, 2, where + "dictionary ");
        for (int d = 0; d < 7; d++) {
          String got = string(offsets, data, d, where + "dictionary ");
          if (!got.equals("d" + d)) {
            throw mismatch(where + "dictionary element " + d + ": expected \"d" + d + "\", got \"" + got + "\"");
          }
        }
        break;
      }
      default:
        checkFixedWidth(a, c, seed, off, where);
    }
  }

  private static int bufferCount(Case.Type type) {
    switch (type) {
      case UTF8: case BINARY: return 3;
      case STRUCT_INT32_UTF8: return 1;
      default: return 2;
    }
  }

  private static void checkPlainChild(ArrayView child, long minLength, String where) {
    if (child.offset() != 0) throw mismatch(where + "offset: expected 0, got " + child.offset());
    if (child.nullCount() != 0) throw mismatch(where + "null_count: expected 0, got " + child.nullCount());
    if (child.length() < minLength) {
      throw mismatch(where + "length: expected at least " + minLength + ", got " + child.length());
    }
    ByteBuffer validity = child.bufferCount() > 0 ? child.buffer(0) : null;
    if (validity != null) {
      for (long p = 0; p < minLength; p++) {
        if (!bit(validity, p)) throw mismatch(where + "position " + p + " is null, expected no nulls");
      }
    }
  }

  private static void checkFixedWidth(ArrayView a, Case c, long seed, long off, String where) {
    ByteBuffer v = values(a, 1, where);
    for (long i = 0; i < c.length; i++) {
      if (c.isNull(i)) continue;
      int s = (int) (i + off);
      long u = Values.u(seed, i);
      switch (c.type) {
        case INT8: case UINT8:
          if (v.get(s) != (byte) u) throw valueMismatch(where, i, off, (byte) u, v.get(s));
          break;
        case INT16: case UINT16:
          if (v.getShort(2 * s) != (short) u) throw valueMismatch(where, i, off, (short) u, v.getShort(2 * s));
          break;
        case INT32: case UINT32:
          if (v.getInt(4 * s) != (int) u) throw valueMismatch(where, i, off, (int) u, v.getInt(4 * s));
          break;
        case INT64: case UINT64:
          if (v.getLong(8 * s) != Values.wide(seed, i)) throw valueMismatch(where, i, off, Values.wide(seed, i), v.getLong(8 * s));
          break;
        case FLOAT32: {
          float want = Values.float32(seed, i);
          if (Float.floatToIntBits(v.getFloat(4 * s)) != Float.floatToIntBits(want)) {
            throw valueMismatch(where, i, off, want, v.getFloat(4 * s));
          }
          break;
        }
        case FLOAT64: {
          double want = Values.float64(seed, i);
          if (Double.doubleToLongBits(v.getDouble(8 * s)) != Double.doubleToLongBits(want)) {
            throw valueMismatch(where, i, off, want, v.getDouble(8 * s));
          }
          break;
        }
        default:
          throw new IllegalStateException("not fixed-width: " + c.type);
      }
    }
  }

  private static void checkStrings(ArrayView a, Case c, long seed, long off, String where, String type) {
    checkStringsAt(a, c, seed, off, where, type, c);
  }

  /** Strings at physical slots i + off for the logical elements of {@code nulls}. */
  private static void checkStringsAt(ArrayView a, Case c, long seed, long off, String where,
      String type, Case nulls) {
    ByteBuffer offsets = values(a, 1, where);
    ByteBuffer data = values(a, 2, where);
    for (long i = 0; i < nulls.length; i++) {
      // Null slots (of the array, or of the struct holding it) are unspecified.
      if (nulls.isNull(i)) continue;
      String got = string(offsets, data, (int) (i + off), where);
      String want = Values.text(seed, i);
      if (!got.equals(want)) {
        throw mismatch(where + "element " + i + " (physical " + (i + off) + "): expected \"" + want
            + "\", got \"" + got + "\"");
      }
    }
  }

  private static String string(ByteBuffer offsets, ByteBuffer data, int slot, String where) {
    int start = offsets.getInt(4 * slot);
    int end = offsets.getInt(4 * slot + 4);
    if (start < 0 || end < start || end > data.capacity()) {
      throw mismatch(where + "slot " + slot + ": offsets " + start + ".." + end + " are not ascending or out of range");
    }
    byte[] bytes = new byte[end - start];
    data.get(start, bytes);
    return new String(bytes, StandardCharsets.UTF_8);
  }

  private static void checkList(ArrayView a, Case c, long seed, long off, String where) {
    if (a.childCount() != 1) throw mismatch(where + "n_children: expected 1, got " + a.childCount());
    ByteBuffer offsets = values(a, 1, where);
    ArrayView child = a.child(0);
    checkPlainChild(child, 0, where + "list child ");
    ByteBuffer items = child.length() == 0 ? null : values(child, 1, where + "list child ");
    for (long i = 0; i < c.length; i++) {
      if (c.isNull(i)) continue;
      int s = (int) (i + off);
      int start = offsets.getInt(4 * s);
      int end = offsets.getInt(4 * s + 4);
      if (start < 0 || end < start || end > child.length()) {
        throw mismatch(where + "element " + i + " (physical " + s + "): offsets " + start + ".." + end
            + " are not ascending or beyond the child's length " + child.length());
      }
      if (end - start != Values.listSize(seed, i)) {
        throw mismatch(where + "element " + i + " (physical " + s + "): expected "
            + Values.listSize(seed, i) + " items, got " + (end - start));
      }
      for (int j = start; j < end; j++) {
        int got = items.getInt(4 * j);
        if (got != (int) Values.u(seed, j)) {
          throw mismatch(where + "list child position " + j + ": expected " + (int) Values.u(seed, j)
              + ", got " + got);
        }
      }
    }
  }

  private static ByteBuffer values(ArrayView a, int i, String where) {
    ByteBuffer b = a.buffer(i);
    if (b == null) throw mismatch(where + "buffer " + i + " is NULL");
    return b.order(ByteOrder.LITTLE_ENDIAN);
  }

  private static boolean bit(ByteBuffer bits, long i) {
    return (bits.get((int) (i / 8)) >> (i % 8) & 1) == 1;
  }

  private static FerryException valueMismatch(String where, long i, long off, Object want, Object got) {
    return mismatch(where + "element " + i + " (physical " + (i + off) + "): expected " + want
        + ", got " + got);
  }

  static FerryException mismatch(String message) {
    return new FerryException(FerryException.EINVAL, message);
  }
}
