/* Private helpers shared by ferry's producer-side files (producer.c,
 * stream.c) and the accessors. Never installed. */
#ifndef FERRY_SRC_EXPORT_H
#define FERRY_SRC_EXPORT_H

#include <stdint.h>

#include "ferry/ferry.h"

/* Total size in bytes of a binary-encoded metadata blob (int32 n_pairs, then
 * per pair int32 key_len, key, int32 value_len, value), or -1 when the
 * encoding is malformed (a negative count or length). NULL gives 0. */
int64_t ferry_metadata_encoded_size(const char* metadata);

/* Replaces the metadata of a schema made by ferry_schema_init with a copy of
 * `size` bytes of already-encoded metadata (NULL/0 removes it). EINVAL for
 * other schemas. Borrows `metadata`. */
int ferry_schema_set_metadata_encoded(struct ArrowSchema* schema, const char* metadata,
                                      int64_t size, struct FerryError* error);

/* Fills `out` (released) with a deep copy of `src` made by ferry_schema_init
 * (format, name, flags, metadata, children and dictionary, recursively).
 * Borrows `src`; on failure `out` is left released. */
int ferry_schema_deep_copy(const struct ArrowSchema* src, struct ArrowSchema* out,
                           struct FerryError* error);

#endif  // FERRY_SRC_EXPORT_H
