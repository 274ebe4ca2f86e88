/* A consumer project's program: exports an int32 array it owns through
 * ferry, hands it to a "consumer" by move, reads it back through the
 * accessors, and checks that the release hook ran exactly once. */
#include <stdio.h>

#include "ferry/ferry.h"

static int hook_calls = 0;
static void on_release(void* user_data) { hook_calls += *(int*)user_data; }

int main(void) {
  static const int32_t values[4] = {1, 2, 3, 4};
  const void* buffers[2] = {NULL, values};
  int one = 1;
  struct FerryError error;
  struct ArrowArray array = {0};
  struct ArrowDeviceArray exported = {0}, consumed = {0};
  int failures = 0;

  if (ferry_array_init(&array, 4, 0, 0, 2, buffers, 0, on_release, &one, &error) != FERRY_OK ||
      ferry_device_array_init(&exported, &array, ARROW_DEVICE_CPU, -1, NULL, NULL, NULL,
                              &error) != FERRY_OK ||
      ferry_device_array_move(&exported, &consumed) != FERRY_OK) {
    fprintf(stderr, "export failed: %s\n", ferry_error_message(&error));
    return 1;
  }
  const int32_t* seen = (const int32_t*)ferry_array_buffer(ferry_device_array_array(&consumed), 1);
  if (seen != values) failures++;               /* zero-copy: the same address */
  if (ferry_array_length(&consumed.array) != 4) failures++;
  if (!ferry_device_array_is_released(&exported)) failures++;
  ferry_device_array_release(&consumed);
  ferry_device_array_release(&consumed);          /* harmless the second time */
  if (hook_calls != 1) failures++;
  printf("ferry %s: %d passed, %d failed\n", ferry_version(), 5 - failures, failures);
  return failures == 0 ? 0 : 1;
}
