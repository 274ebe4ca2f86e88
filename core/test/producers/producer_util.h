/* Hand-built producers for the tests of `ferry check` (core/test/producers).
 *
 * Every producer exports the same shape, struct<a: int32, b: utf8> of length
 * 4 with one null, built from raw structs (not ferry's helpers) so each broken
 * producer can misbehave in exactly one way, chosen by `struct pu_options`.
 * Everything a batch owns lives in one malloc'd block freed by the top-level
 * release; children's release callbacks only mark them released. */
#ifndef FERRY_TEST_PRODUCERS_PRODUCER_UTIL_H
#define FERRY_TEST_PRODUCERS_PRODUCER_UTIL_H

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ferry/ferry.h"
#include "struct_fill.h"

#define PU_EXPORT __attribute__((visibility("default")))

struct pu_options {
  int64_t a_n_buffers;         /* 0: the right count (2) */
  const int32_t* b_offsets;    /* NULL: {0, 3, 3, 8, 10} */
  const char* b_data;          /* NULL: "abcxxhello" */
  int64_t reserved1;           /* ArrowDeviceArray.reserved[1] */
  void* sync_event;            /* on the CPU this must stay NULL */
  ArrowDeviceType device_type; /* 0: ARROW_DEVICE_CPU */
  int release_keeps_pointer;   /* top-level release leaves release set */
  int skip_child_release;      /* top-level release forgets child 1 */
  int double_child_release;    /* top-level release releases child 0 twice */
  int crash_in_release;        /* top-level release segfaults */
};

/* Faults for real: a write to an unmapped low address, read from a volatile
 * so the compiler cannot remove it (and not NULL, which UBSan would report
 * and turn into an exit before the fault happens). */
static inline void pu_segfault(void) {
  volatile uintptr_t nowhere = 16;
  *(volatile int*)nowhere = 42;
  raise(SIGSEGV); /* not reached */
}

/* ---- schema: struct<a: int32, b: utf8> --------------------------------------- */

struct pu_schema_block {
  struct ArrowSchema a;
  struct ArrowSchema b;
  struct ArrowSchema* children[2];
};

static inline void pu_child_schema_release(struct ArrowSchema* schema) {
  schema->release = NULL;
}

static inline void pu_schema_release(struct ArrowSchema* schema) {
  struct pu_schema_block* block = (struct pu_schema_block*)schema->private_data;
  for (int i = 0; i < 2; i++) {
    if (block->children[i]->release != NULL)
      block->children[i]->release(block->children[i]);
  }
  free(block);
  schema->release = NULL;
}

static inline int pu_make_schema(struct ArrowSchema* out) {
  struct pu_schema_block* block = (struct pu_schema_block*)calloc(1, sizeof *block);
  if (block == NULL) return ENOMEM;
  it_fill_schema(&block->a, "i", "a", ARROW_FLAG_NULLABLE, 0, NULL,
                 pu_child_schema_release, NULL);
  it_fill_schema(&block->b, "u", "b", ARROW_FLAG_NULLABLE, 0, NULL,
                 pu_child_schema_release, NULL);
  block->children[0] = &block->a;
  block->children[1] = &block->b;
  it_fill_schema(out, "+s", "pair", ARROW_FLAG_NULLABLE, 2, block->children,
                 pu_schema_release, block);
  return 0;
}

/* ---- array ----------------------------------------------------------------------- */

struct pu_array_block {
  struct pu_options options;
  struct ArrowArray a;
  struct ArrowArray b;
  struct ArrowArray* children[2];
  const void* top_buffers[1];
  const void* a_buffers[3];
  const void* b_buffers[3];
  uint8_t a_validity[1];
  int32_t a_values[4];
  int32_t b_offsets[5];
  char b_data[16];
};

static inline void pu_child_array_release(struct ArrowArray* array) {
  array->release = NULL;
}

static inline void pu_array_release(struct ArrowArray* array) {
  struct pu_array_block* block = (struct pu_array_block*)array->private_data;
  if (block->options.crash_in_release) pu_segfault();
  if (block->options.double_child_release) {
    /* The bug: the callback is saved and called twice. */
    void (*release_a)(struct ArrowArray*) = block->a.release;
    release_a(&block->a);
    release_a(&block->a);
  } else if (block->a.release != NULL) {
    block->a.release(&block->a);
  }
  if (!block->options.skip_child_release && block->b.release != NULL) {
    block->b.release(&block->b);
  }
  /* With release_keeps_pointer the block is kept alive, as a producer that
   * "forgets" to mark itself released would typically do. */
  if (block->options.release_keeps_pointer) return;
  free(block);
  array->release = NULL;
}

