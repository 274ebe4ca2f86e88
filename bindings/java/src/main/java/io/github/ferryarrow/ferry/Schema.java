package io.github.ferryarrow.ferry;

import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import io.github.ferryarrow.ferry.jni.FerryNative;
import io.github.ferryarrow.ferry.jni.FerryNativeConstants;

/**
 * A read-only view of an ArrowSchema (a field: format, name, flags, metadata,
 * children, dictionary). Valid while its owner (a DeviceArray or a
 * DeviceArrayStream) is open; every accessor checks that.
 */
public final class Schema {
  private final long address;
  private final Owner owner;

  /** Whatever keeps the memory alive; throws IllegalStateException once closed. */
  interface Owner {
    void checkOpen();
  }

  Schema(long address, Owner owner) {
    this.address = address;
    this.owner = owner;
  }

  /** The ArrowSchema's address (borrowed). */
  public long address() {
    owner.checkOpen();
    return address;
  }

  public String format() {
    return FerryNative.ferry_schema_format(address());
  }

  public String name() {
    return FerryNative.ferry_schema_name(address());
  }

  public long flags() {
    return FerryNative.ferry_schema_flags(address());
  }

  public boolean isNullable() {
    return (flags() & FerryNativeConstants.ARROW_FLAG_NULLABLE) != 0;
  }

  public int childCount() {
    return Math.toIntExact(FerryNative.ferry_schema_n_children(address()));
  }

  /** Child {@code i}; IndexOutOfBoundsException when out of range. */
  public Schema child(int i) {
    long child = FerryNative.ferry_schema_child(address(), i);
    if (child == 0) throw new IndexOutOfBoundsException("schema child " + i + " of " + childCount());
    return new Schema(child, owner);
  }

  /** The dictionary's schema, or null. */
  public Schema dictionary() {
    long dictionary = FerryNative.ferry_schema_dictionary(address());
    return dictionary == 0 ? null : new Schema(dictionary, owner);
  }

  /** The metadata in order (UTF-8 decoded); empty when absent. */
  public Map<String, String> metadata() {
    long a = address();
    long count = FerryNative.ferry_schema_metadata_count(a);
    if (count < 0) throw new FerryException(FerryException.EINVAL, "malformed schema metadata");
    Map<String, String> out = new LinkedHashMap<>();
    int[] length = new int[1];
    for (long i = 0; i < count; i++) {
      long key = FerryNative.ferry_schema_metadata_key(a, i, length);
      String k = new String(FerryNative.ferry_jni_copy_bytes(key, length[0]),
          StandardCharsets.UTF_8);
      long value = FerryNative.ferry_schema_metadata_value(a, i, length);
      out.put(k, new String(FerryNative.ferry_jni_copy_bytes(value, length[0]),
          StandardCharsets.UTF_8));
    }
    return out;
  }

  /** Every finding of the validator about this schema alone (empty when valid). */
  public List<Finding> findings() {
    return Finding.parse(FerryNative.ferry_jni_validate_schema_report(address()));
  }

  @Override
  public String toString() {
    return "Schema(" + name() + ": " + format() + ")";
  }
}
