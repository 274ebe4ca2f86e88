/* See _exception.h. */
#define PY_SSIZE_T_CLEAN
#include "_exception.h"

#include <errno.h>
#include <stdio.h>

int ferry_py_take_exception(char* message, size_t size) {
  PyObject *type, *value, *traceback;
  PyErr_Fetch(&type, &value, &traceback);
  PyErr_NormalizeException(&type, &value, &traceback);
  int code = EIO;
  PyObject* text = NULL;
  if (value != NULL) {
    PyObject* code_attr = PyObject_GetAttrString(value, "code");
    PyObject* message_attr = code_attr ? PyObject_GetAttrString(value, "message") : NULL;
    if (code_attr != NULL && PyLong_Check(code_attr) && message_attr != NULL &&
        PyUnicode_Check(message_attr)) {
      long c = PyLong_AsLong(code_attr);
      if (c > 0) code = (int)c;
      text = message_attr;
      Py_INCREF(text);
    } else {
      PyErr_Clear();
      text = PyUnicode_FromFormat("%s: %S",
                                  type ? ((PyTypeObject*)type)->tp_name : "error", value);
    }
    Py_XDECREF(code_attr);
    Py_XDECREF(message_attr);
  }
  const char* utf8 = text ? PyUnicode_AsUTF8(text) : NULL;
  if (utf8 == NULL) PyErr_Clear();
  snprintf(message, size, "%s", utf8 ? utf8 : "Python error (no message)");
  Py_XDECREF(text);
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(traceback);
  return code;
}
