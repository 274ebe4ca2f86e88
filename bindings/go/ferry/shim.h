/* C side of the Go binding: trampolines between ferry's callback types and the
 * //export Go functions, and helpers that keep the hot paths to one cgo call.
 * Go never stores a Go pointer in C memory: Go-side state is named by a
 * handle (an integer from the binding's handle table). */
#ifndef FERRY_GO_SHIM_H
#define FERRY_GO_SHIM_H

#include <stdint.h>

#include "ferry/dlpack_abi.h"
#include "ferry/ferry.h"

/* One piece of memory an exported array node owns: freed with free() when
 * `device` is 0, else with ferry_device_deallocate on that device. Addresses
 * travel from Go as integers (here and in the `buffers` arrays below): Go
 * memory holding no pointer types is passed to C without cgo scanning it for
 * Go pointers, a check that costs more than the call itself. The Go side
 * keeps every pointed-to object alive (C memory, or pinned Go memory). */
struct ferrygo_owned_ptr {
  uintptr_t ptr;
  uintptr_t device;
};

/* Allocates `size` bytes of 64-byte aligned host memory for a buffer that an
 * export will own; the caller frees it with ferrygo_free unless an export took
 * it. NULL when out of memory (size 0 gives a valid 64-byte block). */
void* ferrygo_alloc(int64_t size);
/* Frees memory from ferrygo_alloc (NULL is accepted). */
void ferrygo_free(void* ptr);
/* ferry_device_allocate, counted like ferrygo_alloc: for buffers an export
 * will own (given back through ferry_device_deallocate). */
int ferrygo_device_allocate(struct FerryDevice* device, int64_t size, void** out,
                            struct FerryError* error);
/* Blocks from ferrygo_alloc not freed yet, process-wide. */
int64_t ferrygo_live_allocations(void);
/* Exported array nodes (and streams) made by the binding not released yet. */
int64_t ferrygo_live_exports(void);
void ferrygo_count_export(int64_t delta);

/* Fills `out` (released) through ferry_array_init with the given buffers; the
 * node owns `owned[0..n_owned)` and, when `go_handle` is not 0, the Go state
 * behind that handle: both are given back (freed, handle released) exactly
 * once when the consumer releases the node. On failure they are given back
 * at once, and `out` stays released. */
int ferrygo_array_init(struct ArrowArray* out, int64_t length, int64_t null_count,
                       int64_t offset, int64_t n_buffers, const uintptr_t* buffers,
                       int64_t n_children, int64_t n_owned,
                       const struct ferrygo_owned_ptr* owned, uintptr_t go_handle,
                       struct FerryError* error);

/* A Go handle with this bit set names Go state that only pins memory
 * (PinSlice buffers): releasing the node queues the handle for Go
 * (ferrygo_take_deferred) instead of calling into Go, so a release from any
 * thread stays in C. Go unpins at its next export, collection or count. */
#define FERRYGO_HANDLE_DEFERRED (UINTPTR_MAX ^ (UINTPTR_MAX >> 1))

/* Deferred handles queued and not taken yet (a hint, read atomically). */
extern int64_t ferrygo_deferred_count;

/* Moves up to `cap` queued handles (the bit cleared) into `out`; returns how
 * many. Never calls into Go. */
int64_t ferrygo_take_deferred(uintptr_t* out, int64_t cap);

/* Gives back owned memory and a Go handle that were never attached to an
 * array (the failure paths of multi-node exports). */
void ferrygo_give_back(int64_t n_owned, const struct ferrygo_owned_ptr* owned,
                       uintptr_t go_handle);

/* ferry_device_array_init / _init_async for an array made by
 * ferrygo_array_init in `*array` (moved in on success). */
int ferrygo_device_array_init(struct ArrowDeviceArray* out, struct ArrowArray* array,
                              ArrowDeviceType device_type, int64_t device_id,
                              void* sync_event, struct FerryError* error);

/* ferry_device_array_init on `device` with the producer's own event
 * `sync_event` (the third export policy of docs/events.md): when
 * `event_handle` is not 0, the Go state behind it (the producer's event
 * release function) is given back exactly once after the array is released;
 * on failure it is not, and the caller still owns handle and event. */
int ferrygo_device_array_init_event(struct ArrowDeviceArray* out, struct ArrowArray* array,
                                    struct FerryDevice* device, void* sync_event,
                                    uintptr_t event_handle, struct FerryError* error);

/* ferry_device_array_init on (device_type, device_id) with a Go release
 * state: when `go_handle` is not 0 the Go state behind it is given back
 * exactly once after the array itself is released (a plain C array's
 * unpinning, say); on failure it is not, and the caller still owns it. */
int ferrygo_device_array_init_hook(struct ArrowDeviceArray* out, struct ArrowArray* array,
                                   ArrowDeviceType device_type, int64_t device_id,
                                   void* sync_event, uintptr_t go_handle,
                                   struct FerryError* error);

/* ferry_validate_device_array (or ferry_validate_prepared when `prepared` is
 * not NULL) with every finding handed to Go (ferrygoFinding) under
 * `go_handle`, when it is not 0. */
