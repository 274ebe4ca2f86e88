-- Arrays built from Lua values, read back, exported, imported and released.
local ferry = require("ferry")
local support = require("spec.support")
local raw = ferry.raw
local is_luajit = ferry.backend == "luajit"

local function int(v) return ferry._backend.to_integer(v) end

describe("arrays (" .. ferry.backend .. ")", function()
  local baseline = support.guard_leaks(before_each, after_each)

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
    assert.are.equal(baseline() + 1, ferry.live_allocations())
    arr:release()
    arr:release()
    assert.are.equal(baseline(), ferry.live_allocations())
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
      assert.are.equal(baseline(), probe(ferry))
    end)
  end

  it("exports into C structs and imports them back", function()
    local arr = ferry.array{ type = "int16", values = { 7, nil, 9 }, length = 3 }
    local schema_c, array_c = raw.ferry_schema_new(), raw.ferry_device_array_new()
    arr:export(array_c, schema_c)
    assert.are.equal(0, raw.ferry_device_array_is_released(array_c))
    local back = ferry.import(array_c, schema_c)
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

  -- Issue 20, item 4/13: value() covers every layout the validator accepts
  -- (the same on both backends: these readers are shared Lua over the
  -- backends' checked helpers).
  local function expect_error(err, where, code, text)
    assert.are.equal(ferry.Error, getmetatable(err), tostring(err))
    assert.are.equal(where, err.where, tostring(err))
    assert.are.equal(code, err.code, tostring(err))
    if text then assert.truthy(err.message:find(text, 1, true), err.message) end
  end
  local i32 = function(values) return { kind = "i32", values = values } end
  local function ints(name, values)
    return { format = "i", name = name, length = #values, buffers = { false, i32(values) } }
  end
  local function strings(name, offsets, data)
    return { format = "u", name = name, length = #offsets - 1, buffers = { false, i32(offsets), data } }
  end
  local function plain(v) -- int64 cdata (LuaJIT) as a number, tables recursively
    if type(v) == "table" then
      local out = {}
      for k, x in pairs(v) do out[k] = plain(x) end
      return out
    end
    if type(v) == "cdata" then return tonumber(v) end
    return v
  end
  local layouts = {
    { "null", { format = "n", length = 3, buffers = {} }, { nil, nil, nil }, 3 },
    { "float16", { format = "e", length = 4, buffers = { false, { kind = "u16", values = { 0x3C00, 0xC000, 0x3555, 0x7C00 } } } },
      { 1, -2, 0.333251953125, math.huge } },
    { "fixed_size_binary", { format = "w:3", length = 2, buffers = { false, "abcdef" } }, { "abc", "def" } },
    { "decimal128", { format = "d:5,2", length = 2, buffers = { false, { kind = "i64", values = { 12345, 0, -1, -1 } } } },
      { "123.45", "-0.01" } },
    { "decimal64", { format = "d:18,3,64", length = 2, buffers = { false, { kind = "i64", values = { 7, -123456 } } } },
      { "0.007", "-123.456" } },
    { "decimal32", { format = "d:9,0,32", length = 1, buffers = { false, i32({ -42 }) } }, { "-42" } },
    { "decimal256", { format = "d:40,1,256", length = 1, buffers = { false, { kind = "i64", values = { 0, 1, 0, 0 } } } },
      { "1844674407370955161.6" } },
    { "interval_day_time", { format = "tiD", length = 1, buffers = { false, i32({ 3, 500 }) } },
      { { days = 3, milliseconds = 500 } } },
    { "interval_month_day_nano", { format = "tin", length = 1, buffers = { false, i32({ 1, 2, 7, 0 }) } },
      { { months = 1, days = 2, nanoseconds = 7 } } },
    { "fixed_size_list", { format = "+w:2", length = 2, buffers = { false }, children = { ints("item", { 1, 2, 3, 4 }) } },
      { { 1, 2 }, { 3, 4 } } },
    { "list_view", { format = "+vl", length = 2, buffers = { false, i32({ 2, 0 }), i32({ 2, 1 }) },
                     children = { ints("item", { 1, 2, 3, 4 }) } }, { { 3, 4 }, { 1 } } },
    { "large_list_view", { format = "+vL", length = 1, buffers = { false, { kind = "i64", values = { 1 } }, { kind = "i64", values = { 3 } } },
                           children = { ints("item", { 1, 2, 3, 4 }) } }, { { 2, 3, 4 } } },
    { "map", { format = "+m", length = 1, buffers = { false, i32({ 0, 2 }) }, children = {
        { format = "+s", name = "entries", flags = 0, length = 2, buffers = { false }, children = {
          strings("key", { 0, 1, 2 }, "ab"), ints("value", { 5, 6 }) } } } },
      { { { key = "a", value = 5 }, { key = "b", value = 6 } } } },
    { "run_end_encoded", { format = "+r", length = 5, buffers = {}, children = {
        ints("run_ends", { 2, 5 }), strings("values", { 0, 1, 3 }, "xyz") } },
      { "x", "x", "yz", "yz", "yz" } },
    { "sparse_union", { format = "+us:3,7", length = 3, buffers = { { kind = "i8", values = { 3, 7, 3 } } }, children = {
        ints("a", { 1, 2, 3 }), strings("b", { 0, 1, 2, 3 }, "pqr") } }, { 1, "q", 3 } },
    { "dense_union", { format = "+ud:0,1", length = 3, buffers = { { kind = "i8", values = { 0, 1, 0 } }, i32({ 0, 0, 1 }) },
        children = { ints("a", { 10, 20 }), strings("b", { 0, 2 }, "hi") } }, { 10, "hi", 20 } },
    { "utf8_view", { format = "vu", length = 2, buffers = { false, i32({ 3, 0x00636261, 0, 0, 14, 0x6c6c6568, 0, 0 }),
                     "hello world!!!", { kind = "i64", values = { 14 } } } }, { "abc", "hello world!!!" } },
  }
  for _, case in ipairs(layouts) do
    it("reads " .. case[1] .. " with value() and to_table()", function()
      local slots = ferry.array_slots()
      ferry.export_array(case[2], slots.array, slots.schema)
      local arr = ferry.import(slots.array, slots.schema, { validate = "full" })
      local got, n = arr:to_table()
      assert.are.equal(case[4] or #case[3], n)
      assert.are.same(case[3], plain(got))
      expect_error(select(2, pcall(arr.value, arr, n)), "ferry.Array.value", ferry.errno.ERANGE)
      arr:release()
    end)
  end

  it("refuses positions a layout's buffers hold that point outside what they index", function()
    local bad = {
      { { format = "+ud:0,1", length = 1, buffers = { { kind = "i8", values = { 1 } }, i32({ 5 }) },
          children = { ints("a", { 10 }), strings("b", { 0, 2 }, "hi") } },
        "element 0: child positions 5..6 are outside the child (length 1)" },
      { { format = "+us:0,1", length = 1, buffers = { { kind = "i8", values = { 9 } } },
          children = { ints("a", { 10 }), ints("b", { 2 }) } },
        "element 0 has type id 9, which is not in the union's type codes (+us:0,1)" },
      { { format = "+r", length = 3, buffers = {}, children = { ints("run_ends", { 2 }), ints("values", { 1 }) } },
        "is in no run" },
      { { format = "vu", length = 1, buffers = { false, i32({ 20, 0, 0, 4 }), "hello world", { kind = "i64", values = { 11 } } } },
        "view 0: bytes 4..24 are past the end of data buffer 0 (11 bytes)" },
      { { format = "+vl", length = 1, buffers = { false, i32({ 3 }), i32({ 2 }) }, children = { ints("item", { 1, 2, 3 }) } },
        "element 0: child positions 3..5 are outside the child (length 3)" },
    }
    for _, case in ipairs(bad) do
      local slots = ferry.array_slots()
      ferry.export_array(case[1], slots.array, slots.schema)
      local arr = ferry.import(slots.array, slots.schema, { validate = "none" })
      local index = case[1].format == "+r" and 2 or 0
      expect_error(select(2, pcall(arr.value, arr, index)), "ferry.Array.value", ferry.errno.EINVAL, case[2])
      arr:release()
    end
  end)
end)
