-- Instruction counts of the consumer paths (not a test): bench.sh runs this
-- file under callgrind twice per case, with N and 2N handoffs, and prints
-- the difference per handoff, so start-up costs cancel. Counts are exact
-- where wall time on a shared machine is not.
--   lua5.4 instructions.lua N CASE
-- CASE: array_raw | array_lean | array_everyday (a static C array consumed
-- by raw calls, ferry.importer(), ferry.import), or stream_raw |
-- stream_reuse | stream_objects (a C stream's batches: raw calls,
-- batches{ reuse = true }, batches()). Every case reads the length and
-- element 0 (the raw cases without validation or bounds checks: the floor),
-- after a warm-up of 2000 handoffs (LuaJIT compiles its traces there).
local ferry = require("ferry")
local raw = ferry.raw
local total, case = tonumber(arg[1]), arg[2]
local n

local c_array, c_stream
if ferry.backend == "luajit" then
  local ffi = require("ffi")
  ffi.cdef([[
    int lferry_bench_c_stream(struct ArrowDeviceArrayStream* out, int64_t n);
    int lferry_bench_c_array(struct ArrowSchema* schema, struct ArrowDeviceArray* out);
  ]])
  local lib = ffi.load(os.getenv("FERRY_BUILD_DIR") .. "/lua/bench/liblferry_bench.so")
  c_array, c_stream = lib.lferry_bench_c_array, lib.lferry_bench_c_stream
else
  package.cpath = os.getenv("FERRY_BUILD_DIR") .. "/lua/bench/?.so;" .. package.cpath
  local m = require("lferry_bench54")
  c_array, c_stream = m.c_array, m.c_stream
end

local slots, into = ferry.array_slots(), ferry.array_slots()
local sp, ap = slots.schema, slots.array
local direct = ferry._backend.lib or raw

local cases = {}

function cases.array_raw()
  local schema_move, array_move = direct.ferry_schema_move, direct.ferry_device_array_move
  local length, release = direct.ferry_array_length, direct.ferry_device_array_release
  local schema_release, buffer, read = direct.ferry_schema_release, direct.ferry_array_buffer,
                                       ferry._backend.read
  local arr = raw.ferry_device_array_array(into.array)
  for _ = 1, n do
    c_array(sp, ap)
    schema_move(sp, into.schema)
    array_move(ap, into.array)
    length(arr)
    read(buffer(arr, 1), "i32", 0)
    release(into.array)
    schema_release(into.schema)
  end
end

function cases.array_lean()
  local importer = ferry.importer()
  for _ = 1, n do
    c_array(sp, ap)
    local a = importer:import(ap, sp)
    a:length()
    a:value(0)
    a:release()
  end
end

function cases.array_everyday()
  for _ = 1, n do
    c_array(sp, ap)
    local a = ferry.import(ap, sp)
    a:length()
    a:value(0)
    a:release()
  end
end

local function imported_c_stream()
  local slot = ferry.stream_slot()
  c_stream(slot.stream, n)
  return ferry.import_stream(slot.stream)
end

function cases.stream_raw()
  local stream = imported_c_stream()
  local ptr = stream:pointer()
  local get_next = ferry._backend.get_next
  local is_released, length = ferry._backend.is_released, direct.ferry_array_length
  local release, buffer, read = direct.ferry_device_array_release, direct.ferry_array_buffer,
                                ferry._backend.read
  local arr = raw.ferry_device_array_array(into.array)
  while true do
    get_next(ptr, into.array)
    if is_released(into.array) then break end
    length(arr)
    read(buffer(arr, 1), "i32", 0)
    release(into.array)
  end
  stream:release()
end

function cases.stream_reuse()
  local stream = imported_c_stream()
  for batch in stream:batches{ reuse = true } do
    batch:length()
    batch:value(0)
  end
  stream:release()
end

function cases.stream_objects()
  local stream = imported_c_stream()
  for batch in stream:batches() do
    batch:length()
    batch:value(0)
    batch:release()
  end
  stream:release()
end

local run = assert(cases[case], "unknown case " .. tostring(case))
n = 2000
run()
n = total
run()
