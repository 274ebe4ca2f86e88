package io.github.ferryarrow.ferry;

import io.github.ferryarrow.ferry.jni.FerryNative;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;

/**
 * A read-only view of one ArrowArray inside a {@link DeviceArray} (the root, a
 * child or a dictionary) together with its schema. Valid while the DeviceArray
 * is open; every accessor holds the array open while it reads (a concurrent
 * close waits for it) and throws IllegalStateException once it is closed. Length,
 * null count, offset, counts and the first buffer addresses are read with one
 * native call (the root's come from the import) and cached: the struct does not
 * change while it is owned.
 *
 * <p><b>Value readers</b> ({@link #isNull}, {@link #getInt}, {@link #getString},
 * ...) take a logical index {@code i} (the array's offset is applied), check
 * {@code 0 <= i < length()} (IndexOutOfBoundsException naming the index and the
 * length), check that the format is one the reader decodes (FerryException EINVAL
 * naming both), and read through the bounds-checked buffer views, whose sizes
 * come from the format, length and offset: a declared length whose buffer would
 * exceed what a ByteBuffer holds (2 GiB) is refused with FerryException ERANGE, and
 * offsets or view references pointing outside their data buffer with EINVAL. On
 * the CPU the interface carries no buffer sizes: a producer whose buffers are
 * shorter than its declared length can only be caught on devices that know their
 * allocations (sim, CUDA, ROCm), where import validation refuses it.
 */
public final class ArrayView {
  private static final VarHandle VIEW = MethodHandles.arrayElementVarHandle(ByteBuffer[].class);
  private final DeviceArray owner;
  private final NativeHandle guard;
  private final long array;
  private final long schema;
  /** The root's info lives in its slot (slab, slabInfo); others' in a long[]
   *  read on first use. */
  private final ByteBuffer slab;
  private final int slabInfo;
  private volatile long[] info;
  private static final ByteBuffer EMPTY = ByteBuffer.allocateDirect(0).asReadOnlyBuffer();
  /** Views made so far, by buffer index (the struct does not change while owned);
   *  elements are published with release/acquire, for readers on other threads. */
  private volatile ByteBuffer[] views;
  /** The schema's format, read once. */
  private volatile String format;

  /** A view whose info is in a slot ({@code slab} non-null) or read lazily. */
  ArrayView(DeviceArray owner, long array, long schema, ByteBuffer slab, int slabInfo) {
    this.owner = owner;
    this.guard = owner.guard();
    this.array = array;
    this.schema = schema;
    this.slab = slab;
    this.slabInfo = slabInfo;
  }

  /** Starts a read: the array stays open until {@link #exit()}. */
  private void enter() {
    guard.enter();
  }

  private void exit() {
    guard.exit();
  }

  private long info(int k) {
    enter();
    try {
      if (slab != null) return slab.getLong(slabInfo + 8 * k);
      long[] i = info;
      if (i == null) {
        i = new long[FerryNative.FERRY_JNI_INFO_SIZE];
        FerryNative.ferry_jni_array_info(array, i);
        info = i;
      }
      return i[k];
    } finally {
      exit();
    }
  }

  /** The ArrowArray's address (borrowed: valid until the DeviceArray is closed). */
  public long address() {
    owner.checkOpen();
    return array;
  }

  public Schema schema() {
    owner.checkOpen();
    return new Schema(schema, guard);
  }

  public long length() {
    return info(FerryNative.FERRY_JNI_INFO_LENGTH);
  }

  public long nullCount() {
    return info(FerryNative.FERRY_JNI_INFO_NULL_COUNT);
  }

  public long offset() {
    return info(FerryNative.FERRY_JNI_INFO_OFFSET);
  }

  public int bufferCount() {
    return Math.toIntExact(info(FerryNative.FERRY_JNI_INFO_N_BUFFERS));
  }

  public int childCount() {
    return Math.toIntExact(info(FerryNative.FERRY_JNI_INFO_N_CHILDREN));
  }

