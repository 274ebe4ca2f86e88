/* ferry_array_buffer_size: the size in bytes of one buffer of an array,
 * derived from its format, length and offset.
 *
 * Fixed-width layouts need only arithmetic. Variable-size binary reads the
 * last offset and view types read their variadic size list; those few bytes
 * are read in place when the host can dereference the device's memory, and
 * copied to the host through the device backend otherwise. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "backend.h"
#include "buffer_size.h"
#include "format.h"
#include "internal.h"

/* Shared context of one call, for error messages. */
struct FerryBufferSizeCall {
  const char* format; /* the format string, for messages */
  const struct ArrowArray* array;
  ArrowDeviceType device_type;
  int64_t device_id;
  int64_t index;
  struct FerryError* error;
};

#define FERRY_BUFFER_SIZE_PREFIX "buffer %" PRId64 " of an array of format \"%s\": "

static int ferry_buffer_size_fail(const struct FerryBufferSizeCall* call,
                                  const char* reason, ...) FERRY_PRINTF(2, 3);

/* EINVAL with the buffer index, the format and the printf-style reason. */
static int ferry_buffer_size_fail(const struct FerryBufferSizeCall* call,
                                  const char* reason, ...) {
  char what[512];
  va_list args;
  va_start(args, reason);
  vsnprintf(what, sizeof(what), reason, args);
  va_end(args);
  return ferry__set_error(call->error, EINVAL, FERRY_BUFFER_SIZE_PREFIX "%s", call->index,
                         call->format, what);
}

/* Reads `size` bytes at `src` on the call's device into `dst`. */
static int ferry_buffer_size_read(const struct FerryBufferSizeCall* call, void* dst,
                                  const void* src, int64_t size) {
  if (call->device_type == ARROW_DEVICE_CPU) {
    memcpy(dst, src, (size_t)size);
    return FERRY_OK;
  }
  struct FerryError device_error;
  device_error.message[0] = '\0';
  struct FerryDevice* device = NULL;
  struct FerryDevice* host = NULL;
  int rc =
      ferry_device_resolve(call->device_type, call->device_id, &device, &device_error);
  /* Never read outside the device's memory, when its backend can tell (a
   * hostile producer's offsets buffer may be shorter than its length says). */
  if (rc == FERRY_OK) {
    rc = ferry__device_check_pointer(device, src, size, &device_error);
    /* Memory the backend vouches for may be read in place when the host can
     * reach it; unknown memory (ENOTSUP) only through the backend's copy,
     * which refuses what it cannot read instead of crashing. */
    if (rc == FERRY_OK && ferry_device_is_host_accessible(device)) {
      memcpy(dst, src, (size_t)size);
      return FERRY_OK;
    }
    if (rc == ENOTSUP) rc = FERRY_OK;
  }
  if (rc == FERRY_OK)
    rc = ferry_device_resolve(ARROW_DEVICE_CPU, -1, &host, &device_error);
  if (rc == FERRY_OK) {
    rc = ferry_device_memcpy(host, dst, device, src, size, NULL, &device_error);
  }
  if (rc != FERRY_OK) {
    return ferry__set_error(
        call->error, rc,
        FERRY_BUFFER_SIZE_PREFIX "reading %" PRId64 " bytes from device %s:%" PRId64
                                 " failed: %s",
        call->index, call->format, size,
        ferry_device_type_name(call->device_type), call->device_id, device_error.message);
  }
  return FERRY_OK;
}

/* count * width_bytes, or EINVAL when it does not fit in int64. */
static int ferry_buffer_size_multiply(const struct FerryBufferSizeCall* call,
                                      int64_t count, int64_t width_bytes, int64_t* out) {
  if (width_bytes != 0 && count > INT64_MAX / width_bytes) {
    return ferry_buffer_size_fail(
        call, "%" PRId64 " elements of %" PRId64 " bytes overflow int64", count,
        width_bytes);
  }
  *out = count * width_bytes;
  return FERRY_OK;
}

