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
 *   the C data interface allows.
 *
 * Files: _native.c (this one: errors, the protocol dispatch, Python
 * references held by C, the module and its load()), _native_holders.c
 * (holders, shared exports, capsules), _native_arrays.c (Schema and
 * DeviceArray), _native_imports.c, _native_dlpack.c (and the CUDA Array
 * Interface), _native_streams.c; _native.h is what they share. */
#include "_native.h"

/* ---- libferry, bound at load() ---------------------------------------------------- */

#define FP_DEFINE(name) __typeof__(name)* fp_##name;
FP_FUNCTIONS(FP_DEFINE)
#undef FP_DEFINE
__typeof__(ferry_leak_track)* fp_ferry_leak_track;
__typeof__(ferry_leak_untrack)* fp_ferry_leak_untrack;
int g_leak_report;

void* g_library;
PyObject* g_error_factory;
atomic_llong g_live_refs;
PyObject* g_closed_error;
#define FP_DEFINE_STRING(name, text) PyObject* g_str_##name;
FP_STRINGS(FP_DEFINE_STRING)
#undef FP_DEFINE_STRING

/* ---- errors ----------------------------------------------------------------------- */

/* Raises the package's exception for an errno code; `buffer` selects the
 * BufferError flavour that DLPack and the PyCapsule protocols ask for. */
PyObject* raise_code(int code, const char* message, int buffer) {
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

PyObject* raise_error(int code, const struct FerryError* error, int buffer) {
  return raise_code(code, error->message[0] ? error->message : "(no message)", buffer);
}

int need_library(void) {
  if (g_library == NULL) {
    PyErr_SetString(PyExc_RuntimeError, "ferry._native is not bound to libferry yet");
    return -1;
  }
  return 0;
}

/* need_library, and ferry.DeviceArray known (bind_classes() ran); -1 with
 * RuntimeError otherwise. */
int need_array_class(void) {
  if (need_library() != 0) return -1;
  if (g_array_class == NULL) {
    PyErr_SetString(PyExc_RuntimeError, "ferry._native.bind_classes() was not called");
    return -1;
  }
  return 0;
}

/* An address argument: an int, or anything with __index__ (a NumPy integer),
 * as the Python code these paths replaced accepted through int(). NULL with
 * an exception set on failure (check PyErr_Occurred: 0 is a value too). */
void* address_arg(PyObject* obj) {
  if (PyLong_Check(obj)) return PyLong_AsVoidPtr(obj);
  PyObject* index = PyNumber_Index(obj);
  if (index == NULL) return NULL;
  void* address = PyLong_AsVoidPtr(index);
  Py_DECREF(index);
  return address;
}

/* ---- ferry.device_array: the protocol dispatch ------------------------------------- */

/* device_array(obj, *, validate=True): the Arrow PyCapsule producers in C
 * (the common entry: pyarrow, nanoarrow, Polars, ferry), every other kind in
 * ferry._interop._device_array (DLPack, the CUDA Array Interface, the
 * TypeError). The protocol methods are looked up on the type through its
 * attribute cache (_PyType_Lookup, as CPython's own slot lookups do): a miss
 * costs a probe instead of the AttributeError that hasattr() raises and
 * clears, which made a producer with only __arrow_c_array__ slower than
 * nanoarrow's entry. A call the C path does not take (obj=..., another
 * keyword) goes to the Python path, which hands capsule producers back. */
static PyObject* g_device_array_slow;  /* ferry._interop._device_array */

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
#define FP_INTERN(name, text) \
  if ((g_str_##name = PyUnicode_InternFromString(text)) == NULL) return NULL;
  FP_STRINGS(FP_INTERN)
#undef FP_INTERN
  g_kwnames_max_version = PyTuple_Pack(1, g_str_max_version);
  g_max_version = Py_BuildValue("(ii)", DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION);
  if (!g_kwnames_max_version || !g_max_version) return NULL;
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

