/* Error messages (ferry's own and the GPU drivers') and errno names. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "backend.h"
#include "internal.h"

int ferry__set_error_v(struct FerryError* error, int code, const char* fmt, va_list args) {
  if (error != NULL) {
    vsnprintf(error->message, sizeof(error->message), fmt, args);
  }
  return code;
}

int ferry__set_error(struct FerryError* error, int code, const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  ferry__set_error_v(error, code, fmt, args);
  va_end(args);
  return code;
}

void ferry_error_init(struct FerryError* error) {
  if (error != NULL) error->message[0] = '\0';
}

const char* ferry_error_message(const struct FerryError* error) {
  return error == NULL ? "" : error->message;
}

struct FerryError* ferry_error_new(void) {
  return (struct FerryError*)calloc(1, sizeof(struct FerryError));
}

void ferry_error_free(struct FerryError* error) { free(error); }

const char* ferry_errno_name(int code) {
  switch (code) {
    case 0: return "OK";
    case EPERM: return "EPERM";
    case ENOENT: return "ENOENT";
    case EIO: return "EIO";
    case E2BIG: return "E2BIG";
    case EAGAIN: return "EAGAIN";
    case ENOMEM: return "ENOMEM";
    case EFAULT: return "EFAULT";
    case EBUSY: return "EBUSY";
    case EEXIST: return "EEXIST";
    case ENODEV: return "ENODEV";
    case EINVAL: return "EINVAL";
    case ERANGE: return "ERANGE";
    case ENOSYS: return "ENOSYS";
    case ENOTSUP: return "ENOTSUP";
    case EOVERFLOW: return "EOVERFLOW";
    case ECANCELED: return "ECANCELED";
    case ETIMEDOUT: return "ETIMEDOUT";
    case EALREADY: return "EALREADY";
    case EPROTO: return "EPROTO";
    default: return "EUNKNOWN";
  }
}

int ferry__set_driver_error_v(struct FerryError* error, int code_errno,
                             const struct FerryDriverErrorName* table, size_t table_size,
                             const char* result_type, unsigned int rc, const char* op,
                             const char* fmt, va_list args) {
  char context[512];
  vsnprintf(context, sizeof(context), fmt, args);
  for (size_t i = 0; i < table_size; i++) {
    if (table[i].code == rc) {
      return ferry__set_error(error, code_errno, "[%s][%s] %s (%s)", op, table[i].name,
                             table[i].description, context);
    }
  }
  return ferry__set_error(error, code_errno,
                         "[%s][%s %u] an error ferry has no name for (%s)", op,
                         result_type, rc, context);
}
