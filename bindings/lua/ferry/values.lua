-- ferry/values.lua, part of the module `ferry`: arrays (ferry.Array, the base of
-- ferry.DeviceArray): accessors and the bounds-checked value readers of every layout.
-- ferry/init.lua loads the parts in order; what they share goes through the table
-- ferry/init.lua puts at package.loaded["ferry.internal"] while they load.
local I = require("ferry.internal")
local ferry, raw, backend = I.ferry, I.raw, I.backend
local CPU, EINVAL, ENOTSUP, errno, raise = I.CPU, I.EINVAL, I.ENOTSUP, I.errno, I.raise
local schema_view, VALIDATE_FULL = I.schema_view, I.VALIDATE_FULL

-- ---- arrays ------------------------------------------------------------------------

-- How value() reads an array of a format: a fixed-width element kind
-- (i8..u64, f32, f64, bits), "b32"/"b64" (utf8/binary with 32/64-bit
-- offsets), "l32"/"l64" (lists), "struct", "dict" (dictionary-encoded), or
-- "none" (no reader).
local FIXED = {
  c = "i8", C = "u8", s = "i16", S = "u16", i = "i32", I = "u32", l = "i64", L = "u64",
  f = "f32", g = "f64", b = "bits",
  tdD = "i32", tdm = "i64", tts = "i32", ttm = "i32", ttu = "i64", ttn = "i64",
  tDs = "i64", tDm = "i64", tDu = "i64", tDn = "i64", tiM = "i32",
}
local KIND_OF_FORMAT = {
  u = "b32", z = "b32", U = "b64", Z = "b64", ["+l"] = "l32", ["+L"] = "l64", ["+s"] = "struct",
  -- the other layouts the validator accepts (readers below, "layouts")
  n = "null", e = "f16", tiD = "interval_dt", tin = "interval_mdn", ["+m"] = "l32",
  ["+vl"] = "lv32", ["+vL"] = "lv64", ["+r"] = "ree", vu = "view", vz = "view",
}
for format, kind in pairs(FIXED) do KIND_OF_FORMAT[format] = kind end
local IS_FIXED = { i8 = true, u8 = true, i16 = true, u16 = true, i32 = true, u32 = true,
                   i64 = true, u64 = true, f32 = true, f64 = true, bits = true }

local function kind_of(format, has_dictionary)
  if has_dictionary then return "dict" end
  if format == nil then return "none" end
  local kind = KIND_OF_FORMAT[format]
  if kind then return kind end
  if format:match("^ts[smun]:") then return "i64" end -- timestamps
  if format:match("^w:") then return "fsb" end         -- fixed-size binary
  if format:match("^d:") then return "decimal" end
  if format:match("^%+w:") then return "fsl" end       -- fixed-size list
  if format:match("^%+us:") then return "sparse" end   -- unions
  if format:match("^%+ud:") then return "dense" end
  return "none"
end

-- The device type and id of a root (read once, then kept in it).
local raw_device_type, raw_device_id = raw.ferry_device_array_device_type,
                                       raw.ferry_device_array_device_id
device_info = function(root)
  local device_type = root._device_type
  if not device_type then
    device_type = raw_device_type(root._ptr)
    root._device_type = device_type
    root._device_id = raw_device_id(root._ptr)
  end
  return device_type, root._device_id
end

-- Children and dictionaries are Arrays: views into their DeviceArray
-- (`_root`), alive as long as it is.
local Array = {}
Array.__index = Array
ferry.Array = Array

local DeviceArray = setmetatable({}, { __index = Array })
DeviceArray.__index = DeviceArray
ferry.DeviceArray = DeviceArray

-- The schema an array is described by: a DeviceArray's own, or the one it
-- shares (`_shared`); a child's or dictionary's (`_sptr`).
local function schema_of(self)
  local shared = self._shared
  return shared and shared._ptr or self._sptr
end

local function live_root(self, where)
  local root = self._root or self
  if root._released then
    error(ferry.error(where or "ferry.DeviceArray", EINVAL, "array already released"), 3)
  end
  return root
