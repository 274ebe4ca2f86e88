package io.github.ferryarrow.ferry;

import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.LongFunction;
import io.github.ferryarrow.ferry.jni.FerryNative;
import io.github.ferryarrow.ferry.jni.FerryNativeConstants;

/**
 * A read-only view of an ArrowSchema (a field: format, name, flags, metadata,
 * children, dictionary). Valid while its owner (a DeviceArray or a
 * DeviceArrayStream) is open; every accessor checks that, and holds the owner
 * open while it reads (a concurrent close waits), so a view may be read from
 * any thread: after the owner's close it throws IllegalStateException.
 */
public final class Schema {
  private final long address;
  private final Owner owner;

  /** Whatever keeps the memory alive: {@code enter} throws IllegalStateException
   *  once it is closed, else keeps it alive until {@code exit}. */
  interface Owner {
    long enter();

    void exit();

    /** An owner that is never closed (a borrowed schema read in place). */
    Owner BORROWED = new Owner() {
      @Override
      public long enter() {
        return 1;
      }

      @Override
      public void exit() {}
    };
  }

  Schema(long address, Owner owner) {
    this.address = address;
    this.owner = owner;
  }

  /** The ArrowSchema's address (borrowed: valid until the owner is closed). */
  public long address() {
    owner.enter();
    owner.exit();
    return address;
  }

  /** {@code reader} applied to the schema's address while the owner is held open. */
  private <T> T read(LongFunction<T> reader) {
    owner.enter();
    try {
      return reader.apply(address);
    } finally {
      owner.exit();
    }
  }

  public String format() {
    return read(FerryNative::ferry_schema_format);
  }

  public String name() {
    return read(FerryNative::ferry_schema_name);
  }

  public long flags() {
    return read(FerryNative::ferry_schema_flags);
  }

  public boolean isNullable() {
    return (flags() & FerryNativeConstants.ARROW_FLAG_NULLABLE) != 0;
  }

  public int childCount() {
    return read(a -> Math.toIntExact(FerryNative.ferry_schema_n_children(a)));
  }

  /** Child {@code i}; IndexOutOfBoundsException when out of range. */
  public Schema child(int i) {
    return read(a -> {
      long child = FerryNative.ferry_schema_child(a, i);
      if (child == 0) {
        throw new IndexOutOfBoundsException("schema child " + i + " of "
            + FerryNative.ferry_schema_n_children(a));
      }
      return new Schema(child, owner);
    });
  }

  /** The dictionary's schema, or null. */
  public Schema dictionary() {
    return read(a -> {
      long dictionary = FerryNative.ferry_schema_dictionary(a);
      return dictionary == 0 ? null : new Schema(dictionary, owner);
    });
  }

  /** The metadata in order (UTF-8 decoded); empty when absent. */
  public Map<String, String> metadata() {
    return read(Schema::metadata);
  }

  private static Map<String, String> metadata(long a) {
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
    return read(a -> Finding.parse(FerryNative.ferry_jni_validate_schema_report(a)));
  }

  @Override
  public String toString() {
    return "Schema(" + name() + ": " + format() + ")";
  }
}
