package io.github.ferryarrow.ferry.arrow;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import io.github.ferryarrow.ferry.DeviceArray;
import io.github.ferryarrow.ferry.ExportedBatch;
import io.github.ferryarrow.ferry.FieldSpec;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.ForeignAllocation;
import org.apache.arrow.memory.util.MemoryUtil;
import org.apache.arrow.vector.BaseFixedWidthVector;
import org.apache.arrow.vector.BaseLargeVariableWidthVector;
import org.apache.arrow.vector.BaseVariableWidthVector;
import org.apache.arrow.vector.BitVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.complex.StructVector;
import org.apache.arrow.vector.ipc.message.ArrowFieldNode;
import org.apache.arrow.vector.types.DateUnit;
import org.apache.arrow.vector.types.FloatingPointPrecision;
import org.apache.arrow.vector.types.TimeUnit;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;

/**
 * The direct bridge between ferry arrays and Arrow Java vectors, for the common
 * layouts: integers, float32 and float64, dates, times, timestamps and durations, booleans,
 * (large) utf8 and binary, and structs of those, at offset 0, without metadata or
 * dictionaries. It reads and writes the C structs itself, so that neither side
 * builds an intermediate ArrowArray/ArrowSchema pair or parses the other's schema
 * twice: Arrow Java's {@code Data.importVector} / {@code exportVector} do that, and
 * cost more than ferry's own handoff. Anything else goes the general way (through
 * Arrow Java's C data module), so the direct bridge changes speed, never results.
 *
 * <p>Every buffer handed to Arrow Java is a foreign allocation of the caller's
 * allocator sized from the layout (the last offset for variable-width data), the
 * same accounting Arrow Java's own importer does; the ferry array stays alive until
 * the last of them is released.
 */
final class Direct {
  private Direct() {}

  // ArrowSchema and ArrowArray field offsets (the C Data Interface ABI, 64-bit).
  private static final int S_FORMAT = 0;
  private static final int S_NAME = 8;
  private static final int S_METADATA = 16;
  private static final int S_FLAGS = 24;
  private static final int S_N_CHILDREN = 32;
  private static final int S_CHILDREN = 40;
  private static final int S_DICTIONARY = 48;
  private static final int A_LENGTH = 0;
  private static final int A_NULL_COUNT = 8;
  private static final int A_OFFSET = 16;
  private static final int A_N_BUFFERS = 24;
  private static final int A_N_CHILDREN = 32;
  private static final int A_BUFFERS = 40;
  private static final int A_CHILDREN = 48;
  private static final long FLAG_NULLABLE = 2;

  // ---- C schema -> Arrow Java Field ----------------------------------------

  /** The Field described by the ArrowSchema at {@code schema}, or null when the
   *  direct bridge does not cover it (metadata, a dictionary, another type). */
  static Field field(long schema) {
    if (MemoryUtil.getLong(schema + S_METADATA) != 0
        || MemoryUtil.getLong(schema + S_DICTIONARY) != 0) {
      return null;
    }
    String format = cString(MemoryUtil.getLong(schema + S_FORMAT));
    ArrowType type = type(format);
    if (type == null) return null;
    long namePtr = MemoryUtil.getLong(schema + S_NAME);
    String name = namePtr == 0 ? "" : cString(namePtr);
    boolean nullable = (MemoryUtil.getLong(schema + S_FLAGS) & FLAG_NULLABLE) != 0;
    long n = MemoryUtil.getLong(schema + S_N_CHILDREN);
    List<Field> children = null;
    if (type instanceof ArrowType.Struct) {
      long childArray = MemoryUtil.getLong(schema + S_CHILDREN);
      children = new ArrayList<>((int) n);
      for (long i = 0; i < n; i++) {
        Field child = field(MemoryUtil.getLong(childArray + 8 * i));
        if (child == null) return null;
        children.add(child);
      }
    } else if (n != 0) {
      return null;
    }
    return new Field(name, new FieldType(nullable, type, null, null), children);
  }

  /** A NUL-terminated C string (UTF-8). */
  private static String cString(long p) {
    int n = 0;
    while (MemoryUtil.getByte(p + n) != 0) n++;
    byte[] bytes = new byte[n];
    for (int i = 0; i < n; i++) bytes[i] = MemoryUtil.getByte(p + i);
    return new String(bytes, StandardCharsets.UTF_8);
  }

