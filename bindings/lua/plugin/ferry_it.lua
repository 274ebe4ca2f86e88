-- The Lua participant of ferry's cross-language tests: parses case strings
-- (docs/cases.md), produces arrays and streams from the value
-- formula, and checks what other runtimes produce. Called by the C shim
-- ferry_it_lua.c; every function raises a ferry.Error (code + message) or a
-- plain error on failure and returns nothing on success. Lua 5.4 only (the
-- formula relies on 64-bit integer arithmetic).
local ferry = require("ferry")
local raw = ferry.raw

local M = {}
local EINVAL, EIO = ferry.errno.EINVAL, ferry.errno.EIO

local function fail(code, fmt, ...)
  error(ferry.error("ferry_it", code, string.format(fmt, ...)), 0)
end

-- ---- case strings ------------------------------------------------------------

local TYPES = {
  int8 = "c", int16 = "s", int32 = "i", int64 = "l", uint8 = "C", uint16 = "S",
  uint32 = "I", uint64 = "L", float32 = "f", float64 = "g", bool = "b", utf8 = "u",
  binary = "z", list_int32 = "+l", struct_int32_utf8 = "+s", dict_int32_utf8 = "i",
}
local DEVICES = { cpu = true, sim = true, cuda = true, rocm = true }

local function parse_count(key, text, max)
  if not text:match("^%-?%d+$") then fail(EINVAL, "malformed number '%s' for key '%s'", text, key) end
  if text:sub(1, 1) == "-" then fail(EINVAL, "negative %s %s", key, text) end
  if #text > 10 then fail(EINVAL, "%s %s is too large", key, text) end
  local value = math.tointeger(tonumber(text))
  if value > max then fail(EINVAL, "%s %s is too large (max %d)", key, text, max) end
  return value
end

