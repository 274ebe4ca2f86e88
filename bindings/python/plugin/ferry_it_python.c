/* The Python participant of ferry's cross-language tests: a C shim that
 * implements the entry points of core/include/ferry/ferry_it.h (and the
 * benchmark's ferry_it_bench.h) in Python, in plugin/ferry_it.py on top of
 * the installed ferry package.
 *
 * Interpreter: when the host is not Python, the first call embeds CPython,
 * configured from the virtual environment the plugin was built for
 * (FERRY_PYTHON_EXECUTABLE at build time, $FERRY_PYTHON to override), so
 * the venv's site-packages (ferry, cffi) are found; no signal handlers are
 * installed and the interpreter is never finalized (other runtimes may still
 * release Python-made data at exit). When the host is Python already
 * (pytest loading this library), that interpreter is used.
 *
 * Threads: every entry takes the GIL with PyGILState_Ensure, which also
 * attaches threads Python has never seen (a Go M, a JVM thread), and
 * releases it before returning; the thread that initialized the interpreter
 * gives the GIL up right away. ferry's package releases the GIL around
 * every C call, so a Python consumer may pull from a Python producer on the
 * same or another thread.
 *
 * Errors: no Python exception leaves this file. A ferry.FerryError keeps
 * its errno code and bare message; anything else becomes EIO with
 * "Type: message". The message is per thread (ferry_it_last_error). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "_exception.h"
#include "ferry/ferry.h"
#include "ferry/ferry_it.h"
#include "ferry_it_bench.h"

#ifndef FERRY_PYTHON_EXECUTABLE
#define FERRY_PYTHON_EXECUTABLE ""
#endif
#ifndef FERRY_PYTHON_PLUGIN_DIR
#define FERRY_PYTHON_PLUGIN_DIR "."
#endif

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static PyObject* g_module; /* ferry_it, imported once */
static int g_init_code;
static char g_init_message[FERRY_ERROR_MESSAGE_SIZE];
static _Thread_local char g_last_error[FERRY_ERROR_MESSAGE_SIZE];

static void set_last_error(const char* message) {
  snprintf(g_last_error, sizeof(g_last_error), "%s", message ? message : "");
}

static void initialize(void) {
  int embedded = 0;
  if (!Py_IsInitialized()) {
    /* Hosts dlopen this library with RTLD_LOCAL, so libpython's symbols
     * are not visible to the extension modules Python loads later (_struct,
     * ferry._native): make the already-loaded libpython global. */
    Dl_info info;
    if (dladdr((void*)&Py_InitializeFromConfig, &info) != 0 && info.dli_fname != NULL)
      dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_GLOBAL);
    PyConfig config;
    PyConfig_InitPythonConfig(&config);
    config.install_signal_handlers = 0; /* the host owns the signals */
    config.parse_argv = 0;
    const char* executable = getenv("FERRY_PYTHON");
    if (executable == NULL || executable[0] == '\0') executable = FERRY_PYTHON_EXECUTABLE;
    PyStatus status = PyStatus_Ok();
    if (executable[0] != '\0') {
      /* The venv's python: path configuration finds pyvenv.cfg beside it. */
      status = PyConfig_SetBytesString(&config, &config.program_name, executable);
      if (!PyStatus_Exception(status))
        status = PyConfig_SetBytesString(&config, &config.executable, executable);
    }
    if (!PyStatus_Exception(status)) status = Py_InitializeFromConfig(&config);
    PyConfig_Clear(&config);
    if (PyStatus_Exception(status)) {
      g_init_code = EIO;
      snprintf(g_init_message, sizeof(g_init_message), "cannot start Python (%s): %s",
               executable, status.err_msg ? status.err_msg : "unknown error");
      return;
    }
    embedded = 1;
  }
  PyGILState_STATE gil = PyGILState_Ensure();
  const char* dir = getenv("FERRY_PYTHON_PLUGIN_DIR");
  if (dir == NULL || dir[0] == '\0') dir = FERRY_PYTHON_PLUGIN_DIR;
  PyObject* sys_path = PySys_GetObject("path"); /* borrowed */
  PyObject* entry = PyUnicode_FromString(dir);
  if (sys_path == NULL || entry == NULL || PyList_Insert(sys_path, 0, entry) != 0 ||
      (g_module = PyImport_ImportModule("ferry_it")) == NULL) {
    char message[FERRY_ERROR_MESSAGE_SIZE / 2];
    ferry_py_take_exception(message, sizeof(message));
    g_init_code = EIO;
    snprintf(g_init_message, sizeof(g_init_message),
             "loading the Python plugin (ferry_it from %.300s) failed: %s", dir, message);
  }
  Py_XDECREF(entry);
  PyGILState_Release(gil);
  /* The initializing thread keeps its thread state but gives up the GIL. */
  if (embedded) PyEval_SaveThread();
}

