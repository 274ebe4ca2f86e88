/* ferry_jni_dlpack.c: what Java needs to hold a DLPack tensor by address
 * (ferry_jni.h): read its description and call its deleter.
 *
 * ferry_device_array_to_dlpack / _from_dlpack themselves are wrapped like
 * every function of ferry.h (the tensor is a `long` address); Java cannot
 * call the tensor's `deleter` function pointer nor read its fields, so these
 * two small functions do it. The long[] layout is FERRY_JNI_DLPACK_* of
 * ferry_jni.h, which Java reads as generated constants.
 */
#include <jni.h>
#include <stdint.h>

#include "ferry/dlpack_abi.h"
#include "ferry/ferry.h"
#include "ferry_jni.h"
#include "ferry_jni_support.h"

void ferry_jni_dlpack_describe(JNIEnv* env, const struct DLManagedTensorVersioned* t,
                               jlongArray out) {
  if (t == NULL) {
    ferry_jni_throw_illegal_argument(env, "null DLManagedTensorVersioned address");
    return;
  }
  jlong values[FERRY_JNI_DLPACK_SIZE] = {0};
  values[FERRY_JNI_DLPACK_VERSION_MAJOR] = t->version.major;
  values[FERRY_JNI_DLPACK_VERSION_MINOR] = t->version.minor;
  if (t->version.major == DLPACK_MAJOR_VERSION) {
    const DLTensor* d = &t->dl_tensor;
    values[FERRY_JNI_DLPACK_FLAGS] = (jlong)t->flags;
    values[FERRY_JNI_DLPACK_DATA] = (jlong)(intptr_t)d->data;
    values[FERRY_JNI_DLPACK_BYTE_OFFSET] = (jlong)d->byte_offset;
    values[FERRY_JNI_DLPACK_DEVICE_TYPE] = d->device.device_type;
    values[FERRY_JNI_DLPACK_DEVICE_ID] = d->device.device_id;
    values[FERRY_JNI_DLPACK_NDIM] = d->ndim;
    values[FERRY_JNI_DLPACK_CODE] = d->dtype.code;
    values[FERRY_JNI_DLPACK_BITS] = d->dtype.bits;
    values[FERRY_JNI_DLPACK_LANES] = d->dtype.lanes;
    values[FERRY_JNI_DLPACK_SHAPE0] = d->ndim > 0 && d->shape != NULL ? d->shape[0] : 0;
    values[FERRY_JNI_DLPACK_STRIDE0] = d->ndim > 0 && d->strides != NULL ? d->strides[0] : 0;
  }
  (*env)->SetLongArrayRegion(env, out, 0, FERRY_JNI_DLPACK_SIZE, values);
}

/* A NULL deleter means the producer keeps ownership: nothing is called. */
void ferry_jni_dlpack_delete(struct DLManagedTensorVersioned* t) {
  if (t != NULL && t->deleter != NULL) t->deleter(t);
}
