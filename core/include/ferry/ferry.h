/* ferry: zero-copy handoff of Arrow device arrays and streams between runtimes.
 *
 * This is the whole public C API of libferry. Every function here is exported
 * and non-inline, so that cgo, JNI, cffi, LuaJIT's FFI and dlsym all see the
 * same symbols. generators/extract_api.py reads this header once into
 * core/abi/api.json (functions, constants, and every struct's layout as the
 * compiler lays it out), from which every binding's raw layer is generated;
 * bindings never compute struct offsets themselves (they read fields through
 * the accessors below or through layouts generated and checked from that
 * description).
 *
 * Conventions
 * - Errors: functions returning `int` return FERRY_OK (0) or an errno code
 *   (EINVAL bad input, ENOMEM out of memory, ENOTSUP/ENODEV backend missing,
 *   EIO device or producer failure). When `error` is not NULL its message is
 *   set on failure. No function aborts on bad input.
 * - Ownership: each function says in one sentence what it takes, what it
 *   borrows and what the caller must release. "Moved in" means the source
 *   struct is marked released on success and untouched on failure.
 * - Thread safety: accessors are pure reads; the device registry and all
 *   global state are protected by locks. A single stream or array must not be
 *   used from two threads at once (the Arrow specification says the same).
 */
#ifndef FERRY_FERRY_H
#define FERRY_FERRY_H

#include <stddef.h>
#include <stdint.h>

#include "ferry/arrow_c_device_abi.h"
#include "ferry/ferry_version.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define FERRY_EXPORT __declspec(dllexport)
#else
#define FERRY_EXPORT __attribute__((visibility("default")))
#endif

/* ------------------------------------------------------------------------ */
/* Errors and version                                                        */
/* ------------------------------------------------------------------------ */

/** Success. Every other return value is an errno code. */
#define FERRY_OK 0

/** Size of the message buffer in struct FerryError, terminator included. */
#define FERRY_ERROR_MESSAGE_SIZE 1024

/** A caller-allocated error message buffer; always the last parameter and
 *  always optional (NULL). */
struct FerryError {
  char message[FERRY_ERROR_MESSAGE_SIZE];
};

/** Empties the message; the caller owns `error`. */
FERRY_EXPORT void ferry_error_init(struct FerryError* error);
/** Returns the message (borrowed from `error`, "" when none is set). */
FERRY_EXPORT const char* ferry_error_message(const struct FerryError* error);
/** Allocates an empty error for bindings that cannot embed the struct; the
 *  caller frees it with ferry_error_free. Returns NULL when out of memory. */
FERRY_EXPORT struct FerryError* ferry_error_new(void);
/** Frees an error made by ferry_error_new (NULL is accepted). */
FERRY_EXPORT void ferry_error_free(struct FerryError* error);
/** Returns the symbolic name of an errno code ("EINVAL"), a static string. */
FERRY_EXPORT const char* ferry_errno_name(int code);

/** Returns the library version string ("0.1.0"), a static string. */
FERRY_EXPORT const char* ferry_version(void);
/** Returns FERRY_ABI_VERSION of the library actually loaded. */
FERRY_EXPORT int32_t ferry_abi_version(void);
/** Returns FERRY_OK when a binding built against `expected_abi_version` may
 *  use this library, EINVAL (with both versions in the message) otherwise;
 *  allocates nothing. */
FERRY_EXPORT int ferry_check_abi_version(int32_t expected_abi_version,
                                         struct FerryError* error);

/* ------------------------------------------------------------------------ */
/* Device types                                                              */
/* ------------------------------------------------------------------------ */

/** Returns the lower-case name of a device type ("cpu", "cuda", "cuda_host",
 *  "rocm", "ext_dev", ...), or "unknown"; a static string. ferry's simulated
 *  device uses ARROW_DEVICE_EXT_DEV. */
FERRY_EXPORT const char* ferry_device_type_name(ArrowDeviceType device_type);
/** Parses a device type name (those above, plus "sim" for ARROW_DEVICE_EXT_DEV);
 *  returns FERRY_OK and sets `*out`, or EINVAL naming the unknown word. */
FERRY_EXPORT int ferry_device_type_from_name(const char* name, ArrowDeviceType* out,
                                             struct FerryError* error);

/* ------------------------------------------------------------------------ */
/* Allocation of the ABI structs themselves (for bindings)                   */
/* ------------------------------------------------------------------------ */

/* Each *_new returns a zeroed (released) struct on the heap, or NULL when out
 * of memory; the caller owns it and frees it with the matching *_free, which
 * takes ownership, first releases the struct if it is still live, and accepts
 * NULL. */
FERRY_EXPORT struct ArrowSchema* ferry_schema_new(void);
FERRY_EXPORT void ferry_schema_free(struct ArrowSchema* schema);
FERRY_EXPORT struct ArrowArray* ferry_array_new(void);
FERRY_EXPORT void ferry_array_free(struct ArrowArray* array);
FERRY_EXPORT struct ArrowDeviceArray* ferry_device_array_new(void);
FERRY_EXPORT void ferry_device_array_free(struct ArrowDeviceArray* array);
FERRY_EXPORT struct ArrowDeviceArrayStream* ferry_array_stream_new(void);
FERRY_EXPORT void ferry_array_stream_free(struct ArrowDeviceArrayStream* stream);

/* ------------------------------------------------------------------------ */
/* Release and move (consumer side)                                          */
/* ------------------------------------------------------------------------ */

/* Release calls the struct's release callback if it is live and leaves a
 * released struct (or NULL) alone, so calling it twice is harmless; the
 * caller keeps the struct's own memory. */
FERRY_EXPORT void ferry_schema_release(struct ArrowSchema* schema);
FERRY_EXPORT void ferry_array_release(struct ArrowArray* array);
FERRY_EXPORT void ferry_device_array_release(struct ArrowDeviceArray* array);
FERRY_EXPORT void ferry_array_stream_release(struct ArrowDeviceArrayStream* stream);

/* Move copies `src` bitwise into `dst` and marks `src` released: ownership of
 * everything `src` owned passes to `dst`. `dst` must be released (or fresh)
 * beforehand, or EINVAL is returned and nothing changes; a released `src`
 * gives EINVAL as well. */
FERRY_EXPORT int ferry_schema_move(struct ArrowSchema* src, struct ArrowSchema* dst);
FERRY_EXPORT int ferry_array_move(struct ArrowArray* src, struct ArrowArray* dst);
FERRY_EXPORT int ferry_device_array_move(struct ArrowDeviceArray* src,
                                         struct ArrowDeviceArray* dst);
FERRY_EXPORT int ferry_array_stream_move(struct ArrowDeviceArrayStream* src,
                                   struct ArrowDeviceArrayStream* dst);

/* ------------------------------------------------------------------------ */
/* Accessors: ArrowSchema (all borrow; returned pointers live as long as      */
/* the schema)                                                               */
/* ------------------------------------------------------------------------ */

FERRY_EXPORT int ferry_schema_is_released(const struct ArrowSchema* schema);
FERRY_EXPORT const char* ferry_schema_format(const struct ArrowSchema* schema);
FERRY_EXPORT const char* ferry_schema_name(const struct ArrowSchema* schema);
/** The raw, binary-encoded metadata (NULL when absent). */
FERRY_EXPORT const char* ferry_schema_metadata(const struct ArrowSchema* schema);
FERRY_EXPORT int64_t ferry_schema_flags(const struct ArrowSchema* schema);
FERRY_EXPORT int64_t ferry_schema_n_children(const struct ArrowSchema* schema);
/** Child i, or NULL when i is out of range. */
FERRY_EXPORT struct ArrowSchema* ferry_schema_child(const struct ArrowSchema* schema,
                                                    int64_t i);
