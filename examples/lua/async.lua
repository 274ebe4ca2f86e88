-- Async device streams (the C Device Data Interface's push interface): a
-- producer pushes batches as they are ready, at the pace the consumer asks
-- for. Here both sides are Lua coroutines on one thread, run by a small
-- round-robin scheduler; either side could be another runtime instead (hand
-- it consumer:handler(), or push to the handler it gives you). An event
-- loop would resume the consumer when consumer:fd() is readable.
--   lua5.4 async.lua      (or luajit async.lua)
local ferry = require("ferry")

-- The consumer asks for at most 2 batches ahead; each is validated.
local consumer = ferry.async_consumer{ window = 2 }

-- The producer: a coroutine that yields its batches (a function works too).
local producer = coroutine.create(function()
  for i = 1, 4 do coroutine.yield({ type = "int64", values = { i, i * i } }) end
end)
local exporter = ferry.async_exporter(consumer:handler(), { type = "int64" }, producer)

local tasks = {
  -- run() yields whenever the consumer has not asked for more
  coroutine.create(function() exporter:run() end),
  -- the loop yields whenever no batch has arrived yet
  coroutine.create(function()
    for batch in consumer:batches() do
      print(string.format("batch: %d squared is %d", ferry.tonumber(batch:value(0)),
                          ferry.tonumber(batch:value(1))))
      batch:close()
    end
  end),
}
local running = #tasks
while running > 0 do
  running = 0
  for _, task in ipairs(tasks) do
    if coroutine.status(task) ~= "dead" then
      assert(coroutine.resume(task))
      if coroutine.status(task) ~= "dead" then running = running + 1 end
    end
  end
end
print("producer: " .. (exporter:result() and tostring(exporter:result()) or "ended cleanly"))
consumer:close()
print("still owned by Lua exports: " .. ferry.live_allocations())
