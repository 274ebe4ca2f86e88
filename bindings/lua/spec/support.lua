-- What several specs share: the leak guard around every test, and the
-- devices a GPU spec runs on.
local ferry = require("ferry")
local assert = require("luassert")

local support = {}

--- guard_leaks(before_each, after_each[, check]) -> baseline: every test of
--- the enclosing describe ends with ferry's counters (the binding's own
--- allocations, libferry's live exports) back where they started, after a
--- full collection; `check` (optional) runs too. baseline() is the
--- allocation count the running test started with.
function support.guard_leaks(before_each, after_each, check)
  local baseline, exports
  before_each(function()
    collectgarbage()
    baseline, exports = ferry.live_allocations(), ferry.raw.ferry_live_exports()
  end)
  after_each(function()
    collectgarbage()
    collectgarbage()
    assert.are.equal(baseline, ferry.live_allocations(), "Lua exports still own allocations")
    assert.are.equal(exports, ferry.raw.ferry_live_exports(), "ferry exports still live")
    if check then check() end
  end)
  return function() return baseline end
end

--- devices() -> list of { name, device | nil, reason }: the sim device
--- always; cuda and rocm when their backend is available (the test command
--- points FERRY_CUDA_LIBRARY / FERRY_HIP_LIBRARY at the driver emulations).
--- A device named in FERRY_LUA_REQUIRE_GPU ("cuda,rocm") that is not
--- available is listed with the reason, and the spec must fail on it.
function support.devices()
  local required = {}
  for name in (os.getenv("FERRY_LUA_REQUIRE_GPU") or ""):gmatch("[^,]+") do required[name] = true end
  local probed = {}
  for _, b in ipairs(ferry.backends()) do probed[b.name] = b end
  local out = { { name = "sim", device = ferry.device("sim", 0) } }
  for _, name in ipairs({ "cuda", "rocm" }) do
    local b = probed[name]
    if b and b.available then
      out[#out + 1] = { name = name, device = ferry.device(name, 0) }
    else
      out[#out + 1] = { name = name, required = required[name] or false,
                        reason = b and b.reason or (name .. " is not compiled into libferry") }
    end
  end
  return out
end

--- skipped_unless(backend, describe, pending, title, reason) -> true when
--- this interpreter is not `backend`: the spec then shows one pending test
--- `title` saying why, and its file returns at once.
function support.skipped_unless(backend, describe, pending, title, reason)
  if ferry.backend == backend then return false end
  describe(title, function() pending("skipped on " .. ferry.backend .. ": " .. reason) end)
  return true
end

--- batches_of(type, lists) -> a producer function (for ferry.stream and
--- ferry.async_exporter): each call returns the next batch
--- { type = type, values = lists[i] }, then nil.
function support.batches_of(type, lists)
  local i = 0
  return function()
    i = i + 1
    if lists[i] then return { type = type, values = lists[i] } end
  end
end

--- counter(n) -> a producer of n int32 batches { i, 10 * i }, i = 1..n.
function support.counter(n)
  local lists = {}
  for i = 1, n do lists[i] = { i, i * 10 } end
  return support.batches_of("int32", lists)
end

--- close_released(consumer): the async producer lets go of the consumer's
--- handler (waited for), then the consumer closes.
function support.close_released(consumer)
  assert.is_true(consumer:wait_released(-1))
  consumer:close()
end

--- on_host(arr) -> every value of `arr` (on any device) read on the host;
--- consumes arr (to_host), releases what it made.
function support.on_host(arr)
  local host = arr:to_host()
  local values = host:to_table()
  host:release()
  return values
end

--- run_all(co, ...) -> rounds: runs coroutines round-robin until every one
--- is dead (each yields where it would wait); a coroutine's error is raised.
function support.run_all(...)
  local cos, rounds = { ... }, 0
  local alive = true
  while alive do
    alive, rounds = false, rounds + 1
    for _, co in ipairs(cos) do
      if coroutine.status(co) ~= "dead" then
        local ok, err = coroutine.resume(co)
        if not ok then error(err, 0) end
        alive = alive or coroutine.status(co) ~= "dead"
      end
    end
    assert(rounds < 10000, "no progress")
  end
  return rounds
end

return support
