/* What accessors.c offers the rest of the core beyond the public accessors.
 * Private to the core. */
#ifndef FERRY_SRC_ACCESSORS_H
#define FERRY_SRC_ACCESSORS_H

#include <stdint.h>

/* Total size in bytes of a binary-encoded metadata blob (int32 n_pairs, then
 * per pair int32 key_len, key, int32 value_len, value), or -1 when the
 * encoding is malformed (a negative count or length). NULL gives 0. */
int64_t ferry__metadata_encoded_size(const char* metadata);

#endif  // FERRY_SRC_ACCESSORS_H
