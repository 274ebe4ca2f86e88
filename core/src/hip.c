/* PLACEHOLDER for the ROCm/HIP backend (rocm, rocm_host).
 *
 * The real backend, which loads libamdhip64.so with dlopen inside probe, is
 * being written separately and replaces this file. Until then the probe
 * reports ENOTSUP, so the registry never creates a ROCm device and the other
 * entries of the vtable are unreachable (left NULL on purpose). */
#include <errno.h>

#include "backend.h"
#include "internal.h"

static const ArrowDeviceType kRocmDeviceTypes[] = {ARROW_DEVICE_ROCM,
                                                   ARROW_DEVICE_ROCM_HOST};

static int rocm_placeholder_probe(struct FerryError* error) {
  return ferry_set_error(error, ENOTSUP, "the rocm backend is not built yet");
}

static int rocm_placeholder_device_count(ArrowDeviceType device_type, int64_t* count,
                                         struct FerryError* error) {
  *count = 0;
  return ferry_set_error(error, ENOTSUP, "the rocm backend is not built yet");
}

static int rocm_placeholder_is_host_accessible(ArrowDeviceType device_type) {
  return device_type == ARROW_DEVICE_ROCM_HOST;
}

const struct FerryBackend ferry_backend_rocm = {
    .name = "rocm",
    .device_types = kRocmDeviceTypes,
    .n_device_types = 2,
    .probe = rocm_placeholder_probe,
    .device_count = rocm_placeholder_device_count,
    .is_host_accessible = rocm_placeholder_is_host_accessible,
};
