-- ferry: zero-copy handoff of Arrow device arrays and streams, for Lua 5.4
-- (on the SWIG module `ferry_core`) and LuaJIT (on the FFI), with one API.
--
--   local ferry = require("ferry")
--   local arr = ferry.array{ type = "int32", values = { 1, 2, nil, 4 }, length = 4 }
--   print(arr:length(), arr:null_count(), arr:value(0))
--   for batch in stream:batches() do ... end
--
-- Indices are 0-based everywhere (elements, buffers, children), as in Arrow.
-- Errors are raised as ferry.Error values whose text reads
-- "ferry.get_next: EIO: injected failure at get_next 2"; they are raised only
-- after the C call returned, never through a C frame.
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

-- ---- errors -------------------------------------------------------------------

-- Linux errno values, the codes ferry uses.
local errno = { EIO = 5, ENOMEM = 12, EINVAL = 22, ENODEV = 19, ENOTSUP = 95, ENOENT = 2 }
ferry.errno = errno

local Error = {}
Error.__index = Error
Error.__tostring = function(e)
  return string.format("%s: %s: %s", e.where, e.name, e.message)
end
ferry.Error = Error

local function errno_name(code)
  return raw.ferry_errno_name(code) or ("errno " .. tostring(code))
end

--- Makes an error value: code (errno), where (the function), message.
function ferry.error(where, code, message)
  return setmetatable({ where = where, code = code, name = errno_name(code),
                        message = message or "" }, Error)
end

local function raise(where, code, message)
  error(ferry.error(where, code, message), 3)
end

local function check(where, code, message)
  if code ~= 0 then raise(where, code, message) end
end

function ferry.version() return raw.ferry_version() end
function ferry.abi_version() return raw.ferry_abi_version() end
function ferry.live_allocations() return backend.live_allocations() end
ferry.constants = {
  ARROW_FLAG_NULLABLE = 2, ARROW_FLAG_DICTIONARY_ORDERED = 1, ARROW_FLAG_MAP_KEYS_SORTED = 4,
  ARROW_DEVICE_CPU = 1, ARROW_DEVICE_EXT_DEV = 12, FERRY_VALIDATE_DEFAULT = 0,
  FERRY_VALIDATE_FULL = 1,
}

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

--- ferry.device("sim", 0) -> Device (the registry owns it for the process).
function ferry.device(kind, id)
  local device_type = device_type_code(kind or "cpu")
  if id == nil then id = device_type == 1 and -1 or 0 end
  local code, ptr, message = raw.ferry_device_resolve(device_type, id)
  check("ferry.device", code, message)
  return setmetatable({ ptr = ptr, type = device_type, id = id }, Device)
end

function Device:type_name() return raw.ferry_device_type_name(self.type) end
function Device:is_host_accessible() return raw.ferry_device_is_host_accessible(self.ptr) == 1 end
function Device:live_allocations() return raw.ferry_device_live_allocations(self.ptr) end
function Device:stream()
  local code, stream, message = raw.ferry_device_stream_create(self.ptr)
  check("ferry.Device.stream", code, message)
  return stream
end
function Device:synchronize(stream)
  local code, message = raw.ferry_device_stream_synchronize(self.ptr, stream)
  check("ferry.Device.synchronize", code, message)
end
function Device:destroy_stream(stream)
  local code, message = raw.ferry_device_stream_destroy(self.ptr, stream)
  check("ferry.Device.destroy_stream", code, message)
end

function ferry.sim_set_strict(on) raw.ferry_sim_set_strict(on and 1 or 0) end
function ferry.sim_is_strict() return raw.ferry_sim_is_strict() == 1 end

-- ---- schemas ----------------------------------------------------------------------

local Schema = {}
Schema.__index = Schema
ferry.Schema = Schema

local function wrap_schema(ptr, owner, parent)
  return setmetatable({ _ptr = ptr, _owner = owner, _parent = parent }, Schema)
end

local function schema_ptr(self)
  local root = self
  while root._parent do root = root._parent end
  if root._released then error(ferry.error("ferry.Schema", errno.EINVAL, "schema already released"), 3) end
  return self._ptr
end

function Schema:format() return raw.ferry_schema_format(schema_ptr(self)) end
function Schema:name() return raw.ferry_schema_name(schema_ptr(self)) end
function Schema:flags() return raw.ferry_schema_flags(schema_ptr(self)) end
function Schema:nullable() return self:flags() % 4 >= 2 end
function Schema:n_children() return raw.ferry_schema_n_children(schema_ptr(self)) end
function Schema:pointer() return schema_ptr(self) end