--- parse(case_spec) -> case table; raises EINVAL naming the offending part.
function M.parse(spec)
  if type(spec) ~= "string" or spec == "" then fail(EINVAL, "empty case string") end
  local parts = {}
  for part in (spec .. ":"):gmatch("([^:]*):") do parts[#parts + 1] = part end
  local case = { type = parts[1], length = 16, nulls = 0, seed = 1, offset = 0, device = "cpu",
                 batches = 3 }
  if not TYPES[case.type] then fail(EINVAL, "unknown type '%s' in case '%s'", case.type, spec) end
  for i = 2, #parts do
    local key, value = parts[i]:match("^([^=]*)=(.*)$")
    if not key then fail(EINVAL, "malformed part '%s' in case '%s' (expected key=value)", parts[i], spec) end
    if key == "length" then case.length = parse_count(key, value, 1 << 31)
    elseif key == "nulls" then case.nulls = parse_count(key, value, 1 << 31)
    elseif key == "seed" then case.seed = parse_count(key, value, 4294967295)
    elseif key == "offset" then case.offset = parse_count(key, value, 1 << 31)
    elseif key == "batches" then case.batches = parse_count(key, value, 1 << 20)
    elseif key == "window" then -- async only: the checking consumer's (accepted, unused here)
      case.window = parse_count(key, value, 1 << 31)
      if case.window < 1 then
        fail(EINVAL, "window=0 in case \"%s\": a consumer must request at least 1 batch", spec)
      end
    elseif key == "cancel" then -- async only, as window
      case.cancel = parse_count(key, value, 1 << 31)
    elseif key == "device" then
      if not DEVICES[value] then fail(EINVAL, "unknown device '%s' in case '%s'", value, spec) end
      case.device = value
    elseif key == "fail" then
      if value == "export" or value == "get_schema" then
        case.fail = value
      else
        local n = value:match("^get_next@(.*)$")
        local consumer = value:match("^consumer@(.*)$")
        if consumer then
          -- async only: the checking consumer refuses task N (the producer's stream is unchanged)
          case.consumer_fail_at = parse_count("fail=consumer@", consumer, 1 << 31)
          if case.consumer_fail_at < 1 then
            fail(EINVAL, "fail=consumer@N counts from 1, got %s", consumer)
          end
        else
          if not n then fail(EINVAL, "unknown failure '%s' in case '%s'", value, spec) end
          case.fail, case.fail_at = "get_next", parse_count("fail=get_next@", n, 1 << 31)
          if case.fail_at < 1 then fail(EINVAL, "fail=get_next@N counts from 1, got %s", n) end
        end
      end
    else
      fail(EINVAL, "unknown key '%s' in case '%s'", key, spec)
    end
  end
  return case
end

-- ---- the value formula (unsigned 32-bit arithmetic, wrapping) ---------------

local function u(seed, i) return (seed * 2654435761 + i * 40503) & 0xFFFFFFFF end
M.u = u

local function signed(v, bits)
  local half = 1 << (bits - 1)
  v = v & ((1 << bits) - 1)
  if v >= half then return v - (1 << bits) end
  return v
end

local function utf8_value(seed, i)
  if i % 5 == 0 then return "" end
  return tostring(u(seed, i) % 100000)
end

--- value(type, seed, i): the expected value of element i.
function M.value(type_name, seed, i)
  local x = u(seed, i)
  if type_name == "int8" then return signed(x, 8)
  elseif type_name == "int16" then return signed(x, 16)
  elseif type_name == "int32" then return signed(x, 32)
  elseif type_name == "uint8" then return x & 0xFF
  elseif type_name == "uint16" then return x & 0xFFFF
  elseif type_name == "uint32" then return x
  elseif type_name == "int64" or type_name == "uint64" then return (x << 32) | u(seed, i + 1)
  elseif type_name == "float32" then return signed(x, 16) / 4
  elseif type_name == "float64" then return signed(x, 32) / 1024
  elseif type_name == "bool" then return (x & 1) == 1
  elseif type_name == "utf8" or type_name == "binary" then return utf8_value(seed, i)
  elseif type_name == "dict_int32_utf8" then return x % 7
  end
  error("no scalar formula for " .. type_name)
end

local function is_null(case, i) return case.nulls > 0 and i % case.nulls == case.nulls - 1 end

-- ---- producing ------------------------------------------------------------------

local PACK_KINDS = { int8 = "i8", int16 = "i16", int32 = "i32", int64 = "i64", uint8 = "u8",
                     uint16 = "u16", uint32 = "u32", uint64 = "u64", float32 = "f32",
                     float64 = "f64", bool = "bits", dict_int32_utf8 = "i32" }

-- validity over physical slots (nil when nulls = 0)
local function validity(case, n, o)
  if case.nulls == 0 then return false, 0 end
  local bits, count = {}, 0
  for i = 0, n - 1 do
    if is_null(case, i) then count = count + 1 else bits[o + i + 1] = true end
  end
  return { kind = "bits", values = bits, n = o + n }, count
end

-- utf8 column over `n` physical slots; slot p holds value(seed, p - shift).
local function utf8_buffers(seed, n, shift, skip)
  local offsets, pieces, position = { 0 }, {}, 0
  for p = 0, n - 1 do
    local i = p - shift
    if i >= 0 and not (skip and skip(i)) then
      local s = utf8_value(seed, i)
      pieces[#pieces + 1] = s
      position = position + #s
    end
    offsets[p + 2] = position
  end
  return { kind = "i32", values = offsets, n = n + 1 }, table.concat(pieces)
end

local function int32_column(seed, n, shift)
  local values = {}
  for p = 0, n - 1 do
    local i = p - shift
    if i >= 0 then values[p + 1] = signed(u(seed, i), 32) end
  end
  return { kind = "i32", values = values, n = n }
end

--- node(case, seed) -> the array node for one array of the case.
function M.node(case, seed)
  local t, n, o = case.type, case.length, case.offset
  local valid, null_count = validity(case, n, o)
  local node = { format = TYPES[t], name = t, flags = 2, length = n, null_count = null_count,
                 offset = o }
  if t == "utf8" or t == "binary" then
    local offsets, data = utf8_buffers(seed, o + n, o, function(i) return is_null(case, i) end)
    node.buffers = { valid, offsets, data, n = 3 }
  elseif t == "list_int32" then
    local offsets, position = { 0 }, 0
    for p = 0, o + n - 1 do
      local i = p - o
      if i >= 0 and not is_null(case, i) then position = position + u(seed, i) % 4 end
      offsets[p + 2] = position
    end
    node.buffers = { valid, { kind = "i32", values = offsets, n = o + n + 1 }, n = 2 }
    node.children = { { format = "i", name = "item", flags = 2, length = position, null_count = 0,
                        offset = 0, buffers = { false, int32_column(seed, position, 0), n = 2 } } }
  elseif t == "struct_int32_utf8" then
    local b_offsets, b_data = utf8_buffers(seed + 1, o + n, o)
    node.buffers = { valid, n = 1 }
    node.children = {
      { format = "i", name = "a", flags = 2, length = o + n, null_count = 0, offset = 0,
        buffers = { false, int32_column(seed, o + n, o), n = 2 } },
      { format = "u", name = "b", flags = 2, length = o + n, null_count = 0, offset = 0,
        buffers = { false, b_offsets, b_data, n = 3 } },
    }
  else
    local values = {}
    for i = 0, n - 1 do
      if not is_null(case, i) then
        local v = M.value(t, seed, i)
        if t == "bool" then v = v or nil end
        values[o + i + 1] = v
      end
    end
    node.buffers = { valid, { kind = PACK_KINDS[t], values = values, n = o + n }, n = 2 }
    if t == "dict_int32_utf8" then
      local words = {}
      for d = 0, 6 do words[d + 1] = "d" .. d end
      node.dictionary = ferry.node({ type = "utf8", values = words, length = 7, name = "" })
      node.dictionary.name = nil
    end
  end
  return node
end

local function device_options(case)
  return { device = case.device, device_id = case.device ~= "cpu" and 0 or nil }
end

local function ensure_device(case)
  if case.device == "cpu" then return end
  local ok, err = pcall(ferry.device, case.device, 0)
  if not ok then
    local code = type(err) == "table" and err.code or ferry.errno.ENODEV
    local message = type(err) == "table" and err.message or tostring(err)
    fail(code, "device '%s' is not available: %s", case.device, message)
  end
end

function M.export_array(spec, schema_out, array_out)
  local case = M.parse(spec)
  if case.fail == "export" then fail(EIO, "injected failure at export") end
  ensure_device(case)
  local node = M.node(case, case.seed)
  ferry.export_array(node, array_out, schema_out, device_options(case))
end

function M.export_stream(spec, out)
  local case = M.parse(spec)
  if case.fail == "export" then fail(EIO, "injected failure at export") end
  ensure_device(case)
  local schema_node = M.node({ type = case.type, length = 0, nulls = 0, offset = 0 }, case.seed)
  local calls, batch = 0, 0
  local function schema()
    if case.fail == "get_schema" then return nil, "injected failure at get_schema", EIO end
    return schema_node
  end
  local function producer()
    calls = calls + 1
    if case.fail == "get_next" and calls == case.fail_at then
      return nil, "injected failure at get_next " .. calls, EIO
    end
    if batch >= case.batches then return nil end
    batch = batch + 1
    return M.node(case, (case.seed + batch - 1) & 0xFFFFFFFF)
  end
  ferry.export_stream_to(out, schema, producer, device_options(case))
end

-- ---- checking -----------------------------------------------------------------------

local function expect(condition, fmt, ...)
  if not condition then fail(EINVAL, fmt, ...) end
end

local DEVICE_TYPES = { cpu = 1, sim = 12, cuda = 2, rocm = 10 }

local function check_schema(case, schema, where)
  expect(schema:format() == TYPES[case.type], "%s: format is '%s', expected '%s'", where,
         tostring(schema:format()), TYPES[case.type])
  expect(schema:name() == case.type, "%s: name is '%s', expected '%s'", where,
         tostring(schema:name()), case.type)
  local t = case.type
  if t == "list_int32" then
    expect(schema:n_children() == 1, "%s: list must have one child", where)
    expect(schema:child(0):format() == "i", "%s: list child format is '%s'", where, schema:child(0):format())
    expect(schema:child(0):name() == "item", "%s: list child name is '%s', expected 'item'", where,
           tostring(schema:child(0):name()))
  elseif t == "struct_int32_utf8" then
    expect(schema:n_children() == 2, "%s: struct must have two children", where)
    expect(schema:child(0):format() == "i" and schema:child(0):name() == "a",
           "%s: struct child 0 must be int32 'a'", where)
    expect(schema:child(1):format() == "u" and schema:child(1):name() == "b",
           "%s: struct child 1 must be utf8 'b'", where)
  elseif t == "dict_int32_utf8" then
    expect(schema:dictionary() ~= nil, "%s: dictionary schema missing", where)
    expect(schema:dictionary():format() == "u", "%s: dictionary format is '%s', expected 'u'",
           where, tostring(schema:dictionary():format()))
  end
end

local function check_no_nulls(arr, what, where)
  expect(arr:null_count() == 0, "%s: %s has %d nulls, expected none", where, what, arr:null_count())
end

local function check_values(case, arr, seed, where)
  local t, n = case.type, case.length
  expect(arr:length() == n, "%s: length is %d, expected %d", where, arr:length(), n)
  expect(arr:offset() == case.offset, "%s: offset is %d, expected %d", where, arr:offset(), case.offset)
  local expected_nulls = 0
  for i = 0, n - 1 do if is_null(case, i) then expected_nulls = expected_nulls + 1 end end
  expect(arr:null_count() == expected_nulls, "%s: null_count is %d, expected %d", where,
         arr:null_count(), expected_nulls)
  if case.nulls == 0 and arr:buffer_address(0) ~= nil then
    -- A producer may keep a bitmap without nulls (pyarrow does on slices):
    -- then every bit in range must be set (cases.md, "What a checker verifies").
    for i = 0, n - 1 do
      expect(arr:validity_bit(i), "%s: nulls=0, but the validity bitmap has element %d unset", where, i)
    end
  end
  local o = case.offset
  local child_a, child_b, item, dictionary
  if t == "struct_int32_utf8" then
    child_a, child_b = arr:child(0), arr:child(1)
    check_no_nulls(child_a, "child a", where)
    check_no_nulls(child_b, "child b", where)
  elseif t == "list_int32" then
    item = arr:child(0)
    check_no_nulls(item, "the list child", where)
  elseif t == "dict_int32_utf8" then
    dictionary = arr:dictionary()
    expect(dictionary ~= nil, "%s: dictionary missing", where)
    expect(dictionary:length() == 7, "%s: dictionary length is %d, expected 7", where, dictionary:length())
    check_no_nulls(dictionary, "the dictionary", where)
    for d = 0, 6 do
      expect(dictionary:value(d) == "d" .. d, "%s: dictionary[%d] is '%s', expected 'd%d'", where, d,
             tostring(dictionary:value(d)), d)
    end
  end
  for i = 0, n - 1 do
    local null = is_null(case, i)
    expect(arr:is_valid(i) == not null, "%s: validity bit of element %d is %s, expected %s", where, i,
           tostring(arr:is_valid(i)), tostring(not null))
    if not null then
      if t == "struct_int32_utf8" then
        local a, b = child_a:value(i + o), child_b:value(i + o)
        expect(a == signed(u(seed, i), 32), "%s: struct element %d field a is %s, expected %d", where,
               i, tostring(a), signed(u(seed, i), 32))
        expect(b == utf8_value(seed + 1, i), "%s: struct element %d field b is '%s', expected '%s'",
               where, i, tostring(b), utf8_value(seed + 1, i))
      elseif t == "list_int32" then
        local list = arr:value(i)
        expect(#list == u(seed, i) % 4, "%s: list %d has %d elements, expected %d", where, i, #list,
               u(seed, i) % 4)
        local first = arr:list_range(i)
        for j = 1, #list do
          local position = first + j - 1
          expect(list[j] == signed(u(seed, position), 32),
                 "%s: list %d element %d (child position %d) is %s, expected %d", where, i, j - 1,
                 position, tostring(list[j]), signed(u(seed, position), 32))
        end
      elseif t == "dict_int32_utf8" then
        local index = arr:index(i)
        expect(index == u(seed, i) % 7, "%s: index %d is %s, expected %d", where, i, tostring(index),
               u(seed, i) % 7)
      else
        local v, want = arr:value(i), M.value(t, seed, i)
        expect(v == want, "%s: element %d is %s, expected %s", where, i, tostring(v), tostring(want))
      end
    end
  end
end

local function check_device(case, arr, where)
  local want = DEVICE_TYPES[case.device]
  expect(arr:device_type_id() == want, "%s: device type is %s (%d), expected %s", where,
         arr:device_type(), arr:device_type_id(), case.device)
end

-- Checks one array or batch (released by the caller); device memory the
-- host cannot read (CUDA, ROCm) is brought over with to_host() first, which
-- waits on the producer's event, as a consumer on the host must.
local function check_one(case, arr, seed, where)
  check_device(case, arr, where)
  if arr:is_host_readable() then
    check_values(case, arr, seed, where)
    return
  end
  local host = arr:to_host() -- consumes arr
  local ok, err = pcall(check_values, case, host, seed, where .. " (to_host)")
  host:release()
  if not ok then error(err, 0) end
end

function M.check_array(spec, schema_in, array_in)
  -- Take ownership first: the checker releases on success and failure alike.
  local arr = ferry.import(array_in, schema_in)
  local ok, err = pcall(function()
    local case = M.parse(spec)
    check_schema(case, arr:schema(), "schema")
    check_one(case, arr, case.seed, "array")
  end)
  arr:release()
  if not ok then error(err, 0) end
end

function M.check_stream(spec, stream_in)
  local stream = ferry.import_stream(stream_in)
  local ok, err = pcall(function()
    local case = M.parse(spec)
    local device_name = raw.ferry_device_type_name(DEVICE_TYPES[case.device])
    expect(stream:device_type() == device_name, "stream device type is %s, expected %s",
           stream:device_type(), device_name)
    local got_schema, schema_err = pcall(stream.schema, stream)
    if case.fail == "get_schema" then
      expect(not got_schema, "get_schema succeeded, expected the injected failure")
      expect(type(schema_err) == "table" and schema_err.code == EIO,
             "get_schema failed with %s, expected EIO", tostring(schema_err))
      expect(schema_err.message:find("injected failure at get_schema", 1, true),
             "get_schema message is '%s', expected 'injected failure at get_schema'", schema_err.message)
      return
    end
    if not got_schema then error(schema_err, 0) end
    check_schema(case, stream:schema(), "stream schema")
    local calls = 0
    while true do
      calls = calls + 1
      local expect_failure = case.fail == "get_next" and calls == case.fail_at
      local got, batch = pcall(stream.next, stream)
      -- A batch must be released on every path, a failed check included.
      local function fail_with_batch(...)
        if got and batch ~= nil then batch:release() end
        expect(false, ...)
      end
      if expect_failure then
        if got then fail_with_batch("get_next call %d succeeded, expected the injected failure", calls) end
        expect(type(batch) == "table" and batch.code == EIO, "get_next call %d failed with %s, expected EIO",
               calls, tostring(batch))
        local want = "injected failure at get_next " .. calls
        expect(batch.message:find(want, 1, true), "get_next message is '%s', expected '%s'",
               batch.message, want)
        return
      end
      if not got then error(batch, 0) end
      if batch == nil then
        expect(calls - 1 == case.batches, "stream ended after %d batches, expected %d", calls - 1,
               case.batches)
        expect(case.fail ~= "get_next" or case.fail_at > case.batches + 1 ,
               "stream ended before the injected failure at get_next %d", case.fail_at or 0)
        return
      end
      if calls > case.batches then fail_with_batch("stream yields more than %d batches", case.batches) end
      local seed = (case.seed + calls - 1) & 0xFFFFFFFF
      local checked, problem = pcall(check_one, case, batch, seed, "batch " .. (calls - 1))
      batch:release()
      if not checked then error(problem, 0) end
    end
  end)
  stream:release()
  if not ok then error(err, 0) end
end

return M
