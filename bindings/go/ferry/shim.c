// C side of the Go binding (see shim.h). Kept small: everything that needs Go
// state calls into Go through the //export functions declared in
// _cgo_export.h, passing the integer handle it was given.
#include "shim.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "_cgo_export.h"

static _Atomic int64_t live_allocations;
static _Atomic int64_t live_exports;

void* ferrygo_alloc(int64_t size) {
  if (size < 0) return NULL;
  // Round up so that aligned_alloc's size rule holds; Arrow recommends 64.
  size_t rounded = ((size_t)size + 63) & ~(size_t)63;
  if (rounded == 0) rounded = 64;
  void* ptr = aligned_alloc(64, rounded);
  if (ptr != NULL) atomic_fetch_add(&live_allocations, 1);
  return ptr;
}

void ferrygo_free(void* ptr) {
  if (ptr == NULL) return;
  free(ptr);
  atomic_fetch_sub(&live_allocations, 1);
}

int ferrygo_device_allocate(struct FerryDevice* device, int64_t size, void** out,
                            struct FerryError* error) {
  int rc = ferry_device_allocate(device, size, out, error);
  if (rc == FERRY_OK) atomic_fetch_add(&live_allocations, 1);
  return rc;
}

int64_t ferrygo_live_allocations(void) { return atomic_load(&live_allocations); }
int64_t ferrygo_live_exports(void) { return atomic_load(&live_exports); }
void ferrygo_count_export(int64_t delta) { atomic_fetch_add(&live_exports, delta); }

// What one exported node gives back at release: C memory and a Go handle.
// A record whose handle is deferred (pins only) is queued for Go at release
// instead of freed; `next` links it there.
struct ferrygo_owned {
  struct ferrygo_owned* next;
  uintptr_t go_handle;
  int64_t n_owned;
  struct ferrygo_owned_ptr owned[];
};

// Records of released nodes whose Go state Go gives back itself (see
// FERRYGO_HANDLE_DEFERRED): a lock-free stack, pushed by any releasing
// thread, emptied by ferrygo_take_deferred.
static _Atomic(struct ferrygo_owned*) deferred_head;
int64_t ferrygo_deferred_count;

static void free_owned(int64_t n_owned, const struct ferrygo_owned_ptr* owned) {
  for (int64_t i = 0; i < n_owned; i++) {
    void* ptr = (void*)owned[i].ptr;
    if (ptr == NULL) continue;
    if (owned[i].device == 0) {
      ferrygo_free(ptr);
    } else {
      // A failure here cannot be reported to anyone: the consumer's release
      // has no error channel. The device backend keeps its own counters.
      (void)ferry_device_deallocate((struct FerryDevice*)owned[i].device, ptr, NULL);
      atomic_fetch_sub(&live_allocations, 1);
    }
  }
}

static void defer_record(struct ferrygo_owned* record) {
  record->go_handle &= ~FERRYGO_HANDLE_DEFERRED;
  struct ferrygo_owned* head = atomic_load_explicit(&deferred_head, memory_order_relaxed);
  do {
    record->next = head;
  } while (!atomic_compare_exchange_weak_explicit(&deferred_head, &head, record,
                                                  memory_order_release, memory_order_relaxed));
  __atomic_fetch_add(&ferrygo_deferred_count, 1, __ATOMIC_RELEASE);
}

int64_t ferrygo_take_deferred(uintptr_t* out, int64_t cap) {
  struct ferrygo_owned* list = atomic_exchange_explicit(&deferred_head, NULL, memory_order_acquire);
  int64_t n = 0;
  while (list != NULL && n < cap) {
    struct ferrygo_owned* next = list->next;
    out[n++] = list->go_handle;
    free(list);
    list = next;
  }
  if (list != NULL) {  // more than `cap`: the rest goes back for the next call
    struct ferrygo_owned* tail = list;
    while (tail->next != NULL) tail = tail->next;
    struct ferrygo_owned* head = atomic_load_explicit(&deferred_head, memory_order_relaxed);
    do {
      tail->next = head;
    } while (!atomic_compare_exchange_weak_explicit(&deferred_head, &head, list,
                                                    memory_order_release, memory_order_relaxed));
  }
  __atomic_fetch_sub(&ferrygo_deferred_count, n, __ATOMIC_RELAXED);
  return n;
}

