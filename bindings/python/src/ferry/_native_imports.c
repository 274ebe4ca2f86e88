/* ferry._native: imports of arrays and schemas (capsules, addresses,
 * record batches) and DeviceArray.from_buffers. */
#include "_native.h"

/* ---- imports ---------------------------------------------------------------------- */

/* Moves an "arrow_schema" and an "arrow_device_array" (or CPU
 * "arrow_array") capsule's structs into a new instance of `cls`; the
 * capsules are left consumed (released). */
PyObject* import_capsule_pair(PyTypeObject* cls, PyObject* schema_capsule,
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

/* from_capsules(schema_capsule, array_capsule, *, validate=True):
 * import_capsule_pair for ferry.DeviceArray, called directly
 * (DeviceArray.from_capsules). */
PyObject* g_array_class; /* ferry.DeviceArray (bind_classes) */

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
  if (need_array_class() != 0) return -1;
  return 0;
}

PyObject* from_capsules(PyObject* module, PyObject* const* args, Py_ssize_t nargs,
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
PyObject* import_raw(PyObject* module, PyObject* args) {
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

PyObject* from_c(PyObject* module, PyObject* const* args, Py_ssize_t nargs,
                 PyObject* kwnames) {
  PyObject* given[2]; /* array, schema */
  PyObject* validate;
  if (address_pair_args("from_c", "2", args, nargs, kwnames, g_str_validate, given, &validate) != 0)
    return NULL;
  int level = FERRY_VALIDATE_DEFAULT;
  if (validate != NULL && validate_level(validate, &level) != 0) return NULL;
  if (given[0] == NULL || given[1] == NULL) {
    PyErr_SetString(PyExc_TypeError,
                    "from_c() needs array_address and schema_address (the array first)");
    return NULL;
  }
  if (need_array_class() != 0) return NULL;
  return import_addresses((PyTypeObject*)g_array_class, given[1], given[0], level);
}

/* import_batch(cls, schema_object, array_address, validate): a stream batch:
 * moves the ArrowDeviceArray at the address in and shares the stream's
 * schema (a SchemaBase) instead of copying it. */
PyObject* import_batch(PyObject* module, PyObject* args) {
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

int keyword_is(PyObject* key, PyObject* name) {
  return key == name || PyUnicode_Compare(key, name) == 0;
}

/* The arguments of f(array_address, schema_address, *, <option>=...), called
 * with the vectorcall convention: the addresses, positional or by keyword,
 * into given[0] (the array) and given[1] (the schema), NULL when absent; the
 * keyword `option`'s value (or NULL) into *option_value. `takes` ("2", "at
 * most 2") is said in the error on too many positional arguments. -1 with
 * TypeError naming `function` on any other argument. */
int address_pair_args(const char* function, const char* takes, PyObject* const* args,
                      Py_ssize_t nargs, PyObject* kwnames, PyObject* option, PyObject* given[2],
                      PyObject** option_value) {
  if (nargs > 2) {
    PyErr_Format(PyExc_TypeError,
                 "%s() takes %s positional arguments (array_address, schema_address), %zd given",
                 function, takes, nargs);
    return -1;
  }
  given[0] = nargs > 0 ? args[0] : NULL;
  given[1] = nargs > 1 ? args[1] : NULL;
  *option_value = NULL;
  for (Py_ssize_t i = 0; kwnames != NULL && i < PyTuple_GET_SIZE(kwnames); i++) {
    PyObject* key = PyTuple_GET_ITEM(kwnames, i);
    PyObject* value = args[nargs + i];
    int slot = keyword_is(key, g_str_array_address)    ? 0
               : keyword_is(key, g_str_schema_address) ? 1
                                                       : -1;
    if (slot >= 0) {
      if (given[slot] != NULL) {
        PyErr_Format(PyExc_TypeError, "%s() got multiple values for argument %R", function, key);
        return -1;
      }
      given[slot] = value;
    } else if (keyword_is(key, option)) {
      *option_value = value;
    } else {
      PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument %R", function, key);
      return -1;
    }
  }
  return 0;
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
PyObject* from_buffers(PyObject* module, PyObject* const* args, Py_ssize_t nargs,
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
PyObject* bind_from_buffers(PyObject* module, PyObject* args) {
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
PyObject* schema_take(PyTypeObject* cls, struct ArrowSchema* schema, int validate) {
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
PyObject* import_schema(PyObject* module, PyObject* args) {
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