  private static final ArrowType INT8 = new ArrowType.Int(8, true);
  private static final ArrowType UINT8 = new ArrowType.Int(8, false);
  private static final ArrowType INT16 = new ArrowType.Int(16, true);
  private static final ArrowType UINT16 = new ArrowType.Int(16, false);
  private static final ArrowType INT32 = new ArrowType.Int(32, true);
  private static final ArrowType UINT32 = new ArrowType.Int(32, false);
  private static final ArrowType INT64 = new ArrowType.Int(64, true);
  private static final ArrowType UINT64 = new ArrowType.Int(64, false);
  private static final ArrowType FLOAT32 =
      new ArrowType.FloatingPoint(FloatingPointPrecision.SINGLE);
  private static final ArrowType FLOAT64 =
      new ArrowType.FloatingPoint(FloatingPointPrecision.DOUBLE);

  /** The ArrowType of a C format the direct bridge covers, else null. */
  static ArrowType type(String f) {
    switch (f) {
      case "b": return ArrowType.Bool.INSTANCE;
      case "c": return INT8;
      case "C": return UINT8;
      case "s": return INT16;
      case "S": return UINT16;
      case "i": return INT32;
      case "I": return UINT32;
      case "l": return INT64;
      case "L": return UINT64;
      case "f": return FLOAT32;
      case "g": return FLOAT64;
      case "u": return ArrowType.Utf8.INSTANCE;
      case "U": return ArrowType.LargeUtf8.INSTANCE;
      case "z": return ArrowType.Binary.INSTANCE;
      case "Z": return ArrowType.LargeBinary.INSTANCE;
      case "tdD": return new ArrowType.Date(DateUnit.DAY);
      case "tdm": return new ArrowType.Date(DateUnit.MILLISECOND);
      case "tts": return new ArrowType.Time(TimeUnit.SECOND, 32);
      case "ttm": return new ArrowType.Time(TimeUnit.MILLISECOND, 32);
      case "ttu": return new ArrowType.Time(TimeUnit.MICROSECOND, 64);
      case "ttn": return new ArrowType.Time(TimeUnit.NANOSECOND, 64);
      case "tDs": return new ArrowType.Duration(TimeUnit.SECOND);
      case "tDm": return new ArrowType.Duration(TimeUnit.MILLISECOND);
      case "tDu": return new ArrowType.Duration(TimeUnit.MICROSECOND);
      case "tDn": return new ArrowType.Duration(TimeUnit.NANOSECOND);
      case "+s": return ArrowType.Struct.INSTANCE;
      default:
        if (f.length() >= 4 && f.startsWith("ts") && f.charAt(3) == ':') {
          TimeUnit unit = unit(f.charAt(2));
          if (unit == null) return null;
          String tz = f.substring(4);
          return new ArrowType.Timestamp(unit, tz.isEmpty() ? null : tz);
        }
        return null;
    }
  }

  private static TimeUnit unit(char c) {
    switch (c) {
      case 's': return TimeUnit.SECOND;
      case 'm': return TimeUnit.MILLISECOND;
      case 'u': return TimeUnit.MICROSECOND;
      case 'n': return TimeUnit.NANOSECOND;
      default: return null;
    }
  }

  // ---- ferry array -> Arrow Java vector -------------------------------------

  /**
   * Keeps a ferry array alive for the Arrow Java buffers over its memory: one
   * count for the builder, one per buffer; the array (set once the build
   * succeeded) is closed when the count reaches zero.
   */
  static final class Holder {
    private final AtomicInteger refs = new AtomicInteger(1);
    private volatile DeviceArray array;

    void own(DeviceArray owned) {
      array = owned;
    }

    void retain() {
      refs.incrementAndGet();
    }

    void release() {
      if (refs.decrementAndGet() == 0) {
        DeviceArray a = array;
        if (a != null) a.close();
      }
    }
  }

  /** True when the array at {@code array} (validated against {@code field}'s
   *  schema) fits the direct bridge: offset 0 at every level, offsets present. */
  static boolean fits(long array, Field field) {
    if (MemoryUtil.getLong(array + A_OFFSET) != 0) return false;
    ArrowType t = field.getType();
    long buffers = MemoryUtil.getLong(array + A_BUFFERS);
    if (isVariable(t) && MemoryUtil.getLong(buffers + 8) == 0) return false;
    if (t instanceof ArrowType.Struct) {
      long children = MemoryUtil.getLong(array + A_CHILDREN);
      List<Field> fields = field.getChildren();
      if (MemoryUtil.getLong(array + A_N_CHILDREN) != fields.size()) return false;
      for (int i = 0; i < fields.size(); i++) {
        if (!fits(MemoryUtil.getLong(children + 8L * i), fields.get(i))) return false;
      }
    }
    return true;
  }

