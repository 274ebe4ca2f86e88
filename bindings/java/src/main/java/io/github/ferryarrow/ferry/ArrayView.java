package io.github.ferryarrow.ferry;

import io.github.ferryarrow.ferry.jni.FerryNative;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * A read-only view of one ArrowArray inside a {@link DeviceArray} (the root, a
 * child or a dictionary) together with its schema. Valid while the DeviceArray
 * is open; every accessor checks that. Length, null count, offset, counts and
 * the first buffer addresses are read with one native call (the root's come from
 * the import) and cached: the struct does not change while it is owned.
 */
public final class ArrayView {
  private final DeviceArray owner;
  private final long array;
  private final long schema;
  /** The root's info lives in its slot (slab, slabInfo); others' in a long[]
   *  read on first use. */
  private final ByteBuffer slab;
  private final int slabInfo;
  private long[] info;
  private static final ByteBuffer EMPTY = ByteBuffer.allocateDirect(0).asReadOnlyBuffer();
  /** Views made so far, by buffer index (the struct does not change while owned). */
  private ByteBuffer[] views;

  /** A view whose info is in a slot ({@code slab} non-null) or read lazily. */
  ArrayView(DeviceArray owner, long array, long schema, ByteBuffer slab, int slabInfo) {
    this.owner = owner;
    this.array = array;
    this.schema = schema;
    this.slab = slab;
    this.slabInfo = slabInfo;
  }

  private long info(int k) {
    owner.checkOpen();
    if (slab != null) return slab.getLong(slabInfo + 8 * k);
    long[] i = info;
    if (i == null) {
      i = new long[FerryNative.FERRY_JNI_INFO_SIZE];
      FerryNative.ferry_jni_array_info(array, i);
      info = i;
    }
    return i[k];
  }

  /** The ArrowArray's address (borrowed). */
  public long address() {
    owner.checkOpen();
    return array;
  }

  public Schema schema() {
    owner.checkOpen();
    return new Schema(schema, owner);
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
    checkBufferIndex(i);
    if (i < FerryNative.FERRY_JNI_INFO_INLINE_BUFFERS) {
      return info(FerryNative.FERRY_JNI_INFO_BUFFER0 + i);
    }
    return FerryNative.ferry_array_buffer(array, i);
  }

  /** Buffer {@code i}'s size in bytes, from the format, length and offset. */
  public long bufferSize(int i) {
    checkBufferIndex(i);
    return FerryNative.ferry_jni_buffer_size(schema, address(), owner.deviceType(),
        owner.deviceId(), i);
  }

  /**
   * Buffer {@code i} as a read-only, native-order direct ByteBuffer over the
   * array's own memory (no copy), or null when the buffer is absent. Only for
   * memory the host may read (CPU, the simulated device); wait on the array's
   * sync event first ({@link DeviceArray#await()}). The view must not be used
   * after the DeviceArray is closed.
   */
  public ByteBuffer buffer(int i) {
    if (!owner.isHostAccessible()) {
      throw new FerryException(FerryException.ENOTSUP, "buffer " + i + " lives on "
          + DeviceType.name(owner.deviceType()) + " memory, which the host cannot read; bring "
          + "the array to the CPU with DeviceArray.toHost() (or copyTo) first");
    }
    checkBufferIndex(i);
    ByteBuffer[] cached = views;
    if (cached == null) cached = views = new ByteBuffer[bufferCount()];
    ByteBuffer view = cached[i];
    if (view == null) {
      long size = bufferSize(i); // first: it checks the layout, even for an absent buffer
      long a = bufferAddress(i);
      if (a == 0) return null;
      if (size > Integer.MAX_VALUE) {
        throw new FerryException(FerryException.ERANGE, "buffer " + i + " has " + size
            + " bytes, more than one ByteBuffer holds; read it through bufferAddress(" + i + ")");
      }
      view = size == 0 ? EMPTY : BufferViews.of(a, size);
      cached[i] = view;
    }
    return view.duplicate().order(ByteOrder.nativeOrder());
  }

  /** Child {@code i} (its schema is the schema's child {@code i}). */
  public ArrayView child(int i) {
    long child = FerryNative.ferry_array_child(address(), i);
    long childSchema = FerryNative.ferry_schema_child(schema, i);
    if (child == 0 || childSchema == 0) {
      throw new IndexOutOfBoundsException("child " + i + " of " + childCount());
    }
    return new ArrayView(owner, child, childSchema, null, 0);
  }

  /** The dictionary, or null. */
  public ArrayView dictionary() {
    long dictionary = info(FerryNative.FERRY_JNI_INFO_DICTIONARY);
    if (dictionary == 0) return null;
    long dictionarySchema = FerryNative.ferry_schema_dictionary(schema);
    if (dictionarySchema == 0) {
      throw new FerryException(FerryException.EINVAL, "array has a dictionary, schema has none");
    }
    return new ArrayView(owner, dictionary, dictionarySchema, null, 0);
  }

  private void checkBufferIndex(int i) {
    int n = bufferCount();
    if (i < 0 || i >= n) throw new IndexOutOfBoundsException("buffer " + i + " of " + n);
  }
}
