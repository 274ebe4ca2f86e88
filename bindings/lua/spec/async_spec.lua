-- Async device streams (issue 22): ferry.async_consumer and
-- ferry.async_exporter over the core's FerryAsyncConsumer and
-- FerryAsyncSender, on both backends. Producers on foreign threads (ferry's
-- own, pulling a C stream of tests/hostile) have their callbacks queued in
-- C and delivered on the Lua thread; in one Lua thread a producer and a
-- consumer run as coroutines that yield where they would wait.
local ferry = require("ferry")
local support = require("spec.support")
local raw = ferry.raw

-- the producers of tests/hostile (spec/hostile_lib.lua)
local hostile = require("spec.hostile_lib")

local EIO, ECANCELED = ferry.errno.EIO, ferry.errno.ECANCELED

-- A C producer on a thread ferry starts: the hostile stream (int32 batches
-- [10, 20, 30, 40], `good` of them, then case `batch`) pushed to `consumer`.
local function foreign_producer(consumer, batch, good)
  local slot = ferry.stream_slot()
  assert.are.equal(0, hostile.stream("good_int32", batch, good, slot.stream))
  local code, message = raw.ferry_async_export_stream(slot.stream, consumer:handler(), 0)
  assert.are.equal(0, code, message)
  slot:free()
end

local run_all = support.run_all

local counter = support.counter

describe("async device streams (" .. ferry.backend .. ")", function()
  support.guard_leaks(before_each, after_each, function()
    assert.are.equal(0, hostile.live(), "hostile producer not released")
  end)

  for _, window in ipairs({ 1, 3 }) do
    it("runs a Lua exporter and a Lua consumer as coroutines of one thread (window " .. window .. ")", function()
      local consumer = ferry.async_consumer{ window = window }
      local exporter = ferry.async_exporter(consumer:handler(), { type = "int32" }, counter(5))
      assert.is_false(consumer:poll()) -- nothing requested yet was sent
      local seen = {}
      run_all(coroutine.create(function() exporter:run() end),
              coroutine.create(function()
                for batch in consumer:batches() do
                  seen[#seen + 1] = batch:value(1)
                  batch:close()
                end
              end))
      assert.are.same({ 10, 20, 30, 40, 50 }, seen)
      assert.is_nil(exporter:result())
      assert.is_true(exporter:done())
      assert.is_nil(consumer:next()) -- the end is kept
      assert.is_true(consumer:wait_released(-1))
      assert.are.equal("i", consumer:schema():format())
      consumer:close()
    end)
  end

  it("exports from a coroutine that yields its batches", function()
    local consumer = ferry.async_consumer{ window = 2 }
    local producer = coroutine.create(function()
      for i = 1, 3 do coroutine.yield(ferry.array{ type = "utf8", values = { "b" .. i } }) end
    end)
    local exporter = ferry.async_exporter(consumer:handler(), { type = "utf8" }, producer)
    local seen = {}
    run_all(coroutine.create(function() exporter:run() end),
            coroutine.create(function()
              for batch in consumer:batches() do seen[#seen + 1] = batch:value(0); batch:close() end
            end))
    assert.are.same({ "b1", "b2", "b3" }, seen)
    consumer:close()
  end)

  it("delivers a producer's batches from ferry's thread to a next() that blocks in C", function()
    local consumer = ferry.async_consumer{ window = 2 }
    foreign_producer(consumer, "", 4)
    local n = 0
    for batch in consumer:batches() do -- not in a coroutine: blocks until each comes
      assert.are.equal(40, batch:value(3))
      batch:close()
      n = n + 1
    end
    assert.are.equal(4, n)
    support.close_released(consumer)
  end)

  it("wakes an event loop through fd()", function()
    local consumer = ferry.async_consumer{ window = 1 }
    local fd = consumer:fd()
    assert.is_true(fd >= 0)
    foreign_producer(consumer, "", 3)
    local n, ended = 0, false
    while not ended do
      assert.are.equal(1, hostile.fd_readable(fd, -1)) -- the loop's wait
      local batch = consumer:poll(0)
      if batch == nil then
        ended = true
      elseif batch then
        assert.are.equal(10, batch:value(0))
        batch:close()
        n = n + 1
      end
    end
    assert.are.equal(3, n)
    support.close_released(consumer)
  end)

  it("raises the producer's error, the same on every later read", function()
    local before = hostile.calls_after_failure()
    local consumer = ferry.async_consumer{ window = 4 }
    foreign_producer(consumer, "fail_then_good", 2)
    consumer:next():close()
    consumer:next():close()
    local ok, err = pcall(consumer.next, consumer)
    assert.is_false(ok)
    assert.are.equal(ferry.Error, getmetatable(err), tostring(err))
    assert.are.equal(EIO, err.code)
    assert.truthy(err.message:find("injected failure at get_next 3", 1, true), err.message)
    for _ = 1, 2 do
      assert.are.equal(err, select(2, pcall(consumer.next, consumer)))
      assert.are.equal(err, select(2, pcall(consumer.poll, consumer, 0)))
    end
    assert.is_true(consumer:wait_released(-1))
    assert.are.equal(before, hostile.calls_after_failure())
    consumer:close()
  end)

  it("passes a Lua producer's failure to the consumer, and a consumer's cancel to the producer", function()
    local consumer = ferry.async_consumer{ window = 1 }
    local i = 0
    local exporter = ferry.async_exporter(consumer:handler(), { type = "int32" }, function()
      i = i + 1
      if i == 1 then return { type = "int32", values = { 1 } } end
      return nil, "the producer broke", EIO
    end)
    local err
    run_all(coroutine.create(function() exporter:run() end),
            coroutine.create(function()
              consumer:next():close()
              err = select(2, pcall(consumer.next, consumer))
            end))
    assert.are.equal(EIO, err.code)
    assert.are.equal("the producer broke", err.message)
    assert.are.equal("the producer broke", exporter:result().message)
    consumer:close()

    local cancelling = ferry.async_consumer{ window = 1 }
    local endless = ferry.async_exporter(cancelling:handler(), { type = "int32" }, function()
      return { type = "int32", values = { 7 } }
    end)
    run_all(coroutine.create(function() endless:run() end),
            coroutine.create(function()
              assert.are.equal(7, cancelling:next():value(0))
              cancelling:cancel()
              local ok, e = pcall(cancelling.next, cancelling)
              assert.is_false(ok)
              assert.are.equal(ECANCELED, e.code)
            end))
    assert.is_true(endless:done())
    assert.are.equal(ECANCELED, endless:result().code)
    support.close_released(cancelling)
  end)

  it("ends the stream when the exporter is closed first, and names every use after close", function()
    local consumer = ferry.async_consumer{ window = 1 }
    local exporter = ferry.async_exporter(consumer:handler(), { type = "int32" }, counter(10))
    exporter:close()
    exporter:close()
    local ok, err = pcall(consumer.next, consumer)
    assert.is_false(ok)
    assert.are.equal(ECANCELED, err.code)
    assert.are.equal("the Lua exporter was closed before the end", err.message)
    consumer:close()
    consumer:close()
    for _, method in ipairs({ "next", "poll", "fd", "handler", "cancel", "batches" }) do
      local closed, e = pcall(consumer[method], consumer)
      assert.is_false(closed)
      assert.are.equal("async consumer already closed", e.message)
    end
  end)
end)