  /** Buffer {@code i}'s address on the array's device (0 when absent). */
  public long bufferAddress(int i) {
    enter();
    try {
      checkBufferIndex(i);
      if (i < FerryNative.FERRY_JNI_INFO_INLINE_BUFFERS) {
        return info(FerryNative.FERRY_JNI_INFO_BUFFER0 + i);
      }
      return FerryNative.ferry_array_buffer(array, i);
    } finally {
      exit();
    }
  }

  /** Buffer {@code i}'s size in bytes, from the format, length and offset. */
  public long bufferSize(int i) {
    enter();
    try {
      checkBufferIndex(i);
      return FerryNative.ferry_jni_buffer_size(schema, array, owner.deviceType(),
          owner.deviceId(), i);
    } finally {
      exit();
    }
  }

  /**
   * Buffer {@code i} as a read-only, native-order direct ByteBuffer over the
   * array's own memory (no copy), or null when the buffer is absent. Only for
   * memory the host may read (CPU, the simulated device); wait on the array's
   * sync event first ({@link DeviceArray#await()}). The view must not be used
   * after the DeviceArray is closed (the binding cannot watch it: use the value
   * readers where a close may race).
   */
  public ByteBuffer buffer(int i) {
    enter();
    try {
      if (!owner.isHostAccessible()) {
        throw new FerryException(FerryException.ENOTSUP, "buffer " + i + " lives on "
            + DeviceType.name(owner.deviceType()) + " memory, which the host cannot read; "
            + "bring the array to the CPU with DeviceArray.toHost() (or copyTo) first");
      }
      checkBufferIndex(i);
      ByteBuffer[] cached = views;
      if (cached == null) cached = views = new ByteBuffer[bufferCount()];
      ByteBuffer view = (ByteBuffer) VIEW.getAcquire(cached, i);
      if (view == null) {
        long size = bufferSize(i); // first: it checks the layout, even for an absent buffer
        long a = bufferAddress(i);
        if (a == 0) return null;
        if (size > Integer.MAX_VALUE) {
          throw new FerryException(FerryException.ERANGE, "buffer " + i + " has " + size
              + " bytes, more than one ByteBuffer holds; read it through bufferAddress(" + i
              + ")");
        }
        view = size == 0 ? EMPTY : BufferViews.of(a, size);
        VIEW.setRelease(cached, i, view);
      }
      return view.duplicate().order(ByteOrder.nativeOrder());
    } finally {
      exit();
    }
  }

  /** Child {@code i} (its schema is the schema's child {@code i}). */
  public ArrayView child(int i) {
    enter();
    try {
      long child = FerryNative.ferry_array_child(array, i);
      long childSchema = FerryNative.ferry_schema_child(schema, i);
      if (child == 0 || childSchema == 0) {
        throw new IndexOutOfBoundsException("child " + i + " of " + childCount());
      }
      return new ArrayView(owner, child, childSchema, null, 0);
    } finally {
      exit();
    }
  }

  /** The dictionary, or null. */
  public ArrayView dictionary() {
    enter();
    try {
      long dictionary = info(FerryNative.FERRY_JNI_INFO_DICTIONARY);
      if (dictionary == 0) return null;
      long dictionarySchema = FerryNative.ferry_schema_dictionary(schema);
      if (dictionarySchema == 0) {
        throw new FerryException(FerryException.EINVAL,
            "array has a dictionary, schema has none");
      }
      return new ArrayView(owner, dictionary, dictionarySchema, null, 0);
    } finally {
      exit();
    }
  }

  private void checkBufferIndex(int i) {
    int n = bufferCount();
    if (i < 0 || i >= n) throw new IndexOutOfBoundsException("buffer " + i + " of " + n);
  }

  // ---- value readers --------------------------------------------------------

  private String format() {
    String f = format;
    if (f == null) format = f = FerryNative.ferry_schema_format(schema);
    return f;
  }

  /** Checks {@code 0 <= i < length()}; returns the physical index offset + i. */
  private long physical(long i) {
    long n = length();
    if (i < 0 || i >= n) {
      throw new IndexOutOfBoundsException("index " + i + " out of range for length " + n);
    }
    return offset() + i;
  }

  private FerryException wrongFormat(String reader, String reads) {
    return new FerryException(FerryException.EINVAL, reader + " reads " + reads
        + "; this array's format is '" + format() + "'");
  }

