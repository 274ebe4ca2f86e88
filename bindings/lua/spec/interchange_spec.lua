-- GPU interchange on the CPU and the simulated device: consumer-stream
-- handoff per batch (next_on, batches{ consumer_stream = }), moves between
-- devices, and DLPack export/import. The sim device runs in strict mode
-- (the default): memory read before its event was waited on holds poison,
-- so a missing wait shows up as a wrong value.
local ferry = require("ferry")
local support = require("spec.support")
local backend = ferry._backend

local function int(v) return backend.to_integer(v) end

-- Element i of buffer 1 read straight from memory, without the waits that
-- Array:value() performs.
local function peek_i32(batch, i)
  return int(backend.read(batch:buffer_address(1), "i32", i + batch:offset()))
end

local function sim_stream(n)
  return ferry.stream({ type = "int32" }, support.counter(n), { device = "sim" })
end

describe("interchange (" .. ferry.backend .. ")", function()
  local strict
  before_each(function()
    strict = ferry.sim_is_strict()
    ferry.sim_set_strict(true)
  end)
  support.guard_leaks(before_each, after_each, function() ferry.sim_set_strict(strict) end)

  describe("consumer-stream handoff", function()
    it("reads poison without a wait: the check below can fail", function()
      local stream = sim_stream(1)
      local batch = stream:next()
      assert.are_not.equal(1, peek_i32(batch, 0))
      batch:release()
      stream:release()
    end)

    it("next_on(s) orders the batch on the consumer's device stream", function()
      local sim = ferry.device("sim", 0)
      local consumer = sim:stream()
      local stream = sim_stream(2)
      local seen = {}
      while true do
        local batch = stream:next_on(consumer)
        if not batch then break end
        sim:synchronize(consumer) -- the consumer's work, after the producer's
        seen[#seen + 1] = peek_i32(batch, 1)
        batch:release()
      end
      assert.are.same({ 10, 20 }, seen)
      stream:release()
      sim:destroy_stream(consumer)
    end)

    it("next_on(nil) makes the host wait", function()
      local stream = sim_stream(1)
      local batch = stream:next_on(nil)
      assert.are.equal(1, peek_i32(batch, 0))
      batch:release()
      assert.is_nil(stream:next_on(nil))
      stream:release()
    end)

    for _, reuse in ipairs({ false, true }) do
      it("batches{ consumer_stream = s, reuse = " .. tostring(reuse) .. " } hands every batch over",
         function()
        local sim = ferry.device("sim", 0)
        local consumer = sim:stream()
        local stream = sim_stream(3)
        local seen = {}
        for batch in stream:batches{ consumer_stream = consumer, reuse = reuse } do
          sim:synchronize(consumer)
          seen[#seen + 1] = peek_i32(batch, 0) + peek_i32(batch, 1)
          if not reuse then batch:release() end
        end
        assert.are.same({ 11, 22, 33 }, seen)
        stream:release()
        sim:destroy_stream(consumer)
      end)
    end

    it("batches{ host_wait = true } waits on the host for every batch", function()
      local stream = sim_stream(2)
      local sum = 0
      for batch in stream:batches{ host_wait = true, reuse = true } do sum = sum + peek_i32(batch, 0) end
      assert.are.equal(3, sum)
      stream:release()
    end)

    it("reports a failing handoff and ends the loop", function()
      local stream = sim_stream(2)
      -- a CPU stream handle is not a stream of the sim device
      local ok, err = pcall(function()
        for _ in stream:batches{ consumer_stream = stream:pointer(), reuse = true } do end
      end)
      assert.is_false(ok)
      assert.truthy(tostring(err):find("^ferry.get_next: E"))
      stream:release()
    end)
  end)

  describe("move_to_device", function()
    it("copies to the sim device and back, consuming the source", function()
      local arr = ferry.array{ type = "int32", values = { 7, nil, 9 }, length = 3 }
      local on_sim = arr:move_to_device("sim", 0)
      assert.are.equal("ext_dev", on_sim:device_type())
      assert.are.equal(0, on_sim:device_id())
      local ok, err = pcall(arr.length, arr)
      assert.is_false(ok)
      assert.truthy(tostring(err):find("already released", 1, true))
      local back = on_sim:move_to_device("cpu")
      assert.are.equal("cpu", back:device_type())
      assert.are.same({ 7, nil, 9 }, (back:to_table()))
      assert.are.equal(1, back:null_count())
      assert.are.equal("i", back:schema():format())
      back:release()
    end)

    it("does not copy within one device", function()
      local arr = ferry.array{ type = "int64", values = { 1, 2 } }
      local before = backend.address(arr:buffer_address(1))
      local moved = arr:move_to_device("cpu", -1)
      assert.are.equal(before, backend.address(moved:buffer_address(1)))
      moved:release()
    end)

    it("moves a stream's batch, which keeps sharing the stream's schema", function()
      local stream = sim_stream(1)
      local batch = stream:next()
      local host = batch:move_to_device("cpu")
      stream:release()
      assert.are.same({ 1, 10 }, (host:to_table()))
      host:release()
    end)

    it("leaves the source untouched when the move fails", function()
      local arr = ferry.array{ type = "int32", values = { 4 } }
      local ok, err = pcall(arr.move_to_device, arr, "sim", 99)
      assert.is_false(ok)
      assert.truthy(tostring(err):find("^ferry.DeviceArray.move_to_device: E"))
      assert.are.equal(4, arr:value(0))
      arr:release()
    end)
  end)

  describe("DLPack", function()
    it("exports a CPU array zero-copy and imports it back", function()
      local arr = ferry.array{ type = "int32", values = { 1, 2, 3, 4, 5 }, offset = 2 }
      local data = backend.address(arr:buffer_address(1)) + 4 * 2
      local tensor = arr:to_dlpack()
      assert.truthy(tostring(select(2, pcall(arr.length, arr))):find("already released", 1, true))
      local info = tensor:info()
      assert.are.same({ "cpu", 0 }, { tensor:device() })
      assert.are.same({ "int32", 1 }, { tensor:dtype() })
      assert.are.same({ 5 }, tensor:shape())
      assert.are.equal(1, info.ndim)
      assert.are.equal(8, info.byte_offset)
      assert.are.equal(data, backend.address(tensor:data()))
      assert.is_true(tensor:is_read_only())
      assert.is_false(tensor:is_copied())
      local back = ferry.from_dlpack(tensor)
      assert.truthy(tostring(select(2, pcall(tensor.info, tensor))):find("handed over", 1, true))
      tensor:release() -- a no-op: the array owns the tensor now
      assert.are.equal("i", back:schema():format())
      assert.is_false(back:schema():nullable())
      assert.are.same({ 1, 2, 3, 4, 5 }, (back:to_table()))
      assert.are.equal(data, backend.address(back:buffer_address(1)) + 4 * back:offset())
      back:release() -- runs the deleter, which releases the original export
    end)

    it("keeps 64-bit values and floats", function()
      local big = ferry.backend == "luajit" and assert(load("return 1152921504606846977LL"))()
                  or math.tointeger(2 ^ 60) + 1
      local back = ferry.from_dlpack(ferry.array{ type = "int64", values = { big } }:to_dlpack())
      assert.is_true(back:value(0) == big)
      back:release()
      local floats = ferry.array{ type = "float64", values = { 0.5, -2.25 } }:to_dlpack()
      assert.are.same({ "float64", 1 }, { floats:dtype() })
      back = ferry.from_dlpack(floats:export()) -- the raw pointer: ferry owns it from here
      assert.are.same({ 0.5, -2.25 }, (back:to_table()))
      back:release()
    end)

    it("runs the deleter exactly once when the tensor is released unused", function()
      local baseline = ferry.live_allocations()
      local tensor = ferry.array{ type = "uint16", values = { 1, 2 } }:to_dlpack()
      assert.are.equal(baseline + 1, ferry.live_allocations())
      tensor:release()
      tensor:release()
      assert.are.equal(baseline, ferry.live_allocations())
    end)

    it("refuses nulls and booleans, leaving the array usable", function()
      for _, spec in ipairs({ { type = "int32", values = { 1, nil }, length = 2 },
                              { type = "bool", values = { true, false } } }) do
        local arr = ferry.array(spec)
        local ok, err = pcall(arr.to_dlpack, arr)
        assert.is_false(ok)
        assert.are.equal(ferry.errno.EINVAL, err.code)
        assert.truthy(tostring(err):find("^ferry.DeviceArray.to_dlpack: EINVAL"))
        assert.are.equal(spec.values[1], arr:value(0))
        arr:release()
      end
    end)

    it("goes through the sim device with a consumer stream", function()
      local sim = ferry.device("sim", 0)
      local consumer = sim:stream()
      local stream = sim_stream(1)
      local batch = stream:next()
      local tensor = batch:to_dlpack(consumer)
      assert.are.same({ "ext_dev", 0 }, { tensor:device() })
      sim:synchronize(consumer)
      assert.are.equal(10, int(backend.read(tensor:data(), "i32", 1)))
      local back = ferry.from_dlpack(tensor)
      assert.are.equal("ext_dev", back:device_type())
      local host = back:move_to_device("cpu")
      assert.are.same({ 1, 10 }, (host:to_table()))
      host:release()
      stream:release()
      sim:destroy_stream(consumer)
    end)

    it("names what is wrong with a bad tensor", function()
      local ok, err = pcall(ferry.from_dlpack, nil)
      assert.is_false(ok)
      assert.are.equal(ferry.errno.EINVAL, err.code)
    end)
  end)
end)
