/* The Lua participant of ferry's cross-language tests: a C shim that embeds
 * a Lua 5.4 state and implements the entry points of core/include/ferry/
 * ferry_it.h in Lua (plugin/ferry_it.lua, on top of the binding's own Lua
 * code and its C module, compiled into this library).
 *
 * The state is created lazily on the first entry and lives for the process.
 * Every entry point and every Lua callback holds the runtime's recursive
 * lock, so hosts may call from any thread and re-entrantly. No Lua error
 * leaves this file: each becomes an errno code plus a per-thread message.
 *
 * Async device streams (the end of this file) come from the generic layer
 * of the test plugins (core/harness/async/ferry_it_async.h) over the
 * synchronous entry points, made safe for a single-threaded Lua state: the
 * producer runs in the layer's eager mode (the Lua stream is read on the
 * calling thread, then pushed from ferry's thread without entering Lua), and
 * the checker, which the layer runs on a thread of its own, runs its Lua
 * code on a coroutine of its own and releases the lock while it blocks
 * waiting for the producer (see there why both are needed). */
#include <errno.h>
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ferry/ferry.h"
#include "ferry/ferry_it.h"
#include "ferry_it_async.h"
#include "ferry_it_bench.h"
#include "lferry_support.h"

#ifndef FERRY_LUA_SOURCE_DIR
#define FERRY_LUA_SOURCE_DIR "."
#endif

int luaopen_ferry_core(lua_State* L); /* the SWIG module, linked in */

static pthread_mutex_t creation_lock = PTHREAD_MUTEX_INITIALIZER;
static lua_State* state;                /* NULL until created */
static struct lferry_runtime* runtime;  /* the lock shared with callbacks */
static int module_ref = LUA_NOREF;      /* ferry_it.lua's table */
static int creation_code;               /* non-zero when creation failed */
static char creation_message[FERRY_ERROR_MESSAGE_SIZE];

static _Thread_local char last_error[FERRY_ERROR_MESSAGE_SIZE];

static void set_last_error(const char* message) {
  snprintf(last_error, sizeof(last_error), "%s", message ? message : "");
}

struct entry_call {
  const char* function;
  const char* case_spec;
  void* first;
  void* second;
  int code;
  char message[FERRY_ERROR_MESSAGE_SIZE];
};

static void describe(lua_State* L, int index, struct entry_call* call) {
  index = lua_absindex(L, index);
  const char* message = NULL;
  call->code = EIO;
  if (lua_istable(L, index)) {
    lua_pushliteral(L, "code");
    if (lua_rawget(L, index) == LUA_TNUMBER && lua_tointeger(L, -1) > 0)
      call->code = (int)lua_tointeger(L, -1);
    lua_pop(L, 1);
    lua_pushliteral(L, "message");
    lua_rawget(L, index);
    message = lua_tostring(L, -1);
  } else {
    message = lua_tostring(L, index);
  }
  snprintf(call->message, sizeof(call->message), "%s", message ? message : "Lua error");
}

/* Runs under lua_pcall: even memory errors are contained. */
static int entry_protected(lua_State* L) {
  struct entry_call* call = (struct entry_call*)lua_touserdata(L, 1);
  lua_pushcfunction(L, lferry_message_handler);
  int handler = lua_gettop(L);
  lua_rawgeti(L, LUA_REGISTRYINDEX, module_ref);
  lua_getfield(L, -1, call->function);
  lua_pushstring(L, call->case_spec);
  int nargs = 1;
  if (call->first) {
    lua_pushlightuserdata(L, call->first);
    nargs++;
  }
  if (call->second) {
    lua_pushlightuserdata(L, call->second);
    nargs++;
  }
  if (lua_pcall(L, nargs, 0, handler) != LUA_OK) describe(L, -1, call);
  return 0;
}

/* Creates the state: libraries, the C module as a preload, the Lua sources
 * from FERRY_LUA_DIR (default: this binding's source directory). */
