/* What accessors.c offers the rest of the core beyond the public accessors.
 * Private to the core. */
#ifndef FERRY_SRC_ACCESSORS_H
#define FERRY_SRC_ACCESSORS_H

#include <stdint.h>

/* Total size in bytes of a binary-encoded metadata blob (int32 n_pairs, then
 * per pair int32 key_len, key, int32 value_len, value), or -1 when the
 * encoding is malformed (a negative count or length). NULL gives 0. */
int64_t ferry__metadata_encoded_size(const char* metadata);

/* The first metadata key that is not valid UTF-8: pair `index`, whose byte
 * `byte_offset` (value `byte`) starts the invalid sequence. */
struct FerryMetadataBadKey {
  int64_t index; /* -1: every key is valid */
  int64_t byte_offset;
  uint8_t byte;
};

/* For validation: -1 when the encoding is malformed (a negative count or
 * length), 1 when a key is not valid UTF-8 (described in `bad`), 0 when the
 * blob is well formed and every key is UTF-8 (values may be any bytes). NULL
 * metadata gives 0. */
int ferry__metadata_check_keys(const char* metadata, struct FerryMetadataBadKey* bad);

#endif  // FERRY_SRC_ACCESSORS_H
