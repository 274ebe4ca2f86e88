-- Hostile producers through the public import paths (issue 15): arrays and
-- streams that lie about themselves in one way each (tests/hostile), handed
-- to ferry.import / ferry.import_stream and read the ways a user reads
-- them (value, to_table, next, next_on, batches{ reuse = true }). Each case
-- of the catalogue must come back as a ferry.Error carrying the validator's
-- finding the catalogue names, with no crash,
-- every producer node released exactly once (counted by the helper), nothing
-- left allocated, and nothing on stderr.
local ferry = require("ferry")
local support = require("spec.support")
-- the catalogue and the producers of tests/hostile (the one library of
-- hostile producers every binding loads)
local hostile = require("spec.hostile_lib")

-- A hostile array in fresh structs, imported at `level`.
local function import(name, level)
  local slots = ferry.array_slots()
  assert.are.equal(0, hostile.array(name, slots.schema, slots.array))
  local ok, result = pcall(ferry.import, slots.array, slots.schema, { validate = level })
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

-- stream:next() raises the ferry.Error that expect_error describes; returns it.
local function expect_next_error(stream, where, code, ...)
  local ok, err = pcall(stream.next, stream)
  assert.is_false(ok)
  expect_error(err, where, code, ...)
  return err
end

local EINVAL, ERANGE = ferry.errno.EINVAL, ferry.errno.ERANGE
local unpack = table.unpack or unpack