FERRY_EXPORT struct ArrowSchema* ferry_schema_dictionary(
    const struct ArrowSchema* schema);
/** Number of key/value pairs in the metadata (0 when absent), or -1 when the
 *  encoding is malformed. */
FERRY_EXPORT int64_t ferry_schema_metadata_count(const struct ArrowSchema* schema);
/** Key or value of pair i as a pointer into the metadata (not terminated) and
 *  its length through `*length`; NULL when i is out of range. */
FERRY_EXPORT const char* ferry_schema_metadata_key(const struct ArrowSchema* schema,
                                                   int64_t i, int32_t* length);
FERRY_EXPORT const char* ferry_schema_metadata_value(const struct ArrowSchema* schema,
                                                     int64_t i, int32_t* length);

/* ------------------------------------------------------------------------ */
/* Accessors: ArrowArray and ArrowDeviceArray (all borrow)                   */
/* ------------------------------------------------------------------------ */

FERRY_EXPORT int ferry_array_is_released(const struct ArrowArray* array);
FERRY_EXPORT int64_t ferry_array_length(const struct ArrowArray* array);
FERRY_EXPORT int64_t ferry_array_null_count(const struct ArrowArray* array);
FERRY_EXPORT int64_t ferry_array_offset(const struct ArrowArray* array);
FERRY_EXPORT int64_t ferry_array_n_buffers(const struct ArrowArray* array);
FERRY_EXPORT int64_t ferry_array_n_children(const struct ArrowArray* array);
/** Buffer i's address (may be NULL), or NULL when i is out of range. */
FERRY_EXPORT const void* ferry_array_buffer(const struct ArrowArray* array, int64_t i);
/** Child i, or NULL when i is out of range. */
FERRY_EXPORT struct ArrowArray* ferry_array_child(const struct ArrowArray* array,
                                                  int64_t i);
FERRY_EXPORT struct ArrowArray* ferry_array_dictionary(const struct ArrowArray* array);

/** The embedded ArrowArray (borrowed; it is the same memory). */
FERRY_EXPORT struct ArrowArray* ferry_device_array_array(struct ArrowDeviceArray* array);
FERRY_EXPORT int ferry_device_array_is_released(const struct ArrowDeviceArray* array);
FERRY_EXPORT int64_t ferry_device_array_device_id(const struct ArrowDeviceArray* array);
FERRY_EXPORT ArrowDeviceType
ferry_device_array_device_type(const struct ArrowDeviceArray* array);
FERRY_EXPORT void* ferry_device_array_sync_event(const struct ArrowDeviceArray* array);
/** 1 when the three reserved words are zero, as the specification requires. */
FERRY_EXPORT int ferry_device_array_reserved_is_zero(
    const struct ArrowDeviceArray* array);

/** Computes the size in bytes of buffer `i` of `array` (described by
 *  `schema`, living on device (`device_type`, `device_id`)) from the format,
 *  length and offset; for variable-size and view layouts the last offset or
 *  the variadic size list is read, through the device backend when the memory
 *  is not host-accessible. Borrows everything; EINVAL names what is wrong. */
FERRY_EXPORT int ferry_array_buffer_size(const struct ArrowSchema* schema,
                                         const struct ArrowArray* array,
                                         ArrowDeviceType device_type, int64_t device_id,
                                         int64_t i, int64_t* size_out,
                                         struct FerryError* error);

/* ------------------------------------------------------------------------ */
/* Streams (consumer side)                                                   */
/* ------------------------------------------------------------------------ */

/* Every function here borrows `stream`; one that calls a callback on a NULL
 * or released stream returns EINVAL instead. */

/** 1 when `stream` is NULL or released. */
FERRY_EXPORT int ferry_array_stream_is_released(const struct ArrowDeviceArrayStream* stream);
/** The stream's device type (0 for NULL). */
FERRY_EXPORT ArrowDeviceType
ferry_array_stream_device_type(const struct ArrowDeviceArrayStream* stream);
/** Calls get_schema; `out` must be released beforehand and is owned by the
 *  caller on success. On failure `out` is left released, the code is
 *  returned and `error` holds the producer's get_last_error message (or a
 *  generic one). */
FERRY_EXPORT int ferry_array_stream_get_schema(struct ArrowDeviceArrayStream* stream,
                                         struct ArrowSchema* out,
                                         struct FerryError* error);
/** Calls get_next; `out` must be released beforehand (a live `out` is EINVAL
 *  and left untouched). On success the caller owns `out`, and a released
 *  `out` means the end of the stream; on failure `out` is left released and
 *  the error is as for ferry_array_stream_get_schema. A batch whose device
 *  type is not the stream's is released and refused with EINVAL. */
FERRY_EXPORT int ferry_array_stream_get_next(struct ArrowDeviceArrayStream* stream,
                                       struct ArrowDeviceArray* out,
                                       struct FerryError* error);
/** Calls get_last_error; the string is borrowed from the stream until its
 *  next call. NULL when none. */
FERRY_EXPORT const char* ferry_array_stream_get_last_error(
    struct ArrowDeviceArrayStream* stream);

/* ------------------------------------------------------------------------ */
/* Producers                                                                 */
/* ------------------------------------------------------------------------ */

/** A hook ferry calls exactly once when the consumer releases what a producer
 *  exported; `user_data` is whatever the producer passed. It must not throw,
 *  panic or raise across this C frame. */
typedef void (*FerryReleaseHook)(void* user_data);

/** Live counts of the schemas, arrays and streams that ferry's producer
 *  helpers made and that have not been released yet (process-wide; a read,
 *  exact when no other thread is exporting or releasing at that moment). */
FERRY_EXPORT int64_t ferry_live_exports(void);

/* Leak report. With the environment variable FERRY_LEAK_REPORT set to a
 * non-empty value other than "0" (read once, at first use), libferry prints
 * to stderr when it is unloaded (at process exit) one line per export of the
 * producer helpers never released ("ferry: leak: core: export never
 * released: ..."), one line per object still tracked ("ferry: leak:
 * <runtime>: <description>") and a summary line ("ferry: leak report:
 * nothing live" when clean). Off, both functions below do nothing and the
 * export paths pay one cached branch. Thread-safe. */

/** Registers a live object of a binding (an import not closed yet) for the
 *  leak report; ferry copies `runtime` and `description` (both borrowed, NULL
 *  read as "") and owns the copies until ferry_leak_untrack. Returns a token
 *  > 0, or 0 (nothing registered) when the report is off or out of memory. */
FERRY_EXPORT int64_t ferry_leak_track(const char* runtime, const char* description);
/** Forgets the object of `token` and frees ferry's copies; 0 and unknown
 *  tokens are accepted and ignored. */
FERRY_EXPORT void ferry_leak_untrack(int64_t token);
/** Prints the report now instead of at unload, for runtimes whose exit skips
 *  C destructors (a Go program's exit); the report is printed once per
 *  process, so unload then prints nothing. Returns the number of live
 *  exports and objects it named (0 when off, clean or already printed);
 *  owns nothing. */
FERRY_EXPORT int64_t ferry_leak_report(void);

/** Fills `out` (which must be released or zeroed) with a schema that owns
 *  copies of `format` and `name` (name may be NULL) and `n_children` zeroed
 *  child schemas, reachable through ferry_schema_child, which the caller must
 *  fill (with ferry_schema_init or by moving any schema in) before handing
 *  `out` to a consumer. On failure `out` is left released. */
