/* Moving a device array to another device without copying when the
 * destination can already reach the memory, and by a deep copy otherwise.
 *
 * Reachable without a copy:
 *   - the same device (type and id; the CPU's -1 and 0 are one device);
 *   - cuda_host, rocm_host and cuda_managed memory seen from the CPU: the
 *     host may dereference it, once it has waited for the producer's event
 *     (the CPU has no events, so the moved array's sync_event is NULL; the
 *     event itself stays owned by the array and dies at release);
 *   - cuda_managed memory seen from the cuda device of the same id (the
 *     event is a CUDA event either way, so it is kept).
 * The sim device is host memory too, but deliberately not reachable: it
 * models a GPU, whose memory the CPU cannot read. */
#include <errno.h>
#include <string.h>

#include "backend.h"
#include "internal.h"

static int64_t normalized_id(ArrowDeviceType type, int64_t id) {
  return type == ARROW_DEVICE_CPU ? -1 : id;
}

static int host_reachable_type(ArrowDeviceType type) {
  return type == ARROW_DEVICE_CUDA_HOST || type == ARROW_DEVICE_ROCM_HOST ||
         type == ARROW_DEVICE_CUDA_MANAGED;
}

/* Borrows `schema`; consumes `src` on success (see ferry.h). */
int ferry_device_array_move_to_device(const struct ArrowSchema* schema,
                                      struct ArrowDeviceArray* src,
                                      ArrowDeviceType device_type, int64_t device_id,
                                      struct ArrowDeviceArray* out,
                                      struct FerryError* error) {
  FERRY_RETURN_NOT_OK(ferry__check_transfer_args(schema, src, out, "move", error));
  /* The destination must exist (and its backend be usable) in every case. */
  struct FerryDevice* destination = NULL;
  FERRY_RETURN_NOT_OK(ferry_device_resolve(device_type, device_id, &destination, error));
  int64_t dst_id = ferry_device_id(destination);
  ArrowDeviceType src_type = src->device_type;
  int64_t src_id = normalized_id(src_type, src->device_id);

  int same_device = src_type == device_type && src_id == dst_id;
  int to_host = device_type == ARROW_DEVICE_CPU && host_reachable_type(src_type);
  int managed_to_cuda = src_type == ARROW_DEVICE_CUDA_MANAGED &&
                        device_type == ARROW_DEVICE_CUDA && src_id == dst_id;
  if (same_device || to_host || managed_to_cuda) {
    if (to_host) FERRY_RETURN_NOT_OK(ferry_device_array_wait(src, NULL, error));
    FERRY_RETURN_NOT_OK(ferry_device_array_move(src, out));
    out->device_type = device_type;
    out->device_id = dst_id;
    if (to_host) out->sync_event = NULL;
    return FERRY_OK;
  }
  FERRY_RETURN_NOT_OK(
      ferry_device_array_copy(schema, src, device_type, device_id, out, error));
  ferry_device_array_release(src);
  return FERRY_OK;
}