// Takes up to FERRYGO_TAKEN_MAX queued handles into `taken` when there are
// any (the count is read first: an empty queue costs one load).
static void take_some_deferred(uintptr_t* taken, int32_t* n_taken) {
  *n_taken = 0;
  if (__atomic_load_n(&ferrygo_deferred_count, __ATOMIC_RELAXED) > 0) {
    *n_taken = (int32_t)ferrygo_take_deferred(taken, FERRYGO_TAKEN_MAX);
  }
}

// A record for n_owned pieces and a handle (NULL when out of memory).
static struct ferrygo_owned* new_record(int64_t n_owned, const struct ferrygo_owned_ptr* owned,
                                        uintptr_t go_handle) {
  if (n_owned < 0) n_owned = 0;
  struct ferrygo_owned* record =
      malloc(sizeof(*record) + (size_t)n_owned * sizeof(struct ferrygo_owned_ptr));
  if (record == NULL) return NULL;
  record->next = NULL;
  record->go_handle = go_handle;
  record->n_owned = n_owned;
  if (n_owned > 0) memcpy(record->owned, owned, (size_t)n_owned * sizeof(*owned));
  return record;
}

// Gives back what the record names: Go state first (its release callbacks
// may still need the memory: a device stream whose queued copies read a
// staging buffer is synchronized there), then the C memory. A deferred
// handle never calls into Go: the record is queued for Go instead of freed.
static void retire(struct ferrygo_owned* record) {
  uintptr_t h = record->go_handle;
  if ((h & FERRYGO_HANDLE_DEFERRED) != 0) {
    free_owned(record->n_owned, record->owned);
    defer_record(record);
    return;
  }
  if (h != 0) ferrygoReleaseHandle(h);
  free_owned(record->n_owned, record->owned);
  free(record);
}

void ferrygo_give_back(int64_t n_owned, const struct ferrygo_owned_ptr* owned,
                       uintptr_t go_handle) {
  if ((go_handle & FERRYGO_HANDLE_DEFERRED) != 0) {
    struct ferrygo_owned* record = new_record(0, NULL, go_handle);
    free_owned(n_owned, owned);
    if (record != NULL) {
      defer_record(record);
    } else {  // out of memory: Go gives its state back now
      ferrygoReleaseHandle(go_handle & ~FERRYGO_HANDLE_DEFERRED);
    }
    return;
  }
  if (go_handle != 0) ferrygoReleaseHandle(go_handle);
  free_owned(n_owned, owned);
}

// The release hook of every node: runs in C unless Go state is attached.
static void ferrygo_release_owned(void* user_data) {
  retire(user_data);
  atomic_fetch_sub(&live_exports, 1);
}

// ferrygo_array_init with its record made already (taken on every path).
static int array_init_record(struct ArrowArray* out, int64_t length, int64_t null_count,
                             int64_t offset, int64_t n_buffers, const uintptr_t* buffers,
                             int64_t n_children, struct ferrygo_owned* record,
                             struct FerryError* error) {
  // At most a handful of buffers per node in practice; more go on the heap.
  const void* stack_pointers[8];
  const void** pointers = stack_pointers;
  if (n_buffers > 8) {
    pointers = malloc((size_t)n_buffers * sizeof(void*));
    if (pointers == NULL) {
      ferry_error_init(error);
      ferrygo_set_error(error, "out of memory for the buffer list", -1);
      retire(record);
      return ENOMEM;
    }
  }
  for (int64_t i = 0; i < n_buffers && buffers != NULL; i++) pointers[i] = (const void*)buffers[i];
  int rc = ferry_array_init(out, length, null_count, offset, n_buffers,
                            buffers == NULL ? NULL : pointers, n_children, ferrygo_release_owned,
                            record, error);
  if (pointers != stack_pointers) free(pointers);
  if (rc != FERRY_OK) {
    retire(record);
    return rc;
  }
  atomic_fetch_add(&live_exports, 1);
  return FERRY_OK;
}

