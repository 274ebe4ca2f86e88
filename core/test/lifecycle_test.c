/* Tests of core/src/lifecycle.c: the _new and _free pairs, release and move, on structs
 * with hand-written (non-ferry) release callbacks that count their calls. */
#include <errno.h>

#include "ferry/ferry.h"
#include "ferry_test.h"

static int schema_releases, array_releases, stream_releases;

static void count_schema_release(struct ArrowSchema* schema) {
  schema_releases++;
  schema->release = NULL;
}
static void count_array_release(struct ArrowArray* array) {
  array_releases++;
  array->release = NULL;
}
static void count_stream_release(struct ArrowDeviceArrayStream* stream) {
  stream_releases++;
  stream->release = NULL;
}
/* A sloppy producer that forgets to mark the struct released. */
static void sloppy_array_release(struct ArrowArray* array) { array_releases++; }

static void reset_counts(void) { schema_releases = array_releases = stream_releases = 0; }

FERRY_TEST(new_returns_zeroed_structs_and_free_accepts_null) {
  struct ArrowSchema* schema = ferry_schema_new();
  struct ArrowArray* array = ferry_array_new();
  struct ArrowDeviceArray* device_array = ferry_device_array_new();
  struct ArrowDeviceArrayStream* stream = ferry_array_stream_new();
  CHECK(schema != NULL && array != NULL && device_array != NULL && stream != NULL);
  CHECK(ferry_schema_is_released(schema));
  CHECK(ferry_array_is_released(array));
  CHECK(ferry_device_array_is_released(device_array));
  CHECK(ferry_array_stream_is_released(stream));
  CHECK(ferry_device_array_reserved_is_zero(device_array));
  CHECK_EQ_INT(0, device_array->device_type);
  CHECK(schema->format == NULL && array->buffers == NULL && stream->private_data == NULL);
  ferry_schema_free(schema);
  ferry_array_free(array);
  ferry_device_array_free(device_array);
  ferry_array_stream_free(stream);
  ferry_schema_free(NULL);
  ferry_array_free(NULL);
  ferry_device_array_free(NULL);
  ferry_array_stream_free(NULL);
}

FERRY_TEST(free_releases_a_live_struct_once) {
  reset_counts();
  struct ArrowSchema* schema = ferry_schema_new();
  schema->release = count_schema_release;
  ferry_schema_free(schema);
  struct ArrowArray* array = ferry_array_new();
  array->release = count_array_release;
  ferry_array_free(array);
  struct ArrowDeviceArray* device_array = ferry_device_array_new();
  device_array->array.release = count_array_release;
  ferry_device_array_free(device_array);
  struct ArrowDeviceArrayStream* stream = ferry_array_stream_new();
  stream->release = count_stream_release;
  ferry_array_stream_free(stream);
  CHECK_EQ_INT(1, schema_releases);
  CHECK_EQ_INT(2, array_releases);
  CHECK_EQ_INT(1, stream_releases);
}

FERRY_TEST(release_twice_calls_the_callback_once) {
  reset_counts();
  struct ArrowSchema schema = {0};
  schema.release = count_schema_release;
  ferry_schema_release(&schema);
  ferry_schema_release(&schema);
  CHECK_EQ_INT(1, schema_releases);
  struct ArrowArray array = {0};
  array.release = count_array_release;
  ferry_array_release(&array);
  ferry_array_release(&array);
  CHECK_EQ_INT(1, array_releases);
  struct ArrowDeviceArray device_array = {0};
  device_array.array.release = count_array_release;
  ferry_device_array_release(&device_array);
  ferry_device_array_release(&device_array);
  CHECK_EQ_INT(2, array_releases);
  struct ArrowDeviceArrayStream stream = {0};
  stream.release = count_stream_release;
  ferry_array_stream_release(&stream);
  ferry_array_stream_release(&stream);
  CHECK_EQ_INT(1, stream_releases);
  /* NULL is accepted everywhere. */
  ferry_schema_release(NULL);
  ferry_array_release(NULL);
  ferry_device_array_release(NULL);
  ferry_array_stream_release(NULL);
}

FERRY_TEST(release_marks_released_even_if_the_callback_forgets) {
  reset_counts();
  struct ArrowArray array = {0};
  array.release = sloppy_array_release;
  ferry_array_release(&array);
  CHECK(ferry_array_is_released(&array));
  ferry_array_release(&array);
  CHECK_EQ_INT(1, array_releases);
}

FERRY_TEST(array_move_transfers_ownership) {
  reset_counts();
  int payload = 42;
  const void* buffers[2] = {NULL, &payload};
  struct ArrowArray src = {0};
  src.length = 7;
  src.n_buffers = 2;
  src.buffers = buffers;
  src.private_data = &payload;
  src.release = count_array_release;
  struct ArrowArray dst = {0};
  CHECK_EQ_INT(FERRY_OK, ferry_array_move(&src, &dst));
  CHECK(ferry_array_is_released(&src));
  CHECK(!ferry_array_is_released(&dst));
  CHECK_EQ_INT(7, dst.length);
  CHECK(dst.buffers == buffers && dst.private_data == &payload);
  ferry_array_release(&src); /* released: nothing happens */
  CHECK_EQ_INT(0, array_releases);
  ferry_array_release(&dst);
  CHECK_EQ_INT(1, array_releases);
}

