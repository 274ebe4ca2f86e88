/* ferry._native: the C halves of ferry.Schema (SchemaBase) and
 * ferry.DeviceArray (ArrayBase), the readers' pins and host buffers as
 * memoryviews. */
#include "_native.h"

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

int schema_open(SchemaBase* self) {
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

PyTypeObject SchemaBaseType = {
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
PyObject* schema_object(PyTypeObject* cls, SchemaHolder* holder) {
  SchemaBase* obj = (SchemaBase*)cls->tp_alloc(cls, 0);
  if (obj == NULL) return NULL;
  schema_holder_incref(holder);
  obj->holder = holder;
  return (PyObject*)obj;
}

/* ---- ArrayBase: the C half of ferry.DeviceArray ----------------------------------- */

/* The leak report (FERRY_LEAK_REPORT=1): every DeviceArray and stream object
 * that owns something is registered while it does, so the core's report at
 * exit names those never closed. Off, nothing is formatted or called. */
int64_t leak_track(const char* description) {
  if (!g_leak_report || fp_ferry_leak_track == NULL) return 0;
  return fp_ferry_leak_track("python", description);
}

void leak_untrack(int64_t* token) {
  if (*token != 0 && fp_ferry_leak_untrack != NULL) fp_ferry_leak_untrack(*token);
  *token = 0;
}

/* The finalizer's untrack: an object still open when the interpreter shuts
 * down was never closed by the program, so it stays in the report (its
 * memory is released all the same); one collected earlier was only
 * forgotten, and the collector's release is the safety net. */
void leak_untrack_at_dealloc(int64_t* token) {
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

int array_open(ArrayBase* self) {
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

PyObject* ArrayBase_close(ArrayBase* self, PyObject* unused) {
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
struct ArrowSchema* requested_schema_arg(PyObject* requested) {
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
PyObject* array_export(ArrayBase* self, PyObject* schema_addr, PyObject* array_addr,
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
static PyObject* ArrayBase_export_to_c(ArrayBase* self, PyObject* const* args, Py_ssize_t nargs,
                                       PyObject* kwnames) {
  PyObject* given[2]; /* array, schema */
  PyObject* move_arg;
  if (address_pair_args("export_to_c", "at most 2", args, nargs, kwnames, g_str_move, given,
                        &move_arg) != 0)
    return NULL;
  int move = move_arg != NULL ? PyObject_IsTrue(move_arg) : 0;
  if (move < 0) return NULL;
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

PyTypeObject BufferOwnerType = {
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

/* Buffer i of the node of `h` whose schema and array are at the given
 * addresses (Python integers): the work of both _buffer_of methods. */
static PyObject* buffer_of_node(Holder* h, PyObject* schema_addr, PyObject* array_addr,
                                Py_ssize_t i) {
  const struct ArrowSchema* schema = (const struct ArrowSchema*)PyLong_AsVoidPtr(schema_addr);
  const struct ArrowArray* array = (const struct ArrowArray*)PyLong_AsVoidPtr(array_addr);
  if (PyErr_Occurred()) return NULL;
  if (schema == NULL || array == NULL) {
    PyErr_SetString(PyExc_ValueError, "_buffer_of needs two node addresses");
    return NULL;
  }
  return node_buffer(h, schema, array, i);
}

/* _buffer_of(schema_address, array_address, i): buffer i of a child or
 * dictionary node of this array (ferry.ArrayView.buffer). */
static PyObject* ArrayBase_buffer_of(ArrayBase* self, PyObject* args) {
  PyObject *schema_addr, *array_addr;
  Py_ssize_t i;
  if (!PyArg_ParseTuple(args, "OOn", &schema_addr, &array_addr, &i)) return NULL;
  if (array_open(self) != 0) return NULL;
  return buffer_of_node(self->holder, schema_addr, array_addr, i);
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
  return buffer_of_node(self->holder, schema_addr, array_addr, i);
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

PyTypeObject PinType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ferry._native.Pin",
    .tp_basicsize = sizeof(Pin),
    .tp_dealloc = (destructor)Pin_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A reader's reference to an array's or a schema's structs (see _pin()).",
    .tp_methods = Pin_methods,
    .tp_getset = Pin_getset,
};

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

PyTypeObject ArrayBaseType = {
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

PyTypeObject* check_array_class(PyObject* cls) {
  if (!PyType_Check(cls) || !PyType_IsSubtype((PyTypeObject*)cls, &ArrayBaseType)) {
    PyErr_SetString(PyExc_TypeError, "expected an ArrayBase subclass");
    return NULL;
  }
  return (PyTypeObject*)cls;
}

/* Wraps a filled holder (its reference passes to the object). */
PyObject* array_object(PyTypeObject* cls, Holder* h) {
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
int validate_level(PyObject* value, int* level) {
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

int validate_holder(Holder* h) { return validate_holder_at(h, FERRY_VALIDATE_DEFAULT); }

int validate_holder_at(Holder* h, int level) {
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
int validate_shared_holder_code(Holder* h, int level, struct FerryError* error) {
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

int validate_shared_holder(Holder* h) {
  struct FerryError error;
  int code = validate_shared_holder_code(h, FERRY_VALIDATE_DEFAULT, &error);
  if (code != FERRY_OK) {
    raise_error(code, &error, 0);
    return -1;
  }
  return 0;
}

