/* Validation of schemas and device arrays against the C data interface and
 * the columnar format: every finding is reported (not just the first), each
 * naming the rule, the path of the node ("root.children[1].dictionary") and
 * the field that is wrong.
 *
 * The walk never trusts a count it has not checked: pointers are tested for
 * NULL before use and every range is checked before arithmetic on it. Wild
 * (non-NULL but dangling) pointers cannot be detected here; the ferry tool
 * runs validation in a forked child for that reason. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "format.h"
#include "internal.h"

/* Nesting deeper than this is reported instead of followed, which also stops
 * cycles (a child pointing back at its parent) from recursing forever. */
#define FERRY_VALIDATE_MAX_DEPTH 64
/* Path buffer: enough for the maximum depth of ".children[NNN]" segments. */
#define FERRY_VALIDATE_PATH_SIZE 2048
/* Variadic buffer counts above this are reported instead of walked. */
#define FERRY_VALIDATE_MAX_BUFFERS (INT64_C(1) << 32)
/* Device buffers larger than this are not copied to the host for FULL checks. */
#define FERRY_VALIDATE_MAX_COPY (INT64_C(1) << 32)

#define KNOWN_SCHEMA_FLAGS \
  (ARROW_FLAG_DICTIONARY_ORDERED | ARROW_FLAG_NULLABLE | ARROW_FLAG_MAP_KEYS_SORTED)

struct Validator {
  FerryFindingFn on_finding;
  void* user_data;
  struct FerryError* error;
  int64_t n_findings;
  int32_t level;
  char path[FERRY_VALIDATE_PATH_SIZE];
  size_t path_length;

  /* Device of the array being validated. `device` is NULL when it could not
   * be resolved: residency is then skipped, and FULL content checks too
   * unless the memory is the CPU's. */
  ArrowDeviceType device_type;
  int64_t device_id;
  struct FerryDevice* device;
  struct FerryDevice* host;
  int can_read;
  int host_accessible;
};

/* ------------------------------------------------------------------------ */
/* Findings and paths                                                        */
/* ------------------------------------------------------------------------ */

static void report(struct Validator* v, const char* rule, const char* fmt, ...)
    FERRY_PRINTF(3, 4);
static void report(struct Validator* v, const char* rule, const char* fmt, ...) {
  char what[768];
  va_list args;
  va_start(args, fmt);
  vsnprintf(what, sizeof what, fmt, args);
  va_end(args);
  if (v->n_findings == 0) {
    ferry__set_error(v->error, EINVAL, "%s: %s: %s", rule, v->path, what);
  }
  v->n_findings++;
  if (v->on_finding != NULL) v->on_finding(v->user_data, rule, v->path, what);
}

/* Appends a segment to the path; returns the length to restore afterwards. */
static size_t path_push(struct Validator* v, const char* fmt, ...) FERRY_PRINTF(2, 3);
static size_t path_push(struct Validator* v, const char* fmt, ...) {
  size_t saved = v->path_length;
  va_list args;
  va_start(args, fmt);
  int n = vsnprintf(v->path + saved, sizeof v->path - saved, fmt, args);
  va_end(args);
  if (n > 0) {
    v->path_length = saved + (size_t)n;
    if (v->path_length >= sizeof v->path) v->path_length = sizeof v->path - 1;
  }
  return saved;
}

static void path_pop(struct Validator* v, size_t saved) {
  v->path_length = saved;
  v->path[saved] = '\0';
}

static void validator_init(struct Validator* v, FerryFindingFn on_finding,
                           void* user_data, struct FerryError* error, int32_t level) {
  memset(v, 0, sizeof *v);
  v->on_finding = on_finding;
  v->user_data = user_data;
  v->error = error;
  v->level = level;
  v->device_type = ARROW_DEVICE_CPU;
  v->device_id = -1;
  path_push(v, "root");
}

static int validator_finish(struct Validator* v) {
  if (v->n_findings == 0) {
    ferry_error_init(v->error);
    return FERRY_OK;
  }
  return EINVAL;
}

/* ------------------------------------------------------------------------ */
/* Names for messages                                                        */
/* ------------------------------------------------------------------------ */

static const char* type_name(enum FerryTypeId type) {
  switch (type) {
    case FERRY_TYPE_NA: return "null";
    case FERRY_TYPE_BOOL: return "bool";
    case FERRY_TYPE_INT8: return "int8";
    case FERRY_TYPE_UINT8: return "uint8";
    case FERRY_TYPE_INT16: return "int16";
    case FERRY_TYPE_UINT16: return "uint16";
    case FERRY_TYPE_INT32: return "int32";
    case FERRY_TYPE_UINT32: return "uint32";
    case FERRY_TYPE_INT64: return "int64";
    case FERRY_TYPE_UINT64: return "uint64";
    case FERRY_TYPE_HALF_FLOAT: return "float16";
    case FERRY_TYPE_FLOAT: return "float32";
    case FERRY_TYPE_DOUBLE: return "float64";
    case FERRY_TYPE_BINARY: return "binary";
    case FERRY_TYPE_LARGE_BINARY: return "large_binary";
    case FERRY_TYPE_BINARY_VIEW: return "binary_view";
    case FERRY_TYPE_STRING: return "utf8";
    case FERRY_TYPE_LARGE_STRING: return "large_utf8";
    case FERRY_TYPE_STRING_VIEW: return "utf8_view";
    case FERRY_TYPE_DECIMAL: return "decimal";
    case FERRY_TYPE_FIXED_SIZE_BINARY: return "fixed_size_binary";
    case FERRY_TYPE_DATE32: return "date32";
    case FERRY_TYPE_DATE64: return "date64";
    case FERRY_TYPE_TIME32: return "time32";
    case FERRY_TYPE_TIME64: return "time64";
    case FERRY_TYPE_TIMESTAMP: return "timestamp";
    case FERRY_TYPE_DURATION: return "duration";
    case FERRY_TYPE_INTERVAL_MONTHS: return "interval_months";
    case FERRY_TYPE_INTERVAL_DAY_TIME: return "interval_day_time";
    case FERRY_TYPE_INTERVAL_MONTH_DAY_NANO: return "interval_month_day_nano";
    case FERRY_TYPE_LIST: return "list";
    case FERRY_TYPE_LARGE_LIST: return "large_list";
    case FERRY_TYPE_LIST_VIEW: return "list_view";
    case FERRY_TYPE_LARGE_LIST_VIEW: return "large_list_view";
    case FERRY_TYPE_FIXED_SIZE_LIST: return "fixed_size_list";
    case FERRY_TYPE_STRUCT: return "struct";
    case FERRY_TYPE_MAP: return "map";
    case FERRY_TYPE_DENSE_UNION: return "dense_union";
    case FERRY_TYPE_SPARSE_UNION: return "sparse_union";
    case FERRY_TYPE_RUN_END_ENCODED: return "run_end_encoded";
  }
  return "unknown";
}