  /** The address of child {@code i} of the ArrowArray at {@code array}. */
  static long child(long array, int i) {
    return MemoryUtil.getLong(MemoryUtil.getLong(array + A_CHILDREN) + 8L * i);
  }

  private static boolean isVariable(ArrowType t) {
    return t instanceof ArrowType.Utf8 || t instanceof ArrowType.Binary
        || t instanceof ArrowType.LargeUtf8 || t instanceof ArrowType.LargeBinary;
  }

  /**
   * Loads the array at {@code array} (which {@link #fits}) into {@code vector} (made
   * from the same field): each buffer becomes a foreign allocation of
   * {@code allocator} that holds {@code holder}. On failure the buffers made so far
   * are released again (the vector may hold some: the caller closes it).
   */
  static void load(FieldVector vector, long array, Holder holder, BufferAllocator allocator) {
    long length = MemoryUtil.getLong(array + A_LENGTH);
    long nullCount = MemoryUtil.getLong(array + A_NULL_COUNT);
    long buffers = MemoryUtil.getLong(array + A_BUFFERS);
    ArrowType t = vector.getField().getType();
    List<ArrowBuf> bufs = new ArrayList<>(3);
    try {
      bufs.add(wrap(MemoryUtil.getLong(buffers), (length + 7) / 8, holder, allocator));
      if (t instanceof ArrowType.Struct) {
        vector.loadFieldBuffers(new ArrowFieldNode(length, nullCount), bufs);
        long children = MemoryUtil.getLong(array + A_CHILDREN);
        List<FieldVector> childVectors = ((StructVector) vector).getChildrenFromFields();
        for (int i = 0; i < childVectors.size(); i++) {
          load(childVectors.get(i), MemoryUtil.getLong(children + 8L * i), holder, allocator);
        }
        return;
      }
      long values = MemoryUtil.getLong(buffers + 8);
      if (vector instanceof BitVector) {
        bufs.add(wrap(values, (length + 7) / 8, holder, allocator));
      } else if (vector instanceof BaseFixedWidthVector) {
        int width = ((BaseFixedWidthVector) vector).getTypeWidth();
        bufs.add(wrap(values, length * width, holder, allocator));
      } else if (vector instanceof BaseVariableWidthVector) {
        long dataSize = length == 0 ? 0 : MemoryUtil.getInt(values + 4 * length);
        bufs.add(wrap(values, 4 * (length + 1), holder, allocator));
        bufs.add(wrap(MemoryUtil.getLong(buffers + 16), Math.max(0, dataSize), holder,
            allocator));
      } else if (vector instanceof BaseLargeVariableWidthVector) {
        long dataSize = length == 0 ? 0 : MemoryUtil.getLong(values + 8 * length);
        bufs.add(wrap(values, 8 * (length + 1), holder, allocator));
        bufs.add(wrap(MemoryUtil.getLong(buffers + 16), Math.max(0, dataSize), holder,
            allocator));
      } else {
        throw new IllegalStateException("ferry: no direct layout for " + t);
      }
      vector.loadFieldBuffers(new ArrowFieldNode(length, nullCount), bufs);
    } finally {
      // The vector took its own references (loadFieldBuffers retains); drop ours.
      for (ArrowBuf b : bufs) b.close();
    }
  }

  /** A foreign allocation over {@code size} bytes at {@code address} that holds
   *  {@code holder} until released; the allocator's empty buffer when absent. */
  private static ArrowBuf wrap(long address, long size, Holder holder,
      BufferAllocator allocator) {
    if (address == 0 || size == 0) return allocator.getEmpty();
    holder.retain();
    try {
      return allocator.wrapForeignAllocation(new ForeignAllocation(size, address) {
        @Override
        protected void release0() {
          holder.release();
        }
      });
    } catch (RuntimeException | Error e) {
      holder.release();
      throw e;
    }
  }

  // ---- Arrow Java vector -> ferry export ------------------------------------

  /** The FieldSpec of {@code field} for the direct export, or null when it is not
   *  covered (metadata, a dictionary, another type). */
  static FieldSpec spec(Field field) {
    if (field.getDictionary() != null
        || (field.getMetadata() != null && !field.getMetadata().isEmpty())) {
      return null;
    }
    String format = format(field.getType());
    if (format == null) return null;
    FieldSpec spec = FieldSpec.of(format, field.getName() == null ? "" : field.getName())
        .withNullable(field.isNullable());
    if (field.getType() instanceof ArrowType.Struct) {
      List<Field> children = field.getChildren();
      FieldSpec[] childSpecs = new FieldSpec[children.size()];
      for (int i = 0; i < childSpecs.length; i++) {
        childSpecs[i] = spec(children.get(i));
        if (childSpecs[i] == null) return null;
      }
      spec = spec.withChildren(childSpecs);
    } else if (!field.getChildren().isEmpty()) {
      return null;
    }
    return spec;
  }

