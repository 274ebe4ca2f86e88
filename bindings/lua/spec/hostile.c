/* The Lua 5.4 face of tests/hostile (libferry_hostile.so, the one library of
 * hostile producers every binding's hostile suite loads), for
 * spec/hostile_lib.lua: a test helper, never part of the module or the rock.
 * LuaJIT reaches the same library through its FFI instead. */
#include <errno.h>
#include <lauxlib.h>
#include <lua.h>
#include <poll.h>

#include "ferry_hostile.h"

#define HOSTILE_EXPORT __attribute__((visibility("default")))

static void* pointer_arg(lua_State* L, int i) {
  void* p = lua_touserdata(L, i);
  luaL_argcheck(L, p != NULL, i, "struct pointer expected");
  return p;
}

/* count() -> the number of array cases */
static int l_count(lua_State* L) {
  lua_pushinteger(L, ferry_hostile_count());
  return 1;
}

/* case(i) -> name, kind, flags, where, needle (i from 0; nil out of range) */
static int l_case(lua_State* L) {
  int32_t i = (int32_t)luaL_checkinteger(L, 1);
  if (ferry_hostile_name(i) == NULL) return 0;
  lua_pushstring(L, ferry_hostile_name(i));
  lua_pushinteger(L, ferry_hostile_kind(i));
  lua_pushinteger(L, ferry_hostile_flags(i));
  lua_pushstring(L, ferry_hostile_where(i));
  lua_pushstring(L, ferry_hostile_needle(i));
  return 5;
}

static int l_stream_count(lua_State* L) {
  lua_pushinteger(L, ferry_hostile_stream_count());
  return 1;
}

/* stream_case(i) -> name, at, level, code, needle (nil out of range) */
static int l_stream_case(lua_State* L) {
  int32_t i = (int32_t)luaL_checkinteger(L, 1);
  if (ferry_hostile_stream_name(i) == NULL) return 0;
  lua_pushstring(L, ferry_hostile_stream_name(i));
  lua_pushinteger(L, ferry_hostile_stream_at(i));
  lua_pushinteger(L, ferry_hostile_stream_level(i));
  lua_pushinteger(L, ferry_hostile_stream_code(i));
  lua_pushstring(L, ferry_hostile_stream_needle(i));
  return 5;
}

/* array(name, schema_ptr, device_array_ptr) -> code */
static int l_array(lua_State* L) {
  const char* name = luaL_checkstring(L, 1);
  lua_pushinteger(L, ferry_hostile_make(name, pointer_arg(L, 3), pointer_arg(L, 2)));
  return 1;
}

/* stream(schema_case, batch_case, good, stream_ptr) -> code */
static int l_stream(lua_State* L) {
  const char* schema = luaL_checkstring(L, 1);
  const char* batch = luaL_checkstring(L, 2);
  int32_t good = (int32_t)luaL_checkinteger(L, 3);
  lua_pushinteger(L, ferry_hostile_stream(schema, batch, good, pointer_arg(L, 4)));
  return 1;
}

/* stream_make(name, stream_ptr) -> code */
static int l_stream_make(lua_State* L) {
  const char* name = luaL_checkstring(L, 1);
  lua_pushinteger(L, ferry_hostile_stream_make(name, pointer_arg(L, 2)));
  return 1;
}

static int l_live(lua_State* L) {
  lua_pushinteger(L, ferry_hostile_live());
  return 1;
}

static int l_double_releases(lua_State* L) {
  lua_pushinteger(L, ferry_hostile_released_again());
  return 1;
}

static int l_calls_after_failure(lua_State* L) {
  lua_pushinteger(L, ferry_hostile_calls_after_failure());
  return 1;
}

static int l_reset(lua_State* L) {
  (void)L;
  ferry_hostile_reset();
  return 0;
}

/* fd_readable(fd, timeout_ms) -> 1 when readable within the timeout
 * (negative: as long as it takes), 0 when not, -1 on a poll error: the event
 * loop of the async consumer's tests. */
static int l_fd_readable(lua_State* L) {
  struct pollfd p = {.fd = (int)luaL_checkinteger(L, 1), .events = POLLIN, .revents = 0};
  int timeout_ms = (int)luaL_checkinteger(L, 2);
  int rc;
  do {
    rc = poll(&p, 1, timeout_ms);
  } while (rc < 0 && errno == EINTR);
  lua_pushinteger(L, rc < 0 ? -1 : (rc > 0 && (p.revents & POLLIN)) ? 1 : 0);
  return 1;
}

HOSTILE_EXPORT int luaopen_lferry_hostile54(lua_State* L) {
  static const luaL_Reg functions[] = {{"count", l_count},
                                       {"case", l_case},
                                       {"stream_count", l_stream_count},
                                       {"stream_case", l_stream_case},
                                       {"array", l_array},
                                       {"stream", l_stream},
                                       {"stream_make", l_stream_make},
                                       {"live", l_live},
                                       {"double_releases", l_double_releases},
                                       {"calls_after_failure", l_calls_after_failure},
                                       {"reset", l_reset},
                                       {"fd_readable", l_fd_readable},
                                       {NULL, NULL}};
  luaL_newlib(L, functions);
  return 1;
}
