/* ferry_hostile: the one library of hostile producers (issue 21, item 5).
 *
 * Arrays, schemas and streams that lie about themselves in one way each,
 * chosen by name from a catalogue that also says what a consumer must
 * answer: the core's test (core/test/hostile_test.c) and every binding's
 * hostile suite iterate it and assert that each import is refused with the
 * expected finding. Test infrastructure only: never installed, never part
 * of a product (build/lib/libferry_hostile.so, CMake target ferry_hostile).
 *
 * Every node (array, schema, stream) made here is counted while live; a
 * released node is kept (not freed) until ferry_hostile_reset, so that a
 * second release through a stale copy is counted instead of touching freed
 * memory. The makers never read what they are handed and never crash on
 * their own lies. The makers and the counters are thread-safe; a stream's
 * callbacks, like any producer's, take one call at a time.
 */
#ifndef FERRY_HOSTILE_H
#define FERRY_HOSTILE_H

#include <stdint.h>

#include "ferry/ferry.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FERRY_HOSTILE_EXPORT __attribute__((visibility("default")))

/* ---- the array catalogue ------------------------------------------------ */

/* What a consumer must do with a case (ferry_hostile_kind). */
/** The default import (FERRY_VALIDATE_DEFAULT) refuses it. */
#define FERRY_HOSTILE_REFUSED 0
/** Only FULL validation finds it (content a DEFAULT import never reads). */
#define FERRY_HOSTILE_FULL 1
/** DEFAULT validation accepts it (CPU buffers carry no size); every reader
 *  must refuse what its buffers cannot back instead of reading. FULL
 *  validation reads what the producer declares: not for these. */
#define FERRY_HOSTILE_READER 2

/* Flags of a case (ferry_hostile_flags). */
/** The lie is about what no reader follows (a count, a reserved word, a
 *  name, a node that appears twice, which only its release gets wrong): the
 *  values still read fine once imported without validation (a reader that
 *  walks every path of a shared chain walks 2^40 of them: bound the depth). */
#define FERRY_HOSTILE_READABLE 1
/** The array is not on the CPU (the sim device, or a device nobody knows). */
#define FERRY_HOSTILE_DEVICE 2

/** The number of array cases. */
FERRY_HOSTILE_EXPORT int32_t ferry_hostile_count(void);
/** Case `i`'s name (static), or NULL when `i` is out of range. */
FERRY_HOSTILE_EXPORT const char* ferry_hostile_name(int32_t i);
/** The index of the case called `name`, or -1. */
FERRY_HOSTILE_EXPORT int32_t ferry_hostile_find(const char* name);
/** FERRY_HOSTILE_REFUSED, _FULL or _READER; -1 out of range. */
FERRY_HOSTILE_EXPORT int32_t ferry_hostile_kind(int32_t i);
/** FERRY_HOSTILE_READABLE | FERRY_HOSTILE_DEVICE; 0 out of range. */
FERRY_HOSTILE_EXPORT int32_t ferry_hostile_flags(int32_t i);
/** The errno the refusal carries (EINVAL); 0 out of range. */
FERRY_HOSTILE_EXPORT int32_t ferry_hostile_code(int32_t i);
/** "rule: where" of the validator's first finding (e.g. "n_buffers:
 *  root"), a prefix of the core's message; "" for a READER case (static). */
FERRY_HOSTILE_EXPORT const char* ferry_hostile_where(int32_t i);
/** Text the refusal's message contains, matched as is; "" for a READER
 *  case, whose reader words its refusal itself (static). */
FERRY_HOSTILE_EXPORT const char* ferry_hostile_needle(int32_t i);

/** Fills the released structs at `out` and `schema_out` with the case
 *  `name` (or the valid "good_int32", "good_utf8" ["ab", "", "cde"] or
 *  "good_struct_utf8" (its struct<s: utf8>), which are not in the catalogue); the caller owns both and releases them (by their release
 *  callbacks, directly or through an import). Returns 0, EINVAL for an
 *  unknown name or a NULL argument (nothing filled), ENOMEM. */
FERRY_HOSTILE_EXPORT int ferry_hostile_make(const char* name, struct ArrowDeviceArray* out,
                                            struct ArrowSchema* schema_out);

/* ---- the stream catalogue ----------------------------------------------- */

/** The number of stream cases. */
FERRY_HOSTILE_EXPORT int32_t ferry_hostile_stream_count(void);
/** Stream case `i`'s name (static), or NULL out of range. */
FERRY_HOSTILE_EXPORT const char* ferry_hostile_stream_name(int32_t i);
/** The index of the stream case called `name`, or -1. */
FERRY_HOSTILE_EXPORT int32_t ferry_hostile_stream_find(const char* name);
/** Where a consumer meets the lie: 0 at get_schema, n >= 1 at the n-th
 *  get_next; -1 out of range. */
FERRY_HOSTILE_EXPORT int32_t ferry_hostile_stream_at(int32_t i);
/** The validation level that finds it (FERRY_VALIDATE_DEFAULT, or
 *  FERRY_VALIDATE_FULL for a batch whose content lies); -2 out of range. */
