-- ferry's Lua 5.4 backend: the SWIG-generated raw layer `ferry_core` plus
-- its hand-written `support` table (bindings/lua/src/lferry_support.c).
-- The raw layer already has the conventions the idiomatic layer expects:
-- Lua integers for 64-bit values, lightuserdata (nil for NULL) for
-- pointers, and `code, ..., message` results instead of raised errors.
local core = require("ferry_core")
local support = core.support

local backend = {
  name = "lua5.4",
  raw = core,
  support = support,
}

backend.handle = support.handle
backend.handle_free = support.handle_free
backend.read = support.read
backend.read_bytes = support.read_bytes
backend.pointer_add = support.pointer_add
backend.address = support.address
backend.keeper_new = support.keeper_new
backend.keeper_pointer = support.keeper_pointer
backend.keeper_disown = support.keeper_disown
backend.keeper_free = support.keeper_free
backend.keeper_pack = support.keeper_pack
backend.keeper_alloc = support.keeper_alloc
backend.keeper_string = support.keeper_string
backend.keeper_to_device = support.keeper_to_device
backend.keeper_device_stream = support.keeper_device_stream
backend.stream_export = support.stream_export
backend.validate = support.validate
backend.live_allocations = support.live_allocations

-- The consumer's per-batch calls (LuaJIT picks compiled or interpreted
-- paths here; on 5.4 the raw functions are the fast path).
backend.get_next = core.ferry_array_stream_get_next
backend.get_next_on = core.ferry_array_stream_get_next_on
backend.release_device_array = core.ferry_device_array_release
local device_array_is_released = core.ferry_device_array_is_released
function backend.is_released(ptr) return device_array_is_released(ptr) == 1 end
-- A flat CPU export over borrowed buffers in one call (producers).
backend.export_flat = support.export_flat
-- The reusing batch loop as one C function per step.
backend.batch_iterator = support.batch_iterator

-- DLPack tensors: field table and deleter.
backend.dlpack_info = support.dlpack_info
backend.dlpack_delete = support.dlpack_delete
-- Tables get __gc on 5.4: nothing to anchor.
function backend.gc_anchor() return nil end
function backend.gc_anchor_drop() end

local keeper_hook = support.keeper_hook()
function backend.keeper_hook() return keeper_hook end

-- Exact 64-bit integers: Lua 5.4 integers already are.
function backend.to_integer(value) return value end

return backend