FERRY_EXPORT int ferry_schema_init(struct ArrowSchema* out, const char* format,
                                   const char* name, int64_t flags, int64_t n_children,
                                   struct FerryError* error);
/** Appends a copy of `key` and `value` (both borrowed) to the metadata of a
 *  schema made by ferry_schema_init, which owns the copy. EINVAL for other
 *  or released schemas. */
FERRY_EXPORT int ferry_schema_add_metadata(struct ArrowSchema* schema, const char* key,
                                           const char* value, struct FerryError* error);
/** Gives a schema made by ferry_schema_init a zeroed dictionary schema, owned
 *  by `schema`, that the caller fills; returned through `*dictionary_out`. */
FERRY_EXPORT int ferry_schema_allocate_dictionary(struct ArrowSchema* schema,
                                                  struct ArrowSchema** dictionary_out,
                                                  struct FerryError* error);

/** Fills `out` (released or zeroed) with an array that points at the
 *  caller's buffers without copying them. `buffers` may be NULL (all NULL,
 *  set later with ferry_array_set_buffer). `n_children` zeroed child arrays
 *  are owned by `out` and filled by the caller through ferry_array_child.
 *  When the consumer releases `out`, ferry releases the children and the
 *  dictionary, then calls `release_hook(user_data)` exactly once (the hook
 *  may be NULL), so the producer's runtime frees its buffers. On failure the
 *  hook is not called and the caller still owns its buffers. */
FERRY_EXPORT int ferry_array_init(struct ArrowArray* out, int64_t length,
                                  int64_t null_count, int64_t offset, int64_t n_buffers,
                                  const void* const* buffers, int64_t n_children,
                                  FerryReleaseHook release_hook, void* user_data,
                                  struct FerryError* error);
/** Sets buffer i of an array made by ferry_array_init to `buffer`, which
 *  stays the producer's (borrowed until the release hook runs). */
FERRY_EXPORT int ferry_array_set_buffer(struct ArrowArray* array, int64_t i,
                                        const void* buffer, struct FerryError* error);
/** Gives an array made by ferry_array_init a zeroed dictionary array, owned
 *  by `array`, that the caller fills; returned through `*dictionary_out`. */
FERRY_EXPORT int ferry_array_allocate_dictionary(struct ArrowArray* array,
                                                 struct ArrowArray** dictionary_out,
                                                 struct FerryError* error);

/** Fills `out` (released beforehand, or `array` may be `&out->array`) with
 *  `array` (moved in) living on (`device_type`, `device_id`); the caller
 *  releases `out`. `sync_event` (may be NULL) is the producer's event, a
 *  pointer to the native event handle as the specification says, and stays
 *  the producer's: when `event_release` is not NULL ferry calls
 *  `event_release(event_user_data)` exactly once after the array itself is
 *  released, which ties the event's lifetime to release. On failure nothing
 *  is moved and no hook runs. */
FERRY_EXPORT int ferry_device_array_init(struct ArrowDeviceArray* out,
                                         struct ArrowArray* array,
                                         ArrowDeviceType device_type, int64_t device_id,
                                         void* sync_event, FerryReleaseHook event_release,
                                         void* event_user_data, struct FerryError* error);

/** Stream producer callbacks. Each receives the producer's `user_data`; a
 *  failure returns an errno code and writes its message into `error`, which
 *  ferry keeps as the stream's last error. End of stream: get_next returns 0
 *  and leaves `out` released. */
typedef int (*FerryStreamGetSchemaFn)(void* user_data, struct ArrowSchema* out,
                                      struct FerryError* error);
typedef int (*FerryStreamGetNextFn)(void* user_data, struct ArrowDeviceArray* out,
                                    struct FerryError* error);

/** Fills `out` (released or zeroed) with a stream of `device_type` backed by
 *  the callbacks, which the consumer releases. ferry keeps the last error
 *  message, returns end-of-stream forever once reached, refuses calls on a
 *  released stream, checks that every batch has the stream's device type,
 *  and calls `release_hook(user_data)` exactly once when the consumer
 *  releases the stream: `user_data` stays the producer's until then. On
 *  failure the hook is not called. */
FERRY_EXPORT int ferry_array_stream_init(struct ArrowDeviceArrayStream* out,
                                   ArrowDeviceType device_type,
                                   FerryStreamGetSchemaFn get_schema,
                                   FerryStreamGetNextFn get_next,
                                   FerryReleaseHook release_hook, void* user_data,
                                   struct FerryError* error);

/** Fills `out` with a stream that yields `schema` and then `arrays[0..n)`;
 *  the schema and every array are moved in on success (on failure nothing is
 *  moved). All arrays must have `device_type`. */
FERRY_EXPORT int ferry_array_stream_init_from_arrays(struct ArrowDeviceArrayStream* out,
                                               ArrowDeviceType device_type,
                                               struct ArrowSchema* schema,
                                               struct ArrowDeviceArray* arrays, int64_t n,
                                               struct FerryError* error);

/* ------------------------------------------------------------------------ */
/* Format strings and validation                                             */
/* ------------------------------------------------------------------------ */

/** FERRY_OK when `format` (borrowed) is a valid C data interface format
 *  string, else EINVAL naming the problem. */
FERRY_EXPORT int ferry_format_validate(const char* format, struct FerryError* error);

/** Validation levels. DEFAULT checks structure without reading buffer
 *  contents; FULL also reads offsets, UTF-8, validity bits and union ids
 *  (copying device memory to the host when it is not host-accessible).
 *  docs/validation.md lists every rule, and what no consumer can check (on
 *  the CPU, a declared length longer than its buffer). */
#define FERRY_VALIDATE_DEFAULT 0
#define FERRY_VALIDATE_FULL 1

/** Called once per finding: `rule` is a short stable identifier
 *  ("format", "n_buffers", "device", "reserved", "offsets", ...), `where` a
 *  path such as "root.children[1].dictionary", `what` a sentence. */
typedef void (*FerryFindingFn)(void* user_data, const char* rule, const char* where,
                               const char* what);

/** Validates a schema alone. Returns FERRY_OK when clean, else EINVAL with
 *  the first finding in `error`; every finding goes to `on_finding` (may be
 *  NULL). Borrows everything. */
FERRY_EXPORT int ferry_validate_schema(const struct ArrowSchema* schema,
                                       FerryFindingFn on_finding, void* user_data,
                                       struct FerryError* error);
/** Validates `array` against `schema` at `level`: format, buffer and child
 *  counts per layout, dictionary, reserved bytes zero, one device for every
 *  buffer, child and dictionary (residency checked through the backend when
 *  it can; a buffer that fails it is never read), sync_event NULL on the CPU,
 *  and in FULL mode offsets monotone and in range, UTF-8 valid and null
 *  counts consistent. A child or dictionary that appears twice (shared, or
 *  its own ancestor) is one finding ("shared", "cycle") and is not walked
 *  again: the work is linear in the distinct nodes. Returns as above. */
FERRY_EXPORT int ferry_validate_device_array(const struct ArrowSchema* schema,
                                             const struct ArrowDeviceArray* array,
                                             int32_t level, FerryFindingFn on_finding,
                                             void* user_data, struct FerryError* error);

/** A schema validated once and kept in the form validation works from, for
 *  validating many arrays of that schema (a stream's batches, a binding's
 *  reused consumer) without walking and parsing the schema again. Owned by
 *  whoever created it; immutable, so usable from many threads at once. */
struct FerryPreparedSchema;

