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

/* The limits of FULL validation's metadata walk. The blob carries no size,
 * so no walk of it can be bounded; these stop the walk at counts and lengths
 * no real schema has (garbage read as a header), before they are followed.
 * The value limit is ferry_schema_add_metadata's own. */
#define FERRY_METADATA_MAX_PAIRS (1 << 16)
#define FERRY_METADATA_MAX_KEY_LENGTH (1 << 20)
#define FERRY_METADATA_MAX_VALUE_LENGTH (1 << 30)

/* A count or length beyond those limits: `what` ("pair count", "key
 * length", "value length") of pair `index` (-1 for the count) is `value`. */
struct FerryMetadataProblem {
  const char* what;
  int64_t index;
  int64_t value;
  int64_t limit;
};

/* For FULL validation: -1 when the encoding is malformed (a negative count
 * or length), -2 when a count or length is beyond the limits above
 * (described in `problem`; nothing past it was read), 1 when a key is not
 * valid UTF-8 (described in `bad`), 0 when the blob is well formed and every
 * key is UTF-8 (values may be any bytes). NULL metadata gives 0. Reads the
 * whole blob as its own lengths describe it: only FULL may call this. */
int ferry__metadata_check_keys(const char* metadata, struct FerryMetadataBadKey* bad,
                               struct FerryMetadataProblem* problem);

#endif  // FERRY_SRC_ACCESSORS_H