static int create_protected(lua_State* L) {
  luaL_openlibs(L);
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
  lua_pushcfunction(L, luaopen_ferry_core);
  lua_setfield(L, -2, "ferry_core");
  lua_pop(L, 1);
  const char* dir = getenv("FERRY_LUA_DIR");
  if (!dir || !*dir) dir = FERRY_LUA_SOURCE_DIR;
  lua_getglobal(L, "package");
  lua_pushfstring(L, "%s/?.lua;%s/?/init.lua;%s/plugin/?.lua", dir, dir, dir);
  lua_setfield(L, -2, "path");
  lua_pushliteral(L, "");
  lua_setfield(L, -2, "cpath");
  lua_pop(L, 1);
  runtime = lferry_runtime_get(L);
  lua_getglobal(L, "require");
  lua_pushliteral(L, "ferry_it");
  lua_call(L, 1, 1);
  module_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  return 0;
}

static int ensure_state(void) {
  pthread_mutex_lock(&creation_lock);
  if (!state && creation_code == 0) {
    lua_State* L = luaL_newstate();
    if (!L) {
      creation_code = ENOMEM;
      snprintf(creation_message, sizeof(creation_message), "cannot create a Lua state");
    } else {
      lua_pushcfunction(L, create_protected);
      if (lua_pcall(L, 0, 0, 0) != LUA_OK) {
        creation_code = EIO;
        snprintf(creation_message, sizeof(creation_message), "loading the Lua plugin failed: %s",
                 lua_tostring(L, -1) ? lua_tostring(L, -1) : "(no message)");
        lua_close(L);
        runtime = NULL;
      } else {
        state = L;
      }
    }
  }
  int code = creation_code;
  pthread_mutex_unlock(&creation_lock);
  if (code) set_last_error(creation_message);
  return code;
}

/* Runs fn(call) protected on `L` (the state or a coroutine of it, the lock
 * held); a Lua error escaping fn (out of memory) becomes an ENOMEM failure
 * in `entry`, the call's record of its outcome. */
static void run_protected(lua_State* L, lua_CFunction fn, void* call, struct entry_call* entry) {
  lua_pushcfunction(L, fn);
  lua_pushlightuserdata(L, call);
  if (lua_pcall(L, 1, 0, 0) != LUA_OK) {
    entry->code = ENOMEM;
    snprintf(entry->message, sizeof(entry->message), "Lua failure: %s",
             lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "(no message)");
  }
}

static int call_entry(const char* function, const char* case_spec, void* first, void* second) {
  set_last_error("");
  if (!case_spec) {
    set_last_error("case string is NULL");
    return EINVAL;
  }
  int code = ensure_state();
  if (code) return code;
  struct entry_call call = {function, case_spec, first, second, 0, ""};
  lferry_runtime_lock(runtime);
  int top = lua_gettop(state);
  run_protected(state, entry_protected, &call, &call);
  lua_settop(state, top);
  lferry_runtime_unlock(runtime);
  if (call.code) set_last_error(call.message);
  return call.code;
}

/* Exports the case into consumer-allocated structs (see ferry_it.h). */
int ferry_it_export_array(const char* case_spec, struct ArrowSchema* schema_out,
                          struct ArrowDeviceArray* array_out) {
  if (!schema_out || !array_out) {
    set_last_error("schema_out and array_out must not be NULL");
    return EINVAL;
  }
  return call_entry("export_array", case_spec, schema_out, array_out);
}

/* Checks and takes ownership of `schema` and `array` (released either way). */
int ferry_it_check_array(const char* case_spec, struct ArrowSchema* schema,
                         struct ArrowDeviceArray* array) {
  int code = schema && array ? call_entry("check_array", case_spec, schema, array) : EINVAL;
  if (!schema || !array) set_last_error("schema and array must not be NULL");
  /* Whatever the Lua side did not take (a bad case string stops nothing:
   * it imports first) is released here; released structs are left alone. */
  ferry_schema_release(schema);
  ferry_device_array_release(array);
  return code;
}

/* Exports the case's stream into a consumer-allocated struct. */
int ferry_it_export_stream(const char* case_spec, struct ArrowDeviceArrayStream* out) {
  if (!out) {
    set_last_error("out must not be NULL");
    return EINVAL;
  }
  return call_entry("export_stream", case_spec, out, NULL);
}

/* Reads and checks the stream, taking ownership of it (released either way). */
int ferry_it_check_stream(const char* case_spec, struct ArrowDeviceArrayStream* stream) {
  int code = stream ? call_entry("check_stream", case_spec, stream, NULL) : EINVAL;
  if (!stream) set_last_error("stream must not be NULL");
  ferry_array_stream_release(stream);
  return code;
}

