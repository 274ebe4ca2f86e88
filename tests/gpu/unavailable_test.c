/* The "GPU unavailable" paths against whatever drivers the environment
 * gives (scripts/backends_test.sh runs it once per case: no libcuda at all,
 * a nonexistent FERRY_CUDA_LIBRARY, the toolkit's stub library when one can
 * be had, the emulation in stub or no-device mode, the real libamdhip64
 * without an AMD GPU, ...). Expectations come from the environment:
 *   FERRY_EXPECT_CUDA / FERRY_EXPECT_ROCM  "available", or a text the
 *                                          probe's reason must contain
 * In every case the unavailable backend fails cleanly and the same way
 * each time, its devices cannot be resolved, and the CPU and the sim
 * device keep working. Links the shared libferry like any consumer. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ferry/ferry.h"
#include "ferry_test.h"

static const char* expectation(int64_t backend) {
  const char* value = getenv(backend == 2 ? "FERRY_EXPECT_CUDA" : "FERRY_EXPECT_ROCM");
  return value != NULL ? value : "";
}

static void check_backend(int64_t backend, ArrowDeviceType device_type,
                          ArrowDeviceType host_type) {
  const char* expected = expectation(backend);
  if (expected[0] == '\0') return; /* not part of this case */
  struct FerryError first, second;
  ferry_error_init(&first);
  ferry_error_init(&second);
  int code = ferry_backend_probe(backend, &first);
  printf("  %s: %s %s\n", ferry_backend_name(backend), ferry_errno_name(code),
         first.message);
  if (strcmp(expected, "available") == 0) {
    CHECK_EQ_INT(0, code);
    return;
  }
  CHECK(code == ENODEV || code == ENOTSUP);
  CHECK_CONTAINS(first.message, expected);
  CHECK_EQ_INT(code, ferry_backend_probe(backend, &second));
  CHECK(strcmp(first.message, second.message) == 0);
  ArrowDeviceType types[2] = {device_type, host_type};
  for (int t = 0; t < 2; t++) {
    struct FerryDevice* d = (struct FerryDevice*)1;
    ferry_error_init(&second);
    CHECK_EQ_INT(code, ferry_device_resolve(types[t], 0, &d, &second));
    CHECK(d == NULL);
    CHECK(strcmp(first.message, second.message) == 0);
  }
}

FERRY_TEST(unavailable_cuda_fails_cleanly_with_its_reason) {
  check_backend(2, ARROW_DEVICE_CUDA, ARROW_DEVICE_CUDA_HOST);
}

FERRY_TEST(unavailable_rocm_fails_cleanly_with_its_reason) {
  check_backend(3, ARROW_DEVICE_ROCM, ARROW_DEVICE_ROCM_HOST);
}

FERRY_TEST(cpu_and_sim_keep_working) {
  enum { N = 100 };
  struct FerryDevice* cpu = NULL;
  struct FerryDevice* sim = NULL;
  CHECK_EQ_INT(0, ferry_device_resolve(ARROW_DEVICE_CPU, -1, &cpu, NULL));
  CHECK_EQ_INT(0, ferry_device_resolve(ARROW_DEVICE_EXT_DEV, 1, &sim, NULL));
  int32_t values[N], back[N];
  for (int i = 0; i < N; i++) values[i] = i * i;
  void* on_sim = NULL;
  void* stream = NULL;
  void* event = NULL;
  CHECK_EQ_INT(0, ferry_device_allocate(sim, sizeof values, &on_sim, NULL));
  CHECK_EQ_INT(0, ferry_device_stream_create(sim, &stream, NULL));
  CHECK_EQ_INT(0, ferry_device_event_create(sim, &event, NULL));
  CHECK_EQ_INT(
      0, ferry_device_memcpy(sim, on_sim, cpu, values, sizeof values, stream, NULL));
  CHECK_EQ_INT(0, ferry_device_event_record(sim, event, stream, NULL));
  CHECK_EQ_INT(0, ferry_device_event_synchronize(sim, event, NULL));
  CHECK_EQ_INT(0, ferry_device_memcpy(cpu, back, sim, on_sim, sizeof back, NULL, NULL));
  CHECK(memcmp(values, back, sizeof values) == 0);

  /* A whole array: CPU -> sim -> CPU, and a move that must copy. */
  struct ArrowSchema schema;
  memset(&schema, 0, sizeof schema);
  CHECK_EQ_INT(0, ferry_schema_init(&schema, "i", NULL, 0, 0, NULL));
  struct ArrowArray inner;
  memset(&inner, 0, sizeof inner);
  const void* buffers[2] = {NULL, values};
  CHECK_EQ_INT(0, ferry_array_init(&inner, N, 0, 0, 2, buffers, 0, NULL, NULL, NULL));
  struct ArrowDeviceArray on_cpu, copied, moved;
  memset(&on_cpu, 0, sizeof on_cpu);
  memset(&copied, 0, sizeof copied);
  memset(&moved, 0, sizeof moved);
  CHECK_EQ_INT(0, ferry_device_array_init(&on_cpu, &inner, ARROW_DEVICE_CPU, -1, NULL,
                                          NULL, NULL, NULL));
  CHECK_EQ_INT(0, ferry_device_array_copy(&schema, &on_cpu, ARROW_DEVICE_EXT_DEV, 2,
                                          &copied, NULL));
  CHECK_EQ_INT(0, ferry_device_array_move_to_device(&schema, &copied, ARROW_DEVICE_CPU,
                                                    -1, &moved, NULL));
  CHECK(memcmp(moved.array.buffers[1], values, sizeof values) == 0);
  /* Moving to an unavailable GPU fails and leaves the array alone. */
  struct FerryError error;
  ferry_error_init(&error);
  struct ArrowDeviceArray nowhere;
  memset(&nowhere, 0, sizeof nowhere);
  if (strcmp(expectation(2), "available") != 0 && expectation(2)[0] != '\0') {
    CHECK(ferry_device_array_move_to_device(&schema, &moved, ARROW_DEVICE_CUDA, 0,
                                            &nowhere, &error) != 0);
    CHECK(moved.array.release != NULL);
  }
  ferry_device_array_release(&moved);
  ferry_device_array_release(&on_cpu);
  ferry_schema_release(&schema);
  CHECK_EQ_INT(0, ferry_device_event_destroy(sim, event, NULL));
  CHECK_EQ_INT(0, ferry_device_stream_destroy(sim, stream, NULL));
  CHECK_EQ_INT(0, ferry_device_deallocate(sim, on_sim, NULL));
}

FERRY_TEST_MAIN()