function Schema:child(i)
  local child = raw.ferry_schema_child(schema_ptr(self), i)
  if not child then raise("ferry.Schema.child", errno.EINVAL, "no child " .. tostring(i)) end
  return wrap_schema(child, nil, self)
end

function Schema:dictionary()
  local dictionary = raw.ferry_schema_dictionary(schema_ptr(self))
  return dictionary and wrap_schema(dictionary, nil, self) or nil
end

--- metadata() -> list of { key, value } pairs (binary strings) in order,
--- plus a by-key map under field `map`; nil when absent.
function Schema:metadata()
  local ptr = schema_ptr(self)
  local n = raw.ferry_schema_metadata_count(ptr)
  if n < 0 then raise("ferry.Schema.metadata", errno.EINVAL, "malformed metadata encoding") end
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

function Schema:validate()
  local code, message, findings = backend.validate(schema_ptr(self), nil, 0)
  return code == 0, message, findings
end

function Schema:release()
  if self._parent then return end
  if not self._released and self._owner then
    self._released = true
    backend.handle_free(self._owner)
    self._owner = nil
  end
end
Schema.__close = Schema.release
Schema.__gc = Schema.release

--- Moves this (owned) schema into a consumer-allocated struct.
function Schema:export(out)
  local code = raw.ferry_schema_move(schema_ptr(self), out)
  if code ~= 0 then raise("ferry.Schema.export", code, "destination not released or source released") end
  self:release()
end

function Schema:__tostring()
  return string.format("ferry.Schema(%s %q)", tostring(self:format()), tostring(self:name()))
end

-- ---- arrays ------------------------------------------------------------------------

-- format string -> element kind of buffer 1 (fixed-width layouts)
local element_kinds = {
  c = "i8", C = "u8", s = "i16", S = "u16", i = "i32", I = "u32", l = "i64", L = "u64",
  e = nil, f = "f32", g = "f64", b = "bits",
}

local device_info -- (defined with DeviceArray) -> device type, device id of a root

local Array = {}
Array.__index = Array
ferry.Array = Array -- children and dictionaries (views into a DeviceArray)

local DeviceArray = setmetatable({}, { __index = Array })
DeviceArray.__index = DeviceArray
ferry.DeviceArray = DeviceArray

local function live_root(self, where)
  local root = self._root or self
  if root._released then
    error(ferry.error(where or "ferry.DeviceArray", errno.EINVAL, "array already released"), 3)
  end
  return root
end

local function array_ptr(self)
  live_root(self, "ferry.DeviceArray")
  return self._arr
end

local raw_array_length = raw.ferry_array_length
function Array:length()
  -- hot path: inlined liveness check
  local root = self._root or self
  if root._released then live_root(self) end
  return raw_array_length(self._arr)
end
function Array:null_count() return raw.ferry_array_null_count(array_ptr(self)) end
function Array:offset() return raw.ferry_array_offset(array_ptr(self)) end
function Array:n_buffers() return raw.ferry_array_n_buffers(array_ptr(self)) end
function Array:n_children() return raw.ferry_array_n_children(array_ptr(self)) end
function Array:schema() return self._schema end
function Array:format() return self._schema:format() end

--- buffer(i) -> address (lightuserdata in Lua 5.4, cdata in LuaJIT; nil
--- for NULL), size in bytes (computed by the core from the layout).
function Array:buffer(i)
  local ptr = array_ptr(self)
  local root = self._root or self
  local address = raw.ferry_array_buffer(ptr, i)
  local device_type, device_id = device_info(root)
  local code, size, message = raw.ferry_array_buffer_size(self._schema:pointer(), ptr,
                                                          device_type, device_id, i)
  if code ~= 0 then raise("ferry.Array.buffer", code, message) end
  return address, size
end

function Array:child(i)
  local child = raw.ferry_array_child(array_ptr(self), i)
  if not child then raise("ferry.Array.child", errno.EINVAL, "no child " .. tostring(i)) end
  return setmetatable({ _arr = child, _schema = self._schema:child(i), _root = self._root or self },
                      Array)
end

function Array:dictionary()
  local dictionary = raw.ferry_array_dictionary(array_ptr(self))
  if not dictionary then return nil end
  return setmetatable({ _arr = dictionary, _schema = self._schema:dictionary(),
                        _root = self._root or self }, Array)
end

