/* The C helpers of ferry's Lua 5.4 backend (the functions the backend
 * contract, ferry/backend/contract.lua, marks `c`; declared in
 * generated/lferry_helpers.h), the argument checks of the generated raw
 * layer, and the module's entry point. See lferry_support.h for the rules. */
#include "lferry_support.h"

#if LUA_VERSION_NUM >= 504

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ferry/dlpack_abi.h"

#define HANDLE_METATABLE "ferry.handle"
#define KEEPER_METATABLE "ferry.keeper"
#define PREPARED_METATABLE "ferry.prepared"
#define RUNTIME_METATABLE "ferry.runtime"

/* Process-wide count of what Lua exports own right now (buffers, device
 * allocations, anchored strings, owned events, live Lua-backed streams). */
static atomic_llong live_allocations;

int64_t lferry_live_allocations(void) { return (int64_t)atomic_load(&live_allocations); }

/* ------------------------------------------------------------------------ */
/* Arguments and results of the raw layer                                    */
/* ------------------------------------------------------------------------ */

lua_Integer lferry_check_integer(lua_State* L, int index) {
  int is_integer = 0;
  lua_Integer value = lua_tointegerx(L, index, &is_integer);
  if (!is_integer) {
    if (lua_type(L, index) == LUA_TNUMBER)
      luaL_argerror(L, index, "an integer expected, got a number without an integer value");
    luaL_typeerror(L, index, "integer");
  }
  return value;
}

lua_Integer lferry_check_int32(lua_State* L, int index) {
  lua_Integer value = lferry_check_integer(L, index);
  if (value < INT32_MIN || value > INT32_MAX) luaL_argerror(L, index, "out of the range of int32_t");
  return value;
}

const char* lferry_check_string(lua_State* L, int index) {
  if (lua_isnoneornil(L, index)) return NULL;
  if (lua_type(L, index) != LUA_TSTRING) luaL_typeerror(L, index, "string or nil");
  return lua_tostring(L, index);
}

void* lferry_check_pointer(lua_State* L, int index) {
  if (lua_isnoneornil(L, index)) return NULL;
  if (!lua_islightuserdata(L, index)) luaL_typeerror(L, index, "pointer (lightuserdata) or nil");
  return lua_touserdata(L, index);
}

/* ISO C has no void* <-> function pointer conversion; a union is the
 * portable-enough way on every platform ferry supports. */
typedef void (*generic_function)(void);
union function_address {
  void* data;
  generic_function function;
};

void (*lferry_check_function(lua_State* L, int index))(void) {
  union function_address address;
  address.data = lferry_check_pointer(L, index);
  return address.function;
}

static void push_function_address(lua_State* L, generic_function function) {
  union function_address address;
  address.function = function;
  lua_pushlightuserdata(L, address.data);
}

void** lferry_check_buffer_list(lua_State* L, int index, void** scratch, int scratch_size) {
  if (lua_isnoneornil(L, index)) return NULL;
  luaL_checktype(L, index, LUA_TTABLE);
  lua_Integer n = (lua_Integer)lua_rawlen(L, index);
  /* Small lists use the caller's stack block; larger ones a userdata left on
   * the stack: the GC owns it, so a later argument error cannot leak it. */
  void** list = n <= scratch_size
                    ? scratch
                    : (void**)lua_newuserdatauv(L, (size_t)n * sizeof(void*), 0);
  for (lua_Integer i = 1; i <= n; i++) {
    lua_rawgeti(L, index, i);
    list[i - 1] = lua_touserdata(L, -1); /* false/nil -> NULL */
    lua_pop(L, 1);
  }
  return list;
}

void lferry_push_pointer(lua_State* L, const void* pointer) {
  if (pointer) lua_pushlightuserdata(L, (void*)pointer);
  else lua_pushnil(L);
}

void lferry_push_string(lua_State* L, const char* string) {
  if (string) lua_pushstring(L, string);
  else lua_pushnil(L);
}

void lferry_push_message(lua_State* L, const struct FerryError* error) {
  if (error->message[0]) lua_pushstring(L, error->message);
  else lua_pushnil(L);
}

/* Pushes `code, message` (nil for a NULL message): a helper's first two
 * results. Returns 2. */
static int push_code(lua_State* L, int code, const char* message) {
  lua_pushinteger(L, code);
  lua_pushstring(L, message);
  return 2;
}

/* `false, code, message`: how helpers report bad data (see the contract). */
static int push_failure(lua_State* L, int code, const char* fmt, ...) {
  char message[FERRY_ERROR_MESSAGE_SIZE];
  va_list args;
  va_start(args, fmt);
  vsnprintf(message, sizeof(message), fmt, args);
  va_end(args);
  lua_pushboolean(L, 0);
  push_code(L, code, message);
  return 3;
}

/* ------------------------------------------------------------------------ */
/* The runtime: one per Lua universe, shared with callbacks on any thread    */
/* ------------------------------------------------------------------------ */

struct lferry_runtime {
  pthread_mutex_t lock; /* recursive: Lua consumers may pull Lua producers */
  lua_State* thread;    /* the Lua thread callbacks run on */
  int thread_ref;
  int closed;           /* set when the Lua state is closed */
  atomic_int refcount;  /* the state itself + every live keeper and stream */
  /* Registry references released from foreign threads are only queued here
   * and dropped by the Lua side, so a release hook never frees Lua objects. */
  int* pending_unrefs;
  size_t n_pending, cap_pending;
};

static char runtime_key; /* its address keys the runtime in the registry */

static void runtime_retain(struct lferry_runtime* rt) { atomic_fetch_add(&rt->refcount, 1); }

static void runtime_drop(struct lferry_runtime* rt) {
  if (atomic_fetch_sub(&rt->refcount, 1) == 1) {
    pthread_mutex_destroy(&rt->lock);
    free(rt->pending_unrefs);
    free(rt);
  }
}

/* How many holds this thread has on the lock of `held_runtime` (one runtime
 * tracked per thread: a thread holding a second runtime's lock inside the
 * first is not tracked for it, and release_all then releases nothing of
 * that one, which is safe). Only the holding thread touches its own. */
static _Thread_local struct lferry_runtime* held_runtime;
static _Thread_local int held_count;

void lferry_runtime_lock(struct lferry_runtime* rt) {
  pthread_mutex_lock(&rt->lock);
  if (held_runtime == rt) {
    held_count++;
  } else if (held_runtime == NULL) {
    held_runtime = rt;
    held_count = 1;
  }
}

void lferry_runtime_unlock(struct lferry_runtime* rt) {
  if (held_runtime == rt && --held_count == 0) held_runtime = NULL;
  pthread_mutex_unlock(&rt->lock);
}

int lferry_runtime_release_all(struct lferry_runtime* rt) {
  if (held_runtime != rt) return 0;
  int holds = held_count;
  held_runtime = NULL;
  held_count = 0;
  for (int i = 0; i < holds; i++) pthread_mutex_unlock(&rt->lock);
  return holds;
}

void lferry_runtime_reacquire(struct lferry_runtime* rt, int holds) {
  for (int i = 0; i < holds; i++) lferry_runtime_lock(rt);
}

/* Queues a registry reference for unref (any thread, never touches Lua). If
 * the queue cannot grow the reference is leaked, which is harmless. */
static void runtime_queue_unref(struct lferry_runtime* rt, int ref) {
  if (ref == LUA_NOREF || ref == LUA_REFNIL) return;
  lferry_runtime_lock(rt);
  if (!rt->closed) {
    if (rt->n_pending == rt->cap_pending) {
      size_t cap = rt->cap_pending ? rt->cap_pending * 2 : 16;
      int* grown = (int*)realloc(rt->pending_unrefs, cap * sizeof(int));
      if (grown) {
        rt->pending_unrefs = grown;
        rt->cap_pending = cap;
      }
    }
    if (rt->n_pending < rt->cap_pending) rt->pending_unrefs[rt->n_pending++] = ref;
  }
  lferry_runtime_unlock(rt);
}

/* Drops queued references; called with the Lua state usable (luaL_unref
 * never raises). */
static void runtime_drain(lua_State* L, struct lferry_runtime* rt) {
  lferry_runtime_lock(rt);
  for (size_t i = 0; i < rt->n_pending; i++) luaL_unref(L, LUA_REGISTRYINDEX, rt->pending_unrefs[i]);
  rt->n_pending = 0;
  lferry_runtime_unlock(rt);
}

static int runtime_gc(lua_State* L) {
  struct lferry_runtime** slot = (struct lferry_runtime**)lua_touserdata(L, 1);
  if (*slot) {
    lferry_runtime_lock(*slot);
    (*slot)->closed = 1;
    (*slot)->thread = NULL;
    lferry_runtime_unlock(*slot);
    runtime_drop(*slot);
    *slot = NULL;
  }
  return 0;
}

