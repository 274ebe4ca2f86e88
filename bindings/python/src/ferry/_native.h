/* ferry._native's internal header: what its C files share (the libferry
 * functions bound at load(), the holders and the Python types' structs, and
 * the functions one file calls in another). The module's design and
 * ownership model are described at the top of _native.c. Not installed;
 * every name here is hidden from other shared objects. */
#ifndef FERRY_PY_NATIVE_H
#define FERRY_PY_NATIVE_H

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

#pragma GCC visibility push(hidden)

/* ---- libferry, bound at load() (_native.c) ----------------------------------------- */

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

#define FP_DECLARE(name) extern __typeof__(name)* fp_##name;
FP_FUNCTIONS(FP_DECLARE)
#undef FP_DECLARE

/* The leak report's registry (optional: a libferry older than the report
 * lacks them, and then nothing is tracked). */
extern __typeof__(ferry_leak_track)* fp_ferry_leak_track;
extern __typeof__(ferry_leak_untrack)* fp_ferry_leak_untrack;
extern int g_leak_report; /* FERRY_LEAK_REPORT is on (read at load) */

/* Whether the interpreter is shutting down (public from Python 3.13 on). */
#if PY_VERSION_HEX >= 0x030D0000
#define FP_FINALIZING() Py_IsFinalizing()
#else
#define FP_FINALIZING() _Py_IsFinalizing()
#endif

extern void* g_library;            /* dlopen handle of the shared libferry */
extern PyObject* g_error_factory;  /* ferry._errors.from_code(code, message, buffer) */
extern atomic_llong g_live_refs;   /* Python references held by C (release hooks) */
extern PyObject* g_closed_error;   /* ferry.ClosedError (a ValueError) */

/* Interned strings, made at import (PyInit__native): g_str_NAME holds TEXT.
 * Keyword names are interned as Python's own are, so that a callee that
 * parses keywords (NumPy) matches them by pointer first. */
#define FP_STRINGS(X)                                 \
  X(arrow_c_device_array, "__arrow_c_device_array__") \
  X(arrow_c_array, "__arrow_c_array__")               \
  X(dlpack, "__dlpack__")                             \
  X(dlpack_device, "__dlpack_device__")               \
  X(get_schema, "_ferry_get_schema")                  \
  X(array_address, "array_address")                   \
  X(schema_address, "schema_address")                 \
  X(move, "move")                                     \
  X(validate, "validate")                             \
  X(stream, "stream")                                 \
  X(max_version, "max_version")                       \
  X(dl_device, "dl_device")                           \
  X(copy, "copy")                                     \
  X(null_count, "null_count")                         \
  X(offset, "offset")                                 \
  X(children, "children")                             \
  X(dictionary, "dictionary")                         \
  X(device, "device")                                 \
  X(cpu, "cpu")                                       \
  X(schema, "schema")
#define FP_DECLARE_STRING(name, text) extern PyObject* g_str_##name;
FP_STRINGS(FP_DECLARE_STRING)
#undef FP_DECLARE_STRING

/* ---- holders and the types' structs (_native_holders.c, _native_arrays.c) ----------- */

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

typedef struct {
  PyObject_HEAD SchemaHolder* holder; /* NULL once closed */
} SchemaBase;

typedef struct {
  PyObject_HEAD Holder* holder; /* NULL once closed or moved out */
  int64_t leak_token;           /* the leak report's registration, or 0 */
} ArrayBase;

/* ---- functions and data shared between the files ----------------------------------- */

/* Each is described (what it owns, what it takes) where it is defined: in
 * the file named above it. */

/* _native.c */
PyObject* raise_code(int code, const char* message, int buffer);
PyObject* raise_error(int code, const struct FerryError* error, int buffer);
int need_library(void);
int need_array_class(void);
void* address_arg(PyObject* obj);

/* _native_holders.c */
extern const char kArrayCapsule[];
extern const char kDeviceArrayCapsule[];
extern const char kDeviceStreamCapsule[];
extern const char kSchemaCapsule[];
extern const char kStreamCapsule[];
Holder* holder_new(SchemaHolder* schema);
PyObject* new_capsule(size_t size, const char* name, PyCapsule_Destructor destructor,
                      void** out);