static const char* role_name(enum FerryBufferRole role) {
  switch (role) {
    case FERRY_BUFFER_VALIDITY: return "validity";
    case FERRY_BUFFER_DATA: return "data";
    case FERRY_BUFFER_OFFSETS: return "offsets";
    case FERRY_BUFFER_SIZES: return "sizes";
    case FERRY_BUFFER_VAR_DATA: return "data";
    case FERRY_BUFFER_TYPE_IDS: return "type_ids";
    case FERRY_BUFFER_UNION_OFFSETS: return "offsets";
    case FERRY_BUFFER_VIEWS: return "views";
  }
  return "unknown";
}

/* Name of buffer `i` of a layout, including the view types' variadic tail. */
static void buffer_label(const struct FerryFormat* f, int64_t i, int64_t n_buffers,
                         char* out, size_t out_size) {
  if (i < f->n_fixed_buffers) {
    snprintf(out, out_size, "buffer %lld (%s)", (long long)i, role_name(f->roles[i]));
  } else if (f->is_view && i == n_buffers - 1) {
    snprintf(out, out_size, "buffer %lld (variadic sizes)", (long long)i);
  } else if (f->is_view) {
    snprintf(out, out_size, "buffer %lld (variadic data %lld)", (long long)i,
             (long long)(i - f->n_fixed_buffers));
  } else {
    snprintf(out, out_size, "buffer %lld", (long long)i);
  }
}

static int is_known_device_type(ArrowDeviceType t) {
  switch (t) {
    case ARROW_DEVICE_CPU:
    case ARROW_DEVICE_CUDA:
    case ARROW_DEVICE_CUDA_HOST:
    case ARROW_DEVICE_OPENCL:
    case ARROW_DEVICE_VULKAN:
    case ARROW_DEVICE_METAL:
    case ARROW_DEVICE_VPI:
    case ARROW_DEVICE_ROCM:
    case ARROW_DEVICE_ROCM_HOST:
    case ARROW_DEVICE_EXT_DEV:
    case ARROW_DEVICE_CUDA_MANAGED:
    case ARROW_DEVICE_ONEAPI:
    case ARROW_DEVICE_WEBGPU:
    case ARROW_DEVICE_HEXAGON: return 1;
    default: return 0;
  }
}

static int is_integer_type(enum FerryTypeId t) {
  return t >= FERRY_TYPE_INT8 && t <= FERRY_TYPE_UINT64;
}

static int is_signed_integer(enum FerryTypeId t) {
  return t == FERRY_TYPE_INT8 || t == FERRY_TYPE_INT16 || t == FERRY_TYPE_INT32 ||
         t == FERRY_TYPE_INT64;
}

/* ------------------------------------------------------------------------ */
/* Schemas                                                                   */
/* ------------------------------------------------------------------------ */

/* Parses the schema's format quietly (the schema walk reports problems);
 * returns 1 when `out` holds a usable layout. */
static int schema_layout(const struct ArrowSchema* schema, struct FerryFormat* out) {
  if (schema == NULL || schema->release == NULL || schema->format == NULL) return 0;
  return ferry__format_parse(schema->format, out, NULL) == FERRY_OK;
}

static void validate_schema_node(struct Validator* v, const struct ArrowSchema* schema,
                                 int depth);

/* Layout-specific rules on the children of a schema whose format parsed. */
static void validate_schema_children_layout(struct Validator* v,
                                            const struct ArrowSchema* schema,
                                            const struct FerryFormat* f) {
  if (f->n_children >= 0 && schema->n_children != f->n_children) {
    report(v, "n_children", "%s schema needs %lld child%s, found n_children = %lld",
           type_name(f->type), (long long)f->n_children, f->n_children == 1 ? "" : "ren",
           (long long)schema->n_children);
    return;
  }
  if (schema->children == NULL) return;
  if (f->type == FERRY_TYPE_MAP && schema->n_children == 1) {
    const struct ArrowSchema* entries = schema->children[0];
    struct FerryFormat ef;
    if (schema_layout(entries, &ef)) {
      size_t saved = path_push(v, ".children[0]");
      if (ef.type != FERRY_TYPE_STRUCT || entries->n_children != 2) {
        report(v, "map",
               "the entries child of a map must be a struct of 2 children "
               "(key, value), found format \"%s\" with %lld children",
               entries->format, (long long)entries->n_children);
      }
      if (entries->flags & ARROW_FLAG_NULLABLE) {
        report(v, "map", "the entries child of a map must not be nullable");
      }
      path_pop(v, saved);
    }
  }
  if (f->type == FERRY_TYPE_RUN_END_ENCODED && schema->n_children == 2) {
    const struct ArrowSchema* run_ends = schema->children[0];
    struct FerryFormat rf;
    if (schema_layout(run_ends, &rf)) {
      size_t saved = path_push(v, ".children[0]");
      if (rf.type != FERRY_TYPE_INT16 && rf.type != FERRY_TYPE_INT32 &&
          rf.type != FERRY_TYPE_INT64) {
        report(v, "run_ends",
               "run ends must be int16, int32 or int64, found format \"%s\"",
               run_ends->format);
      }
      path_pop(v, saved);
    }
  }
}

