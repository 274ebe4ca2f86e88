/* What producer.c offers the rest of the core beyond the public producer
 * helpers (stream.c copies schemas with it). Private to the core. */
#ifndef FERRY_SRC_PRODUCER_H
#define FERRY_SRC_PRODUCER_H

#include <stdint.h>

#include "ferry/ferry.h"

/* Replaces the metadata of a schema made by ferry_schema_init with a copy of
 * `size` bytes of already-encoded metadata (NULL/0 removes it). EINVAL for
 * other schemas. Borrows `metadata`. */
int ferry__schema_set_metadata_encoded(struct ArrowSchema* schema, const char* metadata,
                                      int64_t size, struct FerryError* error);

/* Fills `out` (released) with a deep copy of `src` made by ferry_schema_init
 * (format, name, flags, metadata, children and dictionary, recursively).
 * Borrows `src`; on failure `out` is left released. */
int ferry__schema_deep_copy(const struct ArrowSchema* src, struct ArrowSchema* out,
                           struct FerryError* error);

#endif  // FERRY_SRC_PRODUCER_H
