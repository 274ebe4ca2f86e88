/* The Lua 5.4 module `ferry_core`: the raw layer generated from ferry.h
 * (generated/lferry_raw.c) and the C helpers of the backend contract
 * (lferry_support.c, declared in generated/lferry_helpers.h). This header
 * holds what both share: the argument checks and pushes the generated
 * wrappers use, and the per-state runtime the test plugin embeds.
 *
 * Rule followed everywhere: no Lua error ever unwinds through a C frame that
 * holds memory or a lock, or through a frame of ferry or of a producer.
 * Functions called from Lua raise only before they allocate (or while the
 * allocation is already owned by a GC-reachable userdata); trampolines
 * called from C run all Lua work under lua_pcall.
 *
 * Built against another Lua (LuaJIT's 5.1 headers, when LuaRocks installs
 * the rock for LuaJIT), the module is only a locator: luaopen_ferry_core
 * returns { library = path of the libferry it links }, which LuaJIT's FFI
 * backend loads (see ferry/backend/luajit.lua). */
#ifndef FERRY_LUA_LFERRY_SUPPORT_H
#define FERRY_LUA_LFERRY_SUPPORT_H

#include <lauxlib.h>
#include <lua.h>
#include <stdint.h>

#include "ferry/ferry.h"

/* Symbols shared by the generated files and the support file only; the
 * module exports luaopen_ferry_core alone. */
#define LFERRY_INTERNAL __attribute__((visibility("hidden")))

#if LUA_VERSION_NUM >= 504

/* ---- arguments of the raw layer (raise a Lua error before any C call) ---- */
/** A Lua integer; raises for anything else (floats without an integer value included). */
LFERRY_INTERNAL lua_Integer lferry_check_integer(lua_State* L, int index);
/** A Lua integer in the range of int32_t. */
LFERRY_INTERNAL lua_Integer lferry_check_int32(lua_State* L, int index);
/** A string (borrowed from the stack) or NULL for nil. */
LFERRY_INTERNAL const char* lferry_check_string(lua_State* L, int index);
/** A lightuserdata, or NULL for nil. */
LFERRY_INTERNAL void* lferry_check_pointer(lua_State* L, int index);
/** A C function address carried by a lightuserdata (NULL for nil). */
LFERRY_INTERNAL void (*lferry_check_function(lua_State* L, int index))(void);
/** A table of lightuserdata (false/nil: NULL), or NULL for nil: copied into
 *  `scratch` when it has at most `scratch_size` entries, else into a
 *  GC-owned block left on the stack until the wrapper returns. */
LFERRY_INTERNAL void** lferry_check_buffer_list(lua_State* L, int index, void** scratch,
                                                int scratch_size);

/* ---- results ----------------------------------------------------------- */
LFERRY_INTERNAL void lferry_push_pointer(lua_State* L, const void* pointer); /* NULL -> nil */
LFERRY_INTERNAL void lferry_push_string(lua_State* L, const char* string);   /* NULL -> nil */
/** The error's message, or nil when it is empty. */
LFERRY_INTERNAL void lferry_push_message(lua_State* L, const struct FerryError* error);

/** Sets the generated raw functions and constants into the table on top of the stack. */
LFERRY_INTERNAL void lferry_raw_register(lua_State* L);

/* ---- the runtime of one Lua universe ----------------------------------- */
struct lferry_runtime;

/** Returns the runtime of `L`'s universe, creating it on first use (may
 *  raise a memory error, so call it before allocating anything). */
LFERRY_INTERNAL struct lferry_runtime* lferry_runtime_get(lua_State* L);
/** The recursive lock every Lua callback takes. An embedder that runs Lua
 *  code itself (the test plugin) takes it around that code too, which makes
 *  callbacks from any thread safe. */
LFERRY_INTERNAL void lferry_runtime_lock(struct lferry_runtime* runtime);
LFERRY_INTERNAL void lferry_runtime_unlock(struct lferry_runtime* runtime);
/** Releases every hold the calling thread has on the runtime's lock and
 *  returns how many there were (0 when it holds none), for a C call that
 *  blocks on another thread which may need the Lua state meanwhile. Only for
 *  a thread whose Lua frames are all on a coroutine of its own (the plugin's
 *  async checker): another thread may run Lua on the state before
 *  lferry_runtime_reacquire(runtime, holds) takes them back. */
LFERRY_INTERNAL int lferry_runtime_release_all(struct lferry_runtime* runtime);
LFERRY_INTERNAL void lferry_runtime_reacquire(struct lferry_runtime* runtime, int holds);

/** A message handler for lua_pcall: ferry error tables ({code=, message=})
 *  pass unchanged, anything else becomes a string with a traceback. */
LFERRY_INTERNAL int lferry_message_handler(lua_State* L);

/** Buffers, device memory and Lua references currently owned by exports
 *  made through this module (process-wide), plus live Lua-backed streams. */
LFERRY_INTERNAL int64_t lferry_live_allocations(void);

#include "generated/lferry_helpers.h"

#endif /* LUA_VERSION_NUM >= 504 */

/** The module's entry point (the only exported symbol). */
int luaopen_ferry_core(lua_State* L);

#endif  // FERRY_LUA_LFERRY_SUPPORT_H
