-- The raw layer: ferry_core's generated wrappers (Lua 5.4) or the FFI
-- wrappers (LuaJIT), both made from the roles of generators/lua/gen.lua:
-- exact 64-bit integers, nil for NULL, and error codes returned with the
-- message last.
local ferry = require("ferry")
local raw = ferry.raw
local is_luajit = ferry.backend == "luajit"

describe("raw layer (" .. ferry.backend .. ")", function()
  it("reports the library and ABI versions", function()
    assert.are.equal("0.1.0", raw.ferry_version())
    assert.are.equal(1, raw.ferry_abi_version())
    assert.are.equal(0, (raw.ferry_check_abi_version(1)))
  end)

  it("returns errno codes and the message instead of raising", function()
    local code, _, message = raw.ferry_device_type_from_name("bogus")
    assert.are.equal(ferry.errno.EINVAL, code)
    assert.truthy(message:find("bogus", 1, true))
    local ok_code, value, no_message = raw.ferry_device_type_from_name("sim")
    assert.are.equal(0, ok_code)
    assert.are.equal(12, value)
    assert.is_nil(no_message)
  end)

  it("maps NULL pointers to nil", function()
    local schema = raw.ferry_schema_new()
    assert.are.equal(0, (raw.ferry_schema_init(schema, "i", "x", 2, 0)))
    assert.is_nil(raw.ferry_schema_child(schema, 5))
    assert.is_nil(raw.ferry_schema_dictionary(schema))
    raw.ferry_schema_free(schema)
  end)

  it("round-trips 2^60+1 exactly through an int64_t parameter and result", function()
    local arr = raw.ferry_array_new()
    if is_luajit then
      -- LuaJIT numbers are doubles: the exact path is the FFI's int64 cdata.
      local big = assert(load("return 1152921504606846977LL"))()
      local lib = ferry._backend.lib
      assert.are.equal(0, lib.ferry_array_init(arr, big, 0, 0, 0, nil, 0, nil, nil, nil))
      assert.is_true(lib.ferry_array_length(arr) == big)
      assert.is_true(lib.ferry_array_length(arr) ~= big - 1)
    else
      local big = math.tointeger(2 ^ 60) + 1
      assert.are.equal(0, (raw.ferry_array_init(arr, big, 0, 0, 0, nil, 0, nil, nil)))
      local length = raw.ferry_array_length(arr)
      assert.are.equal("integer", math.type(length))
      assert.are.equal(big, length)
      assert.are.equal("1152921504606846977", tostring(length))
    end
    raw.ferry_array_free(arr)
  end)

  it("returns 64-bit results as integers, not floats", function()
    local arr = raw.ferry_array_new()
    assert.are.equal(0, (raw.ferry_array_init(arr, 7, 0, 0, 0, nil, 0, nil, nil)))
    local length = raw.ferry_array_length(arr)
    assert.are.equal(7, length)
    if not is_luajit then assert.are.equal("integer", math.type(length)) end
    raw.ferry_array_free(arr)
  end)

  it("rejects arguments of the wrong type before calling C", function()
    local ok, err = pcall(raw.ferry_array_length, "not a pointer")
    assert.is_false(ok)
    assert.truthy(tostring(err):find("ferry_array_length", 1, true) or
                  tostring(err):find("cannot convert", 1, true))
    if not is_luajit then
      local ok2, err2 = pcall(raw.ferry_schema_child, nil, 1.5)
      assert.is_false(ok2)
      assert.truthy(tostring(err2):find("integer", 1, true))
    end
  end)

  it("reads metadata keys and values with embedded zero bytes", function()
    local schema = raw.ferry_schema_new()
    assert.are.equal(0, (raw.ferry_schema_init(schema, "i", "x", 2, 0)))
    assert.are.equal(0, (raw.ferry_schema_add_metadata(schema, "key", "value")))
    assert.are.equal(1, raw.ferry_schema_metadata_count(schema))
    assert.are.equal("key", raw.ferry_schema_metadata_key(schema, 0))
    assert.are.equal("value", raw.ferry_schema_metadata_value(schema, 0))
    assert.is_nil(raw.ferry_schema_metadata_key(schema, 3))
    raw.ferry_schema_free(schema)
  end)

  it("exposes the header's constants", function()
    assert.are.equal(1, raw.ARROW_DEVICE_CPU)
    assert.are.equal(12, raw.ARROW_DEVICE_EXT_DEV)
    assert.are.equal(1024, raw.FERRY_ERROR_MESSAGE_SIZE)
  end)
end)
