-- ferry: zero-copy handoff of Arrow device arrays and streams, for Lua 5.4
-- (on the C module `ferry_core`) and LuaJIT (on the FFI), with one API.
--
--   local ferry = require("ferry")
--   local arr = ferry.import(array_ptr, schema_ptr)          -- validates, takes ownership
--   print(arr:length(), arr:null_count(), arr:value(0))      -- bounds-checked reads
--   arr:release()
--   for batch in stream:batches() do ... end
--
-- Indices are 0-based everywhere (elements, buffers, children), as in Arrow.
-- Errors are raised as ferry.Error values whose text reads
-- "ferry.get_next: EIO: injected failure at get_next 2"; they are raised only
-- after the C call returned, never through a C frame. Both backends provide
-- the contract of ferry/backend/contract.lua; everything above them is
-- shared: this file (errors, constants) and its parts, by concern:
-- ferry/devices.lua, schemas.lua, values.lua (the readers), arrays.lua,
-- streams.lua, export.lua (producing) and async.lua.
local backend
do
  local force = os.getenv("FERRY_LUA_BACKEND")
  if (force == nil or force == "" or force == "luajit") and rawget(_G, "jit") then
    backend = require("ferry.backend.luajit")
  else
    backend = require("ferry.backend.lua54")
  end
end
local raw = backend.raw

local ferry = {
  backend = backend.name,
  raw = raw,
  _backend = backend,
}

-- ---- errors and constants ---------------------------------------------------------

-- errno codes by name (EINVAL = 22, ...): every code libferry names
-- (ferry_errno_name), read from the library itself.
local errno = {}
for code = 1, 255 do
  local name = raw.ferry_errno_name(code)
  if name and name ~= "EUNKNOWN" then errno[name] = code end
end
ferry.errno = errno
local EINVAL, ENOTSUP, ENOMEM = errno.EINVAL, errno.ENOTSUP, errno.ENOMEM

-- The headers' integer constants (ARROW_DEVICE_*, ARROW_FLAG_*,
-- FERRY_VALIDATE_*, FERRY_SYNC_*, DLPACK_*, kDL*), as the generated layer has them.
local constants = {}
for name, value in pairs(raw) do
  if type(value) == "number" then constants[name] = value end
end
ferry.constants = constants
local CPU = constants.ARROW_DEVICE_CPU
local NULLABLE = constants.ARROW_FLAG_NULLABLE
local VALIDATE_DEFAULT, VALIDATE_FULL = constants.FERRY_VALIDATE_DEFAULT, constants.FERRY_VALIDATE_FULL

local Error = {}
Error.__index = Error
Error.__tostring = function(e)
  return string.format("%s: %s: %s", e.where, e.name, e.message)
end
ferry.Error = Error

local function errno_name(code)
  return raw.ferry_errno_name(code) or ("errno " .. tostring(code))
end

--- ferry.error(where, code, message) -> a ferry.Error value { where, code, name, message }.
function ferry.error(where, code, message)
  return setmetatable({ where = where, code = code, name = errno_name(code),
                        message = message or "" }, Error)
end

local function raise(where, code, message)
  error(ferry.error(where, code, message), 3)
end

-- The leak report (docs/bindings.md, "Closing and leaks"): with
-- FERRY_LEAK_REPORT set (non-empty, not "0": the core's rule, read once
-- here) every import object is registered with ferry_leak_track until it is
-- closed, so that libferry's report at exit names those never closed
-- ("ferry: leak: lua: ..."). Collected without close() counts as never
-- closed: the collector is a safety net, not the plan. Off, nothing is
-- called and no field is added.
local LEAK_REPORT
do
  local value = os.getenv("FERRY_LEAK_REPORT")
  LEAK_REPORT = value ~= nil and value ~= "" and value ~= "0"
end
local LEAK_RUNTIME = "lua"

local function leak_track(object, description)
  local token = raw.ferry_leak_track(LEAK_RUNTIME, description .. " (" .. backend.name .. ")")
  if token ~= 0 then object._leak = token end
end

local function leak_untrack(object)
  local token = object._leak
  if token then
    object._leak = nil
    raw.ferry_leak_untrack(token)
  end
end

local function check(where, code, message)
  if code ~= 0 then raise(where, code, message) end
end

--- The library's version ("0.1.0") and ABI version.
function ferry.version() return raw.ferry_version() end
function ferry.abi_version() return raw.ferry_abi_version() end
--- ferry.tonumber(v): a 64-bit element value as a Lua number (on 5.4 it
--- already is an integer; on LuaJIT int64/uint64 values are cdata, exact,
--- and become numbers exact up to 2^53).
ferry.tonumber = backend.to_integer

--- What Lua exports own now (buffers, device memory, anchors, live Lua streams).
function ferry.live_allocations() return backend.live_allocations() end

-- ---- the parts ---------------------------------------------------------------------

-- Each part adds its functions and classes to `ferry` and leaves what a later
-- part uses in `I`, which the parts find at package.loaded["ferry.internal"]
-- while they load: a fresh one (and fresh parts) for every load of `ferry`.
local I = {}
I.backend, I.check, I.constants, I.CPU, I.EINVAL = backend, check, constants, CPU, EINVAL
I.ENOMEM, I.ENOTSUP, I.errno, I.ferry = ENOMEM, ENOTSUP, errno, ferry
I.LEAK_REPORT, I.leak_track, I.leak_untrack = LEAK_REPORT, leak_track, leak_untrack
I.NULLABLE, I.raise, I.raw, I.VALIDATE_DEFAULT = NULLABLE, raise, raw, VALIDATE_DEFAULT
I.VALIDATE_FULL = VALIDATE_FULL
package.loaded["ferry.internal"] = I
for _, part in ipairs({ "devices", "schemas", "values", "arrays", "streams", "export", "async" }) do
  package.loaded["ferry." .. part] = nil
  require("ferry." .. part)
end
package.loaded["ferry.internal"] = nil

return ferry