struct lferry_runtime* lferry_runtime_get(lua_State* L) {
  struct lferry_runtime* rt;
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &runtime_key) == LUA_TUSERDATA) {
    rt = *(struct lferry_runtime**)lua_touserdata(L, -1);
    lua_pop(L, 1);
    runtime_drain(L, rt);
    return rt;
  }
  lua_pop(L, 1);
  /* The userdata exists before the malloc, so a memory error raised by
   * anything below leaves at most a NULL slot for __gc. */
  struct lferry_runtime** slot =
      (struct lferry_runtime**)lua_newuserdatauv(L, sizeof(struct lferry_runtime*), 0);
  *slot = NULL;
  if (luaL_newmetatable(L, RUNTIME_METATABLE)) {
    lua_pushcfunction(L, runtime_gc);
    lua_setfield(L, -2, "__gc");
  }
  lua_setmetatable(L, -2);
  lua_State* thread = lua_newthread(L);
  /* Index 1 of the callback thread: the message handler of every callback
   * (pushing a light C function does not allocate). */
  lua_pushcfunction(thread, lferry_message_handler);
  int thread_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  rt = (struct lferry_runtime*)calloc(1, sizeof(*rt));
  if (!rt) luaL_error(L, "ferry: out of memory creating the Lua runtime");
  pthread_mutexattr_t attributes;
  pthread_mutexattr_init(&attributes);
  pthread_mutexattr_settype(&attributes, PTHREAD_MUTEX_RECURSIVE);
  pthread_mutex_init(&rt->lock, &attributes);
  pthread_mutexattr_destroy(&attributes);
  rt->thread = thread;
  rt->thread_ref = thread_ref;
  atomic_init(&rt->refcount, 1);
  *slot = rt;
  lua_rawsetp(L, LUA_REGISTRYINDEX, &runtime_key);
  return rt;
}

/* ------------------------------------------------------------------------ */
/* Calling Lua from C callbacks                                              */
/* ------------------------------------------------------------------------ */

/* The message handler sits at index 1 of the callback thread for the
 * thread's whole life (see lferry_runtime_get), so a callback pushes nothing
 * but the function and its argument. */
int lferry_message_handler(lua_State* L) {
  if (lua_istable(L, 1)) return 1;
  const char* message = lua_tostring(L, 1);
  if (!message) message = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
  luaL_traceback(L, L, message, 1);
  return 1;
}

/* The outcome of a failed callback, filled under protection. */
struct failure {
  int code;
  char message[FERRY_ERROR_MESSAGE_SIZE];
};

/* describe_protected(value, default_code, failure*): reads an error value
 * (string or ferry error table) into the failure. Runs under lua_pcall
 * because reading a table or converting a number may allocate, and a
 * memory error must not escape into the core's frames. */
static int describe_protected(lua_State* L) {
  struct failure* out = (struct failure*)lua_touserdata(L, 3);
  out->code = (int)lua_tointeger(L, 2);
  const char* message = NULL;
  if (lua_istable(L, 1)) {
    lua_getfield(L, 1, "code");
    if (lua_isinteger(L, -1) && lua_tointeger(L, -1) > 0) out->code = (int)lua_tointeger(L, -1);
    lua_getfield(L, 1, "message");
    message = lua_tostring(L, -1);
  } else {
    message = lua_tostring(L, 1);
  }
  snprintf(out->message, sizeof(out->message), "%s", message ? message : "Lua error");
  return 0;
}

/* Turns the failure value at `index` into `out` (never raises). */
static void describe_failure(lua_State* L, int index, int default_code, struct failure* out) {
  out->code = default_code;
  snprintf(out->message, sizeof(out->message), "Lua error");
  index = lua_absindex(L, index);
  if (!lua_checkstack(L, 4)) return;
  lua_pushcfunction(L, describe_protected);
  lua_pushvalue(L, index);
  lua_pushinteger(L, default_code);
  lua_pushlightuserdata(L, out);
  if (lua_pcall(L, 3, 0, 0) != LUA_OK) {
    out->code = ENOMEM;
    snprintf(out->message, sizeof(out->message), "Lua failure while reading a callback's error");
  }
}

/* Calls the Lua function `function_ref` with `argument` on the runtime's
 * callback thread, holding the runtime lock; returns 0 or an errno code with
 * the message in `error` (may be NULL). Never raises. One lua_pcall on the
 * success path: the function comes from the registry, the message handler
 * is already on the thread's stack. Callback convention: return nothing (or
 * true) on success; return nil, message[, code] (or raise) on failure. */
static int call_lua(struct lferry_runtime* rt, int function_ref, void* argument,
                    struct FerryError* error) {
  struct failure failure;
  failure.code = 0;
  lferry_runtime_lock(rt);
  if (rt->closed || !rt->thread) {
    failure.code = EIO;
    snprintf(failure.message, sizeof(failure.message), "the Lua state of this producer was closed");
  } else {
    lua_State* L = rt->thread;
    int top = lua_gettop(L);
    if (!lua_checkstack(L, 8)) {
      failure.code = ENOMEM;
      snprintf(failure.message, sizeof(failure.message), "Lua stack overflow in a ferry callback");
    } else {
      /* Neither push allocates: the registry lookup hits its array part. */
      lua_rawgeti(L, LUA_REGISTRYINDEX, function_ref);
      lua_pushlightuserdata(L, argument);
      if (lua_pcall(L, 1, 3, 1) != LUA_OK) {
        describe_failure(L, -1, EIO, &failure);
      } else if (!lua_isnil(L, top + 2)) {
        int code = lua_isinteger(L, top + 3) && lua_tointeger(L, top + 3) > 0
                       ? (int)lua_tointeger(L, top + 3)
                       : EIO;
        describe_failure(L, top + 2, code, &failure);
      }
    }
    lua_settop(L, top);
  }
  lferry_runtime_unlock(rt);
  if (failure.code && error) snprintf(error->message, sizeof(error->message), "%s", failure.message);
  return failure.code;
}

/* ------------------------------------------------------------------------ */
/* Handles: full userdata owning a heap ABI struct                           */
/* ------------------------------------------------------------------------ */

enum handle_kind { HANDLE_PAIR, HANDLE_SCHEMA, HANDLE_STREAM };

/* What an array holds: its ArrowDeviceArray and (unless shared) its schema. */
struct lferry_pair {
  struct ArrowDeviceArray array; /* first: the pair's address is the array's */
  struct ArrowSchema schema;
};

struct handle {
  enum handle_kind kind;
  void* ptr; /* NULL once freed */
};

static void handle_free_now(struct handle* h) {
  if (!h->ptr) return;
  switch (h->kind) {
    case HANDLE_PAIR: {
      struct lferry_pair* pair = (struct lferry_pair*)h->ptr;
      ferry_device_array_release(&pair->array);
      ferry_schema_release(&pair->schema);
      free(pair);
      break;
    }
    case HANDLE_SCHEMA: ferry_schema_free((struct ArrowSchema*)h->ptr); break;
    case HANDLE_STREAM: ferry_array_stream_free((struct ArrowDeviceArrayStream*)h->ptr); break;
  }
  h->ptr = NULL;
}

/* handle(kind) -> userdata, pointer[, schema pointer]. The userdata owns
 * zeroed structs ("pair": an ArrowDeviceArray and an ArrowSchema; "schema";
 * "stream"); __gc/__close (or handle_free) release them if live and free
 * them, once. */
int lferry_helper_handle(lua_State* L) {
  static const char* const kinds[] = {"pair", "schema", "stream", NULL};
  int kind = luaL_checkoption(L, 1, NULL, kinds);
  struct handle* h = (struct handle*)lua_newuserdatauv(L, sizeof(struct handle), 0);
  h->kind = (enum handle_kind)kind;
  h->ptr = NULL;
  luaL_setmetatable(L, HANDLE_METATABLE);
  switch (h->kind) {
    case HANDLE_PAIR: h->ptr = calloc(1, sizeof(struct lferry_pair)); break;
    case HANDLE_SCHEMA: h->ptr = ferry_schema_new(); break;
    case HANDLE_STREAM: h->ptr = ferry_array_stream_new(); break;
  }
  if (!h->ptr) return luaL_error(L, "ferry.handle: out of memory");
  lua_pushlightuserdata(L, h->ptr);
  if (h->kind != HANDLE_PAIR) return 2;
  lua_pushlightuserdata(L, &((struct lferry_pair*)h->ptr)->schema);
  return 3;
}

/* release_pair(array, schema): releases both structs of a pair (each may be
 * released already). */
int lferry_helper_release_pair(lua_State* L) {
  struct ArrowDeviceArray* array = (struct ArrowDeviceArray*)lua_touserdata(L, 1);
  struct ArrowSchema* schema = (struct ArrowSchema*)lua_touserdata(L, 2);
  if (array && array->array.release) ferry_device_array_release(array);
  if (schema && schema->release) ferry_schema_release(schema);
  return 0;
}

int lferry_helper_handle_free(lua_State* L) {
  struct handle* h = (struct handle*)luaL_checkudata(L, 1, HANDLE_METATABLE);
  handle_free_now(h);
  return 0;
}