/** Validates `schema` as ferry_validate_schema does (every finding to
 *  `on_finding`) and, when it is clean, makes `*out`, owned by the caller
 *  until ferry_prepared_schema_free. Borrows `schema`: the prepared schema
 *  keeps copies of what it needs, so `schema` may be released afterwards.
 *  EINVAL with the first finding (`*out` NULL), ENOMEM. */
FERRY_EXPORT int ferry_prepared_schema_create(const struct ArrowSchema* schema,
                                              FerryFindingFn on_finding,
                                              void* user_data,
                                              struct FerryPreparedSchema** out,
                                              struct FerryError* error);
/** Frees a prepared schema (NULL is accepted). */
FERRY_EXPORT void ferry_prepared_schema_free(struct FerryPreparedSchema* prepared);
/** ferry_validate_device_array for an array of the prepared schema: the same
 *  findings, without the schema's walk. Borrows everything. */
FERRY_EXPORT int ferry_validate_prepared(const struct FerryPreparedSchema* prepared,
                                         const struct ArrowDeviceArray* array,
                                         int32_t level, FerryFindingFn on_finding,
                                         void* user_data, struct FerryError* error);

/* ------------------------------------------------------------------------ */
/* Devices                                                                   */
/* ------------------------------------------------------------------------ */

/** A device known to ferry's registry. Owned by the registry for the life of
 *  the process; never freed by callers. */
struct FerryDevice;

/** Number of backends compiled in (cpu, sim, cuda, rocm), and each one's
 *  name (a static string; NULL for an index out of range). */
FERRY_EXPORT int64_t ferry_backend_count(void);
FERRY_EXPORT const char* ferry_backend_name(int64_t i);
/** FERRY_OK when backend i can be used now; otherwise an errno code and the
 *  real reason in `error` (library missing, stub library, no driver, no
 *  device, with the driver's own error names). The probe runs once. */
FERRY_EXPORT int ferry_backend_probe(int64_t i, struct FerryError* error);

/** Finds the device for (`device_type`, `device_id`) (thread-safe, loading the
 *  backend on first use); `*out` belongs to the registry. The CPU is
 *  (ARROW_DEVICE_CPU, -1); 0 is accepted too. ENODEV/ENOTSUP with the reason
 *  when unavailable. */
FERRY_EXPORT int ferry_device_resolve(ArrowDeviceType device_type, int64_t device_id,
                                      struct FerryDevice** out, struct FerryError* error);
/** The device's type and id (borrowed; 0 and -1 for NULL). */
FERRY_EXPORT ArrowDeviceType ferry_device_type(const struct FerryDevice* device);
FERRY_EXPORT int64_t ferry_device_id(const struct FerryDevice* device);
/** 1 when the host may dereference this device's memory directly (CPU, and
 *  the sim device, whose strict mode makes premature reads visible). */
FERRY_EXPORT int ferry_device_is_host_accessible(const struct FerryDevice* device);

/** Allocates `size` bytes on `device`; the caller frees them with
 *  ferry_device_deallocate on the same device. */
FERRY_EXPORT int ferry_device_allocate(struct FerryDevice* device, int64_t size,
                                       void** out, struct FerryError* error);
/** Frees memory from ferry_device_allocate on the same device (NULL is
 *  accepted); on failure the caller still owns it. */
FERRY_EXPORT int ferry_device_deallocate(struct FerryDevice* device, void* ptr,
                                         struct FerryError* error);
/** Allocations made through ferry_device_allocate on `device` and not freed. */
FERRY_EXPORT int64_t ferry_device_live_allocations(struct FerryDevice* device);

/** Copies `size` bytes; when `stream` (a stream of the non-CPU device, or of
 *  `dst_device` when both are devices) is NULL the copy is complete on
 *  return, else it is ordered on that stream. Borrows everything. */
FERRY_EXPORT int ferry_device_memcpy(struct FerryDevice* dst_device, void* dst,
                                     struct FerryDevice* src_device, const void* src,
                                     int64_t size, void* stream,
                                     struct FerryError* error);

/** Creates a stream on `device`, owned by the caller until
 *  ferry_device_stream_destroy. */
FERRY_EXPORT int ferry_device_stream_create(struct FerryDevice* device, void** stream_out,
                                            struct FerryError* error);
/** Destroys a stream from ferry_device_stream_create (work already queued on
 *  it still completes); on failure the caller still owns it. */
FERRY_EXPORT int ferry_device_stream_destroy(struct FerryDevice* device, void* stream,
                                             struct FerryError* error);
/** Blocks until all work queued on `stream` (borrowed) is done; NULL waits
 *  for all work of the device. */
FERRY_EXPORT int ferry_device_stream_synchronize(struct FerryDevice* device, void* stream,
                                                 struct FerryError* error);
/** Creates an event; `*sync_event_out` is a pointer to the native handle
 *  (CUevent*, hipEvent_t*, ...), usable as ArrowDeviceArray.sync_event, owned
 *  by the caller until ferry_device_event_destroy. */
FERRY_EXPORT int ferry_device_event_create(struct FerryDevice* device,
                                           void** sync_event_out,
                                           struct FerryError* error);
/** Destroys an event from ferry_device_event_create; on failure the caller
 *  still owns it. */
FERRY_EXPORT int ferry_device_event_destroy(struct FerryDevice* device, void* sync_event,
                                            struct FerryError* error);
/** Records the event at the current end of `stream` (both borrowed). */
FERRY_EXPORT int ferry_device_event_record(struct FerryDevice* device, void* sync_event,
                                           void* stream, struct FerryError* error);
/** Blocks the host until the event (borrowed) has completed. */
FERRY_EXPORT int ferry_device_event_synchronize(struct FerryDevice* device,
                                                void* sync_event,
                                                struct FerryError* error);
/** Makes `stream` wait for the event without blocking the host (both
 *  borrowed). */
FERRY_EXPORT int ferry_device_stream_wait_event(struct FerryDevice* device, void* stream,
                                                void* sync_event,
                                                struct FerryError* error);

/** How ferry_device_array_init_async treats the producer's stream:
 *  RECORD_EVENT (the default) records a new event, destroyed at release;
 *  SYNCHRONIZE synchronizes the stream and exports sync_event NULL. */
#define FERRY_SYNC_RECORD_EVENT 0
#define FERRY_SYNC_SYNCHRONIZE 1

/** Like ferry_device_array_init for memory on `device` produced on
 *  `producer_stream` (borrowed; may be NULL: then nothing is pending and no
 *  event is exported), using `policy`. `array` is moved in on success and
 *  the caller releases `out`, which owns the recorded event; on failure
 *  nothing is moved and no event is left behind. */
FERRY_EXPORT int ferry_device_array_init_async(struct ArrowDeviceArray* out,
                                               struct ArrowArray* array,
                                               struct FerryDevice* device,
                                               void* producer_stream, int32_t policy,
                                               struct FerryError* error);

/** Consumer side of the sync event: with `consumer_stream` NULL the host
 *  blocks until the array's event has completed; otherwise that stream (of
 *  the array's device) is made to wait on the event, and the host does not
 *  block. A NULL sync_event returns at once. Borrows `array`. */
FERRY_EXPORT int ferry_device_array_wait(const struct ArrowDeviceArray* array,
                                         void* consumer_stream, struct FerryError* error);

/** Deep-copies `src` (described by `schema`; children, dictionary and
 *  variadic buffers included) to (`device_type`, `device_id`) after waiting
 *  on its event; `out` (released beforehand) is owned by the caller and has
 *  no pending work (sync_event NULL). `src` stays owned by the caller. A
 *  shared or cyclic child or dictionary is refused (EINVAL), as is a buffer
 *  the source device knows is shorter than its size (EFAULT). */