int ferrygo_validate(const struct FerryPreparedSchema* prepared, const struct ArrowSchema* schema,
                     const struct ArrowDeviceArray* array, int32_t level, uintptr_t go_handle,
                     struct FerryError* error);

/* ferry_validate_device_array of the plain ArrowArray `array` (the C data
 * interface: CPU memory) in place, through a CPU device array view on the
 * stack; both addresses travel as integers. */
int ferrygo_validate_cpu(uintptr_t schema, uintptr_t array, int32_t level,
                         struct FerryError* error);
/* ferrygo_validate without findings handed to Go (so it never calls Go),
 * the addresses as integers: the import paths' check. */
int ferrygo_validate_quiet(uintptr_t prepared, uintptr_t schema, uintptr_t array, int32_t level,
                           struct FerryError* error);

/* Exports a leaf array (no children, no dictionary) in one call: into the
 * released `into` (a consumer's struct) or, when `into` is NULL, into a newly
 * allocated ArrowDeviceArray; fills its array as ferrygo_array_init does and sets
 * the device: (device_type, device_id) when `device` is NULL; else, with
 * `sync_event` set, ferrygo_device_array_init_event on `device`; else
 * ferry_device_array_init_async on `device` with `producer_stream` and
 * `policy`. Returns the struct (when allocated here the caller frees it with
 * ferry_device_array_free) or NULL with `*rc_out` and `error` set; on failure
 * everything owned is given back (not `event_handle`: see above). */
struct ArrowDeviceArray* ferrygo_export_leaf(
    struct ArrowDeviceArray* into, int64_t length, int64_t null_count, int64_t offset, int64_t n_buffers,
    const uintptr_t* buffers, int64_t n_owned, const struct ferrygo_owned_ptr* owned,
    uintptr_t go_handle, ArrowDeviceType device_type, int64_t device_id,
    struct FerryDevice* device, void* producer_stream, int32_t policy, void* sync_event,
    uintptr_t event_handle, int* rc_out, struct FerryError* error);

/* What the one-call helpers below report back to Go, in one struct so that
 * cgo checks one pointer argument: the code; on failure the malloc'd message
 * (the caller frees it; NULL when out of memory); whether the Go
 * handle is still the caller's (export) or the format was refused (schema). */
#define FERRYGO_TAKEN_MAX 8
struct ferrygo_outcome {
  int32_t rc;
  int32_t handle_kept;
  int32_t format_bad;
  int32_t n_taken;  /* export: deferred handles taken for Go (ferrygo_take_deferred) */
  uintptr_t message; /* a char*, as an integer: the struct holds no pointer for cgo to check */
  uintptr_t taken[FERRYGO_TAKEN_MAX];
};

/* The message of an outcome (its `message` field) as a pointer, for Go
 * (failure paths only; by value, so the outcome stays on Go's stack). */
static inline char* ferrygo_outcome_message(uintptr_t message) { return (char*)message; }

/* ferrygo_export_leaf for nodes whose Go state, if any, is deferred
 * (`go_handle` 0 or with FERRYGO_HANDLE_DEFERRED) and without a producer
 * event: it never calls back into Go, so cgo is told nocallback + noescape
 * and the buffer lists stay on the Go stack. The error message buffer lives
 * on the C stack (copied into `outcome` on failure), so a successful export
 * needs no message buffer from Go. On failure the handle is queued like a
 * release, except when `outcome->handle_kept` is set (out of memory before
 * anything took it): then the caller gives it back. Either way it also
 * takes up to FERRYGO_TAKEN_MAX queued deferred handles into `outcome`
 * (after the export, so the new node's pins are held before the old ones
 * can be dropped), which saves Go a call of its own. */
struct ArrowDeviceArray* ferrygo_export_leaf_c_only(
    struct ArrowDeviceArray* into, int64_t length, int64_t null_count, int64_t offset,
    int64_t n_buffers, const uintptr_t* buffers, int64_t n_owned,
    const struct ferrygo_owned_ptr* owned, uintptr_t go_handle, ArrowDeviceType device_type,
    int64_t device_id, struct FerryDevice* device, void* producer_stream, int32_t policy,
    struct ferrygo_outcome* outcome);

/* ExportArray of a leaf in one call: ferrygo_schema_fill into the released
 * `schema_out`, then ferrygo_export_leaf_c_only into the released `into`
 * (both C structs the caller owns; they, the device and the producer
 * stream travel as integers, see ferrygo_owned_ptr). Returns the code (also
 * in `outcome`). On failure both stay released, the C
 * memory is given back, the handle as ferrygo_export_leaf_c_only says, and
 * `outcome->format_bad` tells a refused format. Never calls back into Go. */
int ferrygo_export_leaf_schema(
    uintptr_t schema_out, const char* format, int64_t format_len, const char* name,
    int64_t name_len, int64_t flags, uintptr_t into, int64_t length,
    int64_t null_count, int64_t offset, int64_t n_buffers, const uintptr_t* buffers,
    int64_t n_owned, const struct ferrygo_owned_ptr* owned, uintptr_t go_handle,
    uintptr_t device, uintptr_t producer_stream, int32_t policy,
    struct ferrygo_outcome* outcome);