end

local function array_ptr(self)
  live_root(self, "ferry.DeviceArray")
  return self._arr
end

-- Host reads need memory the host can reach and the producer's event
-- waited on; checked once per array (per batch of a reused loop).
local function host_ready(self, where)
  local root = live_root(self, where)
  local device_type, device_id = device_info(root)
  if device_type ~= CPU and not ferry.device(device_type, device_id):is_host_accessible() then
    raise(where, ENOTSUP, "memory on " .. raw.ferry_device_type_name(device_type) ..
          " is not host-accessible: bring the array over with to_host() first")
  end
  root:wait()
  root._host_ok = true
end

-- A read that found data contradicting its own declaration: the message of
-- the validator (FULL) comes first when it finds the problem too.
local function read_failed(self, where, code, message)
  if code ~= EINVAL then raise(where, code, message) end
  -- A declaration no address space can back: FULL validation would read
  -- every byte it declares (UTF-8, offsets), past the real buffer.
  if message:find("than a process can address", 1, true) or message:find("2^51", 1, true) then
    raise(where, code, message)
  end
  local root = self._root or self
  local vcode, vmessage = backend.validate(schema_of(root), root._ptr, VALIDATE_FULL)
  if vcode ~= 0 and vmessage then message = vmessage .. " (" .. message .. ")" end
  raise(where, code, message)
end

local raw_array_length = raw.ferry_array_length
--- length(), null_count(), offset(), n_buffers(), n_children(): the array's fields.
function Array:length()
  -- hot path: inlined liveness check
  local root = self._root or self
  if root._released then live_root(self) end
  return raw_array_length(self._arr)
end
function DeviceArray:length()
  if self._released then live_root(self) end
  return raw_array_length(self._arr)
end
function Array:null_count() return raw.ferry_array_null_count(array_ptr(self)) end
function Array:offset() return raw.ferry_array_offset(array_ptr(self)) end
function Array:n_buffers() return raw.ferry_array_n_buffers(array_ptr(self)) end
function Array:n_children() return raw.ferry_array_n_children(array_ptr(self)) end
--- schema() -> a view of the array's Schema (valid while the array is).
function Array:schema()
  live_root(self, "ferry.Array.schema")
  return schema_view(schema_of(self), self._root or self)
end
function Array:format()
  local format = self._format
  if not format then
    live_root(self, "ferry.Array.format")
    format = raw.ferry_schema_format(schema_of(self))
    self._format = format
  end
  return format
end

-- The largest buffer a reader reads (the backends' rule: see
-- src/lferry_support.c, "What a reader refuses to read").
local MAX_BUFFER_BYTES = 2 ^ 48

local function check_index(where, what, i, n)
  if type(i) ~= "number" or i < 0 or i >= n or i % 1 ~= 0 then
    raise(where, errno.ERANGE, string.format("%s %s is out of range (0..%d)", what, tostring(i), n - 1))
  end
end

--- buffer(i) -> address (lightuserdata in Lua 5.4, cdata in LuaJIT; nil
--- for NULL), size in bytes (computed by the core from the layout).
function Array:buffer(i)
  local ptr = array_ptr(self)
  check_index("ferry.Array.buffer", "buffer", i, raw.ferry_array_n_buffers(ptr))
  local address = raw.ferry_array_buffer(ptr, i)
  local device_type, device_id = device_info(self._root or self)
  local code, size, message = raw.ferry_array_buffer_size(schema_of(self), ptr, device_type,
                                                         device_id, i)
  if code ~= 0 then raise("ferry.Array.buffer", code, message) end
  return address, size
end

--- buffer_address(i) -> address of buffer i (nil for NULL), without its size.
function Array:buffer_address(i)
  local ptr = array_ptr(self)
  check_index("ferry.Array.buffer_address", "buffer", i, raw.ferry_array_n_buffers(ptr))
  return raw.ferry_array_buffer(ptr, i)
end

