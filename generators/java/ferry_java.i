/* SWIG interface for ferry's Java JNI layer (io.github.ferryarrow.ferry.jni.FerryNative).
 *
 * Regenerate with generators/java/gen.sh (or ./dev.sh regen); the output is
 * committed and checked for staleness by generators/java/check.sh.
 *
 * The one native layer of the binding: ferry's API, plus the binding's own
 * one-call helpers and slot layouts declared once in
 * bindings/java/src/main/c/ferry_jni.h (constants and functions alike);
 * no JNI entry point and no layout is written by hand. SWIG does not parse
 * ferry.h: gen.sh has generators/cdecl.py write ferry's declarations from
 * core/abi/api.json into ferry_api.h (ferry.h, arrow_c_device_abi.h and
 * ferry_version.h: not DLPack's structures), which is %included below; the
 * compiled wrapper includes the real headers.
 *
 * What this file decides, and why:
 * - Every pointer (ABI structs, FerryDevice, void*, callback functions) is a
 *   Java `long` address. SWIG's opaque SWIGTYPE_p_* proxies cannot be
 *   created from Java or passed between libraries, and the ABI structs'
 *   fields are read through ferry's accessor functions only, so the struct
 *   definitions are hidden (%ignore) and no proxy class is generated.
 * - int64_t is Java long through stdint.i WITHOUT -DSWIGWORDSIZE64 (with it
 *   int64_t becomes C long, which SWIG maps to Java int: silent truncation).
 * - Functions returning an errno code throw io.github.ferryarrow.ferry.FerryException(code,
 *   message) when it is not FERRY_OK: the wrapper passes a FerryError of its
 *   own and reads its message. Out parameters become one-element Java
 *   arrays; predicates become boolean.
 */
%module FerryNative

%include <stdint.i>
%include <typemaps.i>

%{
#include <stdint.h>
#include "ferry/ferry.h"
#include "ferry/dlpack_abi.h"
#include "ferry_jni.h"
#include "ferry_jni_support.h"
%}

/* ---- pointers as long addresses ---------------------------------------- */

%define FERRY_ADDRESS(CTYPE)
%typemap(jni) CTYPE "jlong"
%typemap(jtype) CTYPE "long"
%typemap(jstype) CTYPE "long"
%typemap(in) CTYPE %{ $1 = ($1_ltype)(intptr_t)$input; %}
%typemap(out) CTYPE %{ $result = (jlong)(intptr_t)$1; %}
%typemap(javain) CTYPE "$javainput"
%typemap(javaout) CTYPE { return $jnicall; }
%enddef

FERRY_ADDRESS(struct ArrowSchema*)
FERRY_ADDRESS(const struct ArrowSchema*)
FERRY_ADDRESS(struct ArrowArray*)
FERRY_ADDRESS(const struct ArrowArray*)
FERRY_ADDRESS(struct ArrowDeviceArray*)
FERRY_ADDRESS(const struct ArrowDeviceArray*)
FERRY_ADDRESS(struct ArrowDeviceArrayStream*)
FERRY_ADDRESS(const struct ArrowDeviceArrayStream*)
FERRY_ADDRESS(struct ArrowArrayStream*)
FERRY_ADDRESS(struct FerryDevice*)
FERRY_ADDRESS(const struct FerryDevice*)
FERRY_ADDRESS(struct FerryPreparedSchema*)
FERRY_ADDRESS(const struct FerryPreparedSchema*)
/* The async structs and ferry's async state machines: addresses too. */
FERRY_ADDRESS(struct ArrowAsyncDeviceStreamHandler*)
FERRY_ADDRESS(const struct ArrowAsyncDeviceStreamHandler*)
FERRY_ADDRESS(struct ArrowAsyncProducer*)
FERRY_ADDRESS(const struct ArrowAsyncProducer*)
FERRY_ADDRESS(struct ArrowAsyncTask*)
FERRY_ADDRESS(const struct ArrowAsyncTask*)
FERRY_ADDRESS(struct FerryAsyncSender*)
FERRY_ADDRESS(const struct FerryAsyncSender*)
FERRY_ADDRESS(struct FerryAsyncConsumer*)
/* DLPack tensors are opaque to Java too: their address is what Java hands to
 * another library (e.g. a DLPack-speaking consumer), never a proxy. */
