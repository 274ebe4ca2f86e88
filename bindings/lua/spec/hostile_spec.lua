-- Hostile producers through the public import paths (issue 15): arrays and
-- streams that lie about themselves in one way each (spec/hostile.c), handed
-- to ferry.import_array / ferry.import_stream and read the ways a user reads
-- them (value, to_table, next, next_on, batches{ reuse = true }). Each must
-- come back as a ferry.Error carrying the validator's finding, with no crash,
-- every producer node released exactly once (counted by the helper), nothing
-- left allocated, and nothing on stderr.
local ferry = require("ferry")
local support = require("spec.support")
local backend = ferry._backend
local build = assert(os.getenv("FERRY_BUILD_DIR"), "FERRY_BUILD_DIR (test.sh sets it)")

local hostile
if ferry.backend == "luajit" then
  local ffi = require("ffi")
  ffi.cdef([[
    int lferry_hostile_array(const char* name, struct ArrowSchema* schema, struct ArrowDeviceArray* array);
    int lferry_hostile_stream(const char* schema, const char* batch, int good,
                              struct ArrowDeviceArrayStream* out);
    int64_t lferry_hostile_live(void);
    int64_t lferry_hostile_double_releases(void);
  ]])
  local lib = ffi.load(build .. "/lua/test/liblferry_hostile.so")
  hostile = {
    array = function(name, s, a) return lib.lferry_hostile_array(name, s, a) end,
    stream = function(schema, batch, good, out) return lib.lferry_hostile_stream(schema, batch, good, out) end,
    live = function() return tonumber(lib.lferry_hostile_live()) end,
    double_releases = function() return tonumber(lib.lferry_hostile_double_releases()) end,
  }
else
  package.cpath = build .. "/lua/test/?.so;" .. package.cpath
  hostile = require("lferry_hostile54")
end

-- A hostile array in fresh structs, imported at `level`.
local function import(name, level)
  local slots = ferry.array_slots()
  assert.are.equal(0, hostile.array(name, slots.schema, slots.array))
  local ok, result = pcall(ferry.import_array, slots.schema, slots.array, { validate = level })
  slots:free()
  return ok, result
end

local function hostile_stream(schema, batch, good, opts)
  local slot = ferry.stream_slot()
  assert.are.equal(0, hostile.stream(schema, batch, good, slot.stream))
  local stream = ferry.import_stream(slot.stream, opts)
  slot:free()
  return stream
end

-- The error is a ferry.Error raised at `where`, with `code`, whose message
-- holds every pattern (plain text).
local function expect_error(err, where, code, ...)
  assert.are.equal(ferry.Error, getmetatable(err), "not a ferry.Error: " .. tostring(err))
  assert.are.equal(where, err.where, tostring(err))
  assert.are.equal(code, err.code, tostring(err))
  for _, text in ipairs({ ... }) do
    assert.truthy(err.message:find(text, 1, true), "'" .. text .. "' not in: " .. err.message)
  end
end

local EINVAL, ERANGE = ferry.errno.EINVAL, ferry.errno.ERANGE
local unpack = table.unpack or unpack