FERRY_EXPORT int ferry_device_array_copy(const struct ArrowSchema* schema,
                                         const struct ArrowDeviceArray* src,
                                         ArrowDeviceType device_type, int64_t device_id,
                                         struct ArrowDeviceArray* out,
                                         struct FerryError* error);

/* ------------------------------------------------------------------------ */
/* The simulated device (ARROW_DEVICE_EXT_DEV)                               */
/* ------------------------------------------------------------------------ */

/** Byte that sim memory reads as, in strict mode, while an asynchronous write
 *  to it has not been waited on. */
#define FERRY_SIM_POISON_BYTE 0xA5
/** Number of sim devices (device ids 0 .. FERRY_SIM_DEVICE_COUNT-1). */
#define FERRY_SIM_DEVICE_COUNT 4

/** Strict mode (the default; FERRY_SIM_STRICT=0 in the environment turns it
 *  off at start-up): queued work runs only when something waits for it, so a
 *  consumer that reads before waiting on the sync event reads poison every
 *  time. Process-wide, thread-safe; owns nothing. */
FERRY_EXPORT void ferry_sim_set_strict(int32_t strict);
FERRY_EXPORT int32_t ferry_sim_is_strict(void);

/* ------------------------------------------------------------------------ */
/* GPU interchange: consumer streams, moves between devices, DLPack          */
/* (the three sync-event export policies are described in docs/events.md)    */
/* ------------------------------------------------------------------------ */

/** Like ferry_array_stream_get_next, then hands the batch to `consumer_stream`:
 *  when the batch has a sync_event, that stream (a stream of the batch's
 *  device) is made to wait on it and the host does not block; with
 *  `consumer_stream` NULL the host waits for the event instead. On success
 *  the caller owns `out` (released at the end of the stream); the batch's
 *  event stays owned by the batch. On failure `out` is left released. */
FERRY_EXPORT int ferry_array_stream_get_next_on(struct ArrowDeviceArrayStream* stream,
                                          struct ArrowDeviceArray* out,
                                          void* consumer_stream,
                                          struct FerryError* error);

/** Moves `src` (described by `schema`, borrowed) to (`device_type`,
 *  `device_id`): without copying when the destination can reach the memory
 *  (the same device; cuda_host, rocm_host or cuda_managed memory to the CPU
 *  after the host waited on the event; cuda_managed to cuda of the same id),
 *  else by ferry_device_array_copy. On success `src` is consumed (moved into
 *  `out`, or copied and released) and the caller owns `out` (released
 *  beforehand); on failure `src` is untouched and still the caller's. */
FERRY_EXPORT int ferry_device_array_move_to_device(const struct ArrowSchema* schema,
                                                   struct ArrowDeviceArray* src,
                                                   ArrowDeviceType device_type,
                                                   int64_t device_id,
                                                   struct ArrowDeviceArray* out,
                                                   struct FerryError* error);

/** DLPack's versioned managed tensor (DLPack 1.x); its definition is in
 *  ferry/dlpack_abi.h or DLPack's own dlpack.h (the same ABI). */
struct DLManagedTensorVersioned;

/** Exports a fixed-width array without nulls (integers, floats, dates,
 *  times, timestamps and durations; schema borrowed) as a one-dimensional
 *  DLPack tensor over the same memory, on the array's device (device type
 *  values are shared with DLPack; the CPU becomes device id 0). The tensor
 *  carries no event, so first `consumer_stream` (a stream of the array's
 *  device) is made to wait on the array's sync_event, or the host waits when
 *  it is NULL. Flags: READ_ONLY (Arrow data is immutable), never IS_COPIED.
 *  On success `array` is moved into the tensor and the caller owns `*out`,
 *  which it releases by calling `(*out)->deleter(*out)` (that releases the
 *  array); on failure `array` is untouched. */
FERRY_EXPORT int ferry_device_array_to_dlpack(const struct ArrowSchema* schema,
                                              struct ArrowDeviceArray* array,
                                              void* consumer_stream,
                                              struct DLManagedTensorVersioned** out,
                                              struct FerryError* error);

/** Imports a one-dimensional, contiguous DLPack 1.x tensor of integers or
 *  floats, without copying, as a non-nullable Arrow array on the tensor's
 *  device (sync_event NULL: DLPack's producer has synchronized already).
 *  On success the tensor is moved in: ferry calls its deleter exactly once,
 *  when `array_out` is released; the caller owns `schema_out` and
 *  `array_out` (both released beforehand). On failure the caller still owns
 *  the tensor and nothing was called. */
FERRY_EXPORT int ferry_device_array_from_dlpack(struct DLManagedTensorVersioned* tensor,
                                                struct ArrowSchema* schema_out,
                                                struct ArrowDeviceArray* array_out,
                                                struct FerryError* error);

/* ------------------------------------------------------------------------ */
/* Async device streams (ArrowAsyncDeviceStreamHandler; docs/async.md)       */
/* ------------------------------------------------------------------------ */

/* Raw accessors and callers of the three async structs, for bindings that
 * hold them by address. The callers check for NULL and released structs and
 * return EINVAL (or do nothing, for void ones) instead of crashing. */

/** A zeroed (released) handler on the heap, or NULL when out of memory; the
 *  caller owns it and frees it with ferry_async_handler_free once the
 *  producer it was handed to has released it. */
FERRY_EXPORT struct ArrowAsyncDeviceStreamHandler* ferry_async_handler_new(void);
/** Frees a handler from ferry_async_handler_new (NULL is accepted), calling
 *  its release first when it is still live (only correct when no producer
 *  holds it any more). */
FERRY_EXPORT void ferry_async_handler_free(struct ArrowAsyncDeviceStreamHandler* handler);
/** 1 when `handler` is NULL or released (release is NULL); borrows it. */
FERRY_EXPORT int ferry_async_handler_is_released(
    const struct ArrowAsyncDeviceStreamHandler* handler);
/** The producer the handler was given (NULL before the producer set it, or
 *  for NULL); borrowed from the producer until it releases the handler. */
FERRY_EXPORT struct ArrowAsyncProducer* ferry_async_handler_producer(
    const struct ArrowAsyncDeviceStreamHandler* handler);
/** Calls on_schema: `schema` is handed to the consumer, which owns it after
 *  the call whatever it returns (a schema it left live is released here).
 *  Returns the consumer's code, or EINVAL (schema untouched) for a NULL or
 *  released handler or schema. */
FERRY_EXPORT int ferry_async_handler_on_schema(struct ArrowAsyncDeviceStreamHandler* handler,
                                               struct ArrowSchema* schema);
/** Calls on_next_task with `task` (NULL: the end of the stream) and
 *  `metadata` (both borrowed for the call); returns the consumer's code, or
 *  EINVAL for a NULL or released handler. */
FERRY_EXPORT int ferry_async_handler_on_next_task(
    struct ArrowAsyncDeviceStreamHandler* handler, struct ArrowAsyncTask* task,
    const char* metadata);
/** Calls on_error (message and metadata borrowed for the call, may be
 *  NULL); does nothing for a NULL or released handler. */
FERRY_EXPORT void ferry_async_handler_on_error(struct ArrowAsyncDeviceStreamHandler* handler,
                                               int code, const char* message,
                                               const char* metadata);
/** Calls release if the handler is live and leaves it released; the caller
 *  keeps the struct's memory. */
FERRY_EXPORT void ferry_async_handler_release(struct ArrowAsyncDeviceStreamHandler* handler);

/** The producer's device type (0 for NULL). Borrows `producer`. */
FERRY_EXPORT ArrowDeviceType ferry_async_producer_device_type(
    const struct ArrowAsyncProducer* producer);
