-- A device array: on a GPU when there is one (CUDA, then ROCm), else on
-- ferry's simulated device. The producer's copy runs on a stream and the
-- export carries a sync event; the consumer hands the array to its own
-- device stream, brings it to the host (to_host: device memory cannot be
-- read in place), and round-trips it through DLPack.
--   lua5.4 device.lua      (or luajit device.lua)
local ferry = require("ferry")

local name, why = "sim", "no GPU: the simulated device"
for _, backend in ipairs(ferry.backends()) do
  if name == "sim" and (backend.name == "cuda" or backend.name == "rocm") and backend.available then
    name, why = backend.name, "a GPU"
  end
end
local device = ferry.device(name, 0)
print(string.format("device: %s:%d (%s)", device:type_name(), device.id, why))

local arr = ferry.array{ type = "int32", values = { 1, nil, 3, 4 }, length = 4, device = name }
print("sync event: " .. (arr:sync_event() ~= nil and "yes" or "no"))

-- The consumer's stream waits on the producer's event (the host does not).
local consumer = device:stream()
arr:wait(consumer)

-- A copy for later, then the array itself to the host.
local copy = arr:copy_to_device(name, 0)
local host = arr:to_host()
local parts = {}
for i = 0, host:length() - 1 do parts[#parts + 1] = tostring(host:value(i) or "null") end
print("to_host: [" .. table.concat(parts, ", ") .. "]")
host:release()

-- DLPack: a tensor for a library on the same device, and back.
local floats = ferry.array{ type = "float32", values = { 0.5, 1.5, 2.5 }, device = name }
local tensor = floats:to_dlpack(consumer) -- ordered on the consumer's stream
print(string.format("dlpack: %s[%d] on %s", (tensor:dtype()), tensor:length(), (tensor:device())))
device:synchronize(consumer) -- the host reads next: wait for the consumer's stream
local back = ferry.from_dlpack(tensor):to_host()
print("dlpack back: " .. table.concat(back:to_table(), " "))
back:release()

copy:release()
device:destroy_stream(consumer)
print("device allocations left: " .. device:live_allocations())
