/* ferry._native: the reference-counted holders of imported structs, the
 * shared exports (fresh struct trees over the same buffers) and the Arrow
 * PyCapsules. */
#include "_native.h"

/* ---- holders ---------------------------------------------------------------------- */

/* Drops one reference of a count; 1 when it was the last. An owner that
 * sees a count of 1 holds the only reference, so no other thread can change
 * the count: the common case (imported, used, dropped) costs a plain load
 * instead of a locked read-modify-write. */
static int drop_ref_was_last(atomic_long* refs) {
  return atomic_load_explicit(refs, memory_order_acquire) == 1 ||
         atomic_fetch_sub_explicit(refs, 1, memory_order_acq_rel) == 1;
}

/* The holders are allocated on every import, so they are not zeroed: a
 * new holder's struct is only marked released, and every import fills it
 * whole (a move or the core's import). Not calloc, which glibc serves
 * without its per-thread cache, nor a memset, which gcc turns into calloc
 * or a slow-starting `rep stos`. */
SchemaHolder* schema_holder_new(void) {
  SchemaHolder* s = (SchemaHolder*)malloc(sizeof(SchemaHolder));
  if (s == NULL) return NULL;
  atomic_init(&s->refs, 1);
  s->immortal = 0;
  s->prepared = NULL;
  s->schema.release = NULL;
  return s;
}

void schema_holder_incref(SchemaHolder* s) {
  if (!s->immortal) atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
}

void schema_holder_decref(SchemaHolder* s) {
  if (s != NULL && !s->immortal && drop_ref_was_last(&s->refs)) {
    fp_ferry_prepared_schema_free(s->prepared);
    fp_ferry_schema_release(&s->schema);
    free(s);
  }
}

/* Holder blocks that a DeviceArray's deallocation freed (under the GIL, the
 * common end of an import) wait here for the next import instead of going
 * back to malloc: an import + drop costs two calls fewer. Pushed and popped
 * only under the GIL; a holder whose last reference goes elsewhere (an
 * export's release, on any thread) is freed. */
#define FP_SPARE_HOLDERS 8
static Holder* g_spare_holders[FP_SPARE_HOLDERS];
static int g_n_spare_holders;

/* A holder with a reference to `schema`; NULL leaves the schema to be set
 * before the holder is used (the DLPack imports). Under the GIL. */
Holder* holder_new(SchemaHolder* schema) {
  Holder* h = g_n_spare_holders > 0 ? g_spare_holders[--g_n_spare_holders]
                                    : (Holder*)malloc(sizeof(Holder));
  if (h == NULL) return NULL;
  atomic_init(&h->refs, 1);
  h->array.array.release = NULL;
  h->schema = schema;
  if (schema != NULL) schema_holder_incref(schema);
  return h;
}

void holder_incref(Holder* h) { atomic_fetch_add_explicit(&h->refs, 1, memory_order_relaxed); }

/* Drops a reference; on the last one, releases the structs and returns 1
 * (the caller disposes of the block). */
static int holder_release_last(Holder* h) {
  if (h == NULL || !drop_ref_was_last(&h->refs)) return 0;
  fp_ferry_device_array_release(&h->array);
  schema_holder_decref(h->schema);
  return 1;
}

void holder_decref(Holder* h) {
  if (holder_release_last(h)) free(h);
}

/* holder_decref for a caller that holds the GIL: the block may be spared. */
void holder_decref_gil(Holder* h) {
  if (!holder_release_last(h)) return;
  if (g_n_spare_holders < FP_SPARE_HOLDERS)
    g_spare_holders[g_n_spare_holders++] = h;
  else
    free(h);
}

/* ---- shared exports: fresh struct trees over the same buffers --------------------- */

/* The core builds each exported tree (ferry_*_export_shared: every node can
 * be moved and released on its own, as the C data interface allows); each
 * export holds one reference to the holder, which the core's release hook
 * drops, on whatever thread the consumer releases it (no GIL needed). */
void holder_release_hook(void* user_data) { holder_decref((Holder*)user_data); }

static void schema_holder_release_hook(void* user_data) {
  schema_holder_decref((SchemaHolder*)user_data);
}

/* Raises the failure of a shared export (MemoryError when out of memory). */
int export_failed(int code, const struct FerryError* error) {
  if (code == ENOMEM)
    PyErr_NoMemory();
  else
    raise_error(code, error, 0);
  return -1;
}

