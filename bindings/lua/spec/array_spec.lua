-- Arrays built from Lua values, read back, exported, imported and released.
local ferry = require("ferry")
local raw = ferry.raw
local is_luajit = ferry.backend == "luajit"

local function int(v) return ferry._backend.to_integer(v) end

describe("arrays (" .. ferry.backend .. ")", function()
  local baseline
  before_each(function()
    collectgarbage()
    baseline = ferry.live_allocations()
  end)
  after_each(function()
    collectgarbage()
    collectgarbage()
    assert.are.equal(baseline, ferry.live_allocations())
  end)

  it("builds int32 with nulls and reads every element", function()
    local arr = ferry.array{ type = "int32", values = { 1, -2, nil, 2147483647 }, length = 4 }
    assert.are.equal(4, arr:length())
    assert.are.equal(1, arr:null_count())
    assert.are.equal("i", arr:schema():format())
    assert.are.equal("int32", arr:schema():name())
    assert.is_true(arr:schema():nullable())
    assert.are.equal(1, arr:value(0))
    assert.are.equal(-2, arr:value(1))
    assert.is_nil(arr:value(2))
    assert.is_false(arr:is_valid(2))
    assert.are.equal(2147483647, arr:int32(3))
    assert.are.equal("cpu", arr:device_type())
    arr:release()
  end)

  it("keeps int64 values exact", function()
    if is_luajit then
      local big = assert(load("return 1152921504606846977LL"))()
      local arr = ferry.array{ type = "int64", values = { big }, length = 1 }
      assert.is_true(arr:int64(0) == big)
      arr:release()
    else
      local big = math.tointeger(2 ^ 60) + 1
      local arr = ferry.array{ type = "int64", values = { big, math.mininteger }, length = 2 }
      assert.are.equal(big, arr:int64(0))
      assert.are.equal(math.mininteger, arr:int64(1))
      arr:release()
    end
  end)

  it("builds every scalar type", function()
    local cases = {
      { "int8", { -128, 127 } }, { "uint8", { 0, 255 } }, { "int16", { -32768, 5 } },
      { "uint16", { 65535, 1 } }, { "uint32", { 4294967295, 0 } }, { "float32", { 1.5, -0.25 } },
      { "float64", { 1e300, -3.25 } }, { "bool", { true, false } },
      { "utf8", { "héllo", "" } }, { "binary", { "\0\1\2", "x" } },
    }
    for _, case in ipairs(cases) do
      local arr = ferry.array{ type = case[1], values = case[2], length = 2 }
      assert.are.equal(case[2][1], arr:value(0), case[1])
      assert.are.equal(case[2][2], arr:value(1), case[1])
      arr:release()
    end
  end)

  it("applies an offset: logical element i sits in physical slot i + offset", function()
    local arr = ferry.array{ type = "utf8", values = { "a", nil, "ccc" }, length = 3, offset = 2 }
    assert.are.equal(2, arr:offset())
    assert.are.equal("a", arr:utf8(0))
    assert.is_nil(arr:utf8(1))
    assert.are.equal("ccc", arr:utf8(2))
    arr:release()
  end)

  it("builds lists, structs and dictionaries with children", function()
    local list = ferry.array{ type = "list", item = { type = "int32" },
                              values = { { 1, 2 }, nil, { 3 } }, length = 3 }
    assert.are.equal("+l", list:schema():format())
    assert.are.equal(1, list:n_children())
    assert.are.equal("item", list:child(0):schema():name())
    assert.are.same({ 1, 2 }, list:value(0))
    assert.is_nil(list:value(1))
    assert.are.same({ 3 }, list:value(2))
    list:release()

    local struct = ferry.array{ type = "struct", length = 2, fields = {
      { name = "a", type = "int32", values = { 10, 20 } },
      { name = "b", type = "utf8", values = { "x", "y" } } } }
    assert.are.equal(2, struct:schema():n_children())
    assert.are.same({ a = 20, b = "y" }, struct:value(1))
    struct:release()

    local dict = ferry.array{ type = "dictionary", indices = { 1, 0, nil }, length = 3,
                              dictionary = { type = "utf8", values = { "zero", "one" } } }
    assert.are.equal("i", dict:schema():format())
    assert.are.equal("u", dict:schema():dictionary():format())
    assert.are.equal(1, dict:index(0))
    assert.are.equal("one", dict:dictionary():value(dict:index(0)))
    assert.is_nil(dict:index(2))
    dict:release()
  end)

  it("carries schema metadata", function()
    local arr = ferry.array{ type = "int32", values = { 1 }, metadata = { { "unit", "m" }, { "k", "v" } } }
    local metadata = arr:schema():metadata()
    assert.are.equal(2, #metadata)
    assert.are.equal("m", metadata.map.unit)
    assert.are.same({ "k", "v" }, metadata[2])
    arr:release()
  end)

  it("uses Lua strings as buffers without copying them", function()
    local bytes = "\1\0\0\0\2\0\0\0\3\0\0\0"
    local node = { format = "i", length = 3, buffers = { false, bytes, n = 2 } }
    local a = ferry.array(node)
    local b = ferry.array(node)
    local address_a, size_a = a:buffer(1)
    local address_b = b:buffer(1)
    assert.are.equal(ferry._backend.address(address_a), ferry._backend.address(address_b))
    assert.are.equal(12, size_a)
    assert.are.equal(3, a:value(2))
    a:release()
    b:release()
  end)

  it("releases exactly once: explicit release, then use raises", function()
    local arr = ferry.array{ type = "int32", values = { 1, 2 } }
    assert.are.equal(baseline + 1, ferry.live_allocations())
    arr:release()
    arr:release()
    assert.are.equal(baseline, ferry.live_allocations())
    local ok, err = pcall(arr.length, arr)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("already released", 1, true))
  end)

  it("releases through the garbage collector", function()
    do
      local arr = ferry.array{ type = "float64", values = { 1, 2, 3 } }
      assert.are.equal(3, arr:length())
    end
    -- after_each checks the count after collectgarbage()
  end)

  if not is_luajit then
    it("releases at the end of a <close> scope (Lua 5.4)", function()
      local probe = assert(load([[
        local ferry = ...
        do
          local arr <close> = ferry.array{ type = "int32", values = { 1 } }
          assert(arr:length() == 1)
        end
        return ferry.live_allocations()
      ]]))
      assert.are.equal(baseline, probe(ferry))
    end)
  end

  it("exports into C structs and imports them back", function()
    local arr = ferry.array{ type = "int16", values = { 7, nil, 9 }, length = 3 }
    local schema_c, array_c = raw.ferry_schema_new(), raw.ferry_device_array_new()
    arr:export(schema_c, array_c)
    assert.are.equal(0, raw.ferry_device_array_is_released(array_c))
    local back = ferry.import_array(schema_c, array_c)
    assert.are.equal(1, raw.ferry_device_array_is_released(array_c))
    assert.are.equal(9, back:value(2))
    back:release()
    raw.ferry_schema_free(schema_c)
    raw.ferry_device_array_free(array_c)
  end)

  it("validates what it builds", function()
    local arr = ferry.array{ type = "utf8", values = { "a", "bb", nil }, length = 3 }
    local ok, message = arr:validate(true)
    assert.is_true(ok, message)
    arr:release()
  end)

  it("raises clear errors for bad values and types, leaking nothing", function()
    local ok, err = pcall(ferry.array, { type = "int32", values = { 1, "x" } })
    assert.is_false(ok)
    assert.truthy(tostring(err):find("element 2 must be an integer", 1, true))
    ok, err = pcall(ferry.array, { type = "int8", values = { 300 } })
    assert.truthy(tostring(err):find("does not fit in i8", 1, true))
    ok, err = pcall(ferry.array, { type = "int42", values = {} })
    assert.truthy(tostring(err):find("unknown type int42", 1, true))
    ok, err = pcall(ferry.array, { type = "int32", values = {}, device = "tpu" })
    assert.truthy(tostring(err):find("ferry.device: EINVAL", 1, true))
  end)

  it("produces on the simulated device with a sync event the reader waits on", function()
    local device = ferry.device("sim", 0)
    local before = device:live_allocations()
    local arr = ferry.array{ type = "int32", values = { 5, 6, 7 }, device = "sim" }
    assert.are.equal("ext_dev", arr:device_type())
    assert.are.equal(0, arr:device_id())
    assert.is_true(device:live_allocations() > before)
    if ferry.sim_is_strict() then
      assert.is_not_nil(arr:sync_event())
      -- Strict mode runs the copy only when somebody waits: an early raw
      -- read sees poison, the idiomatic reader waits first.
      local early = ferry._backend.read(arr:buffer_address(1), "u8", 0)
      assert.are.equal(0xA5, early)
    end
    assert.are.equal(7, arr:value(2))
    arr:release()
    assert.are.equal(before, device:live_allocations())
  end)
end)