/* ------------------------------------------------------------------------ */
/* Consuming: import, prepared schemas                                       */
/* ------------------------------------------------------------------------ */

/* Pushes an imported array's device type, device id and whether a sync
 * event is pending. */
static void push_device(lua_State* L, const struct ArrowDeviceArray* array) {
  lua_pushinteger(L, array->device_type);
  lua_pushinteger(L, (lua_Integer)array->device_id);
  lua_pushboolean(L, array->sync_event != NULL);
}

/* import(schema_in, array_in, schema, array, level) -> code, message. Both
 * moves happen or neither does; then the pair is validated (level >= 0) and
 * released when it fails. On success also returns the root's format, its
 * device type and id, whether a sync event is pending and whether the
 * schema has a dictionary. */
int lferry_helper_import(lua_State* L) {
  struct ArrowSchema* schema_in = (struct ArrowSchema*)lferry_check_pointer(L, 1);
  struct ArrowDeviceArray* array_in = (struct ArrowDeviceArray*)lferry_check_pointer(L, 2);
  struct ArrowSchema* schema = (struct ArrowSchema*)lferry_check_pointer(L, 3);
  struct ArrowDeviceArray* array = (struct ArrowDeviceArray*)lferry_check_pointer(L, 4);
  int level = (int)luaL_optinteger(L, 5, FERRY_VALIDATE_DEFAULT);
  luaL_argcheck(L, schema && array, 3, "destination structs expected");
  if (ferry_schema_move(schema_in, schema) != FERRY_OK)
    return push_code(L, EINVAL, "the schema is NULL or already released");
  if (ferry_device_array_move(array_in, array) != FERRY_OK) {
    ferry_schema_move(schema, schema_in); /* give it back: nothing was taken */
    return push_code(L, EINVAL, "the array is NULL or already released");
  }
  if (level >= 0) {
    struct FerryError error;
    error.message[0] = '\0';
    int rc = ferry_validate_device_array(schema, array, level, NULL, NULL, &error);
    if (rc != FERRY_OK) {
      ferry_device_array_release(array);
      ferry_schema_release(schema);
      return push_code(L, rc, error.message);
    }
  }
  push_code(L, 0, NULL);
  lferry_push_string(L, schema->format);
  push_device(L, array);
  lua_pushboolean(L, schema->dictionary != NULL);
  return 7;
}

struct prepared_slot {
  struct FerryPreparedSchema* prepared;
};

static int prepared_gc(lua_State* L) {
  struct prepared_slot* slot = (struct prepared_slot*)luaL_checkudata(L, 1, PREPARED_METATABLE);
  ferry_prepared_schema_free(slot->prepared);
  slot->prepared = NULL;
  return 0;
}

/* prepare(schema) -> owner | false, code, message */
int lferry_helper_prepare(lua_State* L) {
  const struct ArrowSchema* schema = (const struct ArrowSchema*)lferry_check_pointer(L, 1);
  struct prepared_slot* slot = (struct prepared_slot*)lua_newuserdatauv(L, sizeof(*slot), 0);
  slot->prepared = NULL;
  luaL_setmetatable(L, PREPARED_METATABLE);
  struct FerryError error;
  error.message[0] = '\0';
  int rc = ferry_prepared_schema_create(schema, NULL, NULL, &slot->prepared, &error);
  if (rc != FERRY_OK) return push_failure(L, rc, "%s", error.message);
  return 1;
}

int lferry_helper_prepared_free(lua_State* L) { return prepared_gc(L); }

static const struct FerryPreparedSchema* check_prepared(lua_State* L, int index) {
  struct prepared_slot* slot = (struct prepared_slot*)luaL_checkudata(L, index, PREPARED_METATABLE);
  if (!slot->prepared) luaL_argerror(L, index, "the prepared schema was freed");
  return slot->prepared;
}

/* validate_batch(prepared | nil, array, level) -> code, message, released,
 * device_type, device_id, pending: a batch just pulled, validated (when a
 * prepared schema is given) and described in one call. A failed batch is
 * released (it was taken from its producer). */
int lferry_helper_validate_batch(lua_State* L) {
  const struct FerryPreparedSchema* prepared = lua_isnoneornil(L, 1) ? NULL : check_prepared(L, 1);
  struct ArrowDeviceArray* array = (struct ArrowDeviceArray*)lferry_check_pointer(L, 2);
  int level = (int)luaL_optinteger(L, 3, FERRY_VALIDATE_DEFAULT);
  luaL_argcheck(L, array != NULL, 2, "device array pointer expected");
  if (!array->array.release) {
    push_code(L, 0, NULL);
    lua_pushboolean(L, 1);
    return 3;
  }
  if (prepared) {
    struct FerryError error;
    error.message[0] = '\0';
    int rc = ferry_validate_prepared(prepared, array, level, NULL, NULL, &error);
    if (rc != FERRY_OK) {
      ferry_device_array_release(array);
      return push_code(L, rc, error.message);
    }
  }
  push_code(L, 0, NULL);
  lua_pushboolean(L, 0);
  push_device(L, array);
  return 6;
}

/* ------------------------------------------------------------------------ */
/* Bounds-checked reads                                                      */
/* ------------------------------------------------------------------------ */

enum element_kind { K_I8, K_I16, K_I32, K_I64, K_U8, K_U16, K_U32, K_U64, K_F32, K_F64, K_BITS };
static const char* const element_kinds[] = {"i8", "i16", "i32", "i64", "u8", "u16",
                                            "u32", "u64", "f32", "f64", "bits", NULL};
static const int element_widths[] = {8, 16, 32, 64, 8, 16, 32, 64, 32, 64, 1};

/* The kind named by the string at `index`, without luaL_checkoption's
 * string compares: the names differ in their first two characters (the
 * hot path of every element read). */
static int check_kind(lua_State* L, int index) {
  size_t n = 0;
  const char* s = luaL_checklstring(L, index, &n);
  int kind = -1;
  if (n >= 2) {
    switch (s[0]) {
      case 'i': kind = s[1] == '8' ? K_I8 : s[1] == '1' ? K_I16 : s[1] == '3' ? K_I32 : s[1] == '6' ? K_I64 : -1; break;
      case 'u': kind = s[1] == '8' ? K_U8 : s[1] == '1' ? K_U16 : s[1] == '3' ? K_U32 : s[1] == '6' ? K_U64 : -1; break;
      case 'f': kind = s[1] == '3' ? K_F32 : s[1] == '6' ? K_F64 : -1; break;
      case 'b': kind = K_BITS; break;
    }
  }
  if (kind < 0 || strcmp(s, element_kinds[kind]) != 0)
    luaL_argerror(L, index, lua_pushfstring(L, "unknown element kind '%s'", s));
  return kind;
}

static const struct ArrowArray* check_array(lua_State* L, int index) {
  const struct ArrowArray* array = (const struct ArrowArray*)lferry_check_pointer(L, index);
  luaL_argcheck(L, array != NULL, index, "array pointer expected");
  return array;
}

static int bit_at(const void* bitmap, int64_t i) {
  return (((const uint8_t*)bitmap)[i >> 3] >> (i & 7)) & 1;
}

/* Pushes element `i` of the memory at `p` read as `kind`. */
static void push_element(lua_State* L, int kind, const void* p, int64_t i) {
  switch (kind) {
    case K_I8: lua_pushinteger(L, ((const int8_t*)p)[i]); break;
    case K_I16: lua_pushinteger(L, ((const int16_t*)p)[i]); break;
    case K_I32: lua_pushinteger(L, ((const int32_t*)p)[i]); break;
    case K_I64: lua_pushinteger(L, (lua_Integer)((const int64_t*)p)[i]); break;
    case K_U8: lua_pushinteger(L, ((const uint8_t*)p)[i]); break;
    case K_U16: lua_pushinteger(L, ((const uint16_t*)p)[i]); break;
    case K_U32: lua_pushinteger(L, ((const uint32_t*)p)[i]); break;
    /* uint64 comes back as the same 64 bits in a Lua integer (wraps). */
    case K_U64: lua_pushinteger(L, (lua_Integer)((const uint64_t*)p)[i]); break;
    case K_F32: lua_pushnumber(L, ((const float*)p)[i]); break;
    case K_F64: lua_pushnumber(L, ((const double*)p)[i]); break;
    case K_BITS: lua_pushboolean(L, bit_at(p, i)); break;
  }
}

/* What a reader refuses to read, on both backends (ferry/backend/luajit.lua
 * applies the same rule with the same messages). The C interface carries no
 * buffer sizes, so a CPU producer can declare a length its buffers do not
 * have (docs/validation.md); no consumer can catch every such lie, but one
 * whose declaration needs more bytes than a process can address at all
 * (2^48: the user address space of x86-64 and AArch64 with 48-bit
 * addresses, 256 TiB) is refused before any byte is read, so a bool array
 * claiming 2^62 elements over 64 bytes is an error, not a read 2^37 bytes
 * away. LFERRY_MAX_SLOTS is the most elements (offset included) whose
 * validity bitmap fits in that; it also keeps every index exact in a LuaJIT
 * number (2^53). */
