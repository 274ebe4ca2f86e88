/* ferry._native: streams: the C half of ferry.DeviceArrayStream
 * (StreamBase), stream capsules, and Python producers exported through the
 * core's ferry_array_stream_init. */
#include "_native.h"
#include "_exception.h"

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

PyObject* stream_capsule(PyObject* module, PyObject* args) {
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

/* stream_enter_open, then a kept failure is raised again (every read after
 * a failure reports that same failure): 0, or -1 with an exception (and
 * nothing entered). */
static int stream_enter_unfailed(StreamBase* self) {
  if (stream_enter_open(self) != 0) return -1;
  if (self->error_code != 0) {
    stream_leave(self);
    raise_code(self->error_code, self->error_message, 0);
    return -1;
  }
  return 0;
}

/* The producer's get_schema (GIL released) into `out`; the caller has
 * entered the stream. */
static int stream_pull_schema(StreamBase* self, struct ArrowSchema* out,
                              struct FerryError* error) {
  out->release = NULL;
  error->message[0] = '\0';
  int code;
  struct ArrowDeviceArrayStream* raw = self->raw;
  Py_BEGIN_ALLOW_THREADS code = fp_ferry_array_stream_get_schema(raw, out, error);
  Py_END_ALLOW_THREADS
  return code;
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
  if (want == NULL || stream_enter_unfailed(self) != 0) return NULL;
  if (!device && self->raw->device_type != ARROW_DEVICE_CPU) {
    PyObject* refused = capsule_from_stream(self->raw, 0); /* raises the BufferError */
    stream_leave(self);
    return refused;
  }
  struct ArrowSchema have;
  struct FerryError error;
  int code = stream_pull_schema(self, &have, &error);
  struct ArrowDeviceArrayStream* raw = self->raw;
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
  if (stream_enter_unfailed(self) != 0) return NULL;
  struct ArrowSchema schema;
  struct FerryError error;
  int code = stream_pull_schema(self, &schema, &error);
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
  if (schema_open(schema) != 0 || stream_enter_unfailed(self) != 0) return NULL;
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

PyTypeObject StreamBaseType = {
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
PyObject* take_stream_capsule(PyObject* module, PyObject* args) {
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

/* A stream produced in Python: `producer._ferry_get_schema(address)` fills
 * the schema, and each get_next takes the next item of `batches` (an
 * iterator of ferry.DeviceArray) and moves it out; both references are held
 * until the consumer releases the stream. */
typedef struct {
  PyObject* producer;
  PyObject* batches;
} PythonStreamSource;


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
  if (result == NULL) code = ferry_py_take_exception(error->message, sizeof(error->message));
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
  if ((batch != NULL && done == NULL) || PyErr_Occurred()) {
    code = ferry_py_take_exception(error->message, sizeof(error->message));
  }
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
PyObject* export_stream(PyObject* module, PyObject* args) {
  PyObject *producer, *batches, *address;
  int device_type;
  if (!PyArg_ParseTuple(args, "OOiO", &producer, &batches, &device_type, &address)) return NULL;
  if (need_array_class() != 0) return NULL;
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