-- Host reads: the device must be host-accessible and its event waited on.
local function readable(self)
  local root = live_root(self, "ferry.Array.value")
  if not root._host_ok then
    local device_type, device_id = device_info(root)
    if device_type ~= 1 then
      local device = ferry.device(device_type, device_id)
      if not device:is_host_accessible() then
        raise("ferry.Array.value", errno.ENOTSUP,
              "memory on " .. device:type_name() .. " is not host-accessible; copy it first")
      end
    end
    root:wait()
    root._host_ok = true
  end
  return self._arr
end

--- is_valid(i): false when element i (logical) is null.
function Array:is_valid(i)
  local ptr = readable(self)
  local validity = raw.ferry_array_buffer(ptr, 0)
  if not validity or raw.ferry_array_null_count(ptr) == 0 then return true end
  return backend.read(validity, "bits", i + raw.ferry_array_offset(ptr))
end

local function read_offsets(self, ptr, i)
  local large = self._schema:format():match("^[UZ]$") ~= nil
  local offsets = raw.ferry_array_buffer(ptr, 1)
  local slot = i + raw.ferry_array_offset(ptr)
  local kind = large and "i64" or "i32"
  local first = backend.to_integer(backend.read(offsets, kind, slot))
  local last = backend.to_integer(backend.read(offsets, kind, slot + 1))
  return first, last
end