#define LFERRY_MAX_BUFFER_BYTES (INT64_C(1) << 48)
#define LFERRY_MAX_SLOTS (LFERRY_MAX_BUFFER_BYTES * 8)

/* 0 when `count` elements of `width` bytes fit in LFERRY_MAX_BUFFER_BYTES;
 * else a failure pushed (3 values) naming buffer `b`. count <= 2^51 and
 * width <= 8 (the callers') cannot overflow. */
static int check_buffer_bytes(lua_State* L, const struct ArrowArray* a, int b, int64_t count,
                              int64_t width) {
  if (count * width <= LFERRY_MAX_BUFFER_BYTES) return 0;
  push_failure(L, EINVAL,
               "buffer %d of length %" PRId64 " at offset %" PRId64 " needs %" PRId64
               " bytes, more than a process can address (2^48)",
               b, a->length, a->offset, count * width);
  return -1;
}

/* The physical slot of logical element i (the argument at `index`), after
 * checking i against the array's length and the integers the slot
 * arithmetic relies on. Returns -1 with a failure pushed (3 values) when
 * something is off: ERANGE for the index, EINVAL for the array. */
static int64_t physical_index(lua_State* L, const struct ArrowArray* a, int index) {
  int is_integer = 0;
  lua_Integer i = lua_tointegerx(L, index, &is_integer);
  if (!is_integer) {
    push_failure(L, ERANGE, "index %s is not an integer", luaL_tolstring(L, index, NULL));
    return -1;
  }
  if (a->release == NULL) {
    push_failure(L, EINVAL, "the array is released");
    return -1;
  }
  if (a->length < 0 || a->offset < 0 || a->length > LFERRY_MAX_SLOTS - a->offset) {
    push_failure(L, EINVAL,
                 "length %" PRId64 " or offset %" PRId64
                 " is negative or too large: a reader takes at most 2^51 elements (offset "
                 "included), a bitmap of the largest buffer a process can address (2^48 bytes)",
                 a->length, a->offset);
    return -1;
  }
  if (i < 0 || i >= a->length) {
    push_failure(L, ERANGE, "index %" PRId64 " is out of range for a length of %" PRId64,
                 (int64_t)i, a->length);
    return -1;
  }
  return a->offset + (int64_t)i;
}

/* physical_index, then (n_buffers > 0) a check that the array has the
 * n_buffers buffers of a `layout` array; -1 with a failure pushed. */
static int64_t element_slot(lua_State* L, const struct ArrowArray* a, int index,
                            int64_t n_buffers, const char* layout) {
  int64_t slot = physical_index(L, a, index);
  if (slot >= 0 && a->n_buffers < n_buffers) {
    push_failure(L, EINVAL, "a %s array has %" PRId64 " buffers, not %" PRId64, layout,
                 n_buffers, a->n_buffers);
    return -1;
  }
  return slot;
}

static const void* buffer_at(const struct ArrowArray* a, int64_t b) {
  return a->buffers && b < a->n_buffers ? a->buffers[b] : NULL;
}

/* 1 when element `slot` is null by the bitmap (null_count 0 or a NULL bitmap: never). */
static int is_null_at(const struct ArrowArray* a, int64_t slot) {
  const void* validity = buffer_at(a, 0);
  return a->null_count != 0 && validity && !bit_at(validity, slot);
}

/* value(array, kind, i) -> true, value (nil when null) | false, code, message */
int lferry_helper_value(lua_State* L) {
  const struct ArrowArray* a = check_array(L, 1);
  int kind = check_kind(L, 2);
  int64_t slot = element_slot(L, a, 3, 2, "fixed-width");
  if (slot < 0) return 3;
  /* bits: the bitmap fits by physical_index's limit */
  if (kind != K_BITS && check_buffer_bytes(L, a, 1, a->offset + a->length, element_widths[kind] / 8) != 0)
    return 3;
  lua_pushboolean(L, 1);
  if (is_null_at(a, slot)) {
    lua_pushnil(L);
    return 2;
  }
  const void* p = buffer_at(a, 1);
  if (!p) return push_failure(L, EINVAL, "buffer 1 (values) is NULL in an array of length %" PRId64, a->length);
  push_element(L, kind, p, slot);
  return 2;
}

/* The offsets buffer (buffer 1) of a variable-size layout, checked to hold
 * offset + length + 1 offsets; NULL with the failure pushed. */
static const void* offsets_buffer(lua_State* L, const struct ArrowArray* a, int large) {
  const void* offsets = buffer_at(a, 1);
  if (!offsets) {
    push_failure(L, EINVAL, "buffer 1 (offsets) is NULL in an array of length %" PRId64, a->length);
    return NULL;
  }
  if (check_buffer_bytes(L, a, 1, a->offset + a->length + 1, large ? 8 : 4) != 0) return NULL;
  return offsets;
}

static int64_t offset_at(const void* offsets, int large, int64_t j) {
  return large ? ((const int64_t*)offsets)[j] : ((const int32_t*)offsets)[j];
}

/* Offsets j and j + 1 of a variable-size layout (from offsets_buffer),
 * checked against each other and against `limit` (the data's size or the
 * child's length). */
static int read_offsets(lua_State* L, const struct ArrowArray* a, const void* offsets, int large,
                        int64_t slot, int64_t limit, int64_t* first, int64_t* last) {
  *first = offset_at(offsets, large, slot);
  *last = offset_at(offsets, large, slot + 1);
  if (*first < 0 || *first > *last || *last > limit) {
    push_failure(L, EINVAL,
                 "offsets %" PRId64 " and %" PRId64 " of element %" PRId64
                 " are decreasing, negative or past the end (%" PRId64 ")",
                 *first, *last, slot - a->offset, limit);
    return -1;
  }
  return 0;
}

/* bytes(array, large, i) -> true, string (nil when null) | false, code, message */
int lferry_helper_bytes(lua_State* L) {
  const struct ArrowArray* a = check_array(L, 1);
  int large = lua_toboolean(L, 2);
  int64_t slot = element_slot(L, a, 3, 3, "binary or utf8");
  if (slot < 0) return 3;
  if (is_null_at(a, slot)) {
    lua_pushboolean(L, 1);
    lua_pushnil(L);
    return 2;
  }
  const void* offsets = offsets_buffer(L, a, large);
  if (!offsets) return 3;
  /* The data buffer's size by declaration: the last offset of the array. */
  int64_t size = offset_at(offsets, large, a->offset + a->length);
  if (size > LFERRY_MAX_BUFFER_BYTES)
    return push_failure(L, EINVAL,
                        "buffer 2 (data) of length %" PRId64 " at offset %" PRId64 " needs %" PRId64
                        " bytes by its last offset, more than a process can address (2^48)",
                        a->length, a->offset, size);
  int64_t first = 0, last = 0;
  if (read_offsets(L, a, offsets, large, slot, size, &first, &last) != 0) return 3;
  const char* data = (const char*)buffer_at(a, 2);
  if (!data && last > first)
    return push_failure(L, EINVAL, "buffer 2 (data) is NULL but element %" PRId64 " is not empty",
                        slot - a->offset);
  lua_pushboolean(L, 1);
  lua_pushlstring(L, last > first ? data + first : "", (size_t)(last - first));
  return 2;
}

/* list_bounds(array, large, i) -> true, first, last | false, code, message */
int lferry_helper_list_bounds(lua_State* L) {
  const struct ArrowArray* a = check_array(L, 1);
  int large = lua_toboolean(L, 2);
  int64_t slot = physical_index(L, a, 3);
  if (slot < 0) return 3;
  const struct ArrowArray* child = a->n_children == 1 && a->children ? a->children[0] : NULL;
  if (!child) return push_failure(L, EINVAL, "a list array has one child, not %" PRId64, a->n_children);
  if (a->n_buffers < 2) return push_failure(L, EINVAL, "a list array has 2 buffers, not %" PRId64, a->n_buffers);
  const void* offsets = offsets_buffer(L, a, large);
  if (!offsets) return 3;
  int64_t first = 0, last = 0;
  if (read_offsets(L, a, offsets, large, slot, child->length, &first, &last) != 0) return 3;
  lua_pushboolean(L, 1);
  lua_pushinteger(L, first);
  lua_pushinteger(L, last);
  return 3;
}

/* is_valid(array, i) -> true, boolean | false, code, message */
int lferry_helper_is_valid(lua_State* L) {
  const struct ArrowArray* a = check_array(L, 1);
  int64_t slot = physical_index(L, a, 2);
  if (slot < 0) return 3;
  lua_pushboolean(L, 1);
  lua_pushboolean(L, !is_null_at(a, slot));
  return 2;
}

/* validity_bit(array, i) -> true, boolean (nil without a bitmap) | false, code, message */
int lferry_helper_validity_bit(lua_State* L) {
  const struct ArrowArray* a = check_array(L, 1);
  int64_t slot = physical_index(L, a, 2);
  if (slot < 0) return 3;
  const void* validity = buffer_at(a, 0);
  lua_pushboolean(L, 1);
  if (validity) lua_pushboolean(L, bit_at(validity, slot));
  else lua_pushnil(L);
  return 2;
}