static void validate_schema_node(struct Validator* v, const struct ArrowSchema* schema,
                                 int depth) {
  if (schema == NULL) {
    report(v, "null", "schema pointer is NULL");
    return;
  }
  if (schema->release == NULL) {
    report(v, "released", "schema is released (release is NULL)");
    return;
  }
  if (depth > FERRY_VALIDATE_MAX_DEPTH) {
    report(v, "depth", "schema nesting is deeper than %d levels (a cycle?)",
           FERRY_VALIDATE_MAX_DEPTH);
    return;
  }
  struct FerryFormat f;
  int have_layout = 0;
  if (schema->format == NULL) {
    report(v, "format", "format is NULL");
  } else {
    struct FerryError format_error;
    ferry_error_init(&format_error);
    if (ferry__format_parse(schema->format, &f, &format_error) != FERRY_OK) {
      report(v, "format", "%s", format_error.message);
    } else {
      have_layout = 1;
    }
  }
  if (schema->flags & ~(int64_t)KNOWN_SCHEMA_FLAGS) {
    report(v, "flags", "flags 0x%llx has unknown bits 0x%llx (known: 0x%x)",
           (unsigned long long)schema->flags,
           (unsigned long long)(schema->flags & ~(int64_t)KNOWN_SCHEMA_FLAGS),
           (unsigned)KNOWN_SCHEMA_FLAGS);
  }
  if (schema->n_children < 0) {
    report(v, "n_children", "n_children is negative (%lld)",
           (long long)schema->n_children);
    return;
  }
  if (schema->n_children > 0 && schema->children == NULL) {
    report(v, "children", "children is NULL but n_children is %lld",
           (long long)schema->n_children);
  }
  if (have_layout) validate_schema_children_layout(v, schema, &f);
  if (schema->dictionary != NULL && have_layout && !is_integer_type(f.type)) {
    report(v, "dictionary",
           "a dictionary-encoded field needs an integer index format, "
           "found \"%s\"",
           schema->format);
  }
  if (schema->children != NULL) {
    for (int64_t i = 0; i < schema->n_children; i++) {
      size_t saved = path_push(v, ".children[%lld]", (long long)i);
      validate_schema_node(v, schema->children[i], depth + 1);
      path_pop(v, saved);
    }
  }
  if (schema->dictionary != NULL) {
    size_t saved = path_push(v, ".dictionary");
    validate_schema_node(v, schema->dictionary, depth + 1);
    path_pop(v, saved);
  }
}

int ferry_validate_schema(const struct ArrowSchema* schema, FerryFindingFn on_finding,
                          void* user_data, struct FerryError* error) {
  struct Validator v;
  validator_init(&v, on_finding, user_data, error, FERRY_VALIDATE_DEFAULT);
  validate_schema_node(&v, schema, 0);
  return validator_finish(&v);
}

/* ------------------------------------------------------------------------ */
/* Reading buffers (FULL level)                                              */
/* ------------------------------------------------------------------------ */

/* A buffer readable by the host: either the original memory (host-accessible
 * devices) or a copy that `owned` holds. */
struct HostView {
  const uint8_t* data;
  int64_t size;
  void* owned;
};

static void host_view_reset(struct HostView* h) {
  free(h->owned);
  memset(h, 0, sizeof *h);
}

/* Makes `size` bytes at `ptr` readable on the host; reports and returns 0
 * when that fails. */
static int host_view_fetch(struct Validator* v, const void* ptr, int64_t size,
                           const char* label, struct HostView* out) {
  memset(out, 0, sizeof *out);
  out->size = size;
  if (size <= 0) {
    out->data = (const uint8_t*)ptr;
    return 1;
  }
  if (v->host_accessible) {
    out->data = (const uint8_t*)ptr;
    return 1;
  }
  if (size > FERRY_VALIDATE_MAX_COPY) {
    report(v, "buffer_size", "%s: %lld bytes is too large to copy for FULL validation",
           label, (long long)size);
    return 0;
  }
  out->owned = malloc((size_t)size);
  if (out->owned == NULL) {
    report(v, "buffer_size", "%s: out of memory copying %lld bytes to the host", label,
           (long long)size);
    return 0;
  }
  struct FerryError copy_error;
  ferry_error_init(&copy_error);
  if (ferry_device_memcpy(v->host, out->owned, v->device, ptr, size, NULL, &copy_error) !=
      FERRY_OK) {
    report(v, "device", "%s: copying %lld bytes to the host failed: %s", label,
           (long long)size, copy_error.message);
    host_view_reset(out);
    return 0;
  }
  out->data = (const uint8_t*)out->owned;
  return 1;
}

static int64_t read_offset(const uint8_t* data, int32_t width, int64_t i) {
  if (width == 8) {
    int64_t value;
    memcpy(&value, data + i * 8, 8);
    return value;
  }
  int32_t value;
  memcpy(&value, data + i * 4, 4);
  return value;
}

/* Reads integer i of a buffer of integer type `t` as int64 (uint64 values
 * above INT64_MAX come back negative, which every caller treats as out of
 * range). */
static int64_t read_integer(const uint8_t* data, enum FerryTypeId t, int64_t i) {
  switch (t) {
    case FERRY_TYPE_INT8: return (int8_t)data[i];
    case FERRY_TYPE_UINT8: return data[i];
    case FERRY_TYPE_INT16: {
      int16_t x;
      memcpy(&x, data + 2 * i, 2);
      return x;
    }
    case FERRY_TYPE_UINT16: {
      uint16_t x;
      memcpy(&x, data + 2 * i, 2);
      return x;
    }
    case FERRY_TYPE_INT32: {
      int32_t x;
      memcpy(&x, data + 4 * i, 4);
      return x;
    }
    case FERRY_TYPE_UINT32: {
      uint32_t x;
      memcpy(&x, data + 4 * i, 4);
      return x;
    }
    case FERRY_TYPE_INT64: {
      int64_t x;
      memcpy(&x, data + 8 * i, 8);
      return x;
    }
    case FERRY_TYPE_UINT64: {
      uint64_t x;
      memcpy(&x, data + 8 * i, 8);
      return (int64_t)x;
    }
    default: return 0;
  }
}

static int bit_is_set(const uint8_t* bits, int64_t i) {
  return (bits[i >> 3] >> (i & 7)) & 1;
}

