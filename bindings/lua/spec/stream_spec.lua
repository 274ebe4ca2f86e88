-- Streams: Lua iterators exported as device streams, consumed with
-- `for batch in stream:batches()`, errors with their code and message.
local ferry = require("ferry")
local support = require("spec.support")
local raw = ferry.raw

local function counter_stream(n, opts)
  return ferry.stream({ type = "int32" }, support.counter(n), opts)
end

-- Element `index` of every batch of `stream`, each batch released as it is read.
local function values_at(stream, index)
  local seen = {}
  for batch in stream:batches() do
    seen[#seen + 1] = batch:value(index)
    batch:release()
  end
  return seen
end

describe("streams (" .. ferry.backend .. ")", function()
  support.guard_leaks(before_each, after_each)

  it("iterates batches with a for loop", function()
    local stream = counter_stream(3)
    assert.are.equal("i", stream:schema():format())
    assert.are.same({ 10, 20, 30 }, values_at(stream, 1))
    assert.is_nil(stream:next()) -- the end is sticky
    stream:release()
  end)

  it("releases the stream's schema at release, not at garbage collection", function()
    -- A C consumer of a Lua checker must see every struct back at once.
    local before = raw.ferry_live_exports()
    local stream = counter_stream(2)
    local first = stream:next()
    assert.are.equal("i", stream:schema():format())
    stream:release()
    -- A batch still alive keeps the shared schema until it goes.
    assert.are.equal("i", first:schema():format())
    first:release()
    assert.are.equal(before, raw.ferry_live_exports())
    local plain = counter_stream(1)
    for batch in plain:batches({ reuse = true }) do batch:value(1) end
    plain:release()
    assert.are.equal(before, raw.ferry_live_exports())
  end)

  it("reuses one batch object when asked", function()
    local stream = counter_stream(4)
    local objects, sum = {}, 0
    for batch in stream:batches{ reuse = true } do
      objects[batch] = true
      sum = sum + batch:value(0)
    end
    local distinct = 0
    for _ in pairs(objects) do distinct = distinct + 1 end
    assert.are.equal(1, distinct)
    assert.are.equal(10, sum)
    stream:release()
  end)

  it("produces on the simulated device", function()
    local stream = counter_stream(2, { device = "sim" })
    assert.are.equal("ext_dev", stream:device_type())
    for batch in stream:batches() do
      assert.are.equal("ext_dev", batch:device_type())
      assert.are.equal(batch:value(0) * 10, batch:value(1))
      batch:release()
    end
    stream:release()
  end)

  it("reports a producer's failure with the function, the code and the message", function()
    local i = 0
    local stream = ferry.stream({ type = "int32" }, function()
      i = i + 1
      if i == 2 then return nil, "injected failure at get_next 2", ferry.errno.EIO end
      return { type = "int32", values = { i } }
    end)
    local got = stream:next()
    assert.are.equal(1, got:value(0))
    got:release()
    local ok, err = pcall(stream.next, stream)
    assert.is_false(ok)
    assert.are.equal(ferry.errno.EIO, err.code)
    assert.are.equal("ferry.get_next: EIO: injected failure at get_next 2", tostring(err))
    assert.are.equal("injected failure at get_next 2", raw.ferry_array_stream_get_last_error(stream:pointer()))
    stream:release()
  end)

  it("turns a Lua error raised by a producer into EIO with a traceback", function()
    local stream = ferry.stream({ type = "int32" }, function() error("producer exploded") end)
    local ok, err = pcall(stream.next, stream)
    assert.is_false(ok)
    assert.are.equal(ferry.errno.EIO, err.code)
    assert.truthy(err.message:find("producer exploded", 1, true))
    assert.truthy(err.message:find("stack traceback", 1, true))
    stream:release()
  end)

  it("keeps a producer's own error code", function()
    local stream = ferry.stream(function() return nil, "no schema today", ferry.errno.ENOTSUP end,
                                function() end)
    local ok, err = pcall(stream.get_schema, stream)
    assert.is_false(ok)
    assert.are.equal("ferry.get_schema: ENOTSUP: no schema today", tostring(err))
    stream:release()
  end)

  it("releases batches still held when the stream goes, and the stream once", function()
    local stream = counter_stream(2)
    local first = stream:next()
    stream:release()
    stream:release()
    assert.are.equal(1, first:value(0)) -- a batch outlives its stream
    first:release()
    local ok, err = pcall(stream.next, stream)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("already released", 1, true))
  end)

  it("exports to a C struct and is consumed through the core", function()
    local stream = counter_stream(2)
    local c_stream = raw.ferry_array_stream_new()
    stream:export(c_stream)
    local imported = ferry.import_stream(c_stream)
    local n = 0
    for batch in imported:batches() do
      n = n + 1
      batch:release()
    end
    assert.are.equal(2, n)
    imported:release()
    raw.ferry_array_stream_free(c_stream)
  end)

  it("lets a Lua producer pull another Lua stream re-entrantly", function()
    local inner = counter_stream(3)
    local outer = ferry.stream({ type = "int32" }, function()
      local batch = inner:next()
      if not batch then return nil end
      local doubled = { type = "int32", values = { batch:value(0) * 2 } }
      batch:release()
      return doubled
    end)
    assert.are.same({ 2, 4, 6 }, values_at(outer, 0))
    outer:release()
    inner:release()
  end)

  it("streams DeviceArray objects a producer built itself", function()
    local made = { ferry.array{ type = "utf8", values = { "a" } },
                   ferry.array{ type = "utf8", values = { "b" } } }
    local i = 0
    local stream = ferry.stream({ type = "utf8" }, function()
      i = i + 1
      return made[i]
    end)
    assert.are.same({ "a", "b" }, values_at(stream, 0))
    stream:release()
  end)

  -- Issue 20, items 6/7: a Lua state is single-threaded (README, Threads),
  -- so what can interleave with a stream's reads is Lua code of the same
  -- thread: a coroutine, the loop's own body. Each use after close is a
  -- named error; the producer is released once (live_allocations, after_each).
  local function expect_closed(where, ok, err)
    assert.is_false(ok)
    assert.are.equal(ferry.Error, getmetatable(err), tostring(err))
    assert.are.equal(where, err.where)
    assert.are.equal(ferry.errno.EINVAL, err.code)
    assert.are.equal("stream already released", err.message)
  end

  for _, reuse in ipairs({ false, true }) do
    it("refuses the next step of a coroutine's loop after the stream was closed (reuse = " ..
       tostring(reuse) .. ")", function()
      local stream = counter_stream(5)
      local reader = coroutine.create(function()
        for batch in stream:batches{ reuse = reuse } do
          local v = batch:value(1)
          if not reuse then batch:release() end
          coroutine.yield(v)
        end
        return "ended"
      end)
      assert.are.same({ true, 10 }, { coroutine.resume(reader) })
      assert.are.same({ true, 20 }, { coroutine.resume(reader) })
      stream:close()
      stream:close() -- idempotent
      local ok, err = coroutine.resume(reader)
      expect_closed("ferry.get_next", ok, err)
      assert.are.equal("dead", coroutine.status(reader))
    end)
  end

  it("refuses the next step after the loop body closed the stream, and keeps the batch readable", function()
    local stream = counter_stream(3)
    local kept
    local ok, err = pcall(function()
      for batch in stream:batches() do
        kept = batch
        stream:close()
      end
    end)
    expect_closed("ferry.get_next", ok, err)
    assert.are.equal(10, kept:value(1)) -- a batch may outlive its stream
    kept:close()
    local reused = counter_stream(3)
    ok, err = pcall(function()
      for _ in reused:batches{ reuse = true } do reused:close() end
    end)
    expect_closed("ferry.get_next", ok, err)
  end)

  it("names every use after close", function()
    local stream = counter_stream(2)
    stream:next():release()
    stream:release()
    stream:release()
    stream:close()
    expect_closed("ferry.get_next", pcall(stream.next, stream))
    expect_closed("ferry.get_next", pcall(stream.next_on, stream, nil))
    expect_closed("ferry.get_schema", pcall(stream.get_schema, stream))
    expect_closed("ferry.get_schema", pcall(stream.schema, stream))
    expect_closed("ferry.get_next", pcall(stream.batches, stream))
    expect_closed("ferry.get_next", pcall(function() for _ in stream:batches() do end end))
    expect_closed("ferry.get_next", pcall(stream.batches, stream, { reuse = true }))
    expect_closed("ferry.DeviceStream.export", pcall(stream.export, stream, ferry.stream_slot().stream))
    local arr = ferry.array{ type = "int32", values = { 1 } }
    arr:close()
    arr:close()
    local ok, err = pcall(arr.value, arr, 0)
    assert.is_false(ok)
    assert.are.equal("array already released", err.message)
  end)
end)