/* Calls ferry_it.<function>(*args) built from `format`; 0 or an errno code,
 * with the integer result (for int-returning functions) in *result. */
static int call_python(const char* function, long long* result, const char* format, ...) {
  pthread_once(&g_once, initialize);
  if (g_init_code != 0) {
    set_last_error(g_init_message);
    return g_init_code;
  }
  PyGILState_STATE gil = PyGILState_Ensure();
  int code = 0;
  va_list args;
  va_start(args, format);
  PyObject* arguments = Py_VaBuildValue(format, args);
  va_end(args);
  PyObject* callable = arguments ? PyObject_GetAttrString(g_module, function) : NULL;
  PyObject* value = callable ? PyObject_CallObject(callable, arguments) : NULL;
  if (value == NULL) {
    char message[FERRY_ERROR_MESSAGE_SIZE];
    code = ferry_py_take_exception(message, sizeof(message));
    set_last_error(message);
  } else if (result != NULL) {
    *result = PyLong_AsLongLong(value);
    if (*result == -1 && PyErr_Occurred()) {
      char message[FERRY_ERROR_MESSAGE_SIZE];
      code = ferry_py_take_exception(message, sizeof(message));
      set_last_error(message);
    }
  }
  Py_XDECREF(value);
  Py_XDECREF(callable);
  Py_XDECREF(arguments);
  PyGILState_Release(gil);
  return code;
}

#define ADDRESS(p) ((unsigned long long)(uintptr_t)(p))

/* Exports the case into consumer-allocated structs (see ferry_it.h). */
int ferry_it_export_array(const char* case_spec, struct ArrowSchema* schema_out,
                          struct ArrowDeviceArray* array_out) {
  set_last_error("");
  if (case_spec == NULL || schema_out == NULL || array_out == NULL) {
    set_last_error("case_spec, schema_out and array_out must not be NULL");
    return EINVAL;
  }
  int code = call_python("export_array", NULL, "(sKK)", case_spec, ADDRESS(schema_out),
                         ADDRESS(array_out));
  if (code != 0) { /* on failure both stay released, as ferry_it.h promises */
    ferry_schema_release(schema_out);
    ferry_device_array_release(array_out);
  }
  return code;
}

/* Checks and takes ownership of `schema` and `array` (released either way). */
int ferry_it_check_array(const char* case_spec, struct ArrowSchema* schema,
                         struct ArrowDeviceArray* array) {
  set_last_error("");
  int code = EINVAL;
  if (case_spec == NULL || schema == NULL || array == NULL) {
    set_last_error("case_spec, schema and array must not be NULL");
  } else {
    code = call_python("check_array", NULL, "(sKK)", case_spec, ADDRESS(schema), ADDRESS(array));
  }
  /* Whatever Python did not take is released here (released structs are
   * left alone). */
  ferry_schema_release(schema);
  ferry_device_array_release(array);
  return code;
}

/* Exports the case's stream into a consumer-allocated struct. */
int ferry_it_export_stream(const char* case_spec, struct ArrowDeviceArrayStream* out) {
  set_last_error("");
  if (case_spec == NULL || out == NULL) {
    set_last_error("case_spec and out must not be NULL");
    return EINVAL;
  }
  int code = call_python("export_stream", NULL, "(sK)", case_spec, ADDRESS(out));
  if (code != 0) ferry_array_stream_release(out);
  return code;
}

/* Reads and checks the stream, taking ownership of it (released either way). */
int ferry_it_check_stream(const char* case_spec, struct ArrowDeviceArrayStream* stream) {
  set_last_error("");
  int code = EINVAL;
  if (case_spec == NULL || stream == NULL) {
    set_last_error("case_spec and stream must not be NULL");
  } else {
    code = call_python("check_stream", NULL, "(sK)", case_spec, ADDRESS(stream));
  }
  ferry_array_stream_release(stream);
  return code;
}

/* Allocations owned by Python exports that are live now (-1 when Python
 * cannot be asked). */
int64_t ferry_it_live_allocations(void) {
  long long count = 0;
  return call_python("live_allocations", &count, "()") == 0 ? (int64_t)count : -1;
}

/* The last failure's message on this thread (owned by the plugin). */
const char* ferry_it_last_error(void) { return g_last_error; }

/* ---- async device streams (ferry_it.h; core/harness/async/ferry_it_async.h) --------- */

/* The three async entry points come from the generic layer over the stream
 * entry points above: the core's async producer pushes the Python stream
 * from a thread ferry starts, and the checking consumer hands the batches,
 * as a stream, to check_stream on a thread of that layer. Python runs on
 * those foreign threads through the entries above (PyGILState_Ensure), and a
 * Python consumer blocked in get_next has released the GIL (ferry's stream
 * iteration does), so producer and consumer threads never wait on each
 * other's GIL. A failure's message is copied into this plugin's per-thread
 * last error. Built only with the generic layer (FERRY_IT_HAVE_ASYNC). */