FERRY_ADDRESS(struct DLManagedTensorVersioned*)
FERRY_ADDRESS(const struct DLManagedTensorVersioned*)
FERRY_ADDRESS(void*)
FERRY_ADDRESS(const void*)
FERRY_ADDRESS(const void* const*)
/* Callbacks are C functions (the trampolines of ferry_jni_support.c); Java
 * passes their addresses, obtained from ferry_jni_callback (ferry_jni.h). */
FERRY_ADDRESS(FerryReleaseHook)
FERRY_ADDRESS(FerryStreamGetSchemaFn)
FERRY_ADDRESS(FerryStreamGetNextFn)
FERRY_ADDRESS(FerryFindingFn)
FERRY_ADDRESS(FerryAsyncNotifyFn)

/* ---- ferry_jni.h: the JNIEnv, Java objects, text ----------------------- */

/* Functions of ferry_jni.h that throw into Java take the caller's JNIEnv:
 * the wrapper passes its own, Java passes nothing. */
%typemap(in, numinputs = 0) JNIEnv* env %{ $1 = jenv; %}

/* Direct ByteBuffers, as themselves (jobject would be java.lang.Object). */
%define FERRY_BYTE_BUFFER(DECL)
%typemap(jtype) DECL "java.nio.ByteBuffer"
%typemap(jstype) DECL "java.nio.ByteBuffer"
%typemap(javaout) DECL { return $jnicall; }
%enddef
FERRY_BYTE_BUFFER(jobject ferry_jni_slab_chunk)
FERRY_BYTE_BUFFER(jobject ferry_jni_new_direct_buffer)
FERRY_BYTE_BUFFER(jobject buffer)

/* Text from a producer (names, formats, get_last_error) may be any bytes;
 * JNI's NewStringUTF takes modified UTF-8 only (-Xcheck:jni aborts on
 * anything else), so every string goes through ferry_jni_new_string. */
%typemap(out) char*, const char* %{ $result = ferry_jni_new_string(jenv, (const char*)$1); %}

/* ---- out parameters as one-element arrays ------------------------------ */

/* T** out parameters (matched by name, so that `const void* const* buffers`
 * stays an input): Java long[1] receives the address. */
%define FERRY_ADDRESS_OUT(PARAM)
%typemap(jni) PARAM "jlongArray"
%typemap(jtype) PARAM "long[]"
%typemap(jstype) PARAM "long[]"
%typemap(javain) PARAM "$javainput"
%typemap(in) PARAM ($*1_ltype temp = 0) %{
  if (!$input || (*jenv)->GetArrayLength(jenv, $input) < 1) {
    ferry_jni_throw_illegal_argument(jenv, "out parameter must be an array of length >= 1");
    return $null;
  }
  $1 = &temp;
%}
%typemap(argout) PARAM %{
  {
    jlong value = (jlong)(intptr_t)temp$argnum;
    (*jenv)->SetLongArrayRegion(jenv, $input, 0, 1, &value);
  }
%}
%enddef

FERRY_ADDRESS_OUT(struct FerryDevice** out)
FERRY_ADDRESS_OUT(struct FerryPreparedSchema** out)
FERRY_ADDRESS_OUT(void** out)
FERRY_ADDRESS_OUT(void** stream_out)
FERRY_ADDRESS_OUT(void** sync_event_out)
FERRY_ADDRESS_OUT(struct ArrowSchema** dictionary_out)
FERRY_ADDRESS_OUT(struct ArrowArray** dictionary_out)
FERRY_ADDRESS_OUT(struct DLManagedTensorVersioned** out)
FERRY_ADDRESS_OUT(struct FerryAsyncSender** out)
FERRY_ADDRESS_OUT(struct FerryAsyncConsumer** out)

%apply int* OUTPUT { ArrowDeviceType* out };
%apply int* OUTPUT { int32_t* length };
%apply long long* OUTPUT { int64_t* size_out };

/* ---- errors become FerryException -------------------------------------- */

/* Functions returning an errno code keep their `int` result in Java, which
 * is always FERRY_OK when they return: the wrapper supplies the FerryError
 * and throws when the call failed.
 * argout runs after the call with `result` in scope, before any out array is
 * read by Java, so a failed call never hands back a half-set value. */
