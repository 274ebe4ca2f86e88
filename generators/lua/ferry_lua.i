/* SWIG interface for ferry's raw Lua 5.4 layer (module `ferry_core`).
 *
 * Regenerate with generators/lua/gen.sh (output committed under
 * bindings/lua/src/generated/). What this file decides, and why:
 * - 64-bit values travel as Lua integers (lua_tointegerx/lua_pushinteger):
 *   SWIG 4.1 would otherwise go through lua_Number and lose bits above 2^53.
 * - Every pointer is a lightuserdata (NULL <-> nil), so the raw layer, the
 *   hand-written support functions and the idiomatic layer share one
 *   representation; no SWIG proxy ever frees or releases anything.
 * - Struct internals are hidden: only ferry.h's flat functions are wrapped.
 * - `struct FerryError* error` is not an argument: a stack-allocated error is
 *   passed, and its message is returned after the other results (nil when
 *   empty), so `rc, msg = f(...)`. Nothing raises after the C call started.
 * - Out-parameters become extra results, in parameter order.
 * - Producer callbacks cannot be Lua functions at this level; the trampolines
 *   live in lferry_support.c and are registered below with %native.
 */
%module ferry_core

%{
#include "ferry/ferry.h"
#include "lferry_support.h"
%}

/* ---- integers: exact, never through lua_Number ------------------------- */
%typemap(in, checkfn="lferry_is_integer") int64_t, int32_t, int, ArrowDeviceType
%{ $1 = ($1_ltype)lua_tointeger(L, $input); %}
%typemap(out) int64_t, int32_t, int, ArrowDeviceType
%{ lua_pushinteger(L, (lua_Integer)$1); SWIG_arg++; %}

/* ---- strings ------------------------------------------------------------- */
%typemap(in, checkfn="lferry_is_string_or_nil") const char*
%{ $1 = lua_isnil(L, $input) ? NULL : ($1_ltype)lua_tostring(L, $input); %}
%typemap(out) const char*
%{ if ($1) lua_pushstring(L, $1); else lua_pushnil(L); SWIG_arg++; %}

/* ---- pointers: lightuserdata, NULL <-> nil ------------------------------- */
%typemap(in, checkfn="lferry_is_pointer") SWIGTYPE*, void*, const void*
%{ $1 = ($1_ltype)lua_touserdata(L, $input); %}
%typemap(out) SWIGTYPE*, void*, const void*
%{ if ($1) lua_pushlightuserdata(L, (void*)$1); else lua_pushnil(L); SWIG_arg++; %}

/* Function pointers (release hooks, stream callbacks, finding sinks) come as
 * lightuserdata holding a C function address, e.g. from
 * lferry_free_hook(); Lua functions are never accepted here. */
%typemap(in, checkfn="lferry_is_pointer") FerryReleaseHook, FerryStreamGetSchemaFn,
    FerryStreamGetNextFn, FerryFindingFn
%{ $1 = ($1_ltype)lferry_to_function_pointer(L, $input); %}

/* ---- the error buffer: hidden, its message returned last ----------------- */
%typemap(in, numinputs=0) struct FerryError* error (struct FerryError temp)
%{ ferry_error_init(&temp); $1 = &temp; %}
%typemap(argout) struct FerryError* error
%{ if ($1->message[0]) lua_pushstring(L, $1->message); else lua_pushnil(L); SWIG_arg++; %}

/* ---- out-parameters ------------------------------------------------------- */
%typemap(in, numinputs=0) ArrowDeviceType* out (ArrowDeviceType temp = 0),
    int64_t* size_out (int64_t temp = 0)
%{ $1 = &temp; %}
%typemap(argout) ArrowDeviceType* out, int64_t* size_out
%{ lua_pushinteger(L, (lua_Integer)*$1); SWIG_arg++; %}

%typemap(in, numinputs=0) struct FerryDevice** out (struct FerryDevice* temp = NULL),
    struct FerryPreparedSchema** out (struct FerryPreparedSchema* temp = NULL),
    void** out (void* temp = NULL), void** stream_out (void* temp = NULL),
    void** sync_event_out (void* temp = NULL),
    struct DLManagedTensorVersioned** out (struct DLManagedTensorVersioned* temp = NULL),
    struct ArrowSchema** dictionary_out (struct ArrowSchema* temp = NULL),
    struct ArrowArray** dictionary_out (struct ArrowArray* temp = NULL)
%{ $1 = &temp; %}
%typemap(argout) struct FerryDevice** out, struct FerryPreparedSchema** out, void** out,
    void** stream_out,
    void** sync_event_out, struct DLManagedTensorVersioned** out, struct ArrowSchema** dictionary_out,
    struct ArrowArray** dictionary_out
%{ if (*$1) lua_pushlightuserdata(L, (void*)*$1); else lua_pushnil(L); SWIG_arg++; %}

/* Metadata keys and values are not terminated: returned as (string or nil). */
%typemap(in, numinputs=0) int32_t* length (int32_t temp = 0)
%{ $1 = &temp; %}
%typemap(out) const char* ferry_schema_metadata_key, const char* ferry_schema_metadata_value ""
%typemap(argout) int32_t* length
%{ if (result) lua_pushlstring(L, result, (size_t)*$1); else lua_pushnil(L); SWIG_arg++; %}

/* The buffer array of ferry_array_init: nil (set later) or a table of
 * lightuserdata/false, copied before the call into a stack block (up to 16
 * buffers: no allocation per export) or a GC-managed one. */
%typemap(in, checkfn="lferry_is_table_or_nil") const void* const* buffers (void* temp[16])
%{ $1 = ($1_ltype)lferry_to_buffer_list(L, $input, temp, 16); %}

/* Binary metadata is read through the key/value accessors, never as a C string. */
%ignore ferry_schema_metadata;

/* ---- what is wrapped: the flat functions, not the struct fields ---------- */
%ignore ArrowSchema;
%ignore ArrowArray;
%ignore ArrowArrayStream;
%ignore ArrowDeviceArray;
%ignore ArrowDeviceArrayStream;
%ignore FerryError;
%ignore FerryDevice;
%ignore FerryPreparedSchema;
/* The error struct is hidden, so its functions are of no use from Lua. */
%ignore ferry_error_init;
%ignore ferry_error_message;
%ignore ferry_error_new;
%ignore ferry_error_free;

/* SWIG cannot parse GCC attributes; visibility does not matter to it. */
#define __attribute__(x)
%include "ferry/arrow_c_device_abi.h"
%include "ferry/ferry_version.h"
%include "ferry/ferry.h"


/* ---- hand-written functions (lferry_support.c) -> ferry_core.support ---- */
%init %{
  lferry_support_register(L);
  /* SWIG adds two helpers to the global table; a module should not. */
  lua_pushnil(L);
  lua_setglobal(L, "swig_type");
  lua_pushnil(L);
  lua_setglobal(L, "swig_equals");
%}