// new_record for the exports called from Go: when out of memory, the error
// says so and what the record would have named is given back (NULL).
static struct ferrygo_owned* new_record_or_give_back(int64_t n_owned,
                                                     const struct ferrygo_owned_ptr* owned,
                                                     uintptr_t go_handle,
                                                     struct FerryError* error) {
  struct ferrygo_owned* record = new_record(n_owned, owned, go_handle);
  if (record == NULL) {
    ferry_error_init(error);
    ferrygo_set_error(error, "out of memory for the export record", -1);
    ferrygo_give_back(n_owned, owned, go_handle);
  }
  return record;
}

int ferrygo_array_init(struct ArrowArray* out, int64_t length, int64_t null_count,
                       int64_t offset, int64_t n_buffers, const uintptr_t* buffers,
                       int64_t n_children, int64_t n_owned,
                       const struct ferrygo_owned_ptr* owned, uintptr_t go_handle,
                       struct FerryError* error) {
  struct ferrygo_owned* record = new_record_or_give_back(n_owned, owned, go_handle, error);
  if (record == NULL) return ENOMEM;
  return array_init_record(out, length, null_count, offset, n_buffers, buffers, n_children,
                           record, error);
}

// ferrygo_export_leaf with its record made already (taken on every path).
static struct ArrowDeviceArray* export_leaf_record(
    struct ArrowDeviceArray* into, int64_t length, int64_t null_count, int64_t offset,
    int64_t n_buffers, const uintptr_t* buffers, struct ferrygo_owned* record,
    ArrowDeviceType device_type, int64_t device_id, struct FerryDevice* device,
    void* producer_stream, int32_t policy, void* sync_event, uintptr_t event_handle,
    int* rc_out, struct FerryError* error) {
  if (into != NULL && !ferry_device_array_is_released(into)) {
    ferry_error_init(error);
    ferrygo_set_error(error, "the destination ArrowDeviceArray is not released", -1);
    retire(record);
    *rc_out = EINVAL;
    return NULL;
  }
  struct ArrowDeviceArray* out = into != NULL ? into : ferry_device_array_new();
  if (out == NULL) {
    ferry_error_init(error);
    ferrygo_set_error(error, "out of memory for the device array", -1);
    retire(record);
    *rc_out = ENOMEM;
    return NULL;
  }
  struct ArrowArray array;
  memset(&array, 0, sizeof(array));
  int rc = array_init_record(&array, length, null_count, offset, n_buffers, buffers, 0, record,
                             error);
  if (rc == FERRY_OK) {
    if (device == NULL) {
      rc = ferry_device_array_init(out, &array, device_type, device_id, NULL, NULL, NULL,
                                   error);
    } else if (sync_event != NULL) {
      rc = ferrygo_device_array_init_event(out, &array, device, sync_event, event_handle,
                                           error);
    } else {
      rc = ferry_device_array_init_async(out, &array, device, producer_stream, policy, error);
    }
    // Moved on success; on failure the release gives everything back.
    ferry_array_release(&array);
  }
  *rc_out = rc;
  if (rc != FERRY_OK) {
    if (into == NULL) ferry_device_array_free(out);
    return NULL;
  }
  return out;
}

struct ArrowDeviceArray* ferrygo_export_leaf(
    struct ArrowDeviceArray* into, int64_t length, int64_t null_count, int64_t offset, int64_t n_buffers,
    const uintptr_t* buffers, int64_t n_owned, const struct ferrygo_owned_ptr* owned,
    uintptr_t go_handle, ArrowDeviceType device_type, int64_t device_id,
    struct FerryDevice* device, void* producer_stream, int32_t policy, void* sync_event,
    uintptr_t event_handle, int* rc_out, struct FerryError* error) {
  struct ferrygo_owned* record = new_record_or_give_back(n_owned, owned, go_handle, error);
  if (record == NULL) {
    *rc_out = ENOMEM;
    return NULL;
  }
  return export_leaf_record(into, length, null_count, offset, n_buffers, buffers, record,
                            device_type, device_id, device, producer_stream, policy, sync_event,
                            event_handle, rc_out, error);
}