/* Validates `format` and fills the released `out` with ferry_schema_init, in
 * one call: the strings come as (pointer, length) straight from Go memory
 * (`name_len` -1: no name) and are copied, not kept. Returns the code, also
 * in `outcome` with the message and `format_bad`. Never calls back into Go. */
int ferrygo_schema_fill(struct ArrowSchema* out, const char* format, int64_t format_len,
                        const char* name, int64_t name_len, int64_t flags, int64_t n_children,
                        struct ferrygo_outcome* outcome);

/* Releases the ArrowSchema at `schema` and then the ArrowDeviceArray at
 * `array` (either may be NULL or released already): an owned array's Release in one
 * call. The C addresses travel as integers, so cgo checks no argument. */
void ferrygo_release_both(uintptr_t array, uintptr_t schema);

/* Releases `batch` if it is live, then calls ferry_array_stream_get_next into it:
 * the consumer's whole per-batch step in one call. Returns 0 with a batch or
 * at the end of the stream (`batch` left released), or the code of a
 * failure; a batch whose device type is not the stream's is released and
 * refused (EINVAL), and so is one that fails validation at `level` against
 * `prepared` (when it is not NULL and `level` is not FERRY_VALIDATE_NONE;
 * the message then starts "get_next returned a batch that fails
 * validation: "). */
int ferrygo_stream_next(struct ArrowDeviceArrayStream* stream,
                        struct ArrowDeviceArray* batch,
                        const struct FerryPreparedSchema* prepared, int32_t level,
                        struct FerryError* error);

/* ferrygo_stream_next with ferry_array_stream_get_next_on: the batch is handed to
 * `consumer_stream` (or the host waits on its event when that is NULL). */
int ferrygo_stream_next_on(struct ArrowDeviceArrayStream* stream,
                           struct ArrowDeviceArray* batch, void* consumer_stream,
                           const struct FerryPreparedSchema* prepared, int32_t level,
                           struct FerryError* error);

/* What a Go stream producer hands back from get_next without a nested cgo
 * call: Go fills this C struct (on the trampoline's stack) and the
 * trampoline does the export after the callback has returned, so a batch
 * costs one C -> Go transition and no Go -> C one. The trampoline sets only
 * `kind`; Go writes every field that its kind uses. */
#define FERRYGO_BATCH_NONE 0   /* Go filled `out` itself, or the stream ended */
#define FERRYGO_BATCH_LEAF 1   /* export the leaf described below into `out` */
#define FERRYGO_BATCH_MOVE 2   /* move the live `src` into `out`, then free `src` */
#define FERRYGO_BATCH_MAX_BUFFERS 8
struct ferrygo_batch {
  int32_t kind;
  int32_t policy;
  int64_t length, null_count, offset, n_buffers, n_owned;
  uintptr_t buffers[FERRYGO_BATCH_MAX_BUFFERS];
  struct ferrygo_owned_ptr owned[FERRYGO_BATCH_MAX_BUFFERS];
  uintptr_t go_handle;
  uintptr_t device, producer_stream; /* C pointers, as integers */
  uintptr_t src;                     /* FERRYGO_BATCH_MOVE */
  /* Set by the trampoline before Go runs: queued deferred handles it took
   * for Go to give back first (so a producer pinning the same memory for
   * every batch finds its state free again). */
  int64_t n_taken;
  uintptr_t taken[FERRYGO_TAKEN_MAX];
};

/* ferry_array_stream_init with the Go trampolines; `go_handle` names the producer. */
int ferrygo_stream_init(struct ArrowDeviceArrayStream* out, ArrowDeviceType device_type,
                        uintptr_t go_handle, struct FerryError* error);

/* ferry_array_stream_init_from_arrays over the live arrays at the addresses
 * `arrays[0..n)` (each left released on success, untouched on failure). */
int ferrygo_stream_init_from_arrays(struct ArrowDeviceArrayStream* out,
                                    ArrowDeviceType device_type, struct ArrowSchema* schema,
                                    const uintptr_t* arrays, int64_t n, struct FerryError* error);

/* Reads the DLPack tensor at `tensor` for Go: scalar fields through the out
 * parameters, shape and strides (up to `max_dims` each; strides all 0 when
 * the tensor has none) into the arrays. Returns ndim. */
int32_t ferrygo_dlpack_describe(const DLManagedTensorVersioned* tensor, void** data,
                                int32_t* device_type, int32_t* device_id, uint8_t* code,
                                uint8_t* bits, uint16_t* lanes, uint64_t* byte_offset,
                                uint64_t* flags, uint32_t* major, uint32_t* minor,
                                int64_t* shape, int64_t* strides, int32_t max_dims);
/* Calls the tensor's deleter (Go cannot call C function pointers). */
void ferrygo_dlpack_delete(DLManagedTensorVersioned* tensor);

/* Copies `message` into `error` (either may be NULL), truncating. */
void ferrygo_set_error(struct FerryError* error, const char* message, int64_t length);

#endif  // FERRY_GO_SHIM_H