/* Length of the valid UTF-8 prefix of [s, s + n): n when all is valid. */
static int64_t utf8_valid_prefix(const uint8_t* s, int64_t n) {
  int64_t i = 0;
  while (i < n) {
    uint8_t c = s[i];
    if (c < 0x80) {
      i++;
      continue;
    }
    int64_t need;
    uint32_t cp;
    if (c >= 0xC2 && c <= 0xDF) {
      need = 1;
      cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
      need = 2;
      cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      need = 3;
      cp = c & 0x07;
    } else {
      return i;
    }
    if (need > n - 1 - i) return i; /* truncated sequence */
    for (int64_t k = 1; k <= need; k++) {
      if ((s[i + k] & 0xC0) != 0x80) return i;
      cp = (cp << 6) | (s[i + k] & 0x3F);
    }
    /* Overlong forms, surrogates and values beyond U+10FFFF are invalid. */
    if ((need == 2 && cp < 0x800) || (need == 3 && cp < 0x10000) || cp > 0x10FFFF ||
        (cp >= 0xD800 && cp <= 0xDFFF)) {
      return i;
    }
    i += need + 1;
  }
  return n;
}

/* ------------------------------------------------------------------------ */
/* Arrays                                                                    */
/* ------------------------------------------------------------------------ */

/* Everything the content checks of one node need, read once. */
struct NodeBuffers {
  struct HostView views[FERRY_FORMAT_MAX_FIXED_BUFFERS];
  int fetched[FERRY_FORMAT_MAX_FIXED_BUFFERS];
};

static void node_buffers_reset(struct NodeBuffers* b) {
  for (int i = 0; i < FERRY_FORMAT_MAX_FIXED_BUFFERS; i++) host_view_reset(&b->views[i]);
}

/* Size of buffer i through the shared size computation; -1 when it cannot
 * be computed (the content checks explain why). */
static int64_t buffer_size(struct Validator* v, const struct ArrowSchema* schema,
                           const struct ArrowArray* array, int64_t i) {
  int64_t size = -1;
  if (ferry_array_buffer_size(schema, array, v->device_type, v->device_id, i, &size,
                              NULL) != FERRY_OK) {
    return -1;
  }
  return size;
}

/* Residency of one buffer: reported when the backend says it lives
 * elsewhere; unknown answers (ENOTSUP, no device) are skipped. */
static void check_residency(struct Validator* v, const void* ptr, int64_t size,
                            const char* label) {
  if (v->device == NULL || ptr == NULL) return;
  struct FerryError residency_error;
  ferry_error_init(&residency_error);
  int rc =
      ferry__device_check_pointer(v->device, ptr, size < 0 ? 0 : size, &residency_error);
  if (rc == EFAULT) {
    report(v, "device", "%s at %p (%lld bytes) is not on %s:%lld: %s", label, ptr,
           (long long)size, ferry_device_type_name(v->device_type),
           (long long)v->device_id, residency_error.message);
  } else if (rc != FERRY_OK && rc != ENOTSUP) {
    /* The backend could not answer (a driver error): the residency of this
     * buffer is unknown, which a consumer must hear about. */
    report(v, "device", "%s at %p: residency could not be checked on %s:%lld: %s", label,
           ptr, ferry_device_type_name(v->device_type), (long long)v->device_id,
           residency_error.message);
  }
}

static void validate_array_node(struct Validator* v, const struct ArrowSchema* schema,
                                const struct ArrowArray* array, int depth);

/* FULL checks of the offsets buffer of a variable-size or list layout:
 * entries [offset, offset + length] non-negative, monotone, and the last
 * within `limit` (the data size or the child's length, -1 when unknown). */
static int check_offsets(struct Validator* v, const struct FerryFormat* f,
                         const uint8_t* offsets, const struct ArrowArray* array,
                         int64_t limit, const char* limit_what) {
  int64_t first_index = array->offset;
  int64_t last_index = array->offset + array->length;
  int64_t previous = read_offset(offsets, f->offset_bytes, first_index);
  if (previous < 0) {
    report(v, "offsets", "buffer 1 (offsets): offsets[%lld] = %lld is negative",
           (long long)first_index, (long long)previous);
    return 0;
  }
  for (int64_t i = first_index + 1; i <= last_index; i++) {
    int64_t current = read_offset(offsets, f->offset_bytes, i);
    if (current < previous) {
      report(v, "offsets",
             "buffer 1 (offsets): offsets[%lld] = %lld is less than offsets[%lld] = %lld "
             "(offsets must not decrease)",
             (long long)i, (long long)current, (long long)(i - 1), (long long)previous);
      return 0;
    }
    previous = current;
  }
  if (limit >= 0 && previous > limit) {
    report(v, "offsets",
           "buffer 1 (offsets): last offset offsets[%lld] = %lld exceeds %s %lld",
           (long long)last_index, (long long)previous, limit_what, (long long)limit);
    return 0;
  }
  return 1;
}

/* FULL checks of string/binary views: lengths, inline padding of nothing,
 * variadic references in range, prefixes and (for utf8_view) UTF-8. */