struct ArrowDeviceArray* ferrygo_export_leaf_c_only(
    struct ArrowDeviceArray* into, int64_t length, int64_t null_count, int64_t offset,
    int64_t n_buffers, const uintptr_t* buffers, int64_t n_owned,
    const struct ferrygo_owned_ptr* owned, uintptr_t go_handle, ArrowDeviceType device_type,
    int64_t device_id, struct FerryDevice* device, void* producer_stream, int32_t policy,
    struct ferrygo_outcome* outcome) {
  memset(outcome, 0, sizeof(*outcome));
  struct ferrygo_owned* record = new_record(n_owned, owned, go_handle);
  if (record == NULL) {
    free_owned(n_owned, owned);
    outcome->handle_kept = go_handle != 0;  // given back by Go: no call into Go from here
    outcome->rc = ENOMEM;
    outcome->message = (uintptr_t)strdup("out of memory for the export record");
    take_some_deferred(outcome->taken, &outcome->n_taken);
    return NULL;
  }
  struct FerryError error;
  ferry_error_init(&error);
  int rc = FERRY_OK;
  struct ArrowDeviceArray* out =
      export_leaf_record(into, length, null_count, offset, n_buffers, buffers, record,
                         device_type, device_id, device, producer_stream, policy, NULL, 0, &rc,
                         &error);
  outcome->rc = rc;
  if (out == NULL) outcome->message = (uintptr_t)strdup(error.message);
  take_some_deferred(outcome->taken, &outcome->n_taken);
  return out;
}

int ferrygo_export_leaf_schema(
    uintptr_t schema_address, const char* format, int64_t format_len, const char* name,
    int64_t name_len, int64_t flags, uintptr_t into, int64_t length,
    int64_t null_count, int64_t offset, int64_t n_buffers, const uintptr_t* buffers,
    int64_t n_owned, const struct ferrygo_owned_ptr* owned, uintptr_t go_handle,
    uintptr_t device, uintptr_t producer_stream, int32_t policy,
    struct ferrygo_outcome* outcome) {
  struct ArrowSchema* schema_out = (struct ArrowSchema*)schema_address;
  if (ferrygo_schema_fill(schema_out, format, format_len, name, name_len, flags, 0, outcome) !=
      FERRY_OK) {
    free_owned(n_owned, owned);
    outcome->handle_kept = go_handle != 0;  // given back by Go
    take_some_deferred(outcome->taken, &outcome->n_taken);
    return outcome->rc;
  }
  // (device_type, device_id) are read only without a device: the CPU.
  struct ArrowDeviceArray* out = ferrygo_export_leaf_c_only(
      (struct ArrowDeviceArray*)into, length, null_count, offset, n_buffers, buffers, n_owned,
      owned, go_handle, ARROW_DEVICE_CPU, -1, (struct FerryDevice*)device,
      (void*)producer_stream, policy, outcome);
  if (out == NULL) ferry_schema_release(schema_out);
  return outcome->rc;
}

