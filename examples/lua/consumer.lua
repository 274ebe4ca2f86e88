-- A Lua consumer: what to do with an ArrowSchema + ArrowDeviceArray or an
-- ArrowDeviceArrayStream that another runtime handed over (here made in
-- Lua, so the example runs on its own): import (validated), read with
-- bounds checks, release; streams batch by batch.
--   lua5.4 consumer.lua      (or luajit consumer.lua)
local ferry = require("ferry")

-- Something a producer handed over: list<int32> and a dictionary array.
local function handed_over(spec)
  local slots = ferry.array_slots()
  ferry.export_array(spec, slots.array, slots.schema)
  return ferry.import(slots.array, slots.schema) -- takes ownership; validates
end

local lists = handed_over{ type = "list", values = { { 1, 2 }, {}, { 3 } }, length = 3 }
for i = 0, lists:length() - 1 do
  local first, last = lists:list_range(i)
  print(string.format("list %d: {%s} (child positions %d..%d)", i,
                      table.concat(lists:value(i), ", "), first, last))
end
lists:release()

local colours = handed_over{ type = "dictionary", indices = { 0, 1, 1, nil, 0 }, length = 5,
                             dictionary = { type = "utf8", values = { "red", "green" } } }
local words = {}
for i = 0, colours:length() - 1 do words[#words + 1] = colours:value(i) or "null" end
print("dictionary: " .. table.concat(words, " "))
colours:release()

-- Errors are ferry.Error values: where, code (errno), name, message.
local utf8 = handed_over{ type = "utf8", values = { "x" } }
local ok, err = pcall(utf8.value, utf8, 1)
print(string.format("out of range: %s (%s)", err.name, err.message))
utf8:release()

-- A stream, validated batch by batch against its schema (prepared once).
local n = 0
local slot = ferry.stream_slot()
ferry.export_stream_to(slot.stream, { type = "float64" }, function()
  n = n + 1
  if n <= 4 then return { type = "float64", values = { n / 2, n * 2 } } end
end)
local stream = ferry.import_stream(slot.stream)
local sum = 0
for batch in stream:batches{ reuse = true } do
  for i = 0, batch:length() - 1 do sum = sum + batch:value(i) end
end
stream:release()
print(string.format("stream sum: %.1f", sum))