/* read(pointer, kind, index) -> value: UNCHECKED (see the contract). */
int lferry_helper_read(lua_State* L) {
  const uint8_t* p = (const uint8_t*)lua_touserdata(L, 1);
  int kind = check_kind(L, 2);
  lua_Integer i = luaL_checkinteger(L, 3);
  luaL_argcheck(L, p != NULL, 1, "NULL buffer");
  push_element(L, kind, p, i);
  return 1;
}

/* read_bytes(pointer, start, length) -> string (a copy; UNCHECKED). */
int lferry_helper_read_bytes(lua_State* L) {
  const char* p = (const char*)lua_touserdata(L, 1);
  lua_Integer start = luaL_checkinteger(L, 2);
  lua_Integer length = luaL_checkinteger(L, 3);
  luaL_argcheck(L, length >= 0, 3, "negative length");
  luaL_argcheck(L, p != NULL || length == 0, 1, "NULL buffer");
  lua_pushlstring(L, length ? p + start : "", (size_t)length);
  return 1;
}

/* pointer_add(pointer, bytes) -> pointer */
int lferry_helper_pointer_add(lua_State* L) {
  char* p = (char*)lua_touserdata(L, 1);
  lua_pushlightuserdata(L, p + luaL_checkinteger(L, 2));
  return 1;
}

/* address(pointer) -> the address as an integer (for display and tests). */
int lferry_helper_address(lua_State* L) {
  lua_pushinteger(L, (lua_Integer)(uintptr_t)lua_touserdata(L, 1));
  return 1;
}

/* ------------------------------------------------------------------------ */
/* Keepers: what a Lua export owns until its consumer releases it            */
/* ------------------------------------------------------------------------ */

enum entry_kind {
  ENTRY_MALLOC,
  ENTRY_DEVICE_MEMORY,
  ENTRY_REF,
  ENTRY_DEVICE_STREAM,
  ENTRY_EVENT,    /* a native event: ferry_device_event_destroy */
  ENTRY_CALL_LUA  /* an adopted pointer: the Lua function `ref` is called with it */
};

struct keeper_entry {
  enum entry_kind kind;
  void* ptr;
  struct FerryDevice* device;
  int ref;
};

struct lferry_keeper {
  struct lferry_runtime* rt;
  struct keeper_entry* entries;
  size_t n, cap;
  void* device_stream; /* the producer stream for device copies, if any */
  struct FerryDevice* stream_device;
};

/* The userdata points at the keeper until ownership passes to a release
 * hook (disown), after which __gc leaves it alone. */
struct keeper_slot {
  struct lferry_keeper* keeper;
};

static void keeper_destroy(struct lferry_keeper* k) {
  for (size_t i = k->n; i-- > 0;) {
    struct keeper_entry* e = &k->entries[i];
    switch (e->kind) {
      case ENTRY_MALLOC: free(e->ptr); break;
      case ENTRY_DEVICE_MEMORY: ferry_device_deallocate(e->device, e->ptr, NULL); break;
      case ENTRY_REF: runtime_queue_unref(k->rt, e->ref); break;
      case ENTRY_DEVICE_STREAM:
        /* Copies may still be queued on it (strict sim runs them only when
         * waited on); finish them before the memory goes away. */
        ferry_device_stream_synchronize(e->device, e->ptr, NULL);
        ferry_device_stream_destroy(e->device, e->ptr, NULL);
        break;
      case ENTRY_EVENT: ferry_device_event_destroy(e->device, e->ptr, NULL); break;
      case ENTRY_CALL_LUA:
        /* The owner's destructor, under the rules of stream callbacks; a
         * failure cannot be reported to anyone (the consumer is releasing). */
        call_lua(k->rt, e->ref, e->ptr, NULL);
        runtime_queue_unref(k->rt, e->ref);
        break;
    }
  }
  atomic_fetch_sub(&live_allocations, (long long)k->n);
  runtime_drop(k->rt);
  free(k->entries);
  free(k);
}

/* The release hook of every Lua export: runs on any thread; touches Lua only
 * to call the destructor of an adopted pointer (call_lua, locked). */
static void keeper_release_hook(void* user_data) {
  keeper_destroy((struct lferry_keeper*)user_data);
}

static struct lferry_keeper* check_keeper(lua_State* L, int index) {
  struct keeper_slot* slot = (struct keeper_slot*)luaL_checkudata(L, index, KEEPER_METATABLE);
  if (!slot->keeper) luaL_error(L, "ferry: this export was already handed over");
  return slot->keeper;
}

/* Reserves room for one more entry; raises before anything is allocated. */
static void keeper_reserve(lua_State* L, struct lferry_keeper* k) {
  if (k->n < k->cap) return;
  size_t cap = k->cap ? k->cap * 2 : 8;
  struct keeper_entry* grown =
      (struct keeper_entry*)realloc(k->entries, cap * sizeof(struct keeper_entry));
  if (!grown) luaL_error(L, "ferry: out of memory");
  k->entries = grown;
  k->cap = cap;
}

static void keeper_add(struct lferry_keeper* k, enum entry_kind kind, void* ptr,
                       struct FerryDevice* device, int ref) {
  struct keeper_entry* e = &k->entries[k->n++];
  e->kind = kind;
  e->ptr = ptr;
  e->device = device;
  e->ref = ref;
  atomic_fetch_add(&live_allocations, 1);
}

static int keeper_gc(lua_State* L) {
  struct keeper_slot* slot = (struct keeper_slot*)luaL_checkudata(L, 1, KEEPER_METATABLE);
  if (slot->keeper) {
    keeper_destroy(slot->keeper);
    slot->keeper = NULL;
  }
  return 0;
}

int lferry_helper_keeper_new(lua_State* L) {
  struct lferry_runtime* rt = lferry_runtime_get(L);
  struct keeper_slot* slot = (struct keeper_slot*)lua_newuserdatauv(L, sizeof(*slot), 0);
  slot->keeper = NULL;
  luaL_setmetatable(L, KEEPER_METATABLE);
  struct lferry_keeper* k = (struct lferry_keeper*)calloc(1, sizeof(*k));
  if (!k) return luaL_error(L, "ferry: out of memory");
  k->rt = rt;
  runtime_retain(rt);
  slot->keeper = k;
  return 1;
}

/* keeper_pointer(k) -> the user_data to pass with keeper_hook() */
int lferry_helper_keeper_pointer(lua_State* L) {
  lua_pushlightuserdata(L, check_keeper(L, 1));
  return 1;
}

/* keeper_disown(k): a release hook now owns the keeper. */
int lferry_helper_keeper_disown(lua_State* L) {
  check_keeper(L, 1);
  ((struct keeper_slot*)lua_touserdata(L, 1))->keeper = NULL;
  return 0;
}

int lferry_helper_keeper_hook(lua_State* L) {
  push_function_address(L, (generic_function)keeper_release_hook);
  return 1;
}

/* keeper_free(k): frees now (an export that failed before its hook took over). */
int lferry_helper_keeper_free(lua_State* L) { return keeper_gc(L); }

/* Checks element i (1-based) of the table at `index` for `kind`; raises a
 * message naming the element (nothing is allocated yet). */
static void check_element(lua_State* L, int index, lua_Integer i, int kind) {
  int type = lua_rawgeti(L, index, i);
  if (type == LUA_TNIL) {
    lua_pop(L, 1);
    return;
  }
  if (kind == K_BITS) {
    if (type != LUA_TBOOLEAN && !(type == LUA_TNUMBER && lua_isinteger(L, -1) &&
                                  (lua_tointeger(L, -1) == 0 || lua_tointeger(L, -1) == 1)))
      luaL_error(L, "ferry.pack: element %d must be a boolean, 0 or 1, got %s", (int)i,
                 luaL_typename(L, -1));
  } else if (kind == K_F32 || kind == K_F64) {
    if (type != LUA_TNUMBER)
      luaL_error(L, "ferry.pack: element %d must be a number, got %s", (int)i,
                 luaL_typename(L, -1));
  } else {
    int is_integer = 0;
    lua_Integer v = type == LUA_TNUMBER ? lua_tointegerx(L, -1, &is_integer) : 0;
    if (!is_integer)
      luaL_error(L, "ferry.pack: element %d must be an integer for %s, got %s", (int)i,
                 element_kinds[kind], type == LUA_TNUMBER ? "a float" : luaL_typename(L, -1));
    int width = element_widths[kind];
    if (width < 64) {
      /* Accept both the signed and the unsigned reading of the width. */
      lua_Integer low = -((lua_Integer)1 << (width - 1));
      lua_Integer high = ((lua_Integer)1 << width) - 1;
      if (v < low || v > high)
        luaL_error(L, "ferry.pack: element %d (%I) does not fit in %s", (int)i, v,
                   element_kinds[kind]);
    }
  }
  lua_pop(L, 1);
}

