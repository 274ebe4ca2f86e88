/* PLACEHOLDER for the CUDA backend (cuda, cuda_host, cuda_managed).
 *
 * The real backend, which loads libcuda.so with dlopen inside probe, is being
 * written separately and replaces this file. Until then the probe reports
 * ENOTSUP, so the registry never creates a CUDA device and the other entries
 * of the vtable are unreachable (left NULL on purpose). */
#include <errno.h>

#include "backend.h"
#include "internal.h"

static const ArrowDeviceType kCudaDeviceTypes[] = {
    ARROW_DEVICE_CUDA, ARROW_DEVICE_CUDA_HOST, ARROW_DEVICE_CUDA_MANAGED};

static int cuda_placeholder_probe(struct FerryError* error) {
  return ferry_set_error(error, ENOTSUP, "the cuda backend is not built yet");
}

static int cuda_placeholder_device_count(ArrowDeviceType device_type, int64_t* count,
                                         struct FerryError* error) {
  *count = 0;
  return ferry_set_error(error, ENOTSUP, "the cuda backend is not built yet");
}

static int cuda_placeholder_is_host_accessible(ArrowDeviceType device_type) {
  return device_type == ARROW_DEVICE_CUDA_HOST ||
         device_type == ARROW_DEVICE_CUDA_MANAGED;
}

const struct FerryBackend ferry_backend_cuda = {
    .name = "cuda",
    .device_types = kCudaDeviceTypes,
    .n_device_types = 3,
    .probe = cuda_placeholder_probe,
    .device_count = cuda_placeholder_device_count,
    .is_host_accessible = cuda_placeholder_is_host_accessible,
};
