-- The plugin's Lua side (plugin/ferry_it.lua): case parser, value formula,
-- export and check. It needs Lua 5.4 integers, so LuaJIT skips it.
local ferry = require("ferry")
local raw = ferry.raw

if ferry.backend ~= "lua5.4" then
  describe("plugin cases", function()
    pending("skipped on " .. ferry.backend .. ": plugin/ferry_it.lua uses Lua 5.4 integer operators")
  end)
  return
end

local it_cases = require("ferry_it")

describe("plugin cases (lua5.4)", function()
  it("parses defaults and every key", function()
    local case = it_cases.parse("int32")
    assert.are.same({ 16, 0, 1, 0, "cpu", 3 },
                    { case.length, case.nulls, case.seed, case.offset, case.device, case.batches })
    case = it_cases.parse("utf8:length=5:nulls=2:seed=4294967295:offset=3:device=sim:batches=7:fail=get_next@2")
    assert.are.same({ 5, 2, 4294967295, 3, "sim", 7, "get_next", 2 },
                    { case.length, case.nulls, case.seed, case.offset, case.device, case.batches,
                      case.fail, case.fail_at })
  end)

  it("rejects bad cases naming the offending part", function()
    local bad = { { "int33", "int33" }, { "int32:length=-1", "negative length" },
                  { "int32:length=1x", "1x" }, { "int32:colour=red", "colour" },
                  { "int32:seed=4294967296", "seed" }, { "int32:fail=now", "now" },
                  { "int32:device=tpu", "tpu" }, { "int32:length", "length" } }
    for _, pair in ipairs(bad) do
      local ok, err = pcall(it_cases.parse, pair[1])
      assert.is_false(ok, pair[1])
      assert.are.equal(ferry.errno.EINVAL, err.code)
      assert.truthy(err.message:find(pair[2], 1, true), pair[1] .. " -> " .. err.message)
    end
  end)

  it("computes the formula with wrapping unsigned 32-bit arithmetic", function()
    -- u(1, 0) = 2654435761; u(1, 1) = 2654435761 + 40503 = 2654476264
    assert.are.equal(2654435761, it_cases.u(1, 0))
    assert.are.equal(2654476264, it_cases.u(1, 1))
    -- seed 4294967295 = -1 mod 2^32: u = 2^32 - 2654435761 = 1640531535
    assert.are.equal(1640531535, it_cases.u(4294967295, 0))
    assert.are.equal(2654435761 - 4294967296, it_cases.value("int32", 1, 0))
    assert.are.equal(2654435761 % 256, it_cases.value("uint8", 1, 0))
    -- (u(0) << 32) | u(1), written with 5.4 operators inside load() so that
    -- LuaJIT can still parse this file
    assert.are.equal(assert(load("return (2654435761 << 32) | 2654476264"))(),
                     it_cases.value("int64", 1, 0))
    assert.are.equal("", it_cases.value("utf8", 1, 0))
    assert.are.equal(tostring(2654476264 % 100000), it_cases.value("utf8", 1, 1))
  end)

  it("exports a case and checks it back, releasing everything", function()
    local before = ferry.live_allocations()
    for _, spec in ipairs({ "int64:nulls=3:offset=2", "list_int32:nulls=2", "dict_int32_utf8:device=sim" }) do
      local schema, arr = raw.ferry_schema_new(), raw.ferry_device_array_new()
      it_cases.export_array(spec, schema, arr)
      it_cases.check_array(spec, schema, arr)
      assert.are.equal(1, raw.ferry_device_array_is_released(arr))
      raw.ferry_schema_free(schema)
      raw.ferry_device_array_free(arr)
    end
    assert.are.equal(before, ferry.live_allocations())
  end)

  it("detects a wrong value and still releases", function()
    local schema, arr = raw.ferry_schema_new(), raw.ferry_device_array_new()
    it_cases.export_array("int32:seed=3", schema, arr)
    local ok, err = pcall(it_cases.check_array, "int32:seed=4", schema, arr)
    assert.is_false(ok)
    assert.truthy(err.message:find("element 0 is", 1, true))
    assert.are.equal(1, raw.ferry_device_array_is_released(arr))
    raw.ferry_schema_free(schema)
    raw.ferry_device_array_free(arr)
  end)

  it("injects stream failures where the case says", function()
    local stream = raw.ferry_array_stream_new()
    it_cases.export_stream("int32:fail=get_next@3", stream)
    it_cases.check_stream("int32:fail=get_next@3", stream)
    assert.are.equal(1, raw.ferry_array_stream_is_released(stream))
    raw.ferry_array_stream_free(stream)
  end)
end)
