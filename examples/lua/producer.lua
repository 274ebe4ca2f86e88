-- A Lua producer: arrays and a stream exported into structs a consumer
-- allocated, the way another runtime (C, Rust, Go, Java, Python) would take
-- them. Lua strings are exported without a copy; tables are packed once.
--   lua5.4 producer.lua      (or luajit producer.lua)
local ferry = require("ferry")

-- 1. One array from Lua values: struct<name: utf8, score: float64>.
local slots = ferry.array_slots() -- what the consumer hands the producer
local schema, array = slots.schema, slots.array
ferry.export_array({ type = "struct", length = 3, fields = {
  { name = "name", type = "utf8", values = { "ada", "grace", "linus" } },
  { name = "score", type = "float64", values = { 9.5, 8.25, 7 } },
} }, array, schema)
-- (the consumer side, here in Lua too): the array first, then its schema
local people = ferry.import(array, schema)
for i = 0, people:length() - 1 do
  local row = people:value(i)
  print(string.format("row %d: %s %.2f", i, row.name, row.score))
end
people:release()

-- 2. A zero-copy buffer: the bytes of a Lua string are the array's values.
local bytes = string.rep("\7\0\0\0", 3)
ferry.export_array({ format = "i", name = "sevens", length = 3, buffers = { false, bytes, n = 2 } },
                   array, schema)
local sevens = ferry.import(array, schema)
print("sevens: " .. table.concat(sevens:to_table(), " "))
sevens:release() -- drops the anchor on the string

-- 3. A stream: a function called for every batch, nil at the end.
local batch = 0
local slot = ferry.stream_slot()
ferry.export_stream_to(slot.stream, { type = "int64" }, function()
  batch = batch + 1
  if batch > 3 then return nil end
  return { type = "int64", values = { batch, batch * 100 } }
end)
local consumer = ferry.import_stream(slot.stream)
local totals = {}
for b in consumer:batches{ reuse = true } do
  -- int64 values: Lua integers on 5.4, exact int64 cdata on LuaJIT
  totals[#totals + 1] = tostring(ferry.tonumber(b:value(0) + b:value(1)))
end
consumer:release()
print("stream batches: " .. table.concat(totals, " "))
print("still owned by Lua exports: " .. ferry.live_allocations())
