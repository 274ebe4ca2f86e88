-- Lua handoff benchmark (not a test). Run on both interpreters with
--   bindings/lua/bench.sh              (runs lua5.4 and luajit; CMake builds the helper)
-- It prints, for the interpreter it runs on, the raw boundary floors measured
-- in the same run and the handoff shapes next to them:
--   floor_lua_to_c     one trivial Lua -> C call
--   floor_c_to_lua     one C -> Lua call (lua_pcall via a registry ref on 5.4,
--                      an FFI callback on LuaJIT)
--   c_to_lua_raw       C stream consumed from Lua with raw calls per batch
--                      (get_next + end check + length + release): this shape's floor
--   c_to_lua           the same through `for batch in stream:batches{reuse=true}`
--   c_to_lua_objects   the same with a new DeviceArray object per batch
--   array_raw          a C array (static, the cheapest producer) consumed with raw calls:
--                      move schema and array in, read the length, release both
--   array_lean         the same through ferry.importer() (one reused DeviceArray;
--                      validation, length and value(0) with bounds checks)
--   array_everyday     the same through ferry.import (the README's first path:
--                      a new DeviceArray per array)
--   lua_to_c_raw       Lua producer filling each batch with raw calls, pulled by C
--   lua_to_c           Lua producer through ferry.stream (node -> export), pulled by C
--   lua_round_trip     Lua producer -> Lua consumer (ferry.stream + batches())
-- and ratios of each shape to its raw floor (target: within 1.5x, PASS/MISS).
-- Output lines: RESULT <lua5.4|luajit> <case> <ns/op>
local ferry = require("ferry")
local raw = ferry.raw
local backend = ferry._backend
local name = ferry.backend
local N = tonumber(os.getenv("FERRY_BENCH_N") or "") or 200000
local REPEAT = 5

local clock
local bench_c
if name == "luajit" then
  local ffi = require("ffi")
  ffi.cdef([[
    int64_t lferry_bench_noop(int64_t x);
    int lferry_bench_c_stream(struct ArrowDeviceArrayStream* out, int64_t n);
    int lferry_bench_c_array(struct ArrowSchema* schema, struct ArrowDeviceArray* out);
    double lferry_bench_consume(struct ArrowDeviceArrayStream* stream, int64_t n);
    double lferry_bench_callback(int64_t (*fn)(int64_t), int64_t n);
    struct lferry_timespec { long tv_sec; long tv_nsec; };
    int clock_gettime(int clock, struct lferry_timespec* ts);
  ]])
  local lib = ffi.load(os.getenv("FERRY_BUILD_DIR") .. "/lua/bench/liblferry_bench.so")
  local ts = ffi.new("struct lferry_timespec")
  clock = function()
    ffi.C.clock_gettime(1, ts)
    return tonumber(ts.tv_sec) * 1e9 + tonumber(ts.tv_nsec)
  end
  local callback = ffi.cast("int64_t (*)(int64_t)", function(x) return x + 1 end)
  bench_c = {
    noop = lib.lferry_bench_noop,
    c_stream = function(ptr, n) return lib.lferry_bench_c_stream(ptr, n) end,
    c_array = lib.lferry_bench_c_array,
    consume = function(ptr, n) return tonumber(lib.lferry_bench_consume(ptr, n)) end,
    c_to_lua_floor = function(n) return tonumber(lib.lferry_bench_callback(callback, n)) end,
  }
else
  package.cpath = os.getenv("FERRY_BUILD_DIR") .. "/lua/bench/?.so;" .. package.cpath
  local m = require("lferry_bench54")
  clock = function() return os.clock() * 1e9 end
  bench_c = {
    noop = m.noop,
    c_stream = m.c_stream,
    c_array = m.c_array,
    consume = m.consume,
    c_to_lua_floor = function(n) return m.pcall_floor(function(x) return x end, n) end,
  }
end

-- min and median over REPEAT runs of fn(n) -> ns per op
local function measure(fn)
  local samples = {}
  fn(math.floor(N / 10)) -- warm-up (and JIT)
  for r = 1, REPEAT do samples[r] = fn(N) end
  table.sort(samples)
  return samples[1], samples[math.ceil(REPEAT / 2)]