#ifdef FERRY_IT_HAVE_ASYNC
#include "ferry_it_async.h"

int ferry_it_export_async(const char* case_spec, struct ArrowAsyncDeviceStreamHandler* handler) {
  set_last_error("");
  int rc = ferry_it_async_export_generic(case_spec, handler, ferry_it_export_stream,
                                         ferry_it_last_error, 0);
  if (rc != 0) set_last_error(ferry_it_async_last_error());
  return rc;
}

int ferry_it_check_async(const char* case_spec, struct ArrowAsyncDeviceStreamHandler* handler,
                         void** ticket) {
  set_last_error("");
  int rc = ferry_it_async_check_generic(case_spec, handler, ticket, ferry_it_check_stream,
                                        ferry_it_last_error);
  if (rc != 0) set_last_error(ferry_it_async_last_error());
  return rc;
}

int ferry_it_async_result(void* ticket, int64_t timeout_ms) {
  set_last_error("");
  /* Waiting may be long: a Python thread calling this (a Python host) must
   * not hold the GIL the producer and checker threads need. */
  int rc;
  if (Py_IsInitialized() && PyGILState_Check()) {
    Py_BEGIN_ALLOW_THREADS rc = ferry_it_async_result_generic(ticket, timeout_ms);
    Py_END_ALLOW_THREADS
  } else {
    rc = ferry_it_async_result_generic(ticket, timeout_ms);
  }
  if (rc != 0) set_last_error(ferry_it_async_last_error());
  return rc;
}
#endif

/* ---- benchmark entry points (ferry_it_bench.h) ------------------------------------ */

/* The benchmark's Python state (the one schema of every export) is made by
 * the first benchmark call of any kind, here in C so that the noop, which is
 * half of a pair's floor, stays one plain call into Python. Hosts call the
 * noop before they check or measure anything: a schema made during a checked
 * handoff would count as a live export of that handoff, and one made when the
 * plugin loads would outlive every run that never benchmarks (LeakSanitizer
 * cannot see it held by the never-finalised interpreter). */
static pthread_once_t g_bench_once = PTHREAD_ONCE_INIT;
static int g_bench_code;
static char g_bench_message[FERRY_ERROR_MESSAGE_SIZE];

static void bench_prepare(void) {
  g_bench_code = call_python("bench_prepare", NULL, "()");
  if (g_bench_code != 0) snprintf(g_bench_message, sizeof g_bench_message, "%s", g_last_error);
}

/* 0 once the benchmark's state exists; its error code (last error set) if not. */
static int bench_ready(void) {
  pthread_once(&g_bench_once, bench_prepare);
  if (g_bench_code != 0) set_last_error(g_bench_message);
  return g_bench_code;
}

int64_t ferry_it_bench_noop(int64_t x) {
  long long out = 0;
  if (bench_ready() != 0) return INT64_MIN;
  return call_python("bench_noop", &out, "(L)", (long long)x) == 0 ? (int64_t)out : INT64_MIN;
}

int ferry_it_bench_export_array(int64_t length, struct ArrowSchema* schema_out,
                                struct ArrowDeviceArray* array_out) {
  if (schema_out == NULL || array_out == NULL) {
    set_last_error("schema_out and array_out must not be NULL");
    return EINVAL;
  }
  if (bench_ready() != 0) return g_bench_code;
  return call_python("bench_export_array", NULL, "(LKK)", (long long)length, ADDRESS(schema_out),
                     ADDRESS(array_out));
}

int ferry_it_bench_consume_array(struct ArrowSchema* schema, struct ArrowDeviceArray* array) {
  int code = EINVAL;
  if (schema == NULL || array == NULL) {
    set_last_error("schema and array must not be NULL");
  } else {
    code = call_python("bench_consume_array", NULL, "(KK)", ADDRESS(schema), ADDRESS(array));
  }
  ferry_schema_release(schema);
  ferry_device_array_release(array);
  return code;
}

int ferry_it_bench_export_stream(int64_t length, int64_t batches,
                                 struct ArrowDeviceArrayStream* out) {
  if (out == NULL) {
    set_last_error("out must not be NULL");
    return EINVAL;
  }
  if (bench_ready() != 0) return g_bench_code;
  return call_python("bench_export_stream", NULL, "(LLK)", (long long)length, (long long)batches,
                     ADDRESS(out));
}

int ferry_it_bench_consume_stream(struct ArrowDeviceArrayStream* stream) {
  int code = EINVAL;
  if (stream == NULL) {
    set_last_error("stream must not be NULL");
  } else {
    code = call_python("bench_consume_stream", NULL, "(K)", ADDRESS(stream));
  }
  ferry_array_stream_release(stream);
  return code;
}
