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

  private long enter() {
    owner.enter();
    return address;
  }

  public String format() {
    long a = enter();
    try {
      return FerryNative.ferry_schema_format(a);
    } finally {
      owner.exit();
    }
  }

  public String name() {
    long a = enter();
    try {
      return FerryNative.ferry_schema_name(a);
    } finally {
      owner.exit();
    }
  }

  public long flags() {
    long a = enter();
    try {
      return FerryNative.ferry_schema_flags(a);
    } finally {
      owner.exit();
    }
  }

  public boolean isNullable() {
    return (flags() & FerryNativeConstants.ARROW_FLAG_NULLABLE) != 0;
  }

  public int childCount() {
    long a = enter();
    try {
      return Math.toIntExact(FerryNative.ferry_schema_n_children(a));
    } finally {
      owner.exit();
    }
  }

  /** Child {@code i}; IndexOutOfBoundsException when out of range. */
  public Schema child(int i) {
    long a = enter();
    try {
      long child = FerryNative.ferry_schema_child(a, i);
      if (child == 0) {
        throw new IndexOutOfBoundsException("schema child " + i + " of "
            + FerryNative.ferry_schema_n_children(address));
      }
      return new Schema(child, owner);
    } finally {
      owner.exit();
    }
  }

  /** The dictionary's schema, or null. */
  public Schema dictionary() {
    long a = enter();
    try {
      long dictionary = FerryNative.ferry_schema_dictionary(a);
      return dictionary == 0 ? null : new Schema(dictionary, owner);
    } finally {
      owner.exit();
    }
  }

  /** The metadata in order (UTF-8 decoded); empty when absent. */
  public Map<String, String> metadata() {
    long a = enter();
    try {
      return metadata(a);
    } finally {
      owner.exit();
    }
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
    long a = enter();
    try {
      return Finding.parse(FerryNative.ferry_jni_validate_schema_report(a));
    } finally {
      owner.exit();
    }
  }

  @Override
  public String toString() {
    return "Schema(" + name() + ": " + format() + ")";
  }
}