--- value(i): element i (logical index) decoded by the format, nil when null.
--- Integers are Lua integers on 5.4; on LuaJIT 64-bit values are int64 cdata.
function Array:value(i)
  local ptr = readable(self)
  if not self:is_valid(i) then return nil end
  local format = self._schema:format()
  local kind = element_kinds[format]
  if kind then
    return backend.read(raw.ferry_array_buffer(ptr, 1), kind, i + raw.ferry_array_offset(ptr))
  elseif format == "u" or format == "z" or format == "U" or format == "Z" then
    local first, last = read_offsets(self, ptr, i)
    return backend.read_bytes(raw.ferry_array_buffer(ptr, 2), first, last - first)
  elseif format == "+l" or format == "+L" then
    local first, last = read_offsets(self, ptr, i)
    local child, out = self:child(0), {}
    for j = first, last - 1 do out[#out + 1] = child:value(j) end
    return out
  elseif format == "+s" then
    local out = {}
    for c = 0, self:n_children() - 1 do
      local child = self:child(c)
      out[child:schema():name() or c] = child:value(i + raw.ferry_array_offset(ptr))
    end
    return out
  end
  raise("ferry.Array.value", errno.ENOTSUP, "no reader for format " .. format)
end

--- list_bounds(i) -> first, last child positions of list element i.
function Array:_list_bounds(i)
  local ptr = readable(self)
  return read_offsets(self, ptr, i)
end

--- buffer_address(i) -> address of buffer i (nil for NULL), without its size.
function Array:buffer_address(i) return raw.ferry_array_buffer(array_ptr(self), i) end

function Array:int32(i) return self:value(i) end
function Array:int64(i) return self:value(i) end
function Array:double(i) return self:value(i) end
function Array:utf8(i) return self:value(i) end

--- index(i): the raw dictionary index of element i (dictionary arrays).
function Array:index(i)
  local ptr = readable(self)
  if not self:is_valid(i) then return nil end
  return backend.read(raw.ferry_array_buffer(ptr, 1), element_kinds[self._schema:format()],
                      i + raw.ferry_array_offset(ptr))
end

--- to_table(): every element as a Lua list (nil holes for nulls) and n.
function Array:to_table()
  local n, out = self:length(), {}
  for i = 0, n - 1 do out[i + 1] = self:value(i) end
  return out, n
end

function DeviceArray:device_type() return raw.ferry_device_type_name((device_info(self))) end
function DeviceArray:device_type_id() return (device_info(self)) end
function DeviceArray:device_id() return select(2, device_info(self)) end
function DeviceArray:pointer() live_root(self); return self._ptr end
function DeviceArray:sync_event() return raw.ferry_device_array_sync_event(self:pointer()) end

--- wait(consumer_stream): blocks the host (stream nil) or makes the
--- consumer's device stream wait on the producer's event.
function DeviceArray:wait(consumer_stream)
  live_root(self, "ferry.DeviceArray.wait")
  local code, message = raw.ferry_device_array_wait(self._ptr, consumer_stream)
  check("ferry.DeviceArray.wait", code, message)
end

--- validate(full) -> ok, message, findings
function DeviceArray:validate(full)
  live_root(self)
  local code, message, findings = backend.validate(self._schema:pointer(), self._ptr, full and 1 or 0)
  return code == 0, message, findings
end

-- Handles of released DeviceArrays are kept for the next one (a released,
-- zeroed struct and its userdata/cdata): no allocation, no finaliser and no
-- garbage per batch. At most POOL_SIZE are kept.
local POOL_SIZE = 64
local pool_owner, pool_ptr, pool_arr, pool_n = {}, {}, {}, 0
local raw_device_array_array = raw.ferry_device_array_array
local release_device_array = backend.release_device_array

local function take_array_handle()
  local n = pool_n
  if n > 0 then
    local owner, ptr, arr = pool_owner[n], pool_ptr[n], pool_arr[n]
    pool_owner[n], pool_ptr[n], pool_arr[n] = nil, nil, nil
    pool_n = n - 1
    return owner, ptr, arr
  end
  local owner, ptr = backend.handle("array")
  return owner, ptr, raw_device_array_array(ptr)
end

local function recycle_array_handle(owner, ptr, arr)
  release_device_array(ptr) -- runs the producer's release (may call a Lua producer)
  if pool_n < POOL_SIZE then
    local n = pool_n + 1
    pool_owner[n], pool_ptr[n], pool_arr[n] = owner, ptr, arr
    pool_n = n
  else
    backend.handle_free(owner)
  end
end

--- release(): releases the array (and its schema when owned) exactly once.
function DeviceArray:release()
  if self._released then return end
  self._released = true
  if self._loop then
    -- The reused object of a batch loop: this batch goes now, the loop keeps
    -- the struct for the next one.
    release_device_array(self._ptr)
    return
  end
  local owner = self._owner
  if owner then
    self._owner = nil
    recycle_array_handle(owner, self._ptr, self._arr)
  end
  if self._schema_owned and self._schema then
    self._schema:release()
  elseif self._schema_shared then
    self._schema_shared = false
    local schema = self._schema
    schema._users = schema._users - 1
    -- The stream went first: the last batch using its schema releases it.
    if schema._users == 0 and schema._orphaned then schema:release() end
  end
end
DeviceArray.__close = DeviceArray.release
-- No __gc on the table: its handle (userdata on 5.4, cdata on LuaJIT) frees
-- and thereby releases the struct when collected; a table finaliser would
-- only add cost to every batch.

--- export(schema_out, array_out): moves both into consumer-allocated
--- structs (schema_out may be nil to keep the schema); this object is then
--- released.
function DeviceArray:export(schema_out, array_out)
  live_root(self, "ferry.DeviceArray.export")
  if schema_out ~= nil then
    if not self._schema_owned then
      raise("ferry.DeviceArray.export", errno.EINVAL, "the schema belongs to a stream")
    end
    local code = raw.ferry_schema_move(self._schema:pointer(), schema_out)
    if code ~= 0 then raise("ferry.DeviceArray.export", code, "schema destination not released") end
  end
  local code = raw.ferry_device_array_move(self._ptr, array_out)
  if code ~= 0 then raise("ferry.DeviceArray.export", code, "array destination not released") end
  self:release()
end

function DeviceArray:__tostring()
  if self._released then return "ferry.DeviceArray(released)" end
  return string.format("ferry.DeviceArray(%s, length %d, %s)", self._schema:format(),
                       self:length(), self:device_type())
end

-- A fresh owned DeviceArray around a released struct (filled by the caller).
-- Every field is present from the start, `false` meaning unset: the table is
-- sized once, lookups never fall through to the metatables, and resetting
-- a field stores into an existing slot (storing nil into a missing key is
-- ~50 ns in LuaJIT traces).
-- schema_shared: the schema is a stream's, counted in its `_users` (see
-- share_schema) and given back by release().
local new_device_array
if backend.name == "luajit" then
  new_device_array = function(schema, schema_owned, schema_shared)
    local owner, ptr, arr = take_array_handle()
    return setmetatable({ _owner = owner, _ptr = ptr, _arr = arr, _schema = schema,
                          _schema_owned = schema_owned, _schema_shared = schema_shared,
                          _root = false, _device_type = false, _device_id = false,
                          _host_ok = false, _released = false, _loop = false }, DeviceArray)
  end
else
  -- Lua 5.4: a table of 5 fields (8 slots) costs ~100 ns less to make and
  -- collect than one of 12; absent fields read as nil through the metatable.
  -- Fields added later (_device_type, _host_ok...) are not per batch.
  new_device_array = function(schema, schema_owned, schema_shared)
    local owner, ptr, arr = take_array_handle()
    return setmetatable({ _owner = owner, _ptr = ptr, _arr = arr, _schema = schema,
                          _schema_shared = schema_shared, _root = false, _released = false,
                          _loop = false }, DeviceArray)
  end
end

function ferry._new_device_array() return new_device_array(nil, false, false) end