end

local function timed(body)
  return function(n)
    local start = clock()
    body(n)
    return (clock() - start) / n
  end
end

local results = {}
local function record(case, fn)
  local min, median = measure(fn)
  results[case] = min
  print(string.format("RESULT %s %s %.1f", name, case, min))
  io.stderr:write(string.format("  %-18s min %8.1f  median %8.1f ns/op\n", case, min, median))
end

-- ---- floors -----------------------------------------------------------------
local noop = bench_c.noop
record("floor_lua_to_c", timed(function(n)
  local acc = 0
  for _ = 1, n do acc = noop(acc) end
end))
record("floor_c_to_lua", function(n) return bench_c.c_to_lua_floor(n) end)

-- ---- C -> Lua: a C stream consumed from Lua -----------------------------------
local function c_stream(n)
  local owner, ptr = backend.handle("stream")
  assert(bench_c.c_stream(ptr, n) == 0)
  return ferry.import_stream(ptr), owner
end

record("c_to_lua_raw", function(n)
  local stream, owner = c_stream(n)
  local sptr = stream:pointer()
  local a_owner, out = backend.handle("pair")
  local arr = raw.ferry_device_array_array(out)
  -- LuaJIT: the direct FFI functions (a C producer cannot call back into Lua)
  local direct = backend.lib or raw
  local get_next, length, release = raw.ferry_array_stream_get_next, direct.ferry_array_length,
                                    direct.ferry_device_array_release
  if backend.lib then
    local lib = backend.lib
    get_next = function(s, o) return lib.ferry_array_stream_get_next(s, o, nil) end
  end
  local is_released = direct.ferry_device_array_is_released
  local start = clock()
  local sum = 0
  -- the minimal correct protocol: pull, check for the end, read, release
  for _ = 1, n do
    get_next(sptr, out)
    if is_released(out) == 1 then break end
    sum = sum + tonumber(length(arr))
    release(out)
  end
  local per = (clock() - start) / n
  backend.handle_free(a_owner)
  stream:release()
  backend.handle_free(owner)
  assert(sum == 8 * n)
  return per
end)

-- Reads the n batches of `stream` (8 values each) through batches(): one
-- reused object (`reuse`) or a new one per batch, released at once. Returns
-- ns per batch and releases the stream.
local function read_batches(stream, n, reuse)
  stream:schema()
  local start = clock()
  local sum = 0
  if reuse then
    for batch in stream:batches{ reuse = true } do sum = sum + batch:length() end
  else
    for batch in stream:batches() do
      sum = sum + batch:length()
      batch:release()
    end
  end
  local per = (clock() - start) / n
  stream:release()
  assert(sum == 8 * n)
  return per
end

-- The C stream of n batches read through batches().
local function c_to_lua(reuse)
  return function(n)
    local stream, owner = c_stream(n)
    local per = read_batches(stream, n, reuse)
    backend.handle_free(owner)
    return per
  end
end
record("c_to_lua", c_to_lua(true))
record("c_to_lua_objects", c_to_lua(false))

-- ---- C -> Lua: arrays ----------------------------------------------------------------
local c_array = bench_c.c_array
local slots, into = ferry.array_slots(), ferry.array_slots()

record("array_raw", function(n)
  local sp, ap, sp2, ap2 = slots.schema, slots.array, into.schema, into.array
  local direct = backend.lib or raw -- LuaJIT: the direct FFI functions
  local schema_move, array_move = direct.ferry_schema_move, direct.ferry_device_array_move
  local length, release, schema_release = direct.ferry_array_length, direct.ferry_device_array_release,
                                          direct.ferry_schema_release
  local arr = raw.ferry_device_array_array(ap2)
  local sum = 0
  local start = clock()
  for _ = 1, n do
    c_array(sp, ap)
    schema_move(sp, sp2)
    array_move(ap, ap2)
    sum = sum + tonumber(length(arr))
    release(ap2)
    schema_release(sp2)
  end
  local per = (clock() - start) / n
  assert(sum == 8 * n)
  return per
end)