static void check_views(struct Validator* v, const struct FerryFormat* f,
                        const struct ArrowArray* array, const uint8_t* validity,
                        const uint8_t* views) {
  int64_t n_variadic = array->n_buffers - f->n_fixed_buffers - 1;
  int64_t sizes_index = array->n_buffers - 1;
  const void* sizes_ptr = array->buffers[sizes_index];
  int64_t* variadic_sizes = NULL;
  struct HostView* variadic = NULL;
  if (n_variadic > 0) {
    if (sizes_ptr == NULL) {
      report(v, "buffers",
             "buffer %lld (variadic sizes) is NULL but there are %lld "
             "variadic data buffers",
             (long long)sizes_index, (long long)n_variadic);
      return;
    }
    struct HostView sizes_view;
    if (!host_view_fetch(v, sizes_ptr, n_variadic * 8, "variadic sizes", &sizes_view))
      return;
    variadic_sizes = (int64_t*)calloc((size_t)n_variadic, sizeof(int64_t));
    variadic = (struct HostView*)calloc((size_t)n_variadic, sizeof(struct HostView));
    if (variadic_sizes == NULL || variadic == NULL) {
      host_view_reset(&sizes_view);
      free(variadic_sizes);
      free(variadic);
      report(v, "buffer_size", "out of memory reading %lld variadic buffers",
             (long long)n_variadic);
      return;
    }
    memcpy(variadic_sizes, sizes_view.data, (size_t)n_variadic * 8);
    host_view_reset(&sizes_view);
    for (int64_t k = 0; k < n_variadic; k++) {
      char label[96];
      buffer_label(f, f->n_fixed_buffers + k, array->n_buffers, label, sizeof label);
      const void* ptr = array->buffers[f->n_fixed_buffers + k];
      if (variadic_sizes[k] < 0) {
        report(v, "variadic", "%s: size %lld in the variadic sizes buffer is negative",
               label, (long long)variadic_sizes[k]);
        variadic_sizes[k] = 0;
      } else if (ptr == NULL && variadic_sizes[k] > 0) {
        report(v, "buffers", "%s is NULL but its size is %lld", label,
               (long long)variadic_sizes[k]);
        variadic_sizes[k] = 0;
      }
      check_residency(v, ptr, variadic_sizes[k], label);
      if (!host_view_fetch(v, ptr, variadic_sizes[k], label, &variadic[k])) {
        variadic_sizes[k] = 0;
      }
    }
  }
  int is_utf8 = f->type == FERRY_TYPE_STRING_VIEW;
  int64_t reported = 0;
  for (int64_t i = array->offset; i < array->offset + array->length && reported < 8;
       i++) {
    if (validity != NULL && !bit_is_set(validity, i)) continue;
    const uint8_t* view = views + 16 * i;
    int32_t length;
    memcpy(&length, view, 4);
    if (length < 0) {
      report(v, "views", "buffer 1 (views): view[%lld] has negative length %d",
             (long long)i, (int)length);
      reported++;
      continue;
    }
    const uint8_t* bytes;
    if (length <= 12) {
      bytes = view + 4;
    } else {
      int32_t buffer_index, data_offset;
      memcpy(&buffer_index, view + 8, 4);
      memcpy(&data_offset, view + 12, 4);
      if (buffer_index < 0 || buffer_index >= n_variadic) {
        report(v, "views",
               "buffer 1 (views): view[%lld] refers to variadic buffer %d, but there are "
               "%lld",
               (long long)i, (int)buffer_index,
               (long long)(n_variadic < 0 ? 0 : n_variadic));
        reported++;
        continue;
      }
      if (data_offset < 0 ||
          (int64_t)data_offset + length > variadic_sizes[buffer_index]) {
        report(v, "views",
               "buffer 1 (views): view[%lld] bytes [%d, %lld) are outside variadic "
               "buffer %d "
               "of %lld bytes",
               (long long)i, (int)data_offset, (long long)data_offset + length,
               (int)buffer_index, (long long)variadic_sizes[buffer_index]);
        reported++;
        continue;
      }
      bytes = variadic[buffer_index].data + data_offset;
      if (memcmp(bytes, view + 4, 4) != 0) {
        report(
            v, "views",
            "buffer 1 (views): view[%lld] prefix does not match the first 4 bytes of its "
            "data",
            (long long)i);
        reported++;
        continue;
      }
    }
    if (is_utf8 && length > 0) {
      int64_t good = utf8_valid_prefix(bytes, length);
      if (good != length) {
        report(v, "utf8", "value[%lld] is not valid UTF-8 (bad byte 0x%02x at byte %lld)",
               (long long)(i - array->offset), bytes[good], (long long)good);
        reported++;
      }
    }
  }
  for (int64_t k = 0; k < n_variadic && variadic != NULL; k++)
    host_view_reset(&variadic[k]);
  free(variadic);
  free(variadic_sizes);
}

/* Reads a child's integer values (for run ends); returns 0 when unreadable. */
static int fetch_child_values(struct Validator* v, const struct ArrowSchema* child_schema,
                              const struct ArrowArray* child, struct HostView* out) {
  if (child->n_buffers < 2 || child->buffers == NULL || child->buffers[1] == NULL)
    return 0;
  int64_t size = buffer_size(v, child_schema, child, 1);
  if (size < 0) return 0;
  return host_view_fetch(v, child->buffers[1], size, "run ends", out);
}

/* FULL content checks of one node whose layout parsed and whose structure
 * (buffer count, non-NULL buffers, lengths) has been checked. */