-- A batch shares its stream's schema: the schema counts its users so that it
-- is released promptly, by the stream or by the last batch, whichever is last
-- (never left to the garbage collector, which may run much later).
local function share_schema(arr, schema)
  if arr._schema_shared then return arr end -- counted at construction (pull)
  schema._users = (schema._users or 0) + 1
  arr._schema_shared = true
  return arr
end

-- Gives the (filled) array its schema; device type and id are read on
-- first use (device_info).
function DeviceArray:_adopt(schema, schema_owned)
  self._schema = schema
  self._schema_owned = schema_owned == true
  self._device_type = false
  self._host_ok = false
  return self
end

local raw_device_type, raw_device_id = raw.ferry_device_array_device_type,
                                       raw.ferry_device_array_device_id

device_info = function(self)
  local root = self._root or self
  if not root._device_type then
    root._device_type = raw_device_type(root._ptr)
    root._device_id = raw_device_id(root._ptr)
  end
  return root._device_type, root._device_id
end

local function new_owned_schema()
  local owner, ptr = backend.handle("schema")
  return wrap_schema(ptr, owner, nil)
end

-- Hands this array's schema over to `out`, which replaces it (moves).
local function hand_over_schema(self, out)
  local schema = self._schema
  if self._schema_owned then
    out:_adopt(schema, true)
    self._schema_owned = false
  else
    out:_adopt(schema, false)
    if self._schema_shared then
      schema._users = (schema._users or 0) + 1
      out._schema_shared = true
    end
  end
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
  local device_type = device_type_code(kind or "cpu")
  if id == nil then id = device_type == 1 and -1 or 0 end
  local out = new_device_array(nil, false, false)
  local code, message = raw.ferry_device_array_move_to_device(self._schema:pointer(), self._ptr,
                                                              device_type, id, out._ptr)
  if code ~= 0 then
    out:release()
    raise(where, code, message)
  end
  hand_over_schema(self, out)
  self:release()
  return out
end

-- ---- DLPack ----------------------------------------------------------------------

local DLPackTensor = {}
DLPackTensor.__index = DLPackTensor
ferry.DLPackTensor = DLPackTensor

local DLPACK_READ_ONLY, DLPACK_IS_COPIED = 1, 2
local dlpack_codes = { [0] = "int", [1] = "uint", [2] = "float", [4] = "bfloat", [5] = "complex",
                       [6] = "bool" }

local function wrap_tensor(ptr)
  -- LuaJIT does not run __gc on tables: the backend anchors a finaliser on
  -- the pointer itself there (nil on 5.4, where DLPackTensor.__gc runs).
  return setmetatable({ _ptr = ptr, _anchor = backend.gc_anchor(ptr, backend.dlpack_delete),
                        _released = false }, DLPackTensor)
end