/* Fills released `out` with an export of the holder's ArrowArray, or
 * released `device_out` with one of the whole device array (same device and
 * event: the event stays valid while the holder lives, which the export
 * guarantees); 0, or -1 with an exception set (then the target stays
 * released). Each export holds one reference to the holder. */
static int holder_export_shared(Holder* h, struct ArrowArray* out,
                                struct ArrowDeviceArray* device_out) {
  struct FerryError error;
  error.message[0] = '\0';
  holder_incref(h);
  int code = out != NULL ? fp_ferry_array_export_shared(&h->array.array, out, holder_release_hook,
                                                        h, &error)
                         : fp_ferry_device_array_export_shared(&h->array, device_out,
                                                               holder_release_hook, h, &error);
  if (code != FERRY_OK) {
    holder_decref(h); /* not the last: the caller holds one */
    return export_failed(code, &error);
  }
  return 0;
}

int shared_array_fill(Holder* h, struct ArrowArray* out) {
  return holder_export_shared(h, out, NULL);
}

int shared_device_array_fill(Holder* h, struct ArrowDeviceArray* out) {
  return holder_export_shared(h, NULL, out);
}

/* The same for a schema holder; strings are borrowed from its schema. */
int shared_schema_fill(SchemaHolder* s, struct ArrowSchema* out) {
  struct FerryError error;
  error.message[0] = '\0';
  schema_holder_incref(s);
  int code =
      fp_ferry_schema_export_shared(&s->schema, out, schema_holder_release_hook, s, &error);
  if (code != FERRY_OK) {
    schema_holder_decref(s);
    return export_failed(code, &error);
  }
  return 0;
}

/* ---- capsules --------------------------------------------------------------------- */

const char kSchemaCapsule[] = "arrow_schema";
const char kArrayCapsule[] = "arrow_array";
const char kDeviceArrayCapsule[] = "arrow_device_array";
const char kStreamCapsule[] = "arrow_array_stream";
const char kDeviceStreamCapsule[] = "arrow_device_array_stream";

/* The struct of one of our capsules for its destructor, or NULL (reported
 * as unraisable) when the capsule is not what its name promised. */
static void* capsule_struct(PyObject* capsule, const char* name) {
  void* data = PyCapsule_GetPointer(capsule, name);
  if (data == NULL) PyErr_WriteUnraisable(capsule);
  return data;
}

/* Destructors release what the consumer did not take, then free the struct.
   `part` is the member that carries the release callback (the struct itself,
   or the ArrowArray inside an ArrowDeviceArray). */
#define CAPSULE_DESTRUCTOR(fn, type, name, part)                          \
  void fn(PyObject* capsule) {                                            \
    type* p = (type*)capsule_struct(capsule, name);                       \
    if (p != NULL && (part)->release != NULL) (part)->release(part);      \
    free(p);                                                              \
  }

static CAPSULE_DESTRUCTOR(schema_capsule_destructor, struct ArrowSchema, kSchemaCapsule, p)
CAPSULE_DESTRUCTOR(array_capsule_destructor, struct ArrowArray, kArrayCapsule, p)
CAPSULE_DESTRUCTOR(device_array_capsule_destructor, struct ArrowDeviceArray, kDeviceArrayCapsule,
                   &p->array)
CAPSULE_DESTRUCTOR(stream_capsule_destructor, struct ArrowArrayStream, kStreamCapsule, p)
CAPSULE_DESTRUCTOR(device_stream_capsule_destructor, struct ArrowDeviceArrayStream,
                   kDeviceStreamCapsule, p)

/* A capsule over a zeroed heap struct of `size` bytes; *out gets the struct. */
PyObject* new_capsule(size_t size, const char* name, PyCapsule_Destructor destructor,
                      void** out) {
  void* data = calloc(1, size);
  if (data == NULL) return PyErr_NoMemory();
  PyObject* capsule = PyCapsule_New(data, name, destructor);
  if (capsule == NULL) {
    free(data);
    return NULL;
  }
  *out = data;
  return capsule;
}

PyObject* schema_capsule_from_holder(SchemaHolder* s) {
  struct ArrowSchema* out;
  PyObject* capsule =
      new_capsule(sizeof(struct ArrowSchema), kSchemaCapsule, schema_capsule_destructor, (void**)&out);
  if (capsule == NULL) return NULL;
  if (shared_schema_fill(s, out) != 0) {
    Py_DECREF(capsule);
    return NULL;
  }
  return capsule;
}

