/* Names of the ArrowDeviceType values ("cpu", "cuda", ..., "sim" for ferry's
 * simulated device), both ways. */
#include <string.h>

#include "internal.h"

/* Indexed by ArrowDeviceType; NULL where the specification has no value. */
static const char* const kDeviceTypeNames[] = {
    NULL,      "cpu",          "cuda",   "cuda_host", "opencl", NULL,
    NULL,      "vulkan",       "metal",  "vpi",       "rocm",   "rocm_host",
    "ext_dev", "cuda_managed", "oneapi", "webgpu",    "hexagon"};
#define FERRY_N_DEVICE_TYPE_NAMES \
  ((int32_t)(sizeof(kDeviceTypeNames) / sizeof(kDeviceTypeNames[0])))

const char* ferry_device_type_name(ArrowDeviceType device_type) {
  if (device_type < 0 || device_type >= FERRY_N_DEVICE_TYPE_NAMES ||
      kDeviceTypeNames[device_type] == NULL) {
    return "unknown";
  }
  return kDeviceTypeNames[device_type];
}

int ferry_device_type_from_name(const char* name, ArrowDeviceType* out,
                                struct FerryError* error) {
  if (name == NULL || out == NULL) {
    return ferry__set_error(error, EINVAL, "device type name and output must not be NULL");
  }
  if (strcmp(name, "sim") == 0) {
    *out = ARROW_DEVICE_EXT_DEV;
    return FERRY_OK;
  }
  for (int32_t i = 0; i < FERRY_N_DEVICE_TYPE_NAMES; i++) {
    if (kDeviceTypeNames[i] != NULL && strcmp(kDeviceTypeNames[i], name) == 0) {
      *out = i;
      return FERRY_OK;
    }
  }
  return ferry__set_error(error, EINVAL, "unknown device type name \"%s\"", name);
}
