-- The capability table (docs/features.md), Lua's column: one test per
-- capability this binding has, named feature_<id>, calling it for real.
-- scripts/check_features.sh matches these names against the table's `yes`
-- cells. Device capabilities run on every device there is (the sim device;
-- CUDA and ROCm when available: test.sh runs this file on the emulations).
-- Lua has no Arrow library to bridge to, so arrow_array_interop and
-- arrow_stream_bridge are `no` cells and have no test here.
local ferry = require("ferry")
local support = require("spec.support")
local backend = ferry._backend

local function devices()
  local out = {}
  for _, entry in ipairs(support.devices()) do
    if entry.device then out[#out + 1] = entry end
  end
  return out
end

local on_host = support.on_host

-- A test (`it`) that runs body(d) on every device of devices().
local function device_it(name, body)
  it(name, function()
    for _, d in ipairs(devices()) do body(d) end
  end)
end

describe("features (" .. ferry.backend .. ")", function()
  support.guard_leaks(before_each, after_each)

  it("feature_export_array", function()
    -- zero-copy from a Lua string; the consumer's release drops the anchor
    local before = ferry.live_allocations()
    local slots = ferry.array_slots()
    local s, a = slots.schema, slots.array
    local bytes = "\1\0\0\0\2\0\0\0"
    ferry.export_array({ format = "i", name = "x", length = 2, buffers = { false, bytes, n = 2 } }, a, s)
    assert.are.equal(before + 1, ferry.live_allocations()) -- the string is anchored
    local arr = ferry.import(a, s)
    local k = backend.keeper_new()
    assert.are.equal(backend.address(backend.keeper_string(k, bytes)),
                     backend.address(arr:buffer_address(1))) -- the string's own bytes
    backend.keeper_free(k)
    assert.are.same({ 1, 2 }, (arr:to_table()))
    arr:release() -- the release hook runs back into the binding, once
    assert.are.equal(before, ferry.live_allocations())
    slots:free()
  end)

  it("feature_import_array", function()
    local produced = ferry.array{ type = "int32", values = { 5, nil, 7 }, length = 3 }
    local slots = ferry.array_slots()
    local s, a = slots.schema, slots.array
    produced:export(a, s)
    local arr = ferry.import(a, s) -- takes ownership, validates
    assert.is_true(backend.is_released(a))
    assert.are.same({ 5, nil, 7 }, (arr:to_table()))
    assert.are.equal(1, arr:null_count())
    arr:release()
    slots:free()
  end)

  it("feature_export_stream", function()
    local slot = ferry.stream_slot()
    ferry.export_stream_to(slot.stream, { type = "int64" }, support.batches_of("int64", { { 1 }, { 2 } }))
    local stream = ferry.import_stream(slot.stream)
    local got = {}
    for batch in stream:batches() do
      got[#got + 1] = backend.to_integer(batch:value(0))
      batch:release()
    end
    assert.are.same({ 1, 2 }, got)
    stream:release()
    slot:free()
  end)

  it("feature_import_stream", function()
    local stream = ferry.stream_from_arrays({ { type = "utf8", values = { "a" } },
                                              { type = "utf8", values = { "b", "c" } } })
    local slot = ferry.stream_slot()
    stream:export(slot.stream)
    local imported = ferry.import_stream(slot.stream)
    local got = {}
    for batch in imported:batches{ reuse = true } do
      for j = 0, batch:length() - 1 do got[#got + 1] = batch:value(j) end
    end
    assert.are.same({ "a", "b", "c" }, got)
    imported:release()
    slot:free()
  end)

  device_it("feature_to_host", function(d)
    local arr = ferry.array{ type = "float64", values = { 1.5, 2.5 }, device = d.name }
    assert.are.same({ 1.5, 2.5 }, on_host(arr), d.name)
  end)

  device_it("feature_copy_to_device", function(d)
    local arr = ferry.array{ type = "int16", values = { 3, 4 } }
    local copy = arr:copy_to_device(d.name, 0)
    assert.are.same({ 3, 4 }, (arr:to_table()), d.name) -- the source stays
    arr:release()
    assert.are.same({ 3, 4 }, on_host(copy), d.name)
  end)

  device_it("feature_move_to_device", function(d)
    local arr = ferry.array{ type = "uint8", values = { 250, 251 } }
    local moved = arr:move_to_device(d.name, 0)
    assert.is_false((pcall(arr.length, arr)), "the source is consumed")
    assert.are.equal(0, moved:device_id())
    assert.are.same({ 250, 251 }, on_host(moved), d.name)
  end)

  device_it("feature_consumer_stream_array", function(d)
    local arr = ferry.array{ type = "int32", values = { 1, 2, 3 }, device = d.name }
    local consumer = d.device:stream()
    arr:wait(consumer) -- the consumer's stream waits on the sync event
    d.device:synchronize(consumer)
    local address, size = arr:buffer(1)
    assert.are.equal("\1\0\0\0\2\0\0\0\3\0\0\0", d.device:copy_to_host(address, size), d.name)
    arr:release()
    d.device:destroy_stream(consumer)
  end)

  device_it("feature_consumer_stream_batch", function(d)
    local stream = ferry.stream({ type = "int32" }, support.batches_of("int32", { { 1 }, { 2 } }),
                                { device = d.name })
    local consumer = d.device:stream()
    local got = {}
    for batch in stream:batches{ consumer_stream = consumer } do
      d.device:synchronize(consumer)
      got[#got + 1] = on_host(batch)[1]
    end
    assert.are.same({ 1, 2 }, got, d.name)
    stream:release()
    d.device:destroy_stream(consumer)
  end)

  device_it("feature_wrap_native_stream", function(d)
    local user_stream = d.device:stream()
    local memory = d.device:allocate(8)
    d.device:copy_from_host(memory, "\7\0\0\0\8\0\0\0", user_stream)
    local arr = ferry.array{ format = "i", name = "x", length = 2, device = d.name,
                             stream = user_stream, -- ferry records its event on this stream
                             buffers = { false, { device_pointer = memory, owned = true }, n = 2 } }
    assert.is_not_nil(arr:sync_event())
    assert.are.same({ 7, 8 }, on_host(arr), d.name)
    d.device:destroy_stream(user_stream)
  end)

  device_it("feature_wrap_native_event", function(d)
    local user_stream, event = d.device:stream(), d.device:create_event()
    local memory = d.device:allocate(4)
    d.device:copy_from_host(memory, "\9\0\0\0", user_stream)
    d.device:record_event(event, user_stream)
    local destroyed = false
    local arr = ferry.array{ format = "i", name = "x", length = 1, device = d.name,
                             sync_event = event,
                             event_destroy = function(e) destroyed = true; d.device:destroy_event(e) end,
                             buffers = { false, { device_pointer = memory, owned = true }, n = 2 } }
    assert.are.equal(backend.address(event), backend.address(arr:sync_event()))
    assert.are.same({ 9 }, on_host(arr), d.name)
    assert.is_true(destroyed)
    d.device:destroy_stream(user_stream)
  end)

  device_it("feature_dlpack_export", function(d)
    local arr = ferry.array{ type = "float32", values = { 0.5, 1.5 }, device = d.name }
    local tensor = arr:to_dlpack(nil) -- the host waits on the sync event
    assert.are.same({ "float32", 1 }, { tensor:dtype() })
    assert.are.same({ 2 }, tensor:shape())
    assert.are.equal(d.name == "sim" and "ext_dev" or d.name, (tensor:device()))
    assert.is_true(tensor:is_read_only())
    tensor:release()
  end)

  device_it("feature_dlpack_import", function(d)
    local tensor = ferry.array{ type = "int8", values = { -1, 2 }, device = d.name }:to_dlpack(nil)
    local raw_tensor = tensor:export() -- as another library would hand it over
    local arr = ferry.from_dlpack(raw_tensor)
    assert.is_false(arr:schema():nullable())
    assert.are.same({ -1, 2 }, on_host(arr), d.name)
  end)

  it("feature_validate", function()
    local arr = ferry.array{ type = "utf8", values = { "ok", "fine" } }
    assert.are.same({ true, nil, {} }, { arr:validate(false) })
    assert.are.same({ true, nil, {} }, { arr:validate(true) })
    arr:release()
    -- invalid UTF-8: structure is fine (DEFAULT), content is not (FULL)
    local bad = ferry.array{ format = "u", name = "s", length = 1,
                             buffers = { false, { kind = "i32", values = { 0, 1 }, n = 2 }, "\255", n = 3 } }
    assert.is_true((bad:validate(false)))
    local ok, message, findings = bad:validate(true)
    assert.is_false(ok)
    assert.truthy(message:find("not valid UTF-8", 1, true), message)
    assert.are.equal("utf8", findings[1].rule)
    assert.are.equal("root", findings[1].where)
    bad:release()
  end)

  it("feature_devices", function()
    local names = {}
    for _, b in ipairs(ferry.backends()) do names[b.name] = b end
    assert.is_true(names.cpu.available)
    assert.is_true(names.sim.available)
    for _, d in ipairs(devices()) do
      local before = d.device:live_allocations()
      local memory = d.device:allocate(32)
      assert.are.equal(before + 1, d.device:live_allocations())
      d.device:free(memory)
      assert.are.equal(before, d.device:live_allocations())
    end
  end)
  -- A Lua producer pushes through the async interface: an exporter over a
  -- producer function, driven in a coroutine, into a consumer's handler.
  it("feature_export_async", function()
    local consumer = ferry.async_consumer{ window = 2 }
    local exporter = ferry.async_exporter(consumer:handler(), { type = "int32" },
                                          support.batches_of("int32", { { 1 }, { 2 }, { 3 } }))
    local got = {}
    local producer = coroutine.create(function() exporter:run() end)
    local reader = coroutine.create(function()
      for batch in consumer:batches() do
        got[#got + 1] = batch:value(0)
        batch:close()
      end
    end)
    support.run_all(producer, reader)
    assert.are.same({ 1, 2, 3 }, got)
    assert.is_nil(exporter:result())
    support.close_released(consumer)
  end)

  -- A Lua consumer of an async producer: poll() takes a batch without
  -- waiting (false when none is ready; fd() is that readiness for event
  -- loops); the other batches arrive through
  -- a coroutine-friendly iterator (a Lua producer here, as a coroutine of the
  -- same thread; spec/async_spec.lua has producers on ferry's own threads).
  it("feature_import_async", function()
    local consumer = ferry.async_consumer{ window = 1 }
    local exporter = ferry.async_exporter(consumer:handler(), { type = "utf8" },
                                          support.batches_of("utf8", { { "a" }, { "b", "c" } }))
    assert.is_true(consumer:fd() >= 0)
    assert.is_false(consumer:poll())
    local producer = coroutine.create(function() exporter:run() end)
    assert(coroutine.resume(producer)) -- sends the schema and the first batch
    local first = consumer:poll() -- ready now: poll takes it without waiting
    assert.are.equal("a", first:value(0))
    first:close()
    local got = { "a" }
    local reader = coroutine.create(function()
      for batch in consumer:batches() do
        for j = 0, batch:length() - 1 do got[#got + 1] = batch:value(j) end
        batch:close()
      end
    end)
    support.run_all(reader, producer)
    assert.are.same({ "a", "b", "c" }, got)
    assert.is_true(consumer:wait_released(1000))
    consumer:close()
  end)
end)
