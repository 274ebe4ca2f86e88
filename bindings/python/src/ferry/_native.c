/* ferry._native: the hot paths of ferry's Python package, in C.
 *
 * The package's raw layer (ferry.raw, cffi over the generated declarations)
 * reaches every function of libferry; this module does what cffi cannot do
 * quickly or at all: PyCapsules (Arrow's PyCapsule interface and DLPack),
 * reference-counted ownership of imported arrays that release callbacks may
 * drop from any thread without the GIL, and the C trampolines through which
 * C consumers call Python producers (GIL taken, no exception crosses).
 *
 * It does not link libferry: load() binds to the libferry that the package
 * found (ferry/_loader.py), with dlopen(RTLD_NOLOAD), so the whole process
 * shares one copy and one device registry.
 *
 * Ownership model
 * - A SchemaHolder owns one ArrowSchema; a Holder owns one ArrowDeviceArray
 *   and a reference to its SchemaHolder. Both are atomically reference
 *   counted: Python objects (ArrayBase, SchemaBase) hold one reference each,
 *   and every export to a consumer holds one more until the consumer calls
 *   release. The last reference releases the structs (and thus the data).
 * - Exports share: each exported struct tree is a fresh set of nodes that
 *   point at the same buffers and keep the holder alive, so the Python object
 *   stays usable and every child can be moved and released on its own, as
 *   the C data interface allows. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <dlfcn.h>
#include <pthread.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ferry/dlpack_abi.h"
#include "ferry/ferry.h"

/* ---- libferry, bound at load() ---------------------------------------------------- */

#define FP_FUNCTIONS(X)                 \
  X(ferry_schema_release)               \
  X(ferry_device_array_release)         \
  X(ferry_array_stream_release)         \
  X(ferry_device_array_from_dlpack)     \
  X(ferry_device_array_init)            \
  X(ferry_array_init)                   \
  X(ferry_array_buffer_size)            \
  X(ferry_device_is_host_accessible)    \
  X(ferry_device_type_name)             \
  X(ferry_device_array_wait)            \
  X(ferry_validate_device_array)        \
  X(ferry_validate_schema)              \
  X(ferry_prepared_schema_create)       \
  X(ferry_prepared_schema_free)         \
  X(ferry_validate_prepared)            \
  X(ferry_device_resolve)               \
  X(ferry_device_event_create)          \
  X(ferry_device_event_record)          \
  X(ferry_device_event_destroy)         \
  X(ferry_array_stream_init)            \
  X(ferry_array_stream_get_schema)      \
  X(ferry_array_stream_get_next)        \
  X(ferry_array_stream_get_next_on)     \
  X(ferry_array_export_shared)          \
  X(ferry_device_array_export_shared)   \
  X(ferry_schema_export_shared)         \
  X(ferry_array_stream_to_cpu_stream)   \
  X(ferry_array_stream_from_cpu_stream)  \
  X(ferry_schema_copy)                  \
  X(ferry_device_array_to_dlpack_shared) \
  X(ferry_array_stream_with_schema)      \
  X(ferry_schema_answers_request)

#define FP_DECLARE(name) static __typeof__(name)* fp_##name;
FP_FUNCTIONS(FP_DECLARE)
#undef FP_DECLARE

/* The leak report's registry (optional: a libferry older than the report
 * lacks them, and then nothing is tracked). */
static __typeof__(ferry_leak_track)* fp_ferry_leak_track;
static __typeof__(ferry_leak_untrack)* fp_ferry_leak_untrack;
static int g_leak_report; /* FERRY_LEAK_REPORT is on (read at load) */

/* Whether the interpreter is shutting down (public from Python 3.13 on). */
#if PY_VERSION_HEX >= 0x030D0000
#define FP_FINALIZING() Py_IsFinalizing()
#else
#define FP_FINALIZING() _Py_IsFinalizing()
#endif

static void* g_library;            /* dlopen handle of the shared libferry */
static PyObject* g_error_factory;  /* ferry._errors.from_code(code, message, buffer) */
static atomic_llong g_live_refs;   /* Python references held by C (release hooks) */
static PyObject* g_closed_error;   /* ferry.ClosedError (a ValueError) */

/* ---- errors ----------------------------------------------------------------------- */

/* Raises the package's exception for an errno code; `buffer` selects the
 * BufferError flavour that DLPack and the PyCapsule protocols ask for. */
static PyObject* raise_code(int code, const char* message, int buffer) {
  if (g_error_factory == NULL) {
    PyErr_Format(PyExc_RuntimeError, "ferry error %d: %s", code, message);
    return NULL;
  }
  PyObject* exc = PyObject_CallFunction(g_error_factory, "isi", code, message, buffer);
  if (exc != NULL) {
    PyErr_SetObject((PyObject*)Py_TYPE(exc), exc);
    Py_DECREF(exc);
  }
  return NULL;
}

static PyObject* raise_error(int code, const struct FerryError* error, int buffer) {
  return raise_code(code, error->message[0] ? error->message : "(no message)", buffer);
}

static int need_library(void) {
  if (g_library == NULL) {
    PyErr_SetString(PyExc_RuntimeError, "ferry._native is not bound to libferry yet");
    return -1;
  }
  return 0;
}

/* An address argument: an int, or anything with __index__ (a NumPy integer),
 * as the Python code these paths replaced accepted through int(). NULL with
 * an exception set on failure (check PyErr_Occurred: 0 is a value too). */
static void* address_arg(PyObject* obj) {
  if (PyLong_Check(obj)) return PyLong_AsVoidPtr(obj);
  PyObject* index = PyNumber_Index(obj);
  if (index == NULL) return NULL;
  void* address = PyLong_AsVoidPtr(index);
  Py_DECREF(index);
  return address;
}

/* ---- holders ---------------------------------------------------------------------- */

typedef struct {
  atomic_long refs;
  int immortal; /* shared DLPack schemas (see g_dlpack_schemas): never counted */
  /* The schema prepared for validation, made (under the GIL) the first time
   * an array sharing this holder is validated: a stream's batches and the
   * arrays from_buffers makes for one Schema skip the schema's walk. */
  struct FerryPreparedSchema* prepared;
  struct ArrowSchema schema;
} SchemaHolder;

typedef struct {
  atomic_long refs;
  SchemaHolder* schema;
  struct ArrowDeviceArray array;
} Holder;

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
static SchemaHolder* schema_holder_new(void) {
  SchemaHolder* s = (SchemaHolder*)malloc(sizeof(SchemaHolder));
  if (s == NULL) return NULL;
  atomic_init(&s->refs, 1);
  s->immortal = 0;
  s->prepared = NULL;
  s->schema.release = NULL;
  return s;
}

static void schema_holder_incref(SchemaHolder* s) {
  if (!s->immortal) atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
}