/* Exports one batch with `seed` varying the int32 values. */
static inline int pu_make_array(struct ArrowDeviceArray* out,
                                const struct pu_options* options, int32_t seed) {
  struct pu_array_block* block = (struct pu_array_block*)calloc(1, sizeof *block);
  if (block == NULL) return ENOMEM;
  block->options = *options;
  static const int32_t default_offsets[5] = {0, 3, 3, 8, 10};
  memcpy(block->b_offsets, options->b_offsets ? options->b_offsets : default_offsets,
         sizeof block->b_offsets);
  const char* data = options->b_data ? options->b_data : "abcxxhello";
  memcpy(block->b_data, data, strlen(data) < 15 ? strlen(data) : 15);
  block->a_validity[0] = 0x0B; /* element 2 of a is null */
  for (int i = 0; i < 4; i++) block->a_values[i] = seed * 10 + i;

  block->a_buffers[0] = block->a_validity;
  block->a_buffers[1] = block->a_values;
  block->a_buffers[2] = block->a_values;
  it_fill_array(&block->a, 4, options->a_n_buffers ? options->a_n_buffers : 2,
                block->a_buffers, 0, NULL, pu_child_array_release, NULL);
  block->a.null_count = 1;

  block->b_buffers[0] = NULL;
  block->b_buffers[1] = block->b_offsets;
  block->b_buffers[2] = block->b_data;
  it_fill_array(&block->b, 4, 3, block->b_buffers, 0, NULL, pu_child_array_release,
                NULL);

  block->children[0] = &block->a;
  block->children[1] = &block->b;
  block->top_buffers[0] = NULL;

  memset(out, 0, sizeof *out);
  it_fill_array(&out->array, 4, 1, block->top_buffers, 2, block->children,
                pu_array_release, block);
  out->device_type = options->device_type ? options->device_type : ARROW_DEVICE_CPU;
  out->device_id = out->device_type == ARROW_DEVICE_CPU ? -1 : 0;
  out->sync_event = options->sync_event;
  out->reserved[1] = options->reserved1;
  return 0;
}

static inline int pu_export(struct ArrowSchema* schema, struct ArrowDeviceArray* array,
                            const struct pu_options* options) {
  int rc = pu_make_schema(schema);
  if (rc != 0) return rc;
  rc = pu_make_array(array, options, 1);
  if (rc != 0) schema->release(schema);
  return rc;
}

/* ---- stream ---------------------------------------------------------------------- */

struct pu_stream_options {
  struct pu_options batch;
  int64_t n_batches;          /* batches before the end */
  int crash_after_end;        /* get_next after the end faults */
  int64_t error_at;           /* get_next call (1-based) that fails, 0: none */
  int error_without_message;  /* ...and get_last_error returns NULL */
  int64_t wrong_device_batch; /* batch index (1-based) exported as EXT_DEV, 0: none */
};

struct pu_stream_state {
  struct pu_stream_options options;
  int64_t calls;
  int ended;
  char last_error[128];
};

static inline int pu_stream_get_schema(struct ArrowDeviceArrayStream* stream,
                                       struct ArrowSchema* out) {
  return pu_make_schema(out);
}

static inline int pu_stream_get_next(struct ArrowDeviceArrayStream* stream,
                                     struct ArrowDeviceArray* out) {
  struct pu_stream_state* state = (struct pu_stream_state*)stream->private_data;
  state->calls++;
  if (state->options.error_at == state->calls) {
    strcpy(state->last_error, "get_next failed on purpose");
    return EIO;
  }
  if (state->ended || state->calls > state->options.n_batches) {
    if (state->ended && state->options.crash_after_end) pu_segfault();
    state->ended = 1;
    memset(out, 0, sizeof *out);
    return 0;
  }
  struct pu_options batch = state->options.batch;
  if (state->options.wrong_device_batch == state->calls) {
    batch.device_type = ARROW_DEVICE_EXT_DEV;
  }
  return pu_make_array(out, &batch, (int32_t)state->calls);
}

static inline const char* pu_stream_get_last_error(
    struct ArrowDeviceArrayStream* stream) {
  struct pu_stream_state* state = (struct pu_stream_state*)stream->private_data;
  if (state->options.error_without_message) return NULL;
  return state->last_error[0] ? state->last_error : NULL;
}

static inline void pu_stream_release(struct ArrowDeviceArrayStream* stream) {
  free(stream->private_data);
  stream->release = NULL;
}

static inline int pu_export_stream(struct ArrowDeviceArrayStream* out,
                                   const struct pu_stream_options* options) {
  struct pu_stream_state* state = (struct pu_stream_state*)calloc(1, sizeof *state);
  if (state == NULL) return ENOMEM;
  state->options = *options;
  it_fill_stream(out, ARROW_DEVICE_CPU, pu_stream_get_schema, pu_stream_get_next,
                 pu_stream_get_last_error, pu_stream_release, state);
  return 0;
}

#endif  // FERRY_TEST_PRODUCERS_PRODUCER_UTIL_H