  /** The byte at {@code index} of buffer {@code b} (absent: null). */
  private ByteBuffer required(int b, String what) {
    ByteBuffer view = buffer(b);
    if (view == null) {
      throw new FerryException(FerryException.EINVAL, "the " + what + " buffer (" + b
          + ") of this '" + format() + "' array is absent");
    }
    return view;
  }

  private static int at(long byteIndex) {
    // Views are at most 2^31 - 1 bytes; an index beyond that is beyond the view,
    // and ByteBuffer's own check refuses it.
    return byteIndex > Integer.MAX_VALUE ? Integer.MAX_VALUE : (int) byteIndex;
  }

  private static boolean bit(ByteBuffer bitmap, long bitIndex) {
    return (bitmap.get(at(bitIndex >>> 3)) & (1 << (int) (bitIndex & 7))) != 0;
  }

  /**
   * True when element {@code i} is null: from the validity bitmap (all valid when
   * it is absent or null_count is 0), always for the null type; false for unions
   * and run-end encoded arrays, which have no validity bitmap (their nulls are
   * their children's).
   */
  public boolean isNull(long i) {
    enter();
    try {
      long p = physical(i);
      String f = format();
      if (f.equals("n")) return true;
      if (f.startsWith("+u") || f.equals("+r")) return false;
      if (nullCount() == 0) return false;
      ByteBuffer validity = buffer(0);
      return validity != null && !bit(validity, p);
    } finally {
      exit();
    }
  }

  /** {@code !isNull(i)}. */
  public boolean isValid(long i) {
    return !isNull(i);
  }

  /** Element {@code i} of a boolean array ({@code b}). */
  public boolean getBoolean(long i) {
    enter();
    try {
      long p = physical(i);
      if (!format().equals("b")) throw wrongFormat("getBoolean", "boolean ('b') arrays");
      return bit(required(1, "values"), p);
    } finally {
      exit();
    }
  }

  /** Fixed width of the formats a reader decodes: the element's position in buffer 1. */
  private ByteBuffer fixed(long p, int width) {
    ByteBuffer values = required(1, "values");
    long byteIndex = p * width;
    if (byteIndex + width > values.capacity()) {
      throw new FerryException(FerryException.EINVAL, "element at " + p + " lies past the "
          + values.capacity() + "-byte values buffer");
    }
    values.position(at(byteIndex));
    return values;
  }

  /** Element {@code i} of an int8 or uint8 array ({@code c}, {@code C}; uint8 as
   *  its bits). */
  public byte getByte(long i) {
    enter();
    try {
      long p = physical(i);
      String f = format();
      if (!f.equals("c") && !f.equals("C")) throw wrongFormat("getByte", "int8/uint8 arrays");
      return fixed(p, 1).get();
    } finally {
      exit();
    }
  }

  /** Element {@code i} of an int16, uint16 (as its bits) or float16 array (its
   *  IEEE half-precision bits). */
  public short getShort(long i) {
    enter();
    try {
      long p = physical(i);
      String f = format();
      if (!f.equals("s") && !f.equals("S") && !f.equals("e")) {
        throw wrongFormat("getShort", "int16/uint16/float16 arrays");
      }
      return fixed(p, 2).getShort();
    } finally {
      exit();
    }
  }

  private static boolean isInt32(String f) {
    return f.equals("i") || f.equals("I") || f.equals("tdD") || f.equals("tts")
        || f.equals("ttm") || f.equals("tiM");
  }

  private static boolean isInt64(String f) {
    return f.equals("l") || f.equals("L") || f.equals("tdm") || f.equals("ttu")
        || f.equals("ttn") || f.startsWith("ts") || f.startsWith("tD");
  }

  /** Element {@code i} of a 32-bit integer array: int32, uint32 (as its bits),
   *  date32 (days), time32 (s, ms), interval months. */
  public int getInt(long i) {
    enter();
    try {
      long p = physical(i);
      if (!isInt32(format())) {
        throw wrongFormat("getInt", "int32/uint32/date32/time32/interval-months arrays");
      }
      return fixed(p, 4).getInt();
    } finally {
      exit();
    }
  }

