/* Device resolution for cases, with the error message the grammar asks for. */
#include "case_device.h"

#include <errno.h>
#include <string.h>

#include "plugin_state.h"

int it_case_device_resolve(const struct it_case* c, const char* spec,
                           struct FerryDevice** out, struct FerryError* error) {
  *out = NULL;
  if (c->device_type == ARROW_DEVICE_CPU) return FERRY_OK;
  struct FerryError reason;
  reason.message[0] = '\0';
  int rc = ferry_device_resolve(c->device_type, it_case_device_id(c), out, &reason);
  if (rc != FERRY_OK) {
    *out = NULL;
    return it_error(error, rc, "device \"%s\" is not available for case \"%s\": %s",
                    c->device_name, spec,
                    reason.message[0] ? reason.message : "no reason given");
  }
  return FERRY_OK;
}
