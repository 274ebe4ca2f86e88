/* The parts of ferry's Lua 5.4 module that SWIG cannot generate (see
 * lferry_support.h for the rules). Registered into `ferry_core.support`. */
#include "lferry_support.h"

#include <errno.h>

#include "ferry/dlpack_abi.h"
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HANDLE_METATABLE "ferry.handle"
#define KEEPER_METATABLE "ferry.keeper"
#define RUNTIME_METATABLE "ferry.runtime"

/* Process-wide count of what Lua exports own right now (buffers, device
 * allocations, anchored strings, live Lua-backed streams). */
static atomic_llong live_allocations;

int64_t lferry_live_allocations(void) { return (int64_t)atomic_load(&live_allocations); }

/* ------------------------------------------------------------------------ */
/* Typemap checks                                                            */
/* ------------------------------------------------------------------------ */

int lferry_is_integer(lua_State* L, int index) {
  int is_integer = 0;
  if (lua_type(L, index) != LUA_TNUMBER) return 0;
  lua_tointegerx(L, index, &is_integer);
  return is_integer;
}

int lferry_is_string_or_nil(lua_State* L, int index) {
  return lua_type(L, index) == LUA_TSTRING || lua_isnil(L, index);
}

int lferry_is_pointer(lua_State* L, int index) {
  return lua_islightuserdata(L, index) || lua_isnil(L, index);
}

int lferry_is_table_or_nil(lua_State* L, int index) {
  return lua_istable(L, index) || lua_isnil(L, index);
}

/* ISO C has no void* <-> function pointer conversion; a union is the
 * portable-enough way on every platform ferry supports. */
typedef void (*generic_function)(void);
union function_address {
  void* data;
  generic_function function;
};

void (*lferry_to_function_pointer(lua_State* L, int index))(void) {
  union function_address address;
  address.data = lua_touserdata(L, index);
  return address.function;
}

static void push_function_address(lua_State* L, generic_function function) {
  union function_address address;
  address.function = function;
  lua_pushlightuserdata(L, address.data);
}

void** lferry_to_buffer_list(lua_State* L, int index, void** scratch, int scratch_size) {
  if (lua_isnil(L, index)) return NULL;
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
   * and dropped by the Lua side, so a release hook never touches Lua. */
  int* pending_unrefs;
  size_t n_pending, cap_pending;
};

static char runtime_key; /* its address keys the runtime in the registry */

static int message_handler(lua_State* L);

static void runtime_retain(struct lferry_runtime* rt) { atomic_fetch_add(&rt->refcount, 1); }

static void runtime_drop(struct lferry_runtime* rt) {
  if (atomic_fetch_sub(&rt->refcount, 1) == 1) {
    pthread_mutex_destroy(&rt->lock);
    free(rt->pending_unrefs);
    free(rt);
  }
}

void lferry_runtime_lock(struct lferry_runtime* rt) { pthread_mutex_lock(&rt->lock); }
void lferry_runtime_unlock(struct lferry_runtime* rt) { pthread_mutex_unlock(&rt->lock); }

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
  lua_pushcfunction(thread, message_handler);
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

/* Message handler: ferry error tables ({code=, message=}) pass unchanged,
 * anything else becomes a string with a traceback. It sits at index 1 of the
 * callback thread for the thread's whole life (see lferry_runtime_get), so a
 * callback pushes nothing but the function and its argument. */
