/* The release watch: proof of release-exactly-once and of unchanged buffer
 * addresses, independent of what the producer or the consumer reports.
 * Used by `ferry check`, the matrix host, the conformance mode, the demo and
 * the benchmark's --check.
 *
 * Watching a struct replaces its release callback (and those of every child
 * and dictionary below it) with a counting wrapper that forwards the first
 * call to the producer's original callback and only counts any further call,
 * so a double release becomes a finding instead of a double free. For arrays
 * the watch also records the buffer addresses at watch time and compares
 * them when the struct is released: a consumer must hand back exactly the
 * producer's buffers.
 *
 * Structs belong to groups (one handoff, one batch), verified separately.
 * A consumer may move a struct before releasing it: the wrapper then finds
 * it by its private_data, which moves with it (find_locked in
 * release_watch.c has the exact rules; a struct without private_data is
 * known by its address only). A struct still unreleased
 * when its group is verified stays known (an orphan), so that a late release
 * (a garbage collector, a finalizer) still reaches the producer exactly once
 * and is reported where it happens. Thread-safe: consumers may release on
 * any thread. */
#ifndef FERRY_HARNESS_RELEASE_WATCH_H
#define FERRY_HARNESS_RELEASE_WATCH_H

#include <stddef.h>
#include <stdint.h>

#include "ferry/ferry.h"

enum it_watch_kind { IT_WATCH_SCHEMA, IT_WATCH_ARRAY, IT_WATCH_STREAM };

enum it_watch_problem {
  IT_WATCH_NEVER_RELEASED,   /* a struct of the group was not released */
  IT_WATCH_RELEASED_AGAIN,   /* released `count` times */
  IT_WATCH_LEFT_SET,         /* the original callback left release non-NULL */
  IT_WATCH_BUFFERS_CHANGED,  /* released with other buffers than it was exported with */
  IT_WATCH_UNKNOWN_RELEASES, /* `count` release calls on structs that were not live */
  IT_WATCH_LATE_RELEASES,    /* `count` orphans of earlier groups released since the
                                last verification (`where`: the first) */
  IT_WATCH_NOT_WATCHED       /* `count` structs could not be watched (out of memory) */
};

struct it_watch_finding {
  enum it_watch_problem problem;
  enum it_watch_kind kind;
  const char* where; /* "array.children[1]", "batch[2]"; "" for the counts */
  int64_t count;
  const void* exported_buffer; /* IT_WATCH_BUFFERS_CHANGED: buffer 1 at export */
  const void* released_buffer; /* ... and at release */
};

/* Called once per finding by it_watch_verify; borrows `finding`. */
typedef void (*it_watch_report_fn)(void* context, const struct it_watch_finding* finding);

/* Starts a new group: structs watched from now on belong to it. */
int it_watch_new_group(void);

/* Interposes on `schema` and everything below it; `where` names the root
 * ("schema", "batch[1].schema"). Borrows the struct, which stays owned by
 * whoever owns it; released structs are ignored. 0, or -1 when the watch
 * has no memory left (reported by the next verification too). */
int it_watch_schema(struct ArrowSchema* schema, const char* where);
/* The same for an array tree, recording every buffer address as well. */
int it_watch_array(struct ArrowArray* array, const char* where);
/* The same for a stream (its release only; stream_watch.h wraps the rest). */
int it_watch_stream(struct ArrowDeviceArrayStream* stream, const char* where);

/* Checks every struct of `group` (0: every group): released exactly once,
 * release set to NULL by the original callback, buffers unchanged; plus the
 * process-wide counts (unknown and late releases, structs not watched) since
 * the last verification. Calls `report` (may be NULL) per finding, then
 * forgets the group's released structs (unreleased ones stay as orphans).
 * Returns the number of findings. */
int64_t it_watch_verify(int group, it_watch_report_fn report, void* context);

/* The same, joining the findings' texts with "; " into `out` as far as it
 * reaches ("" when none). */
int64_t it_watch_verify_text(int group, char* out, size_t size);

/* "schema", "array" or "stream". */
const char* it_watch_kind_name(enum it_watch_kind kind);

/* The text of one finding: "array array.children[0] was released 2 times
 * (exactly once is allowed)". */
void it_watch_describe(const struct it_watch_finding* finding, char* out, size_t size);

/* Structs watched in `group` so far (0: in every group, orphans included). */
int64_t it_watch_count(int group);

/* Writes "array: - 0x..; array.children[0]: - 0x.." listing the buffer
 * addresses of the array structs of `group` whose path starts with `prefix`,
 * as recorded at watch time (or, with `at_release`, as handed back at
 * release), for the demo's hop lines. */
void it_watch_describe_buffers(int group, const char* prefix, int at_release, char* out,
                               size_t size);

#endif  // FERRY_HARNESS_RELEASE_WATCH_H
