package io.github.ferryarrow.ferry;

import io.github.ferryarrow.ferry.jni.FerryNativeConstants;

/** How much of an array ferry's validator checks (docs/validation.md lists the rules). */
public enum Validation {
  /** Nothing: the producer is trusted. */
  NONE(FerryNativeConstants.FERRY_JNI_VALIDATE_NONE),
  /** Structure: format, buffer and child counts, lengths and offsets, dictionary,
   *  one device for everything, residency where the device can tell; no buffer
   *  content is read. */
  DEFAULT(FerryNativeConstants.FERRY_VALIDATE_DEFAULT),
  /** DEFAULT plus the contents: offsets monotone and in range, UTF-8, null counts
   *  against validity bits, union ids. */
  FULL(FerryNativeConstants.FERRY_VALIDATE_FULL);

  private final int level;

  Validation(int level) {
    this.level = level;
  }

  /** The level the native layer takes. */
  int level() {
    return level;
  }
}
