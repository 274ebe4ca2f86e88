-- LuaJIT's compiled consumer path: the per-batch calls of a stream that no
-- Lua code produces run inside JIT traces, and fall back to interpreted calls
-- whenever some C function could reach a Lua callback (which would abort the
-- process with "bad callback" from a trace). Lua 5.4 has no traces.
local ferry = require("ferry")
local support = require("spec.support")
local raw = ferry.raw
local backend = ferry._backend

if support.skipped_unless("luajit", describe, pending, "compiled consumer path",
                          "only LuaJIT compiles traces") then
  return
end

local ffi = require("ffi")

-- A C stream (ferry_array_stream_init_from_arrays) over n int32 batches {i, i+1}.
-- borrowed: the batches point into `keep` and have no Lua release hook;
-- otherwise every batch is a Lua export whose release runs a Lua callback.
local function c_stream(n, borrowed, keep)
  local structs = ffi.new("struct ArrowDeviceArray[?]", n)
  for i = 0, n - 1 do
    if borrowed then
      local p = backend.keeper_pack(keep, "i32", { i, i + 1 }, 2)
      ferry.export_array_to({ format = "i", length = 2,
                              buffers = { false, { pointer = p, size = 8 }, n = 2 } }, structs + i)
    else
      ferry.export_array_to({ type = "int32", values = { i, i + 1 } }, structs + i)
    end
  end
  local schema = raw.ferry_schema_new()
  ferry.export_schema_to({ type = "int32" }, schema)
  local owner, ptr = backend.handle("stream")
  local code, message = raw.ferry_array_stream_init_from_arrays(ptr, 1, schema, structs, n)
  assert(code == 0, message)
  raw.ferry_schema_free(schema)
  local stream = ferry.import_stream(ptr)
  backend.handle_free(owner)
  return stream
end

describe("compiled consumer path (luajit)", function()
  support.guard_leaks(before_each, after_each)

  it("counts every object that can call into Lua from C", function()
    local live = backend.callbacks.live
    local stream = ferry.stream({ type = "int32" }, function() end)
    assert.are.equal(live + 1, backend.callbacks.live)
    local arr = ferry.array{ type = "int32", values = { 1 } } -- its release hook is Lua
    assert.are.equal(live + 2, backend.callbacks.live)
    arr:release()
    stream:release()
    assert.are.equal(live, backend.callbacks.live)
  end)

  it("consumes a C stream in a hot loop, reused and with new objects", function()
    local keep = backend.keeper_new()
    for _, reuse in ipairs({ true, false }) do
      local stream = c_stream(2000, true, keep)
      local sum, count = 0, 0
      for batch in stream:batches{ reuse = reuse } do
        sum = sum + batch:length() + ferry._backend.to_integer(batch:value(1))
        count = count + 1
        if not reuse then batch:release() end
      end
      assert.are.equal(2000, count)
      assert.are.equal(2 * 2000 + 2000 * 2001 / 2, sum)
      stream:release()
    end
    backend.keeper_free(keep)
  end)

  it("survives a C stream whose batches release through Lua callbacks", function()
    local stream = c_stream(500, false)
    assert.is_true(backend.callbacks.live >= 500) -- so every call takes the safe path
    local sum = 0
    for batch in stream:batches{ reuse = true } do sum = sum + batch:length() end
    assert.are.equal(1000, sum)
    stream:release()
  end)

  it("switches paths per call when a Lua stream appears inside the loop", function()
    local keep = backend.keeper_new()
    local stream = c_stream(2000, true, keep)
    local inner, seen, count = nil, 0, 0
    for batch in stream:batches{ reuse = true } do
      count = count + 1
      if count == 1000 then
        inner = ferry.stream({ type = "int32" }, support.batches_of("int32", { { 1 }, { 2 }, { 3 } }))
      end
      if inner and count % 100 == 0 then
        local b = inner:next()
        if b then
          seen = seen + b:value(0)
          b:release()
        end
      end
      assert.are.equal(2, batch:length())
    end
    assert.are.equal(2000, count)
    assert.are.equal(1 + 2 + 3, seen)
    inner:release()
    stream:release()
    backend.keeper_free(keep)
  end)
end)
