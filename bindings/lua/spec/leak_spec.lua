-- The leak report at exit (issue 20, item 15; docs/bindings.md, "Closing and
-- leaks"): with FERRY_LEAK_REPORT=1 every import object is registered with
-- the core's ferry_leak_track until closed, so libferry's report on stderr at
-- exit names the Lua imports never closed. Run in a child interpreter (the
-- report is printed when libferry is unloaded); os.exit without closing the
-- state keeps the objects alive at exit, as a program that forgot them.
local ferry = require("ferry")

local lua = ferry.backend == "luajit" and "luajit" or "lua5.4"

-- Runs `body` (Lua source) in a child with the leak report on (or `env`);
-- returns what it printed on stderr.
local function child_stderr(body, env)
  local script = os.tmpname()
  local file = assert(io.open(script, "w"))
  file:write("package.path, package.cpath = ...\nlocal ferry = require('ferry')\n", body)
  file:close()
  local pipe = assert(io.popen(string.format("env %s %s -e 'loadfile(%q)(%q, %q)' 2>&1 1>/dev/null",
                                             env or "FERRY_LEAK_REPORT=1", lua, script,
                                             package.path, package.cpath)))
  local stderr = pipe:read("*a")
  pipe:close()
  os.remove(script)
  return stderr
end

-- An exported int32 array imported through ferry.import.
local IMPORT = [[
local function imported(values)
  local slots = ferry.array_slots()
  ferry.array{ type = "int32", values = values }:export(slots.array, slots.schema)
  return ferry.import(slots.array, slots.schema)
end
local function stream()
  local slot = ferry.stream_slot()
  local n = 0
  ferry.export_stream_to(slot.stream, { type = "int32" }, function()
    n = n + 1
    if n <= 2 then return { type = "int32", values = { n } } end
  end)
  return ferry.import_stream(slot.stream)
end
]]

describe("leak report at exit (" .. ferry.backend .. ")", function()
  it("names the Lua imports never closed, one line each", function()
    local stderr = child_stderr(IMPORT .. [[
      KEPT_ARRAY = imported({ 1, 2, 3 })
      imported({ 4 }):close()
      KEPT_STREAM = stream()
      KEPT_BATCH = KEPT_STREAM:next()
      local closed = stream()
      closed:next():close()
      closed:close()
      KEPT_IMPORTER = ferry.importer()
      os.exit(0)
    ]])
    local suffix = " never closed (" .. ferry.backend .. ")"
    for _, line in ipairs({
      "ferry: leak: lua: DeviceArray from ferry.import (format 'i', length 3, cpu)" .. suffix,
      "ferry: leak: lua: DeviceStream from ferry.import_stream (on cpu)" .. suffix,
      "ferry: leak: lua: DeviceArray of a stream batch (format 'i', length 1)" .. suffix,
      "ferry: leak: lua: Importer from ferry.importer" .. suffix,
    }) do
      assert.truthy(stderr:find(line .. "\n", 1, true), "missing: " .. line .. "\nin:\n" .. stderr)
    end
    -- exactly those four tracked objects: the closed ones are gone
    assert.truthy(stderr:find(", 4 tracked object(s) never closed", 1, true), stderr)
    local lines = 0
    for _ in stderr:gmatch("ferry: leak: lua: ") do lines = lines + 1 end
    assert.are.equal(4, lines, stderr)
  end)

  it("reports nothing when everything was closed", function()
    local stderr = child_stderr(IMPORT .. [[
      imported({ 1 }):close()
      local s = stream()
      for batch in s:batches() do batch:close() end
      s:close()
      ferry.importer():close()
      os.exit(0)
    ]])
    assert.are.equal("ferry: leak report: nothing live\n", stderr)
  end)

  it("counts an import collected without close() as never closed", function()
    local stderr = child_stderr(IMPORT .. [[
      do local s = stream() end
      collectgarbage(); collectgarbage()
      os.exit(0)
    ]])
    assert.truthy(stderr:find("ferry: leak: lua: DeviceStream from ferry.import_stream", 1, true), stderr)
  end)

  it("prints nothing with the report off", function()
    assert.are.equal("", child_stderr(IMPORT .. "KEPT = imported({ 1 })\nos.exit(0)\n",
                                      "FERRY_LEAK_REPORT=0"))
  end)
end)
