/* Heap allocation, release and move of the ABI structs (consumer side).
 *
 * These are the few operations every binding needs on structs it did not
 * produce: they only touch the struct itself and call its release callback,
 * so they work for any producer, not just ferry's. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "word_copy.h"

/* ---- Release --------------------------------------------------------------
 * A released struct (release == NULL) or NULL is left alone, so releasing
 * twice is harmless. The callback itself sets release to NULL per the spec;
 * we clear it again afterwards so that a callback forgetting to do so cannot
 * make a second release call it twice. */

/* Calls the schema's release callback when live; the caller keeps the memory. */
void ferry_schema_release(struct ArrowSchema* schema) {
  if (schema == NULL || schema->release == NULL) return;
  schema->release(schema);
  schema->release = NULL;
}

/* Calls the array's release callback when live; the caller keeps the memory. */
void ferry_array_release(struct ArrowArray* array) {
  if (array == NULL || array->release == NULL) return;
  array->release(array);
  array->release = NULL;
}

/* Releases the embedded array when live; the caller keeps the memory. */
void ferry_device_array_release(struct ArrowDeviceArray* array) {
  /* Not a call to ferry_array_release: an exported function is called
   * through the PLT even from inside the library, and this is hot. */
  if (array == NULL || array->array.release == NULL) return;
  array->array.release(&array->array);
  array->array.release = NULL;
}

/* Calls the stream's release callback when live; the caller keeps the memory. */
void ferry_array_stream_release(struct ArrowDeviceArrayStream* stream) {
  if (stream == NULL || stream->release == NULL) return;
  stream->release(stream);
  stream->release = NULL;
}

/* ---- Heap allocation ----------------------------------------------------- */

/* Returns a zeroed schema the caller frees with ferry_schema_free. */
struct ArrowSchema* ferry_schema_new(void) {
  return (struct ArrowSchema*)calloc(1, sizeof(struct ArrowSchema));
}

/* Releases `schema` if live, then frees it (takes ownership). */
void ferry_schema_free(struct ArrowSchema* schema) {
  ferry_schema_release(schema);
  free(schema);
}

/* Returns a zeroed array the caller frees with ferry_array_free. */
struct ArrowArray* ferry_array_new(void) {
  return (struct ArrowArray*)calloc(1, sizeof(struct ArrowArray));
}

/* Releases `array` if live, then frees it (takes ownership). */
void ferry_array_free(struct ArrowArray* array) {
  ferry_array_release(array);
  free(array);
}

/* Returns a zeroed device array the caller frees with ferry_device_array_free. */
struct ArrowDeviceArray* ferry_device_array_new(void) {
  return (struct ArrowDeviceArray*)calloc(1, sizeof(struct ArrowDeviceArray));
}

/* Releases `array` if live, then frees it (takes ownership). */
void ferry_device_array_free(struct ArrowDeviceArray* array) {
  ferry_device_array_release(array);
  free(array);
}

/* Returns a zeroed stream the caller frees with ferry_array_stream_free. */
struct ArrowDeviceArrayStream* ferry_array_stream_new(void) {
  return (struct ArrowDeviceArrayStream*)calloc(1, sizeof(struct ArrowDeviceArrayStream));
}

/* Releases `stream` if live, then frees it (takes ownership). */
void ferry_array_stream_free(struct ArrowDeviceArrayStream* stream) {
  ferry_array_stream_release(stream);
  free(stream);
}

/* ---- Move -------------------------------------------------------------------
 * A bitwise copy plus release = NULL on the source: everything the struct
 * owns (private_data, children, buffers) stays where it is, only the handle
 * changes hands. The checks are what keeps a binding from silently leaking a
 * live destination or duplicating ownership of a released source (src ==
 * dst needs no test of its own: a live src is then a live dst). */

/* Moves `src` into released `dst`; on failure neither changes. */
int ferry_schema_move(struct ArrowSchema* src, struct ArrowSchema* dst) {
  if (src == NULL || dst == NULL || src->release == NULL || dst->release != NULL) {
    return EINVAL;
  }
  memcpy(dst, src, sizeof(*dst));
  src->release = NULL;
  return FERRY_OK;
}

/* Moves `src` into released `dst`; on failure neither changes. */
int ferry_array_move(struct ArrowArray* src, struct ArrowArray* dst) {
  if (src == NULL || dst == NULL || src->release == NULL || dst->release != NULL) {
    return EINVAL;
  }
  memcpy(dst, src, sizeof(*dst));
  src->release = NULL;
  return FERRY_OK;
}

/* Moves `src` (array, device and event) into released `dst`; on failure
 * neither changes. */
int ferry_device_array_move(struct ArrowDeviceArray* src, struct ArrowDeviceArray* dst) {
  if (src == NULL || dst == NULL || src->array.release == NULL ||
      dst->array.release != NULL) {
    return EINVAL;
  }
  /* The consumer's half of every handoff: 8-byte words, not memcpy's
   * 16-byte moves, because the producer has just written src field by
   * field (see ferry__copy_words). */
  ferry__copy_device_array(dst, src);
  src->array.release = NULL;
  return FERRY_OK;
}

/* Moves `src` into released `dst`; on failure neither changes. */
int ferry_array_stream_move(struct ArrowDeviceArrayStream* src,
                      struct ArrowDeviceArrayStream* dst) {
  if (src == NULL || dst == NULL || src->release == NULL || dst->release != NULL) {
    return EINVAL;
  }
  memcpy(dst, src, sizeof(*dst));
  src->release = NULL;
  return FERRY_OK;
}