/* Allocations owned by Lua exports that are live now (borrows nothing). */
int64_t ferry_it_live_allocations(void) { return lferry_live_allocations(); }

/* The last failure's message on this thread (owned by the plugin). */
const char* ferry_it_last_error(void) { return last_error; }

/* ---- benchmark entry points (ferry_it_bench.h) ---------------------------- */

/* Each runs a function of plugin/ferry_it_bench.lua (required on first use)
 * through the same path as the entry points above: the runtime's lock, a
 * protected C function, lua_pcall with the traceback handler. Integers go
 * to Lua as integers, structs as lightuserdata. */
static int bench_ref = LUA_NOREF;

struct bench_call {
  struct entry_call entry; /* function, pointers (first, second), code, message */
  int n_integers;
  int64_t integers[2];
  int64_t result;
};

static int bench_protected(lua_State* L) {
  struct bench_call* call = (struct bench_call*)lua_touserdata(L, 1);
  lua_pushcfunction(L, lferry_message_handler);
  int handler = lua_gettop(L);
  if (bench_ref == LUA_NOREF) {
    lua_getglobal(L, "require");
    lua_pushliteral(L, "ferry_it_bench");
    if (lua_pcall(L, 1, 1, handler) != LUA_OK) {
      describe(L, -1, &call->entry);
      return 0;
    }
    bench_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  }
  lua_rawgeti(L, LUA_REGISTRYINDEX, bench_ref);
  lua_getfield(L, -1, call->entry.function);
  for (int i = 0; i < call->n_integers; i++) lua_pushinteger(L, (lua_Integer)call->integers[i]);
  int nargs = call->n_integers;
  if (call->entry.first) {
    lua_pushlightuserdata(L, call->entry.first);
    nargs++;
  }
  if (call->entry.second) {
    lua_pushlightuserdata(L, call->entry.second);
    nargs++;
  }
  if (lua_pcall(L, nargs, 1, handler) != LUA_OK) {
    describe(L, -1, &call->entry);
  } else {
    call->result = (int64_t)lua_tointeger(L, -1);
  }
  return 0;
}

/* Runs one bench function; 0, or the errno code with the last error set. The
 * 1 KiB message buffer is not cleared: only a failure writes and reads it. */
static int call_bench(struct bench_call* call) {
  int code = ensure_state();
  if (code) return code;
  call->entry.code = 0;
  call->entry.message[0] = '\0';
  lferry_runtime_lock(runtime);
  int top = lua_gettop(state);
  run_protected(state, bench_protected, call, &call->entry);
  lua_settop(state, top);
  lferry_runtime_unlock(runtime);
  if (call->entry.code) set_last_error(call->entry.message);
  return call->entry.code;
}

static void bench_call_init(struct bench_call* call, const char* function, int n_integers,
                            int64_t a, int64_t b, void* first, void* second) {
  call->entry.function = function;
  call->entry.case_spec = NULL;
  call->entry.first = first;
  call->entry.second = second;
  call->n_integers = n_integers;
  call->integers[0] = a;
  call->integers[1] = b;
  call->result = 0;
}

/* x + 1, computed in Lua. */
int64_t ferry_it_bench_noop(int64_t x) {
  struct bench_call call;
  bench_call_init(&call, "noop", 1, x, 0, NULL, NULL);
  return call_bench(&call) == 0 ? call.result : INT64_MIN;
}

/* Calls bench `function` with the integers and pointers; when `args_ok` is
 * false (a NULL argument) refuses with EINVAL and `null_message` instead. */
static int bench_checked(int args_ok, const char* null_message, const char* function,
                         int n_integers, int64_t a, int64_t b, void* first, void* second) {
  if (!args_ok) {
    set_last_error(null_message);
    return EINVAL;
  }
  struct bench_call call;
  bench_call_init(&call, function, n_integers, a, b, first, second);
  return call_bench(&call);
}

/* Exports the cached int32 array into consumer-allocated structs. */
int ferry_it_bench_export_array(int64_t length, struct ArrowSchema* schema_out,
                                struct ArrowDeviceArray* array_out) {
  return bench_checked(schema_out && array_out, "schema_out and array_out must not be NULL",
                       "export_array", 1, length, 0, schema_out, array_out);
}