static void store_element(lua_State* L, int index, lua_Integer i, int kind, void* out) {
  int type = lua_rawgeti(L, index, i);
  size_t at = (size_t)(i - 1);
  if (kind == K_BITS) {
    int bit = type == LUA_TBOOLEAN ? lua_toboolean(L, -1)
              : type == LUA_TNUMBER ? (lua_tointeger(L, -1) != 0)
                                    : 0;
    uint8_t* bytes = (uint8_t*)out;
    if (bit) bytes[at / 8] |= (uint8_t)(1u << (at % 8));
  } else if (kind == K_F32) {
    ((float*)out)[at] = type == LUA_TNIL ? 0.0f : (float)lua_tonumber(L, -1);
  } else if (kind == K_F64) {
    ((double*)out)[at] = type == LUA_TNIL ? 0.0 : (double)lua_tonumber(L, -1);
  } else {
    lua_Integer v = type == LUA_TNIL ? 0 : lua_tointeger(L, -1);
    switch (kind) {
      case K_I8: case K_U8: ((uint8_t*)out)[at] = (uint8_t)v; break;
      case K_I16: case K_U16: ((uint16_t*)out)[at] = (uint16_t)v; break;
      case K_I32: case K_U32: ((uint32_t*)out)[at] = (uint32_t)v; break;
      default: ((uint64_t*)out)[at] = (uint64_t)v; break;
    }
  }
  lua_pop(L, 1);
}

/* keeper_pack(k, kind, table, n) -> pointer, size. Packs table[1..n] (nil
 * holes become 0/false) into a new host buffer owned by the keeper: the one
 * copy from Lua values to memory; everything after is zero-copy. */
int lferry_helper_keeper_pack(lua_State* L) {
  struct lferry_keeper* k = check_keeper(L, 1);
  int kind = check_kind(L, 2);
  luaL_checktype(L, 3, LUA_TTABLE);
  lua_Integer n = luaL_checkinteger(L, 4);
  luaL_argcheck(L, n >= 0, 4, "negative element count");
  for (lua_Integer i = 1; i <= n; i++) check_element(L, 3, i, kind);
  size_t size = kind == K_BITS ? (size_t)((n + 7) / 8) : (size_t)n * (size_t)(element_widths[kind] / 8);
  keeper_reserve(L, k);
  /* From here on nothing raises: rawgeti of numbers does not allocate. */
  void* buffer = calloc(1, size > 0 ? size : 1);
  if (!buffer) return luaL_error(L, "ferry.pack: out of memory for %d bytes", (int)size);
  keeper_add(k, ENTRY_MALLOC, buffer, NULL, LUA_NOREF);
  for (lua_Integer i = 1; i <= n; i++) store_element(L, 3, i, kind, buffer);
  lua_pushlightuserdata(L, buffer);
  lua_pushinteger(L, (lua_Integer)size);
  return 2;
}

/* keeper_alloc(k, size) -> pointer: zeroed host memory owned by the keeper,
 * for Lua code that writes a buffer itself. */
int lferry_helper_keeper_alloc(lua_State* L) {
  struct lferry_keeper* k = check_keeper(L, 1);
  lua_Integer size = luaL_checkinteger(L, 2);
  luaL_argcheck(L, size >= 0, 2, "negative size");
  keeper_reserve(L, k);
  void* buffer = calloc(1, size > 0 ? (size_t)size : 1);
  if (!buffer) return luaL_error(L, "ferry.alloc: out of memory for %I bytes", size);
  keeper_add(k, ENTRY_MALLOC, buffer, NULL, LUA_NOREF);
  lua_pushlightuserdata(L, buffer);
  return 1;
}

/* keeper_string(k, s) -> pointer, size: the string's own bytes, zero-copy;
 * the string stays anchored in the registry until the export is released. */
int lferry_helper_keeper_string(lua_State* L) {
  struct lferry_keeper* k = check_keeper(L, 1);
  size_t size = 0;
  const char* bytes = luaL_checklstring(L, 2, &size);
  keeper_reserve(L, k);
  lua_pushvalue(L, 2);
  int ref = luaL_ref(L, LUA_REGISTRYINDEX);
  keeper_add(k, ENTRY_REF, NULL, NULL, ref);
  lua_pushlightuserdata(L, (void*)bytes);
  lua_pushinteger(L, (lua_Integer)size);
  return 2;
}

/* keeper_to_device(k, host_pointer, size, device, stream) -> device pointer,
 * or nil, code, message. Copies ordered on `stream` (the caller's, borrowed)
 * or on the keeper's producer stream (created on first use), so the export
 * carries a real sync event. */
int lferry_helper_keeper_to_device(lua_State* L) {
  struct lferry_keeper* k = check_keeper(L, 1);
  const void* host = lua_touserdata(L, 2);
  lua_Integer size = luaL_checkinteger(L, 3);
  struct FerryDevice* device = (struct FerryDevice*)lua_touserdata(L, 4);
  void* stream = lferry_check_pointer(L, 5);
  luaL_argcheck(L, device != NULL, 4, "device expected");
  luaL_argcheck(L, size >= 0, 3, "negative size");
  luaL_argcheck(L, k->stream_device == NULL || k->stream_device == device, 4,
                "one export lives on one device");
  struct FerryError error;
  ferry_error_init(&error);
  int rc = FERRY_OK;
  void* memory = NULL;
  struct FerryDevice* cpu = NULL;
  keeper_reserve(L, k);
  if (!stream && !k->device_stream) {
    rc = ferry_device_stream_create(device, &stream, &error);
    if (rc != FERRY_OK) goto failed_with_code;
    keeper_add(k, ENTRY_DEVICE_STREAM, stream, device, LUA_NOREF);
    k->device_stream = stream;
    keeper_reserve(L, k);
  } else if (!stream) {
    stream = k->device_stream;
  }
  k->stream_device = device;
  rc = ferry_device_allocate(device, size > 0 ? size : 1, &memory, &error);
  if (rc != FERRY_OK) goto failed_with_code;
  keeper_add(k, ENTRY_DEVICE_MEMORY, memory, device, LUA_NOREF);
  rc = ferry_device_resolve(ARROW_DEVICE_CPU, -1, &cpu, &error);
  if (rc == FERRY_OK && size > 0)
    rc = ferry_device_memcpy(device, memory, cpu, host, size, stream, &error);
  if (rc != FERRY_OK) goto failed_with_code;
  lua_pushlightuserdata(L, memory);
  return 1;
failed_with_code:
  /* Everything allocated so far is owned by the keeper. */
  lua_pushnil(L);
  push_code(L, rc, error.message);
  return 3;
}

/* keeper_device_stream(k) -> the keeper's own producer stream, or nil. */
int lferry_helper_keeper_device_stream(lua_State* L) {
  struct lferry_keeper* k = check_keeper(L, 1);
  lferry_push_pointer(L, k->device_stream);
  return 1;
}

/* keeper_adopt(k, what, device, pointer, destroy) -> true: the keeper owns a
 * native event ("event") or device memory ("memory") from now on. */
int lferry_helper_keeper_adopt(lua_State* L) {
  static const char* const whats[] = {"event", "memory", NULL};
  struct lferry_keeper* k = check_keeper(L, 1);
  int what = luaL_checkoption(L, 2, NULL, whats);
  struct FerryDevice* device = (struct FerryDevice*)lferry_check_pointer(L, 3);
  void* pointer = lferry_check_pointer(L, 4);
  luaL_argcheck(L, device != NULL, 3, "device expected");
  luaL_argcheck(L, pointer != NULL, 4, "pointer expected");
  luaL_argcheck(L, lua_isnoneornil(L, 5) || lua_isfunction(L, 5), 5, "function or nil expected");
  keeper_reserve(L, k);
  if (lua_isfunction(L, 5)) {
    lua_pushvalue(L, 5);
    int ref = luaL_ref(L, LUA_REGISTRYINDEX);
    keeper_add(k, ENTRY_CALL_LUA, pointer, device, ref);
  } else {
    keeper_add(k, what == 0 ? ENTRY_EVENT : ENTRY_DEVICE_MEMORY, pointer, device, LUA_NOREF);
  }
  lua_pushboolean(L, 1);
  return 1;
}

/* ------------------------------------------------------------------------ */
/* Streams produced by Lua functions                                         */
/* ------------------------------------------------------------------------ */

struct stream_context {
  struct lferry_runtime* rt;
  int get_schema_ref;
  int get_next_ref;
};

static int stream_get_schema(void* user_data, struct ArrowSchema* out, struct FerryError* error) {
  struct stream_context* ctx = (struct stream_context*)user_data;
  return call_lua(ctx->rt, ctx->get_schema_ref, out, error);
}

static int stream_get_next(void* user_data, struct ArrowDeviceArray* out,
                           struct FerryError* error) {
  struct stream_context* ctx = (struct stream_context*)user_data;
  return call_lua(ctx->rt, ctx->get_next_ref, out, error);
}