static void validate_content(struct Validator* v, const struct ArrowSchema* schema,
                             const struct ArrowArray* array,
                             const struct FerryFormat* f) {
  struct NodeBuffers b;
  memset(&b, 0, sizeof b);
  int64_t end = array->offset + array->length;

  for (int32_t i = 0; i < f->n_fixed_buffers; i++) {
    const void* ptr = array->buffers[i];
    if (ptr == NULL) continue;
    /* Variable data is sized from the offsets, which are checked first. */
    if (f->roles[i] == FERRY_BUFFER_VAR_DATA) continue;
    char label[96];
    buffer_label(f, i, array->n_buffers, label, sizeof label);
    int64_t size = -1;
    struct FerryError size_error;
    ferry_error_init(&size_error);
    if (ferry_array_buffer_size(schema, array, v->device_type, v->device_id, i, &size,
                                &size_error) != FERRY_OK) {
      report(v, "buffer_size", "%s: its size cannot be computed: %s", label,
             size_error.message);
      node_buffers_reset(&b);
      return;
    }
    if (!host_view_fetch(v, ptr, size, label, &b.views[i])) {
      node_buffers_reset(&b);
      return;
    }
    b.fetched[i] = 1;
  }

  const uint8_t* validity = NULL;
  if (f->n_fixed_buffers > 0 && f->roles[0] == FERRY_BUFFER_VALIDITY && b.fetched[0]) {
    validity = b.views[0].data;
    int64_t zeros = 0;
    for (int64_t i = array->offset; i < end; i++) zeros += !bit_is_set(validity, i);
    if (array->null_count != -1 && zeros != array->null_count) {
      report(v, "null_count",
             "null_count is %lld but the validity bitmap has %lld zero bits",
             (long long)array->null_count, (long long)zeros);
    }
  }

  switch (f->type) {
    case FERRY_TYPE_BINARY:
    case FERRY_TYPE_LARGE_BINARY:
    case FERRY_TYPE_STRING:
    case FERRY_TYPE_LARGE_STRING: {
      if (!b.fetched[1]) break;
      const uint8_t* offsets = b.views[1].data;
      if (!check_offsets(v, f, offsets, array, -1, "")) break;
      int64_t data_end = read_offset(offsets, f->offset_bytes, end);
      if (data_end > 0 && array->buffers[2] == NULL) {
        report(v, "buffers", "buffer 2 (data) is NULL but the offsets reach %lld bytes",
               (long long)data_end);
        break;
      }
      check_residency(v, array->buffers[2], data_end, "buffer 2 (data)");
      struct HostView data;
      if (!host_view_fetch(v, array->buffers[2], data_end, "buffer 2 (data)", &data))
        break;
      if (f->type == FERRY_TYPE_STRING || f->type == FERRY_TYPE_LARGE_STRING) {
        int64_t reported = 0;
        for (int64_t i = array->offset; i < end && reported < 8; i++) {
          if (validity != NULL && !bit_is_set(validity, i)) continue;
          int64_t start = read_offset(offsets, f->offset_bytes, i);
          int64_t stop = read_offset(offsets, f->offset_bytes, i + 1);
          if (stop == start) continue;
          int64_t good = utf8_valid_prefix(data.data + start, stop - start);
          if (good != stop - start) {
            report(v, "utf8",
                   "value[%lld] is not valid UTF-8 (bad byte 0x%02x at byte %lld of the "
                   "value)",
                   (long long)(i - array->offset), data.data[start + good],
                   (long long)good);
            reported++;
          }
        }
      }
      host_view_reset(&data);
      break;
    }
    case FERRY_TYPE_BINARY_VIEW:
    case FERRY_TYPE_STRING_VIEW:
      if (b.fetched[1]) check_views(v, f, array, validity, b.views[1].data);
      break;
    case FERRY_TYPE_LIST:
    case FERRY_TYPE_LARGE_LIST:
    case FERRY_TYPE_MAP:
      if (b.fetched[1] && array->children != NULL && array->children[0] != NULL) {
        check_offsets(v, f, b.views[1].data, array, array->children[0]->length,
                      "the child length");
      }
      break;
    case FERRY_TYPE_LIST_VIEW:
    case FERRY_TYPE_LARGE_LIST_VIEW: {
      if (!b.fetched[1] || !b.fetched[2] || array->children == NULL ||
          array->children[0] == NULL) {
        break;
      }
      int64_t child_length = array->children[0]->length;
      int64_t reported = 0;
      for (int64_t i = array->offset; i < end && reported < 8; i++) {
        if (validity != NULL && !bit_is_set(validity, i)) continue;
        int64_t start = read_offset(b.views[1].data, f->offset_bytes, i);
        int64_t size = read_offset(b.views[2].data, f->offset_bytes, i);
        if (start < 0 || size < 0 || start > child_length ||
            size > child_length - start) {
          report(
              v, "offsets",
              "list view [%lld]: offset %lld and size %lld are outside the child length "
              "%lld",
              (long long)i, (long long)start, (long long)size, (long long)child_length);
          reported++;
        }
      }
      break;
    }
    case FERRY_TYPE_DENSE_UNION:
    case FERRY_TYPE_SPARSE_UNION: {
      if (!b.fetched[0]) break;
      int8_t child_of_id[FERRY_FORMAT_MAX_UNION_TYPES];
      memset(child_of_id, -1, sizeof child_of_id);
      for (int32_t k = 0; k < f->n_union_types; k++) {
        child_of_id[f->union_type_ids[k]] = (int8_t)k;
      }
      int64_t reported = 0;
      for (int64_t i = array->offset; i < end && reported < 8; i++) {
        int8_t id = (int8_t)b.views[0].data[i];
        if (id < 0 || child_of_id[id] < 0) {
          report(v, "union",
                 "buffer 0 (type_ids): type_ids[%lld] = %d is not one of the "
                 "union's type ids",
                 (long long)i, (int)id);
          reported++;
          continue;
        }
        if (f->type == FERRY_TYPE_DENSE_UNION && b.fetched[1] &&
            array->children != NULL) {
          const struct ArrowArray* child = array->children[child_of_id[id]];
          int32_t child_offset;
          memcpy(&child_offset, b.views[1].data + 4 * i, 4);
          if (child != NULL && (child_offset < 0 || child_offset >= child->length)) {
            report(v, "union",
                   "buffer 1 (offsets): offsets[%lld] = %d is outside child %d of length "
                   "%lld",
                   (long long)i, (int)child_offset, (int)child_of_id[id],
                   (long long)child->length);
            reported++;
          }
        }
      }
      break;
    }
    case FERRY_TYPE_RUN_END_ENCODED: {
      if (array->children == NULL || array->children[0] == NULL ||
          schema->children == NULL) {
        break;
      }
      const struct ArrowArray* run_ends = array->children[0];
      struct FerryFormat rf;
      if (!schema_layout(schema->children[0], &rf) || !is_signed_integer(rf.type) ||
          run_ends->length < 0 || run_ends->offset < 0) {
        break;
      }
      struct HostView values;
      if (!fetch_child_values(v, schema->children[0], run_ends, &values)) break;
      int64_t previous = 0;
      int ok = 1;
      for (int64_t k = run_ends->offset; k < run_ends->offset + run_ends->length; k++) {
        int64_t run_end = read_integer(values.data, rf.type, k);
        if (run_end <= previous) {
          report(v, "run_ends",
                 "children[0] (run ends): value[%lld] = %lld is not greater "
                 "than the previous run end %lld",
                 (long long)(k - run_ends->offset), (long long)run_end,
                 (long long)previous);
          ok = 0;
          break;
        }
        previous = run_end;
      }
      if (ok && array->length > 0 && previous < end) {
        report(v, "run_ends",
               "children[0] (run ends): the last run end %lld does not cover "
               "offset + length = %lld",
               (long long)previous, (long long)end);
      }
      host_view_reset(&values);
      break;
    }
    default: break;
  }

  /* Dictionary indices: the node's data buffer holds them. */
  if (schema->dictionary != NULL && array->dictionary != NULL &&
      is_integer_type(f->type) && b.fetched[1]) {
    int64_t dictionary_length = array->dictionary->length;
    int64_t reported = 0;
    for (int64_t i = array->offset; i < end && reported < 8; i++) {
      if (validity != NULL && !bit_is_set(validity, i)) continue;
      int64_t index = read_integer(b.views[1].data, f->type, i);
      if (index < 0 || index >= dictionary_length) {
        report(
            v, "dictionary",
            "buffer 1 (indices): index[%lld] = %lld is outside the dictionary of length "
            "%lld",
            (long long)(i - array->offset), (long long)index,
            (long long)dictionary_length);
        reported++;
      }
    }
  }
  node_buffers_reset(&b);
}