/* Consumes (and takes ownership of) `schema` and `array`. */
int ferry_it_bench_consume_array(struct ArrowSchema* schema, struct ArrowDeviceArray* array) {
  int code = bench_checked(schema && array, "schema and array must not be NULL", "consume_array",
                           0, 0, 0, schema, array);
  /* Whatever Lua did not import is released here (released structs are left alone). */
  ferry_schema_release(schema);
  ferry_device_array_release(array);
  return code;
}

/* Exports a stream of `batches` batches of the cached array. */
int ferry_it_bench_export_stream(int64_t length, int64_t batches,
                                 struct ArrowDeviceArrayStream* out) {
  return bench_checked(out != NULL, "out must not be NULL", "export_stream", 2, length, batches,
                       out, NULL);
}

/* Reads a stream to its end, taking ownership of it. */
int ferry_it_bench_consume_stream(struct ArrowDeviceArrayStream* stream) {
  int code = bench_checked(stream != NULL, "stream must not be NULL", "consume_stream", 0, 0, 0,
                           stream, NULL);
  ferry_array_stream_release(stream);
  return code;
}

/* ---- async device streams (ferry_it.h; shared/cases.md, "Async device streams") ---- */

/* The generic layer keeps its own per-thread message: copied into this
 * plugin's, so that ferry_it_last_error answers for these calls too. */
static int async_outcome(int rc) {
  if (rc) set_last_error(ferry_it_async_last_error());
  return rc;
}

/* Starts pushing the case's stream to `handler` (borrowed until released).
 * Eager: the Lua stream is read to its end (or its injected failure) here,
 * on the calling thread, under the state's lock like any entry; ferry's
 * producer thread then pushes what was read without entering Lua (the
 * batches' release hooks never run Lua). */
int ferry_it_export_async(const char* case_spec, struct ArrowAsyncDeviceStreamHandler* handler) {
  set_last_error("");
  return async_outcome(ferry_it_async_export_generic(case_spec, handler, ferry_it_export_stream,
                                                     ferry_it_last_error, 1));
}

/* The checker reads a stream over the handler's queue whose get_schema and
 * get_next block until the producer delivers. Holding the Lua lock there
 * would deadlock a Lua -> Lua pair (the host calls ferry_it_export_async,
 * which needs the lock to read the Lua producer, while the checker waits
 * for its batches) and stall every other entry. So the checker reads a
 * stream made by the core (ferry_array_stream_init) whose producer functions
 * release the lock (every hold this thread has) around the blocking call
 * and retake it before returning to Lua. That is only sound because the
 * checker's Lua frames are on a coroutine of its own
 * (call_entry_on_coroutine): whatever another thread runs on the state
 * meanwhile stacks on the main thread or the callback thread, never on top
 * of the suspended frames. */

/* Checker calls blocked in the producer's stream right now, lock released
 * (spec: plugin/async_lock_test.c waits for one before it starts a producer
 * that needs the lock). */
static atomic_int checker_waits;

/* Test hook, not an entry point of ferry_it.h: how many async checkers are
 * waiting for their producer with the Lua lock released. */
__attribute__((visibility("default"))) int ferry_it_lua_checker_waits(void) {
  return atomic_load(&checker_waits);
}

/* A checker's wait for its producer starts: every hold of the Lua lock
 * this thread has is let go (returned, for checker_wait_end to retake). */
static int checker_wait_begin(void) {
  int holds = lferry_runtime_release_all(runtime);
  atomic_fetch_add(&checker_waits, 1);
  return holds;
}

static void checker_wait_end(int holds) {
  atomic_fetch_sub(&checker_waits, 1);
  lferry_runtime_reacquire(runtime, holds);
}

static int unlocking_get_schema(void* user_data, struct ArrowSchema* out,
                                struct FerryError* error) {
  int holds = checker_wait_begin();
  int rc = ferry_array_stream_get_schema((struct ArrowDeviceArrayStream*)user_data, out, error);
  checker_wait_end(holds);
  return rc;
}

static int unlocking_get_next(void* user_data, struct ArrowDeviceArray* out,
                              struct FerryError* error) {
  int holds = checker_wait_begin();
  int rc = ferry_array_stream_get_next((struct ArrowDeviceArrayStream*)user_data, out, error);
  checker_wait_end(holds);
  return rc;
}

