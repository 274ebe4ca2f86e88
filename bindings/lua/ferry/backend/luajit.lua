-- ferry's LuaJIT backend (the contract: ferry/backend/contract.lua): the
-- FFI over libferry.so with the declarations and roles generated from
-- ferry.h (ferry/abi.lua). Its raw layer follows the same roles as the
-- generated C layer of Lua 5.4 (numbers for 64-bit values that are counts,
-- nil for NULL, `code, ..., message` results), so the idiomatic layer
-- (ferry/init.lua and its parts) is shared.
--
-- Callbacks (release hooks of exports, stream producers) are three shared
-- ffi.cast callbacks created once; LuaJIT callbacks must run on the thread
-- that owns this Lua state (see the README).
local ffi = require("ffi")
local bit = require("bit")
local abi = require("ferry.abi")

ffi.cdef(abi.cdef)
ffi.cdef([[
void* calloc(size_t count, size_t size);
void free(void* ptr);
]])

-- Where libferry comes from, first match wins (README, "Finding libferry"):
--   1. FERRY_LIBRARY: a path (or a name the loader resolves);
--   2. the library the rock's ferry_core links: installed by LuaRocks for
--      LuaJIT, ferry_core is only a locator that names it;
--   3. FERRY_BUILD_DIR/lib/libferry.so (a development build);
--   4. libferry.so.0, then libferry.so, on the loader's standard paths
--      (ld.so.cache, LD_LIBRARY_PATH, the system directories).
local function load_library()
  local candidates = {}
  local function add(name, how)
    if name and name ~= "" then candidates[#candidates + 1] = { name = name, how = how } end
  end
  add(os.getenv("FERRY_LIBRARY"), "FERRY_LIBRARY")
  local has_locator, locator = pcall(require, "ferry_core")
  if has_locator and type(locator) == "table" and locator.kind == "locator" then
    add(locator.library, "the rock's ferry_core")
  end
  local build = os.getenv("FERRY_BUILD_DIR")
  if build and build ~= "" then add(build .. "/lib/libferry.so", "FERRY_BUILD_DIR") end
  add("libferry.so.0", "the loader's search path")
  add("ferry", "the loader's search path")
  local errors = {}
  for _, c in ipairs(candidates) do
    local ok, lib = pcall(ffi.load, c.name)
    if ok then return lib, c.name .. " (" .. c.how .. ")" end
    errors[#errors + 1] = tostring(lib)
  end
  error("ferry: cannot load libferry: install it where the loader looks, install the " ..
        "ferry-arrow rock, or set FERRY_LIBRARY to its path (" .. table.concat(errors, "; ") .. ")", 2)
end

local lib, library_path = load_library()
local C = ffi.C
-- errno codes, read from the library (ferry_errno_name) once it is loaded.
local errno_codes = {}
for code = 1, 255 do
  local name = lib.ferry_errno_name(code)
  if name ~= nil then errno_codes[ffi.string(name)] = code end
end
local EIO, EINVAL, ERANGE = errno_codes.EIO, errno_codes.EINVAL, errno_codes.ERANGE
local CPU = abi.constants.ARROW_DEVICE_CPU

local backend = { name = "luajit", lib = lib, ffi = ffi, library_path = library_path }

-- ---- the normalised raw layer -------------------------------------------

-- Error buffers: one per nesting depth (callbacks may re-enter).
local error_pool, error_depth = {}, 0
local function acquire_error()
  error_depth = error_depth + 1
  local e = error_pool[error_depth]
  if not e then
    e = ffi.new("struct FerryError")
    error_pool[error_depth] = e
  end
  e.message[0] = 0
  return e
end
local function release_error(e)
  error_depth = error_depth - 1
  if e.message[0] ~= 0 then return ffi.string(e.message) end
  return nil
end

-- Buffer lists are read by the callee during the call only (ferry copies
-- them), and no Lua runs in between: one scratch block serves small lists.
local buffer_scratch = ffi.new("const void*[16]")
local function to_buffer_list(list)
  if list == nil then return nil end
  local n = #list
  local out = n <= 16 and buffer_scratch or ffi.new("const void*[?]", n)
  for i = 1, n do
    local p = list[i]
    out[i - 1] = p or nil
  end
  return out
end

-- Builds the wrapper of one function from the roles generators/lua/gen.lua
-- gave its parameters and result (the conventions the Lua 5.4 layer is
-- generated with), as straight-line source (JIT-friendly).
local function make_wrapper(fn)
  local args, call, pre, post, results = {}, {}, {}, {}, {}
  local has_error, length_box = false, false
  for i, p in ipairs(fn.params) do
    local name = "a" .. i
    local role = p.role
    if role == "error" then
      has_error = true
      pre[#pre + 1] = "local err = acquire_error()"
      call[#call + 1] = "err"
    elseif role == "length" then
      length_box = true
      pre[#pre + 1] = "local len = ffi.new('int32_t[1]')"
      call[#call + 1] = "len"
    elseif role == "out_integer" or role == "out_pointer" then
      pre[#pre + 1] = string.format("local %s = ffi.new(%q)", name, p.type:sub(1, -2) .. "[1]")
      call[#call + 1] = name
      if role == "out_integer" then
        post[#post + 1] = string.format("tonumber(%s[0])", name)
      else
        post[#post + 1] = string.format("(%s[0] ~= nil and %s[0] or nil)", name, name)
      end
    elseif role == "buffers" then
      args[#args + 1] = name
      pre[#pre + 1] = string.format("local b%d = to_buffer_list(%s)", i, name)
      call[#call + 1] = "b" .. i
    else -- integer, string, pointer, function: the FFI converts them
      args[#args + 1] = name
      call[#call + 1] = name
    end
  end
  local convert = ({
    void = nil,
    integer = "tonumber(r)",
    string = "(r ~= nil and ffi.string(r) or nil)",
    pointer = "(r ~= nil and r or nil)",
    lstring = "(r ~= nil and ffi.string(r, len[0]) or nil)",
  })[fn.result]
  assert(length_box == (fn.result == "lstring"), fn.name)
  if convert then results[#results + 1] = convert end
  for _, v in ipairs(post) do results[#results + 1] = v end
  local body = {}
  body[#body + 1] = "return function(" .. table.concat(args, ", ") .. ")"
  for _, line in ipairs(pre) do body[#body + 1] = "  " .. line end
  local invoke = "lib." .. fn.name .. "(" .. table.concat(call, ", ") .. ")"
  body[#body + 1] = (fn.result == "void" and "  " or "  local r = ") .. invoke
  if has_error then
    body[#body + 1] = "  local message = release_error(err)"
    results[#results + 1] = "message"
  end
  body[#body + 1] = "  return " .. (#results > 0 and table.concat(results, ", ") or "")
  body[#body + 1] = "end"
  local source = table.concat(body, "\n")
  local env = {
    lib = lib, ffi = ffi, tonumber = tonumber, acquire_error = acquire_error,
    release_error = release_error, to_buffer_list = to_buffer_list,
  }
  local chunk = assert(load(source, "=ferry.raw." .. fn.name, "t", env))
  if setfenv then setfenv(chunk, env) end
  return chunk()
end

local raw = {}
for _, fn in ipairs(abi.functions) do raw[fn.name] = make_wrapper(fn) end
for name, value in pairs(abi.constants) do raw[name] = value end
backend.raw = raw

-- Functions that may run a Lua callback (stream callbacks, release hooks,
-- finding sinks) must not be called from a JIT-compiled trace: LuaJIT
-- panics with "bad callback". Their wrappers stay interpreted; the JIT
-- compiles up to the call and resumes after it. backend.lib is the direct,
-- compiled path for callers that know no Lua producer is involved.
local may_call_back = {
  "ferry_array_stream_get_next", "ferry_array_stream_get_next_on", "ferry_device_array_move_to_device",
  "ferry_array_stream_get_schema", "ferry_array_stream_get_last_error",
  "ferry_array_stream_release", "ferry_array_stream_free", "ferry_schema_release", "ferry_schema_free",
  "ferry_array_release", "ferry_array_free", "ferry_device_array_release",
  "ferry_device_array_free", "ferry_validate_schema", "ferry_validate_device_array",
}
for _, name in ipairs(may_call_back) do
  if raw[name] then jit.off(raw[name]) end
end

-- How many things that can call into Lua from C exist right now: Lua-backed
-- streams plus exports whose release hook is a Lua callback (held by some
-- consumer). While it is 0, no C function can reach a Lua callback, so the
-- per-batch calls below go straight through the FFI and compile into the
-- caller's trace; otherwise they take the interpreted wrappers. The test is
-- per call, so creating a Lua stream inside a loop is safe.
local callbacks = { live = 0 }
backend.callbacks = callbacks

local interpreted_get_next = raw.ferry_array_stream_get_next
local interpreted_get_next_on = raw.ferry_array_stream_get_next_on
local interpreted_release = raw.ferry_device_array_release
local fast_error = ffi.new("struct FerryError")

--- get_next(stream, out) -> code, message (message only on failure)
function backend.get_next(stream, out)
  if callbacks.live ~= 0 then return interpreted_get_next(stream, out) end
  fast_error.message[0] = 0
  local rc = lib.ferry_array_stream_get_next(stream, out, fast_error)
  if rc == 0 then return 0 end
  return rc, ffi.string(fast_error.message)
end

--- get_next_on(stream, out, consumer_stream) -> code, message
function backend.get_next_on(stream, out, consumer_stream)
  if callbacks.live ~= 0 then return interpreted_get_next_on(stream, out, consumer_stream) end
  fast_error.message[0] = 0
  local rc = lib.ferry_array_stream_get_next_on(stream, out, consumer_stream, fast_error)
  if rc == 0 then return 0 end
  return rc, ffi.string(fast_error.message)
end

function backend.release_device_array(array)
  if callbacks.live ~= 0 then return interpreted_release(array) end
  lib.ferry_device_array_release(array)
end

local device_array_ptr = ffi.typeof("struct ArrowDeviceArray*")
function backend.is_released(array)
  return ffi.cast(device_array_ptr, array).array.release == nil
end

-- ---- handles --------------------------------------------------------------

ffi.cdef([[
struct lferry_pair { struct ArrowDeviceArray array; struct ArrowSchema schema; };
]])
local pair_ptr_t = ffi.typeof("struct lferry_pair*")
local schema_ptr_t = ffi.typeof("struct ArrowSchema*")
local interpreted_schema_release = raw.ferry_schema_release

--- release_pair(array, schema): releases both structs of a pair (interpreted
--- when a Lua callback could run).
function backend.release_pair(array, schema)
  if callbacks.live ~= 0 then
    interpreted_release(array)
    interpreted_schema_release(schema)
    return
  end
  lib.ferry_device_array_release(array)
  lib.ferry_schema_release(schema)
end

local function free_pair(pair)
  interpreted_release(pair.array)
  interpreted_schema_release(pair.schema)
  C.free(pair)
end
jit.off(free_pair)

local function new_pair()
  local p = ffi.cast(pair_ptr_t, C.calloc(1, ffi.sizeof("struct lferry_pair")))
  if p == nil then return nil end
  return p
end

-- Finalisers go through the interpreted wrappers too (release hooks may
-- call back into Lua).
local constructors = {
  pair = { new_pair, free_pair },
  schema = { lib.ferry_schema_new, raw.ferry_schema_free },
  stream = { lib.ferry_array_stream_new, raw.ferry_array_stream_free },
}
local handle_kinds = setmetatable({}, { __mode = "k" })

-- handle(kind) -> owner, pointer[, schema pointer] (the owner is the
-- ffi.gc'd pointer; a pair's pointers point into it).
function backend.handle(kind)
  local pair = constructors[kind]
  if not pair then error("ferry.handle: unknown kind " .. tostring(kind), 2) end
  local p = pair[1]()
  if p == nil then error("ferry.handle: out of memory", 2) end
  p = ffi.gc(p, pair[2])
  handle_kinds[p] = pair[2]
  if kind == "pair" then
    return p, ffi.cast(device_array_ptr, p), ffi.cast(schema_ptr_t, ffi.cast("char*", p) +
                                                      ffi.offsetof("struct lferry_pair", "schema"))
  end
  return p, p
end

function backend.handle_free(p)
  local free = handle_kinds[p]
  if free then
    handle_kinds[p] = nil
    ffi.gc(p, nil)
    free(p)
  end
end

-- ---- consuming: import, prepared schemas, the reusing batch loop ------------

-- A pair that failed validation: released (its release hooks may be Lua:
-- never from a trace), with the validator's message.
local function import_failed(array, schema, rc)
  local message = ffi.string(fast_error.message)
  interpreted_release(array)
  interpreted_schema_release(schema)
  return tonumber(rc), message
end
jit.off(import_failed)

--- import(schema_in, array_in, schema, array, level) -> code, message[, format,
--- device_type, device_id, pending]: both moves or neither, then validation.
function backend.import(schema_in, array_in, schema, array, level)
  if lib.ferry_schema_move(schema_in, schema) ~= 0 then
    return EINVAL, "the schema is NULL or already released"
  end
  if lib.ferry_device_array_move(array_in, array) ~= 0 then
    lib.ferry_schema_move(schema, schema_in) -- give it back: nothing was taken
    return EINVAL, "the array is NULL or already released"
  end
  if (level or 0) >= 0 then
    fast_error.message[0] = 0
    local rc = lib.ferry_validate_device_array(schema, array, level or 0, nil, nil, fast_error)
    if rc ~= 0 then return import_failed(array, schema, rc) end
  end
  local a, s = ffi.cast(device_array_ptr, array), ffi.cast(schema_ptr_t, schema)
  return 0, nil, s.format ~= nil and ffi.string(s.format) or nil, tonumber(a.device_type),
         tonumber(a.device_id), a.sync_event ~= nil, s.dictionary ~= nil
end

local prepared_free = lib.ferry_prepared_schema_free

--- prepare(schema) -> owner | false, code, message
function backend.prepare(schema)
  local box = ffi.new("struct FerryPreparedSchema*[1]")
  local err = acquire_error()
  local rc = lib.ferry_prepared_schema_create(schema, nil, nil, box, err)
  local message = release_error(err)
  if rc ~= 0 then return false, tonumber(rc), message end
  return ffi.gc(box[0], prepared_free)
end

function backend.prepared_free(owner)
  if owner ~= nil then
    ffi.gc(owner, nil)
    prepared_free(owner)
  end
end

--- validate_batch(prepared | nil, array, level) -> code, message, released,
--- device_type, device_id, pending (a failed batch is released)
function backend.validate_batch(prepared, array, level)
  local a = ffi.cast(device_array_ptr, array)
  if a.array.release == nil then return 0, nil, true end
  if prepared ~= nil then
    fast_error.message[0] = 0
    local rc = lib.ferry_validate_prepared(prepared, a, level or 0, nil, nil, fast_error)
    if rc ~= 0 then
      local message = ffi.string(fast_error.message)
      backend.release_device_array(a)
      return tonumber(rc), message
    end
  end
  return 0, nil, false, tonumber(a.device_type), tonumber(a.device_id), a.sync_event ~= nil
end

-- One step of `for batch in stream:batches{ reuse = true }`: the same work
-- as batch_step in src/lferry_support.c. A shared function and a state
-- table (a closure per loop would make every new loop miss the trace);
-- compiled whenever no Lua callback can run (get_next and
-- release_device_array pick the path per call).
local function batch_finish(state, code, message)
  state.done = true
  state.finish(code, message)
  return nil
end

local function batch_step(state)
  if state.done then -- finish() raises the stream's error again, if it failed
    state.finish()
    return nil
  end
  if handle_kinds[state.stream] == nil then return batch_finish(state, EINVAL, "stream already released") end
  local out = state.out
  if handle_kinds[state.owner] == nil then return batch_finish(state, EINVAL, "the loop's batch was freed") end
  if out.array.release ~= nil then backend.release_device_array(out) end
  local code, message
  if state.mode == 0 then
    code, message = backend.get_next(state.stream, out)
  else
    code, message = backend.get_next_on(state.stream, out, state.consumer)
  end
  if code ~= 0 then return batch_finish(state, code, message) end
  if out.array.release == nil then return batch_finish(state, 0) end
  local device_type, device_id, pending
  code, message, _, device_type, device_id, pending = backend.validate_batch(state.prepared, out, 0)
  if code ~= 0 then return batch_finish(state, code, message) end
  local object = state.object
  object._released = false
  object._host_ok = device_type == CPU and not pending
  object._device_type, object._device_id = device_type, device_id
  return object
end

--- batch_iterator(stream_owner, array_owner, object, finish, consumer, mode, prepared) -> f, s
function backend.batch_iterator(stream, out, object, finish, consumer, mode, prepared)
  return batch_step, { stream = stream, owner = out, out = ffi.cast(device_array_ptr, out),
                       object = object, finish = finish,
                       consumer = consumer, mode = mode or 0, prepared = prepared, done = false }
end

-- ---- memory readers ----------------------------------------------------------

local element_ctypes = {
  i8 = ffi.typeof("const int8_t*"), i16 = ffi.typeof("const int16_t*"),
  i32 = ffi.typeof("const int32_t*"), i64 = ffi.typeof("const int64_t*"),
  u8 = ffi.typeof("const uint8_t*"), u16 = ffi.typeof("const uint16_t*"),
  u32 = ffi.typeof("const uint32_t*"), u64 = ffi.typeof("const uint64_t*"),
  f32 = ffi.typeof("const float*"), f64 = ffi.typeof("const double*"),
}
local writable_ctypes = {
  i8 = ffi.typeof("int8_t*"), i16 = ffi.typeof("int16_t*"), i32 = ffi.typeof("int32_t*"),
  i64 = ffi.typeof("int64_t*"), u8 = ffi.typeof("uint8_t*"), u16 = ffi.typeof("uint16_t*"),
  u32 = ffi.typeof("uint32_t*"), u64 = ffi.typeof("uint64_t*"), f32 = ffi.typeof("float*"),
  f64 = ffi.typeof("double*"),
}
local element_widths = { i8 = 1, i16 = 2, i32 = 4, i64 = 8, u8 = 1, u16 = 2, u32 = 4, u64 = 8,
                         f32 = 4, f64 = 8 }
local bytes_ctype = ffi.typeof("const uint8_t*")

-- read(pointer, kind, index): 64-bit kinds return exact int64_t/uint64_t cdata.
function backend.read(p, kind, i)
  if p == nil then error("ferry.read: NULL buffer", 2) end
  if kind == "bits" then
    local byte = ffi.cast(bytes_ctype, p)[math.floor(i / 8)]
    return bit.band(bit.rshift(byte, i % 8), 1) == 1
  end
  local v = ffi.cast(element_ctypes[kind], p)[i]
  if kind == "i64" or kind == "u64" then return v end
  return tonumber(v)
end

function backend.read_bytes(p, start, length)
  if length == 0 then return "" end
  return ffi.string(ffi.cast(bytes_ctype, p) + start, length)
end

-- ---- bounds-checked reads (the same checks as src/lferry_support.c) ---------

local array_ptr_t = ffi.typeof("const struct ArrowArray*")
local i32_ptr_t, i64_ptr_t = ffi.typeof("const int32_t*"), ffi.typeof("const int64_t*")

-- An int64_t (cdata) or a number as the decimal integer it is (exact past 2^53).
local function integer_text(v)
  if type(v) == "number" then
    if v == math.floor(v) and math.abs(v) < 2 ^ 63 then
      return (tostring(ffi.new("int64_t", v)):gsub("LL$", ""))
    end
    return tostring(v)
  end
  return (tostring(ffi.cast("int64_t", v)):gsub("LL$", ""))
end

local function bit_at(p, i)
  return bit.band(bit.rshift(ffi.cast(bytes_ctype, p)[math.floor(i / 8)], i % 8), 1) == 1
end

-- What a reader refuses to read: the rule and messages of src/lferry_support.c
-- (see there why): a declaration needing more than 2^48 bytes in a buffer,
-- or more than 2^51 elements (offset included), is refused before any read.
local MAX_BUFFER_BYTES = 2 ^ 48
local MAX_SLOTS = MAX_BUFFER_BYTES * 8

-- nil when `count` elements of `width` bytes fit, else false, code, message.
local function check_buffer_bytes(a, b, count, width)
  if count * width <= MAX_BUFFER_BYTES then return nil end
  return false, EINVAL, string.format(
    "buffer %d of length %s at offset %s needs %s bytes, more than a process can address (2^48)",
    b, integer_text(a.length), integer_text(a.offset), integer_text(count * width))
end

-- The physical slot of logical element i, or nil, code, message.
local function physical_index(a, i)
  if a.release == nil then return nil, EINVAL, "the array is released" end
  local length, offset = tonumber(a.length), tonumber(a.offset)
  if length < 0 or offset < 0 or length > MAX_SLOTS - offset then
    return nil, EINVAL, string.format(
      "length %s or offset %s is negative or too large: a reader takes at most 2^51 elements " ..
      "(offset included), a bitmap of the largest buffer a process can address (2^48 bytes)",
      integer_text(a.length), integer_text(a.offset))
  end
  if type(i) ~= "number" or i % 1 ~= 0 then
    return nil, ERANGE, "index " .. tostring(i) .. " is not an integer"
  end
  if i < 0 or i >= length then
    return nil, ERANGE, string.format("index %d is out of range for a length of %d", i, length)
  end
  return offset + i
end

-- The array at `array` and the physical slot of its element i; with
-- `n_buffers`, also checks that it has the buffers of a `layout` array.
-- On failure: a, nil, code, message.
local function element_slot(array, i, n_buffers, layout)
  local a = ffi.cast(array_ptr_t, array)
  local slot, code, message = physical_index(a, i)
  if slot and n_buffers and a.n_buffers < n_buffers then
    return a, nil, EINVAL, string.format("a %s array has %d buffers, not %d", layout, n_buffers,
                                         tonumber(a.n_buffers))
  end
  return a, slot, code, message
end

local function buffer_at(a, b)
  if a.buffers == nil or b >= a.n_buffers then return nil end
  local p = a.buffers[b]
  return p ~= nil and p or nil
end

local function is_null_at(a, slot)
  local validity = buffer_at(a, 0)
  return a.null_count ~= 0 and validity ~= nil and not bit_at(validity, slot)
end

function backend.value(array, kind, i)
  local a, slot, code, message = element_slot(array, i, 2, "fixed-width")
  if not slot then return false, code, message end
  if kind ~= "bits" then -- bits: the bitmap fits by physical_index's limit
    local width = element_widths[kind]
    if not width then error("ferry: unknown element kind '" .. tostring(kind) .. "'", 2) end
    local bad, code2, message2 = check_buffer_bytes(a, 1, tonumber(a.offset) + tonumber(a.length), width)
    if bad == false then return false, code2, message2 end
  end
  if is_null_at(a, slot) then return true, nil end
  local p = buffer_at(a, 1)
  if p == nil then
    return false, EINVAL, string.format("buffer 1 (values) is NULL in an array of length %d",
                                        tonumber(a.length))
  end
  if kind == "bits" then return true, bit_at(p, slot) end
  local ctype = element_ctypes[kind]
  if not ctype then error("ferry: unknown element kind '" .. tostring(kind) .. "'", 2) end
  local v = ffi.cast(ctype, p)[slot]
  if kind == "i64" or kind == "u64" then return true, v end
  return true, tonumber(v)
end

-- The offsets buffer (buffer 1) as typed offsets, checked to hold
-- offset + length + 1 of them; nil, code, message when it cannot.
local function offsets_buffer(a, large)
  local offsets = buffer_at(a, 1)
  if offsets == nil then
    return nil, EINVAL, string.format("buffer 1 (offsets) is NULL in an array of length %d",
                                      tonumber(a.length))
  end
  local bad, code, message = check_buffer_bytes(a, 1, tonumber(a.offset) + tonumber(a.length) + 1,
                                                 large and 8 or 4)
  if bad == false then return nil, code, message end
  return ffi.cast(large and i64_ptr_t or i32_ptr_t, offsets)
end

-- Offsets of slot and slot + 1 (of offsets_buffer's), checked against each
-- other and `limit`.
local function read_offsets(a, typed, slot, limit)
  local first, last = tonumber(typed[slot]), tonumber(typed[slot + 1])
  if first < 0 or first > last or last > limit then
    return nil, EINVAL, string.format(
      "offsets %d and %d of element %d are decreasing, negative or past the end (%d)", first, last,
      slot - tonumber(a.offset), limit)
  end
  return first, last
end

function backend.bytes(array, large, i)
  local a, slot, code, message = element_slot(array, i, 3, "binary or utf8")
  if not slot then return false, code, message end
  if is_null_at(a, slot) then return true, nil end
  local typed, code2, message2 = offsets_buffer(a, large)
  if not typed then return false, code2, message2 end
  local size = tonumber(typed[a.offset + a.length])
  if size > MAX_BUFFER_BYTES then
    return false, EINVAL, string.format(
      "buffer 2 (data) of length %s at offset %s needs %s bytes by its last offset, more than a " ..
      "process can address (2^48)", integer_text(a.length), integer_text(a.offset), integer_text(size))
  end
  local first, last, why = read_offsets(a, typed, slot, size)
  if not first then return false, last, why end
  local data = buffer_at(a, 2)
  if data == nil and last > first then
    return false, EINVAL, string.format("buffer 2 (data) is NULL but element %d is not empty", i)
  end
  if last == first then return true, "" end
  return true, ffi.string(ffi.cast(bytes_ctype, data) + first, last - first)
end

function backend.list_bounds(array, large, i)
  local a, slot, code, message = element_slot(array, i)
  if not slot then return false, code, message end
  if a.n_children ~= 1 or a.children == nil or a.children[0] == nil then
    return false, EINVAL, string.format("a list array has one child, not %d", tonumber(a.n_children))
  end
  if a.n_buffers < 2 then
    return false, EINVAL, string.format("a list array has 2 buffers, not %d", tonumber(a.n_buffers))
  end
  local typed, code2, message2 = offsets_buffer(a, large)
  if not typed then return false, code2, message2 end
  local first, last, why = read_offsets(a, typed, slot, tonumber(a.children[0].length))
  if not first then return false, last, why end
  return true, first, last
end

function backend.is_valid(array, i)
  local a, slot, code, message = element_slot(array, i)
  if not slot then return false, code, message end
  return true, not is_null_at(a, slot)
end

function backend.validity_bit(array, i)
  local a, slot, code, message = element_slot(array, i)
  if not slot then return false, code, message end
  local validity = buffer_at(a, 0)
  if validity == nil then return true, nil end
  return true, bit_at(validity, slot)
end

function backend.pointer_add(p, bytes) return ffi.cast("const uint8_t*", p) + bytes end
function backend.address(p) return tonumber(ffi.cast("uintptr_t", p)) end
function backend.to_integer(value) return tonumber(value) end

-- ---- keepers: what an export owns until its consumer releases it -----------

local keepers, next_keeper_id, live = {}, 0, 0

local function keeper_destroy(k)
  keepers[k.id] = nil
  for i = #k.entries, 1, -1 do
    local e = k.entries[i]
    if e.kind == "malloc" then
      C.free(e.ptr)
    elseif e.kind == "device" then
      lib.ferry_device_deallocate(e.device, e.ptr, nil)
    elseif e.kind == "stream" then
      lib.ferry_device_stream_synchronize(e.device, e.ptr, nil)
      lib.ferry_device_stream_destroy(e.device, e.ptr, nil)
    elseif e.kind == "event" then
      lib.ferry_device_event_destroy(e.device, e.ptr, nil)
    elseif e.kind == "call" then
      pcall(e.destroy, e.ptr) -- the owner's destructor; a failure has no one to go to
    end
    -- "string" entries only anchor a Lua string: dropping the table frees it.
  end
  live = live - #k.entries
  k.entries = {}
end

-- The release hook of every export: looks the keeper up by id.
local keeper_hook = ffi.cast("FerryReleaseHook", function(user_data)
  local k = keepers[tonumber(ffi.cast("intptr_t", user_data))]
  if k then
    callbacks.live = callbacks.live - 1 -- counted at keeper_disown
    pcall(keeper_destroy, k)
  end
end)

function backend.keeper_new()
  next_keeper_id = next_keeper_id + 1
  local k = { id = next_keeper_id, entries = {}, owned = true }
  keepers[k.id] = k
  return k
end
function backend.keeper_pointer(k) return ffi.cast("void*", k.id) end
function backend.keeper_disown(k)
  if k.owned then
    k.owned = false
    callbacks.live = callbacks.live + 1 -- a consumer now holds a Lua release hook
  end
end
function backend.keeper_free(k) if k.owned then k.owned = false; keeper_destroy(k) end end
function backend.keeper_hook() return keeper_hook end

local function add_entry(k, entry)
  k.entries[#k.entries + 1] = entry
  live = live + 1
end

local function check_element(v, i, kind)
  if v == nil then return end
  if kind == "bits" then
    if v ~= true and v ~= false and v ~= 0 and v ~= 1 then
      error(string.format("ferry.pack: element %d must be a boolean, 0 or 1, got %s", i, type(v)), 3)
    end
  elseif kind == "f32" or kind == "f64" then
    if type(v) ~= "number" then
      error(string.format("ferry.pack: element %d must be a number, got %s", i, type(v)), 3)
    end
  elseif type(v) == "number" then
    if v ~= math.floor(v) then
      error(string.format("ferry.pack: element %d must be an integer for %s, got a float", i, kind), 3)
    end
    local width = element_widths[kind] * 8
    if width < 64 and (v < -2 ^ (width - 1) or v > 2 ^ width - 1) then
      error(string.format("ferry.pack: element %d (%d) does not fit in %s", i, v, kind), 3)
    end
  elseif not (type(v) == "cdata" and (kind == "i64" or kind == "u64")) then
    error(string.format("ferry.pack: element %d must be an integer for %s, got %s", i, kind,
                        type(v)), 3)
  end
end

-- keeper_pack(k, kind, table, n) -> pointer, size
function backend.keeper_pack(k, kind, values, n)
  if kind ~= "bits" and not element_ctypes[kind] then
    error("ferry.pack: unknown element kind " .. tostring(kind), 2)
  end
  for i = 1, n do check_element(values[i], i, kind) end
  local size = kind == "bits" and math.floor((n + 7) / 8) or n * element_widths[kind]
  local p = C.calloc(1, size > 0 and size or 1)
  if p == nil then error("ferry.pack: out of memory", 2) end
  add_entry(k, { kind = "malloc", ptr = p })
  if kind == "bits" then
    local bytes = ffi.cast("uint8_t*", p)
    for i = 1, n do
      local v = values[i]
      if v == true or v == 1 then
        local at = i - 1
        bytes[math.floor(at / 8)] = bit.bor(bytes[math.floor(at / 8)], bit.lshift(1, at % 8))
      end
    end
  else
    local typed = ffi.cast(writable_ctypes[kind], p)
    for i = 1, n do
      local v = values[i]
      if v ~= nil then
        if (kind == "i64" or kind == "u64") and type(v) == "number" then
          typed[i - 1] = v
        elseif kind:sub(1, 1) == "u" and kind ~= "u64" and type(v) == "number" and v < 0 then
          typed[i - 1] = v + 2 ^ (element_widths[kind] * 8)
        elseif kind:sub(1, 1) == "i" and kind ~= "i64" and type(v) == "number" and
               v >= 2 ^ (element_widths[kind] * 8 - 1) then
          typed[i - 1] = v - 2 ^ (element_widths[kind] * 8)
        else
          typed[i - 1] = v
        end
      end
    end
  end
  return p, size
end

function backend.keeper_alloc(k, size)
  local p = C.calloc(1, size > 0 and size or 1)
  if p == nil then error("ferry.alloc: out of memory", 2) end
  add_entry(k, { kind = "malloc", ptr = p })
  return p
end

-- keeper_string(k, s) -> pointer, size: the string's own bytes (zero-copy),
-- anchored by the keeper until release.
function backend.keeper_string(k, s)
  add_entry(k, { kind = "string", value = s })
  return ffi.cast("const char*", s), #s
end

function backend.keeper_to_device(k, host, size, device, stream)
  local err = acquire_error()
  local function fail(rc)
    return nil, tonumber(rc), release_error(err)
  end
  if stream == nil and not k.device_stream then
    local box = ffi.new("void*[1]")
    local rc = lib.ferry_device_stream_create(device, box, err)
    if rc ~= 0 then return fail(rc) end
    add_entry(k, { kind = "stream", ptr = box[0], device = device })
    k.device_stream = box[0]
  end
  stream = stream or k.device_stream
  local box = ffi.new("void*[1]")
  local rc = lib.ferry_device_allocate(device, size > 0 and size or 1, box, err)
  if rc ~= 0 then return fail(rc) end
  add_entry(k, { kind = "device", ptr = box[0], device = device })
  if size > 0 then
    local cpu = ffi.new("struct FerryDevice*[1]")
    rc = lib.ferry_device_resolve(1, -1, cpu, err)
    if rc == 0 then rc = lib.ferry_device_memcpy(device, box[0], cpu[0], host, size, stream, err) end
    if rc ~= 0 then return fail(rc) end
  end
  release_error(err)
  return box[0]
end

function backend.keeper_device_stream(k) return k.device_stream end

--- keeper_adopt(k, what, device, pointer, destroy) -> true: the keeper owns a
--- native event ("event") or device memory ("memory"); destroy(pointer) runs
--- instead of ferry's destructor when given.
function backend.keeper_adopt(k, what, device, pointer, destroy)
  if what ~= "event" and what ~= "memory" then
    error("ferry.keeper_adopt: \"event\" or \"memory\" expected, got " .. tostring(what), 2)
  end
  if device == nil then error("ferry.keeper_adopt: device expected", 2) end
  if pointer == nil then error("ferry.keeper_adopt: pointer expected", 2) end
  if destroy ~= nil and type(destroy) ~= "function" then
    error("ferry.keeper_adopt: function or nil expected", 2)
  end
  local kind = destroy and "call" or (what == "event" and "event" or "device")
  add_entry(k, { kind = kind, ptr = pointer, device = device, destroy = destroy })
  return true
end

-- ---- streams produced by Lua functions ---------------------------------------

local streams, next_stream_id = {}, 0

local function write_error(err, message)
  message = tostring(message)
  local n = math.min(#message, 1023)
  ffi.copy(err.message, message, n)
  err.message[n] = 0
end

local function describe(value)
  if type(value) == "table" then return value.code, value.message or tostring(value) end
  return nil, tostring(value)
end

local function handler(e)
  if type(e) == "table" then return e end
  return debug.traceback(tostring(e), 2)
end

-- Writes a failed callback's outcome into `err`; runs under pcall.
local function report(err, ok, r1, r2, r3)
  local code, message
  if not ok then
    code, message = describe(r1)
    code = code or EIO
  else
    code, message = describe(r2)
    code = code or (type(r3) == "number" and r3 > 0 and r3) or EIO
  end
  write_error(err, message)
  return code
end

-- One protected call per callback on the success path: the producer's
-- function runs under xpcall (traceback handler); only a failure pays for
-- a second, protected, report. Nothing before xpcall can raise.
local function trampoline(field)
  return function(user_data, out, err)
    local ctx = streams[tonumber(ffi.cast("intptr_t", user_data))]
    if not ctx then
      pcall(write_error, err, "ferry: stream producer state is gone")
      return EIO
    end
    local ok, r1, r2, r3 = xpcall(ctx[field], handler, out)
    if ok and r2 == nil then return 0 end
    local reported, code = pcall(report, err, ok, r1, r2, r3)
    if reported then return code end
    return EIO
  end
end

local get_schema_callback = ffi.cast("FerryStreamGetSchemaFn", trampoline("get_schema"))
local get_next_callback = ffi.cast("FerryStreamGetNextFn", trampoline("get_next"))
local stream_release_callback = ffi.cast("FerryReleaseHook", function(ud)
  local id = tonumber(ffi.cast("intptr_t", ud))
  if streams[id] then
    streams[id] = nil
    live = live - 1
    callbacks.live = callbacks.live - 1
  end
end)

-- stream_export(out, device_type, get_schema, get_next) -> code, message
function backend.stream_export(out, device_type, get_schema, get_next)
  next_stream_id = next_stream_id + 1
  local id = next_stream_id
  streams[id] = { get_schema = get_schema, get_next = get_next }
  live = live + 1
  local err = acquire_error()
  local rc = lib.ferry_array_stream_init(out, device_type, get_schema_callback, get_next_callback,
                                   stream_release_callback, ffi.cast("void*", id), err)
  local message = release_error(err)
  if rc ~= 0 then
    streams[id] = nil
    live = live - 1
  else
    callbacks.live = callbacks.live + 1
  end
  return rc, message
end

-- ---- producing: one flat CPU array in one call -----------------------------------

-- No Lua runs between the two calls: one scratch struct serves every export.
local flat_tmp = ffi.new("struct ArrowArray")
local flat_size = ffi.sizeof("struct ArrowArray")

--- export_flat(out, length, null_count, offset, buffers, n_buffers) -> code,
--- message: a CPU array without children over borrowed buffers (as on 5.4).
function backend.export_flat(out, length, null_count, offset, buffers, n)
  local list = to_buffer_list(buffers)
  local err = acquire_error()
  ffi.fill(flat_tmp, flat_size)
  local rc = lib.ferry_array_init(flat_tmp, length, null_count, offset, n, list, 0, nil, nil, err)
  if rc == 0 then rc = lib.ferry_device_array_init(out, flat_tmp, 1, -1, nil, nil, nil, err) end
  if rc ~= 0 and flat_tmp.release ~= nil then lib.ferry_array_release(flat_tmp) end
  local message = release_error(err)
  return rc, message
end

-- ---- validation and counters ---------------------------------------------------

function backend.validate(schema, array, level)
  local findings = {}
  local sink = ffi.cast("FerryFindingFn", function(_, rule, where, what)
    pcall(function()
      findings[#findings + 1] = {
        rule = rule ~= nil and ffi.string(rule) or "",
        where = where ~= nil and ffi.string(where) or "",
        what = what ~= nil and ffi.string(what) or "",
      }
    end)
  end)
  local err = acquire_error()
  local rc
  if array ~= nil then
    rc = lib.ferry_validate_device_array(schema, array, level or 0, sink, nil, err)
  else
    rc = lib.ferry_validate_schema(schema, sink, nil, err)
  end
  local message = release_error(err)
  sink:free()
  return tonumber(rc), message, findings
end

-- The finding sink is a Lua callback: never call validation from a trace.
jit.off(backend.validate)

-- ---- DLPack tensors ----------------------------------------------------------------

local tensor_ptr = ffi.typeof("DLManagedTensorVersioned*")

--- dlpack_info(tensor) -> table of the tensor's fields (the data is not read)
function backend.dlpack_info(tensor)
  local t = ffi.cast(tensor_ptr, tensor)
  local d = t.dl_tensor
  local ndim = tonumber(d.ndim)
  local info = {
    major = tonumber(t.version.major), minor = tonumber(t.version.minor),
    flags = tonumber(t.flags), data = d.data ~= nil and d.data or nil,
    device_type = tonumber(d.device.device_type), device_id = tonumber(d.device.device_id),
    ndim = ndim, code = tonumber(d.dtype.code), bits = tonumber(d.dtype.bits),
    lanes = tonumber(d.dtype.lanes), byte_offset = tonumber(d.byte_offset), shape = {},
  }
  for i = 0, ndim - 1 do
    if d.shape ~= nil then info.shape[i + 1] = tonumber(d.shape[i]) end
  end
  if d.strides ~= nil then
    info.strides = {}
    for i = 0, ndim - 1 do info.strides[i + 1] = tonumber(d.strides[i]) end
  end
  return info
end

--- dlpack_delete(tensor): calls the deleter (may release a Lua export, so
--- never from a trace).
function backend.dlpack_delete(tensor)
  local t = ffi.cast(tensor_ptr, tensor)
  if t.deleter ~= nil then t.deleter(t) end
end
jit.off(backend.dlpack_delete)

-- LuaJIT runs no __gc on tables: a finaliser is attached to a cdata copy of
-- the pointer instead, and dropped when ownership ends another way.
function backend.gc_anchor(ptr, finaliser)
  return ffi.gc(ffi.cast("void*", ptr), finaliser)
end
function backend.gc_anchor_drop(anchor) ffi.gc(anchor, nil) end

function backend.live_allocations() return live end

return backend