int ferrygo_schema_fill(struct ArrowSchema* out, const char* format, int64_t format_len,
                        const char* name, int64_t name_len, int64_t flags, int64_t n_children,
                        struct ferrygo_outcome* outcome) {
  memset(outcome, 0, sizeof(*outcome));
  // NUL-terminated copies (a Go string has none): on the stack when short.
  char stack[256];
  char* copy = stack;
  int64_t need = format_len + 1 + (name_len < 0 ? 0 : name_len + 1);
  if (need > (int64_t)sizeof(stack)) {
    copy = malloc((size_t)need);
    if (copy == NULL) {
      outcome->message = (uintptr_t)strdup("out of memory for the field's strings");
      return outcome->rc = ENOMEM;
    }
  }
  memcpy(copy, format, (size_t)format_len);
  copy[format_len] = 0;
  char* name_copy = NULL;
  if (name_len >= 0) {
    name_copy = copy + format_len + 1;
    memcpy(name_copy, name, (size_t)name_len);
    name_copy[name_len] = 0;
  }
  struct FerryError error;
  ferry_error_init(&error);
  int rc = ferry_format_validate(copy, &error);
  outcome->format_bad = rc != FERRY_OK;
  if (rc == FERRY_OK) rc = ferry_schema_init(out, copy, name_copy, flags, n_children, &error);
  if (copy != stack) free(copy);
  if (rc != FERRY_OK) outcome->message = (uintptr_t)strdup(error.message);
  return outcome->rc = rc;
}

// The producer's own event is released through Go (its release function).
static void ferrygo_event_release(void* user_data) {
  ferrygoReleaseHandle((uintptr_t)user_data);
}

int ferrygo_device_array_init_hook(struct ArrowDeviceArray* out, struct ArrowArray* array,
                                   ArrowDeviceType device_type, int64_t device_id,
                                   void* sync_event, uintptr_t go_handle,
                                   struct FerryError* error) {
  return ferry_device_array_init(out, array, device_type, device_id, sync_event,
                                 go_handle != 0 ? ferrygo_event_release : NULL, (void*)go_handle,
                                 error);
}

int ferrygo_device_array_init_event(struct ArrowDeviceArray* out, struct ArrowArray* array,
                                    struct FerryDevice* device, void* sync_event,
                                    uintptr_t event_handle, struct FerryError* error) {
  return ferrygo_device_array_init_hook(out, array, ferry_device_type(device),
                                        ferry_device_id(device), sync_event, event_handle, error);
}

static void ferrygo_finding(void* user_data, const char* rule, const char* where,
                            const char* what) {
  ferrygoFinding((uintptr_t)user_data, (char*)rule, (char*)where, (char*)what);
}

int ferrygo_validate(const struct FerryPreparedSchema* prepared, const struct ArrowSchema* schema,
                     const struct ArrowDeviceArray* array, int32_t level, uintptr_t go_handle,
                     struct FerryError* error) {
  FerryFindingFn on_finding = go_handle != 0 ? ferrygo_finding : NULL;
  if (prepared != NULL) {
    return ferry_validate_prepared(prepared, array, level, on_finding, (void*)go_handle, error);
  }
  return ferry_validate_device_array(schema, array, level, on_finding, (void*)go_handle, error);
}

int ferrygo_validate_cpu(uintptr_t schema, uintptr_t array, int32_t level,
                         struct FerryError* error) {
  struct ArrowDeviceArray view;
  memset(&view, 0, sizeof view);
  view.array = *(const struct ArrowArray*)array;
  view.device_type = ARROW_DEVICE_CPU;
  view.device_id = -1;
  return ferry_validate_device_array((const struct ArrowSchema*)schema, &view, level, NULL, NULL,
                                     error);
}

int ferrygo_validate_quiet(uintptr_t prepared, uintptr_t schema, uintptr_t array, int32_t level,
                           struct FerryError* error) {
  return ferrygo_validate((const struct FerryPreparedSchema*)prepared,
                          (const struct ArrowSchema*)schema,
                          (const struct ArrowDeviceArray*)array, level, 0, error);
}

int ferrygo_device_array_init(struct ArrowDeviceArray* out, struct ArrowArray* array,
                              ArrowDeviceType device_type, int64_t device_id,
                              void* sync_event, struct FerryError* error) {
  return ferry_device_array_init(out, array, device_type, device_id, sync_event, NULL, NULL,
                                 error);
}

void ferrygo_release_both(uintptr_t array, uintptr_t schema) {
  ferry_schema_release((struct ArrowSchema*)schema);
  ferry_device_array_release((struct ArrowDeviceArray*)array);
}