/* Lengths children must have, relative to their parent (no buffer reads). */
static void validate_child_lengths(struct Validator* v, const struct ArrowArray* array,
                                   const struct FerryFormat* f) {
  int64_t end = array->offset + array->length;
  for (int64_t i = 0; i < array->n_children; i++) {
    const struct ArrowArray* child = array->children[i];
    if (child == NULL || child->release == NULL) continue;
    int64_t needed = -1;
    const char* why = "";
    if (f->type == FERRY_TYPE_STRUCT || f->type == FERRY_TYPE_SPARSE_UNION) {
      needed = end;
      why = "the parent's offset + length";
    } else if (f->type == FERRY_TYPE_FIXED_SIZE_LIST) {
      if (f->fixed_size > 0 && end > INT64_MAX / f->fixed_size) {
        report(v, "length", "(offset + length) * list size overflows");
        continue;
      }
      needed = end * f->fixed_size;
      why = "(offset + length) * list size";
    }
    if (needed >= 0 && child->length < needed) {
      report(v, "length", "children[%lld] has length %lld, less than %s = %lld",
             (long long)i, (long long)child->length, why, (long long)needed);
    }
  }
  if (f->type == FERRY_TYPE_RUN_END_ENCODED && array->n_children == 2 &&
      array->children[0] != NULL && array->children[1] != NULL &&
      array->children[0]->release != NULL && array->children[1]->release != NULL) {
    if (array->children[0]->length != array->children[1]->length) {
      report(v, "run_ends",
             "children[0] (run ends) has length %lld but children[1] "
             "(values) has length %lld",
             (long long)array->children[0]->length,
             (long long)array->children[1]->length);
    }
    if (array->children[0]->null_count != 0 && array->children[0]->null_count != -1) {
      report(v, "run_ends",
             "children[0] (run ends) must not contain nulls, null_count is "
             "%lld",
             (long long)array->children[0]->null_count);
    }
  }
}

static void validate_array_node(struct Validator* v, const struct ArrowSchema* schema,
                                const struct ArrowArray* array, int depth) {
  if (array == NULL) {
    report(v, "null", "array pointer is NULL");
    return;
  }
  if (array->release == NULL) {
    report(v, "released", "array is released (release is NULL)");
    return;
  }
  if (depth > FERRY_VALIDATE_MAX_DEPTH) {
    report(v, "depth", "array nesting is deeper than %d levels (a cycle?)",
           FERRY_VALIDATE_MAX_DEPTH);
    return;
  }
  struct FerryFormat f;
  int have_layout = schema_layout(schema, &f);
  int sane = 1; /* lengths usable for range arithmetic */

  if (array->length < 0) {
    report(v, "length", "length is negative (%lld)", (long long)array->length);
    sane = 0;
  }
  if (array->offset < 0) {
    report(v, "offset", "offset is negative (%lld)", (long long)array->offset);
    sane = 0;
  }
  if (sane && array->length > INT64_MAX - array->offset - 1) {
    report(v, "length", "offset %lld + length %lld overflows", (long long)array->offset,
           (long long)array->length);
    sane = 0;
  }
  if (array->null_count < -1) {
    report(v, "null_count", "null_count is %lld (only -1 may stand for unknown)",
           (long long)array->null_count);
  } else if (array->length >= 0 && array->null_count > array->length) {
    report(v, "null_count", "null_count %lld exceeds length %lld",
           (long long)array->null_count, (long long)array->length);
  }
  int buffers_usable = 1;
  if (array->n_buffers < 0) {
    report(v, "n_buffers", "n_buffers is negative (%lld)", (long long)array->n_buffers);
    buffers_usable = 0;
  } else if (array->n_buffers > 0 && array->buffers == NULL) {
    report(v, "buffers", "buffers is NULL but n_buffers is %lld",
           (long long)array->n_buffers);
    buffers_usable = 0;
  }
  int children_usable = 1;
  if (array->n_children < 0) {
    report(v, "n_children", "n_children is negative (%lld)",
           (long long)array->n_children);
    children_usable = 0;
  } else if (array->n_children > 0 && array->children == NULL) {
    report(v, "children", "children is NULL but n_children is %lld",
           (long long)array->n_children);
    children_usable = 0;
  }
  if (schema != NULL && schema->release != NULL && schema->n_children >= 0 &&
      array->n_children >= 0 && array->n_children != schema->n_children) {
    report(v, "n_children", "array has %lld children but its schema has %lld",
           (long long)array->n_children, (long long)schema->n_children);
  }
  int schema_has_dictionary =
      schema != NULL && schema->release != NULL && schema->dictionary != NULL;
  if (schema != NULL && schema->release != NULL &&
      schema_has_dictionary != (array->dictionary != NULL)) {
    report(v, "dictionary",
           schema_has_dictionary ? "the schema has a dictionary but the array has none"
                                 : "the array has a dictionary but the schema has none");
  }

  int layout_ok = have_layout && buffers_usable;
  if (layout_ok) {
    int64_t expected = f.n_fixed_buffers;
    if (f.is_view) {
      if (array->n_buffers < expected + 1) {
        report(v, "n_buffers",
               "%s array needs at least %lld buffers (validity, views, variadic sizes), "
               "found n_buffers = %lld",
               type_name(f.type), (long long)(expected + 1), (long long)array->n_buffers);
        layout_ok = 0;
      } else if (array->n_buffers > FERRY_VALIDATE_MAX_BUFFERS) {
        /* The only open-ended count: walking it would read far past any real
         * buffer table (and ferry_array_init refuses as many). */
        report(v, "n_buffers", "%s array has n_buffers = %lld, more than 2^32",
               type_name(f.type), (long long)array->n_buffers);
        layout_ok = 0;
      }
    } else if (array->n_buffers != expected) {
      report(v, "n_buffers", "%s array needs %lld buffer%s, found n_buffers = %lld",
             type_name(f.type), (long long)expected, expected == 1 ? "" : "s",
             (long long)array->n_buffers);
      layout_ok = 0;
    }
  }

  if (layout_ok) {
    for (int32_t i = 0; i < f.n_fixed_buffers; i++) {
      char label[96];
      buffer_label(&f, i, array->n_buffers, label, sizeof label);
      const void* ptr = array->buffers[i];
      if (f.roles[i] == FERRY_BUFFER_VALIDITY) {
        if (ptr == NULL && array->null_count > 0) {
          report(v, "buffers", "%s is NULL but null_count is %lld", label,
                 (long long)array->null_count);
          layout_ok = 0;
        }
      } else if (f.roles[i] == FERRY_BUFFER_VAR_DATA) {
        /* NULL is fine when every value is empty; FULL checks the offsets. */
      } else if (ptr == NULL && array->length > 0) {
        report(v, "buffers", "%s is NULL but length is %lld", label,
               (long long)array->length);
        layout_ok = 0;
      }
    }
  }

  /* Residency of every fixed buffer (the variable-size ones are checked
   * with their real size in FULL mode, where they are read anyway). */
  if (layout_ok && sane) {
    for (int32_t i = 0; i < f.n_fixed_buffers; i++) {
      if (array->buffers[i] == NULL || f.roles[i] == FERRY_BUFFER_VAR_DATA) continue;
      char label[96];
      buffer_label(&f, i, array->n_buffers, label, sizeof label);
      check_residency(v, array->buffers[i], buffer_size(v, schema, array, i), label);
    }
    /* Without FULL content reads, the variable-size buffers get a pointer-only
     * residency check (their sizes would need the contents). */
    if (v->level != FERRY_VALIDATE_FULL || !v->can_read) {
      for (int64_t i = f.n_fixed_buffers; i < array->n_buffers; i++) {
        char label[96];
        buffer_label(&f, i, array->n_buffers, label, sizeof label);
        check_residency(v, array->buffers[i], 0, label);
      }
      if (f.n_fixed_buffers == 3 && f.roles[2] == FERRY_BUFFER_VAR_DATA) {
        check_residency(v, array->buffers[2], 0, "buffer 2 (data)");
      }
    }
  }

  /* Content and child-length rules need the children the layout promises. */
  int children_match = layout_ok && children_usable &&
                       schema->n_children == array->n_children &&
                       (f.n_children < 0 || array->n_children == f.n_children);
  if (layout_ok && sane && children_match) {
    validate_child_lengths(v, array, &f);
  }

  if (layout_ok && sane && children_match && v->level == FERRY_VALIDATE_FULL &&
      v->can_read) {
    validate_content(v, schema, array, &f);
  }

  if (children_usable && array->children != NULL) {
    for (int64_t i = 0; i < array->n_children; i++) {
      const struct ArrowSchema* child_schema = NULL;
      if (schema != NULL && schema->release != NULL && schema->children != NULL &&
          i < schema->n_children) {
        child_schema = schema->children[i];
      }
      size_t saved = path_push(v, ".children[%lld]", (long long)i);
      validate_array_node(v, child_schema, array->children[i], depth + 1);
      path_pop(v, saved);
    }
  }
  if (array->dictionary != NULL) {
    size_t saved = path_push(v, ".dictionary");
    validate_array_node(v, schema_has_dictionary ? schema->dictionary : NULL,
                        array->dictionary, depth + 1);
    path_pop(v, saved);
  }
}

