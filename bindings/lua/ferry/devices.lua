-- ferry/devices.lua, part of the module `ferry`: devices: ferry.device, ferry.backends,
-- streams, events, memory. ferry/init.lua loads the parts in order; what they share goes
-- through the table ferry/init.lua puts at package.loaded["ferry.internal"] while they load.
local I = require("ferry.internal")
local ferry, raw, backend = I.ferry, I.raw, I.backend
local check, CPU, EINVAL, raise = I.check, I.CPU, I.EINVAL, I.raise

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

-- For the parts loaded after this one.
I.default_id, I.device_type_code = default_id, device_type_code
