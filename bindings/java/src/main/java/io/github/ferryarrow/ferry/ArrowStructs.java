package io.github.ferryarrow.ferry;

import io.github.ferryarrow.ferry.jni.FerryNative;
import java.lang.ref.Reference;

/**
 * The C structs of one handoff, on the C heap and owned by Java: an ArrowSchema,
 * an ArrowDeviceArray and an ArrowDeviceArrayStream, all released (empty) to
 * start with. Their addresses are what another runtime's producer fills (a
 * native function called through JNI or the FFM API, a plugin) before
 * {@link DeviceArray#importFrom} / {@link DeviceArrayStream#importFrom} move the
 * contents into Java, or what {@link ArrayExporter#export} /
 * {@link StreamExporter#export} fill for a native consumer.
 *
 * <p>{@link #close()} frees the structs exactly once, releasing whatever is
 * still in them (a handoff nobody took). Not thread-safe.
 */
public final class ArrowStructs implements AutoCloseable {
  /** Owns the schema's address; freeing it frees all three. */
  private final NativeHandle handle;
  private final long array;
  private final long stream;

  private ArrowStructs(long schema, long array, long stream) {
    this.array = array;
    this.stream = stream;
    this.handle = new NativeHandle(this, schema, s -> {
      FerryNative.ferry_schema_free(s);
      FerryNative.ferry_device_array_free(array);
      FerryNative.ferry_array_stream_free(stream);
    }, "ArrowStructs");
  }

  /** Three released structs; OutOfMemoryError when the C heap has no room. */
  public static ArrowStructs allocate() {
    long s = FerryNative.ferry_schema_new();
    long a = FerryNative.ferry_device_array_new();
    long t = FerryNative.ferry_array_stream_new();
    if (s == 0 || a == 0 || t == 0) {
      FerryNative.ferry_schema_free(s);
      FerryNative.ferry_device_array_free(a);
      FerryNative.ferry_array_stream_free(t);
      throw new OutOfMemoryError("ferry: cannot allocate the Arrow C structs");
    }
    return new ArrowStructs(s, a, t);
  }

  /** The {@code struct ArrowSchema*} (valid until close). */
  public long schema() {
    return handle.checkedAddress();
  }

  /** The {@code struct ArrowDeviceArray*} (valid until close). */
  public long array() {
    handle.checkedAddress();
    return array;
  }

  /** The {@code struct ArrowDeviceArrayStream*} (valid until close). */
  public long stream() {
    handle.checkedAddress();
    return stream;
  }

  /** Frees the structs, releasing whatever is still in them (exactly once). */
  @Override
  public void close() {
    handle.close();
    Reference.reachabilityFence(this);
  }
}