  /** The C format of a type the direct bridge covers, else null; the inverse of
   *  {@link #type(String)}. */
  static String format(ArrowType t) {
    if (t instanceof ArrowType.Int) {
      ArrowType.Int i = (ArrowType.Int) t;
      switch (i.getBitWidth()) {
        case 8: return i.getIsSigned() ? "c" : "C";
        case 16: return i.getIsSigned() ? "s" : "S";
        case 32: return i.getIsSigned() ? "i" : "I";
        case 64: return i.getIsSigned() ? "l" : "L";
        default: return null;
      }
    }
    if (t instanceof ArrowType.FloatingPoint) {
      switch (((ArrowType.FloatingPoint) t).getPrecision()) {
        // float16 (Float2Vector) only exists in recent Arrow Java: the general way.
        case SINGLE: return "f";
        case DOUBLE: return "g";
        default: return null;
      }
    }
    if (t instanceof ArrowType.Bool) return "b";
    if (t instanceof ArrowType.Utf8) return "u";
    if (t instanceof ArrowType.LargeUtf8) return "U";
    if (t instanceof ArrowType.Binary) return "z";
    if (t instanceof ArrowType.LargeBinary) return "Z";
    if (t instanceof ArrowType.Struct) return "+s";
    if (t instanceof ArrowType.Date) {
      return ((ArrowType.Date) t).getUnit() == DateUnit.DAY ? "tdD" : "tdm";
    }
    if (t instanceof ArrowType.Time) {
      ArrowType.Time time = (ArrowType.Time) t;
      String f = "tt" + unitChar(time.getUnit());
      return time.getBitWidth() == ((f.equals("tts") || f.equals("ttm")) ? 32 : 64) ? f : null;
    }
    if (t instanceof ArrowType.Duration) {
      return "tD" + unitChar(((ArrowType.Duration) t).getUnit());
    }
    if (t instanceof ArrowType.Timestamp) {
      ArrowType.Timestamp ts = (ArrowType.Timestamp) t;
      return "ts" + unitChar(ts.getUnit()) + ":" + (ts.getTimezone() == null ? ""
          : ts.getTimezone());
    }
    return null;
  }

  private static char unitChar(TimeUnit unit) {
    switch (unit) {
      case SECOND: return 's';
      case MILLISECOND: return 'm';
      case MICROSECOND: return 'u';
      default: return 'n';
    }
  }

  /**
   * The ExportedBatch of {@code vector} (whose field has a {@link #spec}): its
   * buffers' addresses, each buffer retained and added to {@code retained}, to be
   * released when the consumer releases the export. Null when a buffer's layout is
   * not the C one (the caller then releases {@code retained} and takes the general
   * way).
   */
  static ExportedBatch batch(FieldVector vector, List<ArrowBuf> retained) {
    int length = vector.getValueCount();
    if (length == 0) return null; // buffers may be unallocated: the general way
    long nulls = vector.getNullCount();
    ExportedBatch batch = ExportedBatch.of(length).nullCount(nulls);
    List<ArrowBuf> fieldBuffers = vector.getFieldBuffers();
    if ((vector instanceof BaseVariableWidthVector
        || vector instanceof BaseLargeVariableWidthVector)
        && (fieldBuffers.get(1) == null || fieldBuffers.get(1).capacity() == 0)) {
      return null; // no offsets (an empty vector): the general way writes them
    }
    long[] addresses = new long[fieldBuffers.size()];
    for (int i = 0; i < addresses.length; i++) {
      ArrowBuf b = fieldBuffers.get(i);
      if (b == null || b.capacity() == 0) {
        if (i == 0) continue; // no validity buffer
        return null; // a data buffer with no memory (all values empty): the general way
      }
      // No validity bits are needed when nothing is null (the C interface allows
      // an absent validity buffer then), and Arrow Java may not have filled them.
      if (i == 0 && nulls == 0) continue;
      b.getReferenceManager().retain();
      retained.add(b);
      addresses[i] = b.memoryAddress();
    }
    batch.bufferAddresses(addresses);
    if (vector instanceof StructVector) {
      List<FieldVector> children = ((StructVector) vector).getChildrenFromFields();
      ExportedBatch[] childBatches = new ExportedBatch[children.size()];
      for (int i = 0; i < childBatches.length; i++) {
        childBatches[i] = batch(children.get(i), retained);
        if (childBatches[i] == null) return null;
      }
      batch.children(childBatches);
    }
    return batch;
  }
}