--- buffer_bytes(i) -> a Lua string copy of buffer i as far as its computed
--- size reaches (nil for a NULL buffer); host-readable memory only.
function Array:buffer_bytes(i)
  local root = self._root or self
  if not root._host_ok then host_ready(self, "ferry.Array.buffer_bytes") end
  local address, size = self:buffer(i)
  if address == nil then return nil end
  if backend.to_integer(size) > MAX_BUFFER_BYTES then
    raise("ferry.Array.buffer_bytes", EINVAL, string.format(
      "buffer %d needs %.0f bytes by its declaration, more than a process can address (2^48)", i,
      backend.to_integer(size)))
  end
  return backend.read_bytes(address, 0, size)
end

local function child_view(self, arr, sptr)
  return setmetatable({ _arr = arr, _sptr = sptr, _root = self._root or self, _format = false,
                        _kind = false }, Array)
end

--- child(i) -> Array (a view of child i, 0-based).
function Array:child(i)
  local ptr = array_ptr(self)
  check_index("ferry.Array.child", "child", i, raw.ferry_array_n_children(ptr))
  local child, schema = raw.ferry_array_child(ptr, i), raw.ferry_schema_child(schema_of(self), i)
  if not child or not schema then
    raise("ferry.Array.child", EINVAL, "child " .. i .. " is NULL in the array or its schema")
  end
  return child_view(self, child, schema)
end

--- dictionary() -> Array of the dictionary, or nil.
function Array:dictionary()
  local ptr = array_ptr(self)
  local dictionary, schema = raw.ferry_array_dictionary(ptr),
                             raw.ferry_schema_dictionary(schema_of(self))
  if not dictionary and not schema then return nil end
  if not dictionary or not schema then
    raise("ferry.Array.dictionary", EINVAL, "the array and its schema disagree on a dictionary")
  end
  return child_view(self, dictionary, schema)
end

local function kind_of_array(self)
  local kind = kind_of(self:format(), raw.ferry_schema_dictionary(schema_of(self)) ~= nil)
  self._kind = kind
  return kind
end

local read_value, read_bytes_at, list_bounds = backend.value, backend.bytes, backend.list_bounds
local readers -- kind -> function(self, i) for the kinds that are not fixed-width

--- value(i): element i (logical index) decoded by the format, nil when null:
--- numbers, booleans, strings (utf8 and binary), tables for lists and
--- structs, the dictionary's value for dictionary-encoded arrays. Integers
--- are Lua integers on 5.4; on LuaJIT 64-bit values are int64 cdata. Every
--- index is checked against the length (ERANGE) and every byte read
--- against the size its buffer has by the array's declaration (EINVAL).
-- Element i once the host may read the array.
local function read_element(self, i)
  local kind = self._kind or kind_of_array(self)
  if IS_FIXED[kind] then
    local ok, v, message = read_value(self._arr, kind, i)
    if ok then return v end
    return read_failed(self, "ferry.Array.value", v, message)
  end
  return readers[kind](self, i)
end

function Array:value(i)
  local root = self._root or self
  if not root._host_ok then host_ready(self, "ferry.Array.value") end
  return read_element(self, i)
end

-- The same for a DeviceArray (the root: no `_root` to follow), the
-- consumer's hot path.
function DeviceArray:value(i)
  if not self._host_ok then host_ready(self, "ferry.Array.value") end
  return read_element(self, i)
end

-- What backend reader `read` answers for element i, once the host may read
-- the array; `what` names the method in errors.
local function read_bit(self, what, read, i)
  local root = self._root or self
  if not root._host_ok then host_ready(self, what) end
  local ok, bit, message = read(self._arr, i)
  if ok then return bit end
  return read_failed(self, what, bit, message)
end

--- is_valid(i): false when element i (logical) is null.
function Array:is_valid(i)
  return read_bit(self, "ferry.Array.is_valid", backend.is_valid, i)
end

--- validity_bit(i): element i's bit in the validity bitmap whatever
--- null_count says (a producer may keep an all-set bitmap with
--- null_count 0); nil when there is no bitmap.
function Array:validity_bit(i)
  return read_bit(self, "ferry.Array.validity_bit", backend.validity_bit, i)
