package io.github.ferryarrow.ferry.jni;

/**
 * An empty schema struct and device array struct in native memory (what
 * ferry_schema_new and ferry_device_array_new make), the out-parameters a test
 * hands to a producer; close() frees both. Test code: in neither the jar nor
 * libferry_jni.so.
 */
public record NativeStructs(long schema, long array) implements AutoCloseable {
  public static NativeStructs allocate() {
    return new NativeStructs(FerryNative.ferry_schema_new(), FerryNative.ferry_device_array_new());
  }

  @Override
  public void close() {
    FerryNative.ferry_schema_free(schema);
    FerryNative.ferry_device_array_free(array);
  }
}
