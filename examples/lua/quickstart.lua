-- The first thing to try: make an Arrow array in Lua, hand it over through
-- the Arrow C Device Data Interface (two C structs, as any runtime in the
-- process would receive them), and read it back on the other side.
--   lua5.4 quickstart.lua      (or luajit quickstart.lua)
local ferry = require("ferry")
print(string.format("ferry %s on %s", ferry.version(), ferry.backend))

-- Producer: an int32 array with a null, packed once into C memory.
local produced = ferry.array{ type = "int32", values = { 1, nil, 3, 4 }, length = 4 }

-- The handoff: a consumer allocates the structs (an ArrowSchema and an
-- ArrowDeviceArray), the producer moves into them.
local slots = ferry.array_slots()
produced:export(slots.array, slots.schema) -- the array first, then its schema

-- Consumer: take ownership (validated), read with bounds checks, release.
local arr = ferry.import(slots.array, slots.schema)
local parts, sum = {}, 0
for i = 0, arr:length() - 1 do
  local v = arr:value(i)
  parts[#parts + 1] = v == nil and "null" or tostring(v)
  sum = sum + (v or 0)
end
print("values: [" .. table.concat(parts, ", ") .. "]")
print("sum of non-null values: " .. sum)
local ok, err = pcall(arr.value, arr, 4)
print("value(4): " .. (ok and "no error?" or err.name))
arr:release() -- the producer's memory is freed now, exactly once
