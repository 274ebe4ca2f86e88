/* Hand-written parts of ferry's Lua 5.4 module that SWIG cannot generate:
 * type checks used by the generated wrapper's typemaps, the per-state
 * runtime (recursive lock + callback thread), C trampolines that call Lua
 * producers, and the "keeper" that owns the buffers of Lua-produced exports
 * until the consumer releases them.
 *
 * Rule followed everywhere: no Lua error ever unwinds through a C frame that
 * holds memory or a lock. Functions called from Lua raise only before they
 * allocate (or while the allocation is already owned by a GC-reachable
 * userdata); trampolines called from C run all Lua work under lua_pcall. */
#ifndef FERRY_LUA_LFERRY_SUPPORT_H
#define FERRY_LUA_LFERRY_SUPPORT_H

#include <lauxlib.h>
#include <lua.h>
#include <stdint.h>

#include "ferry/ferry.h"

/* Symbols shared by the generated wrapper and the support file only; the
 * module exports luaopen_ferry_core alone. */
#define LFERRY_INTERNAL __attribute__((visibility("hidden")))

/* ---- checks used by the SWIG typemaps (never raise) -------------------- */
LFERRY_INTERNAL int lferry_is_integer(lua_State* L, int index);
LFERRY_INTERNAL int lferry_is_string_or_nil(lua_State* L, int index);
LFERRY_INTERNAL int lferry_is_pointer(lua_State* L, int index);
LFERRY_INTERNAL int lferry_is_table_or_nil(lua_State* L, int index);
/** Converts a lightuserdata to a C function pointer (NULL for nil). */
LFERRY_INTERNAL void (*lferry_to_function_pointer(lua_State* L, int index))(void);
/** Copies a table of lightuserdata/false into `scratch` when it has at most
 *  `scratch_size` entries, else into a GC-owned block that lives until the
 *  wrapper returns; returns the list (NULL for nil). */
LFERRY_INTERNAL void** lferry_to_buffer_list(lua_State* L, int index, void** scratch,
                                             int scratch_size);

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

/** Buffers, device memory and Lua references currently owned by exports
 *  made through this module (process-wide), plus live Lua-backed streams. */
LFERRY_INTERNAL int64_t lferry_live_allocations(void);

/** Adds the support functions to the table on top of the stack (the
 *  ferry_core module table). */
LFERRY_INTERNAL void lferry_support_register(lua_State* L);

#endif  // FERRY_LUA_LFERRY_SUPPORT_H
