/* The one place where test code fills an Arrow C interface struct from its
 * parts: the unit tests (core/test, hand_made.h), the test producers, the
 * harness, the conformance suite, the matrix host and its self-test plugin,
 * the `ferry check` tool and the benchmarks. Each function sets every field of
 * the struct (those it takes no argument for become 0 or NULL), so a caller
 * needs no memset first and cannot leave a field from an earlier use behind.
 * Header-only (static inline functions): a test producer or plugin needs no
 * archive for it. The core's own exports (core/src) fill their structs
 * themselves. */
#ifndef FERRY_HARNESS_STRUCT_FILL_H
#define FERRY_HARNESS_STRUCT_FILL_H

#include "ferry/ferry.h"

/* A schema node: `format` and `name` are borrowed (they must outlive it),
 * no metadata, no dictionary. */
static inline void it_fill_schema(struct ArrowSchema* schema, const char* format,
                                  const char* name, int64_t flags, int64_t n_children,
                                  struct ArrowSchema** children,
                                  void (*release)(struct ArrowSchema*),
                                  void* private_data) {
  /* In the order of the fields, which the Arrow ABI fixes: format, name,
   * metadata, flags, n_children, children, dictionary, release, private_data. */
  *schema = (struct ArrowSchema){format,   name, NULL,    flags,       n_children,
                                 children, NULL, release, private_data};
}

/* An array node at offset 0 with no nulls counted (a caller with nulls sets
 * null_count after) and no dictionary; `buffers` and `children` are borrowed. */
static inline void it_fill_array(struct ArrowArray* array, int64_t length,
                                 int64_t n_buffers, const void** buffers,
                                 int64_t n_children, struct ArrowArray** children,
                                 void (*release)(struct ArrowArray*),
                                 void* private_data) {
  /* In the order of the fields, which the Arrow ABI fixes: length, null_count,
   * offset, n_buffers, n_children, buffers, children, dictionary, release,
   * private_data. */
  *array = (struct ArrowArray){length,  0,        0,    n_buffers, n_children,
                               buffers, children, NULL, release,   private_data};
}

/* A device stream from its callbacks (any may be NULL, for a test of a
 * stream that lacks one) and the private data they share. */
static inline void it_fill_stream(
    struct ArrowDeviceArrayStream* stream, ArrowDeviceType device_type,
    int (*get_schema)(struct ArrowDeviceArrayStream*, struct ArrowSchema*),
    int (*get_next)(struct ArrowDeviceArrayStream*, struct ArrowDeviceArray*),
    const char* (*get_last_error)(struct ArrowDeviceArrayStream*),
    void (*release)(struct ArrowDeviceArrayStream*), void* private_data) {
  *stream = (struct ArrowDeviceArrayStream){.device_type = device_type,
                                            .get_schema = get_schema,
                                            .get_next = get_next,
                                            .get_last_error = get_last_error,
                                            .release = release,
                                            .private_data = private_data};
}

/* An async consumer's handler, before the producer is known (producer is
 * NULL: the producer sets it when it calls on_schema). */
static inline void it_fill_handler(
    struct ArrowAsyncDeviceStreamHandler* handler,
    int (*on_schema)(struct ArrowAsyncDeviceStreamHandler*, struct ArrowSchema*),
    int (*on_next_task)(struct ArrowAsyncDeviceStreamHandler*, struct ArrowAsyncTask*,
                        const char*),
    void (*on_error)(struct ArrowAsyncDeviceStreamHandler*, int, const char*,
                     const char*),
    void (*release)(struct ArrowAsyncDeviceStreamHandler*), void* private_data) {
  *handler = (struct ArrowAsyncDeviceStreamHandler){.on_schema = on_schema,
                                                    .on_next_task = on_next_task,
                                                    .on_error = on_error,
                                                    .release = release,
                                                    .private_data = private_data};
}

#endif  // FERRY_HARNESS_STRUCT_FILL_H