/* The data buffer of binary/utf8 (and large): offsets[offset + length]. */
static int ferry_buffer_size_var_data(const struct FerryBufferSizeCall* call,
                                      const struct FerryFormat* format, int64_t n,
                                      int64_t* out) {
  const void* offsets = call->array->buffers[1];
  /* A length-0 array addresses no byte of its data, and its offsets buffer
   * may hold no entry at all (see FERRY_BUFFER_OFFSETS below): nothing is
   * read, whatever its offset. */
  if (call->array->length == 0) {
    *out = 0;
    return FERRY_OK;
  }
  if (offsets == NULL) {
    /* No offsets, no values addressed: nothing of the data can be read. */
    if (ferry__buffer_may_be_null(format, call->array, 1)) {
      *out = 0;
      return FERRY_OK;
    }
    return ferry_buffer_size_fail(
        call, "the offsets buffer (buffer 1) is NULL but length is %" PRId64,
        call->array->length);
  }
  int64_t last, first;
  int64_t first_index = call->array->offset;
  if (format->offset_bytes == 4) {
    int32_t last32, first32;
    FERRY_RETURN_NOT_OK(ferry_buffer_size_read(call, &last32, (const int32_t*)offsets + n,
                                               sizeof(last32)));
    FERRY_RETURN_NOT_OK(ferry_buffer_size_read(
        call, &first32, (const int32_t*)offsets + first_index, sizeof(first32)));
    last = last32;
    first = first32;
  } else {
    FERRY_RETURN_NOT_OK(
        ferry_buffer_size_read(call, &last, (const int64_t*)offsets + n, sizeof(last)));
    FERRY_RETURN_NOT_OK(ferry_buffer_size_read(
        call, &first, (const int64_t*)offsets + first_index, sizeof(first)));
  }
  if (last < 0) {
    return ferry_buffer_size_fail(
        call, "the last offset (offsets[%" PRId64 "]) is negative (%" PRId64 ")", n,
        last);
  }
  /* Unvalidated offsets (a DEFAULT import) size what a copy reads: the two
   * ends it relies on must at least be in order. (No consumer can tell how
   * large a CPU data buffer is; FULL checks every offset.) */
  if (first < 0 || first > last) {
    return ferry_buffer_size_fail(
        call,
        "the offsets do not address a range: offsets[%" PRId64 "] = %" PRId64
        ", offsets[%" PRId64 "] = %" PRId64,
        first_index, first, n, last);
  }
  *out = last;
  return FERRY_OK;
}