static int message_handler(lua_State* L) {
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
 * the message in `error`. Never raises. One lua_pcall on the success path:
 * the function comes from the registry, the message handler is already on
 * the thread's stack. Callback convention: return nothing (or true) on
 * success; return nil, message[, code] (or raise) on failure. */
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

enum handle_kind { HANDLE_SCHEMA, HANDLE_DEVICE_ARRAY, HANDLE_STREAM };

struct handle {
  enum handle_kind kind;
  void* ptr; /* NULL once freed */
};

static void handle_free_now(struct handle* h) {
  if (!h->ptr) return;
  switch (h->kind) {
    case HANDLE_SCHEMA: ferry_schema_free((struct ArrowSchema*)h->ptr); break;
    case HANDLE_DEVICE_ARRAY: ferry_device_array_free((struct ArrowDeviceArray*)h->ptr); break;
    case HANDLE_STREAM: ferry_array_stream_free((struct ArrowDeviceArrayStream*)h->ptr); break;
  }
  h->ptr = NULL;
}

/* handle(kind) -> userdata, pointer. The userdata owns a zeroed struct;
 * __gc/__close (or free_handle) release it if live and free it, once. */
static int l_handle(lua_State* L) {
  static const char* const kinds[] = {"schema", "array", "stream", NULL};
  int kind = luaL_checkoption(L, 1, NULL, kinds);
  struct handle* h = (struct handle*)lua_newuserdatauv(L, sizeof(struct handle), 0);
  h->kind = (enum handle_kind)kind;
  h->ptr = NULL;
  luaL_setmetatable(L, HANDLE_METATABLE);
  switch (h->kind) {
    case HANDLE_SCHEMA: h->ptr = ferry_schema_new(); break;
    case HANDLE_DEVICE_ARRAY: h->ptr = ferry_device_array_new(); break;
    case HANDLE_STREAM: h->ptr = ferry_array_stream_new(); break;
  }
  if (!h->ptr) return luaL_error(L, "ferry.handle: out of memory");
  lua_pushlightuserdata(L, h->ptr);
  return 2;
}

static int l_handle_free(lua_State* L) {
  struct handle* h = (struct handle*)luaL_checkudata(L, 1, HANDLE_METATABLE);
  handle_free_now(h);
  return 0;
}

static int l_handle_pointer(lua_State* L) {
  struct handle* h = (struct handle*)luaL_checkudata(L, 1, HANDLE_METATABLE);
  if (h->ptr) lua_pushlightuserdata(L, h->ptr);
  else lua_pushnil(L);
  return 1;
}

/* ------------------------------------------------------------------------ */
/* Keepers: what a Lua export owns until its consumer releases it            */
/* ------------------------------------------------------------------------ */

enum entry_kind { ENTRY_MALLOC, ENTRY_DEVICE_MEMORY, ENTRY_REF, ENTRY_DEVICE_STREAM };

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
    }
  }
  atomic_fetch_sub(&live_allocations, (long long)k->n);
  runtime_drop(k->rt);
  free(k->entries);
  free(k);
}

/* The release hook of every Lua export: runs on any thread, never touches
 * Lua (string anchors are queued for unref). */
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

static int l_keeper_gc(lua_State* L) {
  struct keeper_slot* slot = (struct keeper_slot*)luaL_checkudata(L, 1, KEEPER_METATABLE);
  if (slot->keeper) {
    keeper_destroy(slot->keeper);
    slot->keeper = NULL;
  }
  return 0;
}

