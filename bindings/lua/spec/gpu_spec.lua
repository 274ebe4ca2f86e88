-- The GPU API on every device there is: the sim device always, CUDA and
-- ROCm when available (test.sh runs this file again with the driver
-- emulations, whose device memory the host cannot read). Bringing arrays to
-- the host, copies and moves between devices, the consumer-stream handoff
-- per array and per batch, the user's own native stream and event, and
-- DLPack both ways. Values are always read on the host through to_host()
-- or a copy, never by dereferencing device memory.
local ferry = require("ferry")
local support = require("spec.support")

local VALUES = { 10, nil, 30, 40 }

local on_host = support.on_host

local function int32_bytes(values)
  local parts = {}
  for i = 1, #values do parts[i] = string.pack("<i4", values[i]) end
  return table.concat(parts)
end
if not string.pack then -- LuaJIT: the same little-endian bytes by hand
  int32_bytes = function(values)
    local parts = {}
    for i = 1, #values do
      local v = values[i] % 2 ^ 32
      parts[i] = string.char(v % 256, math.floor(v / 256) % 256, math.floor(v / 65536) % 256,
                             math.floor(v / 16777216) % 256)
    end
    return table.concat(parts)
  end
end

for _, entry in ipairs(support.devices()) do
  local name, device = entry.name, entry.device
  describe("GPU API on " .. name .. " (" .. ferry.backend .. ")", function()
    if not device then
      if entry.required then
        it("has the " .. name .. " device it was told to test", function()
          error(name .. " was required (FERRY_LUA_REQUIRE_GPU) but is not available: " .. entry.reason)
        end)
      else
        pending(name .. " is not available, its tests are SKIPPED: " .. entry.reason)
      end
      return
    end
    support.guard_leaks(before_each, after_each, function()
      assert.are.equal(0, device:live_allocations() - (device._baseline or 0))
    end)
    before_each(function() device._baseline = device:live_allocations() end)

    local function device_array()
      return ferry.array{ type = "int32", values = VALUES, length = 4, device = name }
    end

    it("exports to the device with a sync event and brings it to the host (to_host)", function()
      local arr = device_array()
      assert.are.equal(name == "sim" and "ext_dev" or name, arr:device_type())
      assert.is_not_nil(arr:sync_event())
      assert.are.equal(name == "sim", arr:is_host_readable())
      assert.are.same(VALUES, on_host(arr))
      assert.truthy(tostring(select(2, pcall(arr.length, arr))):find("already released", 1, true))
    end)

    if name ~= "sim" then
      it("refuses to read device memory in place, naming to_host()", function()
        local arr = device_array()
        local ok, err = pcall(arr.value, arr, 0)
        assert.is_false(ok)
        assert.are.equal(ferry.errno.ENOTSUP, err.code)
        assert.truthy(err.message:find("to_host()", 1, true))
        arr:release()
      end)
    end

    it("copies between devices (copy_to_device), the source staying", function()
      local arr = device_array()
      local on_cpu = arr:copy_to_device("cpu")
      local again = arr:copy_to_device(name, 0)
      assert.are.same(VALUES, (on_cpu:to_table()))
      assert.is_nil(on_cpu:sync_event())
      on_cpu:release()
      assert.are.same(VALUES, on_host(again))
      assert.are.same(VALUES, on_host(arr))
    end)

    it("moves a CPU array to the device and back (move_to_device)", function()
      local arr = ferry.array{ type = "utf8", values = { "a", nil, "ccc" }, length = 3 }
      local there = arr:move_to_device(name, 0)
      assert.are.equal(0, there:device_id())
      local back = there:move_to_device("cpu")
      assert.are.same({ "a", nil, "ccc" }, (back:to_table()))
      back:release()
    end)

    it("hands an array to a consumer stream (wait) and reads it after that stream", function()
      local arr = device_array()
      local consumer = device:stream()
      arr:wait(consumer) -- the consumer's stream waits; the host does not
      device:synchronize(consumer)
      local address, size = arr:buffer(1)
      assert.are.equal(16, size)
      local bytes = device:copy_to_host(address, size)
      assert.are.equal(int32_bytes({ 10, 0, 30, 40 }):sub(9), bytes:sub(9))
      arr:release()
      device:destroy_stream(consumer)
    end)

    it("hands every batch of a stream to a consumer stream (next_on, batches)", function()
      local n = 0
      local stream = ferry.stream({ type = "int32" }, function()
        n = n + 1
        if n <= 3 then return { type = "int32", values = { n, n * 10 } } end
      end, { device = name })
      local consumer = device:stream()
      assert.are.same({ 1, 10 }, on_host(stream:next_on(consumer)))
      local seen = {}
      for batch in stream:batches{ consumer_stream = consumer, reuse = true } do
        seen[#seen + 1] = on_host(batch:copy_to_device("cpu"))[2]
      end
      assert.are.same({ 20, 30 }, seen)
      stream:release()
      device:destroy_stream(consumer)
    end)

    it("exports data the user produced on their own native stream (an event recorded on it)", function()
      local user_stream = device:stream()
      local memory = device:allocate(16)
      local bytes = int32_bytes({ 1, 2, 3, 4 })
      device:copy_from_host(memory, bytes, user_stream) -- queued on the user's stream
      local arr = ferry.array{ format = "i", length = 4, name = "x",
                               buffers = { false, { device_pointer = memory, owned = true }, n = 2 },
                               device = name, stream = user_stream }
      assert.is_not_nil(arr:sync_event())
      assert.are.same({ 1, 2, 3, 4 }, on_host(arr)) -- waits on the recorded event
      device:destroy_stream(user_stream) -- the memory went with the array (owned)
    end)

    it("uses the user's own native event as the sync event, destroyed after release", function()
      local user_stream, event = device:stream(), device:create_event()
      local memory = device:allocate(16)
      device:copy_from_host(memory, int32_bytes({ 5, 6, 7, 8 }), user_stream)
      device:record_event(event, user_stream)
      local destroyed = 0
      local arr = ferry.array{ format = "i", length = 4, name = "x",
                               buffers = { false, { device_pointer = memory }, n = 2 },
                               device = name, sync_event = event,
                               event_destroy = function(e)
                                 destroyed = destroyed + 1
                                 device:destroy_event(e)
                               end }
      assert.are.equal(ferry._backend.address(event), ferry._backend.address(arr:sync_event()))
      assert.are.same({ 5, 6, 7, 8 }, on_host(arr))
      assert.are.equal(1, destroyed)
      device:free(memory) -- borrowed by the export: the user frees it after release
      -- and an event ferry destroys itself
      local other = ferry.array{ type = "int32", values = { 9 }, device = name, stream = user_stream }
      local ferry_event = device:create_event()
      device:record_event(ferry_event, user_stream) -- after the copy queued on user_stream
      local with_event = ferry.array{ format = "i", length = 1, name = "y",
                                      buffers = { false, { device_pointer = other:buffer_address(1) }, n = 2 },
                                      device = name, sync_event = ferry_event, event_destroy = "ferry" }
      assert.are.same({ 9 }, on_host(with_event))
      other:release()
      device:destroy_stream(user_stream)
    end)

    it("exports to DLPack for a consumer stream and imports it back", function()
      local arr = ferry.array{ type = "int64", values = { 3, 4, 5 }, device = name }
      local consumer = device:stream()
      local tensor = arr:to_dlpack(consumer)
      local device_name, device_id = tensor:device()
      assert.are.equal(name == "sim" and "ext_dev" or name, device_name)
      assert.are.equal(0, device_id)
      assert.are.same({ "int64", 1 }, { tensor:dtype() })
      assert.are.same({ 3 }, tensor:shape())
      local back = ferry.from_dlpack(tensor)
      device:synchronize(consumer)
      local values = on_host(back)
      for i = 1, 3 do values[i] = ferry._backend.to_integer(values[i]) end
      assert.are.same({ 3, 4, 5 }, values)
      device:destroy_stream(consumer)
    end)

    it("allocates and frees device memory, and lists the backends", function()
      local before = device:live_allocations()
      local memory = device:allocate(64)
      assert.are.equal(before + 1, device:live_allocations())
      device:copy_from_host(memory, "0123456789")
      assert.are.equal("0123456789", device:copy_to_host(memory, 10))
      device:free(memory)
      assert.are.equal(before, device:live_allocations())
      local names = {}
      for _, b in ipairs(ferry.backends()) do names[b.name] = b.available end
      assert.is_true(names[name == "sim" and "sim" or name])
    end)
  end)
end
