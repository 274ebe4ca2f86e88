/* libFuzzer target: ferry__format_parse / ferry_format_validate on arbitrary
 * bytes. Beyond "no crash", it checks that both entry points agree, that a
 * rejection always has a bounded message naming the format, and that an
 * accepted format yields a layout within the parser's own limits. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  char* format = (char*)malloc(size + 1);
  if (format == NULL) return 0;
  memcpy(format, data, size);
  format[size] = '\0';

  struct FerryFormat parsed;
  struct FerryError error;
  ferry_error_init(&error);
  int rc = ferry__format_parse(format, &parsed, &error);
  if (rc != ferry_format_validate(format, NULL)) abort();
  if (rc != FERRY_OK) {
    size_t n = strlen(error.message);
    if (n == 0 || n >= sizeof error.message) abort();
    if (strncmp(error.message, "format", 6) != 0) abort();
  } else {
    if (parsed.n_fixed_buffers < 0 ||
        parsed.n_fixed_buffers > FERRY_FORMAT_MAX_FIXED_BUFFERS) {
      abort();
    }
    if (parsed.n_union_types < 0 || parsed.n_union_types > FERRY_FORMAT_MAX_UNION_TYPES) {
      abort();
    }
    uint8_t seen[FERRY_FORMAT_MAX_UNION_TYPES] = {0};
    int8_t ids[FERRY_FORMAT_MAX_UNION_TYPES];
    if (parsed.n_union_types > 0) ferry__format_union_type_ids(&parsed, ids);
    for (int32_t i = 0; i < parsed.n_union_types; i++) {
      int8_t id = ids[i];
      if (id < 0 || seen[id]) abort();
      seen[id] = 1;
    }
    if (parsed.timezone != NULL &&
        (parsed.timezone < format || parsed.timezone > format + size)) {
      abort();
    }
    if (parsed.bit_width < 0 || parsed.fixed_size < 0) abort();
  }
  free(format);
  return 0;
}