FERRY_TEST(array_move_einval_cases_change_nothing) {
  reset_counts();
  struct ArrowArray live_a = {0}, live_b = {0}, released = {0};
  live_a.release = count_array_release;
  live_a.length = 1;
  live_b.release = count_array_release;
  live_b.length = 2;
  CHECK_EQ_INT(EINVAL, ferry_array_move(NULL, &released));
  CHECK_EQ_INT(EINVAL, ferry_array_move(&live_a, NULL));
  CHECK_EQ_INT(EINVAL, ferry_array_move(&released, &live_a)); /* released source */
  CHECK_EQ_INT(EINVAL, ferry_array_move(&live_a, &live_b));   /* live destination */
  CHECK_EQ_INT(EINVAL, ferry_array_move(&live_a, &live_a));   /* self */
  CHECK(live_a.release == count_array_release && live_a.length == 1);
  CHECK(live_b.release == count_array_release && live_b.length == 2);
  ferry_array_release(&live_a);
  ferry_array_release(&live_b);
  CHECK_EQ_INT(2, array_releases);
}

FERRY_TEST(schema_move_and_einval) {
  reset_counts();
  struct ArrowSchema src = {0}, dst = {0};
  src.format = "i";
  src.release = count_schema_release;
  CHECK_EQ_INT(EINVAL, ferry_schema_move(&dst, &src));
  CHECK_EQ_INT(EINVAL, ferry_schema_move(NULL, &dst));
  CHECK_EQ_INT(EINVAL, ferry_schema_move(&src, NULL));
  CHECK_EQ_INT(FERRY_OK, ferry_schema_move(&src, &dst));
  CHECK(ferry_schema_is_released(&src));
  CHECK_STR("i", ferry_schema_format(&dst));
  CHECK_EQ_INT(EINVAL, ferry_schema_move(&src, &dst)); /* src released now */
  struct ArrowSchema other = {0};
  other.release = count_schema_release;
  CHECK_EQ_INT(EINVAL, ferry_schema_move(&other, &dst)); /* dst live */
  ferry_schema_release(&dst);
  ferry_schema_release(&other);
  CHECK_EQ_INT(2, schema_releases);
}

FERRY_TEST(device_array_move_copies_device_fields) {
  reset_counts();
  int event = 0;
  struct ArrowDeviceArray src = {0}, dst = {0};
  src.array.release = count_array_release;
  src.array.length = 3;
  src.device_type = ARROW_DEVICE_EXT_DEV;
  src.device_id = 2;
  src.sync_event = &event;
  CHECK_EQ_INT(FERRY_OK, ferry_device_array_move(&src, &dst));
  CHECK(ferry_device_array_is_released(&src));
  CHECK_EQ_INT(ARROW_DEVICE_EXT_DEV, ferry_device_array_device_type(&dst));
  CHECK_EQ_INT(2, ferry_device_array_device_id(&dst));
  CHECK(ferry_device_array_sync_event(&dst) == &event);
  CHECK_EQ_INT(3, dst.array.length);
  CHECK_EQ_INT(EINVAL, ferry_device_array_move(&src, &dst));
  CHECK_EQ_INT(EINVAL, ferry_device_array_move(NULL, &dst));
  CHECK_EQ_INT(EINVAL, ferry_device_array_move(&dst, NULL));
  CHECK_EQ_INT(EINVAL, ferry_device_array_move(&dst, &dst));
  ferry_device_array_release(&dst);
  CHECK_EQ_INT(1, array_releases);
}

FERRY_TEST(device_array_move_copies_every_byte) {
  /* The move copies word by word (and device_type as two halves); every
   * byte, padding included, must still arrive exactly once and unchanged. */
  reset_counts();
  struct ArrowDeviceArray src, dst, expected;
  unsigned char* bytes = (unsigned char*)&src;
  for (size_t i = 0; i < sizeof(src); i++) bytes[i] = (unsigned char)(i * 7 + 1);
  src.array.release = count_array_release;
  expected = src;
  memset(&dst, 0, sizeof(dst));
  CHECK_EQ_INT(FERRY_OK, ferry_device_array_move(&src, &dst));
  CHECK_EQ_INT(0, memcmp(&dst, &expected, sizeof(dst)));
  /* The source changes only in its release callback. */
  CHECK(src.array.release == NULL);
  src.array.release = count_array_release;
  CHECK_EQ_INT(0, memcmp(&src, &expected, sizeof(src)));
  src.array.release = NULL;
  ferry_device_array_release(&dst);
  CHECK_EQ_INT(1, array_releases);
}

FERRY_TEST(stream_move_and_einval) {
  reset_counts();
  struct ArrowDeviceArrayStream src = {0}, dst = {0};
  src.device_type = ARROW_DEVICE_CUDA;
  src.release = count_stream_release;
  CHECK_EQ_INT(EINVAL, ferry_array_stream_move(&dst, &src));
  CHECK_EQ_INT(FERRY_OK, ferry_array_stream_move(&src, &dst));
  CHECK(ferry_array_stream_is_released(&src));
  CHECK_EQ_INT(ARROW_DEVICE_CUDA, ferry_array_stream_device_type(&dst));
  CHECK_EQ_INT(EINVAL, ferry_array_stream_move(&src, &dst));
  CHECK_EQ_INT(EINVAL, ferry_array_stream_move(NULL, &dst));
  CHECK_EQ_INT(EINVAL, ferry_array_stream_move(&dst, NULL));
  ferry_array_stream_release(&dst);
  CHECK_EQ_INT(1, stream_releases);
}

FERRY_TEST_MAIN()
