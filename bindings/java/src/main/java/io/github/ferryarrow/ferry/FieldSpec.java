package io.github.ferryarrow.ferry;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import io.github.ferryarrow.ferry.jni.FerryNativeConstants;

/**
 * A Java description of a field to export as an ArrowSchema: format string,
 * name, flags, metadata, children and dictionary. Immutable; build with
 * {@link #of} and the {@code with*} methods.
 */
public final class FieldSpec {
  private final String format;
  private final String name;
  private final long flags;
  private final List<FieldSpec> children;
  private final FieldSpec dictionary;
  private final Map<String, String> metadata;

  private FieldSpec(String format, String name, long flags, List<FieldSpec> children,
      FieldSpec dictionary, Map<String, String> metadata) {
    if (format == null) throw new IllegalArgumentException("format must not be null");
    this.format = format;
    this.name = name;
    this.flags = flags;
    this.children = Collections.unmodifiableList(children);
    this.dictionary = dictionary;
    this.metadata = Collections.unmodifiableMap(metadata);
  }

  /** A nullable field without children. */
  public static FieldSpec of(String format, String name) {
    return new FieldSpec(format, name, FerryNativeConstants.ARROW_FLAG_NULLABLE,
        new ArrayList<>(), null, new LinkedHashMap<>());
  }

  /** A deep copy of {@code schema}'s description (read while its owner is open). */
  static FieldSpec of(Schema schema) {
    List<FieldSpec> children = new ArrayList<>();
    for (int i = 0; i < schema.childCount(); i++) children.add(of(schema.child(i)));
    Schema dictionary = schema.dictionary();
    return new FieldSpec(schema.format(), schema.name(), schema.flags(), children,
        dictionary == null ? null : of(dictionary), schema.metadata());
  }

  public FieldSpec withFlags(long newFlags) {
    return new FieldSpec(format, name, newFlags, children, dictionary, metadata);
  }

  public FieldSpec withNullable(boolean nullable) {
    long f = nullable ? flags | FerryNativeConstants.ARROW_FLAG_NULLABLE
        : flags & ~(long) FerryNativeConstants.ARROW_FLAG_NULLABLE;
    return withFlags(f);
  }

  public FieldSpec withChildren(FieldSpec... newChildren) {
    return new FieldSpec(format, name, flags, List.of(newChildren), dictionary, metadata);
  }

  public FieldSpec withDictionary(FieldSpec newDictionary) {
    return new FieldSpec(format, name, flags, children, newDictionary, metadata);
  }

  public FieldSpec withMetadata(String key, String value) {
    Map<String, String> m = new LinkedHashMap<>(metadata);
    m.put(key, value);
    return new FieldSpec(format, name, flags, children, dictionary, m);
  }

  public String format() {
    return format;
  }

  public String name() {
    return name;
  }

  public long flags() {
    return flags;
  }

  public List<FieldSpec> children() {
    return children;
  }

  public FieldSpec dictionary() {
    return dictionary;
  }

  public Map<String, String> metadata() {
    return metadata;
  }
}
