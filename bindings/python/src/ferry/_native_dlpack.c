/* ferry._native: DLPack, both ways: DeviceArray.__dlpack__ and the
 * imports of DLPack capsules (ferry.from_dlpack), and one-dimensional memory
 * (the CUDA Array Interface) through the core's DLPack import. */
#include "_native.h"

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

/* __dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None).
 * The fast path (own device, no copy) is here; the rest goes to the Python
 * method _dlpack_copy, which copies through ferry and calls back. */
PyObject* ArrayBase_dlpack(ArrayBase* self, PyObject* const* args, Py_ssize_t nargs,
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
    if (keyword_is(key, g_str_max_version)) max_version = value;
    else if (keyword_is(key, g_str_stream)) stream_obj = value;
    else if (keyword_is(key, g_str_dl_device)) dl_device = value;
    else if (keyword_is(key, g_str_copy)) copy = value;
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

PyObject* ArrayBase_dlpack_device(ArrayBase* self, PyObject* unused) {
  if (array_open(self) != 0) return NULL;
  struct ArrowDeviceArray* a = &self->holder->array;
  long long id = a->device_type == ARROW_DEVICE_CPU ? 0 : a->device_id;
  return Py_BuildValue("(iL)", (int)a->device_type, id);
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
Holder* holder_from_dlpack(DLManagedTensorVersioned* tensor, int buffer, int* taken) {
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
int attach_event_stream(Holder* h, PyObject* event_stream) {
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
PyObject* import_dlpack(PyObject* module, PyObject* args) {
  PyObject *cls, *capsule, *event_stream = Py_None;
  if (!PyArg_ParseTuple(args, "OO|O", &cls, &capsule, &event_stream)) return NULL;
  if (need_library() != 0 || check_array_class(cls) == NULL) return NULL;
  return import_dlpack_capsule((PyTypeObject*)cls, capsule, event_stream);
}

/* ferry.from_dlpack(x, *, device=None, copy=None, stream=None): the
 * zero-copy CPU case runs here; everything else (devices, streams, copies,
 * legacy producers, capsules) calls the Python implementation bound by
 * bind_classes(). */
PyObject* g_from_dlpack_slow;  /* ferry._interop._from_dlpack */
PyObject* g_kwnames_max_version;
PyObject* g_max_version;

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

PyObject* from_dlpack(PyObject* module, PyObject* const* args, Py_ssize_t nargs,
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

