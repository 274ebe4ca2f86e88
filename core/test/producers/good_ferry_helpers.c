/* Test producer for `ferry check`: an int32 array and a two-batch stream
 * built with ferry's own producer helpers, so the tool checks them too. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ferry/ferry.h"

#define PU_EXPORT __attribute__((visibility("default")))

static void free_buffer(void* user_data) { free(user_data); }

/* A CPU int32 array of `length` values base, base + 1, ... with no nulls. */
static int make_int32(int32_t base, int64_t length, struct ArrowDeviceArray* out) {
  int32_t* values = (int32_t*)malloc((size_t)length * sizeof(int32_t));
  if (values == NULL) return ENOMEM;
  for (int64_t i = 0; i < length; i++) values[i] = base + (int32_t)i;
  const void* buffers[2] = {NULL, values};
  struct ArrowArray array;
  memset(&array, 0, sizeof array);
  int rc =
      ferry_array_init(&array, length, 0, 0, 2, buffers, 0, free_buffer, values, NULL);
  if (rc != FERRY_OK) {
    free(values);
    return rc;
  }
  rc = ferry_device_array_init(out, &array, ARROW_DEVICE_CPU, -1, NULL, NULL, NULL, NULL);
  if (rc != FERRY_OK) ferry_array_release(&array);
  return rc;
}

PU_EXPORT int produce(struct ArrowSchema* schema, struct ArrowDeviceArray* array) {
  int rc = ferry_schema_init(schema, "i", "values", ARROW_FLAG_NULLABLE, 0, NULL);
  if (rc != FERRY_OK) return rc;
  rc = make_int32(100, 7, array);
  if (rc != FERRY_OK) ferry_schema_release(schema);
  return rc;
}

PU_EXPORT int produce_stream(struct ArrowDeviceArrayStream* out) {
  struct ArrowSchema schema;
  struct ArrowDeviceArray batches[2];
  memset(&schema, 0, sizeof schema);
  memset(batches, 0, sizeof batches);
  int rc = ferry_schema_init(&schema, "i", "values", ARROW_FLAG_NULLABLE, 0, NULL);
  if (rc == FERRY_OK) rc = make_int32(0, 3, &batches[0]);
  if (rc == FERRY_OK) rc = make_int32(10, 5, &batches[1]);
  if (rc == FERRY_OK) {
    rc = ferry_array_stream_init_from_arrays(out, ARROW_DEVICE_CPU, &schema, batches, 2, NULL);
  }
  /* On failure nothing was moved: release whatever was made. */
  ferry_schema_release(&schema);
  ferry_device_array_release(&batches[0]);
  ferry_device_array_release(&batches[1]);
  return rc;
}
