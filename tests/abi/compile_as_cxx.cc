// The public headers compile as C++ (and link: extern "C" is right), at
// -Wall -Wextra -pedantic, and the layout agrees with C's.
#include <cstddef>
#include <cstdio>

#include "ferry/ferry.h"
#include "ferry/ferry_it.h"

static_assert(sizeof(ArrowDeviceArray) == 128 || sizeof(void*) != 8, "layout");
static_assert(offsetof(ArrowDeviceArray, sync_event) == 96 || sizeof(void*) != 8, "layout");
static_assert(sizeof(ArrowDeviceArrayStream) == 48 || sizeof(void*) != 8, "layout");

int main() {
  ArrowDeviceArray array{};
  int failed = 0;
  if (!ferry_device_array_is_released(&array)) failed++;
  if (ferry_abi_version() != FERRY_ABI_VERSION) failed++;
  std::printf("%d passed, %d failed\n", 2 - failed, failed);
  return failed == 0 ? 0 : 1;
}