record("array_lean", function(n)
  local sp, ap = slots.schema, slots.array
  local importer = ferry.importer()
  local sum = 0
  local start = clock()
  for _ = 1, n do
    c_array(sp, ap)
    local a = importer:import(ap, sp)
    sum = sum + a:length() + a:value(0)
    a:release()
  end
  local per = (clock() - start) / n
  importer:close()
  assert(sum == 9 * n)
  return per
end)

record("array_everyday", function(n)
  local sp, ap = slots.schema, slots.array
  local import = ferry.import
  local sum = 0
  local start = clock()
  for _ = 1, n do
    c_array(sp, ap)
    local a = import(ap, sp)
    sum = sum + a:length() + a:value(0)
    a:release()
  end
  local per = (clock() - start) / n
  assert(sum == 9 * n)
  return per
end)

-- ---- Lua -> C: a Lua producer pulled by C ------------------------------------------
-- One long-lived buffer of 8 int32 values, shared by every batch (zero-copy).
local keep = backend.keeper_new()
local values_ptr = backend.keeper_pack(keep, "i32", { 1, 2, 3, 4, 5, 6, 7, 8 }, 8)
local schema_node = { format = "i", name = "values", length = 0, buffers = { n = 0 } }

record("lua_to_c_raw", function(n)
  local tmp = raw.ferry_array_new()
  local buffers = { false, values_ptr }
  local array_init, device_array_init = raw.ferry_array_init, raw.ferry_device_array_init
  local remaining = n
  local owner, ptr = backend.handle("stream")
  local code = backend.stream_export(ptr, 1, function(out)
    ferry.export_schema_to(schema_node, out)
  end, function(out)
    if remaining == 0 then return end
    remaining = remaining - 1
    array_init(tmp, 8, 0, 0, 2, buffers, 0, nil, nil)
    device_array_init(out, tmp, 1, -1, nil, nil, nil)
  end)
  assert(code == 0)
  local per = bench_c.consume(ptr, n)
  backend.handle_free(owner)
  raw.ferry_array_free(tmp)
  return per
end)

-- A Lua producer of n batches through ferry.stream, each the same node over
-- the shared buffer.
local function lua_stream(n)
  local remaining = n
  local node = { format = "i", name = "values", length = 8,
                 buffers = { false, { pointer = values_ptr, size = 32 }, n = 2 } }
  return ferry.stream(schema_node, function()
    if remaining == 0 then return nil end
    remaining = remaining - 1
    return node
  end)
end

record("lua_to_c", function(n)
  local stream = lua_stream(n)
  local per = bench_c.consume(stream:pointer(), n)
  stream:release()
  return per
end)

record("lua_round_trip", function(n) return read_batches(lua_stream(n), n, true) end)
backend.keeper_free(keep)

-- ---- ratios ---------------------------------------------------------------------------
-- Each shape against the floor measured in this same run: PASS when within
-- 1.5x (the binding's target), MISS otherwise.
local function ratio(label, value, floor)
  local r = value / floor
  print(string.format("RATIO %s %s %.2f %s", name, label, r, r <= 1.5 and "PASS" or "MISS"))
end
ratio("array_lean/array_raw", results.array_lean, results.array_raw)
ratio("array_everyday/array_raw", results.array_everyday, results.array_raw)
ratio("c_to_lua/c_to_lua_raw", results.c_to_lua, results.c_to_lua_raw)
ratio("c_to_lua_objects/c_to_lua_raw", results.c_to_lua_objects, results.c_to_lua_raw)
ratio("c_to_lua_raw/(4*floor_lua_to_c)", results.c_to_lua_raw, 4 * results.floor_lua_to_c)
ratio("lua_to_c/lua_to_c_raw", results.lua_to_c, results.lua_to_c_raw)
ratio("lua_to_c_raw/(floor_c_to_lua+2*floor_lua_to_c)", results.lua_to_c_raw,
      results.floor_c_to_lua + 2 * results.floor_lua_to_c)