static void schema_holder_decref(SchemaHolder* s) {
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
static Holder* holder_new(SchemaHolder* schema) {
  Holder* h = g_n_spare_holders > 0 ? g_spare_holders[--g_n_spare_holders]
                                    : (Holder*)malloc(sizeof(Holder));
  if (h == NULL) return NULL;
  atomic_init(&h->refs, 1);
  h->array.array.release = NULL;
  h->schema = schema;
  if (schema != NULL) schema_holder_incref(schema);
  return h;
}

static void holder_incref(Holder* h) { atomic_fetch_add_explicit(&h->refs, 1, memory_order_relaxed); }

/* Drops a reference; on the last one, releases the structs and returns 1
 * (the caller disposes of the block). */
static int holder_release_last(Holder* h) {
  if (h == NULL || !drop_ref_was_last(&h->refs)) return 0;
  fp_ferry_device_array_release(&h->array);
  schema_holder_decref(h->schema);
  return 1;
}

static void holder_decref(Holder* h) {
  if (holder_release_last(h)) free(h);
}

/* holder_decref for a caller that holds the GIL: the block may be spared. */
static void holder_decref_gil(Holder* h) {
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
static void holder_release_hook(void* user_data) { holder_decref((Holder*)user_data); }

static void schema_holder_release_hook(void* user_data) {
  schema_holder_decref((SchemaHolder*)user_data);
}

/* Raises the failure of a shared export (MemoryError when out of memory). */
static int export_failed(int code, const struct FerryError* error) {
  if (code == ENOMEM)
    PyErr_NoMemory();
  else
    raise_error(code, error, 0);
  return -1;
}

/* Fills released `out` with an export of the holder's ArrowArray; 0, or -1
 * with an exception set (then `out` stays released). */
static int shared_array_fill(Holder* h, struct ArrowArray* out) {
  struct FerryError error;
  error.message[0] = '\0';
  holder_incref(h);
  int code = fp_ferry_array_export_shared(&h->array.array, out, holder_release_hook, h, &error);
  if (code != FERRY_OK) {
    holder_decref(h); /* not the last: the caller holds one */
    return export_failed(code, &error);
  }
  return 0;
}

/* The same for the whole device array: same device and event (the event
 * stays valid while the holder lives, which this export guarantees). */
static int shared_device_array_fill(Holder* h, struct ArrowDeviceArray* out) {
  struct FerryError error;
  error.message[0] = '\0';
  holder_incref(h);
  int code = fp_ferry_device_array_export_shared(&h->array, out, holder_release_hook, h, &error);
  if (code != FERRY_OK) {
    holder_decref(h);
    return export_failed(code, &error);
  }
  return 0;
}

/* The same for a schema holder; strings are borrowed from its schema. */
static int shared_schema_fill(SchemaHolder* s, struct ArrowSchema* out) {
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

static const char kSchemaCapsule[] = "arrow_schema";
static const char kArrayCapsule[] = "arrow_array";
static const char kDeviceArrayCapsule[] = "arrow_device_array";
static const char kStreamCapsule[] = "arrow_array_stream";
static const char kDeviceStreamCapsule[] = "arrow_device_array_stream";

/* Destructors release what the consumer did not take, then free the struct. */
static void schema_capsule_destructor(PyObject* capsule) {
  struct ArrowSchema* s = (struct ArrowSchema*)PyCapsule_GetPointer(capsule, kSchemaCapsule);
  if (s == NULL) {
    PyErr_WriteUnraisable(capsule);
    return;
  }
  if (s->release != NULL) s->release(s);
  free(s);
}

static void array_capsule_destructor(PyObject* capsule) {
  struct ArrowArray* a = (struct ArrowArray*)PyCapsule_GetPointer(capsule, kArrayCapsule);
  if (a == NULL) {
    PyErr_WriteUnraisable(capsule);
    return;
  }
  if (a->release != NULL) a->release(a);
  free(a);
}

static void device_array_capsule_destructor(PyObject* capsule) {
  struct ArrowDeviceArray* a =
      (struct ArrowDeviceArray*)PyCapsule_GetPointer(capsule, kDeviceArrayCapsule);
  if (a == NULL) {
    PyErr_WriteUnraisable(capsule);
    return;
  }
  if (a->array.release != NULL) a->array.release(&a->array);
  free(a);
}

static void stream_capsule_destructor(PyObject* capsule) {
  struct ArrowArrayStream* s =
      (struct ArrowArrayStream*)PyCapsule_GetPointer(capsule, kStreamCapsule);
  if (s == NULL) {
    PyErr_WriteUnraisable(capsule);
    return;
  }
  if (s->release != NULL) s->release(s);
  free(s);
}

static void device_stream_capsule_destructor(PyObject* capsule) {
  struct ArrowDeviceArrayStream* s =
      (struct ArrowDeviceArrayStream*)PyCapsule_GetPointer(capsule, kDeviceStreamCapsule);
  if (s == NULL) {
    PyErr_WriteUnraisable(capsule);
    return;
  }
  if (s->release != NULL) s->release(s);
  free(s);
}

/* A capsule over a zeroed heap struct of `size` bytes; *out gets the struct. */
static PyObject* new_capsule(size_t size, const char* name, PyCapsule_Destructor destructor,
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

static PyObject* schema_capsule_from_holder(SchemaHolder* s) {
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

/* ---- Pin: a reader's reference ---------------------------------------------------- */

/* What a reader holds while it reads through raw pointers (the Python
 * readers of _array.py go through cffi): one reference to an array's holder
 * (which keeps its schema holder) or to a schema holder. close() on the
 * owning object only drops that object's reference, so a pinned tree stays
 * valid until the pin goes away, whatever another thread closes meanwhile:
 * a reader either finishes or, when it asks for a pin after close(), gets
 * ferry.ClosedError. */
typedef struct {
  PyObject_HEAD Holder* holder; /* an array's pin, or NULL */
  SchemaHolder* schema;         /* a schema's pin (NULL for an array's) */
} Pin;

static PyTypeObject PinType;

/* A new pin holding one more reference (under the GIL). */
static PyObject* pin_new(Holder* holder, SchemaHolder* schema) {
  Pin* pin = PyObject_New(Pin, &PinType);
  if (pin == NULL) return NULL;
  pin->holder = NULL;
  pin->schema = NULL;
  if (holder != NULL) {
    holder_incref(holder);
    pin->holder = holder;
  } else {
    schema_holder_incref(schema);
    pin->schema = schema;
  }
  return (PyObject*)pin;
}


static void Pin_dealloc(Pin* self) {
  holder_decref_gil(self->holder);
  schema_holder_decref(self->schema);
  PyObject_Free(self);
}

static PyObject* Pin_schema_address(Pin* self, void* unused) {
  return PyLong_FromVoidPtr(self->holder != NULL ? &self->holder->schema->schema
                                                 : &self->schema->schema);
}

static PyObject* Pin_array_address(Pin* self, void* unused) {
  if (self->holder == NULL) Py_RETURN_NONE;
  return PyLong_FromVoidPtr(&self->holder->array);
}

static PyObject* Pin_closed(Pin* self, void* unused) { Py_RETURN_FALSE; }

/* ---- SchemaBase: the C half of ferry.Schema --------------------------------------- */

typedef struct {
  PyObject_HEAD SchemaHolder* holder; /* NULL once closed */
} SchemaBase;

static PyTypeObject SchemaBaseType;

static int schema_open(SchemaBase* self) {
  if (self->holder == NULL) {
    PyErr_SetString(g_closed_error, "the schema is closed");
    return -1;
  }
  return 0;
}

static void SchemaBase_dealloc(SchemaBase* self) {
  schema_holder_decref(self->holder);
  self->holder = NULL;
  Py_TYPE(self)->tp_free((PyObject*)self);
}

static PyObject* SchemaBase_close(SchemaBase* self, PyObject* unused) {
  schema_holder_decref(self->holder);
  self->holder = NULL;
  Py_RETURN_NONE;
}

static PyObject* SchemaBase_arrow_c_schema(SchemaBase* self, PyObject* unused) {
  if (schema_open(self) != 0) return NULL;
  return schema_capsule_from_holder(self->holder);
}

static PyObject* SchemaBase_address(SchemaBase* self, void* unused) {
  if (schema_open(self) != 0) return NULL;
  return PyLong_FromVoidPtr(&self->holder->schema);
}

/* _pin(): a reference for a reader (see Pin); ClosedError once closed. */
static PyObject* SchemaBase_pin(SchemaBase* self, PyObject* unused) {
  if (schema_open(self) != 0) return NULL;
  return pin_new(NULL, self->holder);
}

static PyObject* SchemaBase_closed(SchemaBase* self, void* unused) {
  return PyBool_FromLong(self->holder == NULL);
}

/* Shares the schema into a consumer-allocated struct at `address`. */
static PyObject* SchemaBase_export_into(SchemaBase* self, PyObject* arg) {
  if (schema_open(self) != 0) return NULL;
  struct ArrowSchema* out = (struct ArrowSchema*)PyLong_AsVoidPtr(arg);
  if (out == NULL) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "address must not be 0");
    return NULL;
  }
  if (out->release != NULL) {
    PyErr_SetString(PyExc_ValueError, "the destination schema is not released");
    return NULL;
  }
  if (shared_schema_fill(self->holder, out) != 0) return NULL;
  Py_RETURN_NONE;
}

static PyMethodDef SchemaBase_methods[] = {
    {"__arrow_c_schema__", (PyCFunction)SchemaBase_arrow_c_schema, METH_NOARGS,
     "Exports the schema as an \"arrow_schema\" PyCapsule (the schema stays usable)."},
    {"_close", (PyCFunction)SchemaBase_close, METH_NOARGS, "Drops this object's reference."},
    {"_pin", (PyCFunction)SchemaBase_pin, METH_NOARGS,
     "A reference that keeps the schema alive while a reader uses its address."},
    {"_export_into", (PyCFunction)SchemaBase_export_into, METH_O,
     "Shares the schema into the released ArrowSchema at an address."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef SchemaBase_getset[] = {
    {"_address", (getter)SchemaBase_address, NULL, "Address of the owned ArrowSchema.", NULL},
    {"closed", (getter)SchemaBase_closed, NULL, "True once close() ran.", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyTypeObject SchemaBaseType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ferry._native.SchemaBase",
    .tp_basicsize = sizeof(SchemaBase),
    .tp_dealloc = (destructor)SchemaBase_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "The C half of ferry.Schema: a reference to an owned ArrowSchema.",
    .tp_methods = SchemaBase_methods,
    .tp_getset = SchemaBase_getset,
    .tp_new = NULL,
};

/* Makes an instance of `cls` (a SchemaBase subclass) owning a new reference. */
static PyObject* schema_object(PyTypeObject* cls, SchemaHolder* holder) {
  SchemaBase* obj = (SchemaBase*)cls->tp_alloc(cls, 0);
  if (obj == NULL) return NULL;
  schema_holder_incref(holder);
  obj->holder = holder;
  return (PyObject*)obj;
}

/* ---- ArrayBase: the C half of ferry.DeviceArray ----------------------------------- */

typedef struct {
  PyObject_HEAD Holder* holder; /* NULL once closed or moved out */
  int64_t leak_token;           /* the leak report's registration, or 0 */
} ArrayBase;

static PyTypeObject ArrayBaseType;

/* The leak report (FERRY_LEAK_REPORT=1): every DeviceArray and stream object
 * that owns something is registered while it does, so the core's report at
 * exit names those never closed. Off, nothing is formatted or called. */
static int64_t leak_track(const char* description) {
  if (!g_leak_report || fp_ferry_leak_track == NULL) return 0;
  return fp_ferry_leak_track("python", description);
}

static void leak_untrack(int64_t* token) {
  if (*token != 0 && fp_ferry_leak_untrack != NULL) fp_ferry_leak_untrack(*token);
  *token = 0;
}

/* The finalizer's untrack: an object still open when the interpreter shuts
 * down was never closed by the program, so it stays in the report (its
 * memory is released all the same); one collected earlier was only
 * forgotten, and the collector's release is the safety net. */
static void leak_untrack_at_dealloc(int64_t* token) {
  if (*token != 0 && FP_FINALIZING()) {
    *token = 0;
    return;
  }
  leak_untrack(token);
}

static void array_leak_track(ArrayBase* self) {
  if (!g_leak_report) return;
  const struct ArrowDeviceArray* a = &self->holder->array;
  const char* format = self->holder->schema->schema.format;
  char description[160];
  snprintf(description, sizeof(description),
           "ferry.DeviceArray (format \"%.40s\", length %lld, device type %d, id %lld) never "
           "closed",
           format ? format : "?", (long long)a->array.length, (int)a->device_type,
           (long long)a->device_id);
  self->leak_token = leak_track(description);
}

static int array_open(ArrayBase* self) {
  if (self->holder == NULL) {
    PyErr_SetString(g_closed_error, "the array is closed (released or moved)");
    return -1;
  }
  return 0;
}

static void ArrayBase_dealloc(ArrayBase* self) {
  leak_untrack_at_dealloc(&self->leak_token);
  holder_decref_gil(self->holder);
  self->holder = NULL;
  Py_TYPE(self)->tp_free((PyObject*)self);
}

static PyObject* ArrayBase_close(ArrayBase* self, PyObject* unused) {
  Holder* h = self->holder;
  self->holder = NULL;
  leak_untrack(&self->leak_token);
  if (h != NULL) {
    /* Release callbacks may block (a foreign runtime's, a device's). */
    Py_BEGIN_ALLOW_THREADS holder_decref(h);
    Py_END_ALLOW_THREADS
  }
  Py_RETURN_NONE;
}

/* _pin(): a reference for a reader (see Pin); ClosedError once closed. */
static PyObject* ArrayBase_pin(ArrayBase* self, PyObject* unused) {
  if (array_open(self) != 0) return NULL;
  return pin_new(self->holder, NULL);
}

static PyObject* ArrayBase_closed(ArrayBase* self, void* unused) {
  return PyBool_FromLong(self->holder == NULL);
}

static PyObject* ArrayBase_schema_address(ArrayBase* self, void* unused) {
  if (array_open(self) != 0) return NULL;
  return PyLong_FromVoidPtr(&self->holder->schema->schema);
}

static PyObject* ArrayBase_array_address(ArrayBase* self, void* unused) {
  if (array_open(self) != 0) return NULL;
  return PyLong_FromVoidPtr(&self->holder->array);
}

static PyObject* ArrayBase_shared(ArrayBase* self, void* unused) {
  if (array_open(self) != 0) return NULL;
  return PyLong_FromLong(atomic_load(&self->holder->refs) - 1);
}

static PyObject* ArrayBase_device_type(ArrayBase* self, void* unused) {
  if (array_open(self) != 0) return NULL;
  return PyLong_FromLong(self->holder->array.device_type);
}

static PyObject* ArrayBase_device_id(ArrayBase* self, void* unused) {
  if (array_open(self) != 0) return NULL;
  return PyLong_FromLongLong(self->holder->array.device_id);
}

static PyObject* ArrayBase_length(ArrayBase* self, void* unused) {
  if (array_open(self) != 0) return NULL;
  return PyLong_FromLongLong(self->holder->array.array.length);
}

static Py_ssize_t ArrayBase_len(ArrayBase* self) {
  if (array_open(self) != 0) return -1;
  return (Py_ssize_t)self->holder->array.array.length;
}

static PyObject* ArrayBase_schema_object(ArrayBase* self, PyObject* cls) {
  if (array_open(self) != 0) return NULL;
  if (!PyType_Check(cls) || !PyType_IsSubtype((PyTypeObject*)cls, &SchemaBaseType)) {
    PyErr_SetString(PyExc_TypeError, "expected a SchemaBase subclass");
    return NULL;
  }
  return schema_object((PyTypeObject*)cls, self->holder->schema);
}

static int check_no_kwargs_set(PyObject* kwargs) {
  if (kwargs == NULL) return 0;
  PyObject *key, *value;
  Py_ssize_t pos = 0;
  while (PyDict_Next(kwargs, &pos, &key, &value)) {
    if (value != Py_None) {
      PyErr_Format(PyExc_NotImplementedError,
                   "Received unsupported keyword argument(s): %R (ferry accepts only "
                   "requested_schema)",
                   key);
      return -1;
    }
  }
  return 0;
}

/* requested_schema (the PyCapsule protocols): honoured when the data
 * answers it without a copy (the core's ferry_schema_answers_request: the
 * same formats or layout aliases, node by node, and no nulls under a field
 * requested non-nullable), refused with NotImplementedError naming the
 * first difference otherwise. The answer's schema is a copy of the
 * requested one (its names, flags and metadata), which the consumer may
 * release independently. */

/* The requested schema capsule's struct, checked and valid; NULL with an
 * exception set otherwise. */
static struct ArrowSchema* requested_schema_arg(PyObject* requested) {
  struct ArrowSchema* want = (struct ArrowSchema*)PyCapsule_GetPointer(requested, kSchemaCapsule);
  if (want == NULL) {
    PyErr_Clear();
    PyErr_SetString(PyExc_TypeError,
                    "requested_schema must be an \"arrow_schema\" PyCapsule or None");
    return NULL;
  }
  if (want->release == NULL) {
    PyErr_SetString(PyExc_ValueError, "the requested schema's capsule was already consumed");
    return NULL;
  }
  struct FerryError error;
  error.message[0] = '\0';
  if (fp_ferry_validate_schema(want, NULL, NULL, &error) != FERRY_OK) {
    PyErr_Format(PyExc_ValueError, "the requested schema is not valid: %s", error.message);
    return NULL;
  }
  return want;
}

/* 0 with *answer NULL (no request: the array's own schema), 0 with *answer
 * a new SchemaHolder to export instead, or -1 with an exception set. */
static int check_requested_schema(Holder* h, PyObject* requested, SchemaHolder** answer) {
  *answer = NULL;
  if (requested == NULL || requested == Py_None) return 0;
  struct ArrowSchema* want = requested_schema_arg(requested);
  if (want == NULL) return -1;
  struct FerryError error;
  error.message[0] = '\0';
  if (fp_ferry_schema_answers_request(&h->schema->schema, want, &h->array.array, &error) !=
      FERRY_OK) {
    PyErr_Format(PyExc_NotImplementedError,
                 "ferry does not cast, and the array (format \"%s\") has no zero-copy "
                 "answer to the requested schema: %s",
                 h->schema->schema.format, error.message);
    return -1;
  }
  SchemaHolder* s = schema_holder_new();
  if (s == NULL) {
    PyErr_NoMemory();
    return -1;
  }
  int code = fp_ferry_schema_copy(want, &s->schema, &error);
  if (code != FERRY_OK) {
    schema_holder_decref(s);
    export_failed(code, &error);
    return -1;
  }
  *answer = s;
  return 0;
}

/* The schema capsule of an export: the requested answer's, or the array's. */
static PyObject* answer_schema_capsule(Holder* h, SchemaHolder* answer) {
  if (answer == NULL) return schema_capsule_from_holder(h->schema);
  PyObject* capsule = schema_capsule_from_holder(answer);
  schema_holder_decref(answer); /* the capsule's export holds its own reference */
  return capsule;
}

static PyObject* capsule_pair(PyObject* schema_capsule, PyObject* array_capsule) {
  if (schema_capsule == NULL || array_capsule == NULL) {
    Py_XDECREF(schema_capsule);
    Py_XDECREF(array_capsule);
    return NULL;
  }
  PyObject* pair = PyTuple_Pack(2, schema_capsule, array_capsule);
  Py_DECREF(schema_capsule);
  Py_DECREF(array_capsule);
  return pair;
}

static PyObject* ArrayBase_arrow_c_device_array(ArrayBase* self, PyObject* args, PyObject* kwargs) {
  PyObject* requested = Py_None;
  if (array_open(self) != 0) return NULL;
  if (!PyArg_ParseTuple(args, "|O:__arrow_c_device_array__", &requested)) return NULL;
  if (kwargs != NULL) {
    PyObject* rs = PyDict_GetItemString(kwargs, "requested_schema");
    if (rs != NULL) {
      requested = rs;
      kwargs = PyDict_Copy(kwargs);
      if (kwargs == NULL) return NULL;
      PyDict_DelItemString(kwargs, "requested_schema");
      int bad = check_no_kwargs_set(kwargs);
      Py_DECREF(kwargs);
      if (bad) return NULL;
    } else if (check_no_kwargs_set(kwargs) != 0) {
      return NULL;
    }
  }
  Holder* h = self->holder;
  SchemaHolder* answer;
  if (check_requested_schema(h, requested, &answer) != 0) return NULL;
  struct ArrowDeviceArray* out;
  PyObject* array_capsule = new_capsule(sizeof(struct ArrowDeviceArray), kDeviceArrayCapsule,
                                        device_array_capsule_destructor, (void**)&out);
  if (array_capsule == NULL || shared_device_array_fill(h, out) != 0) {
    Py_XDECREF(array_capsule);
    schema_holder_decref(answer);
    return NULL;
  }
  return capsule_pair(answer_schema_capsule(h, answer), array_capsule);
}

static PyObject* ArrayBase_arrow_c_array(ArrayBase* self, PyObject* args, PyObject* kwargs) {
  static char* keywords[] = {"requested_schema", NULL};
  PyObject* requested = Py_None;
  if (array_open(self) != 0) return NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:__arrow_c_array__", keywords, &requested))
    return NULL;
  Holder* h = self->holder;
  if (h->array.device_type != ARROW_DEVICE_CPU) {
    PyErr_Format(PyExc_BufferError,
                 "the array lives on device type %d (id %lld), not on the CPU: "
                 "__arrow_c_array__ is for CPU data only; use __arrow_c_device_array__, or "
                 "bring the array to the host first with .to_host()",
                 (int)h->array.device_type, (long long)h->array.device_id);
    return NULL;
  }
  SchemaHolder* answer;
  if (check_requested_schema(h, requested, &answer) != 0) return NULL;
  struct ArrowArray* out;
  PyObject* array_capsule =
      new_capsule(sizeof(struct ArrowArray), kArrayCapsule, array_capsule_destructor, (void**)&out);
  if (array_capsule == NULL || shared_array_fill(h, out) != 0) {
    Py_XDECREF(array_capsule);
    schema_holder_decref(answer);
    return NULL;
  }
  return capsule_pair(answer_schema_capsule(h, answer), array_capsule);
}

/* Moves (sole owner) or shares the array into consumer-allocated structs at
 * two addresses (the schema's may be None: only the array). */
static PyObject* array_export(ArrayBase* self, PyObject* schema_addr, PyObject* array_addr,
                              int move) {
  if (array_open(self) != 0) return NULL;
  struct ArrowSchema* schema_out = NULL; /* None: only the array */
  if (schema_addr != Py_None) {
    schema_out = (struct ArrowSchema*)address_arg(schema_addr);
    if (schema_out == NULL && PyErr_Occurred()) return NULL;
  }
  struct ArrowDeviceArray* array_out = (struct ArrowDeviceArray*)address_arg(array_addr);
  if (array_out == NULL && PyErr_Occurred()) return NULL;
  if (array_out == NULL) {
    PyErr_SetString(PyExc_ValueError, "the array address must not be 0");
    return NULL;
  }
  if (array_out->array.release != NULL || (schema_out != NULL && schema_out->release != NULL)) {
    PyErr_SetString(PyExc_ValueError, "the destination structs must be released beforehand");
    return NULL;
  }
  /* The addresses' __index__ may have run Python, and another thread closed the array. */
  if (array_open(self) != 0) return NULL;
  Holder* h = self->holder;
  if (schema_out != NULL && shared_schema_fill(h->schema, schema_out) != 0) return NULL;
  if (move && atomic_load(&h->refs) == 1) {
    /* Sole owner: hand over the original structs, the producer's own. */
    *array_out = h->array;
    h->array.array.release = NULL;
    self->holder = NULL;
    leak_untrack(&self->leak_token);
    holder_decref(h);
  } else if (shared_device_array_fill(h, array_out) != 0) {
    if (schema_out != NULL) schema_out->release(schema_out);
    return NULL;
  }
  Py_RETURN_NONE;
}

static PyObject* ArrayBase_export_into(ArrayBase* self, PyObject* args) {
  PyObject *schema_addr, *array_addr;
  int move = 0;
  if (!PyArg_ParseTuple(args, "OOp", &schema_addr, &array_addr, &move)) return NULL;
  return array_export(self, schema_addr, array_addr, move);
}

/* export_to_c(array_address, schema_address=None, *, move=False): the
 * public spelling of _export_into, array first as in pyarrow's
 * Array._export_to_c(out_ptr, out_schema_ptr=0), called straight into C (a
 * Python frame around it would cost more than the export). */
static PyObject* g_str_move;
static PyObject* g_str_array_address;
static PyObject* g_str_schema_address;
static int keyword_is(PyObject* key, PyObject* name);

static PyObject* ArrayBase_export_to_c(ArrayBase* self, PyObject* const* args, Py_ssize_t nargs,
                                       PyObject* kwnames) {
  if (nargs > 2) {
    PyErr_Format(PyExc_TypeError,
                 "export_to_c() takes at most 2 positional arguments (array_address, "
                 "schema_address), %zd given",
                 nargs);
    return NULL;
  }
  PyObject* given[2] = {NULL, NULL}; /* array, schema */
  for (Py_ssize_t i = 0; i < nargs; i++) given[i] = args[i];
  int move = 0;
  for (Py_ssize_t i = 0; kwnames != NULL && i < PyTuple_GET_SIZE(kwnames); i++) {
    PyObject* key = PyTuple_GET_ITEM(kwnames, i);
    PyObject* value = args[nargs + i];
    int slot = keyword_is(key, g_str_array_address)    ? 0
               : keyword_is(key, g_str_schema_address) ? 1
                                                       : -1;
    if (slot >= 0) {
      if (given[slot] != NULL) {
        PyErr_Format(PyExc_TypeError, "export_to_c() got multiple values for argument %R", key);
        return NULL;
      }
      given[slot] = value;
    } else if (keyword_is(key, g_str_move)) {
      move = PyObject_IsTrue(value);
      if (move < 0) return NULL;
    } else {
      PyErr_Format(PyExc_TypeError, "export_to_c() got an unexpected keyword argument %R", key);
      return NULL;
    }
  }
  if (given[0] == NULL) {
    PyErr_SetString(PyExc_TypeError, "export_to_c() needs array_address");
    return NULL;
  }
  return array_export(self, given[1] != NULL ? given[1] : Py_None, given[0], move);
}

static PyObject* ArrayBase_enter(ArrayBase* self, PyObject* unused) {
  Py_INCREF(self);
  return (PyObject*)self;
}

static PyObject* ArrayBase_exit(ArrayBase* self, PyObject* args) {
  return ArrayBase_close(self, NULL);
}

/* ---- host buffers as memoryviews ---------------------------------------------------- */

/* The object a buffer's memoryview is made over: it keeps the array's holder
 * (and so the data) alive for as long as the view lives, like an export. */
typedef struct {
  PyObject_HEAD Holder* holder;
  void* data;
  Py_ssize_t size;
} BufferOwner;

static void BufferOwner_dealloc(BufferOwner* self) {
  holder_decref_gil(self->holder);
  PyObject_Free(self);
}

static int BufferOwner_getbuffer(BufferOwner* self, Py_buffer* view, int flags) {
  return PyBuffer_FillInfo(view, (PyObject*)self, self->data, self->size, 1, flags);
}

static PyBufferProcs BufferOwner_as_buffer = {.bf_getbuffer = (getbufferproc)BufferOwner_getbuffer};

static PyTypeObject BufferOwnerType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ferry._native.BufferOwner",
    .tp_basicsize = sizeof(BufferOwner),
    .tp_dealloc = (destructor)BufferOwner_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Keeps an array's data alive under a memoryview of one of its buffers.",
    .tp_as_buffer = &BufferOwner_as_buffer,
};

/* 1 when the host may read the holder's memory (the CPU without a registry
 * lookup; other devices as their backend says), else 0 with BufferError set. */
static int holder_host_readable(Holder* h) {
  ArrowDeviceType type = h->array.device_type;
  if (type == ARROW_DEVICE_CPU) return 1;
  struct FerryDevice* device = NULL;
  struct FerryError error;
  error.message[0] = '\0';
  int code = fp_ferry_device_resolve(type, h->array.device_id, &device, &error);
  if (code != FERRY_OK) {
    raise_error(code, &error, 0);
    return 0;
  }
  if (fp_ferry_device_is_host_accessible(device)) return 1;
  PyErr_Format(PyExc_BufferError, "%s:%lld memory is not host memory: call to_host() first",
               fp_ferry_device_type_name(type), (long long)h->array.device_id);
  return 0;
}

/* A read-only memoryview of buffer i of a node (schema, array) of the
 * holder's tree, or None for a NULL buffer; the view keeps the data alive. */
static PyObject* node_buffer(Holder* h, const struct ArrowSchema* schema,
                             const struct ArrowArray* array, Py_ssize_t i) {
  if (!holder_host_readable(h)) return NULL;
  if (i < 0 || i >= array->n_buffers) {
    PyErr_Format(PyExc_IndexError, "buffer %zd of an array with %lld buffers", i,
                 (long long)array->n_buffers);
    return NULL;
  }
  if (array->buffers[i] == NULL) Py_RETURN_NONE;
  int64_t size = 0;
  struct FerryError error;
  error.message[0] = '\0';
  int code = fp_ferry_array_buffer_size(schema, array, h->array.device_type, h->array.device_id,
                                        i, &size, &error);
  if (code != FERRY_OK) return raise_error(code, &error, 0);
  /* The C interface carries no CPU buffer sizes: a length no memory can back
   * (a bool array of 2^62 elements declares 2^59 bytes) is refused rather
   * than handed out as a view that reads past the real buffer. 2^47 bytes is
   * the user address space of x86-64 and of 48-bit AArch64. */
  if (size > ((int64_t)1 << 47)) {
    char message[200];
    snprintf(message, sizeof(message),
             "buffer %zd declares %lld bytes (length %lld, offset %lld), more than a process can "
             "address (2^47 bytes)",
             i, (long long)size, (long long)array->length, (long long)array->offset);
    return raise_code(EINVAL, message, 0);
  }
  BufferOwner* owner = PyObject_New(BufferOwner, &BufferOwnerType);
  if (owner == NULL) return NULL;
  holder_incref(h);
  owner->holder = h;
  owner->data = (void*)array->buffers[i];
  owner->size = (Py_ssize_t)size;
  PyObject* view = PyMemoryView_FromObject((PyObject*)owner);
  Py_DECREF(owner);
  return view;
}

static PyObject* ArrayBase_buffer(ArrayBase* self, PyObject* index) {
  if (array_open(self) != 0) return NULL;
  Py_ssize_t i = PyNumber_AsSsize_t(index, PyExc_IndexError);
  if (i == -1 && PyErr_Occurred()) return NULL;
  /* __index__ may have run Python, and another thread closed the array. */
  if (array_open(self) != 0) return NULL;
  Holder* h = self->holder;
  return node_buffer(h, &h->schema->schema, &h->array.array, i);
}

/* _buffer_of(schema_address, array_address, i): buffer i of a child or
 * dictionary node of this array (ferry.ArrayView.buffer). */
static PyObject* ArrayBase_buffer_of(ArrayBase* self, PyObject* args) {
  PyObject *schema_addr, *array_addr;
  Py_ssize_t i;
  if (!PyArg_ParseTuple(args, "OOn", &schema_addr, &array_addr, &i)) return NULL;
  if (array_open(self) != 0) return NULL;
  const struct ArrowSchema* schema = (const struct ArrowSchema*)PyLong_AsVoidPtr(schema_addr);
  const struct ArrowArray* array = (const struct ArrowArray*)PyLong_AsVoidPtr(array_addr);
  if (PyErr_Occurred()) return NULL;
  if (schema == NULL || array == NULL) {
    PyErr_SetString(PyExc_ValueError, "_buffer_of needs two node addresses");
    return NULL;
  }
  return node_buffer(self->holder, schema, array, i);
}

/* Pin._buffer_of(schema_address, array_address, i): buffer i of a node of
 * the pinned array (ferry.ArrayView.buffer); the view keeps the data alive. */
static PyObject* Pin_buffer_of(Pin* self, PyObject* args) {
  PyObject *schema_addr, *array_addr;
  Py_ssize_t i;
  if (!PyArg_ParseTuple(args, "OOn", &schema_addr, &array_addr, &i)) return NULL;
  if (self->holder == NULL) {
    PyErr_SetString(PyExc_TypeError, "a schema has no buffers");
    return NULL;
  }
  const struct ArrowSchema* schema = (const struct ArrowSchema*)PyLong_AsVoidPtr(schema_addr);
  const struct ArrowArray* array = (const struct ArrowArray*)PyLong_AsVoidPtr(array_addr);
  if (PyErr_Occurred()) return NULL;
  if (schema == NULL || array == NULL) {
    PyErr_SetString(PyExc_ValueError, "_buffer_of needs two node addresses");
    return NULL;
  }
  return node_buffer(self->holder, schema, array, i);
}

static PyMethodDef Pin_methods[] = {
    {"_buffer_of", (PyCFunction)Pin_buffer_of, METH_VARARGS,
     "_buffer_of(schema_address, array_address, i): buffer i of a node of the pinned array."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef Pin_getset[] = {
    {"_schema_address", (getter)Pin_schema_address, NULL, "Address of the ArrowSchema.", NULL},
    {"_array_address", (getter)Pin_array_address, NULL,
     "Address of the ArrowDeviceArray (None for a schema's pin).", NULL},
    {"closed", (getter)Pin_closed, NULL, "Always False: a pin keeps what it pins.", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyTypeObject PinType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ferry._native.Pin",
    .tp_basicsize = sizeof(Pin),
    .tp_dealloc = (destructor)Pin_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A reader's reference to an array's or a schema's structs (see _pin()).",
    .tp_methods = Pin_methods,
    .tp_getset = Pin_getset,
};

/* ---- DLPack export ------------------------------------------------------------------ */

static const char kDltensor[] = "dltensor";
static const char kDltensorVersioned[] = "dltensor_versioned";
static const char kUsedDltensor[] = "used_dltensor";
static const char kUsedDltensorVersioned[] = "used_dltensor_versioned";

/* The tensor of one of our DLPack capsules that no consumer took (a
 * consumer renames the capsule when it takes the tensor), else NULL. The
 * capsule keeps the tensor in its context too, which is read without
 * PyCapsule_GetPointer's strcmp of the name; the name is checked by its
 * pointer (ours while unused). */
static void* unconsumed_own_tensor(PyObject* capsule, const char* name) {
  const char* now = PyCapsule_GetName(capsule);
  if (now != name && (now == NULL || strcmp(now, name) != 0)) return NULL;
  return PyCapsule_GetContext(capsule);
}

static void dltensor_versioned_destructor(PyObject* capsule) {
  DLManagedTensorVersioned* t =
      (DLManagedTensorVersioned*)unconsumed_own_tensor(capsule, kDltensorVersioned);
  if (t != NULL && t->deleter != NULL) t->deleter(t);
}

static void dltensor_destructor(PyObject* capsule) {
  DLManagedTensor* t = (DLManagedTensor*)unconsumed_own_tensor(capsule, kDltensor);
  if (t != NULL && t->deleter != NULL) t->deleter(t);
}

/* A capsule of ours over `tensor` (see unconsumed_own_tensor); NULL with
 * an exception set, and then the caller still owns the tensor. */
static PyObject* own_dlpack_capsule(void* tensor, const char* name, PyCapsule_Destructor destructor) {
  PyObject* capsule = PyCapsule_New(tensor, name, destructor);
  if (capsule != NULL) (void)PyCapsule_SetContext(capsule, tensor); /* a valid capsule: cannot fail */
  return capsule;
}

/* The legacy (pre-1.0) tensor for consumers that did not pass max_version:
 * a DLManagedTensor whose deleter deletes the versioned tensor inside. */
typedef struct {
  DLManagedTensor legacy;
  DLManagedTensorVersioned* inner;
} LegacyExport;

static void legacy_export_deleter(DLManagedTensor* self) {
  LegacyExport* e = (LegacyExport*)self->manager_ctx;
  if (e->inner->deleter != NULL) e->inner->deleter(e->inner);
  free(e);
}

/* The standard's stream values, per device type (see ferry/__init__.py and
 * the package README): sets *stream and *no_sync, or raises. */
static int dlpack_stream(int32_t device_type, PyObject* stream_obj, void** stream, int* no_sync) {
  *stream = NULL;
  *no_sync = 0;
  int is_cuda = device_type == ARROW_DEVICE_CUDA || device_type == ARROW_DEVICE_CUDA_HOST ||
                device_type == ARROW_DEVICE_CUDA_MANAGED;
  int is_rocm = device_type == ARROW_DEVICE_ROCM || device_type == ARROW_DEVICE_ROCM_HOST;
  if (stream_obj == NULL || stream_obj == Py_None) {
    /* CUDA: the legacy default stream (handle 1); others: the host waits. */
    if (is_cuda) *stream = (void*)(uintptr_t)1;
    return 0;
  }
  PyObject* index = PyNumber_Index(stream_obj);
  if (index == NULL) {
    PyErr_Clear();
    PyErr_Format(PyExc_TypeError, "stream must be None or an integer, not %.100s",
                 Py_TYPE(stream_obj)->tp_name);
    return -1;
  }
  long long value = PyLong_AsLongLong(index);
  int overflow = value == -1 && PyErr_Occurred();
  unsigned long long uvalue = 0;
  if (overflow) {
    PyErr_Clear();
    uvalue = PyLong_AsUnsignedLongLong(index);
    if (PyErr_Occurred()) {
      Py_DECREF(index);
      return -1;
    }
  }
  Py_DECREF(index);
  if (!overflow && value == -1) {
    *no_sync = 1;
    return 0;
  }
  if (!overflow && value < -1) {
    PyErr_Format(PyExc_ValueError, "stream %lld is not a valid stream (must be >= -1)", value);
    return -1;
  }
  if (device_type == ARROW_DEVICE_CPU) {
    PyErr_SetString(PyExc_ValueError, "the array is on the CPU: stream must be None (or -1)");
    return -1;
  }
  if (is_cuda && !overflow && value == 0) {
    PyErr_SetString(PyExc_ValueError,
                    "stream 0 is ambiguous for CUDA and disallowed by the array API standard: "
                    "pass 1 (legacy default stream), 2 (per-thread default stream) or a stream "
                    "handle");
    return -1;
  }
  if (is_rocm && !overflow && (value == 1 || value == 2)) {
    PyErr_SetString(PyExc_ValueError,
                    "streams 1 and 2 are not supported for ROCm: pass 0 (default stream) or a "
                    "stream handle");
    return -1;
  }
  *stream = overflow ? (void*)(uintptr_t)uvalue : (void*)(uintptr_t)value;
  return 0;
}

/* __dlpack__'s keyword names, interned: Python passes interned names, so
 * matching is a pointer compare (with a character compare as the fallback). */
static PyObject* g_str_stream;
static PyObject* g_str_max_version;
static PyObject* g_str_dl_device;
static PyObject* g_str_copy;

static int is_keyword(PyObject* key, PyObject* name) {
  return key == name || PyUnicode_Compare(key, name) == 0;
}

/* __dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None).
 * The fast path (own device, no copy) is here; the rest goes to the Python
 * method _dlpack_copy, which copies through ferry and calls back. */
static PyObject* ArrayBase_dlpack(ArrayBase* self, PyObject* const* args, Py_ssize_t nargs,
                                  PyObject* kwnames) {
  if (nargs != 0) {
    PyErr_SetString(PyExc_TypeError, "__dlpack__ takes keyword arguments only");
    return NULL;
  }
  PyObject *stream_obj = NULL, *max_version = NULL, *dl_device = NULL, *copy = NULL;
  Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  for (Py_ssize_t i = 0; i < nkw; i++) {
    PyObject* key = PyTuple_GET_ITEM(kwnames, i);
    PyObject* value = args[nargs + i];
    if (is_keyword(key, g_str_max_version)) max_version = value;
    else if (is_keyword(key, g_str_stream)) stream_obj = value;
    else if (is_keyword(key, g_str_dl_device)) dl_device = value;
    else if (is_keyword(key, g_str_copy)) copy = value;
    else {
      PyErr_Format(PyExc_TypeError, "__dlpack__() got an unexpected keyword argument %R", key);
      return NULL;
    }
  }
  if (array_open(self) != 0) return NULL;
  Holder* h = self->holder;
  int32_t device_type = h->array.device_type;
  int64_t own_id = device_type == ARROW_DEVICE_CPU ? 0 : h->array.device_id;
  int want_copy = copy != NULL && copy != Py_None && PyObject_IsTrue(copy) == 1;
  int other_device = 0;
  if (dl_device != NULL && dl_device != Py_None) {
    long type = -1, id = -1;
    if (!PyTuple_Check(dl_device) || PyTuple_GET_SIZE(dl_device) != 2) {
      PyErr_SetString(PyExc_TypeError, "dl_device must be a (device_type, device_id) tuple");
      return NULL;
    }
    type = PyLong_AsLong(PyTuple_GET_ITEM(dl_device, 0));
    id = PyLong_AsLong(PyTuple_GET_ITEM(dl_device, 1));
    if (PyErr_Occurred()) return NULL;
    other_device = type != device_type || id != own_id;
  }
  if (want_copy || other_device) {
    /* The copy path is not hot: the Python method handles it. */
    PyObject* method = PyObject_GetAttrString((PyObject*)self, "_dlpack_copy");
    if (method == NULL) return NULL;
    PyObject* result = PyObject_CallFunctionObjArgs(
        method, stream_obj ? stream_obj : Py_None, max_version ? max_version : Py_None,
        dl_device ? dl_device : Py_None, copy ? copy : Py_None, NULL);
    Py_DECREF(method);
    return result;
  }
  int versioned = 0;
  if (max_version != NULL && max_version != Py_None) {
    if (!PyTuple_Check(max_version) || PyTuple_GET_SIZE(max_version) != 2) {
      PyErr_SetString(PyExc_TypeError, "max_version must be a (major, minor) tuple or None");
      return NULL;
    }
    long major = PyLong_AsLong(PyTuple_GET_ITEM(max_version, 0));
    if (major == -1 && PyErr_Occurred()) return NULL;
    versioned = major >= 1;
  }
  void* consumer_stream;
  int no_sync;
  if (dlpack_stream(device_type, stream_obj, &consumer_stream, &no_sync) != 0) return NULL;
  /* The stream's __index__ may have run Python, and another thread closed the array. */
  if (array_open(self) != 0) return NULL;
  h = self->holder;

  /* The tensor borrows the holder's array and holds one reference to the
   * holder, which its deleter drops (through the core's hook). `view` is a
   * read-only copy of the struct, so that no_sync can drop the event. */
  struct ArrowDeviceArray view = h->array;
  if (no_sync) view.sync_event = NULL; /* the consumer asked for no synchronization */
  DLManagedTensorVersioned* tensor = NULL;
  struct FerryError error;
  error.message[0] = '\0';
  int code;
  holder_incref(h);
  if (view.sync_event == NULL) {
    code = fp_ferry_device_array_to_dlpack_shared(&h->schema->schema, &view, consumer_stream,
                                                  holder_release_hook, h, &tensor, &error);
  } else {
    /* Waiting may block the host: let other threads run. */
    Py_BEGIN_ALLOW_THREADS code = fp_ferry_device_array_to_dlpack_shared(
        &h->schema->schema, &view, consumer_stream, holder_release_hook, h, &tensor, &error);
    Py_END_ALLOW_THREADS
  }
  if (code != FERRY_OK) {
    holder_decref(h);
    return raise_error(code, &error, 1);
  }
  if (versioned) {
    PyObject* capsule = own_dlpack_capsule(tensor, kDltensorVersioned, dltensor_versioned_destructor);
    if (capsule == NULL) tensor->deleter(tensor);
    return capsule;
  }
  LegacyExport* legacy = (LegacyExport*)malloc(sizeof(LegacyExport));
  if (legacy == NULL) {
    tensor->deleter(tensor);
    return PyErr_NoMemory();
  }
  legacy->legacy.dl_tensor = tensor->dl_tensor;
  legacy->legacy.manager_ctx = legacy;
  legacy->legacy.deleter = legacy_export_deleter;
  legacy->inner = tensor;
  PyObject* capsule = own_dlpack_capsule(&legacy->legacy, kDltensor, dltensor_destructor);
  if (capsule == NULL) legacy_export_deleter(&legacy->legacy);
  return capsule;
}

static PyObject* ArrayBase_dlpack_device(ArrayBase* self, PyObject* unused) {
  if (array_open(self) != 0) return NULL;
  struct ArrowDeviceArray* a = &self->holder->array;
  long long id = a->device_type == ARROW_DEVICE_CPU ? 0 : a->device_id;
  return Py_BuildValue("(iL)", (int)a->device_type, id);
}

static PyMethodDef ArrayBase_methods[] = {
    {"__arrow_c_device_array__", (PyCFunction)(void (*)(void))ArrayBase_arrow_c_device_array,
     METH_VARARGS | METH_KEYWORDS,
     "__arrow_c_device_array__(requested_schema=None, **kwargs)\n--\n\n"
     "Exports the array as (\"arrow_schema\", \"arrow_device_array\") PyCapsules that share "
     "its buffers; the array stays usable. The sync event travels with it. A "
     "requested_schema is honoured where the data answers it unchanged (the same types, "
     "int64 as a timestamp, UTF-8 as binary...); otherwise NotImplementedError names the "
     "difference (ferry does not cast)."},
    {"__arrow_c_array__", (PyCFunction)(void (*)(void))ArrayBase_arrow_c_array,
     METH_VARARGS | METH_KEYWORDS,
     "__arrow_c_array__(requested_schema=None)\n--\n\n"
     "Exports CPU data as (\"arrow_schema\", \"arrow_array\") PyCapsules; device data is "
     "refused with BufferError. requested_schema: as for __arrow_c_device_array__."},
    {"__dlpack__", (PyCFunction)(void (*)(void))ArrayBase_dlpack, METH_FASTCALL | METH_KEYWORDS,
     "__dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None)\n--\n\n"
     "Exports a fixed-width array without nulls as a DLPack capsule (see the array API "
     "standard); the array stays usable."},
    {"__dlpack_device__", (PyCFunction)ArrayBase_dlpack_device, METH_NOARGS,
     "Returns (DLPack device type, device id)."},
    {"close", (PyCFunction)ArrayBase_close, METH_NOARGS,
     "close()\n--\n\n"
     "Drops this object's reference now (the data is released once no export or buffer view "
     "shares it any more). Idempotent."},
    {"_close", (PyCFunction)ArrayBase_close, METH_NOARGS, "Drops this object's reference."},
    {"__enter__", (PyCFunction)ArrayBase_enter, METH_NOARGS, "Returns the array itself."},
    {"__exit__", (PyCFunction)ArrayBase_exit, METH_VARARGS, "Closes the array."},
    {"export_to_c", (PyCFunction)(void (*)(void))ArrayBase_export_to_c,
     METH_FASTCALL | METH_KEYWORDS,
     "export_to_c(array_address, schema_address=None, *, move=False)\n--\n\n"
     "Fills a consumer's released ArrowDeviceArray and ArrowSchema (None: skip it), the "
     "array first as in pyarrow's _export_to_c. With "
     "move, and when nothing else shares the data, the original structs are handed over and "
     "this array is closed; otherwise the export shares the buffers and the array stays "
     "usable."},
    {"buffer", (PyCFunction)ArrayBase_buffer, METH_O,
     "buffer(i)\n--\n\n"
     "A read-only, zero-copy memoryview of buffer i, or None for a NULL buffer; the view keeps "
     "the data alive. Host memory only: for device memory use to_host() first (the sim "
     "device's memory is host memory, but read it only after wait())."},
    {"_buffer_of", (PyCFunction)ArrayBase_buffer_of, METH_VARARGS,
     "_buffer_of(schema_address, array_address, i): buffer i of a node of this array."},
    {"_export_into", (PyCFunction)ArrayBase_export_into, METH_VARARGS,
     "_export_into(schema_address, array_address, move): fills consumer structs."},
    {"_schema_object", (PyCFunction)ArrayBase_schema_object, METH_O,
     "A new Schema (of the given class) sharing this array's schema."},
    {"_pin", (PyCFunction)ArrayBase_pin, METH_NOARGS,
     "A reference that keeps the array's structs and data alive while a reader uses their "
     "addresses, whatever close() does meanwhile; ClosedError once closed."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef ArrayBase_getset[] = {
    {"closed", (getter)ArrayBase_closed, NULL, "True once closed or moved out.", NULL},
    {"_schema_address", (getter)ArrayBase_schema_address, NULL, "Address of the ArrowSchema.", NULL},
    {"_array_address", (getter)ArrayBase_array_address, NULL,
     "Address of the ArrowDeviceArray.", NULL},
    {"_shared", (getter)ArrayBase_shared, NULL, "Number of live exports sharing the data.", NULL},
    {"_device_type", (getter)ArrayBase_device_type, NULL, "ArrowDeviceType value.", NULL},
    {"_device_id", (getter)ArrayBase_device_id, NULL, "Arrow device id.", NULL},
    {"length", (getter)ArrayBase_length, NULL, "Number of elements.", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PySequenceMethods ArrayBase_as_sequence = {.sq_length = (lenfunc)ArrayBase_len};

static PyTypeObject ArrayBaseType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ferry._native.ArrayBase",
    .tp_basicsize = sizeof(ArrayBase),
    .tp_dealloc = (destructor)ArrayBase_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "The C half of ferry.DeviceArray: a reference to an owned ArrowDeviceArray.",
    .tp_methods = ArrayBase_methods,
    .tp_getset = ArrayBase_getset,
    .tp_as_sequence = &ArrayBase_as_sequence,
    .tp_new = NULL,
};

static PyTypeObject* check_array_class(PyObject* cls) {
  if (!PyType_Check(cls) || !PyType_IsSubtype((PyTypeObject*)cls, &ArrayBaseType)) {
    PyErr_SetString(PyExc_TypeError, "expected an ArrayBase subclass");
    return NULL;
  }
  return (PyTypeObject*)cls;
}

/* Wraps a filled holder (its reference passes to the object). */
static PyObject* array_object(PyTypeObject* cls, Holder* h) {
  ArrayBase* obj = (ArrayBase*)cls->tp_alloc(cls, 0);
  if (obj == NULL) {
    holder_decref(h);
    return NULL;
  }
  obj->holder = h;
  obj->leak_token = 0;
  array_leak_track(obj);
  return (PyObject*)obj;
}

/* Checks the structure of an import. The reserved words carry nothing (the
 * specification asks producers to zero them, but pyarrow 26 leaves them
 * uninitialised), so an importer that owns the moved struct zeroes them
 * first rather than refusing the data or passing garbage on. */
/* The `validate` argument of the imports: True or "default" (the
 * default), "full", False or "none". 0 with *level set (a FERRY_VALIDATE_*
 * level), or -1 with TypeError/ValueError set. */
static int validate_level(PyObject* value, int* level) {
  if (PyUnicode_Check(value)) {
    const char* text = PyUnicode_AsUTF8(value);
    if (text == NULL) return -1;
    if (strcmp(text, "default") == 0) *level = FERRY_VALIDATE_DEFAULT;
    else if (strcmp(text, "full") == 0) *level = FERRY_VALIDATE_FULL;
    else if (strcmp(text, "none") == 0) *level = FERRY_VALIDATE_NONE;
    else {
      PyErr_Format(PyExc_ValueError,
                   "validate must be True, False, \"default\", \"full\" or \"none\", not %R",
                   value);
      return -1;
    }
    return 0;
  }
  int truth = PyObject_IsTrue(value);
  if (truth < 0) return -1;
  *level = truth ? FERRY_VALIDATE_DEFAULT : FERRY_VALIDATE_NONE;
  return 0;
}

static int validate_holder_at(Holder* h, int level);

static int validate_holder(Holder* h) { return validate_holder_at(h, FERRY_VALIDATE_DEFAULT); }

static int validate_holder_at(Holder* h, int level) {
  memset(h->array.reserved, 0, sizeof(h->array.reserved));
  struct FerryError error;
  error.message[0] = '\0';
  int code = fp_ferry_validate_device_array(&h->schema->schema, &h->array, level, NULL, NULL,
                                            &error);
  if (code != FERRY_OK) {
    raise_error(code, &error, 0);
    return -1;
  }
  return 0;
}

/* validate_holder for an array whose schema holder many arrays share (a
 * stream's batches, from_buffers' arrays of one Schema): the same findings,
 * against the holder's prepared schema, made on first use. Under the GIL. */
static int validate_shared_holder_code(Holder* h, int level, struct FerryError* error) {
  SchemaHolder* s = h->schema;
  error->message[0] = '\0';
  memset(h->array.reserved, 0, sizeof(h->array.reserved));
  if (s->prepared == NULL &&
      fp_ferry_prepared_schema_create(&s->schema, NULL, NULL, &s->prepared, error) != FERRY_OK) {
    s->prepared = NULL;
    /* reports the schema's finding as an import does */
    error->message[0] = '\0';
    return fp_ferry_validate_device_array(&s->schema, &h->array, level, NULL, NULL, error);
  }
  return fp_ferry_validate_prepared(s->prepared, &h->array, level, NULL, NULL, error);
}

static int validate_shared_holder(Holder* h) {
  struct FerryError error;
  int code = validate_shared_holder_code(h, FERRY_VALIDATE_DEFAULT, &error);
  if (code != FERRY_OK) {
    raise_error(code, &error, 0);
    return -1;
  }
  return 0;
}

/* ---- imports ---------------------------------------------------------------------- */


/* Moves an "arrow_schema" and an "arrow_device_array" (or CPU
 * "arrow_array") capsule's structs into a new instance of `cls`; the
 * capsules are left consumed (released). */
static PyObject* import_capsule_pair(PyTypeObject* cls, PyObject* schema_capsule,
                                     PyObject* array_capsule, int level) {
  struct ArrowSchema* schema =
      (struct ArrowSchema*)PyCapsule_GetPointer(schema_capsule, kSchemaCapsule);
  if (schema == NULL) {
    PyErr_Clear();
    PyErr_SetString(PyExc_TypeError, "the first capsule is not an \"arrow_schema\" PyCapsule");
    return NULL;
  }
  struct ArrowDeviceArray* device_array = NULL;
  struct ArrowArray* cpu_array = NULL;
  if (PyCapsule_IsValid(array_capsule, kDeviceArrayCapsule)) {
    device_array = (struct ArrowDeviceArray*)PyCapsule_GetPointer(array_capsule, kDeviceArrayCapsule);
  } else if (PyCapsule_IsValid(array_capsule, kArrayCapsule)) {
    cpu_array = (struct ArrowArray*)PyCapsule_GetPointer(array_capsule, kArrayCapsule);
  } else {
    PyErr_SetString(PyExc_TypeError,
                    "the second capsule is neither an \"arrow_device_array\" nor an "
                    "\"arrow_array\" PyCapsule");
    return NULL;
  }
  struct ArrowArray* inner = device_array ? &device_array->array : cpu_array;
  if (schema->release == NULL || inner->release == NULL) {
    PyErr_SetString(PyExc_ValueError, "the capsules were already consumed (released structs)");
    return NULL;
  }
  Holder* h = holder_new(NULL);
  SchemaHolder* s = h ? schema_holder_new() : NULL;
  if (s == NULL) {
    holder_decref(h);
    return PyErr_NoMemory();
  }
  h->schema = s; /* takes the new holder's reference */
  /* Move: bitwise copy, then mark the sources released. */
  s->schema = *schema;
  schema->release = NULL;
  if (device_array != NULL) {
    h->array = *device_array;
    device_array->array.release = NULL;
  } else {
    h->array.array = *cpu_array;
    h->array.device_type = ARROW_DEVICE_CPU;
    h->array.device_id = -1;
    h->array.sync_event = NULL;
    cpu_array->release = NULL;
  }
  memset(h->array.reserved, 0, sizeof(h->array.reserved));
  if (level != FERRY_VALIDATE_NONE && validate_holder_at(h, level) != 0) {
    holder_decref(h);
    return NULL;
  }
  return array_object(cls, h);
}

/* import_capsules(cls, schema_capsule, array_capsule, validate=True): see
 * import_capsule_pair (ferry.device_array's path). */
static PyObject* import_capsules(PyObject* module, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 3 && nargs != 4) {
    PyErr_Format(PyExc_TypeError, "import_capsules() takes 3 or 4 arguments (%zd given)", nargs);
    return NULL;
  }
  int level = FERRY_VALIDATE_DEFAULT;
  if (nargs == 4 && validate_level(args[3], &level) != 0) return NULL;
  if (need_library() != 0 || check_array_class(args[0]) == NULL) return NULL;
  return import_capsule_pair((PyTypeObject*)args[0], args[1], args[2], level);
}

/* from_capsules(schema_capsule, array_capsule, *, validate=True): the
 * same for ferry.DeviceArray, called directly (DeviceArray.from_capsules). */
static PyObject* g_array_class; /* ferry.DeviceArray (bind_classes) */
static PyObject* g_str_validate;

/* Parses the arguments of `function(first, second, *, validate=True)` (a
 * vectorcall) into *level (see validate_level); 0, or -1 with an exception
 * set. Also checks that the module is bound (libferry and ferry.DeviceArray). */
static int two_args_and_validate(const char* function, const char* names, PyObject* const* args,
                                 Py_ssize_t nargs, PyObject* kwnames, int* level) {
  if (nargs != 2) {
    PyErr_Format(PyExc_TypeError, "%s() takes 2 positional arguments (%s), %zd given", function,
                 names, nargs);
    return -1;
  }
  *level = FERRY_VALIDATE_DEFAULT;
  for (Py_ssize_t i = 0; kwnames != NULL && i < PyTuple_GET_SIZE(kwnames); i++) {
    PyObject* key = PyTuple_GET_ITEM(kwnames, i);
    if (key != g_str_validate && PyUnicode_Compare(key, g_str_validate) != 0) {
      PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument %R", function, key);
      return -1;
    }
    if (validate_level(args[nargs + i], level) != 0) return -1;
  }
  if (need_library() != 0) return -1;
  if (g_array_class == NULL) {
    PyErr_SetString(PyExc_RuntimeError, "ferry._native.bind_classes() was not called");
    return -1;
  }
  return 0;
}

static PyObject* from_capsules(PyObject* module, PyObject* const* args, Py_ssize_t nargs,
                               PyObject* kwnames) {
  int level;
  if (two_args_and_validate("from_capsules", "schema_capsule, array_capsule", args, nargs,
                            kwnames, &level) != 0)
    return NULL;
  return import_capsule_pair((PyTypeObject*)g_array_class, args[0], args[1], level);
}

/* Moves the structs at two addresses (an ArrowSchema, an ArrowDeviceArray)
 * into a new instance of `cls`. */
static PyObject* import_addresses(PyTypeObject* cls, PyObject* schema_addr, PyObject* array_addr,
                                  int level) {
  struct ArrowSchema* schema = (struct ArrowSchema*)address_arg(schema_addr);
  if (schema == NULL && PyErr_Occurred()) return NULL;
  struct ArrowDeviceArray* array = (struct ArrowDeviceArray*)address_arg(array_addr);
  if (array == NULL && PyErr_Occurred()) return NULL;
  if (schema == NULL || array == NULL || schema->release == NULL || array->array.release == NULL) {
    PyErr_SetString(PyExc_ValueError,
                    "import needs a live ArrowSchema and a live ArrowDeviceArray (an address is 0 "
                    "or a struct is released)");
    return NULL;
  }
  SchemaHolder* s = schema_holder_new();
  Holder* h = s ? holder_new(s) : NULL;
  schema_holder_decref(s);
  if (h == NULL) return PyErr_NoMemory();
  s->schema = *schema;
  schema->release = NULL;
  h->array = *array;
  array->array.release = NULL;
  memset(h->array.reserved, 0, sizeof(h->array.reserved));
  if (level != FERRY_VALIDATE_NONE && validate_holder_at(h, level) != 0) {
    holder_decref(h);
    return NULL;
  }
  return array_object(cls, h);
}

/* import_raw(cls, schema_address, array_address, validate): see
 * import_addresses. */
static PyObject* import_raw(PyObject* module, PyObject* args) {
  PyObject *cls, *schema_addr, *array_addr;
  int validate = 1;
  if (!PyArg_ParseTuple(args, "OOO|p", &cls, &schema_addr, &array_addr, &validate)) return NULL;
  if (need_library() != 0 || check_array_class(cls) == NULL) return NULL;
  return import_addresses((PyTypeObject*)cls, schema_addr, array_addr,
                          validate ? FERRY_VALIDATE_DEFAULT : FERRY_VALIDATE_NONE);
}

/* from_c(array_address, schema_address, *, validate=True): the same for
 * ferry.DeviceArray, called directly (DeviceArray.from_c). The array comes
 * first, as in pyarrow's Array._import_from_c(array_ptr, schema_ptr);
 * both addresses may be passed by keyword too. */

static PyObject* from_c(PyObject* module, PyObject* const* args, Py_ssize_t nargs,
                        PyObject* kwnames) {
  PyObject* given[2] = {NULL, NULL}; /* array, schema */
  int level = FERRY_VALIDATE_DEFAULT;
  if (nargs > 2) {
    PyErr_Format(PyExc_TypeError,
                 "from_c() takes 2 positional arguments (array_address, schema_address), "
                 "%zd given",
                 nargs);
    return NULL;
  }
  for (Py_ssize_t i = 0; i < nargs; i++) given[i] = args[i];
  for (Py_ssize_t i = 0; kwnames != NULL && i < PyTuple_GET_SIZE(kwnames); i++) {
    PyObject* key = PyTuple_GET_ITEM(kwnames, i);
    PyObject* value = args[nargs + i];
    int slot = keyword_is(key, g_str_array_address)    ? 0
               : keyword_is(key, g_str_schema_address) ? 1
                                                       : -1;
    if (slot >= 0) {
      if (given[slot] != NULL) {
        PyErr_Format(PyExc_TypeError, "from_c() got multiple values for argument %R", key);
        return NULL;
      }
      given[slot] = value;
    } else if (keyword_is(key, g_str_validate)) {
      if (validate_level(value, &level) != 0) return NULL;
    } else {
      PyErr_Format(PyExc_TypeError, "from_c() got an unexpected keyword argument %R", key);
      return NULL;
    }
  }
  if (given[0] == NULL || given[1] == NULL) {
    PyErr_SetString(PyExc_TypeError,
                    "from_c() needs array_address and schema_address (the array first)");
    return NULL;
  }
  if (need_library() != 0) return NULL;
  if (g_array_class == NULL) {
    PyErr_SetString(PyExc_RuntimeError, "ferry._native.bind_classes() was not called");
    return NULL;
  }
  return import_addresses((PyTypeObject*)g_array_class, given[1], given[0], level);
}

/* import_batch(cls, schema_object, array_address, validate): a stream batch:
 * moves the ArrowDeviceArray at the address in and shares the stream's
 * schema (a SchemaBase) instead of copying it. */
static PyObject* import_batch(PyObject* module, PyObject* args) {
  PyObject *cls, *schema_obj, *array_addr;
  int validate = 1;
  if (!PyArg_ParseTuple(args, "OO!O|p", &cls, &SchemaBaseType, &schema_obj, &array_addr, &validate))
    return NULL;
  if (need_library() != 0 || check_array_class(cls) == NULL) return NULL;
  SchemaBase* schema = (SchemaBase*)schema_obj;
  if (schema_open(schema) != 0) return NULL;
  struct ArrowDeviceArray* array = (struct ArrowDeviceArray*)PyLong_AsVoidPtr(array_addr);
  if (PyErr_Occurred()) return NULL;
  if (array == NULL || array->array.release == NULL) {
    PyErr_SetString(PyExc_ValueError, "the batch is NULL or released");
    return NULL;
  }
  Holder* h = holder_new(schema->holder);
  if (h == NULL) return PyErr_NoMemory();
  h->array = *array;
  array->array.release = NULL;
  memset(h->array.reserved, 0, sizeof(h->array.reserved));
  if (validate && validate_holder(h) != 0) {
    holder_decref(h);
    return NULL;
  }
  return array_object((PyTypeObject*)cls, h);
}

/* ---- DeviceArray.from_buffers: host buffers on the CPU -------------------------------- */

/* The buffer exports an array made from host bytes-like objects holds: the
 * release hook gives them back (taking the GIL from whatever thread the
 * consumer releases on). */
typedef struct {
  Py_ssize_t n_views;
  Py_buffer views[];
} HostViews;

static void host_views_release_gil(HostViews* keep) {
  for (Py_ssize_t i = 0; i < keep->n_views; i++) PyBuffer_Release(&keep->views[i]);
  free(keep);
}

static void host_views_release(void* user_data) {
  atomic_fetch_sub(&g_live_refs, 1);
  if (!Py_IsInitialized() || FP_FINALIZING()) return; /* the process is ending */
  PyGILState_STATE gil = PyGILState_Ensure();
  host_views_release_gil((HostViews*)user_data);
  PyGILState_Release(gil);
}

#define FP_MAX_HOST_BUFFERS 16
static PyObject* g_from_buffers_slow; /* ferry._array._from_buffers: every other case */
static PyObject* g_buffer_class;      /* ferry.Buffer: moved in, so the general path */
static PyObject* g_str_null_count;
static PyObject* g_str_offset;
static PyObject* g_str_children;
static PyObject* g_str_dictionary;
static PyObject* g_str_device;
static PyObject* g_str_cpu;

static int keyword_is(PyObject* key, PyObject* name) {
  return key == name || PyUnicode_Compare(key, name) == 0;
}

/* 1 when the call is the common case that from_buffers_host handles: a
 * Schema, int length, offsets and counts, a list or tuple of None and
 * bytes-like objects, no children, dictionary or stream, device "cpu". */
static int host_case(PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames, long long* ints) {
  if (nargs != 3 || !PyObject_TypeCheck(args[0], &SchemaBaseType) || !PyLong_Check(args[1]))
    return 0;
  PyObject* buffers = args[2];
  if (!PyList_Check(buffers) && !PyTuple_Check(buffers)) return 0;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(buffers);
  if (n > FP_MAX_HOST_BUFFERS) return 0;
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject* b = PySequence_Fast_GET_ITEM(buffers, i);
    if (b != Py_None && (PyObject_TypeCheck(b, (PyTypeObject*)g_buffer_class) ||
                         !PyObject_CheckBuffer(b)))
      return 0;
  }
  ints[0] = ints[1] = 0; /* null_count, offset */
  for (Py_ssize_t i = 0; kwnames != NULL && i < PyTuple_GET_SIZE(kwnames); i++) {
    PyObject *key = PyTuple_GET_ITEM(kwnames, i), *value = args[nargs + i];
    int is_count = keyword_is(key, g_str_null_count);
    if (is_count || keyword_is(key, g_str_offset)) {
      if (!PyLong_Check(value)) return 0;
      ints[is_count ? 0 : 1] = PyLong_AsLongLong(value);
      if (PyErr_Occurred()) {
        PyErr_Clear(); /* the general path reports it */
        return 0;
      }
    } else if (keyword_is(key, g_str_children)) {
      if (!(PyTuple_Check(value) || PyList_Check(value)) || PySequence_Fast_GET_SIZE(value) != 0)
        return 0;
    } else if (keyword_is(key, g_str_dictionary) || keyword_is(key, g_str_stream)) {
      if (value != Py_None) return 0;
    } else if (keyword_is(key, g_str_device)) {
      if (!PyUnicode_Check(value) || PyUnicode_Compare(value, g_str_cpu) != 0) return 0;
    } else {
      return 0;
    }
  }
  return 1;
}

/* The array over host buffers: the core's array (ferry_array_init, its
 * release hook giving the buffer exports back) placed straight in a holder
 * that shares the Schema's holder, then validated (DEFAULT) like any import. */
static PyObject* from_buffers_host(SchemaBase* schema, long long length, PyObject* buffers,
                                   long long null_count, long long offset) {
  if (schema_open(schema) != 0) return NULL;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(buffers);
  const void* pointers[FP_MAX_HOST_BUFFERS];
  HostViews* keep = (HostViews*)malloc(sizeof(HostViews) + (size_t)n * sizeof(Py_buffer));
  if (keep == NULL) return PyErr_NoMemory();
  keep->n_views = 0;
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject* b = PySequence_Fast_GET_ITEM(buffers, i);
    pointers[i] = NULL;
    if (b == Py_None) continue;
    Py_buffer* view = &keep->views[keep->n_views];
    if (PyObject_GetBuffer(b, view, PyBUF_SIMPLE) != 0) {
      host_views_release_gil(keep);
      return NULL;
    }
    keep->n_views++;
    pointers[i] = view->buf;
  }
  Holder* h = holder_new(schema->holder);
  if (h == NULL) {
    host_views_release_gil(keep);
    return PyErr_NoMemory();
  }
  struct FerryError error;
  error.message[0] = '\0';
  int code = fp_ferry_array_init(&h->array.array, length, null_count, offset, n, pointers, 0,
                                 host_views_release, keep, &error);
  if (code != FERRY_OK) { /* the hook never runs when init fails */
    host_views_release_gil(keep);
    holder_decref(h);
    return raise_error(code, &error, 0);
  }
  atomic_fetch_add(&g_live_refs, 1); /* the hook's */
  code = fp_ferry_device_array_init(&h->array, &h->array.array, ARROW_DEVICE_CPU, -1, NULL, NULL,
                                    NULL, &error);
  if (code != FERRY_OK) {
    holder_decref(h); /* releases the array: the hook gives the exports back */
    return raise_error(code, &error, 0);
  }
  if (validate_shared_holder(h) != 0) {
    holder_decref(h);
    return NULL;
  }
  return array_object((PyTypeObject*)g_array_class, h);
}

/* from_buffers(schema, length, buffers, *, null_count=0, offset=0,
 * children=(), dictionary=None, device="cpu", stream=None): see
 * DeviceArray.from_buffers. The common case, host bytes on the CPU, is built
 * here; every other (device memory, ferry Buffers moved in, children,
 * dictionaries, streams, arguments to convert or refuse) goes to the
 * Python implementation with the same arguments. */
static PyObject* from_buffers(PyObject* module, PyObject* const* args, Py_ssize_t nargs,
                              PyObject* kwnames) {
  if (g_from_buffers_slow == NULL || g_array_class == NULL) {
    PyErr_SetString(PyExc_RuntimeError, "ferry._native.bind_from_buffers() was not called");
    return NULL;
  }
  long long ints[2];
  if (need_library() != 0) return NULL;
  if (!host_case(args, nargs, kwnames, ints))
    return PyObject_Vectorcall(g_from_buffers_slow, args, (size_t)nargs, kwnames);
  long long length = PyLong_AsLongLong(args[1]);
  if (length == -1 && PyErr_Occurred()) return NULL;
  return from_buffers_host((SchemaBase*)args[0], length, args[2], ints[0], ints[1]);
}

/* bind_from_buffers(slow, buffer_class): the general from_buffers and
 * ferry.Buffer. */
static PyObject* bind_from_buffers(PyObject* module, PyObject* args) {
  PyObject *slow, *buffer_class;
  if (!PyArg_ParseTuple(args, "OO!", &slow, &PyType_Type, &buffer_class)) return NULL;
  Py_INCREF(slow);
  Py_XSETREF(g_from_buffers_slow, slow);
  Py_INCREF(buffer_class);
  Py_XSETREF(g_buffer_class, buffer_class);
  Py_RETURN_NONE;
}

/* Validates a live schema and moves it into a new instance of `cls` (a
 * SchemaBase subclass); a refused schema is left where it was. */
static PyObject* schema_take(PyTypeObject* cls, struct ArrowSchema* schema, int validate) {
  struct FerryError error;
  error.message[0] = '\0';
  int code = validate ? fp_ferry_validate_schema(schema, NULL, NULL, &error) : FERRY_OK;
  if (code != FERRY_OK) return raise_error(code, &error, 0);
  SchemaHolder* s = schema_holder_new();
  if (s == NULL) return PyErr_NoMemory();
  s->schema = *schema;
  schema->release = NULL;
  PyObject* obj = schema_object(cls, s);
  schema_holder_decref(s);
  return obj;
}

/* import_schema(cls, capsule_or_address): moves an "arrow_schema" capsule's
 * struct (or the ArrowSchema at an integer address) into a new object. */
static PyObject* import_schema(PyObject* module, PyObject* args) {
  PyObject *cls, *source;
  if (!PyArg_ParseTuple(args, "OO", &cls, &source)) return NULL;
  if (need_library() != 0) return NULL;
  if (!PyType_Check(cls) || !PyType_IsSubtype((PyTypeObject*)cls, &SchemaBaseType)) {
    PyErr_SetString(PyExc_TypeError, "expected a SchemaBase subclass");
    return NULL;
  }
  struct ArrowSchema* schema;
  if (PyCapsule_CheckExact(source)) {
    schema = (struct ArrowSchema*)PyCapsule_GetPointer(source, kSchemaCapsule);
    if (schema == NULL) return NULL;
  } else {
    schema = (struct ArrowSchema*)PyLong_AsVoidPtr(source);
    if (PyErr_Occurred()) return NULL;
  }
  if (schema == NULL || schema->release == NULL) {
    PyErr_SetString(PyExc_ValueError, "the schema is NULL or already consumed");
    return NULL;
  }
  return schema_take((PyTypeObject*)cls, schema, 1);
}

/* ---- DLPack import ------------------------------------------------------------------ */

/* A legacy DLManagedTensor seen through the versioned struct the core reads. */
typedef struct {
  DLManagedTensorVersioned versioned;
  DLManagedTensor* legacy;
} LegacyImport;

static void legacy_import_deleter(DLManagedTensorVersioned* self) {
  LegacyImport* wrapper = (LegacyImport*)self->manager_ctx;
  if (wrapper->legacy->deleter != NULL) wrapper->legacy->deleter(wrapper->legacy);
  free(wrapper);
}

/* Attaches a new event, recorded on `stream` of the array's device, as the
 * array's sync_event; the event is destroyed after the array's release. */
typedef struct {
  struct FerryDevice* device;
  void* event;
} OwnedEvent;

static void owned_event_release(void* user_data) {
  OwnedEvent* owned = (OwnedEvent*)user_data;
  fp_ferry_device_event_destroy(owned->device, owned->event, NULL);
  free(owned);
}

static int attach_event(Holder* h, void* stream, struct FerryError* error) {
  struct FerryDevice* device = NULL;
  int code = fp_ferry_device_resolve(h->array.device_type, h->array.device_id, &device, error);
  if (code != FERRY_OK) return code;
  OwnedEvent* owned = (OwnedEvent*)calloc(1, sizeof(OwnedEvent));
  if (owned == NULL) {
    snprintf(error->message, sizeof(error->message), "out of memory (event)");
    return ENOMEM;
  }
  owned->device = device;
  code = fp_ferry_device_event_create(device, &owned->event, error);
  if (code == FERRY_OK) code = fp_ferry_device_event_record(device, owned->event, stream, error);
  if (code != FERRY_OK) {
    if (owned->event != NULL) fp_ferry_device_event_destroy(device, owned->event, NULL);
    free(owned);
    return code;
  }
  /* Re-wrap the same ArrowArray with the event (it had none). */
  struct ArrowDeviceArray rewrapped;
  memset(&rewrapped, 0, sizeof(rewrapped));
  struct ArrowArray inner = h->array.array;
  code = fp_ferry_device_array_init(&rewrapped, &inner, h->array.device_type,
                                    h->array.device_id, owned->event, owned_event_release, owned,
                                    error);
  if (code != FERRY_OK) {
    owned_event_release(owned);
    return code;
  }
  h->array = rewrapped;
  return FERRY_OK;
}

/* The schemas of DLPack imports, shared: the core's imported schema is a
 * bare format (no name, flags, metadata or children; see core/src/dlpack.c),
 * so two imports of the same format have equal schemas, and one holder per
 * format (indexed by its one character) serves them all. Set under the GIL;
 * they live as long as the process (immortal: references are not counted). */
static SchemaHolder* g_dlpack_schemas[128];

static int is_bare_one_char_format(const struct ArrowSchema* s) {
  return s->format != NULL && (unsigned char)s->format[0] < 128 && s->format[0] != '\0' &&
         s->format[1] == '\0' && s->name == NULL && s->metadata == NULL && s->flags == 0 &&
         s->n_children == 0 && s->dictionary == NULL;
}

/* A reference to a holder of the imported `schema`, which is moved in or
 * released; NULL when out of memory (then `schema` is released too). */
static SchemaHolder* imported_schema_holder(struct ArrowSchema* schema) {
  SchemaHolder** slot =
      is_bare_one_char_format(schema) ? &g_dlpack_schemas[(unsigned char)schema->format[0]] : NULL;
  if (slot != NULL && *slot != NULL) {
    fp_ferry_schema_release(schema);
    schema_holder_incref(*slot);
    return *slot;
  }
  SchemaHolder* s = schema_holder_new();
  if (s == NULL) {
    fp_ferry_schema_release(schema);
    return NULL;
  }
  s->schema = *schema;
  schema->release = NULL;
  if (slot != NULL) {
    s->immortal = 1;
    *slot = s;
  }
  return s;
}

/* Imports `tensor` through the core into a new holder (with the shared
 * schema of its format). NULL with an exception set on failure: when the
 * core refused the tensor, or memory ran out before it was taken, the
 * caller still owns the tensor and *taken is 0; with *taken 1 the tensor
 * was taken and already handed back to its deleter (out of memory after the
 * import), so the caller must not delete it again. `buffer` selects the
 * BufferError flavour of the core's refusal (DLPack's). */
static Holder* holder_from_dlpack(DLManagedTensorVersioned* tensor, int buffer, int* taken) {
  *taken = 0;
  Holder* h = holder_new(NULL);
  if (h == NULL) {
    PyErr_NoMemory();
    return NULL;
  }
  struct ArrowSchema schema;
  schema.release = NULL; /* filled by the import */
  struct FerryError error;
  error.message[0] = '\0';
  int code = fp_ferry_device_array_from_dlpack(tensor, &schema, &h->array, &error);
  if (code != FERRY_OK) {
    holder_decref(h);
    raise_error(code, &error, buffer);
    return NULL;
  }
  *taken = 1;
  h->schema = imported_schema_holder(&schema);
  if (h->schema == NULL) {
    holder_decref(h); /* releases the array: the tensor's deleter runs */
    PyErr_NoMemory();
    return NULL;
  }
  return h;
}

/* Records the producer's stream as the holder's event (see attach_event);
 * 0, or -1 with an exception set. */
static int attach_event_stream(Holder* h, PyObject* event_stream) {
  if (event_stream == Py_None) return 0;
  void* stream = PyLong_AsVoidPtr(event_stream);
  if (PyErr_Occurred()) return -1;
  struct FerryError error;
  error.message[0] = '\0';
  int code = attach_event(h, stream, &error);
  if (code != FERRY_OK) {
    raise_error(code, &error, 0);
    return -1;
  }
  return 0;
}

/* An unused DLPack capsule's tensor: a DLManagedTensorVersioned, or with
 * `legacy` a DLManagedTensor; tensor NULL when the object is no such
 * capsule (no exception set). */
typedef struct {
  void* tensor;
  int legacy;
} DlpackCapsule;

static DlpackCapsule unused_dlpack_capsule(PyObject* capsule) {
  DlpackCapsule c = {NULL, 0};
  if (!PyCapsule_CheckExact(capsule)) return c;
  /* The name is read and compared once: PyCapsule_IsValid would run strcmp
   * for every name tried (a producer's name is its own string). */
  const char* name = PyCapsule_GetName(capsule);
  if (name == NULL) {
    PyErr_Clear();
    return c;
  }
  /* PyCapsule_GetPointer compares the name with strcmp (and raises on a
   * mismatch): "dltensor_" picks the name to ask for, so a DLPack capsule's
   * name is compared once (the loop stops at a shorter name's end). */
  size_t k = 0;
  while (k < 9 && name[k] == kDltensorVersioned[k]) k++;
  c.legacy = k < 9;
  c.tensor = PyCapsule_GetPointer(capsule, c.legacy ? kDltensor : kDltensorVersioned);
  if (c.tensor == NULL) PyErr_Clear();
  return c;
}

static int dlpack_capsule_device_type(DlpackCapsule c) {
  return c.legacy ? (int)((DLManagedTensor*)c.tensor)->dl_tensor.device.device_type
                  : (int)((DLManagedTensorVersioned*)c.tensor)->dl_tensor.device.device_type;
}

/* Imports the tensor of `capsule` (found by unused_dlpack_capsule) into a
 * new instance of `cls`, consuming the capsule (renamed "used_...") once the
 * core took the tensor; see import_dlpack for event_stream. */
static PyObject* import_unused_capsule(PyTypeObject* cls, PyObject* capsule, DlpackCapsule c,
                                       PyObject* event_stream) {
  DLManagedTensorVersioned* tensor = NULL;
  LegacyImport* legacy = NULL;
  const char* used = NULL;
  if (c.tensor != NULL && !c.legacy) {
    tensor = (DLManagedTensorVersioned*)c.tensor;
    used = kUsedDltensorVersioned;
  } else if (c.tensor != NULL) {
    DLManagedTensor* t = (DLManagedTensor*)c.tensor;
    legacy = (LegacyImport*)calloc(1, sizeof(LegacyImport));
    if (legacy == NULL) return PyErr_NoMemory();
    legacy->legacy = t;
    legacy->versioned.version.major = DLPACK_MAJOR_VERSION;
    legacy->versioned.version.minor = 0;
    legacy->versioned.manager_ctx = legacy;
    legacy->versioned.deleter = legacy_import_deleter;
    legacy->versioned.dl_tensor = t->dl_tensor;
    tensor = &legacy->versioned;
    used = kUsedDltensor;
  } else {
    PyErr_SetString(PyExc_TypeError,
                    "expected a \"dltensor_versioned\" or \"dltensor\" PyCapsule (an unused "
                    "DLPack capsule)");
    return NULL;
  }
  int taken;
  Holder* h = holder_from_dlpack(tensor, 1, &taken);
  /* Once taken, the holder (or, on failure, the deleter that already ran)
   * has the tensor: the capsule must not delete it. The capsule was checked
   * valid above, so renaming it cannot fail. */
  if (taken) (void)PyCapsule_SetName(capsule, used);
  if (h == NULL) {
    if (!taken) free(legacy); /* the capsule still owns the tensor */
    return NULL;
  }
  if (attach_event_stream(h, event_stream) != 0) {
    holder_decref(h);
    return NULL;
  }
  return array_object(cls, h);
}

static PyObject* import_dlpack_capsule(PyTypeObject* cls, PyObject* capsule,
                                       PyObject* event_stream) {
  return import_unused_capsule(cls, capsule, unused_dlpack_capsule(capsule), event_stream);
}

/* import_dlpack(cls, capsule, event_stream=None): a "dltensor_versioned" or
 * legacy "dltensor" capsule, consumed (renamed "used_...") on success. When
 * event_stream is an integer, an event recorded on that stream becomes the
 * array's sync_event (the producer ordered its work on that stream). */
static PyObject* import_dlpack(PyObject* module, PyObject* args) {
  PyObject *cls, *capsule, *event_stream = Py_None;
  if (!PyArg_ParseTuple(args, "OO|O", &cls, &capsule, &event_stream)) return NULL;
  if (need_library() != 0 || check_array_class(cls) == NULL) return NULL;
  return import_dlpack_capsule((PyTypeObject*)cls, capsule, event_stream);
}

/* ferry.from_dlpack(x, *, device=None, copy=None, stream=None): the
 * zero-copy CPU case runs here; everything else (devices, streams, copies,
 * legacy producers, capsules) calls the Python implementation bound by
 * bind_classes(). */
static PyObject* g_from_dlpack_slow;  /* ferry._interop._from_dlpack */
static PyObject* g_str_dlpack;        /* "__dlpack__" */
static PyObject* g_str_dlpack_device; /* "__dlpack_device__" */
static PyObject* g_kwnames_max_version;
static PyObject* g_max_version;

/* What from_dlpack learnt about producer types: on_cpu while every array
 * of the type it met was on the CPU, cleared for good once one was not. A
 * type known to be on the CPU is not asked __dlpack_device__ (for NumPy
 * that query is a fifth of a from_dlpack): its __dlpack__ is called as for
 * the CPU (stream None) and the tensor's own device is checked before
 * anything uses it. When the tensor is elsewhere after all, the capsule is
 * dropped unused (its deleter runs; stream None only made the producer
 * order its work before the default stream, which the standard lets any
 * consumer ask for), the type is marked and the full path runs with the
 * right stream. So a wrong guess costs one extra export, once per type,
 * never a wrong result. A few types at most: a table scanned in order,
 * holding a reference to each type (so an address is never another type's),
 * read and written under the GIL; types beyond the cap are asked each time. */
typedef struct {
  PyObject* type;
  int on_cpu;
} DlpackTypeHint;

#define FP_MAX_DLPACK_TYPES 32
static DlpackTypeHint g_dlpack_types[FP_MAX_DLPACK_TYPES];
static int g_n_dlpack_types;

static DlpackTypeHint* find_dlpack_type(PyObject* type) {
  for (int i = 0; i < g_n_dlpack_types; i++)
    if (g_dlpack_types[i].type == type) return &g_dlpack_types[i];
  return NULL;
}

static void remember_dlpack_type(PyObject* type, int on_cpu) {
  DlpackTypeHint* hint = find_dlpack_type(type);
  if (hint != NULL) {
    hint->on_cpu = hint->on_cpu && on_cpu;
  } else if (g_n_dlpack_types < FP_MAX_DLPACK_TYPES) {
    Py_INCREF(type);
    g_dlpack_types[g_n_dlpack_types].type = type;
    g_dlpack_types[g_n_dlpack_types].on_cpu = on_cpu;
    g_n_dlpack_types++;
  }
}

/* Whether from_dlpack may ask x for a CPU capsule directly: 1 yes, 0 no
 * (the full path decides), -1 with an exception. ferry's own arrays know
 * their device; other producers are asked __dlpack_device__ unless their
 * type is known to make CPU arrays. */
static int dlpack_cpu_expected(PyObject* x) {
  PyObject* type = (PyObject*)Py_TYPE(x);
  const DlpackTypeHint* hint = find_dlpack_type(type); /* first: no subtype walk for them */
  if (hint != NULL) return hint->on_cpu;
  if (PyObject_TypeCheck(x, &ArrayBaseType)) { /* never remembered: each knows its device */
    Holder* h = ((ArrayBase*)x)->holder;
    return h != NULL && h->array.device_type == ARROW_DEVICE_CPU; /* closed: the full path raises */
  }
  PyObject* device = PyObject_CallMethodNoArgs(x, g_str_dlpack_device);
  if (device == NULL) {
    if (!PyErr_ExceptionMatches(PyExc_AttributeError)) return -1;
    PyErr_Clear(); /* no DLPack producer: the full path says so */
    return 0;
  }
  long device_type = PyTuple_Check(device) && PyTuple_GET_SIZE(device) == 2
                         ? PyLong_AsLong(PyTuple_GET_ITEM(device, 0))
                         : -1;
  Py_DECREF(device);
  if (device_type == -1 && PyErr_Occurred()) PyErr_Clear();
  remember_dlpack_type(type, device_type == ARROW_DEVICE_CPU);
  return device_type == ARROW_DEVICE_CPU;
}

static PyObject* from_dlpack(PyObject* module, PyObject* const* args, Py_ssize_t nargs,
                             PyObject* kwnames) {
  if (g_array_class == NULL || g_from_dlpack_slow == NULL) {
    PyErr_SetString(PyExc_RuntimeError, "ferry._native.bind_classes() was not called");
    return NULL;
  }
  if (nargs != 1) {
    PyErr_SetString(PyExc_TypeError, "from_dlpack() takes exactly one positional argument");
    return NULL;
  }
  PyObject* x = args[0];
  int fast = !PyCapsule_CheckExact(x);
  for (Py_ssize_t i = 0; fast && kwnames != NULL && i < PyTuple_GET_SIZE(kwnames); i++)
    fast = args[nargs + i] == Py_None;
  if (fast) fast = dlpack_cpu_expected(x);
  if (fast < 0) return NULL;
  if (fast) {
    PyObject* call_args[2] = {x, g_max_version};
    PyObject* capsule = PyObject_VectorcallMethod(
        g_str_dlpack, call_args, 1 | PY_VECTORCALL_ARGUMENTS_OFFSET, g_kwnames_max_version);
    if (capsule == NULL) {
      if (!PyErr_ExceptionMatches(PyExc_TypeError)) return NULL;
      PyErr_Clear(); /* a producer without max_version: the Python path asks again */
    } else {
      DlpackCapsule c = unused_dlpack_capsule(capsule);
      if (c.tensor == NULL || dlpack_capsule_device_type(c) == kDLCPU) {
        PyObject* result = import_unused_capsule((PyTypeObject*)g_array_class, capsule, c, Py_None);
        Py_DECREF(capsule);
        return result;
      }
      /* A type that made CPU arrays so far made this one elsewhere. */
      remember_dlpack_type((PyObject*)Py_TYPE(x), 0);
      Py_DECREF(capsule);
    }
  }
  return PyObject_Vectorcall(g_from_dlpack_slow, args, nargs, kwnames);
}

/* ---- ferry.device_array: the protocol dispatch ------------------------------------- */

/* device_array(obj, *, validate=True): the Arrow PyCapsule producers in C
 * (the common entry: pyarrow, nanoarrow, Polars, ferry), every other kind in
 * ferry._interop._device_array (DLPack, the CUDA Array Interface, the
 * TypeError). The protocol methods are looked up on the type through its
 * attribute cache (_PyType_Lookup, as CPython's own slot lookups do): a miss
 * costs a probe instead of the AttributeError that hasattr() raises and
 * clears, which made a producer with only __arrow_c_array__ slower than
 * nanoarrow's entry. Same order and messages as the Python version. */
static PyObject* g_device_array_slow;  /* ferry._interop._device_array */
static PyObject* g_str_arrow_c_device_array;
static PyObject* g_str_arrow_c_array;

/* The two capsules of a protocol method's result, unpacked as Python's
 * `a, b = result` would (the same errors); new references, or -1. */
static int unpack_pair(PyObject* result, PyObject** first, PyObject** second) {
  if (PyTuple_CheckExact(result) && PyTuple_GET_SIZE(result) == 2) {
    *first = PyTuple_GET_ITEM(result, 0);
    *second = PyTuple_GET_ITEM(result, 1);
    Py_INCREF(*first);
    Py_INCREF(*second);
    return 0;
  }
  PyObject* iterator = PyObject_GetIter(result);
  if (iterator == NULL) {
    PyErr_Format(PyExc_TypeError, "cannot unpack non-iterable %.200s object",
                 Py_TYPE(result)->tp_name);
    return -1;
  }
  PyObject* items[3] = {NULL, NULL, NULL};
  Py_ssize_t n = 0;
  while (n < 3 && (items[n] = PyIter_Next(iterator)) != NULL) n++;
  Py_DECREF(iterator);
  if (PyErr_Occurred() || n != 2) {
    for (Py_ssize_t i = 0; i < n; i++) Py_DECREF(items[i]);
    if (PyErr_Occurred()) return -1;
    if (n < 2)
      PyErr_Format(PyExc_ValueError, "not enough values to unpack (expected 2, got %zd)", n);
    else
      PyErr_SetString(PyExc_ValueError, "too many values to unpack (expected 2)");
    return -1;
  }
  *first = items[0];
  *second = items[1];
  return 0;
}

static PyObject* device_array_entry(PyObject* module, PyObject* const* args, Py_ssize_t nargs,
                                    PyObject* kwnames) {
  if (g_array_class == NULL || g_device_array_slow == NULL) {
    PyErr_SetString(PyExc_RuntimeError, "ferry._native.bind_device_array() was not called");
    return NULL;
  }
  PyObject* method = NULL;
  int level = FERRY_VALIDATE_DEFAULT;
  if (nargs == 1) {
    PyObject* obj = args[0];
    if (PyObject_TypeCheck(obj, (PyTypeObject*)g_array_class)) {
      Py_INCREF(obj);
      return obj;
    }
    PyTypeObject* kind = Py_TYPE(obj);
    if (_PyType_Lookup(kind, g_str_arrow_c_device_array) != NULL)
      method = g_str_arrow_c_device_array;
    else if (_PyType_Lookup(kind, g_str_arrow_c_array) != NULL)
      method = g_str_arrow_c_array;
    /* Only `validate` is known here; anything else is the Python path's to refuse. */
    Py_ssize_t n_kw = kwnames != NULL ? PyTuple_GET_SIZE(kwnames) : 0;
    if (method != NULL && n_kw == 1 && keyword_is(PyTuple_GET_ITEM(kwnames, 0), g_str_validate)) {
      if (validate_level(args[1], &level) != 0) return NULL;
    } else if (n_kw != 0) {
      method = NULL;
    }
  }
  if (method == NULL) return PyObject_Vectorcall(g_device_array_slow, args, nargs, kwnames);
  if (need_library() != 0) return NULL;
  PyObject* result = PyObject_CallMethodNoArgs(args[0], method);
  if (result == NULL) return NULL;
  PyObject *schema_capsule, *array_capsule;
  int bad = unpack_pair(result, &schema_capsule, &array_capsule);
  Py_DECREF(result);
  if (bad) return NULL;
  PyObject* array =
      import_capsule_pair((PyTypeObject*)g_array_class, schema_capsule, array_capsule, level);
  Py_DECREF(schema_capsule);
  Py_DECREF(array_capsule);
  return array;
}

/* bind_device_array(slow): the Python path of device_array. */
static PyObject* bind_device_array(PyObject* module, PyObject* slow) {
  Py_INCREF(slow);
  Py_XSETREF(g_device_array_slow, slow);
  Py_RETURN_NONE;
}

static PyObject* bind_classes(PyObject* module, PyObject* args) {
  PyObject *array_class, *slow;
  if (!PyArg_ParseTuple(args, "OO", &array_class, &slow)) return NULL;
  if (check_array_class(array_class) == NULL) return NULL;
  Py_INCREF(array_class);
  Py_XSETREF(g_array_class, array_class);
  Py_INCREF(slow);
  Py_XSETREF(g_from_dlpack_slow, slow);
  Py_RETURN_NONE;
}

/* ---- Python references held by C ---------------------------------------------------- */

/* Drops a reference that C held (a release hook, a DLPack deleter): takes
 * the GIL from whatever thread calls, and does nothing once the interpreter
 * is finalizing (the process is ending; the memory goes with it). */
static void drop_python_ref(void* user_data) {
  if (user_data == NULL) return;
  atomic_fetch_sub(&g_live_refs, 1);
  if (!Py_IsInitialized() || FP_FINALIZING()) return;
  PyGILState_STATE gil = PyGILState_Ensure();
  Py_DECREF((PyObject*)user_data);
  PyGILState_Release(gil);
}

static PyObject* new_ref(PyObject* module, PyObject* obj) {
  Py_INCREF(obj);
  atomic_fetch_add(&g_live_refs, 1);
  return PyLong_FromVoidPtr(obj);
}

static PyObject* drop_ref(PyObject* module, PyObject* address) {
  void* p = PyLong_AsVoidPtr(address);
  if (PyErr_Occurred()) return NULL;
  drop_python_ref(p);
  Py_RETURN_NONE;
}

static PyObject* live_refs(PyObject* module, PyObject* unused) {
  return PyLong_FromLongLong(atomic_load(&g_live_refs));
}

/* DLPack tensors over memory a Python object owns (CUDA Array Interface
 * imports): the deleter drops the owner. */
typedef struct {
  DLManagedTensorVersioned tensor;
  int64_t shape[1];
  PyObject* owner;
} OwnedTensor;

static void owned_tensor_deleter(DLManagedTensorVersioned* self) {
  OwnedTensor* t = (OwnedTensor*)self->manager_ctx;
  drop_python_ref(t->owner);
  free(t);
}

/* import_memory(cls, owner, address, length, dtype_code, dtype_bits,
 * device_type, device_id, event_stream): a one-dimensional, contiguous
 * buffer that `owner` keeps alive, imported through the core's DLPack
 * import (which maps the element type); see import_dlpack for event_stream. */
static PyObject* import_memory(PyObject* module, PyObject* args) {
  PyObject *cls, *owner, *address, *event_stream = Py_None;
  long long length;
  int code_, bits, device_type;
  long long device_id;
  if (!PyArg_ParseTuple(args, "OOOLiiiL|O", &cls, &owner, &address, &length, &code_, &bits,
                        &device_type, &device_id, &event_stream))
    return NULL;
  if (need_library() != 0 || check_array_class(cls) == NULL) return NULL;
  void* data = PyLong_AsVoidPtr(address);
  if (PyErr_Occurred()) return NULL;
  OwnedTensor* t = (OwnedTensor*)calloc(1, sizeof(OwnedTensor));
  if (t == NULL) return PyErr_NoMemory();
  t->tensor.version.major = DLPACK_MAJOR_VERSION;
  t->tensor.version.minor = DLPACK_MINOR_VERSION;
  t->tensor.manager_ctx = t;
  t->tensor.deleter = owned_tensor_deleter;
  t->shape[0] = length;
  t->tensor.dl_tensor.data = data;
  t->tensor.dl_tensor.device.device_type = (DLDeviceType)device_type;
  t->tensor.dl_tensor.device.device_id = (int32_t)device_id;
  t->tensor.dl_tensor.ndim = 1;
  t->tensor.dl_tensor.dtype.code = (uint8_t)code_;
  t->tensor.dl_tensor.dtype.bits = (uint8_t)bits;
  t->tensor.dl_tensor.dtype.lanes = 1;
  t->tensor.dl_tensor.shape = t->shape;
  Py_INCREF(owner);
  atomic_fetch_add(&g_live_refs, 1);
  t->owner = owner;
  int taken;
  Holder* h = holder_from_dlpack(&t->tensor, 0, &taken);
  if (h == NULL) {
    if (!taken) owned_tensor_deleter(&t->tensor); /* refused: drop the owner here */
    return NULL;
  }
  if (attach_event_stream(h, event_stream) != 0) {
    holder_decref(h);
    return NULL;
  }
  return array_object((PyTypeObject*)cls, h);
}

/* ---- streams: capsules and adapters ------------------------------------------------- */

/* stream_capsule(address, device): moves the ArrowDeviceArrayStream at
 * `address` into an "arrow_device_array_stream" capsule (device true) or,
 * for a CPU stream, into an "arrow_array_stream" capsule through the core's
 * adapter (ferry_array_stream_to_cpu_stream), which unwraps each batch's
 * ArrowArray. */
static PyObject* capsule_from_stream(struct ArrowDeviceArrayStream* src, int device) {
  if (src == NULL || src->release == NULL) {
    PyErr_SetString(PyExc_ValueError, "the stream is NULL or released");
    return NULL;
  }
  if (device) {
    struct ArrowDeviceArrayStream* out;
    PyObject* capsule = new_capsule(sizeof(*out), kDeviceStreamCapsule,
                                    device_stream_capsule_destructor, (void**)&out);
    if (capsule == NULL) return NULL;
    *out = *src;
    src->release = NULL;
    return capsule;
  }
  if (src->device_type != ARROW_DEVICE_CPU) {
    PyErr_Format(PyExc_BufferError,
                 "the stream's batches live on device type %d, not on the CPU: "
                 "__arrow_c_stream__ is for CPU data only; use __arrow_c_device_stream__",
                 (int)src->device_type);
    return NULL;
  }
  struct ArrowArrayStream* out;
  PyObject* capsule =
      new_capsule(sizeof(*out), kStreamCapsule, stream_capsule_destructor, (void**)&out);
  if (capsule == NULL) return NULL;
  /* Batches are not validated here: the capsule's consumer imports them. */
  struct FerryError error;
  error.message[0] = '\0';
  int code = fp_ferry_array_stream_to_cpu_stream(src, FERRY_VALIDATE_NONE, 0, out, &error);
  if (code != FERRY_OK) {
    Py_DECREF(capsule); /* nothing was moved: `src` is still the caller's */
    return code == ENOMEM ? PyErr_NoMemory() : raise_error(code, &error, 1);
  }
  return capsule;
}

static PyObject* stream_capsule(PyObject* module, PyObject* args) {
  PyObject* address;
  int device = 1;
  if (!PyArg_ParseTuple(args, "Op", &address, &device)) return NULL;
  struct ArrowDeviceArrayStream* src = (struct ArrowDeviceArrayStream*)PyLong_AsVoidPtr(address);
  if (PyErr_Occurred()) return NULL;
  return capsule_from_stream(src, device);
}

/* ---- StreamBase: the C half of ferry.DeviceArrayStream ------------------------------ */

/* A stream object owns one ArrowDeviceArrayStream (its own block, released
 * and freed by _free or when the object goes away). The producer's callbacks
 * may block or call back into Python from another thread, so every call
 * into the stream releases the GIL.
 *
 * Threads. The stream interface allows one call at a time and release last,
 * so every call into the stream (get_schema, get_next, release, handing the
 * stream on) runs inside stream_enter/stream_leave: a second caller from
 * another thread waits (GIL released) until the first is done; a call from
 * the thread already inside (a Python producer reading its own consumer)
 * would wait forever and is refused with EDEADLK. close() waits for a call
 * in flight, then releases, exactly once; a caller that was waiting behind
 * it finds the stream closed (ClosedError).
 *
 * Errors. After a failed get_schema or get_next (or a batch refused by
 * validation) the producer is never called again: every later read raises
 * the same error (code and message). After the end, reads return None
 * without calling the producer. */
typedef struct {
  PyObject_HEAD struct ArrowDeviceArrayStream* raw; /* NULL once closed or handed on */
  PyObject* schema; /* the stream's Schema once get_schema ran (Python's _schema) */
  pthread_mutex_t mutex; /* guards busy and busy_thread (never held across a call) */
  pthread_cond_t idle;   /* signalled when busy drops */
  int busy;              /* a thread is inside a call into the stream */
  unsigned long busy_thread;
  int validate;          /* FERRY_VALIDATE_* level of the schema and batches (_validate) */
  int ended;             /* get_next reported the end */
  int error_code;        /* the first failure, kept (0: none) */
  char error_message[FERRY_ERROR_MESSAGE_SIZE];
  int64_t leak_token;
} StreamBase;

static PyObject* StreamBase_new(PyTypeObject* cls, PyObject* args, PyObject* kwargs) {
  StreamBase* self = (StreamBase*)cls->tp_alloc(cls, 0);
  if (self == NULL) return NULL;
  pthread_mutex_init(&self->mutex, NULL);
  pthread_cond_init(&self->idle, NULL);
  self->validate = FERRY_VALIDATE_DEFAULT;
  self->raw = (struct ArrowDeviceArrayStream*)malloc(sizeof(struct ArrowDeviceArrayStream));
  if (self->raw == NULL) {
    Py_DECREF(self);
    return PyErr_NoMemory();
  }
  self->raw->release = NULL; /* every use fills it whole (a move or an init) */
  self->schema = NULL;
  self->leak_token = leak_track("ferry.DeviceArrayStream never closed");
  return (PyObject*)self;
}

/* Waits (GIL released) until no other thread is inside a call into the
 * stream, then marks this thread inside. 0, or -1 with EDEADLK raised for a
 * call from the thread already inside. Under the GIL. */
static int stream_enter(StreamBase* self) {
  unsigned long me = PyThread_get_thread_ident();
  /* Taken with the GIL held: whoever holds the mutex only flips flags. */
  pthread_mutex_lock(&self->mutex);
  if (self->busy && self->busy_thread == me) {
    pthread_mutex_unlock(&self->mutex);
    raise_code(EDEADLK,
               "a call into this stream from the thread already inside one (its producer "
               "reading or closing its own consumer) would wait for itself",
               0);
    return -1;
  }
  if (!self->busy) {
    self->busy = 1;
    self->busy_thread = me;
    pthread_mutex_unlock(&self->mutex);
    return 0;
  }
  pthread_mutex_unlock(&self->mutex);
  Py_BEGIN_ALLOW_THREADS pthread_mutex_lock(&self->mutex);
  while (self->busy) pthread_cond_wait(&self->idle, &self->mutex);
  self->busy = 1;
  self->busy_thread = me;
  pthread_mutex_unlock(&self->mutex);
  Py_END_ALLOW_THREADS return 0;
}

static void stream_leave(StreamBase* self) {
  pthread_mutex_lock(&self->mutex);
  self->busy = 0;
  pthread_cond_broadcast(&self->idle);
  pthread_mutex_unlock(&self->mutex);
}

/* Releases and frees the struct; the caller is inside (stream_enter) or
 * the object is going away. */
static void stream_free_inside(StreamBase* self) {
  struct ArrowDeviceArrayStream* raw = self->raw;
  self->raw = NULL;
  leak_untrack(&self->leak_token);
  if (raw == NULL) return;
  if (raw->release != NULL) {
    Py_BEGIN_ALLOW_THREADS fp_ferry_array_stream_release(raw);
    Py_END_ALLOW_THREADS
  }
  free(raw);
}

/* stream_free, waiting for a call in flight first; 0 or -1 (EDEADLK). */
static int stream_free(StreamBase* self) {
  if (self->raw == NULL) return 0;
  if (stream_enter(self) != 0) return -1;
  stream_free_inside(self);
  stream_leave(self);
  return 0;
}

static void StreamBase_dealloc(StreamBase* self) {
  /* The safety net when nobody closed it; no call can be in flight (each
   * holds a reference to the object). */
  leak_untrack_at_dealloc(&self->leak_token);
  stream_free_inside(self);
  Py_CLEAR(self->schema);
  pthread_cond_destroy(&self->idle);
  pthread_mutex_destroy(&self->mutex);
  Py_TYPE(self)->tp_free((PyObject*)self);
}

static int stream_open(StreamBase* self) {
  if (self->raw == NULL) {
    PyErr_SetString(g_closed_error, "the stream is closed (released or handed on)");
    return -1;
  }
  return 0;
}

/* stream_enter, then the stream must be open: 0, or -1 with an exception
 * (and nothing entered). */
static int stream_enter_open(StreamBase* self) {
  if (stream_open(self) != 0 || stream_enter(self) != 0) return -1;
  if (stream_open(self) != 0) { /* closed by the call it waited for */
    stream_leave(self);
    return -1;
  }
  return 0;
}

/* Keeps the first failure; raises it (the same code and message each time). */
static PyObject* stream_fail(StreamBase* self, int code, const char* message) {
  if (self->error_code == 0) {
    self->error_code = code;
    snprintf(self->error_message, sizeof(self->error_message), "%s",
             message && message[0] ? message : "(no message)");
  }
  return raise_code(self->error_code, self->error_message, 0);
}

static PyObject* StreamBase_free(StreamBase* self, PyObject* unused) {
  if (stream_free(self) != 0) return NULL;
  Py_RETURN_NONE;
}

static PyObject* StreamBase_address(StreamBase* self, void* unused) {
  if (stream_open(self) != 0) return NULL;
  return PyLong_FromVoidPtr(self->raw);
}

static PyObject* StreamBase_closed(StreamBase* self, void* unused) {
  return PyBool_FromLong(self->raw == NULL);
}

static PyObject* StreamBase_device_type(StreamBase* self, void* unused) {
  if (stream_open(self) != 0) return NULL;
  return PyLong_FromLong(self->raw->release != NULL ? (long)self->raw->device_type : 0);
}

/* _take(address): moves the live stream at `address` in (it is left released). */
static PyObject* StreamBase_take(StreamBase* self, PyObject* address) {
  if (stream_open(self) != 0) return NULL;
  struct ArrowDeviceArrayStream* src = (struct ArrowDeviceArrayStream*)address_arg(address);
  if (src == NULL && PyErr_Occurred()) return NULL;
  if (src == NULL || src->release == NULL) {
    PyErr_SetString(PyExc_ValueError, "the stream at that address is NULL or released");
    return NULL;
  }
  if (stream_enter_open(self) != 0) return NULL;
  if (self->raw->release != NULL) {
    stream_leave(self);
    PyErr_SetString(PyExc_ValueError, "this stream object already holds a stream");
    return NULL;
  }
  *self->raw = *src;
  src->release = NULL;
  stream_leave(self);
  Py_RETURN_NONE;
}

/* _hand_to(address): moves the stream into the released struct at `address`;
 * this object is closed. */
static PyObject* StreamBase_hand_to(StreamBase* self, PyObject* address) {
  if (stream_open(self) != 0) return NULL;
  struct ArrowDeviceArrayStream* dst = (struct ArrowDeviceArrayStream*)address_arg(address);
  if (dst == NULL && PyErr_Occurred()) return NULL;
  if (dst == NULL || dst->release != NULL) {
    PyErr_SetString(PyExc_ValueError, "the destination stream must be released beforehand");
    return NULL;
  }
  if (stream_enter_open(self) != 0) return NULL;
  *dst = *self->raw;
  self->raw->release = NULL;
  stream_free_inside(self);
  stream_leave(self);
  Py_RETURN_NONE;
}

/* _capsule(device): moves the stream into a new "arrow_device_array_stream"
 * capsule (device true) or, for a CPU stream, an "arrow_array_stream" one;
 * this object is closed. */
static PyObject* StreamBase_capsule(StreamBase* self, PyObject* device_obj) {
  int device = PyObject_IsTrue(device_obj);
  if (device < 0 || stream_enter_open(self) != 0) return NULL;
  PyObject* capsule = capsule_from_stream(self->raw, device);
  if (capsule != NULL) stream_free_inside(self); /* moved out: only the block */
  stream_leave(self);
  return capsule;
}

/* _capsule_as(device, requested_schema): _capsule for a consumer's
 * requested schema: the producer's schema is read (get_schema, GIL
 * released) and, when the stream's data answers the request unchanged
 * (ferry_schema_answers_request without data: a field requested
 * non-nullable must be non-nullable in the stream's schema), the stream is
 * handed on under a copy of the requested schema
 * (ferry_array_stream_with_schema); otherwise NotImplementedError names the
 * difference and the stream stays here, unread. */
static PyObject* StreamBase_capsule_as(StreamBase* self, PyObject* args) {
  PyObject *device_obj, *requested;
  if (!PyArg_ParseTuple(args, "OO", &device_obj, &requested)) return NULL;
  int device = PyObject_IsTrue(device_obj);
  if (device < 0 || need_library() != 0) return NULL;
  struct ArrowSchema* want = requested_schema_arg(requested);
  if (want == NULL || stream_enter_open(self) != 0) return NULL;
  if (self->error_code != 0) {
    stream_leave(self);
    return raise_code(self->error_code, self->error_message, 0);
  }
  if (!device && self->raw->device_type != ARROW_DEVICE_CPU) {
    PyObject* refused = capsule_from_stream(self->raw, 0); /* raises the BufferError */
    stream_leave(self);
    return refused;
  }
  struct ArrowSchema have;
  have.release = NULL;
  struct FerryError error;
  error.message[0] = '\0';
  int code;
  struct ArrowDeviceArrayStream* raw = self->raw;
  Py_BEGIN_ALLOW_THREADS code = fp_ferry_array_stream_get_schema(raw, &have, &error);
  Py_END_ALLOW_THREADS
  PyObject* result = NULL;
  if (code != FERRY_OK) {
    result = stream_fail(self, code, error.message);
  } else if (fp_ferry_schema_answers_request(&have, want, NULL, &error) != FERRY_OK) {
    PyErr_Format(PyExc_NotImplementedError,
                 "ferry does not cast, and the stream (format \"%s\") has no zero-copy "
                 "answer to the requested schema: %s",
                 have.format, error.message);
  } else {
    struct ArrowSchema copy;
    copy.release = NULL;
    struct ArrowDeviceArrayStream swapped;
    swapped.release = NULL;
    code = fp_ferry_schema_copy(want, &copy, &error);
    if (code == FERRY_OK) {
      code = fp_ferry_array_stream_with_schema(raw, &copy, &swapped, &error);
      if (code != FERRY_OK) fp_ferry_schema_release(&copy);
    }
    if (code != FERRY_OK) {
      export_failed(code, &error);
    } else {
      *raw = swapped; /* the producer's stream moved into `swapped` */
      result = capsule_from_stream(raw, device);
      if (result != NULL) stream_free_inside(self); /* moved out: only the block */
    }
  }
  if (have.release != NULL) fp_ferry_schema_release(&have);
  stream_leave(self);
  return result;
}

/* _get_schema(cls): calls get_schema (GIL released) and moves the schema,
 * validated unless the stream opted out, into a new instance of `cls` (a
 * SchemaBase subclass). A failure is kept (see StreamBase). */
static PyObject* StreamBase_get_schema(StreamBase* self, PyObject* cls) {
  if (need_library() != 0) return NULL;
  if (!PyType_Check(cls) || !PyType_IsSubtype((PyTypeObject*)cls, &SchemaBaseType)) {
    PyErr_SetString(PyExc_TypeError, "expected a SchemaBase subclass");
    return NULL;
  }
  if (stream_enter_open(self) != 0) return NULL;
  if (self->error_code != 0) {
    stream_leave(self);
    return raise_code(self->error_code, self->error_message, 0);
  }
  struct ArrowSchema schema;
  schema.release = NULL;
  struct FerryError error;
  error.message[0] = '\0';
  int code;
  struct ArrowDeviceArrayStream* raw = self->raw;
  Py_BEGIN_ALLOW_THREADS code = fp_ferry_array_stream_get_schema(raw, &schema, &error);
  Py_END_ALLOW_THREADS
  PyObject* obj;
  if (code != FERRY_OK) {
    obj = stream_fail(self, code, error.message);
  } else {
    if (self->validate != FERRY_VALIDATE_NONE)
      code = fp_ferry_validate_schema(&schema, NULL, NULL, &error);
    if (code != FERRY_OK) {
      fp_ferry_schema_release(&schema);
      obj = stream_fail(self, code, error.message);
    } else {
      obj = schema_take((PyTypeObject*)cls, &schema, 0);
      if (schema.release != NULL) fp_ferry_schema_release(&schema); /* out of memory */
    }
  }
  stream_leave(self);
  return obj;
}

/* _next_batch(cls, schema, consumer_stream): calls get_next (GIL released;
 * with a consumer stream handle, get_next_on) straight into a new holder
 * that shares `schema` (the stream's Schema), validates it (DEFAULT, unless
 * the stream opted out) and returns a new instance of `cls`, or None at the
 * end of the stream. Failures are kept (see StreamBase). */
static PyObject* stream_next_batch(StreamBase* self, PyTypeObject* cls, PyObject* schema_obj,
                                   int on_stream, void* consumer) {
  if (need_library() != 0) return NULL;
  if (!PyObject_TypeCheck(schema_obj, &SchemaBaseType)) {
    PyErr_SetString(PyExc_TypeError, "the stream's schema must be a ferry.Schema");
    return NULL;
  }
  SchemaBase* schema = (SchemaBase*)schema_obj;
  if (schema_open(schema) != 0 || stream_enter_open(self) != 0) return NULL;
  if (self->error_code != 0) {
    stream_leave(self);
    return raise_code(self->error_code, self->error_message, 0);
  }
  if (self->ended) {
    stream_leave(self);
    Py_RETURN_NONE;
  }
  if (schema_open(schema) != 0) { /* closed while this call waited its turn */
    stream_leave(self);
    return NULL;
  }
  Holder* h = holder_new(schema->holder);
  if (h == NULL) {
    stream_leave(self);
    return PyErr_NoMemory();
  }
  struct FerryError error;
  error.message[0] = '\0';
  int code;
  struct ArrowDeviceArrayStream* raw = self->raw;
  Py_BEGIN_ALLOW_THREADS code =
      on_stream ? fp_ferry_array_stream_get_next_on(raw, &h->array, consumer, &error)
                : fp_ferry_array_stream_get_next(raw, &h->array, &error);
  Py_END_ALLOW_THREADS
  PyObject* result;
  if (code != FERRY_OK || h->array.array.release == NULL) {
    holder_decref_gil(h); /* released: nothing but the block */
    if (code != FERRY_OK) {
      result = stream_fail(self, code, error.message);
    } else {
      self->ended = 1; /* the end stays the end */
      result = Py_None;
      Py_INCREF(result);
    }
  } else if (self->validate != FERRY_VALIDATE_NONE &&
             (code = validate_shared_holder_code(h, self->validate, &error)) != FERRY_OK) {
    holder_decref(h);
    result = stream_fail(self, code, error.message);
  } else {
    if (self->validate == FERRY_VALIDATE_NONE)
      memset(h->array.reserved, 0, sizeof(h->array.reserved));
    result = array_object(cls, h);
  }
  stream_leave(self);
  return result;
}

static PyObject* StreamBase_next_batch(StreamBase* self, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 3) {
    PyErr_SetString(PyExc_TypeError, "_next_batch(cls, schema, consumer_stream)");
    return NULL;
  }
  if (check_array_class(args[0]) == NULL) return NULL;
  int on_stream = args[2] != Py_None;
  void* consumer = NULL;
  if (on_stream) {
    consumer = PyLong_AsVoidPtr(args[2]);
    if (consumer == NULL && PyErr_Occurred()) return NULL;
  }
  return stream_next_batch(self, (PyTypeObject*)args[0], args[1], on_stream, consumer);
}

/* Iteration (`for batch in stream`): the next batch as a ferry.DeviceArray,
 * keeping its event, straight from C; the schema comes from the Python
 * `schema` property (get_schema once, under the object's lock). */
static PyObject* g_str_schema;

static PyObject* StreamBase_iternext(StreamBase* self) {
  if (g_array_class == NULL) {
    PyErr_SetString(PyExc_RuntimeError, "ferry._native.bind_classes() was not called");
    return NULL;
  }
  PyObject* schema = self->schema;
  if (schema != NULL && schema != Py_None) {
    Py_INCREF(schema);
  } else if ((schema = PyObject_GetAttr((PyObject*)self, g_str_schema)) == NULL) {
    return NULL;
  }
  PyObject* batch = stream_next_batch(self, (PyTypeObject*)g_array_class, schema, 0, NULL);
  Py_DECREF(schema);
  if (batch == Py_None) { /* the end: NULL without an exception stops the iteration */
    Py_DECREF(batch);
    return NULL;
  }
  return batch;
}

static PyMethodDef StreamBase_methods[] = {
    {"_free", (PyCFunction)StreamBase_free, METH_NOARGS,
     "Releases the stream (GIL released; after a call in flight) and closes this object; "
     "idempotent."},
    {"_take", (PyCFunction)StreamBase_take, METH_O,
     "_take(address): moves the live stream at an address in."},
    {"_hand_to", (PyCFunction)StreamBase_hand_to, METH_O,
     "_hand_to(address): moves the stream into the released struct at an address."},
    {"_capsule", (PyCFunction)StreamBase_capsule, METH_O,
     "_capsule(device): moves the stream into a new PyCapsule; this object is closed."},
    {"_capsule_as", (PyCFunction)StreamBase_capsule_as, METH_VARARGS,
     "_capsule_as(device, requested_schema): _capsule under a requested schema the data "
     "answers unchanged."},
    {"_get_schema", (PyCFunction)StreamBase_get_schema, METH_O,
     "_get_schema(cls): the producer's schema as a new cls instance."},
    {"_next_batch", (PyCFunction)(void (*)(void))StreamBase_next_batch, METH_FASTCALL,
     "_next_batch(cls, schema, consumer_stream): the next batch, or None at the end."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef StreamBase_getset[] = {
    {"closed", (getter)StreamBase_closed, NULL, "True once closed or handed on.", NULL},
    {"_address", (getter)StreamBase_address, NULL,
     "Address of the owned ArrowDeviceArrayStream.", NULL},
    {"device_type", (getter)StreamBase_device_type, NULL,
     "The Arrow device type of every batch.", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyMemberDef StreamBase_members[] = {
    {"_schema", T_OBJECT, offsetof(StreamBase, schema), 0,
     "The stream's Schema once read (None before)."},
    {"_validate", T_INT, offsetof(StreamBase, validate), 0,
     "The validation level of the schema and every batch: -1 none, 0 DEFAULT, 1 FULL."},
    {NULL, 0, 0, 0, NULL}};

static PyTypeObject StreamBaseType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ferry._native.StreamBase",
    .tp_basicsize = sizeof(StreamBase),
    .tp_dealloc = (destructor)StreamBase_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "The C half of ferry.DeviceArrayStream: an owned ArrowDeviceArrayStream.",
    .tp_methods = StreamBase_methods,
    .tp_getset = StreamBase_getset,
    .tp_members = StreamBase_members,
    .tp_iter = PyObject_SelfIter,
    .tp_iternext = (iternextfunc)StreamBase_iternext,
    .tp_new = StreamBase_new,
};

/* take_stream_capsule(capsule, address): moves an "arrow_device_array_stream"
 * capsule's stream, or a CPU "arrow_array_stream" behind the core's adapter
 * (ferry_array_stream_from_cpu_stream), into the released
 * ArrowDeviceArrayStream at `address`. */
static PyObject* take_stream_capsule(PyObject* module, PyObject* args) {
  PyObject *capsule, *address;
  if (!PyArg_ParseTuple(args, "OO", &capsule, &address)) return NULL;
  if (need_library() != 0) return NULL;
  struct ArrowDeviceArrayStream* out = (struct ArrowDeviceArrayStream*)PyLong_AsVoidPtr(address);
  if (PyErr_Occurred()) return NULL;
  if (out == NULL || out->release != NULL) {
    PyErr_SetString(PyExc_ValueError, "the destination stream must be released beforehand");
    return NULL;
  }
  if (PyCapsule_IsValid(capsule, kDeviceStreamCapsule)) {
    struct ArrowDeviceArrayStream* src =
        (struct ArrowDeviceArrayStream*)PyCapsule_GetPointer(capsule, kDeviceStreamCapsule);
    if (src->release == NULL) {
      PyErr_SetString(PyExc_ValueError, "the stream capsule was already consumed");
      return NULL;
    }
    *out = *src;
    src->release = NULL;
    Py_RETURN_NONE;
  }
  if (!PyCapsule_IsValid(capsule, kStreamCapsule)) {
    PyErr_SetString(PyExc_TypeError,
                    "expected an \"arrow_device_array_stream\" or \"arrow_array_stream\" "
                    "PyCapsule");
    return NULL;
  }
  struct ArrowArrayStream* src =
      (struct ArrowArrayStream*)PyCapsule_GetPointer(capsule, kStreamCapsule);
  if (src->release == NULL) {
    PyErr_SetString(PyExc_ValueError, "the stream capsule was already consumed");
    return NULL;
  }
  struct FerryError error;
  error.message[0] = '\0';
  /* On failure nothing was taken: the capsule keeps its stream. */
  int code = fp_ferry_array_stream_from_cpu_stream(src, out, &error);
  if (code != FERRY_OK) return raise_error(code, &error, 0);
  Py_RETURN_NONE;
}

/* ---- Python stream producers ------------------------------------------------------ */

/* Fills `error` from the pending Python exception and clears it. A ferry
 * error keeps its errno code and its bare message (so an injected failure
 * travels verbatim); anything else becomes EIO with "Type: message". */
static int exception_to_code(struct FerryError* error) {
  PyObject *type, *value, *traceback;
  PyErr_Fetch(&type, &value, &traceback);
  PyErr_NormalizeException(&type, &value, &traceback);
  int code = EIO;
  PyObject* text = NULL;
  if (value != NULL) {
    PyObject* errno_attr = PyObject_GetAttrString(value, "code");
    PyObject* message_attr = errno_attr ? PyObject_GetAttrString(value, "message") : NULL;
    if (errno_attr != NULL && PyLong_Check(errno_attr) && message_attr != NULL &&
        PyUnicode_Check(message_attr)) {
      long c = PyLong_AsLong(errno_attr);
      if (c > 0) code = (int)c;
      text = message_attr;
      Py_INCREF(text);
    } else {
      PyErr_Clear();
      text = PyUnicode_FromFormat("%s: %S", type ? ((PyTypeObject*)type)->tp_name : "error", value);
    }
    Py_XDECREF(errno_attr);
    Py_XDECREF(message_attr);
  }
  const char* utf8 = text ? PyUnicode_AsUTF8(text) : NULL;
  if (utf8 == NULL) PyErr_Clear();
  snprintf(error->message, sizeof(error->message), "%s", utf8 ? utf8 : "Python error");
  Py_XDECREF(text);
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(traceback);
  return code;
}

/* A stream produced in Python: `producer._ferry_get_schema(address)` fills
 * the schema, and each get_next takes the next item of `batches` (an
 * iterator of ferry.DeviceArray) and moves it out; both references are held
 * until the consumer releases the stream. */
typedef struct {
  PyObject* producer;
  PyObject* batches;
} PythonStreamSource;

static PyObject* g_str_get_schema; /* "_ferry_get_schema" */

/* Whether Python can be called now; else EIO with a message. */
static int python_callable(struct FerryError* error) {
  if (!Py_IsInitialized() || FP_FINALIZING()) {
    snprintf(error->message, sizeof(error->message), "the Python interpreter is shutting down");
    return EIO;
  }
  return 0;
}

static int producer_get_schema(void* user_data, struct ArrowSchema* out, struct FerryError* error) {
  int code = python_callable(error);
  if (code != 0) return code;
  PyGILState_STATE gil = PyGILState_Ensure();
  PyObject* address = PyLong_FromVoidPtr(out);
  PyObject* result =
      address ? PyObject_CallMethodOneArg(((PythonStreamSource*)user_data)->producer,
                                          g_str_get_schema, address)
              : NULL;
  Py_XDECREF(address);
  if (result == NULL) code = exception_to_code(error);
  Py_XDECREF(result);
  PyGILState_Release(gil);
  return code;
}

/* The next batch, moved out (shared when something else still holds it) and
 * closed here; at the end of the iterator `out` stays released. */
static int producer_get_next(void* user_data, struct ArrowDeviceArray* out,
                             struct FerryError* error) {
  int code = python_callable(error);
  if (code != 0) return code;
  PyGILState_STATE gil = PyGILState_Ensure();
  PyObject* batch = PyIter_Next(((PythonStreamSource*)user_data)->batches);
  PyObject* done = NULL;
  if (batch != NULL) {
    if (!PyObject_TypeCheck(batch, (PyTypeObject*)g_array_class)) {
      PyErr_Format(PyExc_TypeError, "a stream batch must be a ferry.DeviceArray, not %s",
                   Py_TYPE(batch)->tp_name);
    } else {
      PyObject* address = PyLong_FromVoidPtr(out);
      done = address ? array_export((ArrayBase*)batch, Py_None, address, 1) : NULL;
      Py_XDECREF(address);
      if (done != NULL) Py_DECREF(ArrayBase_close((ArrayBase*)batch, NULL));
    }
    Py_DECREF(batch);
  }
  if ((batch != NULL && done == NULL) || PyErr_Occurred()) code = exception_to_code(error);
  Py_XDECREF(done);
  PyGILState_Release(gil);
  return code;
}

static void python_stream_release(void* user_data) {
  PythonStreamSource* source = (PythonStreamSource*)user_data;
  atomic_fetch_sub(&g_live_refs, 1);
  if (!Py_IsInitialized() || FP_FINALIZING()) return; /* the process is ending */
  PyGILState_STATE gil = PyGILState_Ensure();
  Py_DECREF(source->producer);
  Py_DECREF(source->batches);
  PyGILState_Release(gil);
  free(source);
}

/* export_stream(producer, batches, device_type, address): fills the released
 * ArrowDeviceArrayStream at `address` with a stream whose get_schema calls
 * producer._ferry_get_schema(address) and whose get_next moves out the next
 * DeviceArray of the iterator `batches` (see PythonStreamSource). */
static PyObject* export_stream(PyObject* module, PyObject* args) {
  PyObject *producer, *batches, *address;
  int device_type;
  if (!PyArg_ParseTuple(args, "OOiO", &producer, &batches, &device_type, &address)) return NULL;
  if (need_library() != 0) return NULL;
  if (g_array_class == NULL) {
    PyErr_SetString(PyExc_RuntimeError, "ferry._native.bind_classes() was not called");
    return NULL;
  }
  if (!PyIter_Check(batches)) {
    PyErr_SetString(PyExc_TypeError, "export_stream: batches must be an iterator");
    return NULL;
  }
  struct ArrowDeviceArrayStream* out = (struct ArrowDeviceArrayStream*)PyLong_AsVoidPtr(address);
  if (PyErr_Occurred()) return NULL;
  PythonStreamSource* source = (PythonStreamSource*)malloc(sizeof(PythonStreamSource));
  if (source == NULL) return PyErr_NoMemory();
  Py_INCREF(producer);
  Py_INCREF(batches);
  source->producer = producer;
  source->batches = batches;
  atomic_fetch_add(&g_live_refs, 1);
  struct FerryError error;
  error.message[0] = '\0';
  int code = fp_ferry_array_stream_init(out, device_type, producer_get_schema, producer_get_next,
                                        python_stream_release, source, &error);
  if (code != FERRY_OK) {
    atomic_fetch_sub(&g_live_refs, 1);
    Py_DECREF(producer);
    Py_DECREF(batches);
    free(source);
    return raise_error(code, &error, 0);
  }
  Py_RETURN_NONE;
}

/* ---- module ------------------------------------------------------------------------- */

/* load(name, error_factory): binds to the libferry already loaded under
 * `name` (a path or soname) in this process. */
static PyObject* load(PyObject* module, PyObject* args) {
  const char* name;
  PyObject* factory;
  if (!PyArg_ParseTuple(args, "sO", &name, &factory)) return NULL;
  void* handle = dlopen(name, RTLD_NOW | RTLD_NOLOAD);
  if (handle == NULL) {
    PyErr_Format(PyExc_ImportError, "libferry %s is not loaded in this process: %s", name,
                 dlerror());
    return NULL;
  }
#define FP_BIND(fn)                                                                   \
  fp_##fn = (__typeof__(fn)*)dlsym(handle, #fn);                                      \
  if (fp_##fn == NULL) {                                                              \
    dlclose(handle);                                                                  \
    PyErr_Format(PyExc_ImportError, "libferry %s lacks %s: too old for this package", \
                 name, #fn);                                                          \
    return NULL;                                                                      \
  }
  FP_FUNCTIONS(FP_BIND)
#undef FP_BIND
  fp_ferry_leak_track = (__typeof__(ferry_leak_track)*)dlsym(handle, "ferry_leak_track");
  fp_ferry_leak_untrack = (__typeof__(ferry_leak_untrack)*)dlsym(handle, "ferry_leak_untrack");
  const char* report = getenv("FERRY_LEAK_REPORT"); /* the core's rule: set, not "" or "0" */
  g_leak_report = report != NULL && report[0] != '\0' && strcmp(report, "0") != 0 &&
                  fp_ferry_leak_track != NULL && fp_ferry_leak_untrack != NULL;
  g_library = handle; /* kept open for the life of the process */
  Py_INCREF(factory);
  Py_XSETREF(g_error_factory, factory);
  Py_RETURN_NONE;
}

/* validate_level(value): the FERRY_VALIDATE_* level of a `validate` argument. */
static PyObject* validate_level_py(PyObject* module, PyObject* value) {
  int level;
  if (validate_level(value, &level) != 0) return NULL;
  return PyLong_FromLong(level);
}

/* The address of a release hook that drops a reference made by new_ref. */
static PyObject* release_hook_address(PyObject* module, PyObject* unused) {
  return PyLong_FromVoidPtr((void*)(uintptr_t)drop_python_ref);
}

static PyMethodDef module_methods[] = {
    {"load", load, METH_VARARGS, "load(name, error_factory): binds to a loaded libferry."},
    {"import_capsules", (PyCFunction)(void (*)(void))import_capsules, METH_FASTCALL,
     "import_capsules(cls, schema_capsule, array_capsule, validate=True)"},
    {"from_capsules", (PyCFunction)(void (*)(void))from_capsules, METH_FASTCALL | METH_KEYWORDS,
     "from_capsules(schema_capsule, array_capsule, *, validate=True)\n--\n\n"
     "Takes the structs out of an \"arrow_schema\" capsule and an \"arrow_device_array\" (or "
     "CPU \"arrow_array\") capsule into a new ferry.DeviceArray; the capsules are left "
     "consumed. With validate, the structure is checked first."},
    {"from_c", (PyCFunction)(void (*)(void))from_c, METH_FASTCALL | METH_KEYWORDS,
     "from_c(array_address, schema_address, *, validate=True)\n--\n\n"
     "Takes ownership of an ArrowSchema and an ArrowDeviceArray at two addresses (moved in; "
     "the sources are left released). With validate, the structure is checked first "
     "(ferry_validate_device_array)."},
    {"from_buffers", (PyCFunction)(void (*)(void))from_buffers, METH_FASTCALL | METH_KEYWORDS,
     "from_buffers(schema, length, buffers, *, null_count=0, offset=0, children=(), "
     "dictionary=None, device='cpu', stream=None)\n--\n\n"
     "Builds an array over existing memory without copying it (see DeviceArray.from_buffers)."},
    {"bind_from_buffers", bind_from_buffers, METH_VARARGS,
     "bind_from_buffers(slow, buffer_class): the general from_buffers and ferry.Buffer."},
    {"import_raw", import_raw, METH_VARARGS,
     "import_raw(cls, schema_address, array_address, validate=True)"},
    {"import_batch", import_batch, METH_VARARGS,
     "import_batch(cls, schema, array_address, validate=True)"},
    {"import_schema", import_schema, METH_VARARGS, "import_schema(cls, capsule_or_address)"},
    {"import_dlpack", import_dlpack, METH_VARARGS,
     "import_dlpack(cls, capsule, event_stream=None)"},
    {"import_memory", import_memory, METH_VARARGS,
     "import_memory(cls, owner, address, length, code, bits, device_type, device_id, "
     "event_stream=None)"},
    {"stream_capsule", stream_capsule, METH_VARARGS, "stream_capsule(address, device)"},
    {"take_stream_capsule", take_stream_capsule, METH_VARARGS,
     "take_stream_capsule(capsule, address)"},
    {"export_stream", export_stream, METH_VARARGS,
     "export_stream(producer, device_type, address)"},
    {"from_dlpack", (PyCFunction)(void (*)(void))from_dlpack, METH_FASTCALL | METH_KEYWORDS,
     "from_dlpack(x, /, *, device=None, copy=None, stream=None)\n--\n\n"
     "A ferry.DeviceArray from any DLPack producer (see ferry._interop._from_dlpack)."},
    {"device_array", (PyCFunction)(void (*)(void))device_array_entry,
     METH_FASTCALL | METH_KEYWORDS,
     "device_array(obj, *, validate=True)\n--\n\n"
     "A DeviceArray from any producer, without copying:\n\n"
     "- __arrow_c_device_array__ (pyarrow, nanoarrow, cuDF, ferry): the sync\n"
     "  event is kept and travels with the array;\n"
     "- __arrow_c_array__ (CPU Arrow data);\n"
     "- __dlpack__ (NumPy, PyTorch, CuPy, JAX): see from_dlpack;\n"
     "- __cuda_array_interface__ (Numba, CuPy): see from_cuda_array_interface.\n\n"
     "With validate (the default: DEFAULT; \"full\" also checks every offset\n"
     "and UTF-8 byte) the structure is checked first and a broken producer is\n"
     "refused with InvalidArgumentError naming what is wrong; validate=False\n"
     "(or \"none\") is the caller's promise."},
    {"bind_device_array", bind_device_array, METH_O,
     "bind_device_array(slow): the Python path of device_array (every other protocol)."},
    {"bind_classes", bind_classes, METH_VARARGS,
     "bind_classes(DeviceArray, slow_from_dlpack): the classes the C paths create."},
    {"new_ref", new_ref, METH_O, "Holds a reference for C; returns its address."},
    {"drop_ref", drop_ref, METH_O, "Drops a reference made by new_ref (by address)."},
    {"live_refs", live_refs, METH_NOARGS, "References C holds now."},
    {"validate_level", validate_level_py, METH_O,
     "validate_level(validate): -1 (none), 0 (DEFAULT) or 1 (FULL) for a validate argument."},
    {"release_hook_address", release_hook_address, METH_NOARGS,
     "Address of the FerryReleaseHook that drops a new_ref reference."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "ferry._native",
    "The C half of ferry's Python package (capsules, DLPack, ownership, trampolines).", -1,
    module_methods};

PyMODINIT_FUNC PyInit__native(void) {
  if (PyType_Ready(&SchemaBaseType) < 0 || PyType_Ready(&ArrayBaseType) < 0 ||
      PyType_Ready(&PinType) < 0 ||
      PyType_Ready(&BufferOwnerType) < 0 || PyType_Ready(&StreamBaseType) < 0)
    return NULL;
  g_str_dlpack = PyUnicode_InternFromString("__dlpack__");
  g_str_dlpack_device = PyUnicode_InternFromString("__dlpack_device__");
  g_str_stream = PyUnicode_InternFromString("stream");
  g_str_max_version = PyUnicode_InternFromString("max_version");
  g_str_dl_device = PyUnicode_InternFromString("dl_device");
  g_str_copy = PyUnicode_InternFromString("copy");
  g_str_validate = PyUnicode_InternFromString("validate");
  g_str_arrow_c_device_array = PyUnicode_InternFromString("__arrow_c_device_array__");
  g_str_arrow_c_array = PyUnicode_InternFromString("__arrow_c_array__");
  g_str_move = PyUnicode_InternFromString("move");
  g_str_schema = PyUnicode_InternFromString("schema");
  g_str_array_address = PyUnicode_InternFromString("array_address");
  g_str_schema_address = PyUnicode_InternFromString("schema_address");
  if (!g_str_array_address || !g_str_schema_address) return NULL;
  g_str_get_schema = PyUnicode_InternFromString("_ferry_get_schema");
  g_str_null_count = PyUnicode_InternFromString("null_count");
  g_str_offset = PyUnicode_InternFromString("offset");
  g_str_children = PyUnicode_InternFromString("children");
  g_str_dictionary = PyUnicode_InternFromString("dictionary");
  g_str_device = PyUnicode_InternFromString("device");
  g_str_cpu = PyUnicode_InternFromString("cpu");
  if (!g_str_move || !g_str_schema || !g_str_get_schema || !g_str_null_count || !g_str_offset || !g_str_children ||
      !g_str_dictionary || !g_str_device || !g_str_cpu)
    return NULL;
  /* Interned, as Python's own keyword names are: producers that parse
   * keywords (NumPy) match them by pointer first and fall back to comparing
   * the characters. */
  g_kwnames_max_version = g_str_max_version ? PyTuple_Pack(1, g_str_max_version) : NULL;
  g_max_version = Py_BuildValue("(ii)", DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION);
  if (!g_str_dlpack || !g_str_dlpack_device || !g_str_stream || !g_str_max_version ||
      !g_str_dl_device || !g_str_copy || !g_str_validate || !g_kwnames_max_version ||
      !g_max_version)
    return NULL;
  g_closed_error = PyErr_NewExceptionWithDoc(
      "ferry.ClosedError",
      "The object was closed (released, moved or handed on), here or by another thread, "
      "before this call could use it.",
      PyExc_ValueError, NULL);
  if (g_closed_error == NULL) return NULL;
  PyObject* m = PyModule_Create(&module_def);
  if (m == NULL) return NULL;
  Py_INCREF(g_closed_error);
  if (PyModule_AddObject(m, "ClosedError", g_closed_error) < 0) {
    Py_DECREF(g_closed_error);
    Py_DECREF(m);
    return NULL;
  }
  Py_INCREF(&SchemaBaseType);
  Py_INCREF(&ArrayBaseType);
  Py_INCREF(&StreamBaseType);
  if (PyModule_AddObject(m, "SchemaBase", (PyObject*)&SchemaBaseType) < 0 ||
      PyModule_AddObject(m, "ArrayBase", (PyObject*)&ArrayBaseType) < 0 ||
      PyModule_AddObject(m, "StreamBase", (PyObject*)&StreamBaseType) < 0) {
    Py_DECREF(m);
    return NULL;
  }
  return m;
}