// What both consumer steps do with get_next's outcome: a failure, the end
// (FERRY_OK with `batch` released: any int is a producer's possible code, so
// the end has no code of its own), or a batch, which must be on the stream's device type (the interface
// promises it; a producer that breaks the promise is refused, its batch
// released, rather than handed to code that trusts the stream's type).
static int ferrygo_stepped(struct ArrowDeviceArrayStream* stream, struct ArrowDeviceArray* batch,
                           const struct FerryPreparedSchema* prepared, int32_t level,
                           int rc, struct FerryError* error) {
  if (rc != FERRY_OK) return rc;
  if (ferry_device_array_is_released(batch)) return FERRY_OK;  // the end
  if (batch->device_type != stream->device_type) {
    if (error != NULL) {
      snprintf(error->message, sizeof(error->message),
               "get_next returned a batch of device type %s from a stream of device type %s",
               ferry_device_type_name(batch->device_type),
               ferry_device_type_name(stream->device_type));
    }
    ferry_device_array_release(batch);
    return EINVAL;
  }
  if (prepared != NULL && level != FERRY_VALIDATE_NONE) {
    // Checked in this same call, so validating a batch costs no crossing.
    struct FerryError found;
    found.message[0] = '\0';
    int vrc = ferry_validate_prepared(prepared, batch, level, NULL, NULL, &found);
    if (vrc != FERRY_OK) {
      if (error != NULL) {
        snprintf(error->message, sizeof(error->message),
                 "get_next returned a batch that fails validation: %s", found.message);
      }
      ferry_device_array_release(batch);
      return vrc;
    }
  }
  return FERRY_OK;
}

int ferrygo_stream_next(struct ArrowDeviceArrayStream* stream,
                        struct ArrowDeviceArray* batch,
                        const struct FerryPreparedSchema* prepared, int32_t level,
                        struct FerryError* error) {
  ferry_device_array_release(batch);
  return ferrygo_stepped(stream, batch, prepared, level,
                         ferry_array_stream_get_next(stream, batch, error), error);
}

static int ferrygo_get_schema_trampoline(void* user_data, struct ArrowSchema* out,
                                         struct FerryError* error) {
  return ferrygoStreamGetSchema((uintptr_t)user_data, out, error);
}

int ferrygo_stream_next_on(struct ArrowDeviceArrayStream* stream,
                           struct ArrowDeviceArray* batch, void* consumer_stream,
                           const struct FerryPreparedSchema* prepared, int32_t level,
                           struct FerryError* error) {
  ferry_device_array_release(batch);
  return ferrygo_stepped(stream, batch, prepared, level,
                         ferry_array_stream_get_next_on(stream, batch, consumer_stream, error),
                         error);
}

static int ferrygo_get_next_trampoline(void* user_data, struct ArrowDeviceArray* out,
                                       struct FerryError* error) {
  struct ferrygo_batch batch;
  batch.kind = FERRYGO_BATCH_NONE;
  int32_t n_taken = 0;
  take_some_deferred(batch.taken, &n_taken);
  batch.n_taken = n_taken;
  int rc = ferrygoStreamGetNext((uintptr_t)user_data, out, &batch, error);
  if (rc != FERRY_OK) return rc;
  switch (batch.kind) {
    case FERRYGO_BATCH_LEAF: {
      int64_t n_buffers = batch.n_buffers;
      int64_t n_owned = batch.n_owned;
      if (n_buffers > FERRYGO_BATCH_MAX_BUFFERS) n_buffers = FERRYGO_BATCH_MAX_BUFFERS;
      if (n_owned > FERRYGO_BATCH_MAX_BUFFERS) n_owned = FERRYGO_BATCH_MAX_BUFFERS;
      struct FerryDevice* device = (struct FerryDevice*)batch.device;
      ferrygo_export_leaf(out, batch.length, batch.null_count, batch.offset, n_buffers,
                          n_buffers > 0 ? batch.buffers : NULL, n_owned, batch.owned,
                          batch.go_handle, ARROW_DEVICE_CPU, -1, device,
                          (void*)batch.producer_stream, batch.policy, NULL, 0, &rc, error);
      return rc;
    }
    case FERRYGO_BATCH_MOVE: {
      struct ArrowDeviceArray* src = (struct ArrowDeviceArray*)batch.src;
      rc = ferry_device_array_move(src, out);
      if (rc != FERRY_OK) {
        // Go has let go of src already: release it rather than leak it.
        ferrygo_set_error(error, "get_next: the consumer's ArrowDeviceArray is not released", -1);
      }
      ferry_device_array_free(src);
      return rc;
    }
    default:
      return FERRY_OK;
  }
}