%typemap(in, numinputs = 0) struct FerryError* error (struct FerryError temp) %{
  ferry_error_init(&temp);
  $1 = &temp;
%}
%typemap(argout) struct FerryError* error %{
  if (result != FERRY_OK) {
    ferry_jni_throw_ferry(jenv, result, ferry_error_message(&temp$argnum), "$symname");
    return $null;
  }
%}
/* Out arrays are written before this runs (SWIG emits argouts in parameter
 * order and the error is last); Java never reads them when it throws. */

/* The moves return EINVAL without a FerryError. */
%define FERRY_RC_WITHOUT_ERROR(FN)
%typemap(out) int FN %{
  if ($1 != FERRY_OK) {
    ferry_jni_throw_ferry(jenv, $1, NULL, "$symname");
    return $null;
  }
%}
%enddef
FERRY_RC_WITHOUT_ERROR(ferry_schema_move)
FERRY_RC_WITHOUT_ERROR(ferry_array_move)
FERRY_RC_WITHOUT_ERROR(ferry_device_array_move)
FERRY_RC_WITHOUT_ERROR(ferry_array_stream_move)

/* Predicates return 0/1: Java boolean. */
%define FERRY_PREDICATE(FN)
%typemap(jni) int FN "jboolean"
%typemap(jtype) int FN "boolean"
%typemap(jstype) int FN "boolean"
%typemap(out) int FN %{ $result = (jboolean)($1 != 0); %}
%typemap(javaout) int FN { return $jnicall; }
%enddef
FERRY_PREDICATE(ferry_schema_is_released)
FERRY_PREDICATE(ferry_array_is_released)
FERRY_PREDICATE(ferry_device_array_is_released)
FERRY_PREDICATE(ferry_device_array_reserved_is_zero)
FERRY_PREDICATE(ferry_array_stream_is_released)
FERRY_PREDICATE(ferry_device_is_host_accessible)
FERRY_PREDICATE(ferry_async_handler_is_released)
FERRY_PREDICATE(ferry_async_task_is_released)
FERRY_PREDICATE(ferry_async_sender_is_cancelled)

/* Metadata is binary and the key/value pointers are not terminated: return
 * addresses; io.github.ferryarrow.ferry.jni.Support copies the bytes. */
%define FERRY_RAW_CHARS(FN)
%typemap(jni) const char* FN "jlong"
%typemap(jtype) const char* FN "long"
%typemap(jstype) const char* FN "long"
%typemap(out) const char* FN %{ $result = (jlong)(intptr_t)$1; %}
%typemap(javaout) const char* FN { return $jnicall; }
%enddef
FERRY_RAW_CHARS(ferry_schema_metadata)
FERRY_RAW_CHARS(ferry_schema_metadata_key)
FERRY_RAW_CHARS(ferry_schema_metadata_value)
FERRY_RAW_CHARS(ferry_async_producer_additional_metadata)

/* ---- what Java never sees ---------------------------------------------- */

/* Struct internals: read through accessors only. */
%ignore ArrowSchema;
%ignore ArrowArray;
%ignore ArrowArrayStream;
%ignore ArrowDeviceArray;
%ignore ArrowDeviceArrayStream;
%ignore FerryError;
%ignore FerryDevice;
%ignore FerryPreparedSchema;
%ignore DLManagedTensorVersioned;
%ignore ArrowAsyncDeviceStreamHandler;
%ignore ArrowAsyncProducer;
%ignore ArrowAsyncTask;
%ignore FerryAsyncSender;
%ignore FerryAsyncConsumer;
/* The error buffer is internal to every wrapper. */
%ignore ferry_error_init;
%ignore ferry_error_message;
%ignore ferry_error_new;
%ignore ferry_error_free;
/* ferry_jni.h's include guard is not API. */
%ignore FERRY_JNI_H;

/* The native methods need libferry_jni.so: load it (and check the ABI
 * version of libferry.so) when the JNI class is first used. */
%pragma(java) jniclasscode=%{
  static {
    NativeLoader.load();
  }
%}

/* Plain constants in FerryNativeConstants (no JNI call to read them). */
%javaconst(1);

%include "ferry_api.h"
%include "ferry_jni.h"