end

-- Cached child views (struct fields, list items, the dictionary).
local function cached_child(self, i)
  local children = self._children
  if not children then
    children = {}
    self._children = children
  end
  local child = children[i + 1]
  if not child then
    child = self:child(i)
    children[i + 1] = child
  end
  return child
end

local function list_range(self, i, large, where)
  local root = self._root or self
  if not root._host_ok then host_ready(self, where) end
  local ok, first, last = list_bounds(self._arr, large, i)
  if not ok then return read_failed(self, where, first, last) end
  return first, last
end

--- list_range(i) -> first, last: the child positions [first, last) of list
--- element i (checked against the child's length).
function Array:list_range(i)
  local kind = self._kind or kind_of_array(self)
  if kind ~= "l32" and kind ~= "l64" then
    raise("ferry.Array.list_range", EINVAL, "not a list array: " .. tostring(self:format()))
  end
  return list_range(self, i, kind == "l64", "ferry.Array.list_range")
end

local function read_list(self, i, large)
  local ok, valid, message = backend.is_valid(self._arr, i)
  if not ok then return read_failed(self, "ferry.Array.value", valid, message) end
  if not valid then return nil end
  local first, last = list_range(self, i, large, "ferry.Array.value")
  local child, out = cached_child(self, 0), {}
  for j = first, last - 1 do out[#out + 1] = child:value(j) end
  return out
end

local function read_string(self, i, large)
  local ok, v, message = read_bytes_at(self._arr, large, i)
  if ok then return v end
  return read_failed(self, "ferry.Array.value", v, message)
end

--- index(i): the raw dictionary index of element i (dictionary arrays), nil when null.
function Array:index(i)
  local root = self._root or self
  if not root._host_ok then host_ready(self, "ferry.Array.index") end
  local kind = FIXED[self:format()]
  if not kind or kind == "bits" or kind:sub(1, 1) == "f" then
    raise("ferry.Array.index", EINVAL, "not integer indices: " .. tostring(self:format()))
  end
  local ok, v, message = read_value(self._arr, kind, i)
  if ok then return v end
  return read_failed(self, "ferry.Array.index", v, message)
end

-- ---- layouts beyond the fixed-width, variable-size, list, struct and
-- dictionary ones: every other layout the validator accepts. Each reads
-- only inside what the array declares: the index and validity checks of the
-- backend (is_valid: ERANGE, the 2^51 rule), buffers at the size the core
-- computes from the declaration (refused past 2^48 bytes), and every
-- position a buffer holds (offsets, type ids, run ends, views) checked
-- against what it points into before it is followed.

local where_value = "ferry.Array.value"

-- Buffer b: its address and size by the declaration (ferry_array_buffer_size).
local function host_buffer(self, b)
  local address, size = self:buffer(b)
  size = backend.to_integer(size)
  if size > MAX_BUFFER_BYTES then
    return read_failed(self, where_value, EINVAL, string.format(
      "buffer %d needs %.0f bytes by its declaration, more than a process can address (2^48)",
      b, size))
  end
  if address == nil and size > 0 then
    return read_failed(self, where_value, EINVAL, string.format(
      "buffer %d is NULL in an array of length %s", b, tostring(self:length())))
  end
  return address, size
end

-- The physical slot of element i after the backend's checks, nil when null.
local function valid_slot(self, i)
  local ok, valid, message = backend.is_valid(self._arr, i)
  if not ok then return read_failed(self, where_value, valid, message) end
  if not valid then return nil end
  return i + backend.to_integer(self:offset())
end

-- The slot of element i of a layout without a validity bitmap (unions,
-- run-end encoded): the index checks alone.
local function plain_slot(self, i)
  local n = backend.to_integer(self:length())
  local offset = backend.to_integer(self:offset())
  if n + offset > 2 ^ 51 then
    return read_failed(self, where_value, EINVAL, string.format(
      "length %.0f or offset %.0f is too large: a reader takes at most 2^51 elements", n, offset))
  end
  check_index(where_value, "index", i, n)
  return i + offset
end

-- Parameters parsed from a format once ("w:16" -> 16, "d:9,2,64" -> ...).
local format_params = {}

-- What parse(format) makes of the array's format, parsed once per format.
local function format_param(self, parse)
  local format = self:format()
  local param = format_params[format]
  if not param then
    param = parse(format)
    format_params[format] = param
  end
  return param
end

local function fixed_size(format) return tonumber(format:match("^w:(%d+)$")) end
local function list_size(format) return tonumber(format:match("^%+w:(%d+)$")) end

local function decimal_params(format)
  local _, scale, bits = format:match("^d:(%d+),(%-?%d+),?(%d*)$")
  return { scale = tonumber(scale), bytes = (tonumber(bits) or 128) / 8 }
end

-- "+ud:0,5" / "+us:0,5": type id -> child index
local function union_codes(format)
  local codes, c = {}, 0
  for code in format:sub(5):gmatch("[^,]+") do
    codes[tonumber(code)] = c
    c = c + 1
  end
  return codes
end

local function half_to_number(h)
  local sign = h >= 0x8000 and -1 or 1
  local exponent, fraction = math.floor(h / 1024) % 32, h % 1024
  if exponent == 0 then return sign * fraction * 2 ^ -24 end
  if exponent == 31 then return fraction == 0 and sign * math.huge or 0 / 0 end
  return sign * (1 + fraction / 1024) * 2 ^ (exponent - 15)
end

-- A little-endian two's complement integer of any width (the bytes of a
-- decimal) as decimal text with `scale` digits after the point.
local function decimal_text(bytes, scale)
  local n, limbs = #bytes, {}
  for k = 1, n do limbs[k] = bytes:byte(k) end
  local negative = limbs[n] >= 128
  if negative then
    local carry = 1
    for k = 1, n do
      local v = 255 - limbs[k] + carry
      limbs[k], carry = v % 256, math.floor(v / 256)
    end
  end
  local digits = {}
  repeat
    local remainder, more = 0, false
    for k = n, 1, -1 do
      local current = remainder * 256 + limbs[k]
      local q = math.floor(current / 10)
      limbs[k], remainder = q, current - q * 10
      if q ~= 0 then more = true end
    end
    digits[#digits + 1] = string.char(48 + remainder)
  until not more
  local text = string.reverse(table.concat(digits))
  if scale > 0 then
    if #text <= scale then text = string.rep("0", scale - #text + 1) .. text end
    text = text:sub(1, #text - scale) .. "." .. text:sub(#text - scale + 1)
  elseif scale < 0 then
    text = text .. string.rep("0", -scale)
  end
  return negative and "-" .. text or text
end

-- Child positions [first, first + count) of element i must lie in the child.
local function check_child_range(self, child, i, first, count)
  local n = backend.to_integer(child:length())
  if first < 0 or count < 0 or first + count > n then
    return read_failed(self, where_value, EINVAL, string.format(
      "element %d: child positions %.0f..%.0f are outside the child (length %.0f)", i, first,
      first + count, n))
  end
end

local function child_values(child, first, count)
  local out = {}
  for j = first, first + count - 1 do out[#out + 1] = child:value(j) end
  return out
end

local layout_readers = {
  null = function(self, i)
    local ok, _, message = backend.is_valid(self._arr, i)
    if not ok then return read_failed(self, where_value, _, message) end
    return nil
  end,
  f16 = function(self, i)
    local ok, v, message = read_value(self._arr, "u16", i)
    if not ok then return read_failed(self, where_value, v, message) end
    if v == nil then return nil end
    return half_to_number(v)
  end,
  fsb = function(self, i) -- w:N: N bytes per element
    local slot = valid_slot(self, i)
    if slot == nil then return nil end
    local width = format_param(self, fixed_size)
    local p = host_buffer(self, 1) -- (offset + length) * N bytes: slot is inside
    if width == 0 then return "" end
    return backend.read_bytes(p, slot * width, width)
  end,
  decimal = function(self, i) -- d:P,S[,B]: decimal text, e.g. "-12.34"
    local slot = valid_slot(self, i)
    if slot == nil then return nil end
    local params = format_param(self, decimal_params)
    local p = host_buffer(self, 1)
    return decimal_text(backend.read_bytes(p, slot * params.bytes, params.bytes), params.scale)
  end,
  interval_dt = function(self, i) -- { days, milliseconds }
    local slot = valid_slot(self, i)
    if slot == nil then return nil end
    local p = host_buffer(self, 1)
    return { days = backend.read(p, "i32", 2 * slot), milliseconds = backend.read(p, "i32", 2 * slot + 1) }
  end,
  interval_mdn = function(self, i) -- { months, days, nanoseconds }
    local slot = valid_slot(self, i)
    if slot == nil then return nil end
    local p = host_buffer(self, 1)
    return { months = backend.read(p, "i32", 4 * slot), days = backend.read(p, "i32", 4 * slot + 1),
             nanoseconds = backend.read(p, "i64", 2 * slot + 1) }
  end,
  fsl = function(self, i) -- +w:N: a list of N child values
    local slot = valid_slot(self, i)
    if slot == nil then return nil end
    local n = format_param(self, list_size)
    local child = cached_child(self, 0)
    check_child_range(self, child, i, slot * n, n)
    return child_values(child, slot * n, n)
  end,
  ree = function(self, i) -- +r: the value of the run holding logical element offset + i
    local position = plain_slot(self, i)
    local run_ends, values = cached_child(self, 0), cached_child(self, 1)
    local lo, hi = 0, backend.to_integer(run_ends:length()) - 1
    if hi < 0 then return read_failed(self, where_value, EINVAL, "run-end encoded: no runs") end
    while lo < hi do -- the first run whose end is past `position`
      local mid = math.floor((lo + hi) / 2)
      if backend.to_integer(run_ends:value(mid)) > position then hi = mid else lo = mid + 1 end
    end
    local run_end = backend.to_integer(run_ends:value(lo))
    local previous = lo > 0 and backend.to_integer(run_ends:value(lo - 1)) or 0
    if run_end <= position or previous > position then
      return read_failed(self, where_value, EINVAL, string.format(
        "run-end encoded: element %d (position %.0f) is in no run (run ends not increasing, or " ..
        "shorter than the array)", i, position))
    end
    check_child_range(self, values, i, lo, 1)
    return values:value(lo)
  end,
  view = function(self, i) -- utf8/binary views: 16-byte views, inline or in a variadic buffer
    local slot = valid_slot(self, i)
    if slot == nil then return nil end
    local views = host_buffer(self, 1)
    local length = backend.read(views, "i32", 4 * slot)
    if length < 0 then
      return read_failed(self, where_value, EINVAL, string.format("view %d has a negative length %d", i, length))
    end
    if length <= 12 then return backend.read_bytes(views, 16 * slot + 4, length) end
    local index, offset = backend.read(views, "i32", 4 * slot + 2), backend.read(views, "i32", 4 * slot + 3)
    local n_data = backend.to_integer(self:n_buffers()) - 3
    if index < 0 or index >= n_data or offset < 0 then
      return read_failed(self, where_value, EINVAL, string.format(
        "view %d points at buffer %d offset %d (there are %d data buffers)", i, index, offset, n_data))
    end
    local data, size = host_buffer(self, 2 + index)
    if offset + length > size then
      return read_failed(self, where_value, EINVAL, string.format(
        "view %d: bytes %d..%d are past the end of data buffer %d (%.0f bytes)", i, offset,
        offset + length, index, size))
    end
    return backend.read_bytes(data, offset, length)
  end,
}

-- list views: offsets (buffer 1) and sizes (buffer 2) of 32 or 64 bits
local function read_list_view(self, i, kind)
  local slot = valid_slot(self, i)
  if slot == nil then return nil end
  local offsets, sizes = host_buffer(self, 1), host_buffer(self, 2)
  local first = backend.to_integer(backend.read(offsets, kind, slot))
  local count = backend.to_integer(backend.read(sizes, kind, slot))
  local child = cached_child(self, 0)
  check_child_range(self, child, i, first, count)
  return child_values(child, first, count)
end
layout_readers.lv32 = function(self, i) return read_list_view(self, i, "i32") end
layout_readers.lv64 = function(self, i) return read_list_view(self, i, "i64") end

-- unions: type ids (buffer 0, int8) name the child by the format's codes
local function union_child(self, i)
  local slot = plain_slot(self, i)
  local codes = format_param(self, union_codes)
  local type_ids = host_buffer(self, 0)
  local type_id = backend.read(type_ids, "i8", slot)
  local c = codes[type_id]
  if c == nil then
    return read_failed(self, where_value, EINVAL, string.format(
      "element %d has type id %d, which is not in the union's type codes (%s)", i, type_id, self:format()))
  end
  return cached_child(self, c), slot
end
layout_readers.sparse = function(self, i)
  local child, slot = union_child(self, i)
  check_child_range(self, child, i, slot, 1)
  return child:value(slot)
end
layout_readers.dense = function(self, i)
  local child, slot = union_child(self, i)
  local offsets = host_buffer(self, 1)
  local offset = backend.read(offsets, "i32", slot)
  check_child_range(self, child, i, offset, 1)
  return child:value(offset)
end

readers = {
  b32 = function(self, i) return read_string(self, i, false) end,
  b64 = function(self, i) return read_string(self, i, true) end,
  l32 = function(self, i) return read_list(self, i, false) end,
  l64 = function(self, i) return read_list(self, i, true) end,
  struct = function(self, i)
    local length = self:length()
    check_index("ferry.Array.value", "index", i, length)
    if not self:is_valid(i) then return nil end
    local out, slot = {}, i + self:offset()
    for c = 0, self:n_children() - 1 do
      local child = cached_child(self, c)
      out[child:schema():name() or c] = child:value(slot)
    end
    return out
  end,
  dict = function(self, i)
    local index = self:index(i)
    if index == nil then return nil end
    local dictionary = self._dict or self:dictionary()
    self._dict = dictionary
    index = backend.to_integer(index)
    local n = dictionary:length()
    if index < 0 or index >= n then
      return read_failed(self, "ferry.Array.value", EINVAL, string.format(
        "index %d of element %d is outside the dictionary (length %d)", index, i, n))
    end
    return dictionary:value(index)
  end,
  none = function(self)
    raise("ferry.Array.value", ENOTSUP, "no reader for format " .. tostring(self:format()))
  end,
}
for kind, reader in pairs(layout_readers) do readers[kind] = reader end

function Array:int32(i) return self:value(i) end
function Array:int64(i) return self:value(i) end
function Array:double(i) return self:value(i) end
function Array:utf8(i) return self:value(i) end

-- The most elements to_table() materialises (docs/bindings.md, "Reading
-- values"): a longer array is refused by name instead of filling memory.
local TO_TABLE_MAX = 2 ^ 31

--- to_table(): every element as a Lua list (nil holes for nulls) and n;
--- E2BIG for more than 2^31 elements (read those with value(i)).
function Array:to_table()
  local n, out = self:length(), {}
  if backend.to_integer(n) > TO_TABLE_MAX then
    raise("ferry.Array.to_table", errno.E2BIG, string.format(
      "%.0f elements are more than to_table() materialises (2^31); read them with value(i)",
      backend.to_integer(n)))
  end
  for i = 0, n - 1 do out[i + 1] = self:value(i) end
  return out, n
end

-- For the parts loaded after this one.
I.Array, I.DeviceArray, I.FIXED, I.kind_of = Array, DeviceArray, FIXED, kind_of
I.KIND_OF_FORMAT, I.live_root, I.schema_of = KIND_OF_FORMAT, live_root, schema_of