static void ferrygo_stream_release_trampoline(void* user_data) {
  ferrygoReleaseHandle((uintptr_t)user_data);
  atomic_fetch_sub(&live_exports, 1);
}

int ferrygo_stream_init(struct ArrowDeviceArrayStream* out, ArrowDeviceType device_type,
                        uintptr_t go_handle, struct FerryError* error) {
  int rc = ferry_array_stream_init(out, device_type, ferrygo_get_schema_trampoline,
                             ferrygo_get_next_trampoline, ferrygo_stream_release_trampoline,
                             (void*)go_handle, error);
  if (rc == FERRY_OK) atomic_fetch_add(&live_exports, 1);
  return rc;
}

int ferrygo_stream_init_from_arrays(struct ArrowDeviceArrayStream* out,
                                    ArrowDeviceType device_type, struct ArrowSchema* schema,
                                    const uintptr_t* arrays, int64_t n, struct FerryError* error) {
  if (n < 0) n = 0;
  // The core takes a contiguous list: gather shallow copies, which become the
  // moved arrays only when the core accepts them.
  struct ArrowDeviceArray* list = NULL;
  if (n > 0) {
    list = malloc((size_t)n * sizeof(*list));
    if (list == NULL) {
      ferrygo_set_error(error, "out of memory for the array list", -1);
      return ENOMEM;
    }
    for (int64_t i = 0; i < n; i++) memcpy(&list[i], (void*)arrays[i], sizeof(*list));
  }
  int rc = ferry_array_stream_init_from_arrays(out, device_type, schema, list, n, error);
  if (rc == FERRY_OK) {
    for (int64_t i = 0; i < n; i++) ((struct ArrowDeviceArray*)arrays[i])->array.release = NULL;
  }
  free(list);
  return rc;
}

int32_t ferrygo_dlpack_describe(const DLManagedTensorVersioned* tensor, void** data,
                                int32_t* device_type, int32_t* device_id, uint8_t* code,
                                uint8_t* bits, uint16_t* lanes, uint64_t* byte_offset,
                                uint64_t* flags, uint32_t* major, uint32_t* minor,
                                int64_t* shape, int64_t* strides, int32_t max_dims) {
  const DLTensor* t = &tensor->dl_tensor;
  *major = tensor->version.major;
  *minor = tensor->version.minor;
  *flags = tensor->flags;
  *data = t->data;
  *device_type = (int32_t)t->device.device_type;
  *device_id = t->device.device_id;
  *code = t->dtype.code;
  *bits = t->dtype.bits;
  *lanes = t->dtype.lanes;
  *byte_offset = t->byte_offset;
  for (int32_t i = 0; i < t->ndim && i < max_dims; i++) {
    shape[i] = t->shape != NULL ? t->shape[i] : 0;
    strides[i] = t->strides != NULL ? t->strides[i] : 0;
  }
  return t->ndim;
}

void ferrygo_dlpack_delete(DLManagedTensorVersioned* tensor) {
  if (tensor != NULL && tensor->deleter != NULL) tensor->deleter(tensor);
}

void ferrygo_set_error(struct FerryError* error, const char* message, int64_t length) {
  if (error == NULL || message == NULL) return;
  size_t n = length < 0 ? strlen(message) : (size_t)length;
  if (n >= FERRY_ERROR_MESSAGE_SIZE) n = FERRY_ERROR_MESSAGE_SIZE - 1;
  memcpy(error->message, message, n);
  error->message[n] = '\0';
}