/** Calls request(n) (nothing for NULL); borrows `producer`. */
FERRY_EXPORT void ferry_async_producer_request(struct ArrowAsyncProducer* producer,
                                               int64_t n);
/** Calls cancel (nothing for NULL); borrows `producer`. */
FERRY_EXPORT void ferry_async_producer_cancel(struct ArrowAsyncProducer* producer);
/** The producer's additional metadata, binary-encoded like schema metadata
 *  (NULL when absent); borrowed from the producer. */
FERRY_EXPORT const char* ferry_async_producer_additional_metadata(
    const struct ArrowAsyncProducer* producer);

/** A zeroed (released) task on the heap, or NULL when out of memory; the
 *  caller owns it and frees it with ferry_async_task_free. */
FERRY_EXPORT struct ArrowAsyncTask* ferry_async_task_new(void);
/** Frees a task from ferry_async_task_new (NULL is accepted); a task not yet
 *  extracted is first extracted with NULL, so the producer cleans up. */
FERRY_EXPORT void ferry_async_task_free(struct ArrowAsyncTask* task);
/** 1 when `task` is NULL or already extracted (extract_data is NULL). */
FERRY_EXPORT int ferry_async_task_is_released(const struct ArrowAsyncTask* task);
/** Copies the task `src` (the one on_next_task lends) into `dst` (released
 *  beforehand) and marks `src` extracted: the right to extract passes to
 *  `dst`. EINVAL (nothing changed) for a released `src` or a live `dst`. */
FERRY_EXPORT int ferry_async_task_move(struct ArrowAsyncTask* src, struct ArrowAsyncTask* dst);
/** Calls extract_data once: the task is marked extracted before the call
 *  (a second call is EINVAL), the batch is moved into `out` (released
 *  beforehand; owned by the caller on success), or with `out` NULL the
 *  producer only cleans up. Returns the producer's code; on failure `out` is
 *  left released. */
FERRY_EXPORT int ferry_async_task_extract_data(struct ArrowAsyncTask* task,
                                               struct ArrowDeviceArray* out);

/* Producer side: one state machine for every producer in every binding.
 *
 * A FerryAsyncSender drives a consumer's handler: create it, send the schema,
 * send batches (each waits for the consumer's demand), then finish it
 * exactly once. It enforces the specification's rules: handler calls are
 * serialized (a lock is held across each callback; request and cancel never
 * take it, so the consumer may call them from inside its callbacks), never
 * more tasks than requested, request never calls back, cancel is idempotent
 * and thread-safe, request(n <= 0) stops the stream with on_error(EINVAL),
 * no on_error after cancel or after the consumer refused something, and
 * the handler's release is the last call, made exactly once. ferry keeps the
 * ArrowAsyncProducer and every task's state alive until each task handed
 * out has been extracted AND the handler is released (arrow-go calls
 * request and extract_data after the release), then frees everything. Each
 * sender function may be called from any thread. */
struct FerryAsyncSender;

/** Makes a sender for `handler` (borrowed until ferry releases it) whose
 *  producer has `device_type` and a copy of `additional_metadata` (binary
 *  schema-metadata encoding, borrowed; may be NULL), sets
 *  handler->producer, and returns it through `*out`: the caller must end it
 *  with ferry_async_sender_finish. On failure (EINVAL: NULL or released
 *  handler, malformed metadata; ENOMEM) a live handler has been given
 *  on_error and released, so the handler is released in every outcome. */
FERRY_EXPORT int ferry_async_sender_create(struct ArrowAsyncDeviceStreamHandler* handler,
                                           ArrowDeviceType device_type,
                                           const char* additional_metadata,
                                           struct FerryAsyncSender** out,
                                           struct FerryError* error);
/** Calls on_schema once with `schema`, which is moved in (consumed) in every
 *  outcome except EINVAL for a NULL or released schema or a second call.
 *  Returns the consumer's code when on_schema refuses (the stream is then
 *  stopped), ECANCELED when the stream was already stopped. */
FERRY_EXPORT int ferry_async_sender_send_schema(struct FerryAsyncSender* sender,
                                                struct ArrowSchema* schema,
                                                struct FerryError* error);
/** Waits until the consumer has requested a batch not yet sent: 0;
 *  ETIMEDOUT after `timeout_ms` (0 polls, negative waits forever);
 *  ECANCELED once the consumer cancelled or refused something; EINVAL once
 *  the consumer called request(n <= 0). After any non-zero result other
 *  than ETIMEDOUT the producer should stop and finish. Borrows `sender`. */
FERRY_EXPORT int ferry_async_sender_wait_demand(struct FerryAsyncSender* sender,
                                                int64_t timeout_ms,
                                                struct FerryError* error);
/** Waits for demand as ferry_async_sender_wait_demand, then calls
 *  on_next_task once with a task whose extract_data moves `array` out
 *  exactly once (or releases it when handed NULL), passing `metadata`
 *  (borrowed for the call; may be NULL). `array` (of the sender's device
 *  type) is moved in on success and when the consumer refuses the task (its
 *  code is returned, ferry releases the array, the stream is stopped); on
 *  ETIMEDOUT, ECANCELED or EINVAL it is untouched and still the caller's. */
FERRY_EXPORT int ferry_async_sender_send(struct FerryAsyncSender* sender,
                                         struct ArrowDeviceArray* array,
                                         const char* metadata, int64_t timeout_ms,
                                         struct FerryError* error);
/** Ends the stream and gives up `sender` (the caller must not use it
 *  again): with `code` 0 the end marker on_next_task(NULL, NULL), else
 *  on_error(code, message (borrowed; NULL accepted), NULL); neither after a
 *  cancel or a refusal, and a consumer's request(n <= 0) turns into
 *  on_error(EINVAL, ...). Then handler->release, exactly once and last.
 *  Returns FERRY_OK, or the consumer's code when it refused the end marker. */
FERRY_EXPORT int ferry_async_sender_finish(struct FerryAsyncSender* sender, int code,
                                           const char* message);
/** 1 once the stream is stopped by the consumer (cancel, a refused
 *  on_schema or task, a request(n <= 0)); the producer should then finish.
 *  Borrows `sender`. */
FERRY_EXPORT int ferry_async_sender_is_cancelled(const struct FerryAsyncSender* sender);

/** For a producer that cannot start: gives `handler` a producer (so the
 *  call is legal), calls on_error(code, message (borrowed), NULL), then
 *  release. Does nothing for a NULL or released handler. */
FERRY_EXPORT void ferry_async_handler_fail(struct ArrowAsyncDeviceStreamHandler* handler,
                                           int code, const char* message);

/** Flags of ferry_async_export_stream (none yet: pass 0). */
#define FERRY_ASYNC_EXPORT_DEFAULT 0

/** Pull to push: drives `handler` (borrowed until ferry releases it) from
 *  `stream` (moved in) on a detached thread ferry starts: get_schema, then
 *  one get_next per batch the consumer requests, then the end marker; a
 *  get_schema or get_next failure becomes on_error(code, the stream's
 *  message); a cancel stops it without on_error. The stream is released
 *  before the handler, and ferry releases both in every outcome (when the
 *  thread cannot start: on_error(code) and an error returned here). */
FERRY_EXPORT int ferry_async_export_stream(struct ArrowDeviceArrayStream* stream,
                                           struct ArrowAsyncDeviceStreamHandler* handler,
                                           int32_t flags, struct FerryError* error);
/** The same on the calling thread, returning when the handler is released:
 *  FERRY_OK at the end of the stream, ECANCELED when the consumer cancelled
 *  or refused, else the error the consumer was given (in `error`). `stream`
 *  is moved in and both are released in every outcome. */
