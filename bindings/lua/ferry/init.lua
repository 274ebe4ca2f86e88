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
-- the contract of ferry/backend/contract.lua; everything below is shared.
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

-- ---- devices --------------------------------------------------------------------

local Device = {}
Device.__index = Device
ferry.Device = Device

local function device_type_code(name_or_code)
  if type(name_or_code) == "number" then return name_or_code end
  local code, value, message = raw.ferry_device_type_from_name(name_or_code)
  check("ferry.device", code, message)
  return value
end

local function default_id(device_type) return device_type == CPU and -1 or 0 end

--- ferry.device(kind, id) -> Device ("cpu", "sim", "cuda", "rocm", ... or a
--- device type code; id defaults to -1 for the CPU, else 0). The registry
--- owns devices for the life of the process.
function ferry.device(kind, id)
  local device_type = device_type_code(kind or "cpu")
  if id == nil then id = default_id(device_type) end
  local code, ptr, message = raw.ferry_device_resolve(device_type, id)
  check("ferry.device", code, message)
  return setmetatable({ ptr = ptr, type = device_type, id = id }, Device)
end

--- ferry.backends() -> list of { name, available, reason } (the backends
--- compiled into libferry, each probed once: cpu, sim, cuda, rocm).
function ferry.backends()
  local out = {}
  for i = 0, raw.ferry_backend_count() - 1 do
    local code, message = raw.ferry_backend_probe(i)
    out[#out + 1] = { name = raw.ferry_backend_name(i), available = code == 0,
                      reason = code ~= 0 and message or nil }
  end
  return out
end

function Device:type_name() return raw.ferry_device_type_name(self.type) end
function Device:is_host_accessible() return raw.ferry_device_is_host_accessible(self.ptr) == 1 end
function Device:live_allocations() return raw.ferry_device_live_allocations(self.ptr) end
function Device:__tostring() return string.format("ferry.Device(%s:%d)", self:type_name(), self.id) end

--- stream() -> a native stream of this device (CUstream/hipStream_t value,
--- or a sim stream), owned by the caller until destroy_stream.
function Device:stream()
  local code, stream, message = raw.ferry_device_stream_create(self.ptr)
  check("ferry.Device.stream", code, message)
  return stream
end
--- synchronize(stream): blocks until the stream's work is done (nil: all work).
function Device:synchronize(stream)
  check("ferry.Device.synchronize", raw.ferry_device_stream_synchronize(self.ptr, stream))
end
function Device:destroy_stream(stream)
  check("ferry.Device.destroy_stream", raw.ferry_device_stream_destroy(self.ptr, stream))
end

--- create_event() -> a native event: a pointer to the CUevent/hipEvent_t (the
--- value of ArrowDeviceArray.sync_event), owned by the caller until
--- destroy_event (or handed to an export with event_destroy = "ferry").
function Device:create_event()
  local code, event, message = raw.ferry_device_event_create(self.ptr)
  check("ferry.Device.create_event", code, message)
  return event
end
function Device:destroy_event(event)
  check("ferry.Device.destroy_event", raw.ferry_device_event_destroy(self.ptr, event))
end
--- record_event(event, stream): records the event at the end of `stream`.
function Device:record_event(event, stream)
  check("ferry.Device.record_event", raw.ferry_device_event_record(self.ptr, event, stream))
end
--- synchronize_event(event): blocks the host until the event completed.
function Device:synchronize_event(event)
  check("ferry.Device.synchronize_event", raw.ferry_device_event_synchronize(self.ptr, event))
end
--- wait_event(stream, event): `stream` waits for the event (the host does not).
function Device:wait_event(stream, event)
  check("ferry.Device.wait_event", raw.ferry_device_stream_wait_event(self.ptr, stream, event))
end

--- allocate(size) -> pointer to `size` bytes of this device's memory, owned
--- by the caller until free() (or handed to an export with { device_pointer =,
--- owned = true }).
function Device:allocate(size)
  local code, ptr, message = raw.ferry_device_allocate(self.ptr, size)
  check("ferry.Device.allocate", code, message)
  return ptr
end
function Device:free(ptr) check("ferry.Device.free", raw.ferry_device_deallocate(self.ptr, ptr)) end

local host_device
local function cpu_device()
  host_device = host_device or ferry.device("cpu")
  return host_device
end