/* Runs on any thread; the Lua functions are only queued for unref. */
static void stream_release(void* user_data) {
  struct stream_context* ctx = (struct stream_context*)user_data;
  runtime_queue_unref(ctx->rt, ctx->get_schema_ref);
  runtime_queue_unref(ctx->rt, ctx->get_next_ref);
  runtime_drop(ctx->rt);
  free(ctx);
  atomic_fetch_sub(&live_allocations, 1);
}

/* stream_export(out, device_type, get_schema, get_next) -> code, message.
 * get_schema(schema_ptr) and get_next(device_array_ptr) fill their
 * argument; they return nothing on success or nil, message[, code]; a
 * raised error becomes EIO with its traceback. */
int lferry_helper_stream_export(lua_State* L) {
  struct ArrowDeviceArrayStream* out = (struct ArrowDeviceArrayStream*)lua_touserdata(L, 1);
  luaL_argcheck(L, out != NULL, 1, "stream pointer expected");
  lua_Integer device_type = luaL_checkinteger(L, 2);
  luaL_checktype(L, 3, LUA_TFUNCTION);
  luaL_checktype(L, 4, LUA_TFUNCTION);
  struct lferry_runtime* rt = lferry_runtime_get(L);
  lua_pushvalue(L, 3);
  int get_schema_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  lua_pushvalue(L, 4);
  int get_next_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  struct stream_context* ctx = (struct stream_context*)malloc(sizeof(*ctx));
  if (!ctx) {
    luaL_unref(L, LUA_REGISTRYINDEX, get_schema_ref);
    luaL_unref(L, LUA_REGISTRYINDEX, get_next_ref);
    return luaL_error(L, "ferry.stream: out of memory");
  }
  ctx->rt = rt;
  ctx->get_schema_ref = get_schema_ref;
  ctx->get_next_ref = get_next_ref;
  runtime_retain(rt);
  atomic_fetch_add(&live_allocations, 1);
  struct FerryError error;
  ferry_error_init(&error);
  int rc = ferry_array_stream_init(out, (ArrowDeviceType)device_type, stream_get_schema,
                                   stream_get_next, stream_release, ctx, &error);
  if (rc != FERRY_OK) stream_release(ctx); /* the hook was not taken */
  runtime_drain(L, rt);
  lua_pushinteger(L, rc);
  lferry_push_message(L, &error);
  return 2;
}

/* ------------------------------------------------------------------------ */
/* Consuming streams: the batch loop of `stream:batches{ reuse = true }`    */
/* ------------------------------------------------------------------------ */

/* Upvalues of the iterator closure. */
enum {
  BATCH_STREAM = 1,  /* the stream's handle userdata */
  BATCH_ARRAY,       /* the reused batch's handle userdata */
  BATCH_OBJECT,      /* the DeviceArray table handed to the loop body */
  BATCH_FINISH,      /* Lua function(code, message): disposes, raises on code ~= 0 */
  BATCH_CONSUMER,    /* consumer device stream (lightuserdata) or nil */
  BATCH_MODE,        /* 0: get_next, 1: get_next_on(consumer) */
  BATCH_PREPARED,    /* the prepared schema's userdata, or nil: no validation */
  BATCH_DONE,        /* boolean */
  BATCH_KEYS         /* first of the per-batch fields reset on refill */
};
static const char* const batch_reset_keys[] = {"_released", "_host_ok", "_device_type",
                                               "_device_id"};
#define N_BATCH_RESET_KEYS (int)(sizeof(batch_reset_keys) / sizeof(batch_reset_keys[0]))

/* Ends the loop: calls finish(code, message), which raises a ferry.Error
 * when code ~= 0 (no foreign frame is live any more), then returns nil. */
static int batch_finish(lua_State* L, int code, const char* message) {
  lua_pushboolean(L, 1);
  lua_replace(L, lua_upvalueindex(BATCH_DONE));
  lua_pushvalue(L, lua_upvalueindex(BATCH_FINISH));
  lua_pushinteger(L, code);
  if (message && message[0]) lua_pushstring(L, message);
  else lua_pushnil(L);
  lua_call(L, 2, 0);
  lua_pushnil(L);
  return 1;
}

/* One step of the loop in a single C call: releases the previous batch,
 * pulls the next one into the same struct (so nothing is allocated per
 * batch), validates it, resets the object's per-batch fields and returns
 * the object, or nil at the end. */
static int batch_step(lua_State* L) {
  if (lua_toboolean(L, lua_upvalueindex(BATCH_DONE))) {
    /* finish() raises the stream's error again, if it failed: the loop
     * never pulls after an error or the end. */
    lua_pushvalue(L, lua_upvalueindex(BATCH_FINISH));
    lua_call(L, 0, 0);
    lua_pushnil(L);
    return 1;
  }
  struct handle* stream = (struct handle*)lua_touserdata(L, lua_upvalueindex(BATCH_STREAM));
  struct handle* batch = (struct handle*)lua_touserdata(L, lua_upvalueindex(BATCH_ARRAY));
  if (!stream->ptr) return batch_finish(L, EINVAL, "stream already released");
  if (!batch->ptr) return batch_finish(L, EINVAL, "the loop's batch was freed");
  struct ArrowDeviceArray* out = (struct ArrowDeviceArray*)batch->ptr;
  if (out->array.release) ferry_device_array_release(out);
  struct FerryError error;
  error.message[0] = '\0';
  int rc;
  if (lua_tointeger(L, lua_upvalueindex(BATCH_MODE)) == 0) {
    rc = ferry_array_stream_get_next((struct ArrowDeviceArrayStream*)stream->ptr, out, &error);
  } else {
    rc = ferry_array_stream_get_next_on((struct ArrowDeviceArrayStream*)stream->ptr, out,
                                        lua_touserdata(L, lua_upvalueindex(BATCH_CONSUMER)),
                                        &error);
  }
  if (rc != FERRY_OK) return batch_finish(L, rc, error.message);
  if (!out->array.release) return batch_finish(L, 0, NULL);
  struct prepared_slot* prepared =
      (struct prepared_slot*)lua_touserdata(L, lua_upvalueindex(BATCH_PREPARED));
  if (prepared && prepared->prepared) {
    rc = ferry_validate_prepared(prepared->prepared, out, FERRY_VALIDATE_DEFAULT, NULL, NULL,
                                 &error);
    if (rc != FERRY_OK) {
      ferry_device_array_release(out);
      return batch_finish(L, rc, error.message);
    }
  }
  /* The object's per-batch fields: released, host_ok (nothing to wait for
   * on the CPU), device type and id. */
  lua_pushvalue(L, lua_upvalueindex(BATCH_OBJECT));
  lua_pushvalue(L, lua_upvalueindex(BATCH_KEYS + 0));
  lua_pushboolean(L, 0);
  lua_rawset(L, -3);
  lua_pushvalue(L, lua_upvalueindex(BATCH_KEYS + 1));
  lua_pushboolean(L, out->device_type == ARROW_DEVICE_CPU && out->sync_event == NULL);
  lua_rawset(L, -3);
  lua_pushvalue(L, lua_upvalueindex(BATCH_KEYS + 2));
  lua_pushinteger(L, out->device_type);
  lua_rawset(L, -3);
  lua_pushvalue(L, lua_upvalueindex(BATCH_KEYS + 3));
  lua_pushinteger(L, (lua_Integer)out->device_id);
  lua_rawset(L, -3);
  return 1;
}

/* batch_iterator(stream_handle, array_handle, object, finish, consumer_stream,
 * mode, prepared) -> the iterator function of a reusing batch loop. */
int lferry_helper_batch_iterator(lua_State* L) {
  luaL_checkudata(L, 1, HANDLE_METATABLE);
  luaL_checkudata(L, 2, HANDLE_METATABLE);
  luaL_checktype(L, 3, LUA_TTABLE);
  luaL_checktype(L, 4, LUA_TFUNCTION);
  luaL_argcheck(L, lua_isnoneornil(L, 5) || lua_islightuserdata(L, 5), 5,
                "consumer stream pointer expected");
  lua_Integer mode = luaL_optinteger(L, 6, 0);
  if (!lua_isnoneornil(L, 7)) luaL_checkudata(L, 7, PREPARED_METATABLE);
  lua_settop(L, 7);
  lua_pushinteger(L, mode);
  lua_replace(L, 6);
  lua_pushboolean(L, 0);
  for (int i = 0; i < N_BATCH_RESET_KEYS; i++) lua_pushstring(L, batch_reset_keys[i]);
  lua_pushcclosure(L, batch_step, BATCH_KEYS - 1 + N_BATCH_RESET_KEYS);
  return 1;
}

/* ------------------------------------------------------------------------ */
/* Producing: one flat CPU array in one call                                 */
/* ------------------------------------------------------------------------ */

/* export_flat(out, length, null_count, offset, buffers, n_buffers) -> code,
 * message: fills the released ArrowDeviceArray `out` with a CPU array
 * without children whose buffers (a table of lightuserdata/false) are
 * borrowed, i.e. owned by the caller for as long as the array lives. The
 * hot path of a Lua producer returning borrowed buffers: one C call instead
 * of ferry_array_init + ferry_device_array_init through the wrappers. */