FERRY_EXPORT int ferry_async_export_stream_run(struct ArrowDeviceArrayStream* stream,
                                               struct ArrowAsyncDeviceStreamHandler* handler,
                                               struct FerryError* error);

/* Consumer side: a handler that queues batches for a blocking reader.
 *
 * ferry_async_consumer_create fills a handler the caller hands to any
 * producer. From inside on_schema it requests `window` batches, then one
 * more for each batch the reader takes, so at most `window` batches wait in
 * its queue. Each task is extracted on arrival (on the producer's thread);
 * each batch is validated against the stream's schema when the reader takes
 * it. A producer that breaks the protocol (a task before on_schema, no
 * producer set, more tasks than requested, overlapping handler calls, calls
 * after release, a second release, an extract_data that fails or fills a
 * malformed array, on_error with a NULL message) is a violation: it is
 * counted, reported to the violation callback, and the reader gets EPROTO
 * naming it (docs/async.md lists the rules); the consumer never crashes or
 * hangs on it. Reader functions may be called from any thread, even at once
 * (each batch goes to one caller). */
struct FerryAsyncConsumer;

/** Validation level that skips validation (FERRY_VALIDATE_DEFAULT and
 *  FERRY_VALIDATE_FULL are the others). */
#define FERRY_VALIDATE_NONE -1

/** A readiness callback: ferry calls it with `user_data` (no ferry lock
 *  held, from whichever thread made the consumer ready) whenever
 *  get_schema or next may have stopped blocking. It must not throw, panic
 *  or raise across this C frame. */
typedef void (*FerryAsyncNotifyFn)(void* user_data);

/** Makes a consumer that keeps at most `window` (>= 1) batches queued and
 *  validates them at `validate_level` (FERRY_VALIDATE_NONE/DEFAULT/FULL), and
 *  fills `handler_out` (caller memory, released or zeroed beforehand, which
 *  must stay valid until the producer releases it). The caller owns `*out`
 *  until ferry_async_consumer_free or ferry_async_consumer_to_stream. */
FERRY_EXPORT int ferry_async_consumer_create(
    int64_t window, int32_t validate_level,
    struct ArrowAsyncDeviceStreamHandler* handler_out, struct FerryAsyncConsumer** out,
    struct FerryError* error);
/** Waits up to `timeout_ms` (negative: forever) for the stream's schema and
 *  writes a deep copy into `out` (released beforehand; the caller owns it),
 *  so it may be called any number of times. ETIMEDOUT, or the producer's
 *  error (code and message) when it failed before its schema. */
FERRY_EXPORT int ferry_async_consumer_get_schema(struct FerryAsyncConsumer* consumer,
                                                 struct ArrowSchema* out,
                                                 int64_t timeout_ms,
                                                 struct FerryError* error);
/** Waits up to `timeout_ms` (negative: forever, 0: poll) for the next batch
 *  and moves it into `out` (released beforehand; the caller owns it). At the
 *  end of the stream returns 0 with `out` released. The batch keeps its
 *  sync_event: wait on it (ferry_device_array_wait) before reading device
 *  memory. ETIMEDOUT; ECANCELED after ferry_async_consumer_cancel; the
 *  producer's code and message after its on_error; EINVAL for a batch that
 *  fails validation; EPROTO for a protocol violation. Every error is
 *  repeated on every later call; `out` is left released on failure. */
FERRY_EXPORT int ferry_async_consumer_next(struct FerryAsyncConsumer* consumer,
                                           struct ArrowDeviceArray* out,
                                           int64_t timeout_ms, struct FerryError* error);
/** The producer's device type once on_schema came (0 before). Borrows. */
FERRY_EXPORT ArrowDeviceType ferry_async_consumer_device_type(
    struct FerryAsyncConsumer* consumer);
/** A file descriptor, owned by the consumer (closed by
 *  ferry_async_consumer_free), that is readable exactly while get_schema or
 *  next would not block, for poll/epoll/asyncio; -1 when it cannot be made.
 *  Only poll it: never read, write or close it. */
FERRY_EXPORT int ferry_async_consumer_fd(struct FerryAsyncConsumer* consumer);
/** Sets (or with NULL clears) the readiness callback; `user_data` stays the
 *  caller's. ferry_async_consumer_free waits for a callback in flight on
 *  another thread, so `user_data` may be freed once it returns. */
FERRY_EXPORT void ferry_async_consumer_set_notify(struct FerryAsyncConsumer* consumer,
                                                  FerryAsyncNotifyFn fn, void* user_data);
/** Sets the callback told of each protocol violation (rule, where, what:
 *  e.g. "task_before_schema"), from the producer's thread with the
 *  consumer's lock held (it must not call ferry_async_consumer_*); set it
 *  before handing the handler to a producer. `user_data` stays the
 *  caller's. */
FERRY_EXPORT void ferry_async_consumer_set_on_violation(struct FerryAsyncConsumer* consumer,
                                                        FerryFindingFn fn,
                                                        void* user_data);
/** Number of protocol violations seen so far. Borrows. */
FERRY_EXPORT int64_t ferry_async_consumer_violations(struct FerryAsyncConsumer* consumer);
/** Waits up to `timeout_ms` (negative: forever) for the producer's release
 *  of the handler: FERRY_OK or ETIMEDOUT. Borrows. */
FERRY_EXPORT int ferry_async_consumer_wait_released(struct FerryAsyncConsumer* consumer,
                                                    int64_t timeout_ms);
/** Asks the producer to stop (idempotent, thread-safe); queued batches are
 *  released and next returns ECANCELED from now on. Borrows. */
FERRY_EXPORT void ferry_async_consumer_cancel(struct FerryAsyncConsumer* consumer);
/** Gives up the consumer (NULL accepted): cancels it if the stream is still
 *  running and releases queued batches; its memory is returned once the
 *  producer has released the handler too, even if that comes later. */
FERRY_EXPORT void ferry_async_consumer_free(struct FerryAsyncConsumer* consumer);
/** Waits up to `timeout_ms` (negative: forever) for the schema, then fills
 *  `out` (released beforehand) with a device stream over the consumer, of
 *  the producer's device type, whose get_next blocks; releasing the stream
 *  frees the consumer. The consumer is moved in on success; on failure
 *  (ETIMEDOUT, or the producer's error before its schema) it stays the
 *  caller's. */
FERRY_EXPORT int ferry_async_consumer_to_stream(struct FerryAsyncConsumer* consumer,
                                                int64_t timeout_ms,
                                                struct ArrowDeviceArrayStream* out,
                                                struct FerryError* error);

/* ------------------------------------------------------------------------ */
/* Adapters: shared exports and plain (CPU) stream conversions               */
/* ------------------------------------------------------------------------ */

/* The C callbacks a binding would otherwise write itself. A shared export is
 * a fresh struct tree over a producer's existing one (the same buffers and
 * strings, nothing copied), so one object a binding holds can be exported to
 * many consumers; every node of it can be moved and released on its own, and
 * each export counts as one live export (ferry_live_exports, leak report). */

/** Fills `out` (released beforehand) with a new tree mirroring `src` (a
 *  valid array, borrowed: lengths, offsets, buffer pointers, children and
 *  dictionary, recursively) without copying a buffer; once the consumer has
 *  released every node of it, ferry calls `release_hook(user_data)` exactly
 *  once (from the releasing thread), and the producer must keep `src` and
 *  its buffers alive until then. On failure `out` stays released and the
 *  hook is not called. */
