-- ferry/arrays.lua, part of the module `ferry`: device arrays: construction, import
-- (ferry.import, ferry.importer), release, moves and copies between devices, DLPack.
-- ferry/init.lua loads the parts in order; what they share goes through the table
-- ferry/init.lua puts at package.loaded["ferry.internal"] while they load.
local I = require("ferry.internal")
local ferry, raw, backend = I.ferry, I.raw, I.backend
local check, constants, CPU, default_id = I.check, I.constants, I.CPU, I.default_id
local device_type_code, DeviceArray, EINVAL = I.device_type_code, I.DeviceArray, I.EINVAL
local kind_of, KIND_OF_FORMAT, LEAK_REPORT = I.kind_of, I.KIND_OF_FORMAT, I.LEAK_REPORT
local leak_track, leak_untrack, live_root = I.leak_track, I.leak_untrack, I.live_root
local POOL_SIZE, raise, schema_of = I.POOL_SIZE, I.raise, I.schema_of
local schema_pool, shared_schema, unref_schema = I.schema_pool, I.shared_schema, I.unref_schema
local VALIDATE_DEFAULT, VALIDATE_FULL = I.VALIDATE_DEFAULT, I.VALIDATE_FULL

-- ---- device arrays: construction and release ------------------------------------------

-- Pair handles (an ArrowDeviceArray and an ArrowSchema in one block: what
-- one array holds), with their pointers: the device array, its ArrowArray,
-- the schema. Inlined into new_device_array and DeviceArray:release (the
-- consumer's hot path).
local pair_owners, pair_ptrs, pair_arrs, pair_sptrs, pair_n = {}, {}, {}, {}, 0
local raw_device_array_array = raw.ferry_device_array_array
local release_pair = backend.release_pair

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

-- For the parts loaded after this one.
I.dispose_reused, I.new_device_array = dispose_reused, new_device_array
I.new_reused_array, I.ReusedArray = new_reused_array, ReusedArray
I.validation_level = validation_level
