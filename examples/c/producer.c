/* Producers: data the producer owns, handed over without a copy. */
#include <errno.h>
#include <stdlib.h>

#include "example.h"

static int64_t g_released;

int64_t example_released(void) { return g_released; }

/* ---- on the CPU: the producer's own memory ------------------------------- */

struct host_column {
  int32_t* values;
  uint8_t* validity; /* bit i set: value i is valid */
};

static void free_host_column(struct host_column* column) {
  free(column->values);
  free(column->validity);
  free(column);
}

/* The release hook: ferry calls it once, when the consumer releases. */
static void release_host_column(void* user_data) {
  free_host_column(user_data);
  g_released++;
}

int example_produce(int64_t n, struct ArrowSchema* schema, struct ArrowDeviceArray* out,
                    struct FerryError* error) {
  struct host_column* column = calloc(1, sizeof *column);
  if (column == NULL) return ENOMEM;
  column->values = calloc((size_t)n + 1, sizeof(int32_t));
  column->validity = calloc((size_t)n / 8 + 1, 1);
  if (column->values == NULL || column->validity == NULL) {
    free_host_column(column);
    return ENOMEM;
  }
  int64_t nulls = 0;
  for (int64_t i = 0; i < n; i++) {
    column->values[i] = (int32_t)(i + 1);
    if (i % 3 == 2) {
      nulls++;
    } else {
      column->validity[i / 8] |= (uint8_t)(1u << (i % 8));
    }
  }
  int rc = ferry_schema_init(schema, "i", "values", ARROW_FLAG_NULLABLE, 0, error);
  if (rc != FERRY_OK) {
    free_host_column(column);
    return rc;
  }
  const void* buffers[2] = {column->validity, column->values};
  struct ArrowArray array = {0};
  rc = ferry_array_init(&array, n, nulls, 0, 2, buffers, 0, release_host_column, column, error);
  if (rc != FERRY_OK) {
    free_host_column(column); /* on failure the hook did not run: still ours */
    ferry_schema_release(schema);
    return rc;
  }
  /* On the CPU there is nothing to wait for: no sync event. */
  rc = ferry_device_array_init(out, &array, ARROW_DEVICE_CPU, -1, NULL, NULL, NULL, error);
  if (rc != FERRY_OK) {
    ferry_array_release(&array); /* runs the hook: the memory is freed */
    ferry_schema_release(schema);
  }
  return rc;
}

/* ---- on the simulated device: pending work and its event ------------------- */

struct device_column {
  struct FerryDevice* device;
  void* data;         /* device memory */
  int32_t* staging;   /* the host values the asynchronous copy reads */
  void* stream;       /* the producer's stream: lives as long as the array */
};

static void free_device_column(struct device_column* column) {
  /* Destroying the stream lets its queued work finish first. */
  ferry_device_stream_destroy(column->device, column->stream, NULL);
  ferry_device_deallocate(column->device, column->data, NULL);
  free(column->staging);
  free(column);
}

static void release_device_column(void* user_data) {
  free_device_column(user_data);
  g_released++;
}

int example_produce_on_sim(int64_t n, struct ArrowSchema* schema,
                           struct ArrowDeviceArray* out, struct FerryError* error) {
  struct FerryDevice* cpu = NULL;
  struct FerryDevice* sim = NULL;
  int rc = ferry_device_resolve(ARROW_DEVICE_CPU, -1, &cpu, error);
  if (rc == FERRY_OK) rc = ferry_device_resolve(ARROW_DEVICE_EXT_DEV, 0, &sim, error);
  if (rc != FERRY_OK) return rc;
  struct device_column* column = calloc(1, sizeof *column);
  if (column == NULL) return ENOMEM;
  column->device = sim;
  column->staging = calloc((size_t)n + 1, sizeof(int32_t));
  if (column->staging == NULL) {
    free(column);
    return ENOMEM;
  }
  for (int64_t i = 0; i < n; i++) column->staging[i] = (int32_t)(i + 1);
  rc = ferry_device_allocate(sim, n * (int64_t)sizeof(int32_t), &column->data, error);
  if (rc != FERRY_OK) {
    free(column->staging);
    free(column);
    return rc;
  }
  /* The producer's work: a copy queued on its own device stream, which the
   * array keeps until it is released (the work may still be pending). */
  rc = ferry_device_stream_create(sim, &column->stream, error);
  if (rc != FERRY_OK) {
    ferry_device_deallocate(sim, column->data, NULL);
    free(column->staging);
    free(column);
    return rc;
  }
  rc = ferry_device_memcpy(sim, column->data, cpu, column->staging,
                           n * (int64_t)sizeof(int32_t), column->stream, error);
  if (rc == FERRY_OK) rc = ferry_schema_init(schema, "i", "values", 0, 0, error);
  if (rc != FERRY_OK) {
    free_device_column(column);
    return rc;
  }
  const void* buffers[2] = {NULL, column->data};
  struct ArrowArray array = {0};
  rc = ferry_array_init(&array, n, 0, 0, 2, buffers, 0, release_device_column, column, error);
  if (rc != FERRY_OK) {
    free_device_column(column); /* the hook did not run: still ours */
    ferry_schema_release(schema);
    return rc;
  }
  /* Records an event at the end of the stream: the array's sync_event. */
  rc = ferry_device_array_init_async(out, &array, sim, column->stream, FERRY_SYNC_RECORD_EVENT,
                                     error);
  if (rc != FERRY_OK) {
    ferry_array_release(&array); /* runs the hook: everything is freed */
    ferry_schema_release(schema);
  }
  return rc;
}