local function tensor_ptr(self, where)
  if self._released then raise(where, errno.EINVAL, "the DLPack tensor was deleted or handed over") end
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
  local code, tensor, message = raw.ferry_device_array_to_dlpack(self._schema:pointer(), self._ptr,
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
  if tensor == nil then raise(where, errno.EINVAL, "tensor must not be nil") end
  local schema = new_owned_schema()
  local arr = new_device_array(nil, false, false)
  local code, message = raw.ferry_device_array_from_dlpack(tensor, schema._ptr, arr._ptr)
  if code ~= 0 then
    schema:release()
    arr:release()
    raise(where, code, message)
  end
  if object then disown_tensor(object) end
  return arr:_adopt(schema, true)
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

--- ferry.import_array(schema_ptr, device_array_ptr): takes ownership of
--- C-allocated structs a producer filled (moves them; the sources end up
--- released) and returns a DeviceArray.
function ferry.import_array(schema_in, array_in)
  local schema = new_owned_schema()
  local code = raw.ferry_schema_move(schema_in, schema._ptr)
  if code ~= 0 then
    schema:release()
    raise("ferry.import_array", code, "the schema is released or NULL")
  end
  local arr = ferry._new_device_array()
  code = raw.ferry_device_array_move(array_in, arr._ptr)
  if code ~= 0 then
    schema:release()
    arr:release()
    raise("ferry.import_array", code, "the array is released or NULL")
  end
  return arr:_adopt(schema, true)
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

local function materialise_buffers(k, node, device, cpu)
  local pointers, n = {}, node.buffers and (node.buffers.n or #node.buffers) or 0
  for i = 1, n do
    local buf = node.buffers[i]
    local ptr, size
    if buf == nil or buf == false then
      ptr = nil
    elseif type(buf) == "string" then
      ptr, size = backend.keeper_string(k, buf)
    elseif type(buf) == "table" and buf.kind then
      ptr, size = backend.keeper_pack(k, buf.kind, buf.values, buf.n or #buf.values)
    elseif type(buf) == "table" and buf.pointer ~= nil then
      ptr, size = buf.pointer, buf.size
    else
      raise("ferry.export", errno.EINVAL, "buffer " .. (i - 1) .. " of " .. tostring(node.format)
            .. " must be nil, a string or a packed table")
    end
    if ptr ~= nil and device and not cpu then
      if size == nil then
        raise("ferry.export", errno.EINVAL, "buffer " .. (i - 1) .. " needs a size to go to a device")
      end
      local moved, code, message = backend.keeper_to_device(k, ptr, size, device.ptr)
      if moved == nil then raise("ferry.export", code, message) end
      ptr = moved
    end
    pointers[i] = ptr or false
  end
  node._pointers, node._n_buffers = pointers, n
  for _, child in ipairs(node.children or {}) do materialise_buffers(k, child, device, cpu) end
  if node.dictionary then materialise_buffers(k, node.dictionary, device, cpu) end
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
                                              node.flags or 2, #children)
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
  if n < 0 then raise("ferry.array", errno.EINVAL, "negative length " .. n) end
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
        raise("ferry.array", errno.EINVAL, string.format("element %d of %s must be a string, got %s",
              i - 1, spec.type, type(v)))
      end
      pieces[#pieces + 1] = v
      position = position + #v
    end
    offsets[#offsets + 1] = position
  end
  if position > 2147483647 then raise("ferry.array", errno.EINVAL, "more than 2 GiB of string data") end
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
    local kind = element_kinds[formats[index_type] or ""]
    if not kind or kind == "bits" then
      raise("ferry.array", errno.EINVAL, "bad dictionary index type " .. tostring(index_type))
    end
    local validity, nulls = validity_of(spec, spec.indices, n, offset)
    node = { format = formats[index_type], length = n, null_count = nulls, offset = offset,
             buffers = { validity or false,
                         { kind = kind, values = shifted(spec.indices, n, offset, nil), n = offset + n },
                         n = 2 },
             dictionary = to_node(spec.dictionary) }
  elseif format then
    local kind = element_kinds[format]
    local values = spec.values or {}
    local validity, nulls = validity_of(spec, values, n, offset)
    node = { format = format, length = n, null_count = nulls, offset = offset,
             buffers = { validity or false, { kind = kind, values = shifted(values, n, offset, nil),
                                              n = offset + n }, n = 2 } }
  else
    raise("ferry.array", errno.EINVAL, "unknown type " .. tostring(type_name))
  end
  node.name = spec.name or (spec.name == nil and type_name) or nil
  node.flags = spec.nullable == false and 0 or 2
  node.metadata = spec.metadata
  return node
end
ferry.node = to_node

-- ---- export entry points ------------------------------------------------------------

local function resolve_device(opts)
  local kind = opts.device or "cpu"
  if kind == "cpu" or kind == 1 then return nil, true end
  local device = ferry.device(kind, opts.device_id)
  return device, device.type == 1
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
  if code == 0 then code, message = raw_device_array_init(out, tmp, 1, -1, nil, nil, nil) end
  -- On success tmp was moved into out; otherwise it may hold a partial tree.
  if code ~= 0 then raw.ferry_array_release(tmp) end
  scratch_depth = scratch_depth - 1
  if code ~= 0 then raise("ferry.export", code, message) end
end

function ferry.export_array_to(spec, out, opts)
  opts = opts or spec
  local node = spec.format and spec or to_node(spec)
  if (opts.device == nil or opts.device == "cpu") and borrows_only(node) then
    return export_borrowed(node, out)
  end
  local device, cpu = resolve_device(opts)
  local k = backend.keeper_new()
  local ok, err = pcall(materialise_buffers, k, node, device, cpu)
  if not ok then
    backend.keeper_free(k)
    error(err, 2)
  end
  local device_stream = backend.keeper_device_stream(k)
  local tmp = raw.ferry_array_new()
  if not tmp then
    backend.keeper_free(k)
    raise("ferry.export", errno.ENOMEM, "out of memory")
  end
  local code, message = fill_array(tmp, node, backend.keeper_hook(), backend.keeper_pointer(k))
  if code ~= 0 then
    backend.keeper_free(k) -- the hook was not taken
  else
    backend.keeper_disown(k)
    code, message = fill_array_children(tmp, node)
    if code == 0 then
      if cpu then
        code, message = raw.ferry_device_array_init(out, tmp, 1, -1, nil, nil, nil)
      else
        code, message = raw.ferry_device_array_init_async(out, tmp, device.ptr, device_stream,
                                                          raw.FERRY_SYNC_RECORD_EVENT or 0)
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
  local schema = new_owned_schema()
  local ok, err = pcall(ferry.export_schema_to, node, schema._ptr)
  if not ok then
    schema:release()
    error(err, 2)
  end
  local arr = ferry._new_device_array()
  ok, err = pcall(ferry.export_array_to, node, arr._ptr, spec)
  if not ok then
    schema:release()
    arr:release()
    error(err, 2)
  end
  return arr:_adopt(schema, true)
end

--- export_array(spec, schema_out, array_out, opts): fills consumer-allocated
--- structs from Lua values in one go (opts defaults to spec: device=...).
function ferry.export_array(spec, schema_out, array_out, opts)
  local node = to_node(spec)
  ferry.export_schema_to(node, schema_out)
  local ok, err = pcall(ferry.export_array_to, node, array_out, opts or spec)
  if not ok then
    raw.ferry_schema_release(schema_out)
    error(err, 2)
  end
end

-- ---- streams ------------------------------------------------------------------------

local DeviceStream = {}
DeviceStream.__index = DeviceStream
ferry.DeviceStream = DeviceStream

local function stream_ptr(self, where)
  if self._released then raise(where or "ferry.DeviceStream", errno.EINVAL, "stream already released") end
  return self._ptr
end

--- import_stream(ptr): takes ownership of a C-allocated stream (moved).
function ferry.import_stream(stream_in)
  local owner, ptr = backend.handle("stream")
  local code = raw.ferry_array_stream_move(stream_in, ptr)
  if code ~= 0 then
    backend.handle_free(owner)
    raise("ferry.import_stream", code, "the stream is released or NULL")
  end
  return setmetatable({ _owner = owner, _ptr = ptr, _schema = false, _released = false },
                      DeviceStream)
end

function DeviceStream:pointer() return stream_ptr(self) end
function DeviceStream:device_type()
  return raw.ferry_device_type_name(raw.ferry_array_stream_device_type(stream_ptr(self)))
end

--- get_schema() -> a new Schema (owned by the caller).
function DeviceStream:get_schema()
  local ptr = stream_ptr(self, "ferry.get_schema")
  local schema = new_owned_schema()
  local code, message = raw.ferry_array_stream_get_schema(ptr, schema._ptr)
  if code ~= 0 then
    schema:release()
    raise("ferry.get_schema", code, message)
  end
  return schema
end

-- The schema batches are described by (fetched once, owned by the stream).
function DeviceStream:schema()
  if not self._schema then self._schema = self:get_schema() end
  return self._schema
end

local get_next_raw, get_next_on_raw = backend.get_next, backend.get_next_on
local is_released = backend.is_released

-- Pulls one batch into a new DeviceArray: plain get_next, or with `on` the
-- consumer-stream handoff of ferry_array_stream_get_next_on.
local function pull(self, on, consumer_stream)
  local ptr = stream_ptr(self, "ferry.get_next")
  local schema = self._schema or self:schema()
  local arr = new_device_array(schema, false, false)
  local code, message
  if on then
    code, message = get_next_on_raw(ptr, arr._ptr, consumer_stream)
  else
    code, message = get_next_raw(ptr, arr._ptr)
  end
  if code ~= 0 then
    arr:release()
    raise("ferry.get_next", code, message)
  end
  if is_released(arr._ptr) then
    arr:release()
    return nil
  end
  schema._users = (schema._users or 0) + 1
  arr._schema_shared = true -- an existing slot: no rehash
  return arr
end

--- next() -> DeviceArray, or nil at the end of the stream.
function DeviceStream:next() return pull(self, false, nil) end

--- next_on(consumer_stream) -> DeviceArray, or nil at the end: the batch is
--- handed to `consumer_stream` (a device stream of the batch's device, as
--- from Device:stream()), which is made to wait on the batch's sync event
--- without blocking the host; with consumer_stream nil the host waits.
function DeviceStream:next_on(consumer_stream) return pull(self, true, consumer_stream) end

-- Iterator of `batches()` without reuse: a new DeviceArray per batch.
local function pull_step(state)
  return pull(state.stream, state.on, state.consumer)
end

local function end_reuse_loop(state, code, message)
  state.done = true
  state.batch:_end_loop()
  if code ~= 0 then raise("ferry.get_next", code, message) end
end

-- Iterator of `batches{ reuse = true }` (LuaJIT; Lua 5.4 runs the same steps
-- in C): releases the previous batch, pulls the next into the same struct.
-- Compiled into the loop's trace whenever no Lua callback can run
-- (backend.get_next and release_device_array pick the path per call).
local function reuse_step(state)
  if state.done then return nil end
  if state.stream._released then
    return end_reuse_loop(state, errno.EINVAL, "stream already released")
  end
  local out = state.out
  release_device_array(out)
  local code, message
  if state.on then
    code, message = get_next_on_raw(state.ptr, out, state.consumer)
  else
    code, message = get_next_raw(state.ptr, out)
  end
  if code ~= 0 then return end_reuse_loop(state, code, message) end
  if is_released(out) then return end_reuse_loop(state, 0) end
  local batch = state.batch
  batch._released = false
  batch._host_ok = false
  batch._device_type = false
  return batch
end

-- The 4th value of the generic for (Lua 5.4 closes it when the loop ends,
-- `break` included): disposes the loop's reused batch object.
local LoopCloser = {}
LoopCloser.__close = function(closer) closer.batch:_end_loop() end

function DeviceArray:_end_loop()
  if not self._loop then return end
  self._loop = false
  self._released = false -- so that release() below runs in full
  self:release()
end

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
  if not (opts and opts.reuse) then
    return pull_step, { stream = self, on = on, consumer = consumer_stream }, nil
  end
  local ptr = stream_ptr(self, "ferry.get_next")
  local schema = self:schema()
  local arr = share_schema(new_device_array(schema, false, false), schema)
  arr._loop = true
  local closer = setmetatable({ batch = arr }, LoopCloser)
  if backend.batch_iterator then
    -- Lua 5.4: one C call per step (release, pull, reset, return the object)
    local function finish(code, message)
      arr:_end_loop()
      if code ~= 0 then raise("ferry.get_next", code, message) end
    end
    return backend.batch_iterator(self._owner, arr._owner, arr, finish, consumer_stream,
                                  on and 1 or 0), nil, nil, closer
  end
  -- LuaJIT: one shared step function and a state table (a closure per loop
  -- would make every new loop miss the compiled trace).
  return reuse_step, { stream = self, ptr = ptr, out = arr._ptr, batch = arr, on = on,
                       consumer = consumer_stream, done = false }, nil, closer
end

function DeviceStream:release()
  if self._released then return end
  self._released = true
  -- Batches may outlive the stream and share its schema: release it now
  -- when none is alive, else the last batch released does (share_schema).
  local schema = self._schema
  self._schema = nil
  if schema then
    if (schema._users or 0) == 0 then schema:release() else schema._orphaned = true end
  end
  backend.handle_free(self._owner)
  self._owner = nil
end
DeviceStream.__close = DeviceStream.release
DeviceStream.__gc = DeviceStream.release

--- export(out): moves the stream into a consumer-allocated struct.
function DeviceStream:export(out)
  local code = raw.ferry_array_stream_move(stream_ptr(self, "ferry.DeviceStream.export"), out)
  if code ~= 0 then raise("ferry.DeviceStream.export", code, "destination not released") end
  self:release()
end

--- export_stream_to(out, schema, producer, opts): fills a released
--- ArrowDeviceArrayStream* whose callbacks run Lua:
---   schema    a spec/node, or a function returning one (or nil, message[, code])
---   producer  called per get_next: returns a spec/node or DeviceArray for the
---             next batch, nil at the end, or nil, message[, code] on failure;
---             raising gives EIO with the traceback.
---   opts      { device = "cpu" | "sim", device_id = }
function ferry.export_stream_to(out, schema, producer, opts)
  opts = opts or {}
  local device, cpu = resolve_device(opts)
  local device_type = cpu and 1 or device.type
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
  local spec_opts = { device = opts.device, device_id = opts.device_id }
  local export_array_to = ferry.export_array_to
  local function get_next(array_out)
    local item, message, code = producer()
    if item == nil then
      if message ~= nil then return nil, message, code end
      return -- end of stream: array_out stays released
    end
    if getmetatable(item) == DeviceArray then
      item:export(nil, array_out)
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
  return setmetatable({ _owner = owner, _ptr = ptr, _schema = false, _released = false },
                      DeviceStream)
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

-- DeviceArray inherits Array's methods: copy them in, so that a method call
-- on a batch finds its function with one lookup instead of walking the
-- __index chain.
for name, fn in pairs(Array) do
  if name ~= "__index" and rawget(DeviceArray, name) == nil then DeviceArray[name] = fn end
end

return ferry