int lferry_helper_export_flat(lua_State* L) {
  struct ArrowDeviceArray* out = (struct ArrowDeviceArray*)lua_touserdata(L, 1);
  lua_Integer length = luaL_checkinteger(L, 2);
  lua_Integer null_count = luaL_checkinteger(L, 3);
  lua_Integer offset = luaL_checkinteger(L, 4);
  luaL_checktype(L, 5, LUA_TTABLE);
  lua_Integer n = luaL_checkinteger(L, 6);
  luaL_argcheck(L, out != NULL, 1, "device array pointer expected");
  luaL_argcheck(L, n >= 0, 6, "negative buffer count");
  void* scratch[16];
  void** buffers = n <= 16 ? scratch : (void**)lua_newuserdatauv(L, (size_t)n * sizeof(void*), 0);
  for (lua_Integer i = 0; i < n; i++) {
    lua_rawgeti(L, 5, i + 1);
    buffers[i] = lua_touserdata(L, -1); /* false/nil -> NULL */
    lua_pop(L, 1);
  }
  /* From here on nothing raises. ferry copies the buffer list, and a moved
   * ArrowArray may live anywhere, so a stack struct is fine. */
  struct ArrowArray tmp;
  memset(&tmp, 0, sizeof(tmp));
  struct FerryError error;
  error.message[0] = '\0';
  int rc = ferry_array_init(&tmp, length, null_count, offset, n, (const void* const*)buffers, 0,
                            NULL, NULL, &error);
  if (rc == FERRY_OK)
    rc = ferry_device_array_init(out, &tmp, ARROW_DEVICE_CPU, -1, NULL, NULL, NULL, &error);
  if (rc != FERRY_OK && tmp.release) tmp.release(&tmp);
  return push_code(L, rc, rc != FERRY_OK ? error.message : NULL);
}

/* ------------------------------------------------------------------------ */
/* DLPack tensors                                                            */
/* ------------------------------------------------------------------------ */

/* dlpack_info(tensor) -> table of the tensor's fields (host memory of the
 * struct itself; the data pointer is returned, never read). */
int lferry_helper_dlpack_info(lua_State* L) {
  const DLManagedTensorVersioned* t = (const DLManagedTensorVersioned*)lua_touserdata(L, 1);
  luaL_argcheck(L, t != NULL, 1, "DLPack tensor pointer expected");
  const DLTensor* d = &t->dl_tensor;
  const struct {
    const char* key;
    lua_Integer value;
  } fields[] = {{"major", t->version.major},
                {"minor", t->version.minor},
                {"flags", (lua_Integer)t->flags},
                {"device_type", d->device.device_type},
                {"device_id", d->device.device_id},
                {"ndim", d->ndim},
                {"code", d->dtype.code},
                {"bits", d->dtype.bits},
                {"lanes", d->dtype.lanes},
                {"byte_offset", (lua_Integer)d->byte_offset}};
  lua_createtable(L, 0, 14);
  for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
    lua_pushinteger(L, fields[i].value);
    lua_setfield(L, -2, fields[i].key);
  }
  lferry_push_pointer(L, d->data);
  lua_setfield(L, -2, "data");
  int ndim = d->ndim > 0 ? d->ndim : 0;
  lua_createtable(L, ndim, 0);
  for (int i = 0; d->shape && i < ndim; i++) {
    lua_pushinteger(L, d->shape[i]);
    lua_rawseti(L, -2, i + 1);
  }
  lua_setfield(L, -2, "shape");
  if (d->strides) {
    lua_createtable(L, ndim, 0);
    for (int i = 0; i < ndim; i++) {
      lua_pushinteger(L, d->strides[i]);
      lua_rawseti(L, -2, i + 1);
    }
    lua_setfield(L, -2, "strides");
  }
  return 1;
}

/* dlpack_delete(tensor): calls the tensor's deleter (the owner does this
 * exactly once; it may release a Lua export, which takes the runtime lock). */
int lferry_helper_dlpack_delete(lua_State* L) {
  DLManagedTensorVersioned* t = (DLManagedTensorVersioned*)lua_touserdata(L, 1);
  luaL_argcheck(L, t != NULL, 1, "DLPack tensor pointer expected");
  if (t->deleter) t->deleter(t);
  return 0;
}

/* ------------------------------------------------------------------------ */
/* Validation with findings                                                  */
/* ------------------------------------------------------------------------ */

#define MAX_FINDINGS 64

struct finding_list {
  char items[MAX_FINDINGS][3][256];
  int n;
  int dropped;
};

/* Collects into memory owned by a userdata: pushing to Lua here could raise
 * through the core's frames. */
static void collect_finding(void* user_data, const char* rule, const char* where,
                            const char* what) {
  struct finding_list* list = (struct finding_list*)user_data;
  if (list->n == MAX_FINDINGS) {
    list->dropped++;
    return;
  }
  snprintf(list->items[list->n][0], 256, "%s", rule ? rule : "");
  snprintf(list->items[list->n][1], 256, "%s", where ? where : "");
  snprintf(list->items[list->n][2], 256, "%s", what ? what : "");
  list->n++;
}

/* validate(schema, device_array_or_nil, level) -> code, message, findings
 * ({rule=, where=, what=} each; at most 64 are kept). */
int lferry_helper_validate(lua_State* L) {
  const struct ArrowSchema* schema = (const struct ArrowSchema*)lua_touserdata(L, 1);
  const struct ArrowDeviceArray* array = (const struct ArrowDeviceArray*)lua_touserdata(L, 2);
  int level = (int)luaL_optinteger(L, 3, FERRY_VALIDATE_DEFAULT);
  luaL_argcheck(L, schema != NULL, 1, "schema pointer expected");
  struct finding_list* list = (struct finding_list*)lua_newuserdatauv(L, sizeof(*list), 0);
  list->n = 0;
  list->dropped = 0;
  struct FerryError error;
  ferry_error_init(&error);
  int rc = array ? ferry_validate_device_array(schema, array, level, collect_finding, list, &error)
                 : ferry_validate_schema(schema, collect_finding, list, &error);
  lua_pushinteger(L, rc);
  lferry_push_message(L, &error);
  lua_createtable(L, list->n, 0);
  for (int i = 0; i < list->n; i++) {
    lua_createtable(L, 0, 3);
    lua_pushstring(L, list->items[i][0]);
    lua_setfield(L, -2, "rule");
    lua_pushstring(L, list->items[i][1]);
    lua_setfield(L, -2, "where");
    lua_pushstring(L, list->items[i][2]);
    lua_setfield(L, -2, "what");
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  return 3;
}

int lferry_helper_live_allocations(lua_State* L) {
  lua_pushinteger(L, lferry_live_allocations());
  return 1;
}

/* ------------------------------------------------------------------------ */
/* The module                                                                */
/* ------------------------------------------------------------------------ */

/* ferry_core: the raw functions and constants, with the helpers as `support`. */
__attribute__((visibility("default"))) int luaopen_ferry_core(lua_State* L) {
  static const luaL_Reg handle_methods[] = {
      {"__gc", lferry_helper_handle_free}, {"__close", lferry_helper_handle_free}, {NULL, NULL}};
  static const luaL_Reg keeper_methods[] = {{"__gc", keeper_gc}, {"__close", keeper_gc}, {NULL, NULL}};
  static const luaL_Reg prepared_methods[] = {{"__gc", prepared_gc}, {NULL, NULL}};
  static const luaL_Reg helpers[] = {LFERRY_HELPERS};
  lferry_runtime_get(L);
  luaL_newmetatable(L, HANDLE_METATABLE);
  luaL_setfuncs(L, handle_methods, 0);
  luaL_newmetatable(L, KEEPER_METATABLE);
  luaL_setfuncs(L, keeper_methods, 0);
  luaL_newmetatable(L, PREPARED_METATABLE);
  luaL_setfuncs(L, prepared_methods, 0);
  lua_pop(L, 3);
  lua_createtable(L, 0, 160);
  lferry_raw_register(L);
  luaL_newlib(L, helpers);
  lua_setfield(L, -2, "support");
  return 1;
}

#else /* not Lua 5.4: the locator for LuaJIT's FFI backend (lferry_support.h) */

#include <dlfcn.h>

/* { library = the path of the libferry this module links } */
__attribute__((visibility("default"))) int luaopen_ferry_core(lua_State* L) {
  union {
    const char* (*function)(void);
    void* data;
  } address;
  address.function = ferry_version;
  Dl_info info;
  lua_createtable(L, 0, 2);
  lua_pushstring(L, "locator");
  lua_setfield(L, -2, "kind");
  if (dladdr(address.data, &info) && info.dli_fname) {
    lua_pushstring(L, info.dli_fname);
    lua_setfield(L, -2, "library");
  }
  return 1;
}

#endif /* LUA_VERSION_NUM >= 504 */
