/* The memory behind one exported array (top level, children and dictionary
 * together): host buffers that the builders fill, and, on a device, their
 * device copies with the producer stream that carries the copies.
 *
 * Lifetime: made by it_memory_create, owned by the exporter until
 * ferry_array_init takes it_memory_release as the top-level array's release
 * hook; from then on the consumer's release frees it, exactly once. */
#ifndef FERRY_IT_C_EXPORT_MEMORY_H
#define FERRY_IT_C_EXPORT_MEMORY_H

#include <stdint.h>

#include "ferry/ferry.h"

#pragma GCC visibility push(hidden)

/* The most buffers one case needs (struct_int32_utf8 has six). */
#define IT_MAX_EXPORT_BUFFERS 8

struct it_export_buffer {
  void* host;   /* filled by the builders; the staging copy on a device */
  void* device; /* NULL on the CPU */
  int64_t size; /* bytes allocated in both places */
};

struct it_export_memory {
  struct FerryDevice* device; /* NULL: the buffers stay in host memory */
  struct FerryDevice* cpu;    /* source device of the staging copies */
  void* stream;               /* producer stream of the copies (device only) */
  int n_buffers;
  struct it_export_buffer buffers[IT_MAX_EXPORT_BUFFERS];
};

/* Makes an empty holder for `device` (NULL for the CPU; borrowed, it lives as
 * long as the process), creating the producer stream on a device. The
 * caller frees it with it_memory_release. */
int it_memory_create(struct FerryDevice* device, struct it_export_memory** out,
                     struct FerryError* error);

/* Adds a zeroed host buffer of at least `size` bytes (rounded up to a
 * multiple of 8, at least 8) owned by `memory`; returns its address and index
 * (for it_memory_pointer). */
int it_memory_add(struct it_export_memory* memory, int64_t size, void** host_out,
                  int* index_out, struct FerryError* error);

/* On a device: allocates every buffer there and queues its copy from the
 * host buffer on the producer stream, without waiting. On the CPU: nothing.
 * On failure the caller still releases `memory`. */
int it_memory_place(struct it_export_memory* memory, struct FerryError* error);

/* The address an exported array must carry for buffer `index` (the device
 * copy after it_memory_place on a device); NULL when index < 0. */
const void* it_memory_pointer(const struct it_export_memory* memory, int index);

/* FerryReleaseHook: waits for the producer stream (so no queued copy reads a
 * freed staging buffer), destroys it, frees every buffer and `memory`. */
void it_memory_release(void* memory);

#pragma GCC visibility pop

#endif  // FERRY_IT_C_EXPORT_MEMORY_H
