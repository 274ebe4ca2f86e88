-- The backend contract (ferry/backend/contract.lua) holds on this
-- interpreter's backend: exactly the contract's fields and helpers plus the
-- extras named for it, a raw layer with exactly the functions and constants
-- generated from ferry.h (ferry/abi.lua), and on Lua 5.4 a C side that
-- registers exactly the helpers the contract marks `c`. test.sh runs this
-- file on Lua 5.4 and on LuaJIT, so both backends are held to it.
local ferry = require("ferry")
local contract = require("ferry.backend.contract")
local abi = require("ferry.abi")
local backend = ferry._backend

local function keys(t)
  local out = {}
  for k in pairs(t) do out[#out + 1] = tostring(k) end
  table.sort(out)
  return out
end

-- Names in `want` missing from `have`, and names in `have` not in `want`.
local function difference(want, have)
  local missing, extra = {}, {}
  for k in pairs(want) do if have[k] == nil then missing[#missing + 1] = k end end
  for k in pairs(have) do if want[k] == nil then extra[#extra + 1] = tostring(k) end end
  table.sort(missing)
  table.sort(extra)
  return table.concat(missing, ", "), table.concat(extra, ", ")
end

describe("backend contract (" .. ferry.backend .. ")", function()
  it("the backend has exactly the contract's fields, helpers and its own extras", function()
    local want = {}
    for name in pairs(contract.fields) do want[name] = true end
    for _, f in ipairs(contract.functions) do want[f.name] = true end
    local extras = contract.extras[backend.name]
    assert.is_table(extras, "the contract names no extras for " .. tostring(backend.name))
    for name in pairs(extras) do want[name] = true end
    local missing, extra = difference(want, backend)
    assert.are.equal("", missing, "missing from the backend")
    assert.are.equal("", extra, "in the backend but not in the contract")
    for _, f in ipairs(contract.functions) do
      assert.are.equal("function", type(backend[f.name]), f.name .. " is not a function")
    end
  end)

  it("every helper is documented with its signature", function()
    local seen = {}
    for _, f in ipairs(contract.functions) do
      assert.is_nil(seen[f.name], "helper listed twice: " .. f.name)
      seen[f.name] = true
      assert.truthy(f.signature:match("^%("), f.name .. ": signature")
      assert.truthy(#f.doc > 10, f.name .. ": doc")
    end
  end)

  it("the raw layer has exactly the generated functions and constants", function()
    local want = {}
    for _, fn in ipairs(abi.functions) do want[fn.name] = true end
    for name in pairs(abi.constants) do want[name] = true end
    local missing, extra = difference(want, backend.raw)
    assert.are.equal("", missing, "missing from the raw layer")
    assert.are.equal("", extra, "in the raw layer but not generated")
    for name in pairs(abi.excluded) do assert.is_nil(backend.raw[name], name .. " is excluded") end
  end)

  it("the raw layer's constants are the header's values", function()
    for name, value in pairs(abi.constants) do
      assert.are.equal(value, backend.raw[name], name)
    end
    -- and the idiomatic layer reads them from there
    assert.are.equal(backend.raw.ARROW_DEVICE_CPU, ferry.constants.ARROW_DEVICE_CPU)
    assert.are.equal(backend.raw.FERRY_VALIDATE_FULL, ferry.constants.FERRY_VALIDATE_FULL)
  end)

  it("every parameter and result has a role both backends implement", function()
    local roles = { integer = true, string = true, pointer = true, ["function"] = true,
                    buffers = true, error = true, out_integer = true, out_pointer = true,
                    length = true }
    local results = { void = true, integer = true, string = true, pointer = true, lstring = true }
    for _, fn in ipairs(abi.functions) do
      assert.truthy(results[fn.result], fn.name .. ": result role " .. tostring(fn.result))
      for _, p in ipairs(fn.params) do
        assert.truthy(roles[p.role], fn.name .. "(" .. p.name .. "): role " .. tostring(p.role))
      end
    end
  end)

  it("errno codes come from the library", function()
    assert.are.equal("EINVAL", backend.raw.ferry_errno_name(ferry.errno.EINVAL))
    assert.are.equal("ERANGE", backend.raw.ferry_errno_name(ferry.errno.ERANGE))
    assert.are.equal("ENODEV", backend.raw.ferry_errno_name(ferry.errno.ENODEV))
  end)

  if backend.name == "lua5.4" then
    it("the C side registers exactly the helpers the contract marks c", function()
      local want = {}
      for _, f in ipairs(contract.functions) do if f.c then want[f.name] = true end end
      local missing, extra = difference(want, backend.support)
      assert.are.equal("", missing, "declared c but not registered by ferry_core.support")
      assert.are.equal("", extra, "registered by ferry_core.support but not in the contract")
      for name in pairs(want) do
        assert.are.equal(backend.support[name], backend[name], name .. " is the C function")
      end
    end)
  else
    it("LuaJIT says where libferry came from", function()
      assert.truthy(backend.library_path:find("(", 1, true), backend.library_path)
    end)
  end
end)
