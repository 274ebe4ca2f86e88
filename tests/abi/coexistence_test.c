/* A translation unit that sees another project's copy of the Arrow structs
 * first (as when a program includes nanoarrow or Arrow C++ next to ferry):
 * the canonical guards must make ferry's copy a no-op, and the types must be
 * the same types, so that pointers pass between the two APIs unchanged. */
#include <stdint.h>

/* --- "another project's" copy, guards exactly as the specification --- */
#ifndef ARROW_C_DATA_INTERFACE
#define ARROW_C_DATA_INTERFACE
#define ARROW_FLAG_DICTIONARY_ORDERED 1
#define ARROW_FLAG_NULLABLE 2
#define ARROW_FLAG_MAP_KEYS_SORTED 4
struct ArrowSchema {
  const char* format;
  const char* name;
  const char* metadata;
  int64_t flags;
  int64_t n_children;
  struct ArrowSchema** children;
  struct ArrowSchema* dictionary;
  void (*release)(struct ArrowSchema*);
  void* private_data;
};
struct ArrowArray {
  int64_t length;
  int64_t null_count;
  int64_t offset;
  int64_t n_buffers;
  int64_t n_children;
  const void** buffers;
  struct ArrowArray** children;
  struct ArrowArray* dictionary;
  void (*release)(struct ArrowArray*);
  void* private_data;
};
#endif
#ifndef ARROW_C_DEVICE_DATA_INTERFACE
#define ARROW_C_DEVICE_DATA_INTERFACE
typedef int32_t ArrowDeviceType;
#define ARROW_DEVICE_CPU 1
struct ArrowDeviceArray {
  struct ArrowArray array;
  int64_t device_id;
  ArrowDeviceType device_type;
  void* sync_event;
  int64_t reserved[3];
};
#endif

/* Arrow C++'s async block (cpp/src/arrow/c/abi.h), guard as-is. */
#ifndef ARROW_C_ASYNC_STREAM_INTERFACE
#define ARROW_C_ASYNC_STREAM_INTERFACE
struct ArrowAsyncTask {
  int (*extract_data)(struct ArrowAsyncTask* self, struct ArrowDeviceArray* out);
  void* private_data;
};
struct ArrowAsyncProducer {
  ArrowDeviceType device_type;
  void (*request)(struct ArrowAsyncProducer* self, int64_t n);
  void (*cancel)(struct ArrowAsyncProducer* self);
  const char* additional_metadata;
  void* private_data;
};
struct ArrowAsyncDeviceStreamHandler {
  int (*on_schema)(struct ArrowAsyncDeviceStreamHandler* self,
                   struct ArrowSchema* stream_schema);
  int (*on_next_task)(struct ArrowAsyncDeviceStreamHandler* self,
                      struct ArrowAsyncTask* task, const char* metadata);
  void (*on_error)(struct ArrowAsyncDeviceStreamHandler* self, int code,
                   const char* message, const char* metadata);
  void (*release)(struct ArrowAsyncDeviceStreamHandler* self);
  struct ArrowAsyncProducer* producer;
  void* private_data;
};
#endif

#include "ferry/ferry.h"  /* must compile: its copies are skipped */
#include "ferry_test.h"

FERRY_TEST(foreign_struct_copies_are_the_same_types) {
  struct ArrowDeviceArray array;
  memset(&array, 0, sizeof array);
  array.device_type = ARROW_DEVICE_CPU;
  array.device_id = -1;
  CHECK_EQ_INT(ARROW_DEVICE_CPU, ferry_device_array_device_type(&array));
  CHECK_EQ_INT(-1, ferry_device_array_device_id(&array));
  CHECK(ferry_device_array_is_released(&array));
  /* The foreign copy's guard won: ferry's fuller list was skipped. */
#ifdef ARROW_DEVICE_EXT_DEV
  CHECK(0);
#endif
}

FERRY_TEST(foreign_async_structs_are_the_same_types) {
  struct ArrowAsyncProducer producer;
  memset(&producer, 0, sizeof producer);
  producer.device_type = ARROW_DEVICE_CPU;
  struct ArrowAsyncDeviceStreamHandler handler;
  memset(&handler, 0, sizeof handler);
  handler.producer = &producer;
  CHECK(ferry_async_handler_is_released(&handler));
  CHECK(ferry_async_handler_producer(&handler) == &producer);
  CHECK_EQ_INT(ARROW_DEVICE_CPU, ferry_async_producer_device_type(&producer));
}

FERRY_TEST_MAIN()