/* Device-level rules of the root: reserved words, device type and id,
 * sync_event; then resolves the device for residency and reads. */
static void validate_device(struct Validator* v, const struct ArrowDeviceArray* array) {
  for (int i = 0; i < 3; i++) {
    if (array->reserved[i] != 0) {
      report(v, "reserved", "reserved[%d] is 0x%llx, the specification requires 0", i,
             (unsigned long long)array->reserved[i]);
    }
  }
  v->device_type = array->device_type;
  v->device_id = array->device_id;
  if (!is_known_device_type(array->device_type)) {
    report(v, "device", "device_type %d is not a known ArrowDeviceType",
           (int)array->device_type);
    return;
  }
  if (array->device_type == ARROW_DEVICE_CPU) {
    if (array->sync_event != NULL) {
      report(v, "sync_event", "sync_event is %p on the CPU; it must be NULL",
             array->sync_event);
    }
    if (array->device_id != -1 && array->device_id != 0) {
      report(v, "device", "device_id %lld on the CPU; it must be -1 (or 0)",
             (long long)array->device_id);
    }
  } else if (array->device_id < 0) {
    report(v, "device", "device_id %lld is negative for device type %s",
           (long long)array->device_id, ferry_device_type_name(array->device_type));
  }

  struct FerryDevice* device = NULL;
  if (ferry_device_resolve(array->device_type, array->device_id, &device, NULL) ==
      FERRY_OK) {
    v->device = device;
    v->host_accessible = ferry_device_is_host_accessible(device);
  }
  if (array->device_type == ARROW_DEVICE_CPU) {
    v->host_accessible = 1;
    v->can_read = 1;
  } else if (v->device != NULL) {
    v->can_read = v->host_accessible ||
                  ferry_device_resolve(ARROW_DEVICE_CPU, -1, &v->host, NULL) == FERRY_OK;
  }

  /* Content reads must not race the producer: wait on its event first. */
  if (v->level == FERRY_VALIDATE_FULL && v->can_read && array->sync_event != NULL &&
      array->device_type != ARROW_DEVICE_CPU) {
    struct FerryError wait_error;
    ferry_error_init(&wait_error);
    if (ferry_device_array_wait(array, NULL, &wait_error) != FERRY_OK) {
      report(v, "sync_event", "waiting on sync_event failed: %s", wait_error.message);
      v->can_read = 0;
    }
  }
}

int ferry_validate_device_array(const struct ArrowSchema* schema,
                                const struct ArrowDeviceArray* array, int32_t level,
                                FerryFindingFn on_finding, void* user_data,
                                struct FerryError* error) {
  struct Validator v;
  validator_init(&v, on_finding, user_data, error, level);
  if (level != FERRY_VALIDATE_DEFAULT && level != FERRY_VALIDATE_FULL) {
    return ferry__set_error(error, EINVAL,
                           "validation level %d is neither DEFAULT (0) nor "
                           "FULL (1)",
                           (int)level);
  }
  validate_schema_node(&v, schema, 0);
  if (array == NULL) {
    report(&v, "null", "device array pointer is NULL");
    return validator_finish(&v);
  }
  if (array->array.release == NULL) {
    report(&v, "released", "device array is released (release is NULL)");
    return validator_finish(&v);
  }
  validate_device(&v, array);
  validate_array_node(&v, schema, &array->array, 0);
  return validator_finish(&v);
}