  /** Element {@code i} of a 64-bit integer array: int64, uint64 (as its bits),
   *  date64 (ms), time64 (us, ns), timestamp, duration. */
  public long getLong(long i) {
    enter();
    try {
      long p = physical(i);
      if (!isInt64(format())) {
        throw wrongFormat("getLong", "int64/uint64/date64/time64/timestamp/duration arrays");
      }
      return fixed(p, 8).getLong();
    } finally {
      exit();
    }
  }

  /** Element {@code i} of a float32 array ({@code f}), or of a float16 array
   *  ({@code e}) widened to float (exactly). */
  public float getFloat(long i) {
    enter();
    try {
      long p = physical(i);
      String f = format();
      if (f.equals("e")) return halfToFloat(fixed(p, 2).getShort());
      if (!f.equals("f")) throw wrongFormat("getFloat", "float32 and float16 arrays");
      return fixed(p, 4).getFloat();
    } finally {
      exit();
    }
  }

  /** IEEE 754 binary16 bits to the float of the same value (every half is exact
   *  as a float). */
  static float halfToFloat(short half) {
    int bits = half & 0xffff;
    int sign = (bits >>> 15) << 31;
    int exponent = (bits >>> 10) & 0x1f;
    int mantissa = bits & 0x3ff;
    if (exponent == 0) { // zero or subnormal: mantissa * 2^-24
      float magnitude = mantissa * 0x1p-24f;
      return sign != 0 ? -magnitude : magnitude;
    }
    if (exponent == 31) return Float.intBitsToFloat(sign | 0x7f800000 | (mantissa << 13));
    return Float.intBitsToFloat(sign | ((exponent - 15 + 127) << 23) | (mantissa << 13));
  }

  /** Element {@code i} of a float64 array ({@code g}). */
  public double getDouble(long i) {
    enter();
    try {
      long p = physical(i);
      if (!format().equals("g")) throw wrongFormat("getDouble", "float64 ('g') arrays");
      return fixed(p, 8).getDouble();
    } finally {
      exit();
    }
  }

  /** Copies {@code length} bytes at {@code start} of {@code data} (checked). */
  private byte[] slice(ByteBuffer data, long start, long end, long p, int dataBuffer) {
    long capacity = data == null ? 0 : data.capacity();
    if (start < 0 || end < start || end > capacity) {
      throw new FerryException(FerryException.EINVAL, "element at " + p + " of this '"
          + format() + "' array spans bytes [" + start + ", " + end + ") outside its "
          + capacity + "-byte data buffer (" + dataBuffer + ")");
    }
    byte[] out = new byte[(int) (end - start)]; // end <= capacity <= 2^31 - 1
    if (out.length > 0) data.get((int) start, out);
    return out;
  }

  /**
   * Element {@code i} of a binary-like array, copied: binary and utf8 ({@code z},
   * {@code u}), large binary and large utf8 ({@code Z}, {@code U}), binary and utf8
   * views ({@code vz}, {@code vu}), fixed-size binary ({@code w:N}). Offsets and
   * view references outside their data buffer are FerryException EINVAL.
   */
  public byte[] getBytes(long i) {
    enter();
    try {
      long p = physical(i);
      String f = format();
      switch (f) {
        case "z", "u" -> {
          ByteBuffer offsets = required(1, "offsets");
          long start = offsets.getInt(at(4 * p));
          long end = offsets.getInt(at(4 * p + 4));
          return slice(buffer(2), start, end, p, 2);
        }
        case "Z", "U" -> {
          ByteBuffer offsets = required(1, "offsets");
          long start = offsets.getLong(at(8 * p));
          long end = offsets.getLong(at(8 * p + 8));
          return slice(buffer(2), start, end, p, 2);
        }
        case "vz", "vu" -> {
          return viewBytes(p);
        }
        default -> {
          if (f.startsWith("w:")) {
            int width = Integer.parseInt(f.substring(2));
            ByteBuffer values = required(1, "values");
            long start = p * width;
            return slice(values, start, start + width, p, 1);
          }
          throw wrongFormat("getBytes", "binary/utf8 (large, view) and fixed-size binary arrays");
        }
      }
    } finally {
      exit();
    }
  }