PyObject* schema_capsule_from_holder(SchemaHolder* s);
SchemaHolder* schema_holder_new(void);
int export_failed(int code, const struct FerryError* error);
int shared_array_fill(Holder* h, struct ArrowArray* out);
int shared_device_array_fill(Holder* h, struct ArrowDeviceArray* out);
int shared_schema_fill(SchemaHolder* s, struct ArrowSchema* out);
void array_capsule_destructor(PyObject* capsule);
void device_array_capsule_destructor(PyObject* capsule);
void device_stream_capsule_destructor(PyObject* capsule);
void holder_decref(Holder* h);
void holder_decref_gil(Holder* h);
void holder_incref(Holder* h);
void holder_release_hook(void* user_data);
void schema_holder_decref(SchemaHolder* s);
void schema_holder_incref(SchemaHolder* s);
void stream_capsule_destructor(PyObject* capsule);

/* _native_arrays.c */
extern PyTypeObject ArrayBaseType;
extern PyTypeObject BufferOwnerType;
extern PyTypeObject PinType;
extern PyTypeObject SchemaBaseType;
PyObject* ArrayBase_close(ArrayBase* self, PyObject* unused);
PyObject* array_export(ArrayBase* self, PyObject* schema_addr, PyObject* array_addr,
                       int move);
PyObject* array_object(PyTypeObject* cls, Holder* h);
PyObject* schema_object(PyTypeObject* cls, SchemaHolder* holder);
PyTypeObject* check_array_class(PyObject* cls);
int array_open(ArrayBase* self);
int schema_open(SchemaBase* self);
int validate_holder(Holder* h);
int validate_holder_at(Holder* h, int level);
int validate_level(PyObject* value, int* level);
int validate_shared_holder(Holder* h);
int validate_shared_holder_code(Holder* h, int level, struct FerryError* error);
int64_t leak_track(const char* description);
struct ArrowSchema* requested_schema_arg(PyObject* requested);
void leak_untrack(int64_t* token);
void leak_untrack_at_dealloc(int64_t* token);

/* _native_imports.c */
extern PyObject* g_array_class;
PyObject* bind_from_buffers(PyObject* module, PyObject* args);
PyObject* from_buffers(PyObject* module, PyObject* const* args, Py_ssize_t nargs,
                       PyObject* kwnames);
PyObject* from_c(PyObject* module, PyObject* const* args, Py_ssize_t nargs,
                 PyObject* kwnames);
PyObject* from_capsules(PyObject* module, PyObject* const* args, Py_ssize_t nargs,
                        PyObject* kwnames);
PyObject* import_batch(PyObject* module, PyObject* args);
PyObject* import_capsule_pair(PyTypeObject* cls, PyObject* schema_capsule,
                              PyObject* array_capsule, int level);
PyObject* import_raw(PyObject* module, PyObject* args);
PyObject* import_schema(PyObject* module, PyObject* args);
PyObject* schema_take(PyTypeObject* cls, struct ArrowSchema* schema, int validate);
int keyword_is(PyObject* key, PyObject* name);
int address_pair_args(const char* function, const char* takes, PyObject* const* args,
                      Py_ssize_t nargs, PyObject* kwnames, PyObject* option, PyObject* given[2],
                      PyObject** option_value);

/* _native_dlpack.c */
extern PyObject* g_from_dlpack_slow;
extern PyObject* g_kwnames_max_version;
extern PyObject* g_max_version;
Holder* holder_from_dlpack(DLManagedTensorVersioned* tensor, int buffer, int* taken);
PyObject* ArrayBase_dlpack(ArrayBase* self, PyObject* const* args, Py_ssize_t nargs,
                           PyObject* kwnames);
PyObject* ArrayBase_dlpack_device(ArrayBase* self, PyObject* unused);
PyObject* from_dlpack(PyObject* module, PyObject* const* args, Py_ssize_t nargs,
                      PyObject* kwnames);
PyObject* import_dlpack(PyObject* module, PyObject* args);
int attach_event_stream(Holder* h, PyObject* event_stream);

/* _native_streams.c */
extern PyTypeObject StreamBaseType;
PyObject* export_stream(PyObject* module, PyObject* args);
PyObject* stream_capsule(PyObject* module, PyObject* args);
PyObject* take_stream_capsule(PyObject* module, PyObject* args);

#pragma GCC visibility pop

#endif
