-- What several specs share: the leak guard around every test, and the
-- devices a GPU spec runs on.
local ferry = require("ferry")
local assert = require("luassert")

local support = {}

--- guard_leaks(before_each, after_each[, check]): every test of the
--- enclosing describe ends with ferry's counters (the binding's own
--- allocations, libferry's live exports) back where they started, after a
--- full collection; `check` (optional) runs too.
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

--- on_host(arr) -> every value of `arr` (on any device) read on the host;
--- consumes arr (to_host), releases what it made.
function support.on_host(arr)
  local host = arr:to_host()
  local values = host:to_table()
  host:release()
  return values
end

return support