static int l_keeper_new(lua_State* L) {
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
static int l_keeper_pointer(lua_State* L) {
  lua_pushlightuserdata(L, check_keeper(L, 1));
  return 1;
}

/* keeper_disown(k): a release hook now owns the keeper. */
static int l_keeper_disown(lua_State* L) {
  check_keeper(L, 1);
  ((struct keeper_slot*)lua_touserdata(L, 1))->keeper = NULL;
  return 0;
}

static int l_keeper_hook(lua_State* L) {
  push_function_address(L, (generic_function)keeper_release_hook);
  return 1;
}

enum element_kind { K_I8, K_I16, K_I32, K_I64, K_U8, K_U16, K_U32, K_U64, K_F32, K_F64, K_BITS };
static const char* const element_kinds[] = {"i8", "i16", "i32", "i64", "u8", "u16",
                                            "u32", "u64", "f32", "f64", "bits", NULL};
static const int element_widths[] = {8, 16, 32, 64, 8, 16, 32, 64, 32, 64, 1};

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
static int l_keeper_pack(lua_State* L) {
  struct lferry_keeper* k = check_keeper(L, 1);
  int kind = luaL_checkoption(L, 2, NULL, element_kinds);
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
static int l_keeper_alloc(lua_State* L) {
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
static int l_keeper_string(lua_State* L) {
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

/* keeper_to_device(k, host_pointer, size, device) -> device pointer, or
 * nil, code, message. Copies on the keeper's producer stream (created on
 * first use) so the export carries a real sync event. */
static int l_keeper_to_device(lua_State* L) {
  struct lferry_keeper* k = check_keeper(L, 1);
  const void* host = lua_touserdata(L, 2);
  lua_Integer size = luaL_checkinteger(L, 3);
  struct FerryDevice* device = (struct FerryDevice*)lua_touserdata(L, 4);
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
  if (!k->device_stream) {
    void* stream = NULL;
    rc = ferry_device_stream_create(device, &stream, &error);
    if (rc != FERRY_OK) goto failed_with_code;
    keeper_add(k, ENTRY_DEVICE_STREAM, stream, device, LUA_NOREF);
    k->device_stream = stream;
    k->stream_device = device;
    keeper_reserve(L, k);
  }
  rc = ferry_device_allocate(device, size > 0 ? size : 1, &memory, &error);
  if (rc != FERRY_OK) goto failed_with_code;
  keeper_add(k, ENTRY_DEVICE_MEMORY, memory, device, LUA_NOREF);
  rc = ferry_device_resolve(ARROW_DEVICE_CPU, -1, &cpu, &error);
  if (rc == FERRY_OK && size > 0)
    rc = ferry_device_memcpy(device, memory, cpu, host, size, k->device_stream, &error);
  if (rc != FERRY_OK) goto failed_with_code;
  lua_pushlightuserdata(L, memory);
  return 1;
failed_with_code:
  /* Everything allocated so far is owned by the keeper. */
  lua_pushnil(L);
  lua_pushinteger(L, rc);
  lua_pushstring(L, error.message);
  return 3;
}

/* keeper_device_stream(k) -> the producer stream of device copies, or nil. */
static int l_keeper_device_stream(lua_State* L) {
  struct lferry_keeper* k = check_keeper(L, 1);
  if (k->device_stream) lua_pushlightuserdata(L, k->device_stream);
  else lua_pushnil(L);
  return 1;
}

/* keeper_free(k): frees now (an export that failed before its hook took over). */
static int l_keeper_free(lua_State* L) { return l_keeper_gc(L); }

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
static int l_stream_export(lua_State* L) {
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
  if (rc != FERRY_OK) lua_pushstring(L, error.message);
  else lua_pushnil(L);
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
  BATCH_DONE,        /* boolean */
  BATCH_KEYS         /* first of the per-batch fields reset on refill */
};
static const char* const batch_reset_keys[] = {"_released", "_host_ok", "_device_type"};
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
 * batch), resets the object's per-batch fields and returns the object, or
 * nil at the end. */
static int batch_step(lua_State* L) {
  if (lua_toboolean(L, lua_upvalueindex(BATCH_DONE))) {
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
                                  lua_touserdata(L, lua_upvalueindex(BATCH_CONSUMER)), &error);
  }
  if (rc != FERRY_OK) return batch_finish(L, rc, error.message);
  if (!out->array.release) return batch_finish(L, 0, NULL);
  lua_pushvalue(L, lua_upvalueindex(BATCH_OBJECT));
  for (int i = 0; i < N_BATCH_RESET_KEYS; i++) {
    lua_pushvalue(L, lua_upvalueindex(BATCH_KEYS + i));
    lua_pushboolean(L, 0); /* false = unset (see new_device_array in init.lua) */
    lua_rawset(L, -3);
  }
  return 1;
}

/* batch_iterator(stream_handle, array_handle, object, finish, consumer_stream,
 * mode) -> the iterator function of a reusing batch loop. */
static int l_batch_iterator(lua_State* L) {
  luaL_checkudata(L, 1, HANDLE_METATABLE);
  luaL_checkudata(L, 2, HANDLE_METATABLE);
  luaL_checktype(L, 3, LUA_TTABLE);
  luaL_checktype(L, 4, LUA_TFUNCTION);
  luaL_argcheck(L, lua_isnoneornil(L, 5) || lua_islightuserdata(L, 5), 5,
                "consumer stream pointer expected");
  lua_Integer mode = luaL_optinteger(L, 6, 0);
  lua_settop(L, 6);
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
static int l_export_flat(lua_State* L) {
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
  lua_pushinteger(L, rc);
  if (rc != FERRY_OK) lua_pushstring(L, error.message);
  else lua_pushnil(L);
  return 2;
}

/* ------------------------------------------------------------------------ */
/* DLPack tensors                                                            */
/* ------------------------------------------------------------------------ */

/* dlpack_info(tensor) -> table of the tensor's fields (host memory of the
 * struct itself; the data pointer is returned, never read). */
static int l_dlpack_info(lua_State* L) {
  const DLManagedTensorVersioned* t = (const DLManagedTensorVersioned*)lua_touserdata(L, 1);
  luaL_argcheck(L, t != NULL, 1, "DLPack tensor pointer expected");
  const DLTensor* d = &t->dl_tensor;
  lua_createtable(L, 0, 14);
  lua_pushinteger(L, t->version.major);
  lua_setfield(L, -2, "major");
  lua_pushinteger(L, t->version.minor);
  lua_setfield(L, -2, "minor");
  lua_pushinteger(L, (lua_Integer)t->flags);
  lua_setfield(L, -2, "flags");
  if (d->data) lua_pushlightuserdata(L, d->data);
  else lua_pushnil(L);
  lua_setfield(L, -2, "data");
  lua_pushinteger(L, d->device.device_type);
  lua_setfield(L, -2, "device_type");
  lua_pushinteger(L, d->device.device_id);
  lua_setfield(L, -2, "device_id");
  lua_pushinteger(L, d->ndim);
  lua_setfield(L, -2, "ndim");
  lua_pushinteger(L, d->dtype.code);
  lua_setfield(L, -2, "code");
  lua_pushinteger(L, d->dtype.bits);
  lua_setfield(L, -2, "bits");
  lua_pushinteger(L, d->dtype.lanes);
  lua_setfield(L, -2, "lanes");
  lua_pushinteger(L, (lua_Integer)d->byte_offset);
  lua_setfield(L, -2, "byte_offset");
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
static int l_dlpack_delete(lua_State* L) {
  DLManagedTensorVersioned* t = (DLManagedTensorVersioned*)lua_touserdata(L, 1);
  luaL_argcheck(L, t != NULL, 1, "DLPack tensor pointer expected");
  if (t->deleter) t->deleter(t);
  return 0;
}

/* ------------------------------------------------------------------------ */
/* Reading host-accessible memory                                            */
/* ------------------------------------------------------------------------ */

/* read(pointer, kind, index) -> value of element `index` (0-based). The
 * caller guarantees the memory is host-accessible and in bounds. */
static int l_read(lua_State* L) {
  const uint8_t* p = (const uint8_t*)lua_touserdata(L, 1);
  int kind = luaL_checkoption(L, 2, NULL, element_kinds);
  lua_Integer i = luaL_checkinteger(L, 3);
  luaL_argcheck(L, p != NULL, 1, "NULL buffer");
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
    case K_BITS: lua_pushboolean(L, (p[i / 8] >> (i % 8)) & 1); break;
  }
  return 1;
}

/* read_bytes(pointer, start, length) -> string (a copy). */
static int l_read_bytes(lua_State* L) {
  const char* p = (const char*)lua_touserdata(L, 1);
  lua_Integer start = luaL_checkinteger(L, 2);
  lua_Integer length = luaL_checkinteger(L, 3);
  luaL_argcheck(L, length >= 0, 3, "negative length");
  luaL_argcheck(L, p != NULL || length == 0, 1, "NULL buffer");
  lua_pushlstring(L, length ? p + start : "", (size_t)length);
  return 1;
}

/* pointer_add(pointer, bytes) -> pointer */
static int l_pointer_add(lua_State* L) {
  char* p = (char*)lua_touserdata(L, 1);
  lua_pushlightuserdata(L, p + luaL_checkinteger(L, 2));
  return 1;
}

/* address(pointer) -> the address as an integer (for display and tests). */
static int l_address(lua_State* L) {
  lua_pushinteger(L, (lua_Integer)(uintptr_t)lua_touserdata(L, 1));
  return 1;
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
static int l_validate(lua_State* L) {
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
  if (error.message[0]) lua_pushstring(L, error.message);
  else lua_pushnil(L);
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

/* ------------------------------------------------------------------------ */
/* Registration                                                              */
/* ------------------------------------------------------------------------ */

static int l_live_allocations(lua_State* L) {
  lua_pushinteger(L, lferry_live_allocations());
  return 1;
}

static int l_free_hook(lua_State* L) {
  push_function_address(L, (generic_function)free);
  return 1;
}

static int l_drain(lua_State* L) {
  lferry_runtime_get(L);
  return 0;
}

void lferry_support_register(lua_State* L) {
  static const luaL_Reg handle_methods[] = {
      {"__gc", l_handle_free}, {"__close", l_handle_free}, {NULL, NULL}};
  static const luaL_Reg keeper_methods[] = {
      {"__gc", l_keeper_gc}, {"__close", l_keeper_gc}, {NULL, NULL}};
  static const luaL_Reg functions[] = {
      {"handle", l_handle},
      {"handle_free", l_handle_free},
      {"handle_pointer", l_handle_pointer},
      {"keeper_new", l_keeper_new},
      {"keeper_pointer", l_keeper_pointer},
      {"keeper_disown", l_keeper_disown},
      {"keeper_hook", l_keeper_hook},
      {"keeper_pack", l_keeper_pack},
      {"keeper_alloc", l_keeper_alloc},
      {"keeper_string", l_keeper_string},
      {"keeper_to_device", l_keeper_to_device},
      {"keeper_device_stream", l_keeper_device_stream},
      {"keeper_free", l_keeper_free},
      {"stream_export", l_stream_export},
      {"batch_iterator", l_batch_iterator},
      {"export_flat", l_export_flat},
      {"dlpack_info", l_dlpack_info},
      {"dlpack_delete", l_dlpack_delete},
      {"read", l_read},
      {"read_bytes", l_read_bytes},
      {"pointer_add", l_pointer_add},
      {"address", l_address},
      {"validate", l_validate},
      {"live_allocations", l_live_allocations},
      {"free_hook", l_free_hook},
      {"drain", l_drain},
      {NULL, NULL}};
  lferry_runtime_get(L);
  luaL_newmetatable(L, HANDLE_METATABLE);
  luaL_setfuncs(L, handle_methods, 0);
  lua_pop(L, 1);
  luaL_newmetatable(L, KEEPER_METATABLE);
  luaL_setfuncs(L, keeper_methods, 0);
  lua_pop(L, 1);
  luaL_newlib(L, functions);
  lua_setfield(L, -2, "support");
}