  /** A binary/utf8 view element: 16 bytes, inline up to 12, else a reference
   *  (prefix, variadic buffer index, offset) into a data buffer. */
  private byte[] viewBytes(long p) {
    ByteBuffer views = required(1, "views");
    int base = at(16 * p);
    int length = views.getInt(base);
    if (length < 0) {
      throw new FerryException(FerryException.EINVAL, "element at " + p
          + " has a negative view length " + length);
    }
    if (length <= 12) return slice(views, base + 4L, base + 4L + length, p, 1);
    int bufferIndex = views.getInt(base + 8);
    int offset = views.getInt(base + 12);
    int dataBuffers = bufferCount() - 3; // validity, views, ..., variadic sizes
    if (bufferIndex < 0 || bufferIndex >= dataBuffers) {
      throw new FerryException(FerryException.EINVAL, "element at " + p
          + " refers to data buffer " + bufferIndex + " of " + dataBuffers);
    }
    return slice(buffer(2 + bufferIndex), offset, (long) offset + length, p, 2 + bufferIndex);
  }

  /** Element {@code i} of a utf8, large utf8 or utf8 view array, decoded (invalid
   *  UTF-8 becomes U+FFFD; FULL validation refuses it at import). */
  public String getString(long i) {
    enter();
    try {
      String f = format();
      if (!f.equals("u") && !f.equals("U") && !f.equals("vu")) {
        physical(i);
        throw wrongFormat("getString", "utf8, large utf8 and utf8 view arrays");
      }
      return new String(getBytes(i), StandardCharsets.UTF_8);
    } finally {
      exit();
    }
  }

  /** Element {@code i} of a decimal array ({@code d:P,S} and {@code d:P,S,W} for W
   *  = 32, 64, 128, 256), with the schema's scale. */
  public BigDecimal getBigDecimal(long i) {
    enter();
    try {
      long p = physical(i);
      String f = format();
      if (!f.startsWith("d:")) throw wrongFormat("getBigDecimal", "decimal arrays");
      String[] parts = f.substring(2).split(",");
      int scale = Integer.parseInt(parts[1].trim());
      int bits = parts.length > 2 ? Integer.parseInt(parts[2].trim()) : 128;
      int width = bits / 8;
      ByteBuffer values = fixed(p, width);
      byte[] bigEndian = new byte[width];
      for (int k = 0; k < width; k++) {
        // Arrow stores decimals little-endian; BigInteger reads big-endian.
        bigEndian[width - 1 - k] = values.get(values.position() + k);
      }
      return new BigDecimal(new BigInteger(bigEndian), scale);
    } finally {
      exit();
    }
  }

  /** The type ids a union's format declares ({@code +ud:I,J,...} / {@code +us:...}). */
  private int[] unionTypeIds() {
    String f = format();
    if (!f.startsWith("+ud:") && !f.startsWith("+us:")) return null;
    String list = f.substring(4);
    if (list.isEmpty()) return new int[0];
    String[] parts = list.split(",");
    int[] ids = new int[parts.length];
    for (int k = 0; k < parts.length; k++) ids[k] = Integer.parseInt(parts[k].trim());
    return ids;
  }

  /** The type id of element {@code i} of a union ({@code +ud:...}, {@code +us:...}). */
  public byte typeId(long i) {
    enter();
    try {
      long p = physical(i);
      if (unionTypeIds() == null) throw wrongFormat("typeId", "union arrays");
      ByteBuffer ids = required(0, "type ids");
      return ids.get(at(p));
    } finally {
      exit();
    }
  }

  /**
   * Which child holds element {@code i} of a union: the position of its type id in
   * the format's list (read {@link #child(int)} with it, at
   * {@link #unionValueIndex(long)}). A type id the format does not declare is
   * FerryException EINVAL.
   */
  public int unionChild(long i) {
    enter();
    try {
      byte id = typeId(i);
      int[] ids = unionTypeIds();
      for (int k = 0; k < ids.length; k++) {
        if (ids[k] == id) return k;
      }
      throw new FerryException(FerryException.EINVAL, "element " + i + " has type id " + id
          + ", which the format '" + format() + "' does not declare");
    } finally {
      exit();
    }
  }