FERRY_EXPORT int ferry_array_export_shared(const struct ArrowArray* src, struct ArrowArray* out,
                                           FerryReleaseHook release_hook, void* user_data,
                                           struct FerryError* error);
/** ferry_array_export_shared for a device array: `out` also gets `src`'s
 *  device type, device id and sync_event (borrowed: the producer keeps the
 *  event alive until the hook runs) and zeroed reserved fields. */
FERRY_EXPORT int ferry_device_array_export_shared(const struct ArrowDeviceArray* src,
                                                  struct ArrowDeviceArray* out,
                                                  FerryReleaseHook release_hook, void* user_data,
                                                  struct FerryError* error);
/** ferry_array_export_shared for a schema: the new tree borrows `src`'s
 *  format, name and metadata strings, so the producer keeps `src` alive
 *  until `release_hook(user_data)` runs (exactly once, after the last node
 *  is released). On failure `out` stays released and the hook is not
 *  called. */
FERRY_EXPORT int ferry_schema_export_shared(const struct ArrowSchema* src, struct ArrowSchema* out,
                                            FerryReleaseHook release_hook, void* user_data,
                                            struct FerryError* error);

/** Fills `out` (released beforehand) with a deep copy of `src` (borrowed:
 *  format, name, flags, metadata, children and dictionary, recursively) that
 *  ferry owns and the caller releases; for a schema the caller cannot keep
 *  (a consumer's requested schema). Too deep a nesting is EINVAL.
 *  On failure `out` stays released. */
FERRY_EXPORT int ferry_schema_copy(const struct ArrowSchema* src, struct ArrowSchema* out,
                                   struct FerryError* error);

/** ferry_device_array_to_dlpack without the move: `array` (and `schema`)
 *  are borrowed, the tensor points at the array's data buffer, and when the
 *  consumer calls `(*out)->deleter(*out)` ferry calls `release_hook(user_data)`
 *  exactly once, so the producer keeps the buffers alive until then (one
 *  array exported to many tensors). On failure the hook is not called. */
FERRY_EXPORT int ferry_device_array_to_dlpack_shared(const struct ArrowSchema* schema,
                                                     const struct ArrowDeviceArray* array,
                                                     void* consumer_stream,
                                                     FerryReleaseHook release_hook,
                                                     void* user_data,
                                                     struct DLManagedTensorVersioned** out,
                                                     struct FerryError* error);

/** One-call import: validates a producer's live `schema` and `array` in
 *  place at `level` (FERRY_VALIDATE_DEFAULT or _FULL, as
 *  ferry_validate_device_array, or FERRY_VALIDATE_NONE to skip), then moves
 *  both into `schema_out` and `array_out` (released beforehand), which the
 *  caller releases. On failure (the finding's code and message) nothing is
 *  moved: both stay the caller's to release. */
FERRY_EXPORT int ferry_device_array_import(struct ArrowSchema* schema,
                                           struct ArrowDeviceArray* array, int level,
                                           struct ArrowSchema* schema_out,
                                           struct ArrowDeviceArray* array_out,
                                           struct FerryError* error);
/** ferry_device_array_import for a plain ArrowArray (the C data interface:
 *  CPU data): `array_out` becomes a CPU device array (device id -1, no
 *  event, reserved words zero), validated as such. */
FERRY_EXPORT int ferry_array_import(struct ArrowSchema* schema, struct ArrowArray* array,
                                    int level, struct ArrowSchema* schema_out,
                                    struct ArrowDeviceArray* array_out, struct FerryError* error);

/** Fills `out` (released beforehand) with a stream of `src`'s device type
 *  that yields `src`'s batches unchanged but answers get_schema with
 *  `schema` (a deep copy each time): for a consumer's requested schema that
 *  reads the same data (the caller checks that). `src` and `schema` are
 *  moved in on success (untouched on failure); releasing `out` releases
 *  both. */
FERRY_EXPORT int ferry_array_stream_with_schema(struct ArrowDeviceArrayStream* src,
                                                struct ArrowSchema* schema,
                                                struct ArrowDeviceArrayStream* out,
                                                struct FerryError* error);

/** A consumer's requested schema (the PyCapsule protocols' requested_schema)
 *  answered without a copy: FERRY_OK when data described by `have` reads as
 *  `want` unchanged (both valid schemas, borrowed): at every node the same
 *  format or a layout alias (int32 as date32/time32 and back; int64 as
 *  date64/time64/duration/timestamp and back; a timestamp under another
 *  time zone, same unit; UTF-8 as binary, "u"/"U"/"vu" as "z"/"Z"/"vz", not
 *  the reverse), the same number of children and dictionary presence, and
 *  every field `want` marks non-nullable free of nulls: in `array` (the
 *  data, borrowed) when given, else (a stream, judged before any batch)
 *  non-nullable in `have` too. Otherwise ENOTSUP, the message naming the
 *  first difference (e.g. format "l" cannot be read as "i" without a cast);
 *  names, flags and metadata of `want` are the answer's to carry. */
FERRY_EXPORT int ferry_schema_answers_request(const struct ArrowSchema* have,
                                              const struct ArrowSchema* want,
                                              const struct ArrowArray* array,
                                              struct FerryError* error);

/** ferry_array_stream_to_cpu_stream flag: batches not on the CPU are brought
 *  to the host (ferry_device_array_move_to_device: no copy for host-reachable
 *  memory, a copy otherwise) instead of being refused. Needs validation. */
#define FERRY_CPU_STREAM_COPY_TO_HOST 1
/** ferry_array_stream_to_cpu_stream flag: a stream whose schema is not a
 *  struct ("+s") is presented as record batches of one column (a struct
 *  named "" whose only child is the stream's field), as Arrow Java's and
 *  arrow-rs's stream readers require. */
#define FERRY_CPU_STREAM_RECORD_BATCHES 2

/** Fills `out` (released beforehand) with a plain ArrowArrayStream (the C
 *  stream interface: CPU data) over the device stream `src`, which is moved
 *  in on success (untouched on failure); the consumer releases `out`, which
 *  releases `src`. Each batch is validated at `validate` (FERRY_VALIDATE_NONE,
 *  _DEFAULT or _FULL, against the schema prepared once; a finding fails
 *  get_next with "the array fails validation: ..."), then, with
 *  FERRY_CPU_STREAM_COPY_TO_HOST, brought to the host. Without that flag a
 *  stream of another device type than the CPU is refused here with EINVAL.
 *  `flags` is 0 or FERRY_CPU_STREAM_* or-ed. After a failure the adapter
 *  never calls `src` again and returns the same code and message (through
 *  get_last_error) on every later call; the end of the stream stays the
 *  end. Single-threaded, as the C stream interface is. */
FERRY_EXPORT int ferry_array_stream_to_cpu_stream(struct ArrowDeviceArrayStream* src,
                                                  int validate, int64_t flags,
                                                  struct ArrowArrayStream* out,
                                                  struct FerryError* error);
/** Fills `out` (released beforehand) with a CPU device stream (device id
 *  -1, no events) over the plain ArrowArrayStream `src`, which is moved in
 *  on success (untouched on failure); the consumer releases `out`, which
 *  releases `src`. Failures carry `src`'s get_last_error message (or name
 *  the operation and code), and `out` behaves as a stream made by
 *  ferry_array_stream_init (sticky end, kept last error). Batches are not
 *  validated here: the consumer validates what it imports. */
FERRY_EXPORT int ferry_array_stream_from_cpu_stream(struct ArrowArrayStream* src,
                                                    struct ArrowDeviceArrayStream* out,
                                                    struct FerryError* error);

#ifdef __cplusplus
}
#endif

#endif  // FERRY_FERRY_H