/* Does not block (the layer's queue stream returns at once), so it keeps
 * the lock: it may run from a collection on any thread's Lua frames. */
static void unlocking_release(void* user_data) {
  struct ArrowDeviceArrayStream* inner = (struct ArrowDeviceArrayStream*)user_data;
  ferry_array_stream_release(inner);
  free(inner);
}

static int new_coroutine_protected(lua_State* L) {
  lua_State** out = (lua_State**)lua_touserdata(L, 1);
  int* ref = (int*)lua_touserdata(L, 2);
  *out = lua_newthread(L);
  *ref = luaL_ref(L, LUA_REGISTRYINDEX); /* anchors the coroutine */
  return 0;
}

/* call_entry, on a new coroutine of the state instead of its main thread. */
static int call_entry_on_coroutine(const char* function, const char* case_spec, void* first) {
  set_last_error("");
  int code = ensure_state();
  if (code) return code;
  struct entry_call call = {function, case_spec, first, NULL, 0, ""};
  lua_State* co = NULL;
  int ref = LUA_NOREF;
  lferry_runtime_lock(runtime);
  int top = lua_gettop(state);
  lua_pushcfunction(state, new_coroutine_protected);
  lua_pushlightuserdata(state, &co);
  lua_pushlightuserdata(state, &ref);
  int status = lua_pcall(state, 2, 0, 0);
  lua_settop(state, top);
  if (status != LUA_OK || !co) {
    call.code = ENOMEM;
    snprintf(call.message, sizeof(call.message), "cannot make a Lua coroutine for the checker");
  } else {
    run_protected(co, entry_protected, &call, &call);
    lua_settop(co, 0);
    luaL_unref(state, LUA_REGISTRYINDEX, ref);
  }
  lferry_runtime_unlock(runtime);
  if (call.code) set_last_error(call.message);
  return call.code;
}

/* The layer's check_stream (called on its checker thread): the Lua checker
 * over the unlocking view of `stream`, which it takes (released either way). */
static int async_check_stream(const char* case_spec, struct ArrowDeviceArrayStream* stream) {
  if (!case_spec || !stream) {
    if (stream) ferry_array_stream_release(stream);
    set_last_error("case string and stream must not be NULL");
    return EINVAL;
  }
  struct ArrowDeviceArrayStream* inner =
      (struct ArrowDeviceArrayStream*)calloc(1, sizeof(*inner));
  struct ArrowDeviceArrayStream wrapped;
  memset(&wrapped, 0, sizeof(wrapped));
  struct FerryError error = {{0}};
  int rc = inner ? ferry_array_stream_move(stream, inner) : ENOMEM;
  if (rc == EINVAL) snprintf(error.message, sizeof(error.message), "the checker's stream is released");
  if (rc == 0) {
    rc = ferry_array_stream_init(&wrapped, ferry_array_stream_device_type(inner),
                                 unlocking_get_schema, unlocking_get_next, unlocking_release,
                                 inner, &error);
  }
  if (rc != 0) {
    if (inner) ferry_array_stream_release(inner);
    free(inner);
    ferry_array_stream_release(stream);
    set_last_error(rc == ENOMEM ? "out of memory wrapping the checker's stream" : error.message);
    return rc;
  }
  int code = call_entry_on_coroutine("check_stream", case_spec, &wrapped);
  ferry_array_stream_release(&wrapped); /* what the Lua side did not take */
  return code;
}

/* Fills *handler_out with a checking consumer of the case; the ticket is
 * the generic layer's until ferry_it_async_result. */
int ferry_it_check_async(const char* case_spec, struct ArrowAsyncDeviceStreamHandler* handler_out,
                         void** ticket_out) {
  set_last_error("");
  return async_outcome(ferry_it_async_check_generic(case_spec, handler_out, ticket_out,
                                                    async_check_stream, ferry_it_last_error));
}

/* The verdict of a ticket (consumed unless ETIMEDOUT). */
int ferry_it_async_result(void* ticket, int64_t timeout_ms) {
  set_last_error("");
  return async_outcome(ferry_it_async_result_generic(ticket, timeout_ms));
}
