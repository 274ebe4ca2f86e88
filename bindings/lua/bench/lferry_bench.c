/* C helper of the Lua handoff benchmark (bench/handoff.lua), never part of
 * the module. Plain C functions for LuaJIT's FFI, and, when built with
 * LFERRY_BENCH_LUA54, the same functions as a Lua 5.4 module
 * (`lferry_bench54`). Timing uses CLOCK_MONOTONIC around whole loops. */
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "ferry/ferry.h"

#define BENCH_EXPORT __attribute__((visibility("default")))

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* The floor of a Lua -> C call: a function that does nothing useful. */
BENCH_EXPORT int64_t lferry_bench_noop(int64_t x) { return x + 1; }

/* A C producer of static batches (8 int32 values, release only NULLs the
 * callback): the cheapest possible producer, so a consumer's cost shows. */
static const int32_t static_values[8] = {1, 2, 3, 4, 5, 6, 7, 8};
static const void* static_buffers[2] = {NULL, static_values};

static void static_release(struct ArrowArray* array) { array->release = NULL; }

struct c_stream_state {
  int64_t remaining;
};

static int c_stream_schema(void* user_data, struct ArrowSchema* out, struct FerryError* error) {
  return ferry_schema_init(out, "i", "values", 2, 0, error);
}

/* The static batch: int32 x 8 on the CPU, nothing to free. */
static void fill_static(struct ArrowDeviceArray* out) {
  memset(out, 0, sizeof(*out));
  out->array.length = 8;
  out->array.n_buffers = 2;
  out->array.buffers = static_buffers;
  out->array.release = static_release;
  out->device_type = ARROW_DEVICE_CPU;
  out->device_id = -1;
}

static int c_stream_next(void* user_data, struct ArrowDeviceArray* out, struct FerryError* error) {
  struct c_stream_state* state = (struct c_stream_state*)user_data;
  if (state->remaining <= 0) return 0; /* end: out stays released */
  state->remaining--;
  fill_static(out);
  return 0;
}

static struct c_stream_state c_stream_state;

/* A static C array export (int32 x 8, the schema "i"): the cheapest
 * possible C producer of arrays, for the consumer's cost to show. */
static void static_schema_release(struct ArrowSchema* schema) { schema->release = NULL; }

BENCH_EXPORT int lferry_bench_c_array(struct ArrowSchema* schema, struct ArrowDeviceArray* out) {
  memset(schema, 0, sizeof(*schema));
  schema->format = "i";
  schema->name = "values";
  schema->flags = ARROW_FLAG_NULLABLE;
  schema->release = static_schema_release;
  fill_static(out);
  return 0;
}

/* Fills `out` with a C stream of `n` static batches (one at a time). */
BENCH_EXPORT int lferry_bench_c_stream(struct ArrowDeviceArrayStream* out, int64_t n) {
  c_stream_state.remaining = n;
  return ferry_array_stream_init(out, ARROW_DEVICE_CPU, c_stream_schema, c_stream_next, NULL,
                           &c_stream_state, NULL);
}

/* Consumes up to `n` batches of `stream` in C (get_next, read one value,
 * release) and returns ns per batch, or -1 on error. */
BENCH_EXPORT double lferry_bench_consume(struct ArrowDeviceArrayStream* stream, int64_t n) {
  struct ArrowDeviceArray batch;
  memset(&batch, 0, sizeof(batch));
  volatile int64_t sink = 0;
  double start = now_ns();
  int64_t done = 0;
  for (; done < n; done++) {
    if (ferry_array_stream_get_next(stream, &batch, NULL) != 0) return -1;
    if (batch.array.release == NULL) break;
    sink += batch.array.length;
    batch.array.release(&batch.array);
  }
  double elapsed = now_ns() - start;
  (void)sink;
  return done ? elapsed / (double)done : -1;
}

/* Calls `fn` n times from C: the floor of a C -> Lua call for LuaJIT. */
BENCH_EXPORT double lferry_bench_callback(int64_t (*fn)(int64_t), int64_t n) {
  volatile int64_t acc = 0;
  double start = now_ns();
  for (int64_t i = 0; i < n; i++) acc = fn(acc);
  return (now_ns() - start) / (double)n;
}

#ifdef LFERRY_BENCH_LUA54
#include <lauxlib.h>
#include <lua.h>

static int l_noop(lua_State* L) {
  lua_pushinteger(L, lferry_bench_noop(luaL_checkinteger(L, 1)));
  return 1;
}

static int l_c_stream(lua_State* L) {
  lua_pushinteger(L, lferry_bench_c_stream(lua_touserdata(L, 1), luaL_checkinteger(L, 2)));
  return 1;
}

static int l_c_array(lua_State* L) {
  lua_pushinteger(L, lferry_bench_c_array(lua_touserdata(L, 1), lua_touserdata(L, 2)));
  return 1;
}

static int l_consume(lua_State* L) {
  lua_pushnumber(L, lferry_bench_consume(lua_touserdata(L, 1), luaL_checkinteger(L, 2)));
  return 1;
}

/* pcall_floor(fn, n): C calls the Lua function n times through a registry
 * reference and lua_pcall, as ferry's trampolines do; ns per call. */
static int l_pcall_floor(lua_State* L) {
  luaL_checktype(L, 1, LUA_TFUNCTION);
  lua_Integer n = luaL_checkinteger(L, 2);
  lua_pushvalue(L, 1);
  int ref = luaL_ref(L, LUA_REGISTRYINDEX);
  double start = now_ns();
  for (lua_Integer i = 0; i < n; i++) {
    lua_rawgeti(L, LUA_REGISTRYINDEX, ref);
    lua_pushinteger(L, i);
    if (lua_pcall(L, 1, 1, 0) != LUA_OK) break;
    lua_pop(L, 1);
  }
  double elapsed = now_ns() - start;
  luaL_unref(L, LUA_REGISTRYINDEX, ref);
  lua_pushnumber(L, elapsed / (double)n);
  return 1;
}

BENCH_EXPORT int luaopen_lferry_bench54(lua_State* L) {
  static const luaL_Reg functions[] = {{"noop", l_noop},
                                       {"c_stream", l_c_stream},
                                       {"c_array", l_c_array},
                                       {"consume", l_consume},
                                       {"pcall_floor", l_pcall_floor},
                                       {NULL, NULL}};
  luaL_newlib(L, functions);
  return 1;
}
#endif