FERRY_HOSTILE_EXPORT int32_t ferry_hostile_stream_level(int32_t i);
/** The errno a consumer reports (EIO for a producer that fails or breaks
 *  the protocol, EINVAL for a malformed answer); 0 out of range. */
FERRY_HOSTILE_EXPORT int32_t ferry_hostile_stream_code(int32_t i);
/** Text the consumer's error message contains (static). */
FERRY_HOSTILE_EXPORT const char* ferry_hostile_stream_needle(int32_t i);

/** Fills the released stream at `out` with the stream case `name`; the
 *  caller owns it. Returns 0, EINVAL for an unknown name, ENOMEM. */
FERRY_HOSTILE_EXPORT int ferry_hostile_stream_make(const char* name,
                                                   struct ArrowDeviceArrayStream* out);

/** Fills the released CPU stream at `out`: its schema is array case
 *  `schema_case`'s (or "released_schema": get_schema succeeds and leaves
 *  its schema released; "schema_fails": get_schema fails with EIO), then
 *  `good` batches of that case, then one batch of `batch_case`, then the
 *  end. `batch_case` may also be "" (no batch: the end), "fails" (EIO with
 *  the message "injected failure at get_next N"), "fails_silently:CODE"
 *  (CODE, no message), "fills_and_fails" (a batch of the schema's case filled,
 *  then EIO),
 *  "fail_then_good" (that failure, then good batches for ever: each later
 *  call counts in ferry_hostile_calls_after_failure) or "other_device" (a
 *  batch of the schema's case claiming the sim device). The caller owns the stream.
 *  Returns 0, EINVAL for an unknown case, ENOMEM. */
FERRY_HOSTILE_EXPORT int ferry_hostile_stream(const char* schema_case, const char* batch_case,
                                              int32_t good, struct ArrowDeviceArrayStream* out);

/** get_next calls made on any stream after it had failed (a consumer must
 *  make none). */
FERRY_HOSTILE_EXPORT int64_t ferry_hostile_calls_after_failure(void);

/* ---- one-off nodes (for tests that need one particular lie) -------------- */

/* Kinds of ferry_hostile_add_child. */
#define FERRY_HOSTILE_CHILD_NODE 0     /* `child`, owned by the parent */
#define FERRY_HOSTILE_CHILD_NULL 1     /* a NULL pointer in the children table */
#define FERRY_HOSTILE_CHILD_RELEASED 2 /* a node already released */
#define FERRY_HOSTILE_CHILD_SELF 3     /* the parent itself (a cycle) */

/** A counted array node of `length`, `null_count` and `offset` declaring
 *  `declared_n_buffers` buffers; buffer i (of `n_buffers`, at most 8) holds
 *  a copy of the next sizes[i] bytes of `blob` (with 64 zero bytes of slack
 *  after them), or is NULL when sizes[i] < 0. Owned by the caller until it
 *  is made a child, a dictionary or a device array. */
FERRY_HOSTILE_EXPORT struct ArrowArray* ferry_hostile_node(int64_t length, int64_t null_count,
                                                           int64_t offset, int64_t n_buffers,
                                                           const uint8_t* blob,
                                                           const int64_t* sizes,
                                                           int64_t declared_n_buffers);
/** Appends a child of `kind` to `parent` (at most 8); an owned child is the
 *  parent's from then on. */
FERRY_HOSTILE_EXPORT void ferry_hostile_add_child(struct ArrowArray* parent,
                                                  struct ArrowArray* child, int32_t kind);
/** Makes `dictionary` the dictionary of `parent`, which owns it from then on. */
FERRY_HOSTILE_EXPORT void ferry_hostile_set_dictionary(struct ArrowArray* parent,
                                                       struct ArrowArray* dictionary);
/** Moves `node` into a new heap ArrowDeviceArray (free it with
 *  ferry_device_array_free) with these device fields (`with_event`: a bogus
 *  non-NULL sync_event). */
FERRY_HOSTILE_EXPORT struct ArrowDeviceArray* ferry_hostile_device_array(
    struct ArrowArray* node, int32_t device_type, int64_t device_id, int32_t with_event,
    int64_t reserved1);
/** Fills the released schema at `out` with one counted node of any format
 *  and name (NULL allowed); the caller owns it. */
FERRY_HOSTILE_EXPORT void ferry_hostile_schema(struct ArrowSchema* out, const char* format,
                                               const char* name);

/* ---- counters -------------------------------------------------------------- */

/** Nodes (arrays, schemas, streams) made and not yet released. */
FERRY_HOSTILE_EXPORT int64_t ferry_hostile_live(void);
/** Release calls on nodes already released (a consumer must make none). */
FERRY_HOSTILE_EXPORT int64_t ferry_hostile_released_again(void);
/** Frees every released node kept so far (only when nothing made here is
 *  live: a live tree may point at a released child) and clears the counters
 *  of second releases and calls after failure. */
FERRY_HOSTILE_EXPORT void ferry_hostile_reset(void);

#ifdef __cplusplus
}
#endif

#endif /* FERRY_HOSTILE_H */