int ferry__buffer_size(const struct FerryFormat* format, const char* format_text,
                       const struct ArrowArray* array, ArrowDeviceType device_type,
                       int64_t device_id, int64_t i, int64_t* size_out,
                       struct FerryError* error) {
  struct FerryBufferSizeCall call = {format_text, array, device_type, device_id, i, error};
  if (array->length < 0 || array->offset < 0 ||
      array->offset > INT64_MAX - array->length) {
    return ferry_buffer_size_fail(&call,
                                  "length (%" PRId64 ") and offset (%" PRId64
                                  ") must be >= 0 and their sum fit in int64",
                                  array->length, array->offset);
  }
  /* A dictionary-encoded array is laid out as its index type, which is what
   * the schema's format names; nothing special is needed here. */
  int64_t expected = format->n_fixed_buffers;
  int64_t n_variadic = 0;
  if (format->is_view) {
    if (array->n_buffers < format->n_fixed_buffers + 1) {
      return ferry_buffer_size_fail(
          &call,
          "a view array needs at least %" PRId64
          " buffers (validity, views, variadic sizes), it has %" PRId64,
          (int64_t)format->n_fixed_buffers + 1, array->n_buffers);
    }
    n_variadic = array->n_buffers - format->n_fixed_buffers - 1;
    expected = array->n_buffers;
  }
  if (array->n_buffers != expected) {
    return ferry_buffer_size_fail(
        &call, "the layout has %" PRId64 " buffers but the array has %" PRId64, expected,
        array->n_buffers);
  }
  if (i < 0 || i >= array->n_buffers) {
    return ferry_buffer_size_fail(
        &call, "index out of range (the array has %" PRId64 " buffers)",
        array->n_buffers);
  }
  if (array->buffers == NULL) {
    return ferry_buffer_size_fail(
        &call, "the buffers table is NULL (n_buffers %" PRId64 ")", array->n_buffers);
  }
  if (array->buffers[i] == NULL) {
    *size_out = 0;
    return FERRY_OK;
  }

  int64_t n = array->offset + array->length;
  if (format->is_view && i >= format->n_fixed_buffers) {
    const void* sizes = array->buffers[array->n_buffers - 1];
    if (i == array->n_buffers - 1) {
      return ferry_buffer_size_multiply(&call, n_variadic, (int64_t)sizeof(int64_t),
                                        size_out);
    }
    int64_t k = i - format->n_fixed_buffers;
    if (sizes == NULL) {
      return ferry_buffer_size_fail(
          &call,
          "variadic data buffer %" PRId64
          " has no size: the variadic sizes buffer (buffer %" PRId64 ") is NULL",
          k, array->n_buffers - 1);
    }
    int64_t size;
    FERRY_RETURN_NOT_OK(
        ferry_buffer_size_read(&call, &size, (const int64_t*)sizes + k, sizeof(size)));
    if (size < 0) {
      return ferry_buffer_size_fail(
          &call, "variadic data buffer %" PRId64 " has a negative size (%" PRId64 ")", k,
          size);
    }
    *size_out = size;
    return FERRY_OK;
  }

  switch (format->roles[i]) {
    case FERRY_BUFFER_VALIDITY: *size_out = n / 8 + (n % 8 != 0); return FERRY_OK;
    case FERRY_BUFFER_DATA:
      if (format->bit_width == 1) {
        *size_out = n / 8 + (n % 8 != 0);
        return FERRY_OK;
      }
      return ferry_buffer_size_multiply(&call, n, format->bit_width / 8, size_out);
    case FERRY_BUFFER_OFFSETS: {
      /* List views address children with (offset, size) pairs: one offset
       * per slot. Every other offsets buffer has one more entry than slots. */
      int is_list_view = format->type == FERRY_TYPE_LIST_VIEW ||
                         format->type == FERRY_TYPE_LARGE_LIST_VIEW;
      /* A length-0 array needs no offset at all: Arrow C++ and nanoarrow
       * accept (and old IPC files hold) empty arrays whose offsets buffer
       * has 0 bytes, so offsets[offset] is never counted (nor read). */
      if (array->length == 0) {
        *size_out = 0;
        return FERRY_OK;
      }
      if (!is_list_view && n == INT64_MAX) {
        return ferry_buffer_size_fail(
            &call,
            "offset + length + 1 offsets overflow int64 (length %" PRId64
            ", offset %" PRId64 ")",
            array->length, array->offset);
      }
      return ferry_buffer_size_multiply(&call, is_list_view ? n : n + 1,
                                        format->offset_bytes, size_out);
    }
    case FERRY_BUFFER_SIZES:
      if (array->length == 0) { /* as the list view's offsets above */
        *size_out = 0;
        return FERRY_OK;
      }
      return ferry_buffer_size_multiply(&call, n, format->offset_bytes, size_out);
    case FERRY_BUFFER_VAR_DATA:
      return ferry_buffer_size_var_data(&call, format, n, size_out);
    case FERRY_BUFFER_TYPE_IDS: *size_out = n; return FERRY_OK;
    case FERRY_BUFFER_UNION_OFFSETS:
      return ferry_buffer_size_multiply(&call, n, 4, size_out);
    case FERRY_BUFFER_VIEWS: return ferry_buffer_size_multiply(&call, n, 16, size_out);
  }
  return ferry_buffer_size_fail(&call, "unknown buffer role %" PRId64 "",
                                (int64_t)format->roles[i]);
}

/* Computes the size of buffer `i` of `array` (format from `schema`) on
 * (device_type, device_id). Borrows everything. */
int ferry_array_buffer_size(const struct ArrowSchema* schema,
                            const struct ArrowArray* array, ArrowDeviceType device_type,
                            int64_t device_id, int64_t i, int64_t* size_out,
                            struct FerryError* error) {
  if (schema == NULL || array == NULL || size_out == NULL) {
    return ferry__set_error(error, EINVAL, "ferry_array_buffer_size: %s is NULL",
                           schema == NULL  ? "schema"
                           : array == NULL ? "array"
                                           : "size_out");
  }
  /* A released struct's pointers may dangle (ferry's own release frees the
   * format string), so nothing of it is read. */
  if (schema->release == NULL || array->release == NULL) {
    return ferry__set_error(error, EINVAL, "ferry_array_buffer_size: %s is released",
                           schema->release == NULL ? "schema" : "array");
  }
  if (schema->format == NULL) {
    return ferry__set_error(error, EINVAL,
                           "ferry_array_buffer_size: the schema's format is NULL");
  }
  struct FerryFormat format;
  struct FerryError format_error;
  format_error.message[0] = '\0';
  if (ferry__format_parse(schema->format, &format, &format_error) != FERRY_OK) {
    return ferry__set_error(error, EINVAL, FERRY_BUFFER_SIZE_PREFIX "bad format: %s", i,
                           schema->format, format_error.message);
  }
  return ferry__buffer_size(&format, schema->format, array, device_type, device_id, i,
                            size_out, error);
}