describe("hostile producers (" .. ferry.backend .. ")", function()
  support.guard_leaks(before_each, after_each, function()
    assert.are.equal(0, hostile.live(), "hostile nodes not released")
    assert.are.equal(0, hostile.double_releases(), "hostile nodes released twice")
  end)

  -- Structure the default validation finds at import: the validator's rule,
  -- where, and what, and the pair released (after_each counts it).
  local refused_at_import = {
    n_buffers = { "n_buffers: root", "needs 2 buffers, found n_buffers = 1" },
    null_values = { "buffers: root", "buffer 1 (data) is NULL but length is 4" },
    negative_length = { "length: root", "length is negative (-1)" },
    offset_overflow = { "length: root", "overflows" },
    reserved = { "reserved: root", "reserved[0] is 0x7" },
    sync_event_cpu = { "sync_event: root", "on the CPU; it must be NULL" },
    null_count_lie = { "null_count: root", "null_count 9 exceeds length 4" },
    bad_format = { "format: root", "unknown type 'q'" },
    self_cycle = { "cycle: root.children[0].children[0]", "the tree has a cycle" },
    shared_children = { "shared: root.children[1]", "also at root.children[0]" },
    null_child = { "null: root.children[1]", "array pointer is NULL" },
    released_child = { "released: root.children[1]", "release is NULL" },
    child_count = { "n_children: root", "array has 1 children but its schema has 2" },
    dictionary_missing = { "dictionary: root", "the schema has a dictionary but the array has none" },
    -- the sim backend knows allocation sizes: a length past the allocation is
    -- caught (on the CPU no consumer can tell: README, "What validation cannot see")
    sim_too_short = { "device: root", "runs past the end of a 8-byte allocation of sim device 0" },
  }
  for name, texts in pairs(refused_at_import) do
    it("refuses " .. name .. " at import with the validator's finding", function()
      local ok, err = import(name)
      assert.is_false(ok)
      expect_error(err, "ferry.import_array", EINVAL, unpack(texts))
    end)
  end

  -- Content only FULL validation reads: refused at import with validate =
  -- "full"; by default the accessor that meets the lie refuses it, with the
  -- validator's (FULL) finding first.
  local found_by_full = {
    decreasing_offsets = { 1, "offsets: root", "offsets[2] = 1 is less than offsets[1] = 2" },
    negative_offset = { 0, "offsets: root", "offsets[1] = -3 is less than offsets[0] = 0" },
    list_past_child = { 1, "offsets: root", "offsets[2] = 9 exceeds the child length 4" },
    dictionary_index = { 1, "dictionary: root", "index[1] = 7 is outside the dictionary of length 3" },
  }
  for name, case in pairs(found_by_full) do
    it("refuses " .. name .. " at a FULL import, and when read", function()
      local ok, err = import(name, "full")
      assert.is_false(ok)
      expect_error(err, "ferry.import_array", EINVAL, case[2], case[3])
      local imported, arr = import(name)
      assert.is_true(imported, tostring(arr))
      local read, read_err = pcall(arr.value, arr, case[1])
      assert.is_false(read)
      expect_error(read_err, "ferry.Array.value", EINVAL, case[2], case[3])
      assert.is_false((pcall(arr.to_table, arr)))
      arr:release()
    end)
  end

  it("reads invalid UTF-8 as bytes by default and refuses it at a FULL import", function()
    local ok, err = import("bad_utf8", "full")
    assert.is_false(ok)
    expect_error(err, "ferry.import_array", EINVAL, "utf8: root", "not valid UTF-8")
    local imported, arr = import("bad_utf8")
    assert.is_true(imported)
    assert.are.equal("\255b", arr:value(0))
    arr:release()
  end)

  it("bounds-checks every index of a valid array (value, is_valid, buffers, children)", function()
    local ok, arr = import("good_int32")
    assert.is_true(ok, tostring(arr))
    assert.are.equal(10, arr:value(0))
    assert.are.equal(40, arr:value(3))
    for _, i in ipairs({ 4, -1, -2, 1e9, -1e9, 2 ^ 62 }) do
      local read, err = pcall(arr.value, arr, i)
      assert.is_false(read, "value(" .. i .. ")")
      expect_error(err, "ferry.Array.value", ERANGE, "out of range for a length of 4")
      expect_error(select(2, pcall(arr.is_valid, arr, i)), "ferry.Array.is_valid", ERANGE)
    end
    expect_error(select(2, pcall(arr.value, arr, 1.5)), "ferry.Array.value", ERANGE)
    expect_error(select(2, pcall(arr.buffer, arr, 2)), "ferry.Array.buffer", ERANGE)
    expect_error(select(2, pcall(arr.buffer, arr, -1)), "ferry.Array.buffer", ERANGE)
    expect_error(select(2, pcall(arr.buffer_address, arr, 5)), "ferry.Array.buffer_address", ERANGE)
    expect_error(select(2, pcall(arr.child, arr, 0)), "ferry.Array.child", ERANGE)
    assert.are.equal(16, #arr:buffer_bytes(1))
    arr:release()
    expect_error(select(2, pcall(arr.value, arr, 0)), "ferry.Array.value", EINVAL, "already released")
  end)

  it("bounds-checks strings and their offsets", function()
    local ok, arr = import("good_utf8")
    assert.is_true(ok, tostring(arr))
    assert.are.same({ "ab", "", "cde" }, (arr:to_table()))
    expect_error(select(2, pcall(arr.value, arr, 3)), "ferry.Array.value", ERANGE)
    expect_error(select(2, pcall(arr.value, arr, -1)), "ferry.Array.value", ERANGE)
    assert.are.equal("abcde", arr:buffer_bytes(2))
    arr:release()
  end)

  describe("streams", function()
    it("refuses a malformed batch after good ones (next)", function()
      local stream = hostile_stream("good_int32", "n_buffers", 2)
      for _ = 1, 2 do
        local batch = stream:next()
        assert.are.equal(40, batch:value(3))
        batch:release()
      end
      local ok, err = pcall(stream.next, stream)
      assert.is_false(ok)
      expect_error(err, "ferry.get_next", EINVAL, "n_buffers: root", "found n_buffers = 1")
      stream:release()
    end)

    it("refuses a malformed batch in a reusing loop", function()
      local stream = hostile_stream("good_int32", "self_cycle", 1)
      local seen = 0
      local ok, err = pcall(function()
        for batch in stream:batches{ reuse = true } do seen = seen + batch:value(0) end
      end)
      assert.is_false(ok)
      assert.are.equal(10, seen)
      -- the batch is not an int32 batch, so the schema comparison speaks first
      expect_error(err, "ferry.get_next", EINVAL, "root")
      stream:release()
    end)

    it("refuses a malformed batch handed to a consumer stream (next_on)", function()
      local stream = hostile_stream("good_int32", "sync_event_cpu", 0)
      local ok, err = pcall(stream.next_on, stream, nil)
      assert.is_false(ok)
      -- the handoff itself meets the lie (there is no CPU event to wait on)
      expect_error(err, "ferry.get_next", EINVAL, "sync_event NULL")
      stream:release()
    end)

    it("refuses a malformed schema before any batch", function()
      local stream = hostile_stream("bad_format", "", 1)
      local ok, err = pcall(stream.next, stream)
      assert.is_false(ok)
      expect_error(err, "ferry.get_schema", EINVAL, "format: root", "unknown type 'q'")
      stream:release()
    end)

    it("finds content lies when read, or at the batch with validate = \"full\"", function()
      local stream = hostile_stream("good_utf8", "decreasing_offsets", 1)
      assert.are.same({ "ab", "", "cde" }, (stream:next():to_table()))
      local batch = stream:next()
      expect_error(select(2, pcall(batch.value, batch, 1)), "ferry.Array.value", EINVAL, "offsets: root")
      batch:release()
      stream:release()
      local full = hostile_stream("good_utf8", "decreasing_offsets", 1, { validate = "full" })
      for batch_ in full:batches() do batch_:release() break end
      expect_error(select(2, pcall(full.next, full)), "ferry.get_next", EINVAL,
                   "offsets[2] = 1 is less than offsets[1] = 2")
      full:release()
    end)
  end)

  it("prints nothing on stderr and lets no error cross a C frame", function()
    local lua = ferry.backend == "luajit" and "luajit" or "lua5.4"
    local script = os.tmpname()
    local file = assert(io.open(script, "w"))
    file:write([[
      package.path, package.cpath = ...
      local ferry = require("ferry")
      package.cpath = os.getenv("FERRY_BUILD_DIR") .. "/lua/test/?.so;" .. package.cpath
      local names = { "n_buffers", "self_cycle", "decreasing_offsets", "sim_too_short" }
      local refused = 0
      for _, name in ipairs(names) do
        local slots = ferry.array_slots()
        local sp, ap = slots.schema, slots.array
        local h
        if ferry.backend == "luajit" then
          local ffi = require("ffi")
          pcall(ffi.cdef, "int lferry_hostile_array(const char*, struct ArrowSchema*, struct ArrowDeviceArray*);")
          h = ffi.load(os.getenv("FERRY_BUILD_DIR") .. "/lua/test/liblferry_hostile.so")
          assert(h.lferry_hostile_array(name, sp, ap) == 0)
        else
          assert(require("lferry_hostile54").array(name, sp, ap) == 0)
        end
        local ok, arr = pcall(ferry.import_array, sp, ap, { validate = "full" })
        if not ok then refused = refused + 1 else arr:release() end
      end
      io.stdout:write("refused ", refused, "\n")
    ]])
    file:close()
    local pipe = assert(io.popen(string.format("%s -e 'loadfile(%q)(%q, %q)' 2>&1 1>%s.out", lua,
                                               script, package.path, package.cpath, script)))
    local stderr = pipe:read("*a")
    pipe:close()
    local out = assert(io.open(script .. ".out")):read("*a")
    os.remove(script)
    os.remove(script .. ".out")
    assert.are.equal("", stderr)
    assert.are.equal("refused 4\n", out)
  end)
end)
