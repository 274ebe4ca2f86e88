/* The library's version and ABI version, and the check bindings make of it. */
#include <errno.h>

#include "internal.h"

const char* ferry_version(void) { return FERRY_VERSION_STRING; }

int32_t ferry_abi_version(void) { return FERRY_ABI_VERSION; }

int ferry_check_abi_version(int32_t expected_abi_version, struct FerryError* error) {
  if (expected_abi_version != FERRY_ABI_VERSION) {
    return ferry__set_error(error, EINVAL,
                           "ferry ABI version mismatch: the binding expects %d, "
                           "the loaded libferry provides %d",
                           (int)expected_abi_version, (int)FERRY_ABI_VERSION);
  }
  return FERRY_OK;
}
