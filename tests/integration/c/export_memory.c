/* Host and device buffers of one exported array. */
#include "export_memory.h"

#include <errno.h>

#include "plugin_state.h"

int it_memory_create(struct FerryDevice* device, struct it_export_memory** out,
                     struct FerryError* error) {
  struct it_export_memory* memory = it_alloc(sizeof(*memory));
  if (memory == NULL) return it_error(error, ENOMEM, "out of memory for export state");
  if (device != NULL) {
    int rc = ferry_device_resolve(ARROW_DEVICE_CPU, -1, &memory->cpu, error);
    if (rc == FERRY_OK) rc = ferry_device_stream_create(device, &memory->stream, error);
    if (rc != FERRY_OK) {
      it_free(memory);
      return rc;
    }
    memory->device = device;
  }
  *out = memory;
  return FERRY_OK;
}

int it_memory_add(struct it_export_memory* memory, int64_t size, void** host_out,
                  int* index_out, struct FerryError* error) {
  if (memory->n_buffers == IT_MAX_EXPORT_BUFFERS) {
    return it_error(error, EINVAL, "more than %d buffers in one export",
                    IT_MAX_EXPORT_BUFFERS);
  }
  /* Whole 8-byte words, at least one: zero-length arrays still get a real
   * address (some consumers reject NULL data buffers), and bitmap padding
   * is always initialised. */
  int64_t rounded = size <= 0 ? 8 : (size + 7) / 8 * 8;
  void* host = it_alloc((size_t)rounded);
  if (host == NULL) {
    return it_error(error, ENOMEM, "out of memory allocating %lld bytes",
                    (long long)rounded);
  }
  struct it_export_buffer* buffer = &memory->buffers[memory->n_buffers];
  buffer->host = host;
  buffer->size = rounded;
  *host_out = host;
  *index_out = memory->n_buffers++;
  return FERRY_OK;
}

int it_memory_place(struct it_export_memory* memory, struct FerryError* error) {
  if (memory->device == NULL) return FERRY_OK;
  for (int k = 0; k < memory->n_buffers; k++) {
    struct it_export_buffer* buffer = &memory->buffers[k];
    int rc = ferry_device_allocate(memory->device, buffer->size, &buffer->device, error);
    if (rc != FERRY_OK) {
      buffer->device = NULL;
      return rc;
    }
    it_count_allocations(1);
    /* Asynchronous on purpose: the consumer must wait on the exported
     * sync_event before it reads, and the sim's strict mode proves it did. */
    rc = ferry_device_memcpy(memory->device, buffer->device, memory->cpu, buffer->host,
                             buffer->size, memory->stream, error);
    if (rc != FERRY_OK) return rc;
  }
  return FERRY_OK;
}

const void* it_memory_pointer(const struct it_export_memory* memory, int index) {
  if (index < 0) return NULL;
  const struct it_export_buffer* buffer = &memory->buffers[index];
  return memory->device != NULL ? buffer->device : buffer->host;
}

void it_memory_release(void* user_data) {
  struct it_export_memory* memory = user_data;
  if (memory == NULL) return;
  if (memory->stream != NULL) {
    /* A release hook has nobody to report to; failures here leave at worst a
     * leak that the allocation counters reveal. */
    (void)ferry_device_stream_synchronize(memory->device, memory->stream, NULL);
    (void)ferry_device_stream_destroy(memory->device, memory->stream, NULL);
  }
  for (int k = 0; k < memory->n_buffers; k++) {
    struct it_export_buffer* buffer = &memory->buffers[k];
    if (buffer->device != NULL &&
        ferry_device_deallocate(memory->device, buffer->device, NULL) == FERRY_OK) {
      it_count_allocations(-1);
    }
    it_free(buffer->host);
  }
  it_free(memory);
}
