/* The consumer: take ownership, validate, bring to the host, read, release. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "example.h"

int example_consume(struct ArrowSchema* schema, struct ArrowDeviceArray* in,
                    struct example_summary* out, struct FerryError* error) {
  struct ArrowDeviceArray mine = {0};
  struct ArrowDeviceArray host = {0};
  ferry_device_array_move(in, &mine); /* ours now, whatever happens below */
  int rc = ferry_validate_device_array(schema, &mine, FERRY_VALIDATE_DEFAULT, NULL, NULL, error);
  if (rc == FERRY_OK && strcmp(ferry_schema_format(schema), "i") != 0) {
    rc = EINVAL;
    if (error != NULL) {
      snprintf(error->message, sizeof error->message, "expected int32 (\"i\"), got \"%s\"",
               ferry_schema_format(schema));
    }
  }
  /* On the CPU a move; from a device a copy, after waiting on the
   * producer's sync event (reading before that would read unfinished data). */
  if (rc == FERRY_OK) {
    rc = ferry_device_array_move_to_device(schema, &mine, ARROW_DEVICE_CPU, -1, &host, error);
  }
  if (rc == FERRY_OK) {
    struct ArrowArray* array = ferry_device_array_array(&host);
    const uint8_t* validity = ferry_array_buffer(array, 0);
    const int32_t* values = ferry_array_buffer(array, 1);
    int64_t offset = ferry_array_offset(array);
    out->length = ferry_array_length(array);
    out->null_count = ferry_array_null_count(array);
    out->sum = 0;
    for (int64_t i = offset; i < offset + out->length; i++) {
      int valid = validity == NULL || (validity[i / 8] >> (i % 8)) & 1;
      if (valid) out->sum += values[i];
    }
  }
  ferry_device_array_release(&host);
  ferry_device_array_release(&mine); /* released already when it was moved or copied */
  ferry_schema_release(schema);
  return rc;
}