describe("hostile producers (" .. ferry.backend .. ")", function()
  support.guard_leaks(before_each, after_each, function()
    assert.are.equal(0, hostile.live(), "hostile nodes not released")
    assert.are.equal(0, hostile.double_releases(), "hostile nodes released twice")
    hostile.reset()
  end)

  -- Every case of the catalogue: what the default validation finds is refused
  -- at import with the validator's rule, where, and what; what only FULL
  -- finds is refused at a FULL import and taken by default; a length no
  -- buffer can back passes validation and is refused by the reader. The pair
  -- is released either way (after_each counts it).
  for i = 0, hostile.count() - 1 do
    local name, kind, _, where, needle = hostile.case(i)
    if kind == hostile.REFUSED then
      it("refuses " .. name .. " at import with the validator's finding", function()
        local ok, err = import(name)
        assert.is_false(ok)
        expect_error(err, "ferry.import", EINVAL, where, needle)
      end)
    elseif kind == hostile.FULL then
      it("refuses " .. name .. " at a FULL import, and takes it by default", function()
        local ok, err = import(name, "full")
        assert.is_false(ok)
        expect_error(err, "ferry.import", EINVAL, where, needle)
        local imported, arr = import(name)
        assert.is_true(imported, tostring(arr))
        arr:release()
      end)
    else
      it("takes " .. name .. " (no size to check) and refuses to read it", function()
        local ok, arr = import(name)
        assert.is_true(ok, tostring(arr))
        local read, err = pcall(arr.value, arr, 0)
        if read then read, err = pcall(arr.value, arr, 1) end
        assert.is_false(read)
        assert.are.equal(ferry.Error, getmetatable(err), tostring(err))
        arr:release()
      end)
    end
  end

  -- Issue 20, item 8: ferry.import validates by default (DEFAULT level);
  -- {validate = "none"} is the named opt-out (false too), and the readers
  -- still refuse what they meet.
  it("validates at import by default, with \"none\" as the explicit opt-out", function()
    for _, opts in ipairs({ false, {}, { validate = "default" }, { validate = true } }) do
      local slots = ferry.array_slots()
      assert.are.equal(0, hostile.array("n_buffers", slots.schema, slots.array))
      local ok, err = pcall(ferry.import, slots.array, slots.schema, opts or nil)
      slots:free()
      assert.is_false(ok)
      expect_error(err, "ferry.import", EINVAL, "needs 2 buffers, found n_buffers = 1")
    end
    for _, level in ipairs({ "none", false }) do
      local ok, arr = import("n_buffers", level)
      assert.is_true(ok, tostring(arr))
      expect_error(select(2, pcall(arr.value, arr, 0)), "ferry.Array.value", EINVAL,
                   "a fixed-width array has 2 buffers, not 1")
      arr:release()
    end
    local refused, why = import("good_int32", "nonsense") -- nothing taken: the slots free it
    assert.is_false(refused)
    expect_error(why, "ferry.import", EINVAL, "validate must be \"default\", \"full\" or \"none\"")
    local stream = hostile_stream("good_int32", "n_buffers", 0, { validate = "none" })
    local batch = stream:next() -- not validated: taken as it is
    expect_error(select(2, pcall(batch.value, batch, 0)), "ferry.Array.value", EINVAL, "2 buffers, not 1")
    batch:release()
    stream:release()
  end)

  -- Content only FULL validation reads (refused at a FULL import above): by
  -- default the accessor that meets the lie refuses it, with the validator's
  -- (FULL) finding first.
  local found_by_full = {
    decreasing_offsets = { 1, "offsets: root", "offsets[2] = 1 is less than offsets[1] = 2" },
    negative_offset = { 0, "offsets: root", "offsets[1] = -3 is less than offsets[0] = 0" },
    list_past_child = { 1, "offsets: root", "offsets[2] = 9 exceeds the child length 4" },
    dictionary_index = { 1, "dictionary: root", "index[1] = 7 is outside the dictionary of length 3" },
  }
  for name, case in pairs(found_by_full) do
    it("refuses " .. name .. " when read", function()
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
    expect_error(err, "ferry.import", EINVAL, "utf8: root", "not valid UTF-8")
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

  -- Issue 20, item 4: lengths no buffer of a process can back pass
  -- validation on the CPU (no sizes travel), so every reader refuses them
  -- before reading, the same way on both backends.
  it("refuses lengths no address space can back (bool 2^62 over 64 bytes, ...)", function()
    local ok, arr = import("bool_huge")
    assert.is_true(ok, tostring(arr))
    for _, i in ipairs({ 0, 2 ^ 40, 2 ^ 61 }) do
      expect_error(select(2, pcall(arr.value, arr, i)), "ferry.Array.value", EINVAL,
                   "length 4611686018427387904 or offset 0 is negative or too large",
                   "at most 2^51 elements")
      expect_error(select(2, pcall(arr.is_valid, arr, i)), "ferry.Array.is_valid", EINVAL, "2^51")
    end
    expect_error(select(2, pcall(arr.to_table, arr)), "ferry.Array.to_table", ferry.errno.E2BIG,
                 "4611686018427387904 elements are more than to_table() materialises (2^31)")
    arr:release()

    ok, arr = import("int64_huge")
    assert.is_true(ok, tostring(arr))
    expect_error(select(2, pcall(arr.value, arr, 2 ^ 40)), "ferry.Array.value", EINVAL,
                 "buffer 1 of length 70368744177664 at offset 0 needs 562949953421312 bytes, " ..
                 "more than a process can address (2^48)")
    arr:release()

    ok, arr = import("large_utf8_huge", false)
    assert.is_true(ok, tostring(arr))
    for i = 0, 1 do -- element 0 lies inside, but the data buffer as declared cannot exist
      expect_error(select(2, pcall(arr.value, arr, i)), "ferry.Array.value", EINVAL,
                   "buffer 2 (data) of length 2 at offset 0 needs 1152921504606846976 bytes by " ..
                   "its last offset, more than a process can address (2^48)")
    end
    arr:release()
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
    -- Every stream case of the catalogue: the pull where it says fails with
    -- its errno and message (a lie in the schema at the first pull).
    for i = 0, hostile.stream_count() - 1 do
      local name, at, level, code, needle = hostile.stream_case(i)
      it("fails the stream " .. name .. " at pull " .. math.max(at, 1), function()
        local slot = ferry.stream_slot()
        assert.are.equal(0, hostile.stream_make(name, slot.stream))
        local stream = ferry.import_stream(slot.stream, level == 1 and { validate = "full" } or nil)
        slot:free()
        for _ = 1, at - 1 do stream:next():release() end
        local ok, err = pcall(stream.next, stream)
        assert.is_false(ok)
        assert.are.equal(ferry.Error, getmetatable(err), tostring(err))
        assert.are.equal(code, err.code, tostring(err))
        assert.truthy(err.message:find(needle, 1, true), "'" .. needle .. "' not in: " .. err.message)
        stream:release()
      end)
    end

    it("refuses a malformed batch after good ones (next)", function()
      local stream = hostile_stream("good_int32", "n_buffers", 2)
      for _ = 1, 2 do
        local batch = stream:next()
        assert.are.equal(40, batch:value(3))
        batch:release()
      end
      expect_next_error(stream, "ferry.get_next", EINVAL, "n_buffers: root", "found n_buffers = 1")
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

    -- Issue 20, item 9: after an error the producer's get_next is never
    -- called again (this one would yield a batch), and every later read
    -- raises the same error, whichever way the stream is read.
    local function expect_failed_again(stream, err)
      local function same(e)
        assert.are.equal(err, e, "not the same error: " .. tostring(e))
        assert.are.equal(ferry.errno.EIO, e.code)
        assert.are.equal("injected failure at get_next 3", e.message)
      end
      for _ = 1, 3 do
        same(select(2, pcall(stream.next, stream)))
        same(select(2, pcall(stream.next_on, stream, nil)))
        same(select(2, pcall(function() for _ in stream:batches() do end end)))
        same(select(2, pcall(function() for _ in stream:batches{ reuse = true } do end end)))
      end
    end

    it("never calls get_next again after an error and repeats it (next)", function()
      local before = hostile.calls_after_failure()
      local stream = hostile_stream("good_int32", "fail_then_good", 2)
      stream:next():release()
      stream:next():release()
      local err = expect_next_error(stream, "ferry.get_next", ferry.errno.EIO,
                                    "injected failure at get_next 3")
      expect_failed_again(stream, err)
      assert.are.equal(before, hostile.calls_after_failure())
      stream:release()
    end)

    it("never calls get_next again after an error in a reusing loop, even if the loop goes on", function()
      local before = hostile.calls_after_failure()
      local stream = hostile_stream("good_int32", "fail_then_good", 2)
      local f, s, c, closer = stream:batches{ reuse = true }
      local seen = 0
      local ok, err = pcall(function()
        for batch in f, s, c do seen = seen + batch:value(0) end
      end)
      assert.is_false(ok)
      assert.are.equal(20, seen)
      expect_error(err, "ferry.get_next", ferry.errno.EIO, "injected failure at get_next 3")
      -- the same iterator, called again by hand, raises again and does not pull
      for _ = 1, 2 do
        local again_ok, again = pcall(f, s, nil)
        assert.is_false(again_ok)
        assert.are.equal(err, again)
      end
      if closer then getmetatable(closer).__close(closer) end
      expect_failed_again(stream, err)
      assert.are.equal(before, hostile.calls_after_failure())
      stream:release()
    end)

    it("keeps a failed get_schema for every later read", function()
      local stream = hostile_stream("bad_format", "", 1)
      local ok, err = pcall(stream.next, stream)
      assert.is_false(ok)
      for _ = 1, 2 do
        assert.are.equal(err, select(2, pcall(stream.next, stream)))
        assert.are.equal(err, select(2, pcall(stream.get_schema, stream)))
        assert.are.equal(err, select(2, pcall(function() for _ in stream:batches{ reuse = true } do end end)))
      end
      stream:release()
    end)

    it("keeps the end of the stream: nil again, get_next not called", function()
      local stream = hostile_stream("good_int32", "", 1)
      stream:next():release()
      assert.is_nil(stream:next())
      assert.is_nil(stream:next())
      for _ in stream:batches{ reuse = true } do error("a batch after the end") end
      for _ in stream:batches() do error("a batch after the end") end
      stream:release()
    end)

    it("refuses a malformed schema before any batch", function()
      local stream = hostile_stream("bad_format", "", 1)
      expect_next_error(stream, "ferry.get_schema", EINVAL, "format: root", "unknown type 'q'")
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
      local hostile = require("spec.hostile_lib")
      for _, name in ipairs(names) do
        local slots = ferry.array_slots()
        local sp, ap = slots.schema, slots.array
        assert(hostile.array(name, sp, ap) == 0)
        local ok, arr = pcall(ferry.import, ap, sp, { validate = "full" })
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
