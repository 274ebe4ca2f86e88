/* A case stream, produced batch by batch on demand through ferry_array_stream_init. */
#include "stream_export.h"

#include <errno.h>

#include "case_export.h"
#include "plugin_state.h"

struct it_stream_state {
  struct it_case c;
  struct FerryDevice* device;
  int64_t get_next_calls;
  int64_t batches_done;
};

static int stream_get_schema(void* user_data, struct ArrowSchema* out,
                             struct FerryError* error) {
  struct it_stream_state* state = user_data;
  if (state->c.fail == IT_FAIL_GET_SCHEMA) {
    return it_error(error, EIO, "injected failure at get_schema");
  }
  return it_export_schema(&state->c, out, error);
}

static int stream_get_next(void* user_data, struct ArrowDeviceArray* out,
                           struct FerryError* error) {
  struct it_stream_state* state = user_data;
  state->get_next_calls++;
  if (state->c.fail == IT_FAIL_GET_NEXT && state->get_next_calls == state->c.fail_at) {
    return it_error(error, EIO, "injected failure at get_next %lld",
                    (long long)state->get_next_calls);
  }
  /* End of stream: success with `out` left released. */
  if (state->batches_done >= state->c.batches) return FERRY_OK;
  uint32_t seed = state->c.seed + (uint32_t)state->batches_done;
  int rc = it_export_array(&state->c, seed, state->device, out, error);
  if (rc == FERRY_OK) state->batches_done++;
  return rc;
}

static void stream_release(void* user_data) { it_free(user_data); }

int it_export_stream(const struct it_case* c, struct FerryDevice* device,
                     struct ArrowDeviceArrayStream* out, struct FerryError* error) {
  struct it_stream_state* state = it_alloc(sizeof(*state));
  if (state == NULL) return it_error(error, ENOMEM, "out of memory for stream state");
  state->c = *c;
  state->device = device;
  int rc = ferry_array_stream_init(out, c->device_type, stream_get_schema, stream_get_next,
                             stream_release, state, error);
  if (rc != FERRY_OK) it_free(state);
  return rc;
}
