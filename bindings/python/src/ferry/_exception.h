/* One Python exception as ferry reports a failure: an errno code and a
 * message. Shared by the extension (ferry._native: Python stream producers)
 * and the cross-language test plugin (plugin/ferry_it_python.c), which
 * compiles _exception.c in as well. */
#ifndef FERRY_PY_EXCEPTION_H
#define FERRY_PY_EXCEPTION_H

#include <Python.h>
#include <stddef.h>

/* Takes (clears) the pending Python exception, which must be set, and
 * returns its errno code: a ferry.Error's `code` (EIO when not positive), EIO
 * for any other exception. Writes its text into `message` (`size` bytes,
 * the caller's): the ferry.Error's `message`, else "TypeName: str(value)".
 * Needs the GIL. A ferry error keeps its code and bare message, so an
 * injected failure travels verbatim. */
__attribute__((visibility("hidden"))) int ferry_py_take_exception(char* message,
                                                                  size_t size);

#endif