--- copy_from_host(dst, bytes, stream): copies the string `bytes` into this
--- device's memory at `dst`; ordered on `stream` when given (the string
--- must then stay alive until the stream reached the copy), else complete
--- on return.
function Device:copy_from_host(dst, bytes, stream)
  if type(bytes) ~= "string" then raise("ferry.Device.copy_from_host", EINVAL, "bytes must be a string") end
  local k = backend.keeper_new()
  local src = backend.keeper_string(k, bytes) -- the string's own bytes
  local code, message = raw.ferry_device_memcpy(self.ptr, dst, cpu_device().ptr, src, #bytes, stream)
  backend.keeper_free(k)
  check("ferry.Device.copy_from_host", code, message)
end

--- copy_to_host(src, size) -> string: `size` bytes of this device's memory
--- at `src`, complete on return.
function Device:copy_to_host(src, size)
  local k = backend.keeper_new()
  local host = backend.keeper_alloc(k, size)
  local code, message = raw.ferry_device_memcpy(cpu_device().ptr, host, self.ptr, src, size, nil)
  local bytes = code == 0 and backend.read_bytes(host, 0, size) or nil
  backend.keeper_free(k)
  check("ferry.Device.copy_to_host", code, message)
  return bytes
end

--- Strict mode of the simulated device (reads before a wait see poison).
function ferry.sim_set_strict(on) raw.ferry_sim_set_strict(on and 1 or 0) end
function ferry.sim_is_strict() return raw.ferry_sim_is_strict() == 1 end

-- ---- handles: pools of binding-owned ABI structs ------------------------------------

-- Handles of released structs are kept for the next user (released, zeroed
-- structs and their userdata/cdata): no allocation, no finaliser and no
-- garbage per import or batch. At most POOL_SIZE are kept.
local POOL_SIZE = 64

-- Schema handles, for schemas shared by a stream and its batches.
local schema_pool = {}
do
  local owners, ptrs, n = {}, {}, 0
  function schema_pool.take()
    if n > 0 then
      local owner, ptr = owners[n], ptrs[n]
      owners[n], ptrs[n] = nil, nil
      n = n - 1
      return owner, ptr
    end
    return backend.handle("schema")
  end
  -- Gives back a handle whose struct is released.
  function schema_pool.give(owner, ptr)
    if n < POOL_SIZE then
      n = n + 1
      owners[n], ptrs[n] = owner, ptr
    else
      backend.handle_free(owner)
    end
  end
end

-- Pair handles (an ArrowDeviceArray and an ArrowSchema in one block: what
-- one array holds), with their pointers: the device array, its ArrowArray,
-- the schema. Inlined into new_device_array and DeviceArray:release (the
-- consumer's hot path).
local pair_owners, pair_ptrs, pair_arrs, pair_sptrs, pair_n = {}, {}, {}, {}, 0
local raw_device_array_array = raw.ferry_device_array_array
local release_pair = backend.release_pair

local release_device_array = backend.release_device_array
local raw_schema_release = raw.ferry_schema_release

-- ---- structs for a producer to fill ----------------------------------------------------

--- ferry.array_slots() -> { schema = ArrowSchema*, array = ArrowDeviceArray* }:
--- released structs owned by Lua, for a producer (another runtime, or
--- DeviceArray:export) to fill and ferry.import to take from. Freed
--- (released first when still live) when collected or by slots:free().
local ArraySlots = {}
ArraySlots.__index = ArraySlots
function ferry.array_slots()
  local owner, array, schema = backend.handle("pair")
  return setmetatable({ schema = schema, array = array, _owner = owner }, ArraySlots)
end
function ArraySlots:free()
  local owner = self._owner
  if owner then
    self._owner, self.schema, self.array = nil, nil, nil
    backend.handle_free(owner)
  end
end

--- ferry.stream_slot() -> { stream = ArrowDeviceArrayStream* }: the same for a stream.
function ferry.stream_slot()
  local owner, stream = backend.handle("stream")
  return setmetatable({ stream = stream, _owner = owner }, ArraySlots)
end

-- ---- schemas ----------------------------------------------------------------------

-- A Schema is a view of an ArrowSchema. Views of an array's or a stream's
-- schema (and their children) are borrowed: `_parent` is the object whose
-- liveness they follow. A shared schema (a stream's, or one an array shares
-- with its copies) counts its holders in `_users` and is released with the
-- last; a schema returned to the caller (stream:get_schema()) is owned
-- (`_mine`): the caller releases it.
local Schema = {}
Schema.__index = Schema
ferry.Schema = Schema

local function schema_view(ptr, parent)
  return setmetatable({ _ptr = ptr, _parent = parent }, Schema)
end

local function shared_schema(owner, ptr, users)
  return setmetatable({ _ptr = ptr, _owner = owner, _users = users, _released = false }, Schema)
end

-- Drops one holder of a shared schema; the last one releases it.
local function unref_schema(schema)
  local users = schema._users - 1
  schema._users = users
  if users == 0 then
    schema._released = true
    raw_schema_release(schema._ptr)
    schema_pool.give(schema._owner, schema._ptr)
    schema._owner = nil
  end
end

-- The same from a finaliser (Lua 5.4 __gc of an object holding it): the
-- schema's handle may have been finalized in this same collection already
-- (finalizers run in the reverse order of their marking), its struct freed,
-- so the struct is never touched here; when this was the last holder, the
-- handle's own finaliser releases and frees it.
local function unref_schema_collected(schema)
  local users = schema._users - 1
  schema._users = users
  if users == 0 then
    schema._released = true
    schema._owner = nil
  end
end

local function schema_ptr(self)
  local root = self
  while root._parent do root = root._parent end
  if root._released then error(ferry.error("ferry.Schema", EINVAL, "schema already released"), 3) end
  return self._ptr
end

function Schema:format()
  local format = self._format
  if not format then
    format = raw.ferry_schema_format(schema_ptr(self))
    self._format = format
  end
  return format
end
function Schema:name() return raw.ferry_schema_name(schema_ptr(self)) end
function Schema:flags() return raw.ferry_schema_flags(schema_ptr(self)) end
function Schema:nullable() return math.floor(self:flags() / NULLABLE) % 2 == 1 end
function Schema:n_children() return raw.ferry_schema_n_children(schema_ptr(self)) end
function Schema:pointer() return schema_ptr(self) end

function Schema:child(i)
  local child = raw.ferry_schema_child(schema_ptr(self), i)
  if not child then raise("ferry.Schema.child", EINVAL, "no child " .. tostring(i)) end
  return schema_view(child, self)
end

function Schema:dictionary()
  local dictionary = raw.ferry_schema_dictionary(schema_ptr(self))
  return dictionary and schema_view(dictionary, self) or nil
end

--- metadata() -> list of { key, value } pairs (binary strings) in order,
--- plus a by-key map under field `map`; nil when absent.
function Schema:metadata()
  local ptr = schema_ptr(self)
  local n = raw.ferry_schema_metadata_count(ptr)
  if n < 0 then raise("ferry.Schema.metadata", EINVAL, "malformed metadata encoding") end
  if n == 0 then return nil end
  local list, map = {}, {}
  for i = 0, n - 1 do
    local key = raw.ferry_schema_metadata_key(ptr, i)
    local value = raw.ferry_schema_metadata_value(ptr, i)
    list[#list + 1] = { key, value }
    map[key] = value
  end
  list.map = map
  return list
end

--- validate() -> ok, message, findings
function Schema:validate()
  local code, message, findings = backend.validate(schema_ptr(self), nil, VALIDATE_DEFAULT)
  return code == 0, message, findings
end

--- release(): releases a schema the caller owns (stream:get_schema()), once;
--- views of an array's or a stream's schema go with their owner.
function Schema:release()
  if self._mine then
    self._mine = false
    unref_schema(self)
  end
end

-- Schemas the caller owns also release when collected (and on 5.4 by
-- `local s <close>`); views and shared schemas have no finaliser to pay.
-- (Collected: the handle is not given back to the pool, where a struct its
-- own finaliser frees in this same collection would be taken again.)
local OwnedSchema = { __index = Schema, __close = Schema.release, __gc = function(self)
  if self._mine then
    self._mine = false
    unref_schema_collected(self)
  end
end }
local function owned_schema()
  local owner, ptr = schema_pool.take()
  local schema = shared_schema(owner, ptr, 1)
  schema._mine = true
  return setmetatable(schema, OwnedSchema)
end

--- export(out): moves this owned schema into a consumer-allocated struct.
function Schema:export(out)
  if not self._mine or self._users ~= 1 then
    raise("ferry.Schema.export", EINVAL, "only a schema the caller owns alone can be moved")
  end
  local code = raw.ferry_schema_move(schema_ptr(self), out)
  if code ~= 0 then raise("ferry.Schema.export", code, "destination not released") end
  self:release()
end

function Schema:__tostring()
  return string.format("ferry.Schema(%s %q)", tostring(self:format()), tostring(self:name()))
end
OwnedSchema.__tostring = Schema.__tostring

-- ---- arrays ------------------------------------------------------------------------

-- How value() reads an array of a format: a fixed-width element kind
-- (i8..u64, f32, f64, bits), "b32"/"b64" (utf8/binary with 32/64-bit
-- offsets), "l32"/"l64" (lists), "struct", "dict" (dictionary-encoded), or
-- "none" (no reader).
local FIXED = {
  c = "i8", C = "u8", s = "i16", S = "u16", i = "i32", I = "u32", l = "i64", L = "u64",
  f = "f32", g = "f64", b = "bits",
  tdD = "i32", tdm = "i64", tts = "i32", ttm = "i32", ttu = "i64", ttn = "i64",
  tDs = "i64", tDm = "i64", tDu = "i64", tDn = "i64", tiM = "i32",
}
local KIND_OF_FORMAT = {
  u = "b32", z = "b32", U = "b64", Z = "b64", ["+l"] = "l32", ["+L"] = "l64", ["+s"] = "struct",
  -- the other layouts the validator accepts (readers below, "layouts")
  n = "null", e = "f16", tiD = "interval_dt", tin = "interval_mdn", ["+m"] = "l32",
  ["+vl"] = "lv32", ["+vL"] = "lv64", ["+r"] = "ree", vu = "view", vz = "view",
}
for format, kind in pairs(FIXED) do KIND_OF_FORMAT[format] = kind end
local IS_FIXED = { i8 = true, u8 = true, i16 = true, u16 = true, i32 = true, u32 = true,
                   i64 = true, u64 = true, f32 = true, f64 = true, bits = true }

local function kind_of(format, has_dictionary)
  if has_dictionary then return "dict" end
  if format == nil then return "none" end
  local kind = KIND_OF_FORMAT[format]
  if kind then return kind end
  if format:match("^ts[smun]:") then return "i64" end -- timestamps
  if format:match("^w:") then return "fsb" end         -- fixed-size binary
  if format:match("^d:") then return "decimal" end
  if format:match("^%+w:") then return "fsl" end       -- fixed-size list
  if format:match("^%+us:") then return "sparse" end   -- unions
  if format:match("^%+ud:") then return "dense" end
  return "none"
end

local device_info -- (defined with DeviceArray) -> device type, device id of a root

-- Children and dictionaries are Arrays: views into their DeviceArray
-- (`_root`), alive as long as it is.
local Array = {}
Array.__index = Array
ferry.Array = Array

local DeviceArray = setmetatable({}, { __index = Array })
DeviceArray.__index = DeviceArray
ferry.DeviceArray = DeviceArray

-- The schema an array is described by: a DeviceArray's own, or the one it
-- shares (`_shared`); a child's or dictionary's (`_sptr`).
local function schema_of(self)
  local shared = self._shared
  return shared and shared._ptr or self._sptr
end

local function live_root(self, where)
  local root = self._root or self
  if root._released then
    error(ferry.error(where or "ferry.DeviceArray", EINVAL, "array already released"), 3)
  end
  return root
end

local function array_ptr(self)
  live_root(self, "ferry.DeviceArray")
  return self._arr
end

-- Host reads need memory the host can reach and the producer's event
-- waited on; checked once per array (per batch of a reused loop).
local function host_ready(self, where)
  local root = live_root(self, where)
  local device_type, device_id = device_info(root)
  if device_type ~= CPU and not ferry.device(device_type, device_id):is_host_accessible() then
    raise(where, ENOTSUP, "memory on " .. raw.ferry_device_type_name(device_type) ..
          " is not host-accessible: bring the array over with to_host() first")
  end
  root:wait()
  root._host_ok = true
end

-- A read that found data contradicting its own declaration: the message of
-- the validator (FULL) comes first when it finds the problem too.
local function read_failed(self, where, code, message)
  if code ~= EINVAL then raise(where, code, message) end
  -- A declaration no address space can back: FULL validation would read
  -- every byte it declares (UTF-8, offsets), past the real buffer.
  if message:find("than a process can address", 1, true) or message:find("2^51", 1, true) then
    raise(where, code, message)
  end
  local root = self._root or self
  local vcode, vmessage = backend.validate(schema_of(root), root._ptr, VALIDATE_FULL)
  if vcode ~= 0 and vmessage then message = vmessage .. " (" .. message .. ")" end
  raise(where, code, message)
end

local raw_array_length = raw.ferry_array_length
--- length(), null_count(), offset(), n_buffers(), n_children(): the array's fields.
function Array:length()
  -- hot path: inlined liveness check
  local root = self._root or self
  if root._released then live_root(self) end
  return raw_array_length(self._arr)
end
function DeviceArray:length()
  if self._released then live_root(self) end
  return raw_array_length(self._arr)
end
function Array:null_count() return raw.ferry_array_null_count(array_ptr(self)) end
function Array:offset() return raw.ferry_array_offset(array_ptr(self)) end
function Array:n_buffers() return raw.ferry_array_n_buffers(array_ptr(self)) end
function Array:n_children() return raw.ferry_array_n_children(array_ptr(self)) end
--- schema() -> a view of the array's Schema (valid while the array is).
function Array:schema()
  live_root(self, "ferry.Array.schema")
  return schema_view(schema_of(self), self._root or self)
end
function Array:format()
  local format = self._format
  if not format then
    live_root(self, "ferry.Array.format")
    format = raw.ferry_schema_format(schema_of(self))
    self._format = format
  end
  return format
end

-- The largest buffer a reader reads (the backends' rule: see
-- src/lferry_support.c, "What a reader refuses to read").
local MAX_BUFFER_BYTES = 2 ^ 48

local function check_index(where, what, i, n)
  if type(i) ~= "number" or i < 0 or i >= n or i % 1 ~= 0 then
    raise(where, errno.ERANGE, string.format("%s %s is out of range (0..%d)", what, tostring(i), n - 1))
  end
end

--- buffer(i) -> address (lightuserdata in Lua 5.4, cdata in LuaJIT; nil
--- for NULL), size in bytes (computed by the core from the layout).
function Array:buffer(i)
  local ptr = array_ptr(self)
  check_index("ferry.Array.buffer", "buffer", i, raw.ferry_array_n_buffers(ptr))
  local address = raw.ferry_array_buffer(ptr, i)
  local device_type, device_id = device_info(self._root or self)
  local code, size, message = raw.ferry_array_buffer_size(schema_of(self), ptr, device_type,
                                                         device_id, i)
  if code ~= 0 then raise("ferry.Array.buffer", code, message) end
  return address, size
end

--- buffer_address(i) -> address of buffer i (nil for NULL), without its size.
function Array:buffer_address(i)
  local ptr = array_ptr(self)
  check_index("ferry.Array.buffer_address", "buffer", i, raw.ferry_array_n_buffers(ptr))
  return raw.ferry_array_buffer(ptr, i)
end

--- buffer_bytes(i) -> a Lua string copy of buffer i as far as its computed
--- size reaches (nil for a NULL buffer); host-readable memory only.
function Array:buffer_bytes(i)
  local root = self._root or self
  if not root._host_ok then host_ready(self, "ferry.Array.buffer_bytes") end
  local address, size = self:buffer(i)
  if address == nil then return nil end
  if backend.to_integer(size) > MAX_BUFFER_BYTES then
    raise("ferry.Array.buffer_bytes", EINVAL, string.format(
      "buffer %d needs %.0f bytes by its declaration, more than a process can address (2^48)", i,
      backend.to_integer(size)))
  end
  return backend.read_bytes(address, 0, size)
end

local function child_view(self, arr, sptr)
  return setmetatable({ _arr = arr, _sptr = sptr, _root = self._root or self, _format = false,
                        _kind = false }, Array)
end

--- child(i) -> Array (a view of child i, 0-based).
function Array:child(i)
  local ptr = array_ptr(self)
  check_index("ferry.Array.child", "child", i, raw.ferry_array_n_children(ptr))
  local child, schema = raw.ferry_array_child(ptr, i), raw.ferry_schema_child(schema_of(self), i)
  if not child or not schema then
    raise("ferry.Array.child", EINVAL, "child " .. i .. " is NULL in the array or its schema")
  end
  return child_view(self, child, schema)
end

--- dictionary() -> Array of the dictionary, or nil.
function Array:dictionary()
  local ptr = array_ptr(self)
  local dictionary, schema = raw.ferry_array_dictionary(ptr),
                             raw.ferry_schema_dictionary(schema_of(self))
  if not dictionary and not schema then return nil end
  if not dictionary or not schema then
    raise("ferry.Array.dictionary", EINVAL, "the array and its schema disagree on a dictionary")
  end
  return child_view(self, dictionary, schema)
end

local function kind_of_array(self)
  local kind = kind_of(self:format(), raw.ferry_schema_dictionary(schema_of(self)) ~= nil)
  self._kind = kind
  return kind
end

local read_value, read_bytes_at, list_bounds = backend.value, backend.bytes, backend.list_bounds
local readers -- kind -> function(self, i) for the kinds that are not fixed-width

--- value(i): element i (logical index) decoded by the format, nil when null:
--- numbers, booleans, strings (utf8 and binary), tables for lists and
--- structs, the dictionary's value for dictionary-encoded arrays. Integers
--- are Lua integers on 5.4; on LuaJIT 64-bit values are int64 cdata. Every
--- index is checked against the length (ERANGE) and every byte read
--- against the size its buffer has by the array's declaration (EINVAL).
-- Element i once the host may read the array.
local function read_element(self, i)
  local kind = self._kind or kind_of_array(self)
  if IS_FIXED[kind] then
    local ok, v, message = read_value(self._arr, kind, i)
    if ok then return v end
    return read_failed(self, "ferry.Array.value", v, message)
  end
  return readers[kind](self, i)
end

function Array:value(i)
  local root = self._root or self
  if not root._host_ok then host_ready(self, "ferry.Array.value") end
  return read_element(self, i)
end

-- The same for a DeviceArray (the root: no `_root` to follow), the
-- consumer's hot path.
function DeviceArray:value(i)
  if not self._host_ok then host_ready(self, "ferry.Array.value") end
  return read_element(self, i)
end

--- is_valid(i): false when element i (logical) is null.
function Array:is_valid(i)
  local root = self._root or self
  if not root._host_ok then host_ready(self, "ferry.Array.is_valid") end
  local ok, valid, message = backend.is_valid(self._arr, i)
  if ok then return valid end
  return read_failed(self, "ferry.Array.is_valid", valid, message)
end

--- validity_bit(i): element i's bit in the validity bitmap whatever
--- null_count says (a producer may keep an all-set bitmap with
--- null_count 0); nil when there is no bitmap.
function Array:validity_bit(i)
  local root = self._root or self
  if not root._host_ok then host_ready(self, "ferry.Array.validity_bit") end
  local ok, bit, message = backend.validity_bit(self._arr, i)
  if ok then return bit end
  return read_failed(self, "ferry.Array.validity_bit", bit, message)
end

-- Cached child views (struct fields, list items, the dictionary).
local function cached_child(self, i)
  local children = self._children
  if not children then
    children = {}
    self._children = children
  end
  local child = children[i + 1]
  if not child then
    child = self:child(i)
    children[i + 1] = child
  end
  return child
end

local function list_range(self, i, large, where)
  local root = self._root or self
  if not root._host_ok then host_ready(self, where) end
  local ok, first, last = list_bounds(self._arr, large, i)
  if not ok then return read_failed(self, where, first, last) end
  return first, last
end

--- list_range(i) -> first, last: the child positions [first, last) of list
--- element i (checked against the child's length).
function Array:list_range(i)
  local kind = self._kind or kind_of_array(self)
  if kind ~= "l32" and kind ~= "l64" then
    raise("ferry.Array.list_range", EINVAL, "not a list array: " .. tostring(self:format()))
  end
  return list_range(self, i, kind == "l64", "ferry.Array.list_range")
end

local function read_list(self, i, large)
  local ok, valid, message = backend.is_valid(self._arr, i)
  if not ok then return read_failed(self, "ferry.Array.value", valid, message) end
  if not valid then return nil end
  local first, last = list_range(self, i, large, "ferry.Array.value")
  local child, out = cached_child(self, 0), {}
  for j = first, last - 1 do out[#out + 1] = child:value(j) end
  return out
end

local function read_string(self, i, large)
  local ok, v, message = read_bytes_at(self._arr, large, i)
  if ok then return v end
  return read_failed(self, "ferry.Array.value", v, message)
end

--- index(i): the raw dictionary index of element i (dictionary arrays), nil when null.
function Array:index(i)
  local root = self._root or self
  if not root._host_ok then host_ready(self, "ferry.Array.index") end
  local kind = FIXED[self:format()]
  if not kind or kind == "bits" or kind:sub(1, 1) == "f" then
    raise("ferry.Array.index", EINVAL, "not integer indices: " .. tostring(self:format()))
  end
  local ok, v, message = read_value(self._arr, kind, i)
  if ok then return v end
  return read_failed(self, "ferry.Array.index", v, message)
end

-- ---- layouts beyond the fixed-width, variable-size, list, struct and
-- dictionary ones: every other layout the validator accepts. Each reads
-- only inside what the array declares: the index and validity checks of the
-- backend (is_valid: ERANGE, the 2^51 rule), buffers at the size the core
-- computes from the declaration (refused past 2^48 bytes), and every
-- position a buffer holds (offsets, type ids, run ends, views) checked
-- against what it points into before it is followed.

local where_value = "ferry.Array.value"

-- Buffer b: its address and size by the declaration (ferry_array_buffer_size).
local function host_buffer(self, b)
  local address, size = self:buffer(b)
  size = backend.to_integer(size)
  if size > MAX_BUFFER_BYTES then
    return read_failed(self, where_value, EINVAL, string.format(
      "buffer %d needs %.0f bytes by its declaration, more than a process can address (2^48)",
      b, size))
  end
  if address == nil and size > 0 then
    return read_failed(self, where_value, EINVAL, string.format(
      "buffer %d is NULL in an array of length %s", b, tostring(self:length())))
  end
  return address, size
end

-- The physical slot of element i after the backend's checks, nil when null.
local function valid_slot(self, i)
  local ok, valid, message = backend.is_valid(self._arr, i)
  if not ok then return read_failed(self, where_value, valid, message) end
  if not valid then return nil end
  return i + backend.to_integer(self:offset())
end

-- The slot of element i of a layout without a validity bitmap (unions,
-- run-end encoded): the index checks alone.
local function plain_slot(self, i)
  local n = backend.to_integer(self:length())
  local offset = backend.to_integer(self:offset())
  if n + offset > 2 ^ 51 then
    return read_failed(self, where_value, EINVAL, string.format(
      "length %.0f or offset %.0f is too large: a reader takes at most 2^51 elements", n, offset))
  end
  check_index(where_value, "index", i, n)
  return i + offset
end

-- Parameters parsed from a format once ("w:16" -> 16, "d:9,2,64" -> ...).
local format_params = {}

local function half_to_number(h)
  local sign = h >= 0x8000 and -1 or 1
  local exponent, fraction = math.floor(h / 1024) % 32, h % 1024
  if exponent == 0 then return sign * fraction * 2 ^ -24 end
  if exponent == 31 then return fraction == 0 and sign * math.huge or 0 / 0 end
  return sign * (1 + fraction / 1024) * 2 ^ (exponent - 15)
end

-- A little-endian two's complement integer of any width (the bytes of a
-- decimal) as decimal text with `scale` digits after the point.
local function decimal_text(bytes, scale)
  local n, limbs = #bytes, {}
  for k = 1, n do limbs[k] = bytes:byte(k) end
  local negative = limbs[n] >= 128
  if negative then
    local carry = 1
    for k = 1, n do
      local v = 255 - limbs[k] + carry
      limbs[k], carry = v % 256, math.floor(v / 256)
    end
  end
  local digits = {}
  repeat
    local remainder, more = 0, false
    for k = n, 1, -1 do
      local current = remainder * 256 + limbs[k]
      local q = math.floor(current / 10)
      limbs[k], remainder = q, current - q * 10
      if q ~= 0 then more = true end
    end
    digits[#digits + 1] = string.char(48 + remainder)
  until not more
  local text = string.reverse(table.concat(digits))
  if scale > 0 then
    if #text <= scale then text = string.rep("0", scale - #text + 1) .. text end
    text = text:sub(1, #text - scale) .. "." .. text:sub(#text - scale + 1)
  elseif scale < 0 then
    text = text .. string.rep("0", -scale)
  end
  return negative and "-" .. text or text
end

-- Child positions [first, first + count) of element i must lie in the child.
local function check_child_range(self, child, i, first, count)
  local n = backend.to_integer(child:length())
  if first < 0 or count < 0 or first + count > n then
    return read_failed(self, where_value, EINVAL, string.format(
      "element %d: child positions %.0f..%.0f are outside the child (length %.0f)", i, first,
      first + count, n))
  end
end

local function child_values(child, first, count)
  local out = {}
  for j = first, first + count - 1 do out[#out + 1] = child:value(j) end
  return out
end

local layout_readers = {
  null = function(self, i)
    local ok, _, message = backend.is_valid(self._arr, i)
    if not ok then return read_failed(self, where_value, _, message) end
    return nil
  end,
  f16 = function(self, i)
    local ok, v, message = read_value(self._arr, "u16", i)
    if not ok then return read_failed(self, where_value, v, message) end
    if v == nil then return nil end
    return half_to_number(v)
  end,
  fsb = function(self, i) -- w:N: N bytes per element
    local slot = valid_slot(self, i)
    if slot == nil then return nil end
    local format = self:format()
    local width = format_params[format]
    if not width then
      width = tonumber(format:match("^w:(%d+)$"))
      format_params[format] = width
    end
    local p = host_buffer(self, 1) -- (offset + length) * N bytes: slot is inside
    if width == 0 then return "" end
    return backend.read_bytes(p, slot * width, width)
  end,
  decimal = function(self, i) -- d:P,S[,B]: decimal text, e.g. "-12.34"
    local slot = valid_slot(self, i)
    if slot == nil then return nil end
    local format = self:format()
    local params = format_params[format]
    if not params then
      local _, scale, bits = format:match("^d:(%d+),(%-?%d+),?(%d*)$")
      params = { scale = tonumber(scale), bytes = (tonumber(bits) or 128) / 8 }
      format_params[format] = params
    end
    local p = host_buffer(self, 1)
    return decimal_text(backend.read_bytes(p, slot * params.bytes, params.bytes), params.scale)
  end,
  interval_dt = function(self, i) -- { days, milliseconds }
    local slot = valid_slot(self, i)
    if slot == nil then return nil end
    local p = host_buffer(self, 1)
    return { days = backend.read(p, "i32", 2 * slot), milliseconds = backend.read(p, "i32", 2 * slot + 1) }
  end,
  interval_mdn = function(self, i) -- { months, days, nanoseconds }
    local slot = valid_slot(self, i)
    if slot == nil then return nil end
    local p = host_buffer(self, 1)
    return { months = backend.read(p, "i32", 4 * slot), days = backend.read(p, "i32", 4 * slot + 1),
             nanoseconds = backend.read(p, "i64", 2 * slot + 1) }
  end,
  fsl = function(self, i) -- +w:N: a list of N child values
    local slot = valid_slot(self, i)
    if slot == nil then return nil end
    local format = self:format()
    local n = format_params[format]
    if not n then
      n = tonumber(format:match("^%+w:(%d+)$"))
      format_params[format] = n
    end
    local child = cached_child(self, 0)
    check_child_range(self, child, i, slot * n, n)
    return child_values(child, slot * n, n)
  end,
  ree = function(self, i) -- +r: the value of the run holding logical element offset + i
    local position = plain_slot(self, i)
    local run_ends, values = cached_child(self, 0), cached_child(self, 1)
    local lo, hi = 0, backend.to_integer(run_ends:length()) - 1
    if hi < 0 then return read_failed(self, where_value, EINVAL, "run-end encoded: no runs") end
    while lo < hi do -- the first run whose end is past `position`
      local mid = math.floor((lo + hi) / 2)
      if backend.to_integer(run_ends:value(mid)) > position then hi = mid else lo = mid + 1 end
    end
    local run_end = backend.to_integer(run_ends:value(lo))
    local previous = lo > 0 and backend.to_integer(run_ends:value(lo - 1)) or 0
    if run_end <= position or previous > position then
      return read_failed(self, where_value, EINVAL, string.format(
        "run-end encoded: element %d (position %.0f) is in no run (run ends not increasing, or " ..
        "shorter than the array)", i, position))
    end
    check_child_range(self, values, i, lo, 1)
    return values:value(lo)
  end,
  view = function(self, i) -- utf8/binary views: 16-byte views, inline or in a variadic buffer
    local slot = valid_slot(self, i)
    if slot == nil then return nil end
    local views = host_buffer(self, 1)
    local length = backend.read(views, "i32", 4 * slot)
    if length < 0 then
      return read_failed(self, where_value, EINVAL, string.format("view %d has a negative length %d", i, length))
    end
    if length <= 12 then return backend.read_bytes(views, 16 * slot + 4, length) end
    local index, offset = backend.read(views, "i32", 4 * slot + 2), backend.read(views, "i32", 4 * slot + 3)
    local n_data = backend.to_integer(self:n_buffers()) - 3
    if index < 0 or index >= n_data or offset < 0 then
      return read_failed(self, where_value, EINVAL, string.format(
        "view %d points at buffer %d offset %d (there are %d data buffers)", i, index, offset, n_data))
    end
    local data, size = host_buffer(self, 2 + index)
    if offset + length > size then
      return read_failed(self, where_value, EINVAL, string.format(
        "view %d: bytes %d..%d are past the end of data buffer %d (%.0f bytes)", i, offset,
        offset + length, index, size))
    end
    return backend.read_bytes(data, offset, length)
  end,
}

-- list views: offsets (buffer 1) and sizes (buffer 2) of 32 or 64 bits
local function read_list_view(self, i, kind)
  local slot = valid_slot(self, i)
  if slot == nil then return nil end
  local offsets, sizes = host_buffer(self, 1), host_buffer(self, 2)
  local first = backend.to_integer(backend.read(offsets, kind, slot))
  local count = backend.to_integer(backend.read(sizes, kind, slot))
  local child = cached_child(self, 0)
  check_child_range(self, child, i, first, count)
  return child_values(child, first, count)
end
layout_readers.lv32 = function(self, i) return read_list_view(self, i, "i32") end
layout_readers.lv64 = function(self, i) return read_list_view(self, i, "i64") end

-- unions: type ids (buffer 0, int8) name the child by the format's codes
local function union_child(self, i)
  local slot = plain_slot(self, i)
  local format = self:format()
  local codes = format_params[format]
  if not codes then
    codes = {}
    local c = 0
    for code in format:sub(5):gmatch("[^,]+") do
      codes[tonumber(code)] = c
      c = c + 1
    end
    format_params[format] = codes
  end
  local type_ids = host_buffer(self, 0)
  local type_id = backend.read(type_ids, "i8", slot)
  local c = codes[type_id]
  if c == nil then
    return read_failed(self, where_value, EINVAL, string.format(
      "element %d has type id %d, which is not in the union's type codes (%s)", i, type_id, format))
  end
  return cached_child(self, c), slot
end
layout_readers.sparse = function(self, i)
  local child, slot = union_child(self, i)
  check_child_range(self, child, i, slot, 1)
  return child:value(slot)
end
layout_readers.dense = function(self, i)
  local child, slot = union_child(self, i)
  local offsets = host_buffer(self, 1)
  local offset = backend.read(offsets, "i32", slot)
  check_child_range(self, child, i, offset, 1)
  return child:value(offset)
end

readers = {
  b32 = function(self, i) return read_string(self, i, false) end,
  b64 = function(self, i) return read_string(self, i, true) end,
  l32 = function(self, i) return read_list(self, i, false) end,
  l64 = function(self, i) return read_list(self, i, true) end,
  struct = function(self, i)
    local length = self:length()
    check_index("ferry.Array.value", "index", i, length)
    if not self:is_valid(i) then return nil end
    local out, slot = {}, i + self:offset()
    for c = 0, self:n_children() - 1 do
      local child = cached_child(self, c)
      out[child:schema():name() or c] = child:value(slot)
    end
    return out
  end,
  dict = function(self, i)
    local index = self:index(i)
    if index == nil then return nil end
    local dictionary = self._dict or self:dictionary()
    self._dict = dictionary
    index = backend.to_integer(index)
    local n = dictionary:length()
    if index < 0 or index >= n then
      return read_failed(self, "ferry.Array.value", EINVAL, string.format(
        "index %d of element %d is outside the dictionary (length %d)", index, i, n))
    end
    return dictionary:value(index)
  end,
  none = function(self)
    raise("ferry.Array.value", ENOTSUP, "no reader for format " .. tostring(self:format()))
  end,
}
for kind, reader in pairs(layout_readers) do readers[kind] = reader end

function Array:int32(i) return self:value(i) end
function Array:int64(i) return self:value(i) end
function Array:double(i) return self:value(i) end
function Array:utf8(i) return self:value(i) end

-- The most elements to_table() materialises (docs/bindings.md, "Reading
-- values"): a longer array is refused by name instead of filling memory.
local TO_TABLE_MAX = 2 ^ 31

--- to_table(): every element as a Lua list (nil holes for nulls) and n;
--- E2BIG for more than 2^31 elements (read those with value(i)).
function Array:to_table()
  local n, out = self:length(), {}
  if backend.to_integer(n) > TO_TABLE_MAX then
    raise("ferry.Array.to_table", errno.E2BIG, string.format(
      "%.0f elements are more than to_table() materialises (2^31); read them with value(i)",
      backend.to_integer(n)))
  end
  for i = 0, n - 1 do out[i + 1] = self:value(i) end
  return out, n
end

-- ---- device arrays: construction and release ------------------------------------------

-- A DeviceArray holds a pair handle (`_owner`): its ArrowDeviceArray (`_ptr`;
-- `_arr` is the ArrowArray in it) and its own ArrowSchema (`_sptr`), unless
-- the schema is shared (`_shared`, a counted Schema: a stream's, or one it
-- shares with its copies), in which case its own stays released. Fields
-- that are unset are `false` where they exist from the start: tables are
-- sized once, lookups never walk the metatables, and resetting a field
-- stores into an existing slot (storing into a missing key resizes the
-- table). On Lua 5.4 the hot fields make exactly 8 (the others are added
-- on the paths that need them); on LuaJIT every field exists (one shape for
-- every trace).
local every_field = backend.name == "luajit" -- never reassigned: LuaJIT folds the test
local function new_device_array(shared, kind)
  local owner, ptr, sptr, arr
  local n = pair_n
  if n > 0 then
    owner, ptr, sptr, arr = pair_owners[n], pair_ptrs[n], pair_sptrs[n], pair_arrs[n]
    pair_owners[n] = nil
    pair_n = n - 1
  else
    owner, ptr, sptr = backend.handle("pair")
    arr = raw_device_array_array(ptr)
  end
  if every_field then
    return setmetatable({ _owner = owner, _ptr = ptr, _arr = arr, _sptr = sptr, _kind = kind or false,
                          _host_ok = false, _released = false, _shared = shared or false,
                          _format = false, _root = false, _device_type = false, _device_id = false,
                          _children = false, _dict = false }, DeviceArray)
  end
  return setmetatable({ _owner = owner, _ptr = ptr, _arr = arr, _sptr = sptr, _kind = kind or false,
                        _host_ok = false, _released = false, _shared = shared or false },
                      DeviceArray)
end

local raw_device_type, raw_device_id = raw.ferry_device_array_device_type,
                                       raw.ferry_device_array_device_id
device_info = function(root)
  local device_type = root._device_type
  if not device_type then
    device_type = raw_device_type(root._ptr)
    root._device_type = device_type
    root._device_id = raw_device_id(root._ptr)
  end
  return device_type, root._device_id
end

--- release(): releases the array (and its hold on a shared schema) exactly
--- once; also when collected, and by `local a <close>` on 5.4.
function DeviceArray:release()
  if self._released then return end
  self._released = true
  self._host_ok = false
  if LEAK_REPORT then leak_untrack(self) end
  local owner = self._owner
  if owner then
    self._owner = nil
    local ptr, sptr = self._ptr, self._sptr
    release_pair(ptr, sptr) -- runs the producer's release (may call a Lua producer)
    local n = pair_n
    if n < POOL_SIZE then
      n = n + 1
      pair_owners[n], pair_ptrs[n], pair_sptrs[n], pair_arrs[n] = owner, ptr, sptr, self._arr
      pair_n = n
    else
      backend.handle_free(owner)
    end
  end
  local shared = self._shared
  if shared then
    self._shared = false
    unref_schema(shared)
  end
end
--- close(): the same as release() (docs/bindings.md spells it close()).
DeviceArray.close = DeviceArray.release
DeviceArray.__close = DeviceArray.release
-- No __gc on the table: its handle (userdata on 5.4, cdata on LuaJIT) frees
-- and thereby releases the structs when collected; a table finaliser would
-- only add cost to every array.

-- Hands this array's schema over to `out` (a fresh array).
local function hand_over_schema(self, out)
  out._kind = self._kind
  local shared = self._shared
  if shared then
    out._shared, self._shared = shared, false
  else
    raw.ferry_schema_move(self._sptr, out._sptr)
  end
end

-- The array's schema as a shared Schema (made shared on first need: moved
-- out of the pair), for a second holder (a copy).
local function share_schema(self)
  local shared = self._shared
  if not shared then
    local owner, ptr = schema_pool.take()
    raw.ferry_schema_move(self._sptr, ptr)
    shared = shared_schema(owner, ptr, 1)
    self._shared = shared
  end
  shared._users = shared._users + 1
  return shared
end

-- opts.validate: nil, true or "default" (the default), "full", or the
-- explicit opt-out "none" (or false).
local function validation_level(validate)
  if validate == nil or validate == true or validate == "default" then return VALIDATE_DEFAULT end
  if validate == "full" then return VALIDATE_FULL end
  if validate == "none" or validate == false then return -1 end
  raise("ferry.import", EINVAL, "validate must be \"default\", \"full\" or \"none\" " ..
        "(or true, false), got " .. tostring(validate))
end

local import = backend.import

--- ferry.import(device_array_ptr, schema_ptr, opts) -> DeviceArray: takes
--- ownership of C structs a producer filled (moves them; the sources end up
--- released) and validates them (opts.validate: "default" (the default),
--- "full", or "none"). The array comes first, then the schema, as in
--- pyarrow and arrow-rs (docs/bindings.md). A pair that fails validation is
--- released (ownership was taken) and the validator's message raised; a
--- NULL or released struct raises EINVAL and nothing is taken.
function ferry.import(array_in, schema_in, opts)
  local level = VALIDATE_DEFAULT
  if opts ~= nil then level = validation_level(opts.validate) end
  local arr = new_device_array(false, false)
  local code, message, format, device_type, device_id, pending, has_dictionary =
    import(schema_in, array_in, arr._sptr, arr._ptr, level)
  if code ~= 0 then
    arr:release() -- both structs are released: back to the pool
    raise("ferry.import", code, message)
  end
  arr._kind = not has_dictionary and KIND_OF_FORMAT[format] or kind_of(format, has_dictionary)
  if device_type == CPU and not pending then
    arr._host_ok = true -- nothing to wait for, nothing to copy
  else
    arr._device_type, arr._device_id = device_type, device_id
  end
  if LEAK_REPORT then
    leak_track(arr, string.format("DeviceArray from ferry.import (format '%s', length %s, %s) never closed",
                                  tostring(format), tostring(arr:length()),
                                  raw.ferry_device_type_name(device_type)))
  end
  return arr
end

-- ---- the reused array of a batch loop or an importer ------------------------------------

-- One DeviceArray refilled for array after array (stream:batches{ reuse =
-- true }, ferry.importer()): release() releases its structs and keeps them
-- for the next array; the object and its pair go when the loop ends or the
-- importer is closed (dispose_reused).
local ReusedArray = {}
ReusedArray.__index = ReusedArray

function ReusedArray:release()
  if self._released then return end
  self._released = true
  self._host_ok = false
  release_pair(self._ptr, self._sptr)
end
ReusedArray.__close = ReusedArray.release

local function new_reused_array(shared, kind, loop)
  local arr = new_device_array(shared, kind)
  arr._loop, arr._device_type, arr._device_id = loop, false, false
  return setmetatable(arr, ReusedArray)
end

-- Gives the reused object's pair and schema hold up, once.
local function dispose_reused(self)
  if getmetatable(self) ~= ReusedArray then return end
  setmetatable(self, DeviceArray)
  self._released = false -- so that release() below runs in full
  self:release()
end

local Importer = {}
Importer.__index = Importer
ferry.Importer = Importer

--- ferry.importer(opts) -> Importer: the lean consumer path. Each
--- importer:import(array_ptr, schema_ptr) does what ferry.import does
--- but into one DeviceArray that the importer keeps: nothing is allocated
--- per array. The object it returns stays valid until the next import (which
--- releases the previous array if the caller did not) or importer:close();
--- do not keep it. opts.validate as for ferry.import.
function ferry.importer(opts)
  local level = VALIDATE_DEFAULT
  if opts ~= nil then level = validation_level(opts.validate) end
  local arr = new_reused_array(false, false, false)
  arr._released = true
  local importer = setmetatable({ _array = arr, _level = level }, Importer)
  if LEAK_REPORT then leak_track(importer, "Importer from ferry.importer never closed") end
  return importer
end

--- import(device_array_ptr, schema_ptr) -> the importer's DeviceArray, filled.
function Importer:import(array_in, schema_in)
  local arr = self._array
  if not arr then raise("ferry.Importer.import", EINVAL, "the importer is closed") end
  if not arr._released then arr:release() end
  local code, message, format, device_type, device_id, pending, has_dictionary =
    import(schema_in, array_in, arr._sptr, arr._ptr, self._level)
  if code ~= 0 then raise("ferry.Importer.import", code, message) end
  arr._kind = not has_dictionary and KIND_OF_FORMAT[format] or kind_of(format, has_dictionary)
  arr._device_type, arr._device_id = device_type, device_id
  arr._host_ok = device_type == CPU and not pending
  arr._released = false
  return arr
end

--- close(): releases the current array (if any) and frees the importer's structs.
function Importer:close()
  if LEAK_REPORT then leak_untrack(self) end
  local arr = self._array
  if arr then
    self._array = nil
    arr:release()
    dispose_reused(arr)
  end
end
Importer.__close = Importer.close
-- Collected without close() (still reported): the reused array's pair
-- handle is collected with it and its own finaliser releases and frees the
-- structs; releasing here would hand that handle back to the pool while it
-- is being freed.
Importer.__gc = function(self)
  self._leak = nil
  self._array = nil
end

function DeviceArray:device_type() return raw.ferry_device_type_name((device_info(live_root(self)))) end
function DeviceArray:device_type_id() return (device_info(live_root(self))) end
function DeviceArray:device_id() return select(2, device_info(live_root(self))) end
function DeviceArray:pointer() live_root(self); return self._ptr end
function DeviceArray:sync_event() return raw.ferry_device_array_sync_event(self:pointer()) end
--- device() -> the Device the array lives on.
function DeviceArray:device() return ferry.device(device_info(live_root(self))) end

--- is_host_readable() -> true when the host can read the array where it lies
--- (the CPU, the sim device; not CUDA/ROCm device memory: use to_host()).
function DeviceArray:is_host_readable()
  local device_type, device_id = device_info(live_root(self))
  return device_type == CPU or ferry.device(device_type, device_id):is_host_accessible()
end

--- wait(consumer_stream): the consumer-stream handoff of this array: makes
--- `consumer_stream` (a native stream of the array's device: the CUstream /
--- hipStream_t value itself, not a pointer to it) wait on the producer's sync
--- event without blocking the host; with consumer_stream nil the host waits.
function DeviceArray:wait(consumer_stream)
  live_root(self, "ferry.DeviceArray.wait")
  check("ferry.DeviceArray.wait", raw.ferry_device_array_wait(self._ptr, consumer_stream))
end

--- validate(full) -> ok, message, findings (every finding { rule, where, what }).
function DeviceArray:validate(full)
  live_root(self, "ferry.DeviceArray.validate")
  local code, message, findings = backend.validate(schema_of(self), self._ptr,
                                                   full and VALIDATE_FULL or VALIDATE_DEFAULT)
  return code == 0, message, findings
end

--- export(array_out, schema_out): moves both into consumer-allocated
--- structs, the array first as in pyarrow's _export_to_c (schema_out may be
--- nil to keep the schema); this object is then released.
function DeviceArray:export(array_out, schema_out)
  live_root(self, "ferry.DeviceArray.export")
  if self._loop then
    raise("ferry.DeviceArray.export", EINVAL, "a batch of a reusing loop cannot be moved out")
  end
  if schema_out ~= nil then
    if self._shared then
      raise("ferry.DeviceArray.export", EINVAL, "the schema is shared (a stream's or a copy's): " ..
            "export the array alone (schema_out nil)")
    end
    local code = raw.ferry_schema_move(self._sptr, schema_out)
    if code ~= 0 then raise("ferry.DeviceArray.export", code, "schema destination not released") end
  end
  local code = raw.ferry_device_array_move(self._ptr, array_out)
  if code ~= 0 then raise("ferry.DeviceArray.export", code, "array destination not released") end
  self:release()
end

function DeviceArray:__tostring()
  if self._released then return "ferry.DeviceArray(released)" end
  return string.format("ferry.DeviceArray(%s, length %d, %s)", tostring(self:format()),
                       self:length(), self:device_type())
end

-- ---- moving and copying between devices ------------------------------------------------

local function device_arguments(kind, id)
  local device_type = device_type_code(kind or "cpu")
  if id == nil then id = default_id(device_type) end
  return device_type, id
end

--- move_to_device(kind, id) -> DeviceArray on device (kind, id) ("cpu",
--- "sim", "cuda", ... or a device type code; id defaults to -1 for the CPU,
--- else 0). Zero-copy when the destination can reach the memory (same
--- device; pinned or managed memory to the CPU), else a deep copy. This
--- array is consumed on success (released, its schema passed on); on
--- failure it is untouched and the error is raised.
function DeviceArray:move_to_device(kind, id)
  local where = "ferry.DeviceArray.move_to_device"
  live_root(self, where)
  if self._loop then raise(where, EINVAL, "a batch of a reusing loop cannot be moved") end
  local device_type, device_id = device_arguments(kind, id)
  local out = new_device_array(false, false)
  local code, message = raw.ferry_device_array_move_to_device(schema_of(self), self._ptr, device_type,
                                                              device_id, out._ptr)
  if code ~= 0 then
    out:release()
    raise(where, code, message)
  end
  hand_over_schema(self, out)
  self:release()
  return out
end

--- to_host() -> DeviceArray on the CPU: the way to read device memory.
--- Moves without copying where the host can reach the memory (CPU arrays,
--- pinned and managed memory, after waiting on the event), else copies
--- (waiting on the producer's event first). Consumes this array, as
--- move_to_device does.
function DeviceArray:to_host()
  return self:move_to_device(CPU, -1)
end

--- copy_to_device(kind, id) -> a deep copy on device (kind, id) (after
--- waiting on the producer's event; no pending work); this array stays
--- the caller's and the two share the schema.
function DeviceArray:copy_to_device(kind, id)
  local where = "ferry.DeviceArray.copy_to_device"
  live_root(self, where)
  local device_type, device_id = device_arguments(kind, id)
  local out = new_device_array(false, false)
  local code, message = raw.ferry_device_array_copy(schema_of(self), self._ptr, device_type, device_id,
                                                    out._ptr)
  if code ~= 0 then
    out:release()
    raise(where, code, message)
  end
  out._shared, out._kind = share_schema(self), self._kind
  return out
end

-- ---- DLPack ----------------------------------------------------------------------

local DLPackTensor = {}
DLPackTensor.__index = DLPackTensor
ferry.DLPackTensor = DLPackTensor

local DLPACK_READ_ONLY = constants.DLPACK_FLAG_BITMASK_READ_ONLY
local DLPACK_IS_COPIED = constants.DLPACK_FLAG_BITMASK_IS_COPIED
local dlpack_codes = {
  [constants.kDLInt] = "int", [constants.kDLUInt] = "uint", [constants.kDLFloat] = "float",
  [constants.kDLBfloat] = "bfloat", [constants.kDLComplex] = "complex", [constants.kDLBool] = "bool",
}

local function wrap_tensor(ptr)
  -- LuaJIT does not run __gc on tables: the backend anchors a finaliser on
  -- the pointer itself there (nil on 5.4, where DLPackTensor.__gc runs).
  return setmetatable({ _ptr = ptr, _anchor = backend.gc_anchor(ptr, backend.dlpack_delete),
                        _released = false }, DLPackTensor)
end

local function tensor_ptr(self, where)
  if self._released then raise(where, EINVAL, "the DLPack tensor was deleted or handed over") end
  return self._ptr
end

-- Forgets the tensor without deleting it (ownership moved elsewhere).
local function disown_tensor(self)
  self._released = true
  if self._anchor ~= nil then backend.gc_anchor_drop(self._anchor) end
  self._anchor = nil
end

--- to_dlpack(consumer_stream) -> DLPackTensor over the same memory (a
--- fixed-width array without nulls; zero-copy, read-only). The consumer's
--- device stream is made to wait on the array's sync event first, or the
--- host waits when consumer_stream is nil. This array is moved into the
--- tensor on success; on failure it is untouched and the error is raised.
function DeviceArray:to_dlpack(consumer_stream)
  local where = "ferry.DeviceArray.to_dlpack"
  live_root(self, where)
  if self._loop then raise(where, EINVAL, "a batch of a reusing loop cannot be moved") end
  local code, tensor, message = raw.ferry_device_array_to_dlpack(schema_of(self), self._ptr,
                                                                 consumer_stream)
  if code ~= 0 then raise(where, code, message) end
  self:release() -- the struct was moved into the tensor: nothing left to release
  return wrap_tensor(tensor)
end

--- ferry.from_dlpack(tensor) -> DeviceArray (non-nullable, on the tensor's
--- device, zero-copy). `tensor` is a DLPackTensor or a raw
--- DLManagedTensorVersioned pointer; on success ferry owns it and calls its
--- deleter exactly once, when the array is released. On failure the caller
--- still owns it and the error is raised.
function ferry.from_dlpack(tensor)
  local where = "ferry.from_dlpack"
  local object
  if getmetatable(tensor) == DLPackTensor then
    object = tensor
    tensor = tensor_ptr(object, where)
  end
  if tensor == nil then raise(where, EINVAL, "tensor must not be nil") end
  local arr = new_device_array(false, false)
  local code, message = raw.ferry_device_array_from_dlpack(tensor, arr._sptr, arr._ptr)
  if code ~= 0 then
    arr:release()
    raise(where, code, message)
  end
  if object then disown_tensor(object) end
  return arr
end

--- info() -> { device_type, device_id, ndim, shape = {...}, strides = {...}
--- or nil, code, bits, lanes, byte_offset, flags, data, major, minor }
function DLPackTensor:info()
  local ptr = tensor_ptr(self, "ferry.DLPackTensor.info")
  local info = self._info
  if not info then
    info = backend.dlpack_info(ptr)
    self._info = info
  end
  return info
end
function DLPackTensor:pointer() return tensor_ptr(self, "ferry.DLPackTensor.pointer") end
--- device() -> device type name ("cpu", "ext_dev", ...), DLPack device id
function DLPackTensor:device()
  local info = self:info()
  return raw.ferry_device_type_name(info.device_type), info.device_id
end
--- dtype() -> "int32", "uint8", "float64", ... (code name .. bits), lanes
function DLPackTensor:dtype()
  local info = self:info()
  return (dlpack_codes[info.code] or ("code" .. info.code)) .. info.bits, info.lanes
end
function DLPackTensor:shape()
  local shape = {}
  for i, n in ipairs(self:info().shape) do shape[i] = n end
  return shape
end
function DLPackTensor:length() return self:info().shape[1] end
--- data() -> address of the first element (data + byte_offset)
function DLPackTensor:data()
  local info = self:info()
  if info.data == nil then return nil end
  return backend.pointer_add(info.data, info.byte_offset)
end
function DLPackTensor:is_read_only() return math.floor(self:info().flags / DLPACK_READ_ONLY) % 2 == 1 end
function DLPackTensor:is_copied() return math.floor(self:info().flags / DLPACK_IS_COPIED) % 2 == 1 end

--- release(): calls the tensor's deleter, exactly once (also __gc, __close).
function DLPackTensor:release()
  if self._released then return end
  local ptr = self._ptr
  disown_tensor(self)
  backend.dlpack_delete(ptr)
end
DLPackTensor.__gc = DLPackTensor.release
DLPackTensor.__close = DLPackTensor.release

--- export() -> the DLManagedTensorVersioned pointer; the caller (another
--- library) now owns the tensor and calls its deleter.
function DLPackTensor:export()
  local ptr = tensor_ptr(self, "ferry.DLPackTensor.export")
  disown_tensor(self)
  return ptr
end

function DLPackTensor:__tostring()
  if self._released then return "ferry.DLPackTensor(released)" end
  local device, id = self:device()
  return string.format("ferry.DLPackTensor(%s[%d], %s:%d)", (self:dtype()), self:length() or 0,
                       device, id)
end

-- ---- streams ------------------------------------------------------------------------

-- A DeviceStream owns an ArrowDeviceArrayStream. Its schema is fetched once
-- and shared with every batch (`_users` counts the stream and its live
-- batches), and prepared once, so each batch's validation skips the
-- schema's walk.
local DeviceStream = {}
DeviceStream.__index = DeviceStream
ferry.DeviceStream = DeviceStream

local function stream_ptr(self, where)
  if self._released then raise(where or "ferry.DeviceStream", EINVAL, "stream already released") end
  return self._ptr
end

local function new_stream(owner, ptr, opts, made_by)
  local level = VALIDATE_DEFAULT
  if opts ~= nil then level = validation_level(opts.validate) end
  local stream = setmetatable({ _owner = owner, _ptr = ptr, _schema = false, _prepared = false,
                                _level = level, _released = false, _error = false,
                                _ended = false }, DeviceStream)
  if LEAK_REPORT then
    leak_track(stream, string.format("DeviceStream from %s (on %s) never closed", made_by,
               raw.ferry_device_type_name(raw.ferry_array_stream_device_type(ptr))))
  end
  return stream
end

-- After an error the stream is finished (docs/bindings.md, "After an error,
-- the same error"): the producer's get_next and get_schema are never called
-- again, and every later read raises this same ferry.Error (code, message,
-- and where it first failed). A batch refused by validation counts: the
-- producer's state after it is unknown. The end of the stream is kept too.
local function stream_failed(self, where, code, message)
  local err = ferry.error(where, code, message)
  self._error = err
  error(err, 3)
end

local function check_stream_error(self)
  local err = self._error
  if err then error(err, 3) end
end

--- ferry.import_stream(ptr, opts) -> DeviceStream: takes ownership of a
--- C-allocated stream (moved). Every batch is validated against the
--- stream's schema (opts.validate: "default" (the default), "full", false).
function ferry.import_stream(stream_in, opts)
  local owner, ptr = backend.handle("stream")
  local code = raw.ferry_array_stream_move(stream_in, ptr)
  if code ~= 0 then
    backend.handle_free(owner)
    raise("ferry.import_stream", code, "the stream is released or NULL")
  end
  return new_stream(owner, ptr, opts, "ferry.import_stream")
end

function DeviceStream:pointer() return stream_ptr(self) end
function DeviceStream:device_type()
  return raw.ferry_device_type_name(raw.ferry_array_stream_device_type(stream_ptr(self)))
end

-- get_schema into a new shared Schema with one holder, or raise.
local function fetch_schema(self, where)
  local ptr = stream_ptr(self, where)
  check_stream_error(self)
  local schema = owned_schema()
  local code, message = raw.ferry_array_stream_get_schema(ptr, schema._ptr)
  if code ~= 0 then
    schema:release()
    stream_failed(self, where, code, message)
  end
  return schema
end

--- get_schema() -> a new Schema owned by the caller (release() it, or let
--- it be collected).
function DeviceStream:get_schema() return fetch_schema(self, "ferry.get_schema") end

-- The shared schema of the batches (fetched and prepared once).
local function batch_schema(self)
  local schema = self._schema
  if schema then return schema end
  schema = fetch_schema(self, "ferry.get_schema")
  schema._mine = false -- held by the stream: released with it and its batches
  setmetatable(schema, Schema)
  if self._level >= 0 then
    local prepared, code, message = backend.prepare(schema._ptr)
    if not prepared then
      unref_schema(schema)
      stream_failed(self, "ferry.get_schema", code, message)
    end
    self._prepared = prepared
  end
  schema._kind = kind_of(schema:format(), raw.ferry_schema_dictionary(schema._ptr) ~= nil)
  self._schema = schema
  return schema
end

--- schema() -> a view of the schema every batch is described by (fetched
--- once; valid while the stream or one of its batches is).
function DeviceStream:schema() return schema_view(batch_schema(self)._ptr, batch_schema(self)) end

local get_next_raw, get_next_on_raw = backend.get_next, backend.get_next_on
local validate_batch = backend.validate_batch

-- Pulls one batch into a new DeviceArray: plain get_next, or with `on` the
-- consumer-stream handoff of ferry_array_stream_get_next_on; validates it.
local function pull(self, on, consumer_stream)
  local ptr = stream_ptr(self, "ferry.get_next")
  if self._error then error(self._error, 2) end
  if self._ended then return nil end
  local schema = self._schema or batch_schema(self)
  local arr = new_device_array(false, schema._kind)
  local code, message
  if on then
    code, message = get_next_on_raw(ptr, arr._ptr, consumer_stream)
  else
    code, message = get_next_raw(ptr, arr._ptr)
  end
  local released, device_type, device_id, pending
  if code == 0 then
    code, message, released, device_type, device_id, pending =
      validate_batch(self._prepared or nil, arr._ptr, self._level)
  end
  if code ~= 0 or released then
    arr:release()
    if code ~= 0 then stream_failed(self, "ferry.get_next", code, message) end
    self._ended = true
    return nil
  end
  if device_type == CPU and not pending then
    arr._host_ok = true
  else
    arr._device_type, arr._device_id = device_type, device_id
  end
  schema._users = schema._users + 1
  arr._shared = schema
  if LEAK_REPORT then
    leak_track(arr, string.format("DeviceArray of a stream batch (format '%s', length %s) never closed",
                                  tostring(schema:format()), tostring(arr:length())))
  end
  return arr
end

--- next() -> DeviceArray, or nil at the end of the stream.
function DeviceStream:next() return pull(self, false, nil) end

--- next_on(consumer_stream) -> DeviceArray, or nil at the end: the
--- consumer-stream handoff per batch. The batch is handed to
--- `consumer_stream` (a native stream of the batch's device, as from
--- Device:stream(): the CUstream/hipStream_t value itself), which is made to
--- wait on the batch's sync event without blocking the host; with
--- consumer_stream nil the host waits.
function DeviceStream:next_on(consumer_stream) return pull(self, true, consumer_stream) end

-- Iterator of `batches()` without reuse: a new DeviceArray per batch.
local function pull_step(state)
  return pull(state.stream, state.on, state.consumer)
end

-- The 4th value of the generic for (Lua 5.4 closes it when the loop ends,
-- `break` included): disposes the loop's reused batch object.
local LoopCloser = {}
LoopCloser.__close = function(closer) dispose_reused(closer.batch) end

--- batches(opts) -> iterator for `for batch in stream:batches() do ... end`.
--- opts.reuse: one DeviceArray is refilled for every batch (no object per
---   batch; each batch is released when the loop advances, or by
---   batch:release() in the body, so do not keep it).
--- opts.consumer_stream: every batch is handed to this device stream as by
---   next_on(consumer_stream); opts.host_wait = true: the host waits on
---   every batch's event instead.
function DeviceStream:batches(opts)
  local on, consumer_stream = false, nil
  if opts then
    if opts.consumer_stream ~= nil then on, consumer_stream = true, opts.consumer_stream end
    if opts.host_wait then on = true end
  end
  stream_ptr(self, "ferry.get_next")
  check_stream_error(self)
  if not (opts and opts.reuse) then
    return pull_step, { stream = self, on = on, consumer = consumer_stream }, nil
  end
  if self._ended then return function() return nil end, nil, nil end
  local schema = batch_schema(self)
  schema._users = schema._users + 1
  local arr = new_reused_array(schema, schema._kind, true)
  local closer = setmetatable({ batch = arr }, LoopCloser)
  -- finish(code, message) ends the loop; finish() on every step after it
  -- raises the stream's error again (the loop never pulls after an error).
  local function finish(code, message)
    if code == nil then
      check_stream_error(self)
      return
    end
    dispose_reused(arr)
    if code ~= 0 then
      if self._released then raise("ferry.get_next", code, message) end
      stream_failed(self, "ferry.get_next", code, message)
    end
    self._ended = true
  end
  local f, s = backend.batch_iterator(self._owner, arr._owner, arr, finish, consumer_stream,
                                      on and 1 or 0, self._prepared or nil)
  return f, s, nil, closer
end

--- release(): releases the stream exactly once (also when collected, and by
--- `local s <close>` on 5.4). Batches may outlive it.
function DeviceStream:release()
  if self._released then return end
  self._released = true
  if LEAK_REPORT then leak_untrack(self) end
  -- Batches may outlive the stream and share its schema: the last holder
  -- releases it.
  local schema = self._schema
  self._schema = false
  if schema then unref_schema(schema) end
  if self._prepared then
    backend.prepared_free(self._prepared)
    self._prepared = false
  end
  backend.handle_free(self._owner)
  self._owner = nil
end
--- close(): the same as release().
DeviceStream.close = DeviceStream.release
DeviceStream.__close = DeviceStream.release
-- Collected without close() (Lua 5.4; LuaJIT's handle finalisers do the
-- same): released, without touching the shared schema's struct (see
-- unref_schema_collected), and still reported (leak report on).
DeviceStream.__gc = function(self)
  self._leak = nil
  local schema = self._schema
  if schema and not self._released then
    self._schema = false
    unref_schema_collected(schema)
  end
  self:release()
end

--- export(out): moves the stream into a consumer-allocated struct.
function DeviceStream:export(out)
  local code = raw.ferry_array_stream_move(stream_ptr(self, "ferry.DeviceStream.export"), out)
  if code ~= 0 then raise("ferry.DeviceStream.export", code, "destination not released") end
  self:release()
end

-- ---- producing: Lua data -> exported arrays -----------------------------------

-- A node describes one array and its schema:
--   { format=, name=, flags=, metadata={{k,v},...}, length=, null_count=,
--     offset=, buffers = { buf, ... } (n_buffers = buffers.n or #buffers),
--     children = { node, ... }, dictionary = node }
-- and buf is nil/false (NULL), a Lua string (zero-copy: its bytes are used
-- as they are and the string is anchored until release), or a packed table
-- { kind = "i32"|..."f64"|"bits", values = {...}, n = count } copied once
-- into C memory (Lua tables must be packed once; after that nothing is
-- copied), or { pointer = p, size = n } for memory the caller keeps alive.

-- Buffers of a node on their way into an export (`k` owns what is made):
-- host data is packed once, and copied once to `device` (when not the CPU)
-- on `stream` (the caller's native stream, or the keeper's own).
local function materialise_buffers(k, node, device, cpu, stream)
  local pointers, n = {}, node.buffers and (node.buffers.n or #node.buffers) or 0
  for i = 1, n do
    local buf = node.buffers[i]
    local ptr, size, on_device
    if buf == nil or buf == false then
      ptr = nil
    elseif type(buf) == "string" then
      ptr, size = backend.keeper_string(k, buf)
    elseif type(buf) == "table" and buf.kind then
      ptr, size = backend.keeper_pack(k, buf.kind, buf.values, buf.n or #buf.values)
    elseif type(buf) == "table" and buf.pointer ~= nil then
      ptr, size = buf.pointer, buf.size
    elseif type(buf) == "table" and buf.device_pointer ~= nil then
      if cpu then
        raise("ferry.export", EINVAL, "buffer " .. (i - 1) .. " is device memory, but the export is on the CPU")
      end
      ptr, on_device = buf.device_pointer, true
      if buf.owned then backend.keeper_adopt(k, "memory", device.ptr, ptr, buf.destroy) end
    else
      raise("ferry.export", EINVAL, "buffer " .. (i - 1) .. " of " .. tostring(node.format)
            .. " must be nil, a string, a packed table, { pointer = } or { device_pointer = }")
    end
    if ptr ~= nil and device and not cpu and not on_device then
      if size == nil then
        raise("ferry.export", EINVAL, "buffer " .. (i - 1) .. " needs a size to go to a device")
      end
      local moved, code, message = backend.keeper_to_device(k, ptr, size, device.ptr, stream)
      if moved == nil then raise("ferry.export", code, message) end
      ptr = moved
    end
    pointers[i] = ptr or false
  end
  node._pointers, node._n_buffers = pointers, n
  for _, child in ipairs(node.children or {}) do materialise_buffers(k, child, device, cpu, stream) end
  if node.dictionary then materialise_buffers(k, node.dictionary, device, cpu, stream) end
end

-- Initialises `ptr` (released) from `node` with the given hook, then its
-- children and dictionary (no hooks: the root's hook frees everything).
local function fill_array(ptr, node, hook, user_data)
  local children = node.children
  local code, message = raw.ferry_array_init(ptr, node.length, node.null_count or 0,
                                             node.offset or 0, node._n_buffers, node._pointers,
                                             children and #children or 0, hook, user_data)
  return code, message
end

local no_children = {}

local function fill_array_children(ptr, node)
  local code, message = 0, nil
  for i, child in ipairs(node.children or no_children) do
    local child_ptr = raw.ferry_array_child(ptr, i - 1)
    code, message = fill_array(child_ptr, child, nil, nil)
    if code == 0 then code, message = fill_array_children(child_ptr, child) end
    if code ~= 0 then return code, message end
  end
  if node.dictionary then
    local dictionary
    code, dictionary, message = raw.ferry_array_allocate_dictionary(ptr)
    if code ~= 0 then return code, message end
    code, message = fill_array(dictionary, node.dictionary, nil, nil)
    if code == 0 then code, message = fill_array_children(dictionary, node.dictionary) end
  end
  return code, message
end

local function fill_schema(ptr, node)
  local children = node.children or {}
  local code, message = raw.ferry_schema_init(ptr, node.format, node.name,
                                              node.flags or NULLABLE, #children)
  if code ~= 0 then return code, message end
  for _, pair in ipairs(node.metadata or {}) do
    code, message = raw.ferry_schema_add_metadata(ptr, pair[1], pair[2])
    if code ~= 0 then return code, message end
  end
  for i, child in ipairs(children) do
    code, message = fill_schema(raw.ferry_schema_child(ptr, i - 1), child)
    if code ~= 0 then return code, message end
  end
  if node.dictionary then
    local dictionary
    code, dictionary, message = raw.ferry_schema_allocate_dictionary(ptr)
    if code ~= 0 then return code, message end
    code, message = fill_schema(dictionary, node.dictionary)
    if code ~= 0 then return code, message end
  end
  return 0
end

-- ---- type specs -> nodes ------------------------------------------------------------

local formats = {
  int8 = "c", uint8 = "C", int16 = "s", uint16 = "S", int32 = "i", uint32 = "I",
  int64 = "l", uint64 = "L", float32 = "f", float64 = "g", bool = "b",
  utf8 = "u", binary = "z", list = "+l", struct = "+s",
}
ferry.formats = formats

local function spec_length(spec)
  local n = spec.length or (spec.values and (spec.values.n or #spec.values)) or
            (spec.indices and (spec.indices.n or #spec.indices)) or 0
  if n < 0 then raise("ferry.array", EINVAL, "negative length " .. n) end
  return n
end

-- validity bitmap (physical, offset slots first) and null count
local function validity_of(spec, values, n, offset)
  local bits, nulls = {}, 0
  for i = 1, n do
    local valid
    if spec.validity then valid = spec.validity[i] and true or false
    else valid = values == nil or values[i] ~= nil end
    bits[offset + i] = valid
    if not valid then nulls = nulls + 1 end
  end
  if nulls == 0 and not spec.validity then return nil, 0 end
  return { kind = "bits", values = bits, n = offset + n }, nulls
end

local function shifted(values, n, offset, filler)
  if offset == 0 then return values end
  local out = {}
  for i = 1, offset do out[i] = filler end
  for i = 1, n do out[offset + i] = values[i] end
  return out
end

local to_node

local function variable_size_node(spec, n, offset, format)
  local offsets, pieces, position = { 0 }, {}, 0
  for i = 1, offset do offsets[#offsets + 1] = 0 end
  for i = 1, n do
    local v = spec.values[i]
    if v ~= nil then
      if type(v) ~= "string" then
        raise("ferry.array", EINVAL, string.format("element %d of %s must be a string, got %s",
              i - 1, spec.type, type(v)))
      end
      pieces[#pieces + 1] = v
      position = position + #v
    end
    offsets[#offsets + 1] = position
  end
  if position > 2147483647 then raise("ferry.array", EINVAL, "more than 2 GiB of string data") end
  local validity, nulls = validity_of(spec, spec.values, n, offset)
  return {
    format = format, length = n, null_count = nulls, offset = offset,
    buffers = { validity or false, { kind = "i32", values = offsets, n = offset + n + 1 },
                table.concat(pieces), n = 3 },
  }
end

to_node = function(spec)
  if spec.format then return spec end -- already a node
  local type_name = spec.type
  local format = formats[type_name]
  local n, offset = spec_length(spec), spec.offset or 0
  local node
  if type_name == "utf8" or type_name == "binary" then
    node = variable_size_node(spec, n, offset, format)
  elseif type_name == "list" then
    local offsets, flat, position = { 0 }, {}, 0
    for i = 1, offset do offsets[#offsets + 1] = 0 end
    for i = 1, n do
      local list = spec.values[i]
      if list ~= nil then
        for j = 1, (list.n or #list) do flat[position + j] = list[j] end
        position = position + (list.n or #list)
      end
      offsets[#offsets + 1] = position
    end
    local item = {}
    for key, value in pairs(spec.item or { type = "int32" }) do item[key] = value end
    item.values, item.length, item.offset, item.name = flat, position, 0, item.name or "item"
    local validity, nulls = validity_of(spec, spec.values, n, offset)
    node = { format = "+l", length = n, null_count = nulls, offset = offset,
             buffers = { validity or false, { kind = "i32", values = offsets, n = offset + n + 1 }, n = 2 },
             children = { to_node(item) } }
  elseif type_name == "struct" then
    local children = {}
    for i, field in ipairs(spec.fields or {}) do
      local child = {}
      for key, value in pairs(field) do child[key] = value end
      child.length = n + offset
      child.values = shifted(field.values or {}, n, offset, nil)
      child.offset = 0
      child.name = field.name or ("f" .. (i - 1))
      children[i] = to_node(child)
    end
    local validity, nulls = validity_of(spec, nil, n, offset)
    node = { format = "+s", length = n, null_count = nulls, offset = offset,
             buffers = { validity or false, n = 1 }, children = children }
  elseif type_name == "dictionary" then
    local index_type = spec.index_type or "int32"
    local kind = FIXED[formats[index_type] or ""]
    if not kind or kind == "bits" then
      raise("ferry.array", EINVAL, "bad dictionary index type " .. tostring(index_type))
    end
    local validity, nulls = validity_of(spec, spec.indices, n, offset)
    node = { format = formats[index_type], length = n, null_count = nulls, offset = offset,
             buffers = { validity or false,
                         { kind = kind, values = shifted(spec.indices, n, offset, nil), n = offset + n },
                         n = 2 },
             dictionary = to_node(spec.dictionary) }
  elseif format then
    local kind = FIXED[format]
    local values = spec.values or {}
    local validity, nulls = validity_of(spec, values, n, offset)
    node = { format = format, length = n, null_count = nulls, offset = offset,
             buffers = { validity or false, { kind = kind, values = shifted(values, n, offset, nil),
                                              n = offset + n }, n = 2 } }
  else
    raise("ferry.array", EINVAL, "unknown type " .. tostring(type_name))
  end
  node.name = spec.name or (spec.name == nil and type_name) or nil
  node.flags = spec.nullable == false and 0 or NULLABLE
  node.metadata = spec.metadata
  return node
end
ferry.node = to_node

-- ---- export entry points ------------------------------------------------------------

local function resolve_device(opts)
  local kind = opts.device or "cpu"
  if kind == "cpu" or kind == CPU then return nil, true end
  local device = ferry.device(kind, opts.device_id)
  return device, device.type == CPU
end

--- export_schema_to(spec_or_node, out): fills a released ArrowSchema*.
function ferry.export_schema_to(spec, out)
  local code, message = fill_schema(out, to_node(spec))
  if code ~= 0 then
    raw.ferry_schema_release(out)
    raise("ferry.export_schema", code, message)
  end
end

--- export_array_to(spec_or_node, out, opts): fills a released
--- ArrowDeviceArray* (opts.device "cpu" default | "sim" | ..., opts.device_id).
--- Off the CPU the buffers are copied once on a producer stream and the export
--- carries a sync event recorded after the copies. Everything the export owns
--- is freed by one release hook, exactly once, whatever fails.
-- True when every buffer of the tree is NULL or caller-kept memory on the CPU.
local function borrows_only(node)
  local buffers = node.buffers
  if buffers then
    for i = 1, buffers.n or #buffers do
      local buf = buffers[i]
      if buf and not (type(buf) == "table" and buf.pointer ~= nil) then return false end
    end
  end
  local children = node.children
  if children then
    for i = 1, #children do
      if not borrows_only(children[i]) then return false end
    end
  end
  return node.dictionary == nil or borrows_only(node.dictionary)
end

local raw_array_init, raw_device_array_init = raw.ferry_array_init, raw.ferry_device_array_init
local export_flat = backend.export_flat

-- Scratch ArrowArray structs, one per nesting depth (producers may nest):
-- every export moves its scratch array out or releases it before returning.
local scratch, scratch_depth = {}, 0

-- Fast path for exports that own nothing: no keeper, no hook, and no
-- garbage when a producer returns the same node again (its pointer list is
-- rewritten in place).
local function export_borrowed(node, out)
  local buffers = node.buffers
  local n = buffers and (buffers.n or #buffers) or 0
  local pointers = node._pointers or {}
  for i = 1, n do
    local buf = buffers[i]
    pointers[i] = buf and buf.pointer or false
  end
  for i = n + 1, #pointers do pointers[i] = nil end
  node._pointers, node._n_buffers = pointers, n
  local children = node.children
  if children then
    for i = 1, #children do export_borrowed(children[i], nil) end
  end
  if node.dictionary then export_borrowed(node.dictionary, nil) end
  if out == nil then return end
  if not children and not node.dictionary then
    -- the common producer case: one call, no scratch struct
    local code, message = export_flat(out, node.length, node.null_count or 0, node.offset or 0,
                                      pointers, n)
    if code ~= 0 then raise("ferry.export", code, message) end
    return
  end
  scratch_depth = scratch_depth + 1
  local tmp = scratch[scratch_depth]
  if not tmp then
    tmp = raw.ferry_array_new()
    scratch[scratch_depth] = tmp
  end
  local code, message = raw_array_init(tmp, node.length, node.null_count or 0, node.offset or 0,
                                       n, pointers, children and #children or 0, nil, nil)
  if code == 0 and (children or node.dictionary) then
    code, message = fill_array_children(tmp, node)
  end
  if code == 0 then code, message = raw_device_array_init(out, tmp, CPU, -1, nil, nil, nil) end
  -- On success tmp was moved into out; otherwise it may hold a partial tree.
  if code ~= 0 then raw.ferry_array_release(tmp) end
  scratch_depth = scratch_depth - 1
  if code ~= 0 then raise("ferry.export", code, message) end
end

local SYNC_POLICIES = { record_event = constants.FERRY_SYNC_RECORD_EVENT,
                        synchronize = constants.FERRY_SYNC_SYNCHRONIZE }

-- The caller's own sync event: checked, and owned by the export (keeper
-- `k`) when event_destroy says how to destroy it.
local function adopt_event(k, device, opts)
  if backend.keeper_device_stream(k) ~= nil then
    raise("ferry.export", EINVAL, "with sync_event every buffer must already be on the device " ..
          "({ device_pointer = }): ferry would copy on a stream the event does not cover")
  end
  local destroy = opts.event_destroy
  if destroy ~= nil then
    if destroy ~= "ferry" and type(destroy) ~= "function" then
      raise("ferry.export", EINVAL, "event_destroy must be \"ferry\" or a function, got " .. tostring(destroy))
    end
    backend.keeper_adopt(k, "event", device.ptr, opts.sync_event, destroy ~= "ferry" and destroy or nil)
  end
end

-- The export's sync: a producer stream whose end ferry records an event
-- at (or synchronizes: sync = "synchronize"), or the caller's own event.
local function init_on_device(out, tmp, device, stream, opts)
  local event = opts.sync_event
  if event ~= nil then
    return raw.ferry_device_array_init(out, tmp, device.type, device.id, event, nil, nil)
  end
  local policy = SYNC_POLICIES[opts.sync or "record_event"]
  if not policy then
    raise("ferry.export", EINVAL, "sync must be \"record_event\" or \"synchronize\", got " ..
          tostring(opts.sync))
  end
  return raw.ferry_device_array_init_async(out, tmp, device.ptr, stream, policy)
end

function ferry.export_array_to(spec, out, opts)
  opts = opts or spec
  local node = spec.format and spec or to_node(spec)
  if (opts.device == nil or opts.device == "cpu") and borrows_only(node) then
    return export_borrowed(node, out)
  end
  local device, cpu = resolve_device(opts)
  local k = backend.keeper_new()
  local ok, err = pcall(materialise_buffers, k, node, device, cpu, opts.stream)
  if ok and not cpu and opts.sync_event ~= nil then ok, err = pcall(adopt_event, k, device, opts) end
  if not ok then
    backend.keeper_free(k)
    error(err, 2)
  end
  local stream = opts.stream or backend.keeper_device_stream(k)
  local tmp = raw.ferry_array_new()
  if not tmp then
    backend.keeper_free(k)
    raise("ferry.export", ENOMEM, "out of memory")
  end
  local code, message = fill_array(tmp, node, backend.keeper_hook(), backend.keeper_pointer(k))
  if code ~= 0 then
    backend.keeper_free(k) -- the hook was not taken
  else
    backend.keeper_disown(k)
    code, message = fill_array_children(tmp, node)
    if code == 0 then
      if cpu then
        code, message = raw.ferry_device_array_init(out, tmp, CPU, -1, nil, nil, nil)
      else
        ok, code, message = pcall(init_on_device, out, tmp, device, stream, opts)
        if not ok then
          raw.ferry_array_free(tmp) -- runs the hook: the keeper goes
          error(code, 2)
        end
      end
    end
  end
  raw.ferry_array_free(tmp) -- releases it (running the hook) unless it was moved
  if code ~= 0 then raise("ferry.export", code, message) end
end

--- ferry.array(spec) -> DeviceArray owned by Lua, built from Lua values:
---   { type = "int32", values = { 1, 2, nil, 4 }, length = 4, offset = 0,
---     device = "cpu" | "sim", name = "x", metadata = { { "k", "v" } } }
--- types: int8..uint64, float32, float64, bool, utf8, binary, list (item =),
--- struct (fields =), dictionary (indices =, dictionary =), or a raw node.
function ferry.array(spec)
  local node = to_node(spec)
  local arr = new_device_array(false, false)
  local ok, err = pcall(ferry.export_schema_to, node, arr._sptr)
  if ok then ok, err = pcall(ferry.export_array_to, node, arr._ptr, spec) end
  if not ok then
    arr:release()
    error(err, 2)
  end
  return arr
end

--- export_array(spec, array_out, schema_out, opts): fills consumer-allocated
--- structs (the array first) from Lua values in one go (opts defaults to
--- spec: device=...).
function ferry.export_array(spec, array_out, schema_out, opts)
  local node = to_node(spec)
  ferry.export_schema_to(node, schema_out)
  local ok, err = pcall(ferry.export_array_to, node, array_out, opts or spec)
  if not ok then
    raw.ferry_schema_release(schema_out)
    error(err, 2)
  end
end


-- ---- producing streams ---------------------------------------------------------------

--- export_stream_to(out, schema, producer, opts): fills a released
--- ArrowDeviceArrayStream* whose callbacks run Lua:
---   schema    a spec/node, or a function returning one (or nil, message[, code])
---   producer  called per get_next: returns a spec/node or DeviceArray for the
---             next batch, nil at the end, or nil, message[, code] on failure;
---             raising gives EIO with the traceback.
---   opts      { device = "cpu" | "sim" | "cuda" | ..., device_id =, stream =, sync = }
---             (as for ferry.export_array; every batch is exported with them)
function ferry.export_stream_to(out, schema, producer, opts)
  opts = opts or {}
  local device, cpu = resolve_device(opts)
  local device_type = cpu and CPU or device.type
  local function get_schema(schema_out)
    local spec, message, code = schema, nil, nil
    if type(schema) == "function" then spec, message, code = schema() end
    if spec == nil then return nil, message or "no schema", code end
    local ok, err = pcall(ferry.export_schema_to, spec, schema_out)
    if not ok then return nil, err end
  end
  -- Per batch: no table and no extra protected call. An error raised by the
  -- export (a ferry.Error) reaches the trampoline, which keeps its code and
  -- message; anything else becomes EIO with a traceback.
  local spec_opts = { device = opts.device, device_id = opts.device_id, stream = opts.stream,
                      sync = opts.sync }
  local export_array_to = ferry.export_array_to
  local function get_next(array_out)
    local item, message, code = producer()
    if item == nil then
      if message ~= nil then return nil, message, code end
      return -- end of stream: array_out stays released
    end
    if getmetatable(item) == DeviceArray then
      item:export(array_out)
    else
      export_array_to(item, array_out, spec_opts)
    end
  end
  local code, message = backend.stream_export(out, device_type, get_schema, get_next)
  check("ferry.export_stream", code, message)
end

--- ferry.stream(schema, producer, opts) -> DeviceStream backed by Lua.
function ferry.stream(schema, producer, opts)
  local owner, ptr = backend.handle("stream")
  local ok, err = pcall(ferry.export_stream_to, ptr, schema, producer, opts)
  if not ok then
    backend.handle_free(owner)
    error(err, 2)
  end
  return new_stream(owner, ptr, opts, "ferry.stream")
end

--- ferry.stream_from_arrays(list_of_specs, opts): a stream over fixed batches
--- (the schema is taken from the first spec).
function ferry.stream_from_arrays(specs, opts)
  local i = 0
  return ferry.stream(specs[1], function()
    i = i + 1
    return specs[i]
  end, opts)
end

-- ---- async device streams (the Async Device Stream Interface) ------------------------

-- The core does the protocol (docs/bindings.md, "Async device streams"): a
-- FerryAsyncConsumer queues what a producer pushes, on the producer's
-- threads, in C; a FerryAsyncSender serializes a producer's calls. Lua only
-- takes batches from the queue and feeds the sender, always on the Lua
-- thread, so no callback ever enters Lua. Where Lua would wait, a coroutine
-- that can yield yields instead (coroutine.yield(object)), so one Lua
-- thread can run a consumer and a producer, or an event loop can wait on
-- the consumer's fd(); elsewhere the wait blocks in C.
local ETIMEDOUT = errno.ETIMEDOUT
local isyieldable = coroutine.isyieldable or function() return false end

-- Handlers this module allocated and handed to producers that have not
-- released them yet: their memory must outlive the consumer object, so it
-- is freed by a later sweep once the producer released it.
local pending_handlers = {}
local function sweep_handlers()
  for handler in pairs(pending_handlers) do
    if raw.ferry_async_handler_is_released(handler) == 1 then
      pending_handlers[handler] = nil
      raw.ferry_async_handler_free(handler)
    end
  end
end

-- Frees what a consumer holds in C (once): the core consumer (which cancels
-- a running stream; its memory goes when the producer releases) and, when
-- released already, the handler (else it waits in pending_handlers).
local function free_consumer_state(state)
  if state.freed then return end
  state.freed = true
  raw.ferry_async_consumer_free(state.consumer)
  if raw.ferry_async_handler_is_released(state.handler) == 1 then
    raw.ferry_async_handler_free(state.handler)
  else
    pending_handlers[state.handler] = true
  end
end

local AsyncConsumer = {}
AsyncConsumer.__index = AsyncConsumer
ferry.AsyncConsumer = AsyncConsumer

--- ferry.async_consumer(opts) -> AsyncConsumer: a consumer of an async
--- device stream. Hand consumer:handler() (a struct
--- ArrowAsyncDeviceStreamHandler*) to any producer, in any runtime; its
--- callbacks may come from any thread and are queued in C. opts.window: at
--- most this many batches requested ahead (default 4); opts.validate as for
--- ferry.import (every batch is validated against the stream's schema).
function ferry.async_consumer(opts)
  opts = opts or {}
  local window = opts.window or 4
  if type(window) ~= "number" or window < 1 or window % 1 ~= 0 then
    raise("ferry.async_consumer", EINVAL, "window must be an integer >= 1, got " .. tostring(window))
  end
  local level = validation_level(opts.validate)
  sweep_handlers()
  local handler = raw.ferry_async_handler_new()
  if handler == nil then raise("ferry.async_consumer", ENOMEM, "cannot allocate a handler") end
  local code, consumer, message = raw.ferry_async_consumer_create(window, level, handler)
  if code ~= 0 then
    raw.ferry_async_handler_free(handler)
    raise("ferry.async_consumer", code, message)
  end
  local state = { consumer = consumer, handler = handler, freed = false }
  local self = setmetatable({ _state = state, _schema = false, _error = false, _ended = false,
                              _closed = false }, AsyncConsumer)
  -- LuaJIT has no __gc on tables: an anchor frees the C side when collected
  -- (its finaliser holds only `state`, never the object).
  self._anchor = backend.gc_anchor(handler, function() free_consumer_state(state) end) or false
  if LEAK_REPORT then leak_track(self, "AsyncConsumer from ferry.async_consumer never closed") end
  return self
end

local function live_consumer(self, where)
  if self._closed then raise(where, EINVAL, "async consumer already closed") end
  return self._state.consumer
end

--- handler() -> the struct ArrowAsyncDeviceStreamHandler* to hand to a
--- producer (it stays valid until that producer releases it, even after
--- close()).
function AsyncConsumer:handler()
  live_consumer(self, "ferry.AsyncConsumer.handler")
  return self._state.handler
end

--- fd() -> a file descriptor readable exactly while poll() has something
--- (a batch, the end, an error) to return: for event loops (poll it only;
--- never read or close it). -1 when the platform gives none.
function AsyncConsumer:fd() return raw.ferry_async_consumer_fd(live_consumer(self, "ferry.AsyncConsumer.fd")) end

--- cancel(): asks the producer to stop (idempotent); later reads raise ECANCELED.
function AsyncConsumer:cancel() raw.ferry_async_consumer_cancel(live_consumer(self, "ferry.AsyncConsumer.cancel")) end

-- As stream_failed: the first error is kept and raised on every later read.
local function consumer_failed(self, code, message)
  local err = ferry.error("ferry.AsyncConsumer.next", code, message)
  self._error = err
  error(err, 3)
end

--- poll(timeout_ms) -> DeviceArray, false when nothing arrived within
--- timeout_ms (default 0: do not wait; negative: wait as long as it takes),
--- or nil at the end of the stream. A failure (the producer's on_error, a
--- batch refused by validation, a protocol violation, cancel) raises, and
--- the same error is raised on every later call.
function AsyncConsumer:poll(timeout_ms)
  local consumer = live_consumer(self, "ferry.AsyncConsumer.next")
  if self._error then error(self._error, 2) end
  if self._ended then return nil end
  timeout_ms = timeout_ms or 0
  local schema = self._schema
  if not schema then
    schema = owned_schema()
    local code, message = raw.ferry_async_consumer_get_schema(consumer, schema._ptr, timeout_ms)
    if code ~= 0 then
      schema:release()
      if code == ETIMEDOUT then return false end
      consumer_failed(self, code, message)
    end
    schema._mine = false -- held by the consumer and its batches
    setmetatable(schema, Schema)
    schema._kind = kind_of(schema:format(), raw.ferry_schema_dictionary(schema._ptr) ~= nil)
    self._schema = schema
  end
  local arr = new_device_array(false, schema._kind)
  local code, message = raw.ferry_async_consumer_next(consumer, arr._ptr, timeout_ms)
  if code ~= 0 or raw.ferry_device_array_is_released(arr._ptr) == 1 then
    arr:release()
    if code == ETIMEDOUT then return false end
    if code ~= 0 then consumer_failed(self, code, message) end
    self._ended = true
    return nil
  end
  -- validated by the core consumer, at the level it was made with
  local device_type = raw.ferry_device_array_device_type(arr._ptr)
  if device_type == CPU and raw.ferry_device_array_sync_event(arr._ptr) == nil then
    arr._host_ok = true
  else
    arr._device_type, arr._device_id = device_type, raw.ferry_device_array_device_id(arr._ptr)
  end
  schema._users = schema._users + 1
  arr._shared = schema
  if LEAK_REPORT then
    leak_track(arr, string.format("DeviceArray of an async batch (format '%s', length %s) never closed",
                                  tostring(schema:format()), tostring(arr:length())))
  end
  return arr
end

--- next() -> DeviceArray, or nil at the end. When none is ready: inside a
--- coroutine that can yield, yields (coroutine.yield(consumer)) and tries
--- again when resumed; elsewhere blocks in C until one comes.
function AsyncConsumer:next()
  while true do
    if not isyieldable() then return self:poll(-1) end
    local arr = self:poll(0)
    if arr ~= false then return arr end
    coroutine.yield(self)
  end
end

--- batches() -> iterator for `for batch in consumer:batches() do ... end`
--- (next() per step: coroutine-friendly as next()).
function AsyncConsumer:batches()
  live_consumer(self, "ferry.AsyncConsumer.next")
  return AsyncConsumer.next, self, nil
end

--- wait_released(timeout_ms) -> true once the producer has released the
--- handler (its last call), false when it has not within timeout_ms
--- (negative: wait as long as it takes).
function AsyncConsumer:wait_released(timeout_ms)
  local consumer = live_consumer(self, "ferry.AsyncConsumer.wait_released")
  return raw.ferry_async_consumer_wait_released(consumer, timeout_ms or -1) == 0
end

--- schema() -> a view of the stream's schema once it came (nil before).
function AsyncConsumer:schema()
  live_consumer(self, "ferry.AsyncConsumer.schema")
  local schema = self._schema
  if not schema then return nil end
  return schema_view(schema._ptr, schema)
end

--- close(): gives the consumer up (cancelling a running stream); batches
--- already taken stay valid. Idempotent; later calls raise "already closed".
function AsyncConsumer:close()
  if self._closed then return end
  self._closed = true
  if LEAK_REPORT then leak_untrack(self) end
  local anchor = self._anchor
  if anchor then backend.gc_anchor_drop(anchor) end
  free_consumer_state(self._state)
  local schema = self._schema
  self._schema = false
  if schema then unref_schema(schema) end
end
AsyncConsumer.release = AsyncConsumer.close
AsyncConsumer.__close = AsyncConsumer.close
AsyncConsumer.__gc = function(self) -- 5.4 (LuaJIT: the anchor); still reported as a leak
  self._leak = nil
  local schema = self._schema
  if schema and not self._closed then -- as DeviceStream.__gc
    self._schema = false
    unref_schema_collected(schema)
  end
  self:close()
end

-- ---- the producer side ----

local AsyncExporter = {}
AsyncExporter.__index = AsyncExporter
ferry.AsyncExporter = AsyncExporter

-- Ends a sender once: the end marker (code 0) or on_error(code, message), then
-- the handler's release.
local function finish_sender(state, code, message)
  if state.finished then return end
  state.finished = true
  raw.ferry_async_sender_finish(state.sender, code, message)
  local pending = state.pending
  if pending then
    state.pending = false
    backend.handle_free(pending.owner)
  end
end

--- ferry.async_exporter(handler_ptr, schema, producer, opts) -> AsyncExporter:
--- pushes batches to a consumer's struct ArrowAsyncDeviceStreamHandler*
--- (another runtime's, or ferry.async_consumer():handler()), at the pace the
--- consumer requests. `schema` is a spec or node; `producer` is a function
--- called for each batch, or a coroutine resumed for each (yielding it),
--- returning a spec, node or DeviceArray, nil at the end, or nil, message[,
--- code] to fail the stream (a raised error fails it with EIO); opts as for
--- ferry.export_stream_to (device=...). The handler is the exporter's from
--- here on: it is released when the stream ends, fails or is cancelled, and
--- when the exporter is closed or collected first (on_error ECANCELED).
function ferry.async_exporter(handler, schema, producer, opts)
  local where = "ferry.async_exporter"
  if handler == nil then raise(where, EINVAL, "handler must not be nil") end
  opts = opts or {}
  if type(producer) == "thread" then
    local co = producer
    producer = function()
      if coroutine.status(co) == "dead" then return nil end
      local ok, item, message, code = coroutine.resume(co)
      if not ok then error(item, 0) end
      return item, message, code
    end
  elseif type(producer) ~= "function" then
    raise(where, EINVAL, "producer must be a function or a coroutine")
  end
  local device, cpu = resolve_device(opts)
  local code, sender, message = raw.ferry_async_sender_create(handler, cpu and CPU or device.type, nil)
  if code ~= 0 then raise(where, code, message) end -- the core failed and released the handler
  local state = { sender = sender, finished = false, pending = false }
  local self = setmetatable({ _state = state, _producer = producer, _result = false,
                              _opts = { device = opts.device, device_id = opts.device_id,
                                        stream = opts.stream, sync = opts.sync } }, AsyncExporter)
  self._anchor = backend.gc_anchor(sender, function()
    finish_sender(state, errno.ECANCELED, "the Lua exporter was collected before the end")
  end) or false
  -- the schema, at once (the consumer requests batches from inside on_schema)
  local owner, ptr = backend.handle("schema")
  local ok, err = pcall(ferry.export_schema_to, schema, ptr)
  if not ok then
    backend.handle_free(owner)
    finish_sender(state, EINVAL, tostring(type(err) == "table" and err.message or err))
    error(err, 2)
  end
  code, message = raw.ferry_async_sender_send_schema(sender, ptr)
  backend.handle_free(owner)
  if code ~= 0 then
    self._result = ferry.error(where, code, message)
    finish_sender(state, 0, nil) -- refused or cancelled: the core sends nothing more
  end
  return self
end

-- The next batch of the producer, exported into a pair the exporter holds
-- (state.pending) until the sender takes it; false at the end (the stream
-- is finished here, with the producer's error if it failed).
local function produce(self)
  local state = self._state
  local ok, item, message, code = pcall(self._producer)
  if not ok then
    local text = type(item) == "table" and item.message or tostring(item)
    finish_sender(state, type(item) == "table" and item.code or errno.EIO, text)
    self._result = ferry.error("ferry.AsyncExporter.producer", errno.EIO, text)
    return false
  end
  if item == nil then
    if message ~= nil then
      finish_sender(state, code or errno.EIO, tostring(message))
      self._result = ferry.error("ferry.AsyncExporter.producer", code or errno.EIO, tostring(message))
    else
      finish_sender(state, 0, nil)
    end
    return false
  end
  local owner, ptr = backend.handle("pair")
  local exported, err
  if getmetatable(item) == DeviceArray then
    exported, err = pcall(item.export, item, ptr)
  else
    exported, err = pcall(ferry.export_array_to, item, ptr, self._opts)
  end
  if not exported then
    backend.handle_free(owner)
    local text = type(err) == "table" and err.message or tostring(err)
    local failed = type(err) == "table" and err.code or errno.EIO
    finish_sender(state, failed, text)
    self._result = ferry.error("ferry.AsyncExporter.producer", failed, text)
    return false
  end
  state.pending = { owner = owner, ptr = ptr }
  return true
end

--- pump(timeout_ms) -> true once the stream is over (ended, failed or
--- cancelled: see result()), false while the consumer has not asked for
--- more within timeout_ms (default 0; negative: wait). Calls the producer
--- only for batches the consumer requested.
function AsyncExporter:pump(timeout_ms)
  local state = self._state
  timeout_ms = timeout_ms or 0
  while not state.finished do
    local code, message = raw.ferry_async_sender_wait_demand(state.sender, timeout_ms)
    if code == ETIMEDOUT then return false end
    if code ~= 0 then -- cancelled, refused, or a request(n <= 0): stop
      self._result = ferry.error("ferry.AsyncExporter", code, message)
      finish_sender(state, 0, nil)
      break
    end
    if not state.pending and not produce(self) then break end
    local pending = state.pending
    code, message = raw.ferry_async_sender_send(state.sender, pending.ptr, nil, timeout_ms)
    if code == ETIMEDOUT then return false end -- still ours: sent on the next pump
    state.pending = false
    backend.handle_free(pending.owner) -- moved out (or released by ferry on a refusal)
    if code ~= 0 then
      self._result = ferry.error("ferry.AsyncExporter", code, message)
      finish_sender(state, 0, nil)
    end
  end
  local anchor = self._anchor
  if anchor then
    self._anchor = false
    backend.gc_anchor_drop(anchor)
  end
  return true
end

--- run() -> self: pumps to the end. Inside a coroutine that can yield, it
--- yields (coroutine.yield(exporter)) whenever the consumer has not asked
--- for more; elsewhere it blocks in C until it does.
function AsyncExporter:run()
  while not self:pump(isyieldable() and 0 or -1) do coroutine.yield(self) end
  return self
end

--- result() -> nil while running or after a clean end, else the ferry.Error
--- that ended it (the producer's failure, or the consumer's cancel/refusal:
--- ECANCELED, ...).
function AsyncExporter:result() return self._result or nil end

--- done() -> true once the stream is over.
function AsyncExporter:done() return self._state.finished end

--- close(): ends the stream now if it is still running (on_error ECANCELED).
function AsyncExporter:close()
  finish_sender(self._state, errno.ECANCELED, "the Lua exporter was closed before the end")
  local anchor = self._anchor
  if anchor then
    self._anchor = false
    backend.gc_anchor_drop(anchor)
  end
end
AsyncExporter.__close = AsyncExporter.close
AsyncExporter.__gc = AsyncExporter.close

--- ferry.export_async(handler_ptr, schema, producer, opts) -> AsyncExporter:
--- ferry.async_exporter(...):run() (blocks, or yields in a coroutine).
function ferry.export_async(handler, schema, producer, opts)
  return ferry.async_exporter(handler, schema, producer, opts):run()
end

-- DeviceArray inherits Array's methods: copy them in, so that a method call
-- on a batch finds its function with one lookup instead of walking the
-- __index chain.
for name, fn in pairs(Array) do
  if name ~= "__index" and rawget(DeviceArray, name) == nil then DeviceArray[name] = fn end
end

-- The reused array of loops and importers has every DeviceArray method but
-- release (ReusedArray's keeps the structs for the next array).
for name, fn in pairs(DeviceArray) do
  if name ~= "__index" and rawget(ReusedArray, name) == nil then ReusedArray[name] = fn end
end

return ferry