  /** Where element {@code i} of a union sits in its child ({@link #unionChild}): the
   *  dense union's offset, or the sparse union's own position; checked against the
   *  child's length. */
  public long unionValueIndex(long i) {
    enter();
    try {
      long p = physical(i);
      int child = unionChild(i);
      long index = format().startsWith("+ud:") ? required(1, "offsets").getInt(at(4 * p)) : p;
      long childLength = child(child).length();
      if (index < 0 || index >= childLength) {
        throw new FerryException(FerryException.EINVAL, "element " + i + " points at " + index
            + " of child " + child + ", whose length is " + childLength);
      }
      return index;
    } finally {
      exit();
    }
  }

  /**
   * Which run of a run-end encoded array ({@code +r}) holds element {@code i}: the
   * index into both children (run ends, values), found by binary search over the run
   * ends (int16, int32 or int64). A run-ends child that ends before element i is
   * FerryException EINVAL.
   */
  public long runIndex(long i) {
    enter();
    try {
      long p = physical(i);
      if (!format().equals("+r")) throw wrongFormat("runIndex", "run-end encoded arrays");
      ArrayView ends = child(0);
      String endFormat = ends.format();
      long lo = 0;
      long hi = ends.length(); // the answer is in [lo, hi)
      while (lo < hi) {
        long mid = (lo + hi) >>> 1;
        long end = switch (endFormat) {
          case "s" -> ends.getShort(mid);
          case "i" -> ends.getInt(mid);
          case "l" -> ends.getLong(mid);
          default -> throw new FerryException(FerryException.EINVAL,
              "run ends of format '" + endFormat + "' (int16, int32 or int64 expected)");
        };
        if (end > p) {
          hi = mid;
        } else {
          lo = mid + 1;
        }
      }
      if (lo >= ends.length()) {
        throw new FerryException(FerryException.EINVAL, "element " + i + " (physical " + p
            + ") lies past the last run end");
      }
      return lo;
    } finally {
      exit();
    }
  }

  /**
   * Where element {@code i} of a list-like array starts in {@link #child(int)
   * child(0)} (an index of the child, whose own offset its readers apply): list and
   * map ({@code +l}, {@code +m}), large list ({@code +L}), fixed-size list
   * ({@code +w:N}), list view and large list view ({@code +vl}, {@code +vL}).
   * Elements span [{@code listStart(i)}, {@code listEnd(i)}); a span outside the
   * child's length is FerryException EINVAL.
   */
  public long listStart(long i) {
    return listSpan(i)[0];
  }

  /** See {@link #listStart(long)}: where element {@code i} ends (exclusive). */
  public long listEnd(long i) {
    return listSpan(i)[1];
  }

  private long[] listSpan(long i) {
    enter();
    try {
      long p = physical(i);
      String f = format();
      long start;
      long end;
      switch (f) {
        case "+l", "+m" -> {
          ByteBuffer offsets = required(1, "offsets");
          start = offsets.getInt(at(4 * p));
          end = offsets.getInt(at(4 * p + 4));
        }
        case "+L" -> {
          ByteBuffer offsets = required(1, "offsets");
          start = offsets.getLong(at(8 * p));
          end = offsets.getLong(at(8 * p + 8));
        }
        case "+vl" -> {
          start = required(1, "offsets").getInt(at(4 * p));
          end = start + required(2, "sizes").getInt(at(4 * p));
        }
        case "+vL" -> {
          start = required(1, "offsets").getLong(at(8 * p));
          end = start + required(2, "sizes").getLong(at(8 * p));
        }
        default -> {
          if (!f.startsWith("+w:")) {
            throw wrongFormat("listStart/listEnd", "list, large list, map, fixed-size list "
                + "and list view arrays");
          }
          long size = Long.parseLong(f.substring(3));
          start = p * size;
          end = start + size;
        }
      }
      long childLength = child(0).length();
      if (start < 0 || end < start || end > childLength) {
        throw new FerryException(FerryException.EINVAL, "element at " + p + " of this '" + f
            + "' array spans child elements [" + start + ", " + end + ") outside the child's "
            + "length " + childLength);
      }
      return new long[] {start, end};
    } finally {
      exit();
    }
  }
}
