-- ferry's Lua 5.4 backend (the contract: ferry/backend/contract.lua): the C
-- module `ferry_core`, whose raw layer is generated from ferry.h
-- (src/generated/lferry_raw.c) and whose C helpers are `ferry_core.support`
-- (src/lferry_support.c). Lua integers carry 64-bit values exactly, pointers
-- are lightuserdata (nil for NULL), and raw functions taking a FerryError
-- return `code, ..., message` instead of raising.
local core = require("ferry_core")
if core.kind == "locator" then
  error("ferry: this ferry_core was built for another Lua (LuaJIT's FFI backend uses it to find " ..
        "libferry); the Lua 5.4 backend needs ferry_core built against Lua 5.4", 2)
end
local support = core.support
local contract = require("ferry.backend.contract")

local raw = {}
for name, value in pairs(core) do
  if name ~= "support" then raw[name] = value end
end

local backend = {
  name = "lua5.4",
  raw = raw,
  support = support,
}

-- The helpers implemented in C, under their contract names.
for _, f in ipairs(contract.functions) do
  if f.c then backend[f.name] = support[f.name] end
end

-- The consumer's per-batch calls (LuaJIT picks compiled or interpreted
-- paths here; on 5.4 the raw functions are the fast path).
backend.get_next = raw.ferry_array_stream_get_next
backend.get_next_on = raw.ferry_array_stream_get_next_on
backend.release_device_array = raw.ferry_device_array_release
local device_array_is_released = raw.ferry_device_array_is_released
function backend.is_released(ptr) return device_array_is_released(ptr) == 1 end

-- Tables get __gc on 5.4: nothing to anchor.
function backend.gc_anchor() return nil end
function backend.gc_anchor_drop() end

-- Exact 64-bit integers: Lua 5.4 integers already are.
function backend.to_integer(value) return value end

return backend
