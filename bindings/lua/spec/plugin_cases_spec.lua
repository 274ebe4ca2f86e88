-- The plugin's Lua side (plugin/ferry_it.lua): case parser, value formula,
-- export and check. It needs Lua 5.4 integers, so LuaJIT skips it.
local ferry = require("ferry")
local support = require("spec.support")
local raw = ferry.raw

if support.skipped_unless("lua5.4", describe, pending, "plugin cases",
                          "plugin/ferry_it.lua uses Lua 5.4 integer operators") then
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

  -- cases.md: with nulls=0 a validity buffer may still be there (pyarrow
  -- keeps one on slices); every bit in range must then be set (issue 11).
  for _, c in ipairs({ { "int32:nulls=0:offset=3:length=9", true }, { "utf8:length=5", true },
                       { "int32:length=12", false }, { "struct_int32_utf8:length=4", false } }) do
    local spec, all_set = c[1], c[2]
    it("judges " .. spec .. " with a validity bitmap " ..
       (all_set and "of set bits: accepted" or "with a bit unset: refused"), function()
      local case = it_cases.parse(spec)
      local node = it_cases.node(case, case.seed)
      local bits = {}
      for i = 1, case.offset + case.length do bits[i] = true end
      if not all_set then bits[case.offset + 3] = false end -- element 2
      node.buffers[1] = { kind = "bits", values = bits, n = case.offset + case.length }
      local slots = ferry.array_slots()
      ferry.export_array(node, slots.array, slots.schema)
      local ok, err = pcall(it_cases.check_array, spec, slots.schema, slots.array)
      if all_set then
        assert.is_true(ok, tostring(err))
      else
        assert.is_false(ok)
        assert.truthy(tostring(err):find("nulls=0, but the validity bitmap has element 2 unset", 1, true),
                      tostring(err))
      end
      assert.is_true(ferry._backend.is_released(slots.array))
      slots:free()
    end)
  end

  it("injects stream failures where the case says", function()
    local stream = raw.ferry_array_stream_new()
    it_cases.export_stream("int32:fail=get_next@3", stream)
    it_cases.check_stream("int32:fail=get_next@3", stream)
    assert.are.equal(1, raw.ferry_array_stream_is_released(stream))
    raw.ferry_array_stream_free(stream)
  end)
end)
